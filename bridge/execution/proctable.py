"""Which processes exist: pid, parent, group, session, state and start time, and the tracking token in a
process's environment. Two readers with one answer: /proc (a Linux extra: exact clock ticks, ~3x cheaper) and
psutil (macOS, Windows, and Linux with the extras off: bridge/execution/host.py).

A process's identity is its pid and its start time, so a reused pid is never taken for the process that had it.
The start time's unit is the reader's `Clock`: clock ticks since boot from /proc, or milliseconds since the
epoch from psutil; whoever writes one down writes its clock too (bridge/execution/registry.py).

Stdlib and psutil only (psutil imported on first use): the watchdog imports this module without site-packages.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

from bridge.execution import host

TOKEN_ENV = "AGENT_BRIDGE_PROC"  # in every supervised command's environment, inherited by all it forks

Clock = Literal["ticks", "ms"]


def clock() -> Clock:
    return "ticks" if host.linux_extras() else "ms"


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int  # -1 where there are no process groups (Windows)
    sid: int
    state: str  # "Z" zombie, "X" dead, anything else alive
    start: int  # in the reader's clock: with pid, a process's identity

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


def _psutil() -> ModuleType:
    import psutil

    return psutil


# -- /proc ---------------------------------------------------------------------------------------------------


def _read_stat(pid: int) -> ProcInfo | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcInfo(pid, int(rest[1]), int(rest[2]), int(rest[3]), rest[0].decode(), int(rest[19]))
    except (IndexError, ValueError):
        return None


def _scan_proc() -> dict[int, ProcInfo]:
    table: dict[int, ProcInfo] = {}
    try:
        entries = os.scandir("/proc")
    except OSError:
        return table
    with entries:
        for entry in entries:
            if entry.name.isdigit():
                info = _read_stat(int(entry.name))
                if info is not None:
                    table[info.pid] = info
    return table


# -- psutil --------------------------------------------------------------------------------------------------


def _group_of(pid: int) -> tuple[int, int]:
    if host.windows():
        return -1, -1
    try:
        return os.getpgid(pid), os.getsid(pid)
    except OSError:
        return -1, -1


def _from_psutil(pid: int, ppid: int | None, created: float | None, status: str | None) -> ProcInfo | None:
    psutil = _psutil()
    if ppid is None or created is None:
        return None
    state = "Z" if status == psutil.STATUS_ZOMBIE else "X" if status == psutil.STATUS_DEAD else "R"
    pgid, sid = _group_of(pid)
    return ProcInfo(pid, ppid, pgid, sid, state, round(created * 1000))


def _scan_psutil() -> dict[int, ProcInfo]:
    psutil = _psutil()
    table: dict[int, ProcInfo] = {}
    for proc in psutil.process_iter(["ppid", "create_time", "status"]):
        found = proc.info
        info = _from_psutil(proc.pid, found.get("ppid"), found.get("create_time"), found.get("status"))
        if info is not None:
            table[info.pid] = info
    return table


def _info_psutil(pid: int) -> ProcInfo | None:
    psutil = _psutil()
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            return _from_psutil(pid, proc.ppid(), proc.create_time(), proc.status())
    except psutil.Error:
        return None


# -- the answers ---------------------------------------------------------------------------------------------


def scan(which: Clock | None = None) -> dict[int, ProcInfo]:
    """Every process we can see."""
    return _scan_proc() if (which or clock()) == "ticks" else _scan_psutil()


def info(pid: int, which: Clock | None = None) -> ProcInfo | None:
    return _read_stat(pid) if (which or clock()) == "ticks" else _info_psutil(pid)


def start_time(pid: int, which: Clock | None = None) -> int | None:
    found = info(pid, which)
    return found.start if found is not None else None


def is_running(pid: int, start: int, which: Clock | None = None) -> bool:
    """The process `pid` that started at `start` exists and is not a zombie."""
    found = info(pid, which)
    return found is not None and found.start == start and found.alive


def read_token(pid: int) -> tuple[bool, str | None]:
    """(whether the environment could be read, the tracking token in it). Not ours to read counts as read.
    An empty read is not a reading: a process in the middle of an `execve` reads empty (the file holds the old
    memory, which the exec just dropped), and one with a truly empty environment carries no token either way."""
    if clock() == "ticks":
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                raw = fh.read()
        except OSError:
            return False, None
        if not raw:
            return False, None
        key = TOKEN_ENV.encode() + b"="
        for entry in raw.split(b"\0"):
            if entry.startswith(key):
                return True, entry[len(key) :].decode(errors="replace")
        return True, None
    psutil = _psutil()
    try:
        environ = psutil.Process(pid).environ()
        return bool(environ), environ.get(TOKEN_ENV)
    except psutil.AccessDenied:
        return True, None
    except psutil.Error:
        return False, None


def owned(pid: int, uid: int) -> bool:
    """`pid` runs as `uid` (always true where there are no uids)."""
    if uid < 0:
        return True
    if clock() == "ticks":
        try:
            return os.stat(f"/proc/{pid}").st_uid == uid
        except OSError:
            return False
    psutil = _psutil()
    with contextlib.suppress(psutil.Error, AttributeError):
        return int(psutil.Process(pid).uids().real) == uid
    return False


def psutil_path() -> str | None:
    """The directory psutil is imported from (the watchdog, which runs without site-packages, adds it)."""
    try:
        return os.path.dirname(os.path.dirname(_psutil().__file__ or ""))
    except ImportError:
        return None
