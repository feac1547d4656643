"""Commands that run other commands, seen through: `timeout 5 npm test` is `npm test` for every question, while what
`sudo`, `xargs`, `find -exec`, `env -S`, `sh -c`, `eval`, `watch`, `trap` and `flock` run becomes a part of its
own (`nested`). Each runner reads its own options, flag by flag; an option it doesn't know makes the program
unknown (`Unknown`). git is here too: its configuration can name programs it runs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bridge.permissions.command_parts import DANGEROUS_ENV, UNKNOWN, Part
from bridge.permissions.command_tables import GIT_SUBCOMMANDS
from bridge.permissions.shell_syntax import Word

if TYPE_CHECKING:
    from bridge.permissions.shell_build import Builder

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "rbash", "yash"})
# `git -c` keys that run nothing whatever their value (lower case); `pager.*` and signing only as booleans
_GIT_INERT_KEYS = re.compile(
    r"(user|author|committer)\.(name|email)|color\.[a-z.]+|column\.[a-z]+|advice\.[a-z]+|i18n\.[a-z]+|"
    r"init\.defaultbranch|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase|abbrev|eol|whitespace|"
    r"precomposeunicode|longpaths|symlinks|logallrefupdates|compression|bigfilethreshold|checkstat|trustctime|"
    r"untrackedcache|preloadindex|commentchar|commentstring)|diff\.(noprefix|mnemonicprefix|renames|renamelimit|"
    r"algorithm|context|interhunkcontext|indentheuristic|colormoved|colormovedws|relative|statgraphwidth|"
    r"statnamewidth|suppressblankempty|submodule|ignoresubmodules|dirstat|wserrorhighlight)|log\.(date|decorate|"
    r"abbrevcommit|follow|graphcolors|showroot|mailmap)|pull\.(rebase|ff)|merge\.(ff|conflictstyle|log|renames|"
    r"renamelimit|stat|verbosity|autostash)|rebase\.(autosquash|autostash|stat|updaterefs|abbreviatecommands)|"
    r"fetch\.(prune|prunetags|parallel|writecommitgraph|showforcedupdates)|push\.(default|autosetupremote|"
    r"followtags)|branch\.(autosetupmerge|autosetuprebase|sort)|commit\.(verbose|cleanup|status)|tag\.sort|"
    r"gc\.auto|maintenance\.auto|status\.(short|branch|showuntrackedfiles|relativepaths|showstash|aheadbehind|"
    r"renames|renamelimit|submodulesummary)|grep\.(linenumber|column|patterntype|extendedregexp|fullname)|"
    r"blame\.(date|coloring|showemail|blankboundary|showroot)|protocol\.version|http\.(version|postbuffer)"
)
_GIT_BOOLEAN_KEYS = re.compile(r"pager\.[a-z0-9.-]+|(commit|tag)\.gpgsign")


@dataclass(frozen=True)
class Unknown:
    why: str


Outcome = tuple[tuple[Word, ...], bool] | Unknown | None
Step = Callable[[tuple[Word, ...], Part, "Builder", int], Outcome]


def options(
    words: tuple[Word, ...],
    start: int,
    *,
    flags: str = "",
    values: str = "",
    long_flags: str = "",
    long_values: str = "",
) -> int | Unknown:
    """Index of the first operand after getopt-style options; Unknown when an option is not understood."""
    longs = {"--" + n: False for n in long_flags.split()} | {"--" + n: True for n in long_values.split()}
    i = start
    while i < len(words):
        word = words[i]
        if not word.static:
            return Unknown(f"an option of `{words[0].value}` is computed at run time")
        text = word.value
        if text == "--":
            return i + 1
        if not text.startswith("-") or text == "-":
            return i
        if text.startswith("--"):
            name, eq, _ = text.partition("=")
            found = [k for k in longs if k == name] or [k for k in longs if k.startswith(name)]
            if len(found) != 1:
                return Unknown(f"`{words[0].value} {name}` is not an option the checker knows")
            if longs[found[0]] and not eq:
                i += 1
            i += 1
            continue
        j = 1
        while j < len(text):
            letter = text[j]
            if letter in flags:
                j += 1
                continue
            if letter in values:
                if j + 1 == len(text):
                    i += 1
                break
            return Unknown(f"`{words[0].value} -{letter}` is not an option the checker knows")
        i += 1
    return i


def _after(words: tuple[Word, ...], at: int | Unknown, *, safe: bool) -> Outcome:
    if isinstance(at, Unknown):
        return at
    if at >= len(words):
        return None  # the wrapper alone (`nohup`, `env`): nothing more to see
    return words[at:], safe


def _simple_runner(
    flags: str = "", values: str = "", long_flags: str = "", long_values: str = "", *, safe: bool = False, skip: int = 0
) -> Step:
    def step(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
        at = options(words, 1, flags=flags, values=values, long_flags=long_flags, long_values=long_values)
        if not isinstance(at, Unknown):
            at += skip
        return _after(words, at, safe=safe)

    return step


def _command(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    if len(words) > 1 and words[1].static and words[1].value in ("-v", "-V"):
        return None  # a lookup, nothing runs
    return _after(words, options(words, 1, flags="p"), safe=True)


def _timeout(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="v",
        values="sk",
        long_flags="preserve-status foreground verbose help version",
        long_values="signal kill-after",
    )
    if isinstance(at, Unknown):
        return at
    return _after(words, at + 1, safe=True)  # the duration


def _time(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="pavq",
        values="fo",
        long_flags="portability append verbose quiet help version",
        long_values="format output",
    )
    if isinstance(at, Unknown):
        return at
    writes = any(_time_writes(w.value) for w in words[1:at])  # (the options are static: `options` saw to it)
    return _after(words, at, safe=not writes)


def _time_writes(option: str) -> bool:
    """Whether one of GNU time's options before the command writes a file: `-o FILE` / `--output` (any
    abbreviation), `-a` / `--append`, wherever among the options, alone or in a cluster (`-qo`, `-vaoFILE`)."""
    if option.startswith("--"):
        name = option[2:].split("=", 1)[0]
        return bool(name) and ("output".startswith(name) or "append".startswith(name))
    if not option.startswith("-"):
        return False
    for letter in option[1:]:
        if letter in "oa":
            return True
        if letter == "f":
            return False  # the rest of the cluster is the format
    return False


def _env(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    i = 1
    safe = True
    split: list[Word] = []
    while i < len(words):
        word = words[i]
        if not word.static:
            return Unknown("an argument of `env` is computed at run time")
        text = word.value
        if text in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
            i += 1
        elif text in ("-u", "--unset"):
            i += 2
        elif text.startswith(("--unset=", "-u")):
            i += 1
        elif text in ("-S", "--split-string") or text.startswith(("--split-string=", "-S")):
            value = text.split("=", 1)[1] if text.startswith("--split-string=") else text[2:]
            if text in ("-S", "--split-string"):
                if i + 1 >= len(words) or not words[i + 1].static:
                    return Unknown("the string given to `env -S` is computed at run time")
                value = words[i + 1].value
                i += 1
            if "$" in value or "\\" in value:
                return Unknown("the string given to `env -S` expands variables or escapes")
            try:
                split.extend(Word(w, w) for w in shlex.split(value))
            except ValueError:
                return Unknown("the string given to `env -S` can't be split")
            safe = False
            i += 1
        elif text in ("-C", "--chdir") or text.startswith(("--chdir=", "-C")):
            safe = False  # another directory: relative paths change meaning
            i += 2 if text in ("-C", "--chdir") else 1
        elif text == "--":
            i += 1
            break
        elif text.startswith("-"):
            return Unknown(f"`env {text}` is not an option the checker knows")
        elif "=" in text:
            name = text.split("=", 1)[0]
            if DANGEROUS_ENV.match(name):
                part.unknown_program = part.unknown_program or f"`env {name}=…` changes what the command runs"
                safe = False
            part.env_set.append(name)
            part.setting_words.append(word)
            builder.probe_setting(word, part, depth)
            i += 1
        else:
            break
    inner = (*split, *words[i:])
    if not inner:
        return None
    return tuple(inner), safe


def _sudo(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="AbEHKklnPSVv",
        values="CDghpRrtTUu",
        long_flags="askpass background preserve-env set-home login non-interactive preserve-groups stdin "
        "shell version validate remove-timestamp reset-timestamp list",
        long_values="close-from chdir group host prompt chroot role type command-timeout other-user user",
    )
    if isinstance(at, Unknown):
        return at
    if any(w.static and w.value in ("-s", "--shell", "-i", "--login", "-e", "--edit") for w in words[1:at]):
        return Unknown("`sudo -s/-i/-e` runs a shell or an editor")
    while at < len(words) and words[at].static and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[at].value):
        if DANGEROUS_ENV.match(words[at].value.split("=", 1)[0]):
            part.unknown_program = part.unknown_program or "sudo sets a variable that changes what runs"
        part.setting_words.append(words[at])
        at += 1
    return _after(words, at, safe=False)


def _xargs(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="0prtxoiel",
        values="adEILnPs",
        long_flags="null interactive no-run-if-empty verbose exit open-tty show-limits help version "
        "eof replace max-lines",
        long_values="arg-file delimiter max-args max-procs max-chars process-slot-var",
    )
    if isinstance(at, Unknown):
        return at
    replace = None
    for w in words[1:at]:
        if w.value.startswith("-I") and len(w.value) > 2:
            replace = w.value[2:]
        elif w.value.startswith(("-i", "--replace")):
            replace = "{}"
    for i, w in enumerate(words[1:at], 1):
        if w.value == "-I" and i + 1 < at:
            replace = words[i + 1].value
    inner = list(words[at:]) or [Word("echo", "echo")]
    inner = [UNKNOWN if replace and replace in w.value else w for w in inner]
    return (*inner, UNKNOWN), False  # xargs adds the words it reads


def _find_exec(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    if not all(w.static for w in words[1:]):
        return Unknown("`find` has words computed at run time (one could be -exec)")
    i = 1
    while i < len(words):
        if words[i].static and words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            inner: list[Word] = []
            while j < len(words) and not (words[j].static and words[j].value in (";", "+")):
                inner.append(UNKNOWN if "{}" in words[j].value else words[j])
                j += 1
            builder.nested_argv(inner, part, depth)
            i = j
        i += 1
    return None


def _shell(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    name = words[0].value.rsplit("/", 1)[-1]
    if len(words) == 2 and words[1].static and words[1].value in ("--version", "--help"):
        return None
    if part.hazard is None:
        part.hazard, part.hazard_command = f"{name} runs a command string or standard input as a script", name
    i = 1
    command_string = from_input = False
    while i < len(words):
        word = words[i]
        if not word.static:
            return Unknown(f"an argument of `{name}` is computed at run time")
        text = word.value
        if text == "--":
            i += 1
            break
        if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            if text == "-o" and i + 1 < len(words) and words[i + 1].value == "allexport":
                builder.settings.allexport = True  # (every variable the string sets is exported)
            i += 2
            continue
        if text.startswith("--"):
            i += 1
            continue
        if text.startswith(("-", "+")) and len(text) > 1:
            command_string = command_string or "c" in text[1:]
            if text.startswith("-") and "a" in text[1:]:
                builder.settings.allexport = True  # `bash -a -c …`
            from_input = from_input or (text.startswith("-") and any(c in text[1:] for c in "si"))
            i += 1
            continue
        break
    if command_string:
        if i >= len(words):
            return Unknown(f"`{name} -c` without a command string")
        string = words[i].value if words[i].static else None
        other = _not_bash(name, string) if string is not None else None
        if other is not None:  # read with bash's grammar it could hide what that shell runs: deny rules match it
            part.opaque = part.opaque or other
        builder.nested_string(string, part, depth, f"the string `{name} -c` runs")
        return None
    if i >= len(words) or from_input:
        return Unknown(f"`{name}` runs its standard input as a script, which the checker can't see")
    # A script file: what it runs is not read here, as for `python3 x.py`. Every deny and ask rule that could
    # apply matches it (opaque); an allow rule naming it lets it run, in the sandbox, which keeps the protected
    # files read-only for it.
    if part.hazard_command == name and part.hazard.endswith("as a script"):
        part.hazard = f"{name} runs the script {words[i].value}"
    part.opaque = part.opaque or f"`{name}` runs the script {words[i].value}, which the checker does not read"
    return None


def _eval(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    static = all(w.static for w in words[1:])
    builder.nested_string(" ".join(w.value for w in words[1:]) if static else None, part, depth, "the string eval runs")
    return None


def _trap(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    args = [w for w in words[1:] if not (w.static and w.value in ("-p", "-l", "--"))]
    if len(args) >= 2:
        builder.nested_string(args[0].value if args[0].static else None, part, depth, "the string trap runs")
    return None


def _watch(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="tbegcxpwdhv",
        values="nq",
        long_flags="no-title beep errexit chgexit color no-color exec precise no-wrap differences help version",
        long_values="interval equexit",
    )
    if isinstance(at, Unknown):
        return at
    rest = words[at:]
    if not rest:
        return None
    if any(w.static and w.value in ("-x", "--exec") for w in words[1:at]):
        return rest, False
    static = all(w.static for w in rest)
    text = " ".join(w.value for w in rest) if static else None
    if text is not None and (other := _not_bash("sh", text)) is not None:  # watch runs it with `sh -c`
        part.opaque = part.opaque or other
    builder.nested_string(text, part, depth, "the command watch runs")
    return None


def _flock(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    at = options(
        words,
        1,
        flags="sxunoFhV",
        values="wEc",
        long_flags="shared exclusive unlock nonblock close no-fork verbose help version",
        long_values="timeout conflict-exit-code command",
    )
    if isinstance(at, Unknown):
        return at
    for i, w in enumerate(words[1:], 1):
        if w.static and w.value in ("-c", "--command") and i + 1 < len(words):
            text = words[i + 1].value if words[i + 1].static else None
            if text is not None and (other := _not_bash("sh", text)) is not None:  # flock runs it with $SHELL -c
                part.opaque = part.opaque or other
            builder.nested_string(text, part, depth, "the command flock runs")
            return None
    return _after(words, at + 1, safe=False)  # the lock file


def _git(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    """git runs programs its configuration names: `-c` may set only keys known to run nothing; options that
    name another configuration, and `ext::` remotes, make what runs unknown. A subcommand that is not a
    read-only one may run its arguments (`rebase -x CMD`, `ls-remote --upload-pack=CMD`, `bisect run CMD`,
    `submodule foreach CMD`): they are probed like an unknown program's."""
    if any(w.static and "ext::" in w.value for w in words[1:]):
        return Unknown("a git `ext::` remote runs a command")
    for i, word in enumerate(words[1:], 1):
        if not word.static:
            return None
        value = word.value
        if value == "-c":
            pair = words[i + 1] if i + 1 < len(words) else None
            if pair is None or not pair.static or not _inert_git_setting(pair.value):
                shown = pair.value if pair is not None else ""
                return Unknown(
                    f"`git -c {shown}` sets a configuration the checker does not know to be inert "
                    "(it could run a program)"
                )
        elif value.startswith(("--config-env", "--exec-path", "--git-dir", "--work-tree")):
            return Unknown(f"`git {value}` changes which configuration or programs git uses")
        elif not value.startswith("-") and words[i - 1].value not in ("-c", "-C"):
            if value not in GIT_SUBCOMMANDS:
                builder.probe_arguments(words[i:], part, depth)
            return None
    return None


def _inert_git_setting(pair: str) -> bool:
    """`key=value` of `git -c`: a key known to change only how git shows or records things (an allowlist: git
    has too many keys that run programs to list those)."""
    key, _, value = pair.partition("=")
    key = key.lower()
    if _GIT_BOOLEAN_KEYS.fullmatch(key):
        return value.lower() in ("", "true", "false", "yes", "no", "on", "off", "1", "0")
    return _GIT_INERT_KEYS.fullmatch(key) is not None


# Options that make a build tool or package runner run code given on its command line, or a program it names
# (attack round 9: with `Bash(cargo test *)` allowed, `cargo test --config 'target.….runner=["sh","-c","…"]'` ran
# it; with `Bash(npm test *)`, `npm test --node-options=--import=data:…`). What runs is then unknown, so no prefix
# rule for the program covers such a command: it asks. Per program family, the option names (without dashes).
_CODE_OPTIONS: dict[str, tuple[str, ...]] = {
    "cargo": ("config",),  # inline TOML: runners, rustc wrappers, linkers
    # and another folder's scripts (attack round 24: `npm test --prefix=/tmp/other` under `Bash(npm test *)`):
    # npm's --prefix, yarn's --cwd, pnpm's --dir / -C
    "npm": (
        "node-options",
        "script-shell",
        "shell",
        "userconfig",
        "globalconfig",
        "call",
        "init-module",
        "prefix",
        "cwd",
        "dir",
        "c",
    ),
    "go": ("exec", "toolexec", "overlay", "modfile", "vettool"),
    "helm": ("post-renderer", "post-renderer-args"),  # a program the rendered manifests are piped through
}
_CODE_OPTION_FAMILY = {
    "cargo": "cargo",
    "npm": "npm",
    "pnpm": "npm",
    "yarn": "npm",
    "bun": "npm",
    "go": "go",
    "helm": "helm",
}


# make's options that give it other recipes: code to evaluate, another makefile (`-f /dev/stdin <<< …`), another
# folder's makefile, another include path (attack round 24: `make test --eval='$(shell …)'` under
# `Bash(make test *)`). Long options as GNU getopt takes them: any unambiguous abbreviation (`--ev=`).
_MAKE_CODE_LONG = ("eval", "file", "makefile", "directory", "include-dir")
_MAKE_CODE_SHORT = "EfCI"
_MAKE_LONG = (
    "always-make",
    "debug",
    "environment-overrides",
    "help",
    "ignore-errors",
    "jobs",
    "keep-going",
    "load-average",
    "check-symlink-times",
    "just-print",
    "dry-run",
    "recon",
    "old-file",
    "assume-old",
    "output-sync",
    "print-data-base",
    "question",
    "no-builtin-rules",
    "no-builtin-variables",
    "shuffle",
    "silent",
    "quiet",
    "no-silent",
    "stop",
    "no-keep-going",
    "touch",
    "trace",
    "version",
    "print-directory",
    "no-print-directory",
    "what-if",
    "new-file",
    "assume-new",
    "warn-undefined-variables",
    *_MAKE_CODE_LONG,
)


def _make_code(program: str, words: Sequence[Word]) -> str | None:
    """Why make's arguments give it recipes the checker can't see: a code option (`_MAKE_CODE_LONG`, bundled short
    ones too: `-sE…`), or a variable set on its command line (`make test PYTEST='sh -c …'`: recipes expand it; a
    word with `=` is a variable, never a target — `X=`, `X:=`, `X+=`, `X!=` — before `--` or after it)."""
    options = True
    for word in words:
        if not word.static:
            continue
        value = word.value
        if value == "--":  # (options end; a `VAR=value` after it is still a variable: round 24's verification)
            options = False
            continue
        if "=" in value and (not options or not value.startswith("-")):
            name = value.split("=", 1)[0].rstrip(":+?!")
            return f"`{program} {name}=…` sets a variable its recipes may run"
        if not options:
            continue
        if value.startswith("--"):
            given = value[2:].split("=", 1)[0]
            matches = [name for name in _MAKE_LONG if name.startswith(given)] if given else []
            if given in _MAKE_CODE_LONG or (given not in _MAKE_LONG and any(m in _MAKE_CODE_LONG for m in matches)):
                return f"`{program} {value.split('=', 1)[0]}` gives it recipes the checker can't see"
        elif value.startswith("-") and len(value) > 1:
            for letter in value[1:]:
                if letter in _MAKE_CODE_SHORT:
                    return f"`{program} -{letter}` gives it recipes the checker can't see"
                if letter in "jlOWo":  # (an option whose value is the rest of the word)
                    break
    return None


def code_option(program: str, words: Sequence[Word]) -> str | None:
    """Why `program`'s arguments make it run code the checker can't see (`_CODE_OPTIONS`), or None: such an option
    spelled with one dash or two, with `=value` or not, or (npm's option parser expands them) as an abbreviation of
    three letters or more, `_` for `-`."""
    if program in ("make", "gmake"):
        return _make_code(program, words)
    family = _CODE_OPTION_FAMILY.get(program)
    if family is None:
        return None
    names = _CODE_OPTIONS[family]
    for i, word in enumerate(words):
        if not word.static:
            continue  # a computed word: the rule does not match it as written anyway
        if word.value == "--":
            break
        if not word.value.startswith("-"):
            continue
        given = word.value.lstrip("-").split("=", 1)[0].lower().replace("_", "-")
        if family == "go" and given == "ldflags":  # `-ldflags=-extld=PROGRAM`: the linker go runs (not `-X …`)
            value = (
                word.value.partition("=")[2]
                if "=" in word.value
                else (words[i + 1].value if i + 1 < len(words) else "")
            )
            if "extld" in value or "linkmode" in value:
                return f"`{program} -ldflags` names a linker it runs"
        for name in names:
            if given == name or (family == "npm" and len(given) >= 3 and name.startswith(given)):
                return f"`{program} {word.value.split('=', 1)[0]}` makes it run code the checker can't see"
    return None


def _unknown_runner(words: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> Outcome:
    return Unknown(f"`{words[0].value}` runs another command the checker can't pick out")


RUNNERS: dict[str, Step] = {
    "command": _command,
    "builtin": _simple_runner(safe=False),
    "exec": _simple_runner("cl", "a", safe=False),
    "nice": _simple_runner("", "n", long_values="adjustment", safe=True),
    "nohup": _simple_runner(long_flags="help version", safe=True),
    "timeout": _timeout,
    "time": _time,
    "stdbuf": _simple_runner("", "ioe", long_values="input output error", safe=True),
    "setsid": _simple_runner("cfw", long_flags="ctty fork wait help version"),
    "ionice": _simple_runner("tP", "cnp", long_values="class classdata pid pgid uid", long_flags="ignore"),
    "env": _env,
    "sudo": _sudo,
    "doas": _simple_runner("nsL", "uC"),
    "xargs": _xargs,
    "find": _find_exec,
    "eval": _eval,
    "trap": _trap,
    "watch": _watch,
    "flock": _flock,
    "git": _git,
    **{name: _shell for name in SHELLS},
    **{
        name: _unknown_runner
        for name in (
            "chrt",
            "taskset",
            "unshare",
            "nsenter",
            "strace",
            "ltrace",
            "parallel",
            "su",
            "runuser",
            "script",
            "pkexec",
            "busybox",
            "chroot",
            "firejail",
            "bwrap",
            "systemd-run",
            "dbus-launch",
            "xvfb-run",
            "gdb",
            "valgrind",
            "perf",
            "numactl",
            "cgexec",
            "sg",
            "newgrp",
            "caffeinate",
            "fakeroot",
            "proot",
            "tsp",
            "nq",
            "batch",
            "at",
            "source",
            ".",
        )
    },
}


_OWN_GRAMMAR = frozenset({"zsh", "fish", "csh", "tcsh"})
_BASH_ONLY = ("&>", "$'", '$"', "|&", "<<<")


def _not_bash(shell: str, text: str) -> str | None:
    """Why the string another shell runs can't be read as bash reads it: a shell with a grammar of its own (zsh's
    glob qualifiers run code, fish's `(…)` substitutes), or bash's own forms that a POSIX shell (dash is `sh` on
    Debian) reads otherwise (`echo &>f rm x` runs `rm x` there)."""
    if shell in ("bash", "rbash"):
        return None
    if shell in _OWN_GRAMMAR:
        return f"`{shell}` reads its string with a grammar of its own"
    found = next((form for form in _BASH_ONLY if form in text), None)
    return f"`{shell}` is not bash: it reads `{found}` in its string otherwise" if found is not None else None
