"""The workspace files a folder's command names, bound by digest: trust in a hook `sh scripts/fmt.sh` is trust in
that script as it was when the user answered. A pull that changes the script makes another binding, which no
answer admitted yet, so the hook stays off and the user is asked again.

The command is read with the permission layer's own shell parser: every static word (the program, its
arguments, `--opt=path` values, read redirections, a `bash -c '…'` string's own words) that names a regular file
inside the workspace is bound, and the files a program reads by convention (`make` → `Makefile`). Cost is
bounded: a file over `MAX_BYTES` or more than `MAX_FILES` files make the command unbindable, and it stays off.

A bound script's own code is read too (`_script_files`, script_reads.py): what a shell script sources, a Python
script imports, a Node script requires, a makefile includes and package.json's scripts run, and the workspace
files their commands name, and so on through those files; a pull that changes only `lib.sh` asks again. A
pull-in whose name is computed when it runs can't be known: the command is unbindable.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from bridge import safefs
from bridge.permissions import make_reads
from bridge.permissions.held import command_paths
from bridge.permissions.script_reads import (
    CONVENTIONAL,
    PROJECT_VARIABLES,
    Unbindable,
    code_it_reads,
    discovers,
    elsewhere,
    executed_program,
    language,
    loads_by_setting,
    names_in,
    package_script_discovers,
    read_regular,
    reading_budget,
    substituted,
    unmodelled,
    unwrapped,
)
from bridge.permissions.shell_syntax import Script, ShellSyntaxError
from bridge.permissions.shellparse import parse

MAX_FILES = 64  # the command's files and what they pull in (a Python tool's own modules)
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 2  # a `-c` string inside a `-c` string
MAX_MODULES = 256  # modules in the folder a bound Python script starts from (their contents are bound)
MAX_SCRIPT_BYTES = 1024 * 1024  # a script read for what it pulls in: past this, unbindable
UNBINDABLE = "unbindable: "


def binding(command: str, workspace: Path) -> str:
    """What `command` runs of the workspace, as a trust item's binding: `path sha256:…` for each file named, `;`
    joined; "" when it names none; `UNBINDABLE` and why when the files can't be bound (the command stays off)."""
    try:
        with reading_budget():
            return _binding(command, workspace)
    except RecursionError:
        return f"{UNBINDABLE}what it runs nests too deep to read"


def _binding(command: str, workspace: Path) -> str:
    root = Path(os.path.realpath(workspace))
    variables = {name: str(root) for name in PROJECT_VARIABLES}
    try:
        named = set(_named(command, root, 0, variables))
    except _Unbindable as why:
        return f"{UNBINDABLE}{why}"
    # and the files the sandbox holds as the command's (held.py): over-approximate, a file bound by mistake costs
    # only a question when it changes
    held = (_inside(str(path), root) for path in command_paths(command, root, variables=variables))
    written = written_by(command, root)  # its own log (`>> hook.log`) is where it writes, not what it runs
    named.update(path for path in held if path is not None and path not in written)
    # where the Python the command starts looks first for every module it imports, even the standard library's
    # own imports (`sys.path[0]`): the folder of a script it runs, the current one for `-m`
    first_paths = {p.parent for p in named if _language(p) == "python"}
    if _python_looks_here(command):
        first_paths.add(root)
    try:
        named = _with_script_files(named, root, _run_by_sh(command, root))
        runs_git = _runs_git(command, named)
        hooks = _git_hooks(root, runs_git=runs_git)
        if hooks is not None:  # what git runs of the workspace when the command runs git (`git commit`)
            named = _with_script_files(named | set(hooks[1]), root)
        programs = _git_programs(root) if runs_git else None
    except _Unbindable as why:
        return f"{UNBINDABLE}{why}"
    found = sorted(named)
    if len(found) > MAX_FILES:
        return f"{UNBINDABLE}names more than {MAX_FILES} workspace files"
    out: list[str] = []
    for real in found:
        # a workspace link leading out is bound to its target as it is now: a pull that retargets it asks again
        name = real.relative_to(root).as_posix() if real.is_relative_to(root) else str(real)
        try:
            st = os.stat(real)
            if st.st_size > MAX_BYTES:
                return f"{UNBINDABLE}{name} is over {MAX_BYTES // 2**20} MiB"
            digest = _digest(str(real), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        except OSError as exc:
            return f"{UNBINDABLE}{name} cannot be read ({exc.strerror})"
        out.append(f"{name} sha256:{digest}")
    for folder in sorted(first_paths):
        # a module added there later (a `selectors.py` that `subprocess` would import) makes another binding
        name = (folder.relative_to(root).as_posix() + "/" if folder != root else "") + "*.py"
        try:
            modules = _modules_in(folder, {str(path) for path in found})
        except _Unbindable as why:
            return f"{UNBINDABLE}{why}"
        out.append(f"{name} modules:{modules}")
    if hooks is not None:  # a hook a pull adds there runs too: the names there are bound as well as each one's text
        where = hooks[0].relative_to(root).as_posix() if hooks[0].is_relative_to(root) else str(hooks[0])
        out.append(f"{where}/ git hooks:{','.join(sorted(p.name for p in hooks[1])) or '-'}")
    if programs is not None:
        out.append(programs)
    return "; ".join(out)


def _git_programs(root: Path) -> str | None:
    """The programs the workspace's own git settings give git (`core.fsmonitor`, a `filter`'s `smudge`, an alias…),
    as a binding entry, for a command that runs git; None when they give none (a clone's never do: an archive that
    ships its own `.git` may — attack round 36, `git status` ran its `core.fsmonitor`). Read: the repository's
    settings and what they include from the workspace, its submodules' (`git status` reads them too), a workspace
    that is itself a git directory, and the repositories one folder down (`git -C sub status`)."""
    from bridge.permissions.git_held import PROGRAM_KEYS, config_entries

    found: list[str] = []
    for config in _git_settings_files(root):
        entries = config_entries(config)
        if entries is None:
            raise _Unbindable("git's settings can't be read: what git runs can't be known")
        where = config.relative_to(root).as_posix()
        found += [f"{where}:{key}={value}" for key, value in entries if PROGRAM_KEYS.match(key)]
    if not found:
        return None
    digest = hashlib.sha256("\0".join(sorted(found)).encode()).hexdigest()[:32]
    return f".git/config git programs:{digest}"


MAX_GIT_SETTINGS = 64


def _git_settings_files(root: Path) -> list[Path]:
    """The git settings files inside the workspace that a git command run in it (or one folder down) may read."""
    from bridge.permissions.git_held import common_dir_of, config_entries, gitdir_of

    def gitdir(folder: Path) -> Path | None:
        dotgit = folder / ".git"
        if dotgit.is_dir():
            return dotgit
        if dotgit.is_file():
            return gitdir_of(dotgit)
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "config").is_file():
            return folder  # the workspace is itself a git directory: git finds it there
        return None

    try:
        below = sorted(entry.path for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False))
    except OSError:
        below = []
    folders = [root, *(Path(path) for path in below[:MAX_GIT_SETTINGS])]
    out: list[Path] = []
    for folder in folders:
        found = gitdir(folder)
        if found is None:
            continue
        common = common_dir_of(found) or found
        candidates = [common / "config", found / "config.worktree"]
        modules = common / "modules"
        if modules.is_dir():
            candidates += sorted(modules.glob("**/config"))[:MAX_GIT_SETTINGS]
        for config in candidates:
            real = Path(os.path.realpath(config))
            if real.is_relative_to(root) and real.is_file() and real not in out:
                out.append(real)
                for key, value in config_entries(real) or []:  # what it includes from the workspace
                    if key.startswith("include") and key.endswith(".path") and value:
                        included = Path(os.path.realpath(real.parent / os.path.expanduser(value)))
                        if included.is_relative_to(root) and included.is_file() and included not in out:
                            out.append(included)
        if len(out) > MAX_GIT_SETTINGS:
            raise _Unbindable(f"the workspace holds more than {MAX_GIT_SETTINGS} git settings files")
    return out


_FED = re.compile(r"<\(|>\(|<<<")
# `python -m mod` and `python -c code` look for modules in the current folder first
_PYTHON = re.compile(r"(?:^|[\s/;&|(])python[\d.]*(?=[\s;&|)]|$)")
_PYTHON_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def _python_looks_here(command: str) -> bool:
    """Whether a Python the command starts looks for modules in the folder it runs in first (`sys.path[0]` is the
    current folder): `-c CODE`, `-m MOD`, a script on its input (`python3 < x.py`, `python3 -`), options before
    them in any spelling (`-W ignore -c`, `-qc`, `-Bc`: attack round 36's verification); not `-I` or `-P`."""
    for found in _PYTHON.finditer(command):
        words = command[found.end() :].split()
        at, isolated = 0, False
        while at < len(words):
            word = words[at]
            if word in _PYTHON_VALUED:
                at += 2  # (the option's value)
            elif word == "-" or word.startswith("<"):
                if not isolated:
                    return True
                break
            elif not word.startswith("-"):
                break  # a script: its own folder is the binding's (`first_paths`)
            elif word.startswith("--") or word[1:2] in ("W", "X"):
                at += 1
            else:
                flags = word[1:].split("c", 1)[0].split("m", 1)[0]  # (what follows `c` is code)
                isolated = isolated or "I" in flags or "P" in flags
                if "c" in word[1:] or "m" in word[1:]:
                    if not isolated:
                        return True
                    break
                at += 1
    return False


def _language(path: Path) -> str | None:
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, safefs.READ_FLAGS)) as file:
            first = file.readline(256)
    except OSError:
        first = b""
    return language(path, first)


def _modules_in(folder: Path, bound: set[str]) -> str:
    """A digest of what Python could import from `folder`: its modules', extension modules' and bytecode's names
    and contents (a module beside the script that shadows the standard library's, `selectors.py`, runs whenever
    the script imports what imports it: round 27's verification changed one and the binding stayed equal), and
    its packages' names (a package's own modules are bound when the script imports them)."""
    digest = hashlib.sha256()
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        entries = []
    files = 0
    for entry in entries:
        if entry.name.endswith((".py", ".pyc", ".so", ".pyd")):
            files += 1
            if files > MAX_MODULES:
                raise _Unbindable(f"{folder.name or folder} holds more than {MAX_MODULES} modules")
            content = "bound" if os.path.realpath(entry.path) in bound else _file_digest(entry.path)  # (on its own)
            digest.update(entry.name.encode() + b"\0" + content.encode() + b"\0")
        elif entry.is_dir() and (inits := _package_inits(entry.path)):
            # a package shadowing the library's (`selectors/`) runs its `__init__` as `selectors.py` would: its
            # source, or bytecode or an extension module alone (`json/__init__.pyc`: attack round 36)
            for init in inits:
                content = "bound" if os.path.realpath(init) in bound else _file_digest(init)
                kind = b"" if init.endswith("__init__.py") else os.path.basename(init).encode()  # (as bound before)
                digest.update(entry.name.encode() + b"/" + kind + b"\0" + content.encode() + b"\0")
        elif entry.name == "__pycache__" and entry.is_dir():
            for cached in sorted(os.listdir(entry.path))[:MAX_MODULES]:  # what Python uses whatever the source says
                where = os.path.join(entry.path, cached)
                if cached.endswith(".pyc") and _unchecked_bytecode(where):
                    digest.update(b"__pycache__/" + cached.encode() + _file_digest(where).encode())
    return digest.hexdigest()[:32]


def _package_inits(folder: str) -> list[str]:
    """The `__init__` files that make `folder` a package Python imports (source, bytecode, extension modules)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [
        os.path.join(folder, name)
        for name in names
        if name.startswith("__init__.") and name.endswith((".py", ".pyc", ".so", ".pyd"))
    ]


def _file_digest(path: str) -> str:
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return f"unreadable:{st.st_mode}:{st.st_size}"
        return _digest(path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    except OSError as exc:
        return f"unreadable:{exc.errno}"


def bound_paths(binding_text: str) -> dict[str, str]:
    """A binding's paths and digests (for saying which file changed)."""
    if binding_text.startswith(UNBINDABLE):
        return {}
    pairs = (part.rsplit(" ", 1) for part in binding_text.split("; ") if " " in part)
    return {path: digest for path, digest in pairs}


_Unbindable = Unbindable


def _named(command: str, root: Path, depth: int, variables: dict[str, str]) -> Iterator[Path]:
    try:
        script: Script = parse(command)
    except ShellSyntaxError as exc:
        if depth == 0:  # what the shell would run is not known: nothing can be bound to it
            raise _Unbindable(f"the command is not understood ({exc})") from exc
        return  # a `-c`-like argument that is not a command after all
    for cmd in script.commands:
        targets = [r.target for r in cmd.redirects if r.kind == "read" and r.target]
        words: list[str] = []
        for word in (*cmd.words, *targets):
            value = substituted(word.value, variables)
            if word.pattern is not None or (not word.static and (value == word.value or "$" in value or "`" in value)):
                # a name computed or globbed when it runs: the file it runs can't be known now
                raise _Unbindable(f"`{word.text}` is computed when it runs")
            words.append(value)
        settings = [assignment.value for assignment in cmd.assignments]
        why = (
            discovers(words)
            or package_script_discovers(words, root)
            or elsewhere(words, root)
            or code_it_reads(words, root)
            or loads_by_setting([*settings, *words])
            or unmodelled(words)
            or ("a process substitution or a here-string gives a command its code" if _FED.search(cmd.text) else None)
        )
        if why is None and make_reads.is_make(real := unwrapped(words)):  # what the goal's recipes run
            for name in make_reads.make_names(real, root):
                path = _inside(name, root)
                if path is not None:
                    yield path
        if why is not None:
            raise _Unbindable(f"{why}: what it runs can't be pinned to what you trusted")
        # the program a wrapper runs (`timeout 60 npm test`, `nice npx tsc`) is the one whose files are bound
        # (attack round 36's verification: `npm` behind `timeout` bound no package.json)
        real = unwrapped(words) or words
        if (executed := executed_program(real)) is not None and "/" not in executed:
            path = _inside(os.path.join("node_modules", ".bin", executed), root)  # (absent: bound by its absence)
            if path is not None:
                yield path
        for value in words:
            candidates = [value, value.split("=", 1)[1]] if "=" in value else [value]
            for candidate in candidates:
                path = _inside(candidate, root)
                if path is not None:
                    yield path
                elif depth < MAX_DEPTH and any(c.isspace() for c in candidate):
                    yield from _named(candidate, root, depth + 1, variables)  # `bash -c 'scripts/a.sh'`
        if cmd.words and cmd.words[0].static and words:
            yield from _program_files(words[0], root)
            if real is not words and real:
                yield from _program_files(real[0], root)
        program = real[0].rsplit("/", 1)[-1] if cmd.words and cmd.words[0].static and real else ""
        if re.fullmatch(r"python[\d.]*", program) and "-m" in real[1:-1]:  # `python -m tools.fmt`
            parts = real[real.index("-m", 1) + 1].split(".")
            for name in (os.path.join(*parts) + ".py", os.path.join(*parts, "__main__.py")):
                path = _inside(name, root)
                if path is not None:
                    yield path
        for name in CONVENTIONAL.get(program, ()):
            path = _inside(name, root)
            if path is not None:
                yield path
        yield from _interpreter_code(program, real, root)


def written_by(command: str, root: Path, *, new: bool = False) -> set[Path]:
    """The workspace files the command's own output redirections write (none when it can't be read); `new`: and
    those it would make (`>> logs/hook.log` before the first run), by their real paths."""
    try:
        script: Script = parse(command)
    except ShellSyntaxError:
        return set()
    out: set[Path] = set()
    for cmd in script.commands:
        for redirect in cmd.redirects:
            if redirect.kind == "write" and redirect.target is not None and redirect.target.static:
                path = _inside(redirect.target.value, root) or (
                    _made_inside(redirect.target.value, root) if new else None
                )
                if path is not None:
                    out.add(path)
    return out


def _made_inside(value: str, root: Path) -> Path | None:
    """The real path of `value` (relative to the workspace) when nothing is there yet and its folder is in the
    workspace."""
    if not value or "\0" in value or value.startswith("-"):
        return None
    real = Path(os.path.realpath(Path(os.path.normpath(root / os.path.expanduser(value)))))
    if os.path.lexists(real) or not real.parent.is_relative_to(root):
        return None
    return real


def _program_files(word: str, root: Path) -> Iterator[Path]:
    """The program itself where it is a workspace file: a name found on PATH (a virtualenv's `bin/` there: `ruff`
    is `.venv/bin/ruff`) as a path is; and for a program of a workspace virtualenv, the files its Python runs at
    every start (site-packages' `.pth` files, `sitecustomize.py`): the model can write them as it writes any file."""
    if "/" in word:
        lexical = Path(os.path.normpath(root / os.path.expanduser(word)))
    else:
        # (a relative entry, `node_modules/.bin`, is looked up where the command runs: the workspace, attack round 36)
        entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
        found = shutil.which(word, path=os.pathsep.join(os.path.join(root, entry) for entry in entries))
        if found is None:
            return
        lexical = Path(os.path.normpath(found))
        path = _inside(str(lexical), root)
        if path is not None:
            yield path
    venv = lexical.parent.parent
    if lexical.parent.name not in ("bin", "Scripts") or not venv.is_relative_to(root):
        return
    if not os.path.isfile(venv / "pyvenv.cfg"):
        return
    for site in [*venv.glob("lib/python*/site-packages"), venv / "Lib" / "site-packages"]:
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        for name in names:
            if name.endswith(".pth") or name in ("sitecustomize.py", "usercustomize.py"):
                path = _inside(str(site / name), root)
                if path is not None:
                    yield path


_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_NODE_CODE = frozenset({"-e", "--eval", "-p", "--print"})


def _interpreter_code(program: str, words: list[str], root: Path) -> Iterator[Path]:
    """What an interpreter given code, not a file, runs of the workspace: `python -c CODE` and `node -e CODE` the
    modules the code imports (read as a script in the workspace would be), `python DIR` its `__main__.py`, `node
    DIR` the file its package.json names (`main`) or its `index.js`."""
    python = re.fullmatch(r"python[\d.]*", program) is not None
    if not python and program not in ("node", "nodejs"):
        return
    n = 1
    while n < len(words):
        word = words[n]
        if python and word == "-m":
            return  # a module: `_named` binds it
        if (python and word == "-c") or (not python and word in _NODE_CODE):
            if n + 1 < len(words):
                kind = "python" if python else "node"
                for name in names_in(kind, words[n + 1], root / "-c", root, f"its {word} code"):
                    path = _inside(name, root)
                    if path is not None:
                        yield path
            return
        if word.startswith("-"):
            n += 2 if python and word in _PYTHON_OPTIONS_WITH_VALUE else 1
            continue
        folder = root / word
        if os.path.isdir(folder) and Path(os.path.realpath(folder)).is_relative_to(root):
            names = ["__main__.py"] if python else ["package.json", _package_main(folder) or "index.js"]
            for name in names:
                path = _inside(os.path.join(word, name), root)
                if path is not None:
                    yield path
        return


def _package_main(folder: Path) -> str | None:
    try:
        main = json.loads(read_regular(folder / "package.json", 1024 * 1024)).get("main")
    except (OSError, ValueError, AttributeError, RecursionError):
        return None
    return main if isinstance(main, str) else None


# the hooks git runs by their names (githooks(5)); a `*.sample` is never run
GIT_HOOKS = frozenset(
    {
        "applypatch-msg",
        "pre-applypatch",
        "post-applypatch",
        "pre-commit",
        "pre-merge-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "pre-rebase",
        "post-checkout",
        "post-merge",
        "pre-push",
        "pre-receive",
        "update",
        "proc-receive",
        "post-receive",
        "post-update",
        "reference-transaction",
        "push-to-checkout",
        "pre-auto-gc",
        "post-rewrite",
        "sendemail-validate",
        "fsmonitor-watchman",
        "p4-changelist",
        "p4-prepare-changelist",
        "p4-post-changelist",
        "p4-pre-submit",
        "post-index-change",
    }
)
_GIT_WORD = re.compile(rb"(?<![\w.$-])git(?![\w.-])")


def _runs_git(command: str, named: set[Path]) -> bool:
    """Whether the command, or a file of code it runs, may run git (read loosely: a mention is enough)."""
    if _GIT_WORD.search(command.encode("utf-8", "replace")):
        return True
    for path in named:
        kind = _language(path)
        if kind is None:
            continue
        try:
            data = read_regular(path, MAX_SCRIPT_BYTES)
        except OSError:
            continue
        if _GIT_WORD.search(data) or _spells_git(kind, data.decode("utf-8", "replace")):
            return True
    return False


def _spells_git(kind: str, text: str) -> bool:
    """`g''it` in a shell script, `'g' 'it'` in Python: the words as the language joins them."""
    if kind == "shell":
        from bridge.permissions.script_reads import script_commands

        return any(w.rsplit("/", 1)[-1] == "git" for words in script_commands(text, strict=False) for w in words)
    if kind == "python":
        import ast

        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return True
        return any(
            isinstance(n, ast.Constant) and isinstance(n.value, str) and re.search(r"(?<![\w.-])git\b", n.value)
            for n in ast.walk(tree)
        )
    return False


def _git_hooks(root: Path, *, runs_git: bool) -> tuple[Path, list[Path]] | None:
    """The folder git takes its hooks from for the workspace's repository (`core.hooksPath`, the repository's own
    settings over the user's; else `hooks` in the git directory), and the hooks there, when that folder is in the
    workspace: `git commit` in a trusted hook ran `.husky/pre-commit` or `.githooks/pre-commit`, files a pull
    changes, bound to nothing (round 28). For a command that may run git (`_runs_git`: `/usr/bin/git`, `g''it` and
    `['g' 'it']` too). None when there is no repository or the folder is elsewhere."""
    from bridge.permissions.git_held import common_dir_of, gitdir_of

    dotgit = root / ".git"
    gitdir = dotgit if dotgit.is_dir() else gitdir_of(dotgit) if dotgit.is_file() else None
    if gitdir is None:
        return None
    common = common_dir_of(gitdir) or gitdir
    hooks = common / "hooks"
    if not runs_git:
        return None
    configured = _hooks_path(root)
    if configured:
        hooks = Path(os.path.normpath(os.path.join(root, os.path.expanduser(configured))))
    real = Path(os.path.realpath(hooks))
    if not real.is_relative_to(root):
        return None
    found = [real / name for name in sorted(GIT_HOOKS) if (real / name).is_file()]
    return real, found


def _hooks_path(root: Path) -> str:
    """`core.hooksPath` as git takes it for the repository (every scope, `include.path` and `includeIf` followed:
    a tracked `.gitconfig` included from the repository's settings set it, round 28's second verification). Asked
    of git once per state of the settings files it reads, when none of them includes another (a hook that runs
    git is read at every event: git's start was most of it)."""
    key = _settings_state(root)
    if key is not None and (known := _hooks_paths.get(key)) is not None:
        return known
    found = _ask_hooks_path(root)
    if key is not None:
        if len(_hooks_paths) > 64:
            _hooks_paths.clear()
        _hooks_paths[key] = found
    return found


_hooks_paths: dict[tuple[object, ...], str] = {}


def _settings_state(root: Path) -> tuple[object, ...] | None:
    """The identity of every git settings file `git -C root config` reads (the repository's, the user's, the
    system's), or None when one includes another (what it includes is not in the key) or can't be read."""
    from bridge.permissions.git_held import common_dir_of, config_entries, gitdir_of

    dotgit = root / ".git"
    gitdir = dotgit if dotgit.is_dir() else gitdir_of(dotgit) if dotgit.is_file() else None
    if gitdir is None:
        return None
    common = common_dir_of(gitdir) or gitdir
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [
        common / "config",
        gitdir / "config.worktree",
        Path(home) / ".gitconfig",
        Path(xdg) / "git" / "config",
        Path("/etc/gitconfig"),
    ]
    state: list[object] = [str(root), home, xdg]
    for path in files:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            state.append(None)
            continue
        except OSError:
            return None
        entries = config_entries(path)
        if entries is None or any(key.startswith("include") for key, _ in entries):
            return None
        state.append((str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(state)


def _ask_hooks_path(root: Path) -> str:
    from bridge.execution import programs
    from bridge.permissions.git_held import common_dir_of, gitdir_of

    dotgit = root / ".git"
    gitdir = dotgit if dotgit.is_dir() else gitdir_of(dotgit) if dotgit.is_file() else None
    if (
        gitdir is not None
    ):  # a FIFO there would hold git (and every hook event) until its timeout: round 36's third pass
        for config in ((common_dir_of(gitdir) or gitdir) / "config", gitdir / "config.worktree"):
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(os.stat(config).st_mode):
                    raise _Unbindable(f"git's settings {config.name} are not a file: what git runs can't be known")

    git = programs.helper("git")
    if git is None:
        raise _Unbindable("git is not here to say where the repository's hooks are")
    env = {k: v for k, v in programs.helper_env().items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            [git, "-C", str(root), "config", "--includes", "--get", "core.hooksPath"],
            capture_output=True,
            timeout=5,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise _Unbindable("git's settings can't be read: where its hooks are can't be known") from exc
    if done.returncode not in (0, 1):  # (1: not set)
        raise _Unbindable("git's settings can't be read: where its hooks are can't be known")
    return os.fsdecode(done.stdout).strip()


_BY_SH = re.compile(r"(?:^|[;&|(\s])(?:\S*/)?(?:sh|dash|ash)\s+(?:-\S+\s+)*([^\s;&|()<>]+)")


_SOURCED = re.compile(r"(?:^|[;&|(\s])(?:\.|source)\s+([^\s;&|()<>]+)")


def _sh_runs(path: Path, root: Path, *, sourced: bool) -> list[Path]:
    """The workspace scripts a shell script gives to `sh` (and, `sourced`: a script dash runs, those it sources)."""
    if _language(path) not in ("shell", "make", "package"):
        return []
    try:
        text = read_regular(path, MAX_SCRIPT_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    names = [m.group(1) for m in _BY_SH.finditer(text)]
    if sourced:
        names += [m.group(1) for m in _SOURCED.finditer(text)]
    found = []
    for name in names:
        for base in (root, path.parent):
            inside = _inside(os.path.join(base, name.strip("'\"")), root)
            if inside is not None:
                found.append(inside)
    return found


def _run_by_sh(command: str, root: Path) -> frozenset[Path]:
    """The scripts the command gives to `sh` (dash, where it is: read as dash reads them)."""
    found = (_inside(m.group(1).strip("'\""), root) for m in _BY_SH.finditer(command))
    return frozenset(path for path in found if path is not None)


def _with_script_files(named: set[Path], root: Path, by_sh: frozenset[Path] = frozenset()) -> set[Path]:
    """`named` and, through every script among them, the files each one pulls in or names (`_script_files`), and
    what Python would load in a module's place (`_python_stand_ins`)."""
    out = set(named)
    todo = sorted(named)
    seen: dict[Path, bool] = {}  # each file read, and whether as dash reads it
    posix = set(by_sh)
    while todo:
        path = todo.pop()
        if path in seen and (seen[path] or path not in posix):
            continue  # (read, and not since found to be run by `sh`: then it is read again, as dash reads it)
        seen[path] = path in posix
        try:
            st = os.stat(path)
        except OSError as exc:
            raise _Unbindable(f"{path.name} cannot be read ({exc.strerror})") from exc
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        found_now = list(_script_files(path, root, key, path in posix))
        for child in _sh_runs(path, root, sourced=path in posix):  # `sh lib.sh` in it; what a dash script sources
            if child not in posix:
                posix.add(child)
                todo.append(child)
        if path.name.endswith(".py"):
            found_now += _python_stand_ins(path, root)
        for found in found_now:
            if found not in out:
                out.add(found)
                todo.append(found)
        if len(out) > MAX_FILES:
            raise _Unbindable(f"names more than {MAX_FILES} workspace files")
    return out


def _python_stand_ins(path: Path, root: Path) -> Iterator[Path]:
    """What Python loads instead of the source `path` without reading it: an extension module beside it
    (`helpers.cpython-311-x86_64-linux-gnu.so` comes before `helpers.py`), and a bytecode file in `__pycache__`
    marked "unchecked hash" (used whatever the source says). Python writes neither itself (its own bytecode
    files are checked against the source), so binding them asks again only when something else put one there."""
    stem = path.name[: -len(".py")] + "."
    try:
        with os.scandir(path.parent) as entries:
            extensions = [e.path for e in entries if e.name.startswith(stem) and e.name.endswith((".so", ".pyd"))]
    except OSError:
        extensions = []
    try:
        with os.scandir(path.parent / "__pycache__") as entries:
            cached = [e.path for e in entries if e.name.startswith(stem) and e.name.endswith(".pyc")]
    except OSError:
        cached = []
    for name in extensions + [c for c in cached if _unchecked_bytecode(c)]:
        found = _inside(name, root)
        if found is not None:
            yield found


def _unchecked_bytecode(path: str) -> bool:
    """A `.pyc` whose header says hash-based and not checked against its source (PEP 552: flags 0b01)."""
    try:
        fd = os.open(path, safefs.READ_FLAGS)
        try:
            header = os.read(fd, 8)
        finally:
            os.close(fd)
    except OSError:
        return False
    return len(header) == 8 and int.from_bytes(header[4:8], "little") & 0b11 == 0b01


def _script_files(path: Path, root: Path, key: tuple[int, int, int, int], by_sh: bool = False) -> Iterator[Path]:
    """The workspace files a script's own code pulls in or names (script_reads.py), found now: a name it reads
    that is absent is bound by its absence (a file that appears later makes another binding)."""
    for candidate in _script_names(path, root, key, by_sh):
        found = _inside(candidate, root)
        if found is not None:
            yield found


@lru_cache(maxsize=128)
def _script_names(path: Path, root: Path, _key: tuple[int, int, int, int], by_sh: bool = False) -> tuple[str, ...]:
    """The names a script pulls in or mentions, by its language (none for a file that is not code we read);
    cached by the script's stat key (a hook event reads nothing new)."""
    shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    try:
        fd = os.open(path, safefs.READ_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _Unbindable(f"{shown} is no longer a regular file")
            data = os.read(fd, MAX_SCRIPT_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _Unbindable(f"{shown} cannot be read ({exc.strerror})") from exc
    kind = language(path, data[:256].split(b"\n", 1)[0])
    if kind is None:
        return ()
    if len(data) > MAX_SCRIPT_BYTES:
        raise _Unbindable(f"{shown} is too long to read for the files it pulls in")
    first = data[:256].split(b"\n", 1)[0]
    posix = by_sh or (first.startswith(b"#!") and re.search(rb"\b(?:sh|dash|ash)\b", first) is not None)
    return tuple(dict.fromkeys(names_in(kind, data.decode("utf-8", "replace"), path, root, shown, posix=posix)))


def _inside(value: str, root: Path) -> Path | None:
    """The real path of `value` (relative to the workspace) when it is a regular file in the workspace, or one a
    link in the workspace leads to."""
    if not value or "\0" in value or (value.startswith("-") and "/" not in value):
        return None
    lexical = Path(os.path.normpath(root / os.path.expanduser(value)))
    real = Path(os.path.realpath(lexical))
    inside = real != root and real.is_relative_to(root)
    if not inside and not (lexical != real and lexical != root and lexical.is_relative_to(root)):
        return None
    try:
        return real if stat.S_ISREG(os.stat(real).st_mode) else None
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=256)
def _digest(path: str, _ino: int, _size: int, _mtime_ns: int, _ctime_ns: int) -> str:
    """The file's sha256, read in chunks; cached by its stat key (a hook event hashes nothing new). Opened without
    waiting and read only if it is still a regular file (a name swapped for a FIFO since its `stat` would hold the
    trust check), and at most MAX_BYTES of it (one that grows while read is cut: its digest then never matches)."""
    sha = hashlib.sha256()
    fd = os.open(path, safefs.READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "it is no longer a regular file")
        left = MAX_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(1 << 20, left))):
            sha.update(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return sha.hexdigest()[:32]
