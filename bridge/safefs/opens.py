"""Exact opens (the `dir_fd` back ends, and the choice of back end) and bounded reads: the package docstring
(bridge/safefs/__init__.py) says what each guarantees."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Self

from bridge.safefs import portable
from bridge.safefs.errors import Changed, TooBig

FORCE_ENV = "AGENT_BRIDGE_SAFEFS"
"""`walk` forces the component-by-component fallback even where `openat2` works; `portable` forces the
check-after-open back end (portable.py) that platforms without `dir_fd` take."""
PORTABLE_ENV = "AGENT_BRIDGE_PORTABLE"
"""The bridge-wide switch to the paths macOS and Windows take (bridge/execution/host.py): it takes the portable
back end too, unless `AGENT_BRIDGE_SAFEFS` names one."""

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
        if not self._probed:
            with self._lock:
                if not self._probed:
                    self._call = self._probe()
                    self._probed = True
        return self._call is not None

    @staticmethod
    def _probe() -> Callable[..., int] | None:
        if not sys.platform.startswith("linux"):
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
_HAS_DIR_FD = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def backend() -> str:
    """Which back end opens files, asked at each use (tests switch it): `openat2` (Linux), `walk` (the
    `O_NOFOLLOW` walk from directory fds: other POSIX systems, or forced), or `portable` (check after open:
    where `os.open` takes no `dir_fd`, i.e. Windows, or forced by `AGENT_BRIDGE_SAFEFS=portable` or
    `AGENT_BRIDGE_PORTABLE=1`)."""
    forced = os.environ.get(FORCE_ENV, "").strip().lower()
    if not _HAS_DIR_FD or forced == "portable":
        return "portable"
    if forced == "walk":
        return "walk"
    if not forced and os.environ.get(PORTABLE_ENV, "").strip().lower() in ("1", "on", "true", "yes"):
        return "portable"
    return "openat2" if _KERNEL.available() else "walk"


def openat2_available() -> bool:
    """True when opens use the kernel's `openat2` (else the component walk, or the portable back end)."""
    return backend() == "openat2"


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
    if os.sep != "/":  # Windows: either separator, and no drive
        return portable.split_relative(relative)
    parts = [p for p in relative.split("/") if p and p != "."]
    if any(p == ".." for p in parts) or relative.startswith("/"):
        raise ValueError(f"not a plain relative path: {relative!r}")
    return parts


def _link_free(dirfd: int, parts: list[str], flags: int, mode: int, shown: str, *, beneath: bool) -> int:
    """Open `parts` under `dirfd` following no symlink: the kernel's `openat2` or the component walk."""
    if not parts:  # the directory itself
        return os.open(".", (flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC | _NOFOLLOW)) | os.O_CLOEXEC, dir_fd=dirfd)
    if openat2_available():
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
    if backend() == "portable":
        return portable.open_path(text, flags, mode)
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
    if backend() == "portable":
        return portable.stat_path(text)
    parts = _parts(text)
    if not parts:
        return os.stat("/")
    with Beneath(os.path.dirname(text) or "/") as parent:
        return os.stat(parts[-1], dir_fd=parent.fd, follow_symlinks=False)


class ClosedOnExit:
    """`with x:` closes `x` at the end (an opened directory of this package: `close()`)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


class Beneath(ClosedOnExit):
    """An exactly opened directory (`real`: its real path), under which link-free relative paths are opened:
    `openat2(fd, relative, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` or the component walk from `fd`; in the
    portable back end a `portable.Pinned` directory (its identity and its way's, checked at each open; `fd` is
    -1 where the OS cannot open a directory)."""

    def __init__(self, real: str | Path) -> None:
        self.real = os.fspath(real)
        self._pinned = portable.Pinned(self.real) if backend() == "portable" else None
        self.fd = self._pinned.fd if self._pinned is not None else open_exact(self.real, _DIR_FLAGS)

    def close(self) -> None:
        if self._pinned is not None:
            self._pinned.close()
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def path_of(self, relative: str) -> str:
        parts = _relative_parts(relative)
        return os.path.join(self.real, *parts) if parts else self.real

    def open(self, relative: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """Open `relative` (no `..`, no leading `/`) under this directory, following no symlink."""
        parts = _relative_parts(relative)
        shown = self.path_of(relative)
        if self._pinned is not None:
            return self._pinned.open(parts, flags, mode, shown)
        return _checked_fd(_link_free(self.fd, parts, flags | _NOFOLLOW, mode, shown, beneath=True), shown)

    def lstat(self, relative: str) -> os.stat_result:
        """What `relative` is (a link is reported as a link), its directories reached following no symlink."""
        parts = _relative_parts(relative)
        if self._pinned is not None:
            return self._pinned.lstat(parts, self.path_of(relative))
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
