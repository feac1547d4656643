"""Writes that land in the exactly opened parent: `mkdir -p` and replace-by-rename, neither through a link."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from bridge.safefs import portable
from bridge.safefs.errors import Changed
from bridge.safefs.opens import _DIR_FLAGS, _NOFOLLOW, Beneath, _checked_fd, _is_link, _parts, backend


def make_dirs_exact(real_dir: str | Path, mode: int = 0o777) -> None:
    """`mkdir -p` of the link-free path `real_dir`: each missing directory is created in its exactly opened
    parent (`mkdirat`), and a symlink on the way raises `Changed` (nothing is created through it). The portable
    back end looks at each directory by name instead (portable.py says what that leaves open)."""
    if backend() == "portable":
        portable.make_dirs(os.fspath(real_dir), mode)
        return
    parts = _parts(os.fspath(real_dir))
    fd = os.open("/", _DIR_FLAGS)
    try:
        for i, name in enumerate(parts):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # made meanwhile: open what is there, checked below
                    os.mkdir(name, mode, dir_fd=fd)
                try:
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as error:
                    if _is_link(fd, name):
                        raise Changed("/" + "/".join(parts[: i + 1])) from None
                    raise error from None
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP) and _is_link(fd, name):
                    raise Changed("/" + "/".join(parts[: i + 1])) from None
                raise
            os.close(fd)
            fd = _checked_fd(nxt, "/" + "/".join(parts[: i + 1]))
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Written:
    """What `write_exact` left: the file's stat (as written) and whether it replaced an existing file."""

    stat: os.stat_result
    replaced: bool


def write_exact(
    real: str | Path, data: bytes, *, mode: int | None = None, create_only: bool = False, new_mode: int = 0o644
) -> Written:
    """Make `data` the content of the link-free path `real`, all or nothing: a temp file is created in the
    exactly opened parent directory (`O_CREAT | O_EXCL | O_NOFOLLOW`), written, fsynced and renamed over the
    name in that same directory (`renameat(dirfd, tmp, dirfd, name)`), then the directory is fsynced. The rename
    replaces whatever the name is at that moment — a symlink flipped in is replaced, never followed. `mode`
    None keeps the replaced file's mode (and owner, where allowed), `new_mode` for a new file.
    `create_only`: refuse (`FileExistsError`) when the name exists (checked again just before the rename). A
    directory at `real` is refused
    (`IsADirectoryError`); a symlink there, which the caller's check did not see, raises `Changed`.
    The portable back end (no `dir_fd`) proves the temp file's place before and after writing it and the
    name's after the rename (`WrittenElsewhere` when that fails): portable.py says what that leaves open."""
    text = os.fspath(real)
    if backend() == "portable":
        st, replaced = portable.replace_file(text, data, mode=mode, create_only=create_only, new_mode=new_mode)
        return Written(st, replaced)
    parts = _parts(text)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), text)
    name = parts[-1]
    with Beneath("/" + "/".join(parts[:-1])) as parent:
        try:
            existing: os.stat_result | None = os.stat(name, dir_fd=parent.fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None:
            if create_only:
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), text)
            if stat.S_ISLNK(existing.st_mode):
                raise Changed(text)
            if stat.S_ISDIR(existing.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), text)
        keep = stat.S_IMODE(existing.st_mode) if existing is not None and stat.S_ISREG(existing.st_mode) else None
        final_mode = mode if mode is not None else keep if keep is not None else new_mode
        tmp, fd = _temp_in(parent.fd, name)
        try:
            with os.fdopen(fd, "wb", closefd=True) as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), final_mode)
                if (
                    existing is not None
                    and stat.S_ISREG(existing.st_mode)
                    and (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid())
                ):
                    with contextlib.suppress(OSError):  # only root may give a file away; keep what we can
                        os.fchown(fh.fileno(), existing.st_uid, existing.st_gid)
                os.fsync(fh.fileno())
                written = os.fstat(fh.fileno())
            if create_only and _exists(parent.fd, name):  # made meanwhile: not ours to replace
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), text)
            os.rename(tmp, name, src_dir_fd=parent.fd, dst_dir_fd=parent.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent.fd)
            raise
        with contextlib.suppress(OSError):  # not every filesystem lets a directory be synced
            _fsync_dir(parent)
    return Written(written, existing is not None)


def _exists(dirfd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _fsync_dir(parent: Beneath) -> None:
    """An `O_PATH` fd cannot be fsynced: reopen the same directory (by fd, not by name) to sync it."""
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent.fd)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp_in(dirfd: int, name: str) -> tuple[str, int]:
    """A new temp file beside `name` in `dirfd` (`O_EXCL | O_NOFOLLOW`: never an existing file or a link)."""
    stem = name[:200]
    for _ in range(100):
        tmp = f".{stem}.{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dirfd)
        except FileExistsError:
            continue
        return tmp, fd
    raise FileExistsError(errno.EEXIST, "no free temp file name", name)
