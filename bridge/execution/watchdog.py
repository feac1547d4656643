"""The watchdog: a small process of its own session that outlives a killed bridge by a few milliseconds and
acts on its registry file (bridge/execution/registry.py). Started with the registry's first entry as
`python -I -S -c …` (registry.watchdog_argv): stdlib only, plus psutil where processes are read through it.

It waits on the pipe from the bridge (its stdin): "released" is a clean exit (go at once); the pipe closing is
the bridge exiting or dying. On Linux a pidfd also says the moment the bridge is gone; elsewhere (and with the
Linux extras off) the pipe is read with a plain blocking read, which every platform has, and the bridge's
death is then polled for, at most `EXIT_GRACE`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from pathlib import Path

from bridge.execution import host
from bridge.execution.proctable import Clock, is_running
from bridge.execution.registry import EXIT_GRACE, RELEASED, act_on


def watch(path: Path, bridge_pid: int, bridge_start: int, clock: Clock) -> int:
    """Wait for the bridge to exit; then act on its registry file, if it left one."""
    for name in ("SIGINT", "SIGHUP"):  # a terminal's ctrl-c or hang-up reaches the bridge, not us
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if not is_running(bridge_pid, bridge_start, clock):
        return _after_exit(path, bridge_pid, bridge_start, clock)  # gone before we started
    if host.linux_extras() and clock == "ticks":
        return _watch_pidfd(path, bridge_pid, bridge_start, clock)
    stdin = sys.stdin.fileno()
    while True:
        try:
            data = os.read(stdin, 4096)
        except OSError:
            data = b""
        if RELEASED in data:
            return 0  # a clean exit: everything is stopped and cleaned up, the file removed
        if not data:
            break  # the pipe closed: the bridge is exiting (or dying)
    _wait_dead(bridge_pid, bridge_start, clock)
    return _after_exit(path, bridge_pid, bridge_start, clock)


def _watch_pidfd(path: Path, bridge_pid: int, bridge_start: int, clock: Clock) -> int:
    pidfd: int | None = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(bridge_pid)
    if pidfd is not None and not is_running(bridge_pid, bridge_start, clock):
        os.close(pidfd)  # the pid already belongs to someone else: the bridge is gone
        return _after_exit(path, bridge_pid, bridge_start, clock)
    stdin = sys.stdin.fileno()
    watched = [stdin] + ([pidfd] if pidfd is not None else [])
    while True:
        ready, _, _ = select.select(watched, [], [])
        if pidfd is not None and pidfd in ready:
            break
        data = os.read(stdin, 4096) if stdin in ready else None
        if data is not None and RELEASED in data:
            return 0
        if data == b"":
            if pidfd is not None:
                select.select([pidfd], [], [], EXIT_GRACE)
            else:
                _wait_dead(bridge_pid, bridge_start, clock)
            break
    return _after_exit(path, bridge_pid, bridge_start, clock)


def _wait_dead(pid: int, start: int, clock: Clock) -> None:
    deadline = time.monotonic() + EXIT_GRACE
    while is_running(pid, start, clock) and time.monotonic() < deadline:
        time.sleep(0.005)


def _after_exit(path: Path, bridge_pid: int, bridge_start: int, clock: Clock) -> int:
    if is_running(bridge_pid, bridge_start, clock):
        return 0  # alive: a clean exit let us go (its file, if any, is the next bridge's to judge)
    act_on(path, settle=EXIT_GRACE)  # (a cgroup whose last process init reaps after the bridge: it empties soon)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 5 and argv[0] == "--watch" and argv[4] in ("ticks", "ms"):
        clock: Clock = "ticks" if argv[4] == "ticks" else "ms"
        return watch(Path(argv[1]), int(argv[2]), int(argv[3]), clock)
    print("usage: watchdog --watch REGISTRY_FILE BRIDGE_PID BRIDGE_START ticks|ms", file=sys.stderr)
    return 2
