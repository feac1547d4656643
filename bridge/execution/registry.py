"""What the bridge has running, written down, so that nothing it started outlives it — SIGKILL included.

On Linux the kernel does most of it: a sandboxed command's `bwrap` dies with the bridge (`--die-with-parent`)
and takes its whole pid namespace along; an unsandboxed shell gets a parent-death signal (both Linux extras,
bridge/execution/linux.py; on Windows a job object does it). What escapes that — an unsandboxed command's
double-forked or setsid'd descendants, MCP servers a library spawned, everything where there are no extras — is
written down here, one JSON file per bridge process in `<data dir>/running/<pid>-<start>.json`:

- `clock`: the unit of its start times (bridge/execution/proctable.py: /proc's clock ticks, or psutil's ms);
- `tokens`: each command's tracking token (`AGENT_BRIDGE_PROC=<token>` in its environment, inherited by
  everything it forks, whatever session or parent it moves to);
- `processes`: `[pid, start]` pairs — the shells, every member a sweep has seen, registered externals;
- `cleanup`: the sandbox's temp dirs and the commands' cgroups, each with the device and inode it was made
  with (and placeholders an older bridge made for protected paths).

Two readers act on a file whose bridge is dead:
- the watchdog (bridge/execution/watchdog.py, started with the first entry), in its own session; it waits for
  the bridge to exit and then kills and cleans up within a few milliseconds;
- the next bridge on the same data dir, at start (`reap_leftovers`), for when the watchdog died too.

A process is killed only when its (pid, start time) pair was written down, or its environment carries a
written-down token (and it is ours by uid), or it descends — by parent pid, in the same process scan — from
one of those. A reused pid has another start time: it is never touched.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bridge.execution import host, proctable, programs, signals
from bridge.execution.proctable import TOKEN_ENV, Clock, is_running, start_time

__all__ = ["TOKEN_ENV", "ProcessRegistry", "act_on", "is_running", "kill_registered", "reap_leftovers", "start_time"]

log = logging.getLogger(__name__)

KILL_DEADLINE = 2.0
KTHREADD = 2  # Linux's kernel-thread parent: its children read empty, and are root's (the bridge's, in a container)
UNREAD_LOOKS = 10  # more scans when a process's environment could not be read (mid-exec, or exiting): 10 ms apart
EXIT_GRACE = 1.0  # after the pipe closes, how long the bridge may take to become a zombie
RELEASED = b"released\n"  # the bridge to its watchdog, on a clean exit: go now


def kill_registered(
    tokens: Iterable[str],
    processes: Iterable[tuple[int, int]],
    *,
    clock: Clock | None = None,
    timeout: float = KILL_DEADLINE,
    born: int | None = None,
) -> list[int]:
    """Kill every process the registry names (see the module docstring for what that means), again and again
    until none is left or `timeout` passes. `clock`: the one the start times were written in; `born`: the bridge's
    start in it (what started earlier cannot carry its tokens, and its environment is not read). Returns the pids
    killed."""
    wanted_tokens = set(tokens)
    exact = set(processes)
    me, uid = os.getpid(), host.uid()
    killed: list[int] = []
    deadline = time.monotonic() + timeout
    second_looks = UNREAD_LOOKS
    while True:
        table = proctable.scan(clock)
        targets = {pid for pid, info in table.items() if (pid, info.start) in exact}
        unread = False
        if wanted_tokens:
            for pid, info in table.items():
                # what started before the bridge (`born`, in `clock`) cannot carry its tokens: not read
                if pid not in targets and info.alive and info.start >= (born or 0) and proctable.owned(pid, uid):
                    readable, token = proctable.read_token(pid)
                    if token in wanted_tokens:
                        targets.add(pid)
                    # kthreadd (pid 2) and its kernel threads have no environment to read at all
                    unread = unread or (not readable and KTHREADD not in (pid, info.ppid))
        children: dict[int, list[int]] = {}
        for pid, info in table.items():
            children.setdefault(info.ppid, []).append(pid)
        frontier = list(targets)
        while frontier:
            for child in children.get(frontier.pop(), ()):
                if child not in targets:
                    targets.add(child)
                    frontier.append(child)
        targets = {pid for pid in targets if pid != me and table[pid].alive}
        if not targets:
            # A process caught in the middle of an exec shows no environment: look again before saying none is left.
            if not unread or second_looks <= 0 or time.monotonic() > deadline:
                return killed
            second_looks -= 1
            time.sleep(0.01)
            continue
        for pid in targets:
            exact.add((pid, table[pid].start))  # its children stay findable after it is gone
            signals.kill(pid)
            killed.append(pid)
        if time.monotonic() > deadline:
            log.error("processes survive SIGKILL: %s", sorted(targets))
            return killed
        time.sleep(0.01)


# -- cleanup of sandbox placeholders and temp dirs -----------------------------------------------------


def remove_placeholder(path: Path, dev: int, ino: int, kind: str) -> bool:
    """Remove the empty file or directory made at `path` (same device and inode), unless something uses
    it: every sandbox that binds a protected path holds a shared `flock` on it while it runs. A placeholder
    someone wrote into is no longer empty and stays."""
    import fcntl  # placeholders were made by bubblewrap sandboxes only: Linux

    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_DIRECTORY if kind == "dir" else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (dev, ino):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another sandbox holds it
        current = os.lstat(path)
        if (current.st_dev, current.st_ino) != (dev, ino):
            return False
        if kind == "dir":
            os.rmdir(path)  # fails when not empty
        elif current.st_size == 0:
            os.unlink(path)
        else:
            return False
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def cleanup(entries: Iterable[dict[str, Any]]) -> None:
    for entry in entries:
        path, dev, ino, kind = Path(entry["path"]), int(entry["dev"]), int(entry["ino"]), str(entry["kind"])
        if kind == "cgroup":  # a command's cgroup: empty once its processes are gone
            with contextlib.suppress(OSError):
                path.rmdir()
            continue
        if kind == "tree":
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (dev, ino):
                shutil.rmtree(path, ignore_errors=True)
        else:
            remove_placeholder(path, dev, ino, kind)


# -- the registry file ---------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        log.warning("process registry %s is unreadable (%s); removing it", path, error)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return data if isinstance(data, dict) else None


def clock_of(data: dict[str, Any] | None) -> Clock:
    """The clock a registry file's start times are in (files without one are in ours: older bridges')."""
    found = data.get("clock") if data is not None else None
    return found if found in ("ticks", "ms") else proctable.clock()


def act_on(path: Path, *, settle: float = 0.0) -> list[int]:
    """Kill what a dead bridge's registry file names, clean up after its sandbox, remove the file. `settle`: how
    long a cgroup still busy may take to empty (the watchdog's: a command's last process, killed as the bridge
    exited, may still be dying)."""
    data = _load(path)
    if data is None:
        return []
    try:
        tokens = [str(t) for t in data.get("tokens", [])]
        processes = [(int(p), int(s)) for p, s in data.get("processes", [])]
        entries = list(data.get("cleanup", []))
        born = int(data["bridge"][1]) if isinstance(data.get("bridge"), list) and len(data["bridge"]) == 2 else None
    except (TypeError, ValueError):
        log.warning("process registry %s is malformed; removing it", path)
        tokens, processes, entries, born = [], [], [], None
    killed = kill_registered(tokens, processes, clock=clock_of(data), born=born)
    cleanup(entries)
    deadline = time.monotonic() + settle
    while (busy := _busy_cgroups(entries)) and time.monotonic() < deadline:
        time.sleep(0.01)
        cleanup(busy)
    with contextlib.suppress(OSError):
        path.unlink()
    return killed


def _busy_cgroups(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if e.get("kind") == "cgroup" and os.path.isdir(str(e.get("path")))]


def reap_leftovers(data_dir: Path) -> list[int]:
    """At a bridge's start: act on every registry file in `data_dir` whose bridge is dead."""
    directory = data_dir / "running"
    try:
        files = sorted(directory.glob("*.json"))
    except OSError:
        return []
    killed: list[int] = []
    for file in files:
        owner = file.stem.split("-")
        try:
            pid, start = int(owner[0]), int(owner[1])
        except (IndexError, ValueError):
            continue
        with contextlib.suppress(OSError, ValueError):  # unreadable: act_on says so and removes it
            if is_running(pid, start, clock_of(json.loads(file.read_text(encoding="utf-8")))):
                continue  # a live bridge on the same data dir (or this one)
        found = act_on(file)
        if found:
            log.warning("killed %d processes a previous bridge (pid %d) left running: %s", len(found), pid, found)
        killed += found
    return killed


class ProcessRegistry:
    """This bridge's registry file, rewritten (atomically) whenever what it names changes."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / "running"
        me = os.getpid()
        self._clock = proctable.clock()
        self._me = (me, start_time(me, self._clock) or 0)
        self.path = self.directory / f"{self._me[0]}-{self._me[1]}.json"
        self._tracked: dict[str, tuple[str | None, set[tuple[int, int]]]] = {}
        self._cleanup: dict[str, dict[str, Any]] = {}
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._closed = False
        self._write_failed = False
        self._lock = threading.RLock()  # the sandbox records placeholders from a worker thread

    # what is running

    def track(self, key: str, *, token: str | None = None, pid: int | None = None) -> None:
        processes: set[tuple[int, int]] = set()
        if pid is not None and (start := start_time(pid, self._clock)) is not None:
            processes.add((pid, start))
        with self._lock:
            self._tracked[key] = (token, processes)
            self._write()

    def members(self, key: str, known: dict[int, int]) -> None:
        """Add the (pid, start) pairs a sweep saw in `key`'s tree; writes only when something is new."""
        with self._lock:
            entry = self._tracked.get(key)
            if entry is None:
                return
            new = set(known.items()) - entry[1]
            if new:
                entry[1].update(new)
                self._write()

    def untrack(self, key: str) -> None:
        with self._lock:
            if self._tracked.pop(key, None) is not None:
                self._write()

    # what to clean up

    def add_cleanup(self, path: Path, kind: str) -> None:
        """`kind`: "tree" (a temp dir, removed with its content), "cgroup" (removed when empty); "file" or "dir"
        (an empty placeholder: older bridges made them)."""
        try:
            st = os.lstat(path)
        except OSError:
            return
        entry = {"path": str(path), "dev": st.st_dev, "ino": st.st_ino, "kind": kind}
        with self._lock:
            if self._cleanup.get(str(path)) == entry:
                return  # noted already (a pooled cgroup taken again): no rewrite
            self._cleanup[str(path)] = entry
            self._write()

    def drop_cleanup(self, path: Path) -> None:
        with self._lock:
            if self._cleanup.pop(str(path), None) is not None:
                self._write()

    def cleanup_entries(self) -> list[dict[str, Any]]:
        return list(self._cleanup.values())

    # the file and the watchdog

    def _write(self) -> None:
        if self._closed:
            return
        tokens = sorted({t for t, _ in self._tracked.values() if t is not None})
        processes = sorted({p for _, ps in self._tracked.values() for p in ps})
        if not tokens and not processes and not self._cleanup:
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        data = {
            "bridge": list(self._me),
            "clock": self._clock,
            "tokens": tokens,
            "processes": [list(p) for p in processes],
        }
        if self._write_data(data, list(self._cleanup.values())):
            self._ensure_watchdog()

    def _write_data(self, data: dict[str, Any], cleanup: list[dict[str, Any]]) -> bool:
        data = {**data, "cleanup": cleanup}
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data dir's: its owner's alone
            temporary = self.path.with_name(f".{self.path.name}.{uuid.uuid4().hex[:8]}")
            with open(temporary, "w", encoding="utf-8", opener=lambda p, f: os.open(p, f, 0o600)) as out:
                out.write(json.dumps(data))
            os.replace(temporary, self.path)
        except OSError as error:
            if not self._write_failed:
                self._write_failed = True
                log.warning(
                    "cannot write the process registry %s: %s (a killed bridge may leave processes behind)",
                    self.path,
                    error,
                )
            return False
        return True

    def start_watchdog(self) -> None:
        """Start the watchdog now instead of with the first entry, whose command would wait for its spawn (see
        `ProcessSupervisor.warm_up`). With no file yet, a bridge that dies leaves it nothing to do."""
        with self._lock:
            if not self._closed:
                self._ensure_watchdog()

    def _ensure_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.poll() is None:
            return
        try:
            self._watchdog = subprocess.Popen(
                watchdog_argv(self.path, self._me, self._clock),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                close_fds=True,
                env=programs.helper_env(),  # it lives as long as the bridge: never with the bridge's key in it
                **signals.own_group(),
            )
        except OSError as error:
            log.warning("cannot start the process watchdog: %s", error)
            self._watchdog = None

    @property
    def watchdog_pid(self) -> int | None:
        return self._watchdog.pid if self._watchdog is not None else None

    def close(self) -> None:
        """A clean exit: the caller has stopped everything. Clean up what is left (temp dirs, placeholders),
        remove the file, then let the watchdog go. A command's cgroup still busy (its last process, killed without
        waiting, still dying) stays in the file, and the watchdog stays on: it removes the
        cgroup once the bridge is gone (one was left behind per CI run before)."""
        with self._lock:
            self._closed = True
            entries = list(self._cleanup.values())
            cleanup(entries)
            self._cleanup.clear()
            left = _busy_cgroups(entries)
            if left:
                self._write_data({"bridge": list(self._me), "clock": self._clock, "tokens": [], "processes": []}, left)
            else:
                with contextlib.suppress(OSError):
                    self.path.unlink()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and left:
            with contextlib.suppress(OSError):
                if watchdog.stdin is not None:
                    watchdog.stdin.close()  # (no RELEASED: it acts on the file once we are gone)
            return
        if watchdog is not None:
            with contextlib.suppress(OSError):
                if watchdog.stdin is not None:
                    watchdog.stdin.write(RELEASED)  # else it waits EXIT_GRACE for us to die, and we for it
                    watchdog.stdin.close()
            try:
                watchdog.wait(timeout=2)
            except subprocess.TimeoutExpired:
                watchdog.kill()
                watchdog.wait()


# -- the watchdog's command line -----------------------------------------------------------------------------

_BOOT = (
    "import os, sys; sys.path[:0] = sys.argv[1].split(os.pathsep); del sys.argv[1]; "
    "from bridge.execution.watchdog import main; sys.exit(main(sys.argv[1:]))"
)


def watchdog_argv(path: Path, bridge: tuple[int, int], clock: Clock) -> list[str]:
    """`python -I -S -c BOOT` (no site-packages, no environment: it starts in milliseconds) with the bridge's
    package on its path, and psutil's where it reads processes through psutil."""
    root = str(Path(__file__).resolve().parents[2])
    paths = [root] + ([found] if clock == "ms" and (found := proctable.psutil_path()) else [])
    return [
        sys.executable,
        "-I",
        "-S",
        "-c",
        _BOOT,
        os.pathsep.join(paths),
        "--watch",
        str(path),
        str(bridge[0]),
        str(bridge[1]),
        clock,
    ]
