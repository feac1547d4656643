"""One git process of the checkpoints, run so that nothing in the workspace can hold it and a cancel stops it.

Git opens files of the workspace as it lists it: `.gitignore` in every folder, and a nested repository's `HEAD`
and `commondir` to tell it is one. A named pipe (FIFO) there, from an unpacked archive or a command, makes
that open wait for a writer that never comes: the snapshot, and every step and cancel behind it, would wait with
it. So while git runs, we look (Linux: `/proc/<pid>/wchan`) whether it waits to open a pipe; if it does, we read
which one (`/proc/<pid>/syscall` and `mem`: git is our own child) and, when that pipe is in the workspace or the
store, open it for writing and close it at once. Git reads an empty file, as for any pipe nothing writes to,
and goes on (a nested repository's `commondir` reads `.`, its own directory: git stops at an empty one, and a
repository is left out of a snapshot either way); the pipe itself is left as it was (a snapshot leaves pipes
out). A pipe elsewhere (a nested
`.git` file may point anywhere) is not ours to open: git is stopped and the error names it. Where the pipe can't
be named, git is stopped too. Without `/proc` (macOS) the store's timeouts bound the wait.

`stoppable(event)`: while it is set up, setting `event` stops the git running in that thread (a cancelled
step, a closing session) within POLL_S.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import platform
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

POLL_S = 0.05  # how often a running git is looked at (one that ends sooner is never looked at)
MAX_PIPES = 64  # pipes opened for one git run; a workspace with more ends the snapshot
_FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open"})  # the kernel's name for a FIFO open's wait
# syscall number -> which argument is the path (the dirfd is argument 0 for the `at` calls)
_OPEN_CALLS: dict[str, dict[int, int]] = {
    "x86_64": {2: 0, 257: 1, 437: 1},  # open, openat, openat2
    "aarch64": {56: 1, 437: 1},
}
_AT_FDCWD = -100

_stop: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("checkpoint_git_stop", default=None)


class GitHeld(Exception):
    """Git was stopped before it ended: asked to (`stoppable`), or held by a pipe that is not ours to open."""


@contextlib.contextmanager
def stoppable(stop: threading.Event) -> Iterator[None]:
    """Within it (in this thread), `stop.set()` stops the checkpoints' git at once (GitHeld)."""
    token = _stop.set(stop)
    try:
        yield
    finally:
        _stop.reset(token)


def run_git(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    cwd: Path,
    data: bytes | None,
    timeout: float | None,
    ours: Sequence[Path],
) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run(argv, input=data, capture_output=True, timeout=timeout)`, watched as the module says:
    a pipe under one of `ours` that git waits to open is opened for it. Raises subprocess.TimeoutExpired, or
    GitHeld; git is killed and reaped either way."""
    stop = _stop.get()
    deadline = None if timeout is None else time.monotonic() + timeout
    opened = 0
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    ) as proc:
        feed = data
        try:
            while True:
                try:
                    out, err = proc.communicate(feed, timeout=POLL_S)
                    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
                except subprocess.TimeoutExpired:
                    feed = None  # what was given is being written; a retry goes on with it
                if stop is not None and stop.is_set():
                    raise GitHeld("stopped (cancelled)")
                if deadline is not None and time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
                waiting, pipe = pipe_waited(proc.pid)
                if not waiting:
                    continue
                if pipe is None:
                    raise GitHeld("held opening a named pipe (FIFO) it reads, which could not be named")
                if opened >= MAX_PIPES:
                    raise GitHeld(f"held by more than {MAX_PIPES} named pipes (FIFOs) in the workspace")
                if not _open_for(pipe, ours):
                    raise GitHeld(f"held opening the named pipe (FIFO) {pipe}, outside the workspace")
                opened += 1
        except BaseException:
            proc.kill()
            raise


def pipe_waited(pid: int) -> tuple[bool, str | None]:
    """Whether process `pid` waits to open a FIFO, and which (its path, as the process named it, made absolute;
    None when it can't be read)."""
    try:
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False, None
    if wchan not in _FIFO_WAITS:
        return False, None
    return True, _opening(pid)


def _opening(pid: int) -> str | None:
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
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


def _open_for(pipe: str, ours: Sequence[Path]) -> bool:
    """Open the FIFO `pipe` for writing and close it (its reader sees an empty file, or `.` for a `commondir`),
    if it lies under `ours`."""
    real = os.path.realpath(pipe)
    if not any(real == str(root) or real.startswith(str(root).rstrip(os.sep) + os.sep) for root in ours):
        return False
    try:
        fd = os.open(real, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:  # ENXIO: no reader any more (git went on); a name swapped for something else
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
