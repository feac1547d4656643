"""The workspace files a folder's command names, bound by digest: trust in a hook `sh scripts/fmt.sh` is trust in
that script as it was when the user answered. A pull that changes the script makes another binding, which no
answer admitted yet, so the hook stays off and the user is asked again.

The command is read with the permission layer's own shell parser: every static word (the program, its
arguments, `--opt=path` values, read redirections, a `bash -c '…'` string's own words) that names a regular file
inside the workspace is bound, and the files a program reads by convention (`make` → `Makefile`). Cost is
bounded: a file over `MAX_BYTES` or more than `MAX_FILES` files make the command unbindable, and it stays off.
"""

from __future__ import annotations

import errno
import hashlib
import os
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
