"""Process supervision: every command the agent runs, and everything it forks, dies when we say so.

A command runs as `bash -c` in its own session (so its process group is its own), stdin from /dev/null,
stdout and stderr merged into one pipe. Knowing the whole tree is the hard part: a child may `setsid`
(leaving the group), double-fork (leaving the parent chain) or ignore SIGTERM. So membership is the union
of four facts, re-read from /proc on every sweep and remembered once seen (pid + start time, so a reused
pid is never mistaken for ours):

- descendants by parent chain of the shell;
- members of the shell's process group or session (a pgid/sid cannot be reused while a member lives);
- any process whose environment carries the tree's token (`AGENT_BRIDGE_PROC`), which survives
  `setsid` and reparenting;
- with `PR_SET_CHILD_SUBREAPER` set on the bridge, orphans reparent to us instead of init, and we reap
  the zombies of processes we knew, never asyncio's own children (that would steal their exit codes).

`terminate` never blocks: it starts a background escalation SIGINT -> SIGTERM (300 ms) -> SIGKILL (1 s in
all), each signal sent to the group and to every member; `force` goes straight to SIGKILL, and also cuts
a running escalation short. The SIGKILL phase repeats sweeps until nothing is left, so a process forked
during the kill is caught on the next pass.

A sandboxed command (`spawn(..., sandbox=...)`, see bridge/tools/sandbox.py) is `bwrap` around the shell:
bwrap, its pid-namespace init, then the command. The polite signals go to the command's processes only
(bwrap would die of them and take the namespace down before the command could clean up); SIGKILL goes to
all, and killing bwrap kills everything in its namespace.

When the bridge itself dies: bwrap has `--die-with-parent`; an unsandboxed shell is started through
`setpriv --pdeathsig KILL`; and everything is written down in a registry in the data dir that a watchdog
process and the next bridge act on (bridge/tools/process_registry.py).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from bridge.tools.process_registry import TOKEN_ENV, ProcessRegistry, read_token

log = logging.getLogger(__name__)

SIGINT_GRACE = 0.3  # then SIGTERM
SIGTERM_GRACE = 0.7  # then SIGKILL, 1 s after the start
GRACE = SIGINT_GRACE + SIGTERM_GRACE + 0.5  # the longest a graceful shutdown waits for commands to end
POLL = 0.02
KILL_SWEEP_LIMIT = 10.0  # give up re-killing after this long (logged; should never happen)
MONITOR_INTERVAL = 0.5
_PR_SET_CHILD_SUBREAPER = 36


def set_child_subreaper() -> bool:
    """Make orphans of our descendants reparent to this process (Linux). False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: int  # start time in clock ticks since boot: with pid, a process's identity

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


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


def scan_processes() -> dict[int, ProcInfo]:
    """Every process visible in /proc (empty where there is no /proc)."""
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


@dataclass
class Launch:
    """What to start for a command: its argv and environment as a wrapper (the sandbox) made them."""

    argv: list[str]
    env: dict[str, str]
    wrapped: bool = False  # argv[0] is bwrap: its own processes get no polite signals
    release: Callable[[], None] | None = None  # called once the command's whole tree is gone


class CommandWrapper(Protocol):
    """The sandbox as the supervisor sees it (bridge.tools.sandbox.Sandbox)."""

    async def prepare(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch: ...


_PDEATHSIG: list[str] | None = None


def pdeathsig_prefix() -> list[str]:
    """`setpriv --pdeathsig KILL --`: what it starts dies with the bridge (util-linux; [] where missing).
    The signal follows the thread that forked: start the process from the event loop's thread."""
    global _PDEATHSIG
    if _PDEATHSIG is None:
        found = shutil.which("setpriv") if sys.platform.startswith("linux") else None
        _PDEATHSIG = [found, "--pdeathsig", "KILL", "--"] if found else []
    return _PDEATHSIG



class ManagedProcess:
    """One supervised command. Its output (stdout and stderr merged, bytes in arrival order) is pushed
    to `on_output`: set it right after `spawn` returns (nothing is delivered before the next await).
    `wait()` returns when the shell exits, `wait_closed()` when its pipe also reached EOF (everything
    that held it is gone) and the transport is closed."""

    def __init__(self, argv: Sequence[str], token: str) -> None:
        self.argv = list(argv)
        self.token = token
        self.pid = -1
        self.pgid = -1
        self.on_output: Callable[[bytes], None] | None = None
        self.started = time.monotonic()
        self.known: dict[int, int] = {}  # pid -> start ticks of every member ever seen
        self.terminating = False
        self.wrapped = False
        self.release: Callable[[], None] | None = None
        self._transport: asyncio.SubprocessTransport | None = None
        self._start_ticks: int | None = None
        self._exited = asyncio.Event()
        self._eof = asyncio.Event()
        self._closed = asyncio.Event()
        self.on_closed: Callable[[ManagedProcess], None] | None = None

    def _attach(self, transport: asyncio.SubprocessTransport) -> None:
        self._transport = transport
        self.pid = self.pgid = transport.get_pid()  # start_new_session: it leads its group and session
        info = _read_stat(self.pid)
        self._start_ticks = info.start if info is not None else None

    @property
    def returncode(self) -> int | None:
        """The shell's exit status (negative: killed by that signal); None while it runs."""
        return self._transport.get_returncode() if self._transport is not None else None

    async def wait(self) -> int:
        await self._exited.wait()
        code = self.returncode
        assert code is not None
        return code

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def is_shell(self, info: ProcInfo) -> bool:
        return info.pid == self.pid and (self._start_ticks is None or info.start == self._start_ticks)

    # protocol callbacks
    def _data(self, data: bytes) -> None:
        sink = self.on_output
        if sink is not None:
            try:
                sink(data)
            except Exception:
                log.exception("output sink of pid %d failed", self.pid)

    def _finish_if_done(self) -> None:
        if self._exited.is_set() and self._eof.is_set() and not self._closed.is_set():
            if self._transport is not None:
                self._transport.close()
            self._closed.set()
            if self.on_closed is not None:
                self.on_closed(self)


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, owner: ManagedProcess) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._owner._data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._owner._eof.set()
        self._owner._finish_if_done()

    def process_exited(self) -> None:
        self._owner._exited.set()
        self._owner._finish_if_done()


@dataclass
class _Termination:
    force: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class ProcessSupervisor:
    """Session/process-wide owner of every command the agent runs (`ctx.services.processes`).

    `data_dir`: where the registry of what runs is kept (so that nothing outlives a killed bridge);
    None keeps no registry (tests, tools run on their own)."""

    def __init__(self, *, data_dir: Path | None = None) -> None:
        self.subreaper = set_child_subreaper()
        self.registry = ProcessRegistry(data_dir) if data_dir is not None else None
        self._me = os.getpid()
        self._uid = os.getuid() if hasattr(os, "getuid") else -1
        self._managed: list[ManagedProcess] = []
        self._env_tokens: dict[tuple[int, int], str | None] = {}
        self._terminations: dict[int, _Termination] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._monitor: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closed = False
        _ALL.add(self)

    # -- spawning --------------------------------------------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        sandbox: CommandWrapper | None = None,
    ) -> ManagedProcess:
        """Start `argv` in its own session, stdin /dev/null, stderr merged into stdout; under `sandbox`
        when given (its `prepare` may refuse with a ToolError)."""
        if self._closed:
            raise RuntimeError("the process supervisor has shut down")
        token = uuid.uuid4().hex
        full_env = {**env, TOKEN_ENV: token}
        if sandbox is not None:
            launch = await sandbox.prepare(list(argv), cwd=Path(cwd), env=full_env, registry=self.registry)
        else:
            launch = Launch(list(argv), full_env)
        if not launch.wrapped:  # bwrap has --die-with-parent; a bare shell gets the same from setpriv
            launch.argv = [*pdeathsig_prefix(), *launch.argv]
        managed = ManagedProcess(argv, token)
        managed.wrapped, managed.release = launch.wrapped, launch.release
        try:
            # Forked from the loop's thread: a parent-death signal follows the thread that forked. Shielded: a
            # cancel in the middle would SIGKILL bwrap alone while it starts, and its inner half (the pid
            # namespace's init) can miss its die-with-parent and live on untracked with the command; once the
            # process is tracked, the caller's cancel stops its whole tree.
            with anyio.CancelScope(shield=True):
                transport, _ = await asyncio.get_running_loop().subprocess_exec(
                    lambda: _Protocol(managed),
                    *launch.argv,
                    cwd=str(cwd),
                    env=launch.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except BaseException:
            self._release(managed)
            raise
        managed._attach(transport)
        managed.on_closed = self._closed_one
        self._managed.append(managed)
        if self.registry is not None:
            self.registry.track(token, token=token, pid=managed.pid)
        self._ensure_monitor()
        return managed

    def track_external(self, name: str) -> ExternalProcess:
        """For a process a library starts (an MCP server): put `handle.env` into its environment (its
        descendants inherit it) and/or `handle.attach(pid)`; `handle.close()` once it is stopped. Until
        then, if the bridge dies, it and its descendants are killed (watchdog / next start)."""
        return ExternalProcess(self, name)

    @staticmethod
    def _release(proc: ManagedProcess) -> None:
        release, proc.release = proc.release, None
        if release is not None:
            try:
                release()
            except Exception:
                log.exception("releasing the sandbox of %s failed", proc.argv)

    def _closed_one(self, proc: ManagedProcess) -> None:
        self._sweep()  # reap orphans, forget the finished

    # -- membership ------------------------------------------------------------------------------------

    def _trees(self, table: dict[int, ProcInfo]) -> dict[ManagedProcess, set[int]]:
        """Every managed process's members (alive or zombie), from one /proc table."""
        children: dict[int, list[int]] = {}
        for info in table.values():
            children.setdefault(info.ppid, []).append(info.pid)
        by_token = {proc.token: proc for proc in self._managed}
        shells = {proc.pid for proc in self._managed}
        trees: dict[ManagedProcess, set[int]] = {proc: set() for proc in self._managed}
        for proc in self._managed:
            seeds = [
                info.pid
                for info in table.values()
                if info.pid != self._me
                and (
                    proc.is_shell(info)
                    or info.pgid == proc.pgid
                    or info.sid == proc.pgid
                    or proc.known.get(info.pid) == info.start
                )
            ]
            trees[proc].update(seeds)
        claimed: set[int] = set().union(*trees.values())
        # The environment token finds what left the group, the session and the parent chain.
        for info in table.values():
            if info.pid in claimed or info.pid == self._me or info.pid in shells or not info.alive:
                continue
            token = self._token_of(info)
            if token is not None and token in by_token:
                trees[by_token[token]].add(info.pid)
        for proc, members in trees.items():
            frontier = list(members)
            while frontier:
                pid = frontier.pop()
                for child in children.get(pid, ()):
                    if child not in members and child != self._me:
                        members.add(child)
                        frontier.append(child)
            members.discard(self._me)
            # the shell itself is a member only while it is the process we started
            if proc.pid in members and not (proc.pid in table and proc.is_shell(table[proc.pid])):
                members.discard(proc.pid)
            for pid in members:
                proc.known[pid] = table[pid].start
        return trees

    def _token_of(self, info: ProcInfo) -> str | None:
        """The tracking token in a process's environment (None: none, or not ours), read once per
        process: reading every process's environment on every sweep is most of a sweep's cost."""
        key = (info.pid, info.start)
        if key in self._env_tokens:
            return self._env_tokens[key]
        if self._uid >= 0 and not self._owned(info.pid):
            self._env_tokens[key] = None
            return None
        readable, token = read_token(info.pid)
        if readable:  # an unreadable one (mid-exec, exiting) is asked again next time
            self._env_tokens[key] = token
        return token

    def _owned(self, pid: int) -> bool:
        try:
            return os.stat(f"/proc/{pid}").st_uid == self._uid
        except OSError:
            return False

    def _sweep(self) -> dict[ManagedProcess, set[int]]:
        """Scan /proc once: reap our orphans' zombies, return each tree's live members."""
        table = scan_processes()
        if len(self._env_tokens) > 2 * len(table) + 64:  # forget processes that are gone
            self._env_tokens = {k: v for k, v in self._env_tokens.items() if k[0] in table}
        trees = self._trees(table)
        shells = {proc.pid for proc in self._managed}
        ours = set().union(*trees.values()) if trees else set()
        for info in table.values():
            # Only zombies we knew as members and that are not asyncio's children: never steal an exit code.
            if info.ppid == self._me and not info.alive and info.pid in ours and info.pid not in shells:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(info.pid, os.WNOHANG)
        live = {proc: {pid for pid in members if table[pid].alive} for proc, members in trees.items()}
        self._forget_finished(live)
        return live

    def _forget_finished(self, live: dict[ManagedProcess, set[int]]) -> None:
        for proc, members in live.items():
            if proc.closed and not members and proc.pid not in self._terminations:
                with contextlib.suppress(ValueError):
                    self._managed.remove(proc)
                self._release(proc)
                if self.registry is not None:
                    self.registry.untrack(proc.token)
            elif self.registry is not None:
                self.registry.members(proc.token, proc.known)
        if not self._managed:
            self._wake.set()

    def live_pids(self) -> list[int]:
        """Every descendant still alive (zombies excluded), across all supervised commands."""
        return sorted(set().union(*self._sweep().values()) if self._managed else set())

    def tree_pids(self, proc: ManagedProcess) -> list[int]:
        """The live members of one command's tree (the shell included while it runs)."""
        return sorted(self._sweep().get(proc, set()))

    # -- termination -----------------------------------------------------------------------------------

    def _signal(self, proc: ManagedProcess, sig: int, members: set[int]) -> None:
        if proc.wrapped and sig != signal.SIGKILL:
            # bwrap and its namespace's init share the group: spare them, or the command never hears it
            spared = {proc.pid} | {pid for pid in members if (info := _read_stat(pid)) and info.ppid == proc.pid}
            members = members - spared
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(proc.pgid, sig)
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.kill(pid, sig)

    def terminate(self, proc: ManagedProcess, *, force: bool = False) -> None:
        """Stop `proc` and every descendant, in the background (never awaits). Idempotent; a later
        `force=True` skips whatever grace is left."""
        proc.terminating = True
        running = self._terminations.get(proc.pid)
        if running is not None:
            if force:
                running.force.set()
                self._kill_now(proc)
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (e.g. atexit): kill synchronously
            self._kill_now(proc)
            return
        if force:
            self._kill_now(proc)
        termination = _Termination()
        self._terminations[proc.pid] = termination
        termination.task = self._start(self._escalate(proc, termination, force))

    def _kill_now(self, proc: ManagedProcess) -> None:
        live = self._sweep().get(proc, set())
        self._signal(proc, signal.SIGKILL, live)

    async def _escalate(self, proc: ManagedProcess, termination: _Termination, force: bool) -> None:
        try:
            start = time.monotonic()
            if not force:
                for sig, until in ((signal.SIGINT, SIGINT_GRACE), (signal.SIGTERM, SIGINT_GRACE + SIGTERM_GRACE)):
                    live = self._sweep().get(proc, set())
                    if not live:
                        break
                    self._signal(proc, sig, live)
                    if await self._wait_tree(proc, start + until, termination.force):
                        break
            deadline = time.monotonic() + KILL_SWEEP_LIMIT
            while live := self._sweep().get(proc, set()):
                self._signal(proc, signal.SIGKILL, live)
                if time.monotonic() > deadline:
                    log.error("pids %s of %s survive SIGKILL", sorted(live), proc.argv)
                    break
                await asyncio.sleep(POLL)
            # Everything holding the pipe is gone: EOF comes at once; the shell is reaped by asyncio.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait_closed(), 2.0)
        finally:
            self._terminations.pop(proc.pid, None)
            self._sweep()

    async def _wait_tree(self, proc: ManagedProcess, until: float, force: asyncio.Event) -> bool:
        """True when the tree is gone before `until`; returns early (False) when `force` is set."""
        while time.monotonic() < until:
            if not self._sweep().get(proc, set()):
                return True
            if force.is_set():
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(force.wait(), min(POLL, max(0.0, until - time.monotonic())))
        return not self._sweep().get(proc, set())

    async def wait_gone(self, proc: ManagedProcess, timeout: float) -> bool:
        """Wait until `proc`'s whole tree is dead and its output drained; False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.closed and not self._sweep().get(proc, set()):
                return True
            await asyncio.sleep(POLL)
        return proc.closed and not self._sweep().get(proc, set())

    async def wait_all_gone(self, timeout: float) -> bool:
        """Wait until no supervised process or descendant is alive; False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            # closed first: the sweep in live_pids() then forgets (and releases the sandbox of) them all
            if all(p.closed for p in self._managed) and not self.live_pids():
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(POLL)

    async def shutdown(self, *, grace: bool = False) -> None:
        """Kill everything and wait, bounded, until it is gone. For the bridge's exit. `grace`: every command
        still alive gets its escalation (SIGINT, SIGTERM, then SIGKILL: at most `GRACE` in all, one already under
        way goes on) before what is left is killed; else it is killed now."""
        if grace:
            for proc in list(self._managed):
                if not proc.closed or self._sweep().get(proc):
                    self.terminate(proc)
            await self.wait_all_gone(GRACE)
        self._closed = True
        for proc in list(self._managed):
            proc.terminating = True
            self._kill_now(proc)
        for proc in list(self._managed):
            self.terminate(proc, force=True)
        if not await self.wait_all_gone(3.0):
            log.error("processes survive shutdown: %s", self.live_pids())
        tasks = [t for t in self._tasks if not t.done()]
        if self._monitor is not None:
            self._monitor.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, *([self._monitor] if self._monitor else []), return_exceptions=True)
        self._close_registry()
        _ALL.discard(self)

    def _close_registry(self) -> None:
        for proc in list(self._managed):
            self._release(proc)
        if self.registry is not None:
            self.registry.close()

    def kill_all_now(self) -> None:
        """Synchronous last resort (atexit, signal handlers): SIGKILL every tree, no waiting."""
        for proc in list(self._managed):
            self._kill_now(proc)

    # -- housekeeping ----------------------------------------------------------------------------------

    def _start(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _ensure_monitor(self) -> None:
        """While anything runs, sweep now and then: zombies of orphans are reaped promptly."""
        loop = asyncio.get_running_loop()
        if self._monitor is not None and not self._monitor.done() and self._monitor.get_loop() is loop:
            return
        self._wake = asyncio.Event()
        self._monitor = loop.create_task(self._watch())

    async def _watch(self) -> None:
        while self._managed:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), MONITOR_INTERVAL)
            self._sweep()


class ExternalProcess:
    """A process started outside the supervisor (by a library), written down so it dies with the bridge."""

    def __init__(self, supervisor: ProcessSupervisor, name: str) -> None:
        self.name = name
        self.token = uuid.uuid4().hex
        self.env = {TOKEN_ENV: self.token}
        self._registry = supervisor.registry
        self._pid: int | None = None
        if self._registry is not None:
            self._registry.track(f"external:{self.token}", token=self.token)

    def attach(self, pid: int) -> None:
        self._pid = pid
        if self._registry is not None:
            self._registry.track(f"external:{self.token}", token=self.token, pid=pid)

    def close(self) -> None:
        if self._registry is not None:
            self._registry.untrack(f"external:{self.token}")


_ALL: weakref.WeakSet[ProcessSupervisor] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for supervisor in list(_ALL):
        with contextlib.suppress(Exception):
            supervisor.kill_all_now()
            supervisor._close_registry()


# Non-interactive, plain output: no pagers waiting for a key, no credential prompts, no editors, no color
# unless the command asks for it (`--color=always`, or FORCE_COLOR/CLICOLOR_FORCE in the user's env).
COMMAND_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "NO_COLOR": "1",
    "TERM": "dumb",
    "AGENT_BRIDGE": "1",
}


def command_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment commands run with: `base` (default: ours) plus `COMMAND_ENV`."""
    return {**(os.environ if base is None else base), **COMMAND_ENV}


def shell_argv(command: str) -> list[str]:
    return ["/bin/bash", "-c", command] if os.path.exists("/bin/bash") else ["bash", "-c", command]
