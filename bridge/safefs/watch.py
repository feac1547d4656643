"""Watching names for a step the bridge cannot do race-free itself (an editor that reads or writes by name)."""

from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys
from collections.abc import Sequence

from bridge.safefs.opens import _DIR_FLAGS, open_exact

_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_IN_NAMES = 0x100 | 0x200 | 0x40 | 0x80  # IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_IN_SELF = 0x400 | 0x800  # IN_DELETE_SELF | IN_MOVE_SELF
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000


class NameWatch:
    """Whether any of some names changed in their directories since the watch was set: for a step the bridge
    cannot do race-free itself (an editor that reads or writes a file by its name). Linux inotify on each
    directory, opened exactly (watched through its fd, never by name); an event naming a watched name, a watched
    directory moved or deleted, or a lost event says changed. `available()` is False elsewhere."""

    def __init__(self, steps: Sequence[tuple[str, str]]) -> None:
        if not NameWatch.available():
            raise OSError(errno.ENOSYS, "inotify is not available here")
        libc = ctypes.CDLL(None, use_errno=True)
        self._fd = int(libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
        if self._fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self._names: dict[int, set[bytes]] = {}
        try:
            by_dir: dict[str, set[str]] = {}
            for directory, name in steps:
                by_dir.setdefault(directory, set()).add(name)
            add = libc.inotify_add_watch
            add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            for directory, names in by_dir.items():
                dfd = open_exact(directory, _DIR_FLAGS)
                try:
                    wd = int(add(self._fd, f"/proc/self/fd/{dfd}".encode(), _IN_NAMES | _IN_SELF))
                finally:
                    os.close(dfd)
                if wd < 0:
                    code = ctypes.get_errno()
                    raise OSError(code, os.strerror(code), directory)
                self._names.setdefault(wd, set()).update(os.fsencode(n) for n in names)
        except BaseException:
            os.close(self._fd)
            raise

    @staticmethod
    def available() -> bool:
        return sys.platform.startswith("linux") and os.path.isdir("/proc/self/fd")

    def changed(self) -> bool:
        """Any watched name changed (or something was lost) since the watch was set."""
        while True:
            try:
                data = os.read(self._fd, 64 * 1024)
            except BlockingIOError:
                return False
            offset = 0
            while offset + 16 <= len(data):
                wd, mask, _cookie, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16 : offset + 16 + length].rstrip(b"\0")
                offset += 16 + length
                if mask & (_IN_Q_OVERFLOW | _IN_SELF | _IN_IGNORED):
                    return True
                if name in self._names.get(wd, ()):
                    return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> NameWatch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
