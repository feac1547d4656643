"""Exact opens, resolution within roots and bounded reads: the package docstring (bridge/safefs/__init__.py)
says what each guarantees."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

FORCE_ENV = "AGENT_BRIDGE_SAFEFS"
"""`walk` forces the component-by-component fallback even where `openat2` works."""

MAX_LINKS = 40  # symlinks followed in one resolution, as the kernel's ELOOP limit
RETRIES = 8  # re-resolutions when the tree changes between resolving and opening

# openat2(2): the syscall number is 437 on every architecture with the generic table (x86_64, arm64, riscv64,
# i386 and arm alike); alpha's is 547.
_OPENAT2 = {"alpha": 547}.get(platform.machine(), 437)
RESOLVE_NO_XDEV = 0x01
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
_AT_FDCWD = -100


def _flag(name: str) -> int:
    """An `os.O_*` flag, 0 where the platform has none (Windows has no O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC...):
    this module is imported at start-up everywhere."""
    return int(getattr(os, name, 0))


O_PATH: int = _flag("O_PATH")  # Linux: a handle for walking and fstat; elsewhere a read-only open
_DIR_FLAGS = (O_PATH or os.O_RDONLY) | _flag("O_DIRECTORY") | _flag("O_CLOEXEC") | _flag("O_NOFOLLOW")
_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)


class UnsafePath(OSError):
    """A path this module will not open as asked; `str()` says why, for a person (or the model)."""

    def __init__(self, code: int, message: str, path: str) -> None:
        super().__init__(code, message, path)
        self.message = message

    def __str__(self) -> str:
        return self.message


class Outside(UnsafePath):
    """The path named is outside every allowed root."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EXDEV, f"{path} is outside the allowed directories", path)


class LinkOut(UnsafePath):
    """A symbolic link on the way leads out of the allowed roots (it was not followed)."""

    def __init__(self, path: str, link: str) -> None:
        super().__init__(
            errno.EXDEV,
            f"{path}: the symbolic link {link} leads outside the allowed directories; it was not followed",
            path,
        )
        self.link = link


class Changed(UnsafePath):
    """A symbolic link appeared in a path that was link-free when it was checked (the tree is changing)."""

    def __init__(self, path: str) -> None:
        super().__init__(
            errno.ELOOP,
            f"{path} changed while it was being opened (a symbolic link appeared in "
            "its path); nothing was read or written through it",
            path,
        )


class NotRegular(UnsafePath):
    """Not a regular file (a directory, FIFO, socket or device)."""

    def __init__(self, path: str, mode: int) -> None:
        super().__init__(errno.EINVAL, f"{path} is {describe_mode(mode)}, not a regular file", path)
        self.mode = mode


class TooBig(UnsafePath):
    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(errno.EFBIG, f"{path} is {size} bytes, over the limit of {limit}", path)
        self.size = size
        self.limit = limit


def describe_mode(mode: int) -> str:
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


# ---- openat2 ---------------------------------------------------------------------------------------------


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class _Kernel:
    """`openat2` through libc's `syscall`, probed once; None where it is missing (ENOSYS, or EPERM from a
    seccomp filter that does not know it) or forced off."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probed = False
        self._call: Callable[..., int] | None = None

    def available(self) -> bool:
        if os.environ.get(FORCE_ENV, "").strip().lower() == "walk":
            return False
        if not self._probed:
            with self._lock:
                if not self._probed:
                    self._call = self._probe()
                    self._probed = True
        return self._call is not None

    @staticmethod
    def _probe() -> Callable[..., int] | None:
        if os.uname().sysname != "Linux":
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            call = libc.syscall
        except (OSError, AttributeError):
            return None
        call.restype = ctypes.c_long
        call.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_OpenHow), ctypes.c_size_t]
        how = _OpenHow(O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS)
        fd = int(call(_OPENAT2, _AT_FDCWD, b"/", ctypes.byref(how), ctypes.sizeof(how)))
        if fd < 0:
            return None
        os.close(fd)
        return call

    def openat2(self, dirfd: int, path: bytes, flags: int, mode: int, resolve: int) -> int:
        assert self._call is not None
        tmpfile = getattr(os, "O_TMPFILE", 0)  # it includes O_DIRECTORY's bit: compare the whole of it
        creates = flags & os.O_CREAT or (tmpfile and (flags & tmpfile) == tmpfile)
        how = _OpenHow(flags, mode if creates else 0, resolve)  # openat2 refuses a mode it would not use
        for _ in range(RETRIES):
            fd = int(self._call(_OPENAT2, dirfd, path, ctypes.byref(how), ctypes.sizeof(how)))
            if fd >= 0:
                return fd
            code = ctypes.get_errno()
            if code not in (errno.EAGAIN, errno.EINTR):  # EAGAIN: a rename raced a BENEATH lookup; try again
                raise OSError(code, os.strerror(code), os.fsdecode(path))
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), os.fsdecode(path))


_KERNEL = _Kernel()


def openat2_available() -> bool:
    """True when opens use the kernel's `openat2` (else the component walk)."""
    return _KERNEL.available()


# ---- exact opens -------------------------------------------------------------------------------------------


def _parts(real: str) -> list[str]:
    """The components of an absolute, normalized path without `.` or `..` (anything else is a caller's bug)."""
    if not real.startswith("/"):
        raise ValueError(f"not an absolute path: {real!r}")
    parts = [p for p in real.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"not a normalized path: {real!r}")
    return parts


def _relative_parts(relative: str) -> list[str]:
    parts = [p for p in relative.split("/") if p and p != "."]
    if any(p == ".." for p in parts) or relative.startswith("/"):
        raise ValueError(f"not a plain relative path: {relative!r}")
    return parts


def _link_free(dirfd: int, parts: list[str], flags: int, mode: int, shown: str, *, beneath: bool) -> int:
    """Open `parts` under `dirfd` following no symlink: the kernel's `openat2` or the component walk."""
    if not parts:  # the directory itself
        return os.open(".", (flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC | _NOFOLLOW)) | os.O_CLOEXEC, dir_fd=dirfd)
    if _KERNEL.available():
        resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (RESOLVE_BENEATH if beneath else 0)
        try:
            return _KERNEL.openat2(dirfd, os.fsencode("/".join(parts)), flags | os.O_CLOEXEC, mode, resolve)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise Changed(shown) from None
            if error.errno != errno.ENOTDIR:
                raise
            # a file where a directory was named, or a link (O_DIRECTORY | O_NOFOLLOW says ENOTDIR for one):
            # the walk tells them apart (and opens, link-free, what is there if the tree changed again)
    return _walk(dirfd, parts, flags, mode, shown)


def _walk(dirfd: int, parts: list[str], flags: int, mode: int, shown: str) -> int:
    """The fallback: one `openat(…, O_NOFOLLOW)` per component, each relative to the last directory opened."""
    fd = os.dup(dirfd)
    try:
        for name in parts[:-1]:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(fd, name):
                    raise Changed(shown) from None
                raise
            os.close(fd)
            fd = nxt
        try:
            return os.open(parts[-1], flags | _NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
        except OSError as error:
            # O_NOFOLLOW's ELOOP (EMLINK on FreeBSD) means a link was there, even if it is gone again
            if error.errno in (errno.ELOOP, errno.EMLINK) or (error.errno == errno.ENOTDIR and _is_link(fd, parts[-1])):
                raise Changed(shown) from None
            raise
    finally:
        os.close(fd)


def _is_link(dirfd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _checked_fd(fd: int, shown: str) -> int:
    """An `O_PATH | O_NOFOLLOW` open of a symlink succeeds (it names the link itself): refuse it."""
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if stat.S_ISLNK(st.st_mode):
        os.close(fd)
        raise Changed(shown)
    return fd


def open_exact(real: str | Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """Open the absolute path `real`, which must contain no `.`/`..` and is expected to contain no symlink,
    following none: a symlink anywhere in it (one that appeared since it was checked) raises `Changed`.
    `flags` as for `os.open` (`O_CLOEXEC` and `O_NOFOLLOW` are added; `O_PATH` opens a handle only)."""
    text = os.fspath(real)
    parts = _parts(text)
    root = os.open("/", _DIR_FLAGS)
    try:
        return _checked_fd(_link_free(root, parts, flags | _NOFOLLOW, mode, text, beneath=False), text)
    finally:
        os.close(root)


def stat_exact(real: str | Path) -> os.stat_result:
    """`lstat` of `real` reached without following any symlink (`Changed` when one is on the way); the final
    component may be a link, which is reported as one (nothing is followed)."""
    text = os.fspath(real)
    parts = _parts(text)
    if not parts:
        return os.stat("/")
    with Beneath(os.path.dirname(text) or "/") as parent:
        return os.stat(parts[-1], dir_fd=parent.fd, follow_symlinks=False)


class Beneath:
    """An exactly opened directory (`real`: its real path), under which link-free relative paths are opened:
    `openat2(fd, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` or the component walk from `fd`."""

    def __init__(self, real: str | Path) -> None:
        self.real = os.fspath(real)
        self.fd = open_exact(self.real, _DIR_FLAGS)

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def path_of(self, relative: str) -> str:
        parts = _relative_parts(relative)
        return os.path.join(self.real, *parts) if parts else self.real

    def open(self, relative: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """Open `relative` (no `..`, no leading `/`) under this directory, following no symlink."""
        parts = _relative_parts(relative)
        shown = self.path_of(relative)
        return _checked_fd(_link_free(self.fd, parts, flags | _NOFOLLOW, mode, shown, beneath=True), shown)

    def lstat(self, relative: str) -> os.stat_result:
        """What `relative` is (a link is reported as a link), its directories reached following no symlink."""
        parts = _relative_parts(relative)
        if not parts:
            return os.fstat(self.fd)
        if len(parts) == 1:
            return os.stat(parts[0], dir_fd=self.fd, follow_symlinks=False)
        shown = self.path_of(relative)
        fd = _checked_fd(_link_free(self.fd, parts[:-1], _DIR_FLAGS, 0, shown, beneath=True), shown)
        try:
            return os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)


# ---- resolution within roots --------------------------------------------------------------------------------


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


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
    given (`/tmp/proj` when `/tmp` is a link to `/private/tmp`). A walk may pass through these to get in."""
    out: set[str] = set()
    for root in [*(os.path.normpath(os.fspath(r)) for r in roots), *real]:
        while True:
            out.add(root)
            parent = os.path.dirname(root)
            if parent == root:
                break
            root = parent
    return out


def resolve(
    path: str | Path,
    roots: Sequence[str | Path],
    *,
    follow_last: bool = True,
    trail: list[tuple[str, str]] | None = None,
) -> str:
    """The real path `path` names, found in user space: each component is looked at with `O_NOFOLLOW`
    relative to the directory before it, so the walk sees exactly what the kernel would. Only places inside
    `roots` or on the way to one (their ancestors) are ever looked at: a path named elsewhere raises `Outside`
    and a symlink whose target leads elsewhere raises `LinkOut`, both before anything out there is touched.
    A missing tail (or one below a file) is kept as named (`..` in it folds lexically), as `os.path.realpath`
    does: opening the result then fails as it should. `follow_last=False`
    leaves a final symlink as it is (the result is then the link's own path). `trail` receives each (directory,
    name) looked up on the way, links included: what a `NameWatch` watches."""
    named = os.fspath(path)
    if not named.startswith("/"):
        raise ValueError(f"not an absolute path: {named!r}")
    allowed = real_roots(roots)
    approach = _approaches(roots, allowed)
    todo = list(reversed(named.split("/")))
    cur = "/"
    missing = 0  # how many trailing components of `cur` do not exist
    links = 0
    via: str | None = None  # the last link followed (for the error)

    def refuse() -> UnsafePath:
        return LinkOut(named, via) if via is not None else Outside(named)

    fd = os.open("/", _DIR_FLAGS)
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
                    os.close(fd)
                    fd = -1
                    fd = open_exact(cur, _DIR_FLAGS)
                continue
            nxt = os.path.join(cur, name)
            if nxt not in approach and not any(_within(nxt, root) for root in allowed):
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
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                cur, missing = nxt, 1
                continue
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), named)
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError as error:  # EINVAL: no longer a link; ENOENT: gone
                    if error.errno in (errno.EINVAL, errno.ENOENT):
                        raise Changed(named) from None
                    raise
                via = nxt
                todo.extend(reversed(target.split("/")))
                if target.startswith("/"):
                    cur = "/"
                    os.close(fd)
                    fd = -1
                    fd = os.open("/", _DIR_FLAGS)
                continue
            if todo and stat.S_ISDIR(st.st_mode):
                try:
                    nfd = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    if error.errno in (errno.ENOTDIR, errno.ELOOP):
                        raise Changed(named) from None
                    raise
                os.close(fd)
                fd = nfd
            elif any(p not in ("", ".") for p in todo):  # a file with more after it: nothing is below it
                cur, missing = nxt, 1
                continue
            cur = nxt
    finally:
        if fd >= 0:
            os.close(fd)
    if not any(_within(cur, root) for root in allowed):
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


READ_FLAGS = os.O_RDONLY | _flag("O_NONBLOCK") | _flag("O_NOCTTY") | _flag("O_CLOEXEC")
"""A read never waits in `open` (a FIFO without a writer) and never makes a terminal ours."""


def read_all(fd: int, limit: int, shown: str) -> bytes:
    """Up to `limit` bytes of the regular file `fd`; `TooBig` when it holds more (it may have grown)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise TooBig(shown, total, limit)


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
