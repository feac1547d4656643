"""Stopping processes on every platform: the escalation's steps, sending them to one process or a whole group,
and the way a new command gets a group of its own.

POSIX: SIGINT, then SIGTERM, then SIGKILL, to the command's process group and to each member we know.
Windows has no signals to give: a command gets its own process group (CTRL_BREAK_EVENT is its polite step)
and a job object that kills everything in it when the job is closed — by us at the hard step, or by Windows
when the bridge dies (the job object is the parent-death signal and subreaper of Windows); members are also
killed one by one (TerminateProcess, through psutil).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
from typing import Any, Literal

from bridge.execution import host, programs

log = logging.getLogger(__name__)

Step = Literal["interrupt", "terminate", "kill"]
CREATE_NEW_PROCESS_GROUP = 0x00000200


def number(step: Step) -> int | None:
    """The signal for `step` here; None where the platform has none (the step is skipped)."""
    if host.windows():
        return getattr(signal, "CTRL_BREAK_EVENT", None) if step == "interrupt" else None
    return {"interrupt": signal.SIGINT, "terminate": signal.SIGTERM, "kill": getattr(signal, "SIGKILL", None)}[step]


def send(pid: int, step: Step) -> None:
    """`step` to one process; gone or not ours is not an error."""
    if step == "kill":
        kill(pid)
        return
    sig = number(step)
    if sig is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.kill(pid, sig)


def send_group(pgid: int, step: Step) -> None:
    """`step` to a whole process group (POSIX; on Windows only the polite step, to the group's leader)."""
    if pgid <= 0:
        return
    sig = number(step)
    if sig is None:
        return
    killpg = getattr(os, "killpg", None)
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if killpg is not None and not host.windows():
            killpg(pgid, sig)
        elif step == "interrupt":
            os.kill(pgid, sig)


def kill(pid: int) -> None:
    """The hard step: SIGKILL, or TerminateProcess where there are no signals."""
    sig = number("kill")
    if sig is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.kill(pid, sig)
        return
    import psutil

    with contextlib.suppress(psutil.Error):
        psutil.Process(pid).kill()


def kill_tree(pid: int) -> None:
    """The hard step for a process that leads its own group (a hook) and everything it started: the group on POSIX,
    each descendant found by parent on Windows."""
    if number("kill") is not None:
        send_group(pid, "kill")
        return
    import psutil

    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children(recursive=True):
            kill(child.pid)
    kill(pid)


def own_group() -> dict[str, Any]:
    """`subprocess`/asyncio keyword arguments that give a new command its own group (and POSIX session). Chosen by
    the process API this Python was built with (`os.name`), which is what `subprocess` accepts."""
    if os.name == "nt":
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


# -- Windows job objects -------------------------------------------------------------------------------------

_JOB_EXTENDED_LIMITS = 9
_KILL_ON_JOB_CLOSE = 0x2000
_PROCESS_SET_QUOTA_AND_TERMINATE = 0x0100 | 0x0001


def _last_error() -> int:
    return int(getattr(ctypes, "get_last_error", lambda: 0)())


class _Basic(ctypes.Structure):
    _fields_ = [
        ("user_time", ctypes.c_int64),
        ("job_time", ctypes.c_int64),
        ("flags", ctypes.c_uint32),
        ("min_ws", ctypes.c_size_t),
        ("max_ws", ctypes.c_size_t),
        ("processes", ctypes.c_uint32),
        ("affinity", ctypes.c_size_t),
        ("priority", ctypes.c_uint32),
        ("scheduling", ctypes.c_uint32),
    ]


class _Extended(ctypes.Structure):
    _fields_ = [
        ("basic", _Basic),
        ("io", ctypes.c_uint64 * 6),
        ("process_memory", ctypes.c_size_t),
        ("job_memory", ctypes.c_size_t),
        ("peak_process", ctypes.c_size_t),
        ("peak_job", ctypes.c_size_t),
    ]


_warned: list[bool] = []  # said once per process


class Job:
    """A Windows job object holding one command's tree: closing it (or the bridge dying) kills them all.
    Processes the command starts are in it from birth; only what runs before `attach` could slip out, and the
    supervisor's sweep (parent chain, token) still finds that."""

    def __init__(self) -> None:
        kernel32 = getattr(ctypes, "WinDLL")("kernel32", use_last_error=True)  # noqa: B009 (only on Windows)
        handle = kernel32.CreateJobObjectW(None, None)
        if not handle:
            raise OSError(_last_error(), "CreateJobObjectW")
        limits = _Extended()
        limits.basic.flags = _KILL_ON_JOB_CLOSE
        if not kernel32.SetInformationJobObject(
            handle, _JOB_EXTENDED_LIMITS, ctypes.byref(limits), ctypes.sizeof(limits)
        ):
            kernel32.CloseHandle(handle)
            raise OSError(_last_error(), "SetInformationJobObject")
        self._kernel32, self._handle = kernel32, handle

    @classmethod
    def holding(cls, pid: int) -> Job | None:
        """A new job holding `pid`; None where there are no job objects (not Windows) or it fails (logged)."""
        if not host.windows():
            return None
        try:
            job = cls()
            process = job._kernel32.OpenProcess(_PROCESS_SET_QUOTA_AND_TERMINATE, False, pid)
            if not process:
                raise OSError(_last_error(), "OpenProcess")
            try:
                if not job._kernel32.AssignProcessToJobObject(job._handle, process):
                    raise OSError(_last_error(), "AssignProcessToJobObject")
            finally:
                job._kernel32.CloseHandle(process)
            return job
        except (OSError, AttributeError) as error:
            if not _warned:
                _warned.append(True)
                log.warning(
                    "cannot put commands in job objects (%s, pid %d): their trees are stopped member by member",
                    error,
                    pid,
                )
            return None

    def terminate(self) -> None:
        if self._handle:
            self._kernel32.TerminateJobObject(self._handle, 1)

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle:
            self._kernel32.CloseHandle(handle)


_DEFAULT_SIGNALS: list[str] | None = None


def default_signals_prefix() -> list[str]:
    """`env --default-signal=INT,QUIT --` when this process has SIGINT or SIGQUIT ignored, else []. A process
    started as a script's background job (`agent-bridge serve &`, a test run started with `&`) has them
    ignored, its commands would inherit that, and a shell cannot trap a signal ignored when it started: a
    command's Ctrl-C clean-up (SIGINT comes first) would never run, and it would wait for SIGTERM. GNU env
    (coreutils 8.31+) resets them before the command starts; without it (or on Windows), [] (nothing else
    changes)."""
    global _DEFAULT_SIGNALS
    if host.windows():
        return []
    ignored = [name for name in ("INT", "QUIT") if signal.getsignal(getattr(signal, f"SIG{name}")) == signal.SIG_IGN]
    if not ignored:
        return []
    if _DEFAULT_SIGNALS is None:
        found = programs.helper("env")
        works = (
            found is not None
            and subprocess.run(
                [found, "--default-signal=INT,QUIT", "true"],
                capture_output=True,
                check=False,
                env=programs.helper_env(),
            ).returncode
            == 0
        )
        _DEFAULT_SIGNALS = [found, "--default-signal=INT,QUIT", "--"] if works and found else []
    return _DEFAULT_SIGNALS
