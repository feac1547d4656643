"""The workspace files a folder's command names, bound by digest: trust in a hook `sh scripts/fmt.sh` is trust in
that script as it was when the user answered. A pull that changes the script makes another binding, which no
answer admitted yet, so the hook stays off and the user is asked again.

The command is read with the permission layer's own shell parser: every static word (the program, its
arguments, `--opt=path` values, read redirections, a `bash -c '…'` string's own words) that names a regular file
inside the workspace is bound, and the files a program reads by convention (`make` → `Makefile`). Cost is
bounded: a file over `MAX_BYTES` or more than `MAX_FILES` files make the command unbindable, and it stays off.

A bound shell script's own code is read too (`_script_files`): the files it sources (`. lib.sh`, `source`) and the
workspace files its commands name are bound as well, and so on through those scripts, so a pull that changes only
`lib.sh` asks again. A sourced name computed when the script runs (other than the script's own folder, written
the usual ways) can't be known: the command is unbindable.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shlex
import stat
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from bridge import safefs
from bridge.permissions.held import command_paths
from bridge.permissions.shell_syntax import Script, ShellSyntaxError
from bridge.permissions.shellparse import parse

MAX_FILES = 16
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 2  # a `-c` string inside a `-c` string
MAX_SCRIPT_BYTES = 1024 * 1024  # a shell script read for what it sources: past this, unbindable
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})
SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
# How a script names its own folder: read as that folder (what the shell would make of it), through a variable
# of ours so that a folder with spaces in its name stays one word.
OWN_FOLDER_VARIABLE = "__agent_bridge_script_folder"
OWN_FOLDER = re.compile(
    r"""\$\(\s*dirname\s+("?)(?:\$0|\$\{0\}|\$\{BASH_SOURCE(?:\[0\])?\}|\$BASH_SOURCE)\1\s*\)"""
    r"""|\$\{(?:0|BASH_SOURCE(?:\[0\])?)%/\*\}"""
    r"""|\$\(\s*cd\s+("?)\$\(\s*dirname\s+("?)(?:\$0|\$\{BASH_SOURCE(?:\[0\])?\})\3\s*\)\2\s*(?:&&|;)\s*pwd(?:\s+-P)?\s*\)"""
)
UNBINDABLE = "unbindable: "
PROJECT_VARIABLES = ("CLAUDE_PROJECT_DIR", "AGENT_BRIDGE_PROJECT_DIR")  # a hook's environment names the workspace
# Files a program reads by convention when the command names none (their code is what runs).
CONVENTIONAL: dict[str, tuple[str, ...]] = {
    "make": ("GNUmakefile", "makefile", "Makefile"),
    "gmake": ("GNUmakefile", "makefile", "Makefile"),
    "just": ("justfile", "Justfile", ".justfile"),
    "npm": ("package.json",),
    "yarn": ("package.json",),
    "pnpm": ("package.json",),
    "rake": ("Rakefile", "rakefile"),
}


def binding(command: str, workspace: Path) -> str:
    """What `command` runs of the workspace, as a trust item's binding: `path sha256:…` for each file named, `;`
    joined; "" when it names none; `UNBINDABLE` and why when the files can't be bound (the command stays off)."""
    root = Path(os.path.realpath(workspace))
    variables = {name: str(root) for name in PROJECT_VARIABLES}
    try:
        named = set(_named(command, root, 0, variables))
    except _Unbindable as why:
        return f"{UNBINDABLE}{why}"
    # and the files the sandbox holds as the command's (held.py): over-approximate, a file bound by mistake costs
    # only a question when it changes
    held = (_inside(str(path), root) for path in command_paths(command, root, variables=variables))
    named.update(path for path in held if path is not None)
    try:
        named = _with_script_files(named, root)
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
    return "; ".join(out)


def bound_paths(binding_text: str) -> dict[str, str]:
    """A binding's paths and digests (for saying which file changed)."""
    if binding_text.startswith(UNBINDABLE):
        return {}
    pairs = (part.rsplit(" ", 1) for part in binding_text.split("; ") if " " in part)
    return {path: digest for path, digest in pairs}


class _Unbindable(Exception):
    pass


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
            value = word.value
            for name, real in variables.items():
                value = value.replace(f"${{{name}}}", real).replace(f"${name}", real)
            if word.pattern is not None or (not word.static and (value == word.value or "$" in value or "`" in value)):
                # a name computed or globbed when it runs: the file it runs can't be known now
                raise _Unbindable(f"`{word.text}` is computed when it runs")
            words.append(value)
        for value in words:
            candidates = [value, value.split("=", 1)[1]] if "=" in value else [value]
            for candidate in candidates:
                path = _inside(candidate, root)
                if path is not None:
                    yield path
                elif depth < MAX_DEPTH and any(c.isspace() for c in candidate):
                    yield from _named(candidate, root, depth + 1, variables)  # `bash -c 'scripts/a.sh'`
        program = cmd.words[0].value.rsplit("/", 1)[-1] if cmd.words and cmd.words[0].static else ""
        for name in CONVENTIONAL.get(program, ()):
            path = _inside(name, root)
            if path is not None:
                yield path


def _with_script_files(named: set[Path], root: Path) -> set[Path]:
    """`named` and, through every shell script among them, the files each one sources or names (`_script_files`)."""
    out = set(named)
    todo = sorted(named)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen or not _is_shell_script(path):
            continue
        seen.add(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            raise _Unbindable(f"{path.name} cannot be read ({exc.strerror})") from exc
        for found in _script_files(path, root, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)):
            if found not in out:
                out.add(found)
                todo.append(found)
        if len(out) > MAX_FILES:
            raise _Unbindable(f"names more than {MAX_FILES} workspace files")
    return out


def _is_shell_script(path: Path) -> bool:
    """A `.sh`-like name, or a `#!` line that runs a shell (`#!/bin/sh`, `#!/usr/bin/env bash`)."""
    if path.name.endswith(SHELL_SUFFIXES):
        return True
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, safefs.READ_FLAGS)) as file:
            first = file.readline(256)
    except OSError:
        return False
    if not first.startswith(b"#!"):
        return False
    words = first[2:].decode("utf-8", "replace").split()
    if words and words[0].rsplit("/", 1)[-1] == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    return bool(words) and words[0].rsplit("/", 1)[-1] in SHELLS


def _script_files(path: Path, root: Path, key: tuple[int, int, int, int]) -> Iterator[Path]:
    """The workspace files a shell script's own code sources or names, found now (a name the script reads
    that is absent is bound by its absence: a file that appears later makes another binding)."""
    for candidate in _script_names(path, root, key):
        found = _inside(candidate, root)
        if found is not None:
            yield found


@lru_cache(maxsize=128)
def _script_names(path: Path, root: Path, _key: tuple[int, int, int, int]) -> tuple[str, ...]:
    """The names a shell script's own code sources or mentions, as paths to look at; cached by the script's stat
    key (a hook event parses nothing new). A sourced name that is computed when it runs makes the script
    unbindable; any other computed word names nothing we can bind (as at the top level, a word that is data to
    its program is bound only if it names a file)."""
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    try:
        fd = os.open(path, safefs.READ_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _Unbindable(f"{name} is no longer a regular file")
            data = os.read(fd, MAX_SCRIPT_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _Unbindable(f"{name} cannot be read ({exc.strerror})") from exc
    if len(data) > MAX_SCRIPT_BYTES:
        raise _Unbindable(f"{name} is too long to read for the files it sources")
    text = OWN_FOLDER.sub("${" + OWN_FOLDER_VARIABLE + "}", data.decode("utf-8", "replace"))
    own = {**dict.fromkeys(PROJECT_VARIABLES, str(root)), OWN_FOLDER_VARIABLE: str(path.parent)}
    out: list[str] = []
    for words in _script_commands(text):
        program = words[0]
        for n, word in enumerate(words):
            value = _substituted(word, own)
            known = "$" not in value and "`" not in value and not any(c in value for c in "*?[")
            if n == 1 and program in {".", "source"}:
                if not known:
                    raise _Unbindable(f"{name} sources `{word}`, a name computed when it runs")
                # relative to the hook's folder (the workspace), and to the script's own (one that `cd`s there
                # first): binding both costs at most a question
                out += [os.path.join(root, value), os.path.join(path.parent, value)]
            elif known:
                out += [value, value.split("=", 1)[1]] if "=" in value else [value]
        out += CONVENTIONAL.get(program.rsplit("/", 1)[-1], ())
    return tuple(dict.fromkeys(out))


# Where a command starts in a script line: after these (and at the line's start).
_SEPARATORS = frozenset(
    {
        ";",
        "&",
        "&&",
        "|",
        "||",
        "(",
        ")",
        ";;",
        "{",
        "}",
        "!",
        "then",
        "do",
        "else",
        "elif",
        "if",
        "while",
        "until",
        "time",
    }
)


def _script_commands(text: str) -> Iterator[list[str]]:
    """A script's simple commands as words, read tolerantly: any script, not only what the permission checks
    model (functions, `case`, `[[`, arrays are all fine here). Quotes are removed and expansions kept as written.
    Over-reading is safe (a word that names a workspace file binds it, costing at most a question); what matters
    is that no `.`/`source` is missed, so each line's commands are found after every separator."""
    for line in re.sub(r"\\\n", " ", text).splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        try:
            tokens = list(lexer)
        except ValueError:  # a quote that spans lines: words as the whitespace splits them
            tokens = [token.strip("'\"") for token in line.split()]
        words: list[str] = []
        for token in tokens:
            if token in _SEPARATORS:
                if words:
                    yield words
                words = []
            else:
                words.append(token)
        if words:
            yield words


def _substituted(value: str, variables: dict[str, str]) -> str:
    for name, real in variables.items():
        value = value.replace(f"${{{name}}}", real).replace(f"${name}", real)
    return value


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
