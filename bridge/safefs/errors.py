"""The errors of bridge/safefs: `OSError`s whose `str()` a person (or the model) can act on. Apart from the
back ends so that both (the `dir_fd` one in opens.py, the check-after-open one in portable.py) raise the same."""

from __future__ import annotations

import errno
import stat


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


class Unverifiable(UnsafePath):
    """The portable backend proves what it opened by the file's identity (st_dev, st_ino); a file system that
    gives files none (st_ino 0: some network shares) leaves nothing to compare, so nothing is opened."""

    def __init__(self, path: str) -> None:
        super().__init__(
            errno.EOPNOTSUPP,
            f"{path} is on a file system that gives files no identity (no file index), so the bridge cannot "
            "check that what it opens is what was allowed; it refuses",
            path,
        )


class WrittenElsewhere(UnsafePath):
    """A write's rename happened, but the name did not hold the file written afterwards: a directory on the
    way was swapped (the new content may be somewhere else), or something replaced the file at once."""

    def __init__(self, path: str) -> None:
        super().__init__(
            errno.ELOOP,
            f"{path} changed while it was being written (a directory on its way was swapped, or the file was "
            "replaced at once): the new content may have landed somewhere else; look before retrying",
            path,
        )
