"""Process supervision: every command the agent runs, and everything it forks, dies when we say so.

A command runs as `bash -c` in its own session (so its process group is its own; on Windows its own process group
and job object), stdin from /dev/null, stdout and stderr merged into one pipe. Knowing the whole tree is the hard
part: a child may `setsid` (leaving the group), double-fork (leaving the parent chain) or ignore SIGTERM. So
membership is the union of four facts, re-read from the process table (bridge/execution/proctable.py) on every
sweep and remembered once seen (pid + start time, so a reused pid is never mistaken for ours):

- descendants by parent chain of the shell;
- members of the shell's process group or session (a pgid/sid cannot be reused while a member lives);
- any process whose environment carries the tree's token (`AGENT_BRIDGE_PROC`), which survives
  `setsid` and reparenting;
- with the Linux subreaper set on the bridge (bridge/execution/linux.py), orphans reparent to us instead of init,
  and we reap the zombies of processes we knew, never asyncio's own children (that would steal their exit codes).

`terminate` never blocks: it starts a background escalation SIGINT -> SIGTERM (300 ms) -> SIGKILL (1 s in
all), each signal sent to the group and to every member (bridge/execution/signals.py: what each step is on each
platform); `force` goes straight to SIGKILL, and also cuts a running escalation short. The SIGKILL phase repeats
sweeps until nothing is left, so a process forked during the kill is caught on the next pass.

A command under bubblewrap (`spawn(..., sandbox=...)`, see bridge/execution/sandbox.py) is `bwrap` around the
shell: bwrap, its pid-namespace init, then the command. The polite signals go to the command's processes only
(bwrap would die of them and take the namespace down before the command could clean up); SIGKILL goes to
all, and killing bwrap kills everything in its namespace.

When the bridge itself dies: on Linux bwrap has `--die-with-parent` and an unsandboxed shell is started through
`setpriv --pdeathsig KILL`; on Windows the job object closes; everywhere, everything is written down in a registry
in the data dir that a watchdog process and the next bridge act on (bridge/execution/registry.py).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import math
import os
import subprocess
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from bridge.execution import host, proctable, signals
from bridge.execution.linux import pdeathsig_prefix, set_child_subreaper
from bridge.execution.managed import CommandWrapper, ExternalProcess, Launch, ManagedProcess, _Protocol
from bridge.execution.proctable import TOKEN_ENV, ProcInfo
from bridge.execution.registry import ProcessRegistry
from bridge.execution.shell import command_environment, shell_argv
from bridge.execution.signals import Job, Step

__all__ = [
    "CommandWrapper",
    "ExternalProcess",
    "Launch",
    "ManagedProcess",
    "ProcessSupervisor",
    "command_environment",
    "shell_argv",
]

log = logging.getLogger(__name__)

STOP_GRACE_ENV = "AGENT_BRIDGE_STOP_GRACE"
DEFAULT_STOP_GRACE = 1.0


def stop_grace() -> float:
    """The seconds a stopped command gets to end on its own before SIGKILL: `AGENT_BRIDGE_STOP_GRACE` (0.1 to
    60; a command that flushes or cleans up on SIGTERM may want more), else 1 s. An invalid value is logged
    and the default used."""
    raw = os.environ.get(STOP_GRACE_ENV)
    if not raw:
        return DEFAULT_STOP_GRACE
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.1 <= value <= 60:
        log.warning(
            "%s=%r is not a number of seconds from 0.1 to 60; using %s", STOP_GRACE_ENV, raw, DEFAULT_STOP_GRACE
        )
        return DEFAULT_STOP_GRACE
    return value


_STOP_GRACE = stop_grace()
SIGINT_GRACE = 0.3 * _STOP_GRACE  # then SIGTERM
SIGTERM_GRACE = 0.7 * _STOP_GRACE  # then SIGKILL, at the grace's end
GRACE = SIGINT_GRACE + SIGTERM_GRACE + 0.5  # the longest a graceful shutdown waits for commands to end
POLL = 0.02
KILL_SWEEP_LIMIT = 10.0  # give up re-killing after this long (logged; should never happen)
MONITOR_INTERVAL = 0.5


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
        # Whatever our commands start is younger than this process: an older one never carries our token.
        self._born = proctable.start_time(self._me) or 0
        self._uid = host.uid()
        self._managed: list[ManagedProcess] = []
        self._env_tokens: dict[tuple[int, int], str | None] = {}
        self._terminations: dict[int, _Termination] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._monitor: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closed = False
        _ALL.add(self)

    def warm_up(self) -> None:
        """What the first command's start would do once (start the registry's watchdog: a process spawn), done
        ahead: a front end calls this on a worker thread while the bridge loads or a session starts."""
        if self.registry is not None:
            self.registry.start_watchdog()

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
        when given (its `prepare` may refuse: bridge.execution.sandbox.SandboxError)."""
        if self._closed:
            raise RuntimeError("the process supervisor has shut down")
        token = uuid.uuid4().hex
        full_env = {**env, TOKEN_ENV: token}
        if sandbox is not None:
            launch = await sandbox.prepare(list(argv), cwd=Path(cwd), env=full_env, registry=self.registry)
        else:
            launch = Launch(list(argv), full_env)
        if not launch.wrapped:  # bwrap has --die-with-parent; a bare shell gets the same from setpriv
            launch.argv = [*pdeathsig_prefix(), *launch.argv]  # (a Linux extra; [] elsewhere)
        launch.argv = [*signals.default_signals_prefix(), *launch.argv]
        managed = ManagedProcess(argv, token)
        managed.wrapped, managed.release, managed.run = launch.wrapped, launch.release, launch.run
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
                    pass_fds=launch.pass_fds,
                    **signals.own_group(),
                )
        except BaseException:
            self._release(managed)
            raise
        finally:
            for fd in launch.pass_fds:  # the child has its own
                with contextlib.suppress(OSError):
                    os.close(fd)
        managed._attach(transport)
        managed.job = Job.holding(managed.pid)  # Windows: the tree dies with the job (and with the bridge)
        managed.on_closed = self._closed_one
        if managed.run is not None:
            loop = asyncio.get_running_loop()

            def stop() -> None:
                loop.call_soon_threadsafe(self._stop_for_limit, managed)

            def kill() -> None:
                self._kill_now(managed)
                self.terminate(managed, force=True)  # and sweeps until nothing of it is left

            managed.run.started(stop, kill)
        self._managed.append(managed)
        if self.registry is not None:
            self.registry.track(token, token=token, pid=managed.pid)
        self._ensure_monitor()
        return managed

    def track_external(self, name: str) -> ExternalProcess:
        """For a process a library starts (an MCP server): put `handle.env` into its environment (its
        descendants inherit it) and/or `handle.attach(pid)`; `handle.close()` once it is stopped. Until
        then, if the bridge dies, it and its descendants are killed (watchdog / next start)."""
        return ExternalProcess(self.registry, name)

    def _stop_for_limit(self, proc: ManagedProcess) -> None:
        if not proc.terminating and (not proc.closed or self._sweep().get(proc)):
            self.terminate(proc)

    @staticmethod
    def _release(proc: ManagedProcess) -> None:
        job, proc.job = proc.job, None
        if job is not None:
            job.close()
        release, proc.release = proc.release, None
        for each in (release, proc.run.release if proc.run is not None else None):  # each may be called twice
            if each is None:
                continue
            try:
                each()
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
                    or (info.pgid > 0 and info.pgid == proc.pgid)
                    or (info.sid > 0 and info.sid == proc.pgid)
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
        process: reading every process's environment on every sweep is most of a sweep's cost. Processes older
        than this one are not read at all (on a busy machine, they made the first sweep tens of milliseconds)."""
        if info.start < self._born:
            return None
        key = (info.pid, info.start)
        if key in self._env_tokens:
            return self._env_tokens[key]
        if not proctable.owned(info.pid, self._uid):
            self._env_tokens[key] = None
            return None
        readable, token = proctable.read_token(info.pid)
        if readable:  # an unreadable one (mid-exec, exiting) is asked again next time
            self._env_tokens[key] = token
        return token

    def _sweep(self) -> dict[ManagedProcess, set[int]]:
        """Scan the process table once: reap our orphans' zombies, return each tree's live members."""
        table = proctable.scan()
        if len(self._env_tokens) > 2 * len(table) + 64:  # forget processes that are gone
            self._env_tokens = {k: v for k, v in self._env_tokens.items() if k[0] in table}
        trees = self._trees(table)
        shells = {proc.pid for proc in self._managed}
        ours = set().union(*trees.values()) if trees else set()
        for info in table.values() if self.subreaper else ():  # without it, orphans are init's to reap
            # Only zombies we knew as members and that are not asyncio's children: never steal an exit code.
            if info.ppid == self._me and not info.alive and info.pid in ours and info.pid not in shells:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(info.pid, os.WNOHANG)
        live = {proc: {pid for pid in members if table[pid].alive} for proc, members in trees.items()}
        for proc, members in live.items():
            if proc.run is not None and members and not proc.terminating and proc.run.check(len(members)):
                self.terminate(proc)  # it met a resource limit: the whole command ends
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

    def _signal(self, proc: ManagedProcess, step: Step, members: set[int]) -> None:
        if proc.wrapped and step != "kill":
            # bwrap and its namespace's init share the group: spare them, or the command never hears it
            spared = {proc.pid} | {pid for pid in members if (info := proctable.info(pid)) and info.ppid == proc.pid}
            members = members - spared
        else:
            signals.send_group(proc.pgid, step)
        if step == "kill" and proc.job is not None:
            proc.job.terminate()
        for pid in members:
            signals.send(pid, step)

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
        self._signal(proc, "kill", live)

    async def _escalate(self, proc: ManagedProcess, termination: _Termination, force: bool) -> None:
        try:
            start = time.monotonic()
            if not force:
                steps: tuple[tuple[Step, float], ...] = (
                    ("interrupt", SIGINT_GRACE),
                    ("terminate", SIGINT_GRACE + SIGTERM_GRACE),
                )
                for step, until in steps:
                    if signals.number(step) is None:
                        continue  # the platform has no such signal (Windows: no SIGTERM)
                    live = self._sweep().get(proc, set())
                    if not live:
                        break
                    self._signal(proc, step, live)
                    if await self._wait_tree(proc, start + until, termination.force, step, live):
                        break
            deadline = time.monotonic() + KILL_SWEEP_LIMIT
            while live := self._sweep().get(proc, set()):
                self._signal(proc, "kill", live)
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

    async def _wait_tree(
        self, proc: ManagedProcess, until: float, force: asyncio.Event, step: Step, signalled: set[int]
    ) -> bool:
        """True when the tree is gone before `until`; returns early (False) when `force` is set. A member that
        appears meanwhile gets `step`'s signal too: a shell that got SIGINT while it started its next command
        (`sleep 1; echo end` under bwrap, a cancel right after the answer) waits for that command and goes on
        unless the command got it as well."""
        while time.monotonic() < until:
            live = self._sweep().get(proc, set())
            if not live:
                return True
            if new := live - signalled:
                self._signal(proc, step, new)
                signalled |= new
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
        """Wait until no supervised process or descendant is alive and every stop under way has finished (its
        sandbox and cgroups released); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            # closed first: the sweep in live_pids() then forgets (and releases the sandbox of) them all; a
            # termination still running keeps its command (released when it ends, a poll later)
            if all(p.closed for p in self._managed) and not self._terminations and not self.live_pids():
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


_ALL: weakref.WeakSet[ProcessSupervisor] = weakref.WeakSet()


@atexit.register
def _kill_leftovers() -> None:
    for supervisor in list(_ALL):
        with contextlib.suppress(Exception):
            supervisor.kill_all_now()
            supervisor._close_registry()
