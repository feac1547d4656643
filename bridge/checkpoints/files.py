"""Reading and writing workspace files for a rewind or an undo, exactly: every path is walked one component at a
time from the opened workspace directory without following a link (`O_NOFOLLOW`), so a directory a command
swapped for a symlink can't send a restored file outside the workspace. Writes go to a temporary file in the
opened parent, then are renamed over the name (a reader never sees half a file).

(bridge/safefs.py, on its way in from the file-tool work, does the same for the tools; this module is the few
operations a restore needs and can move onto it.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass


def _flag(name: str) -> int:
    """An `os.O_*` flag, 0 where the platform has none (Windows: no O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC): this
    module is imported at start-up everywhere."""
    return int(getattr(os, name, 0))


_NOFOLLOW, _CLOEXEC = _flag("O_NOFOLLOW"), _flag("O_CLOEXEC")
_DIR = os.O_RDONLY | _flag("O_DIRECTORY") | _NOFOLLOW | _CLOEXEC


class EscapeRefused(OSError):
    """A path on the way is a link (or not a directory): the restore does not go there."""


@dataclass(frozen=True)
class Entry:
    """A workspace file as git stores it: its bytes (a link's target for a symlink) and git's mode."""

    data: bytes
    mode: str  # "100644", "100755" or "120000"


def _parts(relative: str) -> list[str]:
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise EscapeRefused(errno.EINVAL, f"not a path inside the workspace: {relative!r}")
    return parts


@contextlib.contextmanager
def _parent(root: str, relative: str, *, create: bool) -> Iterator[tuple[int, str]]:
    """The opened directory that holds `relative`, and the last name; `create`: make missing directories."""
    parts = _parts(relative)
    fd = os.open(root, _DIR)
    try:
        for name in parts[:-1]:
            try:
                child = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                os.mkdir(name, 0o777, dir_fd=fd)
                child = os.open(name, _DIR, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise EscapeRefused(error.errno, f"{relative}: {name} on the way is not a directory") from None
                raise
            os.close(fd)
            fd = child
        yield fd, parts[-1]
    finally:
        os.close(fd)


def read(root: str, relative: str) -> Entry | None:
    """The file now (None: absent, or something git does not store: a directory, a FIFO...)."""
    try:
        with _parent(root, relative, create=False) as (fd, name):
            st = os.lstat(name, dir_fd=fd)
            if stat.S_ISLNK(st.st_mode):
                return Entry(os.fsencode(os.readlink(name, dir_fd=fd)), "120000")
            if not stat.S_ISREG(st.st_mode):
                return None
            file = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            with os.fdopen(file, "rb") as handle:
                data = handle.read()
            return Entry(data, "100755" if st.st_mode & 0o100 else "100644")
    except (FileNotFoundError, NotADirectoryError, EscapeRefused):
        return None


def write(root: str, relative: str, entry: Entry) -> None:
    """Make `relative` exactly `entry` (replacing whatever is there: a file, a link, an empty directory)."""
    with _parent(root, relative, create=True) as (fd, name):
        temp = f".{name}.{uuid.uuid4().hex[:8]}.restore"
        if entry.mode == "120000":
            os.symlink(os.fsdecode(entry.data), temp, dir_fd=fd)
        else:
            mode = 0o755 if entry.mode == "100755" else 0o644
            out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode, dir_fd=fd)
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(entry.data)
                    os.fchmod(handle.fileno(), mode)  # exactly, whatever the umask
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=fd)
                raise
        try:
            os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except IsADirectoryError:
            _remove_empty_tree(fd, name)
            os.rename(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise


def remove(root: str, relative: str) -> None:
    """`relative` gone (a file or a link; nothing to do when it is absent), then the directories that only held it."""
    parts = _parts(relative)
    try:
        with _parent(root, relative, create=False) as (fd, name):
            st = os.lstat(name, dir_fd=fd)
            if stat.S_ISDIR(st.st_mode):
                return
            os.unlink(name, dir_fd=fd)
    except (FileNotFoundError, NotADirectoryError, EscapeRefused):
        return
    for depth in range(len(parts) - 1, 0, -1):  # the emptied directories, deepest first
        try:
            with _parent(root, "/".join(parts[:depth]), create=False) as (fd, name):
                os.rmdir(name, dir_fd=fd)
        except OSError:
            return


def _remove_empty_tree(fd: int, name: str) -> None:
    """An empty directory (or one holding only empty directories) where a file goes back."""
    inner = os.open(name, _DIR, dir_fd=fd)
    try:
        for child in os.listdir(inner):
            _remove_empty_tree(inner, child)
    finally:
        os.close(inner)
    os.rmdir(name, dir_fd=fd)
