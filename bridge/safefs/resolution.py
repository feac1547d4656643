"""Resolution within roots, and the opens built on it: the package docstring (bridge/safefs/__init__.py) says
what each guarantees."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from bridge.safefs import portable
from bridge.safefs.errors import Changed, LinkOut, NotRegular, Outside, TooBig, UnsafePath
from bridge.safefs.opens import _DIR_FLAGS, READ_FLAGS, RETRIES, backend, open_exact, read_all

MAX_LINKS = 40  # symlinks followed in one resolution, as the kernel's ELOOP limit


class _Anywhere(tuple[str, ...]):
    """The roots that allow every place on every file system (see `ANYWHERE`)."""


ANYWHERE: Sequence[str] = _Anywhere()
"""`roots` that allow every place: the file tools' own containment is the permission step's, so all they ask of
`resolve` is the real path, links followed wherever they lead. Not `["/"]`: on Windows `/` is the root of the
current drive only, so a path on another drive (`D:\\x`, `\\\\server\\share\\x`), or a link leading there,
would be refused as outside. (A sentinel rather than an empty list, so that no list that happens to be empty
ever means everywhere.)"""


def _within(path: str, root: str, flavour: ModuleType = os.path) -> bool:
    if flavour.dirname(root) == root:  # a file system's root (`/`, `C:\`): everything on it
        return bool(flavour.normcase(path).startswith(flavour.normcase(root)))
    path, root = flavour.normcase(path), flavour.normcase(root)
    return path == root or path.startswith(root + flavour.sep)


def inside(path: str, roots: Sequence[str], flavour: ModuleType = os.path) -> bool:
    """`path` (absolute, normalized) is in one of the real `roots` (names compared as the platform compares
    them: ignoring case on Windows), or `roots` is `ANYWHERE`."""
    return isinstance(roots, _Anywhere) or any(_within(path, root, flavour) for root in roots)


def real_roots(roots: Sequence[str | Path]) -> list[str]:
    """The allowed roots as real paths (they are the caller's trusted directories, resolved once here)."""
    out: list[str] = []
    for root in roots:
        real = os.path.realpath(os.fspath(root))
        if real not in out:
            out.append(real)
    return out


def _approaches(roots: Sequence[str | Path], real: list[str]) -> set[str]:
    """The paths on the way to a root: every ancestor of each root as given and as resolved, and the roots as
    given (`/tmp/proj` when `/tmp` is a link to `/private/tmp`). A walk may pass through these to get in.
    (`normcase`d: Windows' names ignore case.)"""
    out: set[str] = set()
    for root in [*(os.path.normpath(os.fspath(r)) for r in roots), *real]:
        while True:
            out.add(os.path.normcase(root))
            parent = os.path.dirname(root)
            if parent == root:
                break
            root = parent
    return out


def _split(named: str) -> tuple[str, list[str]]:
    if os.sep == "/":
        return ("/" if named.startswith("/") else ""), named.split("/")
    return portable.split_named(named)


class _ByFd:
    """Looks at names relative to the directory reached so far (an `O_NOFOLLOW` fd): what the kernel would see."""

    def __init__(self, anchor: str) -> None:
        self.fd = os.open(anchor, _DIR_FLAGS)

    def lstat(self, cur: str, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def readlink(self, cur: str, name: str) -> str:
        return os.readlink(name, dir_fd=self.fd)

    def enter(self, name: str, shown: str) -> None:
        try:
            nxt = os.open(name, _DIR_FLAGS, dir_fd=self.fd)
        except OSError as error:
            if error.errno in (errno.ENOTDIR, errno.ELOOP):
                raise Changed(shown) from None
            raise
        os.close(self.fd)
        self.fd = nxt

    def restart(self, real: str) -> None:
        self.close()
        self.fd = open_exact(real, _DIR_FLAGS)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class _ByName:
    """The portable back end's way (no `dir_fd`): by full name. What is found is only a candidate real path;
    `open_exact` proves it when it opens it (portable.py)."""

    def lstat(self, cur: str, name: str) -> os.stat_result:
        return os.lstat(os.path.join(cur, name))

    def readlink(self, cur: str, name: str) -> str:
        return os.readlink(os.path.join(cur, name))

    def enter(self, name: str, shown: str) -> None:
        return None

    def restart(self, real: str) -> None:
        return None

    def close(self) -> None:
        return None


def resolve(
    path: str | Path,
    roots: Sequence[str | Path],
    *,
    follow_last: bool = True,
    trail: list[tuple[str, str]] | None = None,
) -> str:
    """The real path `path` names, found in user space: each component is looked at with `O_NOFOLLOW`
    relative to the directory before it, so the walk sees exactly what the kernel would (the portable back
    end looks by full name; the open that follows proves the result). Only places inside
    `roots` or on the way to one (their ancestors) are ever looked at: a path named elsewhere raises `Outside`
    and a symlink whose target leads elsewhere raises `LinkOut`, both before anything out there is touched.
    A missing tail (or one below a file) is kept as named (`..` in it folds lexically), as `os.path.realpath`
    does: opening the result then fails as it should. `follow_last=False`
    leaves a final symlink as it is (the result is then the link's own path). `trail` receives each (directory,
    name) looked up on the way, links included: what a `NameWatch` watches."""
    named = os.fspath(path)
    cur, first = _split(named)
    if not cur or cur == os.sep != "/":
        raise ValueError(f"not an absolute path: {named!r}")
    allowed: Sequence[str] = ANYWHERE if isinstance(roots, _Anywhere) else real_roots(roots)
    approach = _approaches(roots, list(allowed))
    todo = list(reversed(first))
    missing = 0  # how many trailing components of `cur` do not exist
    links = 0
    via: str | None = None  # the last link followed (for the error)

    def refuse() -> UnsafePath:
        return LinkOut(named, via) if via is not None else Outside(named)

    look: _ByFd | _ByName = _ByName() if backend() == "portable" else _ByFd(cur)
    try:
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            if name == "..":
                cur = os.path.dirname(cur)
                if missing:
                    missing -= 1
                else:
                    look.restart(cur)
                continue
            nxt = os.path.join(cur, name)
            if os.path.normcase(nxt) not in approach and not inside(nxt, allowed):
                raise refuse()
            if missing:
                cur, missing = nxt, missing + 1
                continue
            if not todo and not follow_last:
                cur = nxt
                break
            if trail is not None:
                trail.append((cur, name))
            try:
                st = look.lstat(cur, name)
            except FileNotFoundError:
                cur, missing = nxt, 1
                continue
            if portable.is_link(st):
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), named)
                try:
                    target = look.readlink(cur, name)
                except OSError as error:  # EINVAL: no longer a link; ENOENT: gone
                    if error.errno in (errno.EINVAL, errno.ENOENT):
                        raise Changed(named) from None
                    raise
                via = nxt
                try:
                    anchor, parts = _split(target)
                except ValueError:  # Windows' `C:x`: relative to a drive's current directory, not a place
                    raise refuse() from None
                todo.extend(reversed(parts))
                if anchor:
                    cur = os.path.splitdrive(cur)[0] + os.sep if anchor == os.sep != "/" else anchor
                    look.restart(cur)
                continue
            if todo and stat.S_ISDIR(st.st_mode):
                look.enter(name, named)
            elif any(p not in ("", ".") for p in todo):  # a file with more after it: nothing is below it
                cur, missing = nxt, 1
                continue
            cur = nxt
    finally:
        look.close()
    if not inside(cur, allowed):
        raise refuse()
    return cur


@dataclass
class Opened:
    """An open file: its fd (the caller closes it), the real path it was opened at, and its `fstat`."""

    fd: int
    real: str
    stat: os.stat_result

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def open_beneath(
    path: str | Path,
    roots: Sequence[str | Path],
    flags: int = os.O_RDONLY,
    mode: int = 0o666,
    *,
    follow_last: bool = True,
) -> Opened:
    """`resolve` then `open_exact` of the real path found; when the tree changes in between (a link appeared
    where there was none) it is resolved again, up to `RETRIES` times, then `Changed` is raised."""
    for attempt in range(RETRIES):
        try:
            real = resolve(path, roots, follow_last=follow_last)
            fd = open_exact(real, flags, mode)
        except Changed:
            if attempt == RETRIES - 1:
                raise
            continue
        try:
            return Opened(fd, real, os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
    raise Changed(os.fspath(path))


def read_regular(root: str | Path, path: str | Path, max_bytes: int) -> bytes:
    """The bytes of the regular file `path` inside `root`: symlinks are followed only while they stay inside
    `root`, the file is opened exactly where they lead, and it must be a regular file of at most `max_bytes`.
    Raises `FileNotFoundError` (no such file), `Outside` / `LinkOut` (not inside `root`, or a link leads out),
    `NotRegular` (a directory, FIFO, device or socket), `TooBig`, or another `OSError`."""
    opened = open_beneath(path, [root], READ_FLAGS)
    try:
        if not stat.S_ISREG(opened.stat.st_mode):
            raise NotRegular(opened.real, opened.stat.st_mode)
        if opened.stat.st_size > max_bytes:
            raise TooBig(opened.real, opened.stat.st_size, max_bytes)
        return read_all(opened.fd, max_bytes, opened.real)
    finally:
        opened.close()
