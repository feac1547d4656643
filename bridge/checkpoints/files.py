"""Reading and writing workspace files for a rewind or an undo, exactly (bridge/safefs): each step happens in the
parent directory opened exactly (`safefs.Held`: no link followed on the way; the portable back end proves and
holds it), so a directory a command swapped for a symlink can't send a restored file, or a deletion, outside the
workspace. Writes go to a temporary file in that parent, then are renamed over the name (a reader never sees half
a file). Every back end safefs has runs this (the portable one: Windows).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from bridge import safefs


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
def _parent(root: str, relative: str, *, create: bool) -> Iterator[tuple[safefs.Held, str]]:
    """The exactly opened directory that holds `relative`, and the last name; `create`: make missing directories
    (each in its exactly opened parent)."""
    parts = _parts(relative)
    real = os.path.join(os.path.realpath(root), *parts[:-1])
    try:
        if create:
            safefs.make_dirs_exact(real)
        held = safefs.Held(real)
    except safefs.Changed:
        raise EscapeRefused(errno.ELOOP, f"{relative}: a directory on the way is a link") from None
    except NotADirectoryError:
        raise EscapeRefused(errno.ENOTDIR, f"{relative}: something on the way is not a directory") from None
    try:
        yield held, parts[-1]
    finally:
        held.close()


def read(root: str, relative: str, limit: int) -> Entry | None:
    """The file now (None: absent, or something git does not store: a directory, a FIFO...); `safefs.TooBig` when
    it holds more than `limit` bytes (a command may make it 4 GB: read whole, /changes held that much memory,
    attack round 23b)."""
    try:
        with _parent(root, relative, create=False) as (held, name):
            st = held.lstat(name)
            if stat.S_ISLNK(st.st_mode):
                return Entry(os.fsencode(held.readlink(name)), "120000")
            if not stat.S_ISREG(st.st_mode):
                return None
            fd = held.open(name, safefs.READ_FLAGS)
            try:
                data = safefs.read_all(fd, limit, os.path.join(root, relative))
            finally:
                os.close(fd)
            return Entry(data, "100755" if st.st_mode & 0o100 else "100644")
    except (FileNotFoundError, NotADirectoryError, EscapeRefused, safefs.Changed):
        return None


def occupied(root: str, relative: str) -> bool:
    """Whether something other than a directory is at `relative` (a file, a link, a FIFO...), looked at exactly."""
    try:
        with _parent(root, relative, create=False) as (held, name):
            return not stat.S_ISDIR(held.lstat(name).st_mode)
    except (FileNotFoundError, NotADirectoryError, EscapeRefused, safefs.Changed):
        return False  # (nothing there, or nothing a restore would write through to)
    except OSError:
        return True  # can't tell: as if something were


def write(root: str, relative: str, entry: Entry) -> None:
    """Make `relative` exactly `entry` (replacing whatever is there: a file, a link, an empty directory)."""
    with _parent(root, relative, create=True) as (held, name):
        temp = f".{name}.{uuid.uuid4().hex[:8]}.restore"
        if entry.mode == "120000":
            held.symlink(os.fsdecode(entry.data), temp)
        else:
            executable = entry.mode == "100755"
            # a file that is there keeps its own permissions, git's executable bit applied (a `.env` at 0600 came
            # back 0644, readable by every local user: attack round 26); one made again gets what the umask gives
            # (the kernel applies it to the create), as `git checkout` does
            kept = _permissions(held, name)
            out = held.create(temp, os.O_WRONLY, 0o777 if executable else 0o666)
            try:
                with os.fdopen(out, "wb") as handle:
                    handle.write(entry.data)
                    if kept is not None:
                        mode = (kept | (kept & 0o444) >> 2) if executable else kept & ~0o111
                        held.chmod(handle.fileno(), temp, mode)
            except BaseException:
                with contextlib.suppress(OSError):
                    held.unlink(temp)
                raise
        try:
            held.rename(temp, name)
        except IsADirectoryError:
            _remove_empty_tree(held, name)
            held.rename(temp, name)
        except OSError:
            with contextlib.suppress(OSError):
                held.unlink(temp)
            raise


def _permissions(held: safefs.Held, name: str) -> int | None:
    """The permission bits of the regular file `name` (no set-id bits), or None: nothing there, or not a file."""
    try:
        found = held.lstat(name)
    except OSError:
        return None
    return stat.S_IMODE(found.st_mode) & 0o777 if stat.S_ISREG(found.st_mode) else None


def remove(root: str, relative: str) -> None:
    """`relative` gone (a file or a link; nothing to do when it is absent), then the directories that only held it."""
    parts = _parts(relative)
    try:
        with _parent(root, relative, create=False) as (held, name):
            if stat.S_ISDIR(held.lstat(name).st_mode):
                return
            held.unlink(name)
    except (FileNotFoundError, NotADirectoryError, EscapeRefused):
        return
    for depth in range(len(parts) - 1, 0, -1):  # the emptied directories, deepest first
        try:
            with _parent(root, "/".join(parts[:depth]), create=False) as (held, name):
                held.rmdir(name)
        except OSError:
            return


def _remove_empty_tree(held: safefs.Held, name: str) -> None:
    """An empty directory (or one holding only empty directories) where a file goes back."""
    inner = safefs.Held(held.path_of(name))
    try:
        for child in inner.listdir():
            _remove_empty_tree(inner, child)
    finally:
        inner.close()
    held.rmdir(name)
