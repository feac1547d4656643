"""Whether a hook of the user's own runs the folder's files (bridge/permissions/widening.py `own_hook_item`).

A user's hook runs with their permissions, outside the sandbox, in the workspace: `"$CLAUDE_PROJECT_DIR"/.claude/
hooks/format.sh`, `make lint`, `npm test`, `pytest`, `python3 -c 'import json'` beside a `json.py`, `git status`
in an archive whose `.git/config` sets `core.fsmonitor` — each runs what the folder's files say. Such a hook waits
for the folder's trust, as the folder's own hooks do.

The reading starts from the trust binding's (bridge/permissions/named_files.py `binding`), which names the
workspace files a command runs or can't pin what it runs. A binding that can't pin a command of the user's is not
proof that it runs the folder's code: most such hooks only compute a word (`notify-send "$(jq -r .message)"`, a
date in a log line). So the command is read again, part by part: the commands computed in it and the values it
assigns (`echo "done: $(make -s test)"`, `CMD="make lint"; $CMD`), each simple command on its own with its
computed words made plain, and the shell scripts of the user's it runs (`~/.claude/hooks/stop.sh` doing `cd
"$CLAUDE_PROJECT_DIR" && make test`), with the commands a Python or Node script of the user's starts by literal
(`subprocess.run(["make", "lint"])`). A part still unpinned once made plain (`jq … | sh`, `find . -exec`) counts
as running the folder's code, to be safe; so does a reading over its budget.

What it can't see (the closing note lists them): a command a script of the user's builds at run time, programs
other than shells, Python and Node.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from functools import lru_cache
from pathlib import Path

from bridge.permissions.named_files import UNBINDABLE, binding
from bridge.permissions.script_reads import PROJECT_VARIABLES, language, script_commands

# what `binding` says of a command that runs Python where no module is (`python3 -c …` in a folder with none): the
# digest of nothing; a module put there later (a `json.py` that shadows the library's) makes another
NO_MODULES = "modules:" + hashlib.sha256().hexdigest()[:32]
FINDS_CODE = "finds and runs the folder's code"  # (script_reads.py's reason: `pytest`, `npx prettier`, `cargo`)
MAX_DEPTH = 4  # computed commands, parts, scripts of the user's: how deep they are read
BUDGET = 400  # commands read for one hook; past it, the hook counts as the folder's
MAX_SCRIPT_BYTES = 256 * 1024
MAX_COMMAND_CHARS = 16 * 1024
MAX_SCRIPT_COMMANDS = 500

_PROJECT = "|".join(PROJECT_VARIABLES)
_PROJECT_DIR = re.compile(rf"\$(?:\{{(?:{_PROJECT})\}}|(?:{_PROJECT})\b)")
_ARITHMETIC = re.compile(r"\$\(\([^()]*\)\)")
_INNERMOST = re.compile(r"\$\([^()]*\)|(?<!\\)`[^`]*(?<!\\)`")
_ANSI_C = re.compile(r"\$'(?:[^'\\]|\\.)*'")
_EXPANSION = re.compile(
    rf"\$\{{(?!(?:{_PROJECT})\}})[^}}]*\}}|\$(?!(?:{_PROJECT})\b)(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])"
)
_ASSIGNED = re.compile(r"(?:^|[\s;&|(])[A-Za-z_][A-Za-z0-9_]*=(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)'|\(([^)]*)\))")
_DEFAULT = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=+]([^}]*)\}")
_HERE = re.compile(r"\$\(\s*pwd\s*\)|`\s*pwd\s*`|\$\{PWD\}|\$PWD\b")  # the hook's working folder: the workspace
_HOME = re.compile(r"\$\{HOME\}|\$HOME\b")
_VARIABLE_FOLDER = re.compile(r"^\$\{?[A-Za-z_][A-Za-z0-9_]*\}?/")  # `$X/tools/x.sh`: X may well be the workspace
_REDIRECTED = re.compile(r"[0-9]*>>?\|?\s*[^\s;&|]+")  # where a command writes is not what it runs
_TOKEN = re.compile(r"[^\s'\"`;|&()<>=]+")
_OPERATOR = re.compile(r"[0-9]*(?:>>?|<<?|>&|<&|&>>?)[|&]?|\|\|?|&&|;")  # (a redirection stays one)
_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./${}\[\]*?-]+")
# a script's own folder, as scripts spell it (`. "$(dirname "$0")/lib.sh"`)
_OWN_FOLDER = re.compile(
    r"\$\(\s*cd\s+\"?\$\(\s*dirname\s+\"?\$(?:0|\{0\}|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)\"?\s*\)\"?\s*&&\s*pwd\s*\)"
    r"|\$\(\s*dirname\s+\"?\$(?:0|\{0\}|\{BASH_SOURCE\[0\]\}|BASH_SOURCE)\"?\s*\)|\$\{0%/\*\}"
)
_RUNS_ITS_ARGUMENTS = re.compile(r"\$(?:@|\*|\{@\}|\{\*\})")  # (read loosely: any use of its arguments)
_ARGUMENT_RUNNER = re.compile(r"([A-Za-z_][\w-]*)\s*\(\)\s*\{[^}]{0,400}?\$(?:@|\{@\})")  # `quiet() { "$@"; }`
# simple commands that run nothing by themselves (what they are given is read as its own part)
_RUN_NOTHING = frozenset(
    {"[[", "[", "test", "echo", "printf", "true", "false", ":", "fi", "then", "else", "elif", "done", "esac", "do"}
    | {"exit", "return", "local", "export", "declare", "typeset", "readonly", "read", "shift", "unset", "wait"}
    | {"popd", "sleep", "date", "jq", "cat", "tee", "wc", "head", "tail", "logger", "notify-send", "say"}
    | {"for", "select", "case", "in", "function", "{", "}", "!", "kill", "mv", "cp", "rm", "mkdir", "touch", "tr"}
    | {"alias", "unalias", "shopt", "complete", "bind", "umask", "ulimit", "set", "trap", "history", "hash"}
)
_STARTS_PROCESSES = re.compile(
    rb"subprocess|os\.system|os\.popen|os\.exec|os\.spawn|pty\.spawn|child_process|execSync|execFileSync"
    rb"|spawnSync|\bexeca\b|Bun\.spawn|Deno\.Command"
)
_STRING = re.compile(
    r"\"((?:[^\"\\\n]|\\.){1,400})\"|'((?:[^'\\\n]|\\.){1,400})'|`((?:[^`\\]|\\.){1,400})`"  # (and JS templates)
)
# a list or tuple of words (`["make", "lint"]`, `("npx", "prettier", path)`, `[sys.executable, "-m", "unittest"]`)
_SEQUENCE = re.compile(r"[\[(]\s*([^\[\]()\n]{0,600}?)\s*[\])]")
_SUBSCRIPT = re.compile(r"(?<=[\w\])])\[[^\[\]\n]*\]")  # `os.environ["X"]`: a value, inside a list of words
_EXECUTABLE = re.compile(r"^\s*(?:sys\.executable|process\.execPath)\s*,")


# where version managers keep the programs they stand in for (their scripts run the program asked for, whose own
# words the hook's command already says)
_MANAGED = re.compile(r"/(?:\.pyenv|\.rbenv|\.nodenv|\.asdf|\.volta|\.nvm|\.sdkman|\.local/share/mise|shims)/")


class _Exhausted(Exception):
    pass


def runs_folder_code(binds: str) -> bool:
    """Whether a command's binding names files of the folder that it runs (bound, or a tool that finds the folder's
    code by itself: `pytest`, `npx prettier`, `cargo`). A repository's hooks folder with no hook in it is not, nor
    Python's look for modules where there is none."""
    if binds.startswith(UNBINDABLE):
        return FINDS_CODE in binds
    return any(part and not part.endswith((NO_MODULES, " git hooks:-")) for part in binds.split("; "))


def own_runs_folder_code(command: str, cwd: Path, binds: str | None = None) -> bool:
    """Whether a hook of the user's own, `command`, runs files of the folder `cwd` (module docstring).
    `binds`: the caller's `binding(command, cwd)`, when it has it."""
    if len(command) > MAX_COMMAND_CHARS:
        return True  # too long to read at every event: counted as the folder's, to be safe
    reading = _Reading(cwd)
    try:
        return reading.runs(command, 0, binds)
    except (_Exhausted, RecursionError):
        return True  # too much to read: counted as the folder's, to be safe


class _Reading:
    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.root = Path(os.path.realpath(cwd))
        self.left = BUDGET
        self.scripts: set[str] = set()  # the user's scripts read already (one that runs itself is read once)

    def runs(self, command: str, depth: int, binds: str | None = None) -> bool:
        self.left -= 1
        if self.left < 0 or depth > MAX_DEPTH:
            raise _Exhausted
        binds = binding(command, self.cwd) if binds is None else binds
        if not binds.startswith(UNBINDABLE):
            if runs_folder_code(binds):
                return True
        elif FINDS_CODE in binds or names_inside(command, self.root) or self._parts_run(command, depth):
            return True
        return any(self.runs(inner, depth + 1) for inner in self._own_scripts(command, depth))

    def _parts_run(self, command: str, depth: int) -> bool:
        """An unpinned command, read part by part: what is computed in it, each simple command made plain."""
        plain, computed = made_plain(command)
        if any(self.runs(inner, depth + 1) for inner in computed):
            return True
        parts = [_joined(words) for words in script_commands(command, strict=False)]
        parts = [part for part in parts if part.strip()]
        if len(parts) > 1 or (parts and parts[0] != command):
            return any(self._part_runs(part, depth + 1) for part in parts)
        words = parts[0].split() if parts else []
        if words and words[0] in _RUN_NOTHING:
            return False
        again = binding(plain, self.cwd)
        return again.startswith(UNBINDABLE) or runs_folder_code(again)  # (still unpinned: counted, to be safe)

    def _part_runs(self, part: str, depth: int) -> bool:
        words = part.split()
        program = words[0].rsplit("/", 1)[-1] if words else ""
        if program in ("cd", "pushd"):  # into a folder of the workspace: what runs next reads its files
            target = _PROJECT_DIR.sub(str(self.root), _HERE.sub(str(self.root), words[-1] if len(words) > 1 else ""))
            real = os.path.realpath(os.path.join(self.root, os.path.expanduser(target)))
            return "$" not in target and real != str(self.root) and Path(real).is_relative_to(self.root)
        return self.runs(part, depth)

    def _own_scripts(self, command: str, depth: int) -> list[str]:
        """The commands of the scripts of the user's own (outside the folder) that `command` runs: a shell script's
        simple commands (its own folder filled in; the hook's words after it when it runs its arguments), the
        commands a Python or Node script starts by literal."""
        out: list[str] = []
        tokens = _TOKEN.findall(_HOME.sub(os.path.expanduser("~"), command))
        home = Path(os.path.realpath(os.path.expanduser("~")))
        for at, token in enumerate(tokens):
            path = _script_path(token, self.root)
            if path is None or path in self.scripts:
                continue
            if depth > 0 and not Path(path).is_relative_to(home):
                continue  # what the user's scripts source of the system's (`/usr/share/bash-completion/…`)
            self.scripts.add(path)
            kind, commands, runs_arguments = _script(path, *_identity(path))
            out += commands
            if kind == "shell" and runs_arguments and at + 1 < len(tokens):
                out.append(" ".join(tokens[at + 1 :]))  # `with-timeout.sh npm test`: the script runs `npm test`
        return out


def _joined(words: list[str]) -> str:
    return " ".join(w if _SAFE_WORD.fullmatch(w) or _OPERATOR.fullmatch(w) else shlex.quote(w) for w in words)


def made_plain(command: str) -> tuple[str, list[str]]:
    """`command` with what is computed when it runs (`$(…)`, backquotes, `${…}`, `$NAME`; not the workspace's own
    variable) replaced by a plain word, and the commands computed in it (innermost first) with the values it
    assigns and the defaults it expands (`CMD="make lint"`, `${LINT:-make lint}`): each may be run. Brackets are
    made plain too: `"[$(date)]"` is a log line's, not a pattern."""
    computed: list[str] = []

    def plain(found: re.Match[str]) -> str:
        text = found.group(0)
        computed.append(text[2:-1] if text.startswith("$(") else text[1:-1])
        return "COMPUTED"

    for found in _ASSIGNED.finditer(command):
        computed.append(next(group for group in found.groups() if group is not None))
    computed += [found.group(1) for found in _DEFAULT.finditer(command)]
    command = _ANSI_C.sub("COMPUTED", command)
    previous = None
    while previous != command:
        previous = command
        command = _INNERMOST.sub(plain, _ARITHMETIC.sub("0", command))
    command = _EXPANSION.sub("COMPUTED", command).replace("[", "_").replace("]", "_")
    return command, [inner for inner in computed if inner.strip()]


def names_inside(command: str, root: Path) -> bool:
    """Whether `command`'s words, read plainly (in what is computed too), name an existing path inside `root`, the
    folder itself not counted (where it writes neither): `sh -c "$(cat tools/x.sh)"`, `for f in hooks/*.sh`."""
    text = _REDIRECTED.sub(" ", _HERE.sub(lambda _: str(root), _PROJECT_DIR.sub(lambda _: str(root), command)))
    for token in _TOKEN.findall(text):
        token = _VARIABLE_FOLDER.sub("", token)
        if "$" in token or token.startswith(("~", "-")):
            continue
        cut = re.split(r"[*?[]", token, maxsplit=1)
        if len(cut) > 1:  # a glob: the folder it looks in
            token = cut[0].rpartition("/")[0]
            if not token:
                continue
        path = Path(token) if os.path.isabs(token) else root / token
        real = Path(os.path.realpath(path))
        if real != root and real.is_relative_to(root) and os.path.lexists(path):
            return True
    return False


def _script_path(token: str, root: Path) -> str | None:
    """A script of the user's own the token names: a path (`~` filled in) or a program found on PATH, outside the
    folder (the folder's own files are the binding's)."""
    if "$" in token or token.startswith("-"):
        return None
    if "/" in token or token.startswith("~"):
        path = os.path.expanduser(token)
        if not os.path.isabs(path):
            return None
    else:  # a program of the user's own found on PATH (`my-stop-hook`), never a version manager's shim
        found = shutil.which(token)
        if found is None or not Path(found).is_relative_to(Path.home()) or _MANAGED.search(found):
            return None
        path = found
    real = os.path.realpath(path)
    if Path(real).is_relative_to(root) or not os.path.isfile(real):
        return None
    return real


def _identity(path: str) -> tuple[int, int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0, 0)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=256)
def _script(path: str, _ino: int, size: int, _mtime_ns: int) -> tuple[str | None, list[str], bool]:
    """What a script of the user's runs, read once per version: its kind, its commands, whether it runs its own
    arguments (`exec timeout 60 "$@"`). A program (ELF), a big file or an unreadable one: nothing."""
    if size > MAX_SCRIPT_BYTES:
        return None, [], False
    try:
        with open(path, "rb") as script:
            data = script.read(MAX_SCRIPT_BYTES)
    except OSError:
        return None, [], False
    if data.startswith(b"\x7fELF") or b"\0" in data:
        return None, [], False
    first = data.split(b"\n", 1)[0]
    kind = language(Path(path), first) or (None if first.startswith(b"#!") else "shell")  # (no `#!`: sh runs it)
    text = data.decode("utf-8", "replace")
    if kind == "shell":
        folder = os.path.dirname(path)
        text = _OWN_FOLDER.sub(lambda _: folder, text)
        read = script_commands(text, strict=False)[:MAX_SCRIPT_COMMANDS]
        commands = [_joined(words) for words in read]
        runners = set(_ARGUMENT_RUNNER.findall(text))  # `quiet make lint`: what `quiet` runs is `make lint`
        commands += [_joined(words[1:]) for words in read if len(words) > 1 and words[0] in runners]
        return kind, commands, bool(_RUNS_ITS_ARGUMENTS.search(text))
    if kind in ("python", "node") and _STARTS_PROCESSES.search(data):
        return kind, _literal_commands(text), False
    return kind, [], False


def _literal_commands(text: str) -> list[str]:
    """The commands a Python or Node script may start, by their literals: a list of strings (`["make", "lint"]`)
    joined, and a string with a space in it (`"npm test"`, `execSync('git status')`)."""
    out: list[str] = []
    for found in _SEQUENCE.finditer(_SUBSCRIPT.sub(" _", text)):
        inside = found.group(1)
        if "," not in inside:
            continue
        items = [a or b for a, b in re.findall(r"\"([^\"\n]*)\"|'([^'\n]*)'", inside)]
        if items:  # its literal words, in order (a value computed at run time left out)
            start = "python3 " if _EXECUTABLE.match(inside) else ""
            out.append(start + " ".join(shlex.quote(item) for item in items))
    for found in _STRING.finditer(text):
        value = found.group(1) or found.group(2) or found.group(3) or ""
        if " " in value.strip() and not value.startswith(("-", "#")):
            out.append(value)
    return out[:MAX_SCRIPT_COMMANDS]
