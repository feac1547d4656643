"""Path handling shared by the file tools: what a valid path is, and who may see a path."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from bridge import safefs
from bridge.display import Location
from bridge.tools.base import ReadGuard, ToolContext, ToolError
from bridge.winpaths import inside, native_form

NAME_MAX = 255  # bytes in one file name (Linux, macOS)
PATH_MAX = 4096  # bytes in a whole path, its terminating NUL included (Linux)


def path_problem(raw: str, *, field: str = "file_path") -> str | None:
    """Why `raw` cannot name a file (a message the model can act on), or None. Checked before anything
    touches the path: the OS would raise on a NUL byte or an unencodable character, deep inside whatever
    looked at it first."""
    if "\x00" in raw:
        at = raw.index("\x00")
        return (
            f"{field} contains a NUL byte (at character {at}), which no file name can hold; send the path without it."
        )
    try:
        encoded = os.fsencode(raw)
    except UnicodeEncodeError as error:
        bad = raw[error.start : error.end]
        return (
            f"{field} contains {bad!r}, a lone UTF-16 surrogate that cannot be part of a file name; "
            "send the path as plain text."
        )
    if len(encoded) >= PATH_MAX:
        return f"{field} is {len(encoded)} bytes long; a path can have at most {PATH_MAX - 1}."
    for name in encoded.split(b"/"):
        if len(name) > NAME_MAX:
            shown = os.fsdecode(name[:40])
            return f"{field} has a name of {len(name)} bytes ({shown}…); a file name can have at most {NAME_MAX} bytes."
    return None


def absolute_path(raw: str, *, field: str = "file_path") -> Path:
    """The model must send absolute paths (as Claude Code's tools require); `~` is expanded.
    The result is normalized (`..` folded) but symlinks are not resolved: containment checks do that."""
    problem = path_problem(raw, field=field)
    if problem is not None:
        raise ToolError(problem)
    expanded = os.path.expanduser(native_form(raw))  # Windows: Git Bash's `/c/x` is `C:\\x`
    if not os.path.isabs(expanded):
        raise ToolError(f"{field} must be an absolute path, got {raw!r}")
    return Path(os.path.normpath(expanded))


def path_locations(raw: str, *, field: str = "file_path", line: int | None = None) -> list[Location]:
    """The file a call names, for the editor to follow; none when the path is not one the tool would take."""
    try:
        return [Location(str(absolute_path(raw, field=field)), line)]
    except ToolError:
        return []


def opened_path(path: Path, ctx: ToolContext) -> str:
    """Where the file tools open `path` (absolute, normalized): the real path the permission step judged for it
    (`ctx.granted`), else — no permission step judged this call — its real path now, found link by link in
    user space. The result has no symlink and no `..`; the tools open it with `safefs.open_exact`, which
    follows no link, so a name flipped to a link since the check is refused, never followed."""
    if ctx.granted is not None:
        judged = ctx.granted.get(path)
        if judged is not None:
            return os.fspath(judged)
    try:
        return safefs.resolve(path, safefs.ANYWHERE)
    except OSError as error:
        raise read_error(path, error) from None


def read_error(path: Path, error: OSError, *, missing: str | None = None) -> ToolError:
    """An OS error from opening or reading `path`, as a message the model can act on (Read, Write, Edit).
    `path` is the path as the model named it (the real path opened may differ by the links it went through)."""
    if isinstance(error, safefs.Changed):
        return ToolError(
            f"{path} changed while it was being opened (a symbolic link appeared in its path since "
            "the permission check); nothing was read or written through it. If that was not you, "
            "something in the workspace is swapping files: look before retrying."
        )
    if isinstance(error, safefs.NotRegular):
        return ToolError(f"{path} is {safefs.describe_mode(error.mode)}, not a regular file.")
    if isinstance(error, safefs.UnsafePath):
        return ToolError(f"Cannot open {path}: {error}")
    if isinstance(error, FileNotFoundError):
        return ToolError(missing or f"File does not exist: {path}")
    if isinstance(error, IsADirectoryError):
        return ToolError(f"{path} is a directory, not a file. List it with Glob or Bash `ls`.")
    if isinstance(error, PermissionError):
        return ToolError(f"Permission denied reading {path}.")
    return ToolError(f"Cannot read {path}: {error.strerror or error}")


def looks_binary(sample: bytes) -> bool:
    """A NUL byte in the first block, as git and ripgrep decide."""
    return b"\x00" in sample[:8192]


def real_path_resolver() -> Callable[[str], str]:
    """`os.path.realpath` for many paths of a few directories (search results): each directory is resolved
    once; a file name costs one `lstat` (to follow it when it is a symlink). Paths must be absolute and
    normalized."""
    dirs: dict[str, str] = {}

    def real(path: str) -> str:
        head, name = os.path.split(path)
        resolved = dirs.get(head)
        if resolved is None:
            resolved = dirs[head] = os.path.realpath(head)
        full = os.path.join(resolved, name) if name else resolved
        return os.path.realpath(full) if os.path.islink(full) else full

    return real


def within(path: str, root: str) -> bool:
    return inside(path, root)  # Windows: drive letters, backslashes, no case


def containment_guard(roots: list[Path]) -> ReadGuard:
    """The guard without permission rules: a path may be shown when its real path is under one of `roots`
    or under the call's allowed scope. (The session gives tools the permission engine's guard instead.)"""
    real_roots = [os.path.realpath(root) for root in roots]
    real = real_path_resolver()
    scopes: dict[Path, str] = {}

    def guard(path: Path, scope: Path | None) -> str | None:
        resolved = real(os.fspath(path))
        if scope is not None and within(resolved, scopes.get(scope) or scopes.setdefault(scope, real(str(scope)))):
            return None
        if any(within(resolved, root) for root in real_roots):
            return None
        return f"{resolved} is outside the workspace"

    return guard


def read_guard_of(ctx: ToolContext) -> ReadGuard:
    """The guard for this call: the session's (rules + containment), else containment in cwd and the
    additional directories."""
    return ctx.read_guard or containment_guard([ctx.cwd, *ctx.additional_dirs])
