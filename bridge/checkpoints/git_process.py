"""One git process of the checkpoints, run so that nothing in the workspace can hold it and a cancel stops it.

Git opens files of the workspace as it lists it (`.gitignore` in every folder, a nested repository's `HEAD` and
`commondir`): a named pipe there held the snapshot, and every step and cancel behind it; a link there to a device
(`commondir -> /dev/zero`) made git read gigabytes into memory. While git runs it is looked at every POLL_S
(bridge/execution/pipes.py): a pipe it waits to open in the workspace or the store is opened for it; one
elsewhere (a nested `.git` file may point anywhere) stops git, and so does a device it reads; the error names
either.

`stoppable(event)`: while it is set up, setting `event` stops the git running in that thread (a cancelled
step, a closing session) within POLL_S.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from bridge.execution.pipes import UNNAMED, devices_read, open_for, pipes_waited

# What git makes in the store (objects, index, refs: the workspace's file contents) is its owner's alone, as the
# rest of the data dir (bridge/transcript.py). The checkpoints' git never writes the workspace (files.py does).
PRIVATE_UMASK = 0o077 if os.name != "nt" else -1
POLL_S = 0.05  # how often a running git is looked at (one that ends sooner is never looked at)
MAX_PIPES = 64  # pipes opened for one git run; a workspace with more ends the snapshot

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
    devices: set[str] = set()
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        umask=PRIVATE_UMASK,
    ) as proc:
        # git's input is written by a thread of its own: `communicate(input, timeout)` writes only what fits before
        # its timeout, and its retry (which may not be given the input again) never writes the rest nor closes the
        # pipe: git waited for the rest of 60,000 paths and we for git (a session's end held 10 s, a step 300 s)
        writer = _feed(proc, data) if data is not None else None
        try:
            while True:
                try:
                    out, err = proc.communicate(None, timeout=POLL_S)
                    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
                except subprocess.TimeoutExpired:
                    pass
                if stop is not None and stop.is_set():
                    raise GitHeld("stopped (cancelled)")
                if deadline is not None and time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(list(argv), timeout or 0.0)
                for pipe in pipes_waited(proc.pid):
                    if pipe == UNNAMED:
                        raise GitHeld("held opening a named pipe (FIFO) it reads, which could not be named")
                    if opened >= MAX_PIPES:
                        raise GitHeld(f"held by more than {MAX_PIPES} named pipes (FIFOs) in the workspace")
                    if not open_for(pipe, ours):
                        raise GitHeld(f"held opening the named pipe (FIFO) {pipe}, outside the workspace")
                    opened += 1
                seen, devices = devices, devices_read(proc.pid)
                if reading := seen & devices:
                    raise GitHeld(f"reading the device {_device(reading)} through a link in the workspace")
        except BaseException:
            proc.kill()
            raise
        finally:
            if writer is not None:
                writer.join(1.0)  # git is done or killed: the write ends (EPIPE) at once


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> threading.Thread:
    """Write `data` to git's input and close it, in a thread; the pipe is taken from `proc` (`communicate` would
    close it, or write to it too)."""
    pipe, proc.stdin = proc.stdin, None
    assert pipe is not None

    def write() -> None:
        with contextlib.suppress(OSError, ValueError):  # git ended (or was killed) before reading it all
            try:
                pipe.write(data)
            finally:
                pipe.close()

    thread = threading.Thread(target=write, name="checkpoint-git-input", daemon=True)
    thread.start()
    return thread


def _device(found: set[str]) -> str:
    return sorted(found)[0].split(":", 1)[1]
