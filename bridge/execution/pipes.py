"""A process of ours held opening a named pipe (FIFO), and letting it go on.

Programs the bridge runs over the workspace open files there that a folder decides: git and ripgrep open
`.gitignore` (and `.ignore`, `.rgignore`, `.git/info/exclude`) in every folder they walk, git a nested
repository's `HEAD` and `commondir`. A named pipe there (from an unpacked archive, or a command) makes that open
wait for a writer that never comes. While such a program runs, its caller asks `pipes_waited` (Linux:
`/proc/<pid>/task/*/wchan`) whether one of its threads waits to open a pipe, and which (`syscall` and `mem`:
the process is our own child); `open_for` then opens that pipe for writing and closes it at once, so the
program reads an empty file (as for any pipe nothing writes to) and goes on. The pipe itself is left as it was.
A pipe outside the places the caller names is not ours to open: the caller stops the program and names it.

A link there may also lead to a device: `.gitignore -> /dev/zero` (git stores links, so a plain clone can bring
it) made ripgrep read for ever, gigabytes a second into memory, outside the sandbox; a nested `commondir` the
same for git. `devices_read` names the devices such a program has open (beyond its standard streams): the caller
stops it once it sees the same one twice.
Without `/proc` (macOS, Windows) nothing is seen: the callers' own bounds and cancels apply.
"""

from __future__ import annotations

import contextlib
import os
import platform
import stat
from collections.abc import Sequence
from pathlib import Path

_FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open"})  # the kernel's name for a FIFO open's wait
# syscall number -> which argument is the path (the dirfd is argument 0 for the `at` calls)
_OPEN_CALLS: dict[str, dict[int, int]] = {
    "x86_64": {2: 0, 257: 1, 437: 1},  # open, openat, openat2
    "aarch64": {56: 1, 437: 1},
}
_AT_FDCWD = -100
UNNAMED = ""  # a pipe wait whose pipe could not be read


def pipes_waited(pid: int) -> list[str]:
    """The named pipes process `pid`'s threads wait to open (paths made absolute; UNNAMED where one can't be
    read). Empty when none waits, or where there is no `/proc`."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[str] = []
    for tid in tasks:
        try:
            wchan = Path(f"/proc/{pid}/task/{tid}/wchan").read_text()
        except OSError:
            continue
        if wchan in _FIFO_WAITS:
            found.append(_opening(pid, tid) or UNNAMED)
    return found


def devices_read(pid: int) -> set[str]:
    """The devices (other than /dev/null) process `pid` has open beyond fds 0–2, as `fd:path`."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    found: set[str] = set()
    for fd in fds:
        if fd in ("0", "1", "2"):
            continue
        try:
            mode = os.stat(f"/proc/{pid}/fd/{fd}").st_mode
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target != os.devnull:
                    found.add(f"{fd}:{target}")
        except OSError:
            continue
    return found


def _opening(pid: int, tid: str) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()
        number, args = int(fields[0]), [int(a, 16) for a in fields[1:7]]
    except (OSError, ValueError, IndexError):
        return None
    where = _OPEN_CALLS.get(platform.machine(), {}).get(number)
    if where is None:
        return None
    try:
        with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            mem.seek(args[where])
            raw = mem.read(4096)
    except (OSError, ValueError, OverflowError):
        return None
    name = raw.split(b"\0", 1)[0]
    if not name:
        return None
    if name.startswith(b"/"):
        return os.fsdecode(name)
    dirfd = _AT_FDCWD
    if where == 1:  # the `at` calls: relative to their dirfd, an int shown unsigned
        dirfd = args[0] & 0xFFFFFFFF
        dirfd = dirfd - (1 << 32) if dirfd >= 1 << 31 else dirfd
    try:
        base = os.readlink(f"/proc/{pid}/cwd" if dirfd == _AT_FDCWD else f"/proc/{pid}/fd/{dirfd}")
    except OSError:
        return None
    return os.path.join(base, os.fsdecode(name))


def open_for(pipe: str, ours: Sequence[Path]) -> bool:
    """Open the FIFO `pipe` for writing and close it (its reader sees an empty file, or `.` for a `commondir`:
    git stops at an empty one, and reads `.` as the repository's own directory), if it lies under `ours`
    (resolved). False: not ours, or not a pipe."""
    if not pipe:
        return False
    real = os.path.realpath(pipe)
    if not any(
        real == os.path.realpath(root) or real.startswith(os.path.join(os.path.realpath(root), "")) for root in ours
    ):
        return False
    try:
        fd = os.open(real, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:  # ENXIO: no reader any more (it went on); a name swapped for something else
        return True
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        if os.path.basename(real) == "commondir":
            with contextlib.suppress(OSError):
                os.write(fd, b".\n")
        return True
    finally:
        os.close(fd)
