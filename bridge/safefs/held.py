"""A directory held for steps on the names directly in it (look, read, create, link, rename, unlink, rmdir): what
a restore does (bridge/checkpoints/files.py), on every back end."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from bridge.safefs import portable
from bridge.safefs.errors import Changed
from bridge.safefs.opens import _DIR_FLAGS, _NOFOLLOW, ClosedOnExit, _checked_fd, _flag, backend, open_exact

_CLOEXEC = _flag("O_CLOEXEC")


class Held(ClosedOnExit):
    """The directory at the link-free real path `real`, opened exactly (a link on the way: `Changed`), and the
    steps on single names in it: by its fd on the `dir_fd` back ends (`*at` calls, `O_NOFOLLOW`), so they happen
    in that directory wherever it is moved; on the portable back end proven and held (`portable.Pinned.hold`:
    its fd on POSIX, on Windows the way's directories kept from being renamed or deleted) until `close()`."""

    def __init__(self, real: str | Path) -> None:
        self.real = os.fspath(real)
        self._pinned: portable.Pinned | None = None
        if backend() == "portable":
            pinned = portable.Pinned(self.real)
            self._hold = pinned.hold(self.real)
            try:
                self._hold.__enter__()
            except BaseException:
                pinned.close()
                raise
            self._pinned = pinned
            self.fd = pinned.fd
        else:
            self.fd = open_exact(self.real, _DIR_FLAGS)

    def close(self) -> None:
        if self._pinned is not None:
            pinned, self._pinned = self._pinned, None
            try:
                self._hold.__exit__(None, None, None)
            finally:
                pinned.close()
        elif self.fd >= 0:
            os.close(self.fd)
        self.fd = -1

    def path_of(self, name: str) -> str:
        if not name or name in (".", "..") or os.sep in name or (os.altsep and os.altsep in name):
            raise ValueError(f"not a name in a directory: {name!r}")
        return os.path.join(self.real, name)

    def lstat(self, name: str) -> os.stat_result:
        self.path_of(name)
        if self._pinned is not None:
            return self._pinned.lstat_name(name)
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def readlink(self, name: str) -> str:
        self.path_of(name)
        if self._pinned is not None:
            return self._pinned.readlink(name)
        return os.readlink(name, dir_fd=self.fd)

    def open(self, name: str, flags: int = os.O_RDONLY) -> int:
        """An existing file `name` here, following no link (a link there: `Changed`)."""
        shown = self.path_of(name)
        if self._pinned is not None:
            return self._pinned.open([name], flags & ~(os.O_CREAT | os.O_EXCL), 0, shown)
        try:
            fd = os.open(name, (flags & ~(os.O_CREAT | os.O_EXCL)) | _NOFOLLOW | _CLOEXEC, dir_fd=self.fd)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EMLINK):
                raise Changed(shown) from None
            raise
        return _checked_fd(fd, shown)

    def create(self, name: str, flags: int, mode: int) -> int:
        """A new file `name` here (`O_CREAT | O_EXCL`: never an existing file, never through a link)."""
        self.path_of(name)
        if self._pinned is not None:
            return self._pinned.create(name, flags, mode)
        return os.open(name, flags | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=self.fd)

    def chmod(self, fd: int, name: str, mode: int) -> None:
        """The mode of the file `fd`, just created here as `name` (Windows has no `fchmod`: by its name, held)."""
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        else:
            os.chmod(self.path_of(name), mode)

    def symlink(self, target: str, name: str) -> None:
        self.path_of(name)
        if self._pinned is not None:
            self._pinned.symlink(target, name)
        else:
            os.symlink(target, name, dir_fd=self.fd)

    def unlink(self, name: str) -> None:
        self.path_of(name)
        (self._pinned.unlink if self._pinned is not None else self._at(os.unlink))(name)

    def rmdir(self, name: str) -> None:
        self.path_of(name)
        (self._pinned.rmdir if self._pinned is not None else self._at(os.rmdir))(name)

    def _at(self, call: Callable[..., None]) -> Callable[[str], None]:
        """`call` on a name in this directory by its fd (the `dir_fd` back ends)."""
        return lambda name: call(name, dir_fd=self.fd)

    def rename(self, src: str, dst: str) -> None:
        """`src` over `dst`, both names here (a file or a link at `dst` is replaced, never followed)."""
        self.path_of(src)
        self.path_of(dst)
        if self._pinned is not None:
            self._pinned.rename(src, dst)
        else:
            os.rename(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def listdir(self, limit: int | None = None) -> list[str]:
        """The names here, at most `limit` (an `O_PATH` fd cannot be listed: the same directory is reopened
        through it; the portable back end lists the held directory by its name: Windows lists no fd)."""
        if self._pinned is not None:
            return _names(self.real, limit)
        fd = os.open(".", os.O_RDONLY | _flag("O_DIRECTORY") | _CLOEXEC, dir_fd=self.fd)
        try:
            return _names(fd, limit)
        finally:
            os.close(fd)


def _names(where: str | int, limit: int | None) -> list[str]:
    out: list[str] = []
    with os.scandir(where) as entries:
        for entry in entries:
            if limit is not None and len(out) >= limit:
                break
            out.append(entry.name)
    return out
