"""Background shells (`Bash` with `run_in_background`); the tools that read and stop them (TaskOutput, TaskStop)
are bridge/tools/tasks.py.

A background shell belongs to the session, not to a turn: a cancelled turn leaves it running; the
bridge's shutdown (or TaskStop) stops it and everything it forked. Its unread output is kept bounded
(the newest `UNREAD_CHARS`; older unread text is dropped and counted).
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bridge.execution.managed import CommandWrapper, ManagedProcess
from bridge.execution.output import exit_note
from bridge.execution.shell import shell_argv
from bridge.execution.supervisor import ProcessSupervisor

UNREAD_CHARS = 30_000
KILL_WAIT = 3.0

Status = Literal["running", "completed", "failed", "killed"]


class UnknownShell(LookupError):
    """No background shell has that id (the message names the ones there are)."""


@dataclass
class BackgroundShell:
    id: str
    command: str
    process: ManagedProcess
    started: float = field(default_factory=time.monotonic)
    killed: bool = False
    _unread: deque[str] = field(default_factory=deque)
    _unread_len: int = 0
    dropped: int = 0  # unread characters lost to the bound since the last read
    _heard: set[str] = field(default_factory=set)  # sandbox notes already shown
    _settled: list[str] = field(default_factory=list)  # notes of the check after the shell ended, for its reader
    _decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")(errors="replace"))

    @property
    def status(self) -> Status:
        code = self.process.returncode
        if self.killed:
            return "killed"
        if code is None:
            return "running"
        return "completed" if code == 0 else "failed"

    def feed(self, chunk: bytes) -> None:
        text = self._decoder.decode(chunk)
        if not text:
            return
        self._unread.append(text)
        self._unread_len += len(text)
        while self._unread_len > UNREAD_CHARS and len(self._unread) > 1:
            self._drop(len(self._unread[0]))
        if self._unread_len > UNREAD_CHARS:
            excess = self._unread_len - UNREAD_CHARS
            self._unread[0] = self._unread[0][excess:]
            self._unread_len -= excess
            self.dropped += excess

    def _drop(self, n: int) -> None:
        self._unread.popleft()
        self._unread_len -= n
        self.dropped += n

    def take(self) -> tuple[str, int]:
        """The output since the last take and how many characters of it were dropped."""
        if self.process.closed:
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._unread.append(tail)
        text, dropped = "".join(self._unread), self.dropped
        self._unread.clear()
        self._unread_len = 0
        self.dropped = 0
        return text, dropped

    def sandbox_notes(self, text: str) -> list[str]:
        """What the sandbox has to say that this shell's reader has not heard yet (limits met, files set aside,
        refused writes in `text`)."""
        run = self.process.run
        if run is None:
            return []
        notes = [*self._settled, *run.notes(text, self.process.returncode if self.process.closed else None)]
        self._settled.clear()
        fresh = [note for note in dict.fromkeys(notes) if note not in self._heard]
        self._heard.update(fresh)
        return fresh

    def settle(self) -> None:
        """The shell ended: what the sandbox finds now (a file a deny rule forbids, made after its last reader
        looked: attack round 9) is set aside at once, not when someone reads the output, and kept for that reader."""
        run = self.process.run
        if run is not None:
            self._settled += [note for note in run.notes("", self.process.returncode) if note not in self._heard]

    def describe(self) -> str:
        age = time.monotonic() - self.started
        code = self.process.returncode
        match self.status:
            case "running":
                return f"running ({age:.0f} s)"
            case "killed":
                return "killed"
            case _:
                return "completed" if code == 0 else f"failed ({exit_note(code or 0)})"


class BackgroundShells:
    """The session's background shells (`ctx.services.background`)."""

    def __init__(self, supervisor: ProcessSupervisor) -> None:
        self.supervisor = supervisor
        self._shells: dict[str, BackgroundShell] = {}
        self._next = 1
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        sandbox: CommandWrapper | None = None,
        argv: list[str] | None = None,
        stop_with: Callable[[Callable[[Any], None]], object] | None = None,
    ) -> BackgroundShell:
        """Start `command` (under `sandbox`, the session's, when given). `stop_with`: a sub-agent's signal to
        subscribe to (`Abort.on_abort`): the shell is stopped with the sub-agent (attack round 24: a stopped
        sub-agent's shell ran on, and its parent never had its id to stop it)."""
        proc = await self.supervisor.spawn(argv or shell_argv(command), cwd=cwd, env=env, sandbox=sandbox)
        shell = BackgroundShell(f"bash_{self._next}", command, proc)
        self._next += 1
        proc.on_output = shell.feed
        self._shells[shell.id] = shell
        if stop_with is not None:
            stop_with(lambda _reason: self._stop(shell))
        # Not the turn's task: a cancelled turn must not stop the shell.
        task = asyncio.get_running_loop().create_task(self._reap_leftovers(shell))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return shell

    async def _reap_leftovers(self, shell: BackgroundShell) -> None:
        """When the shell exits, stop whatever it left running (as foreground commands do)."""
        await shell.process.wait()
        if self.supervisor.tree_pids(shell.process):
            self.supervisor.terminate(shell.process)
            await self.supervisor.wait_gone(shell.process, KILL_WAIT)
        await asyncio.to_thread(shell.settle)

    def _stop(self, shell: BackgroundShell) -> None:
        if shell.status == "running" or self.supervisor.tree_pids(shell.process):
            shell.killed = shell.status == "running"
            self.supervisor.terminate(shell.process)

    def get(self, shell_id: str) -> BackgroundShell:
        shell = self._shells.get(shell_id)
        if shell is None:
            known = ", ".join(self._shells) or "none"
            raise UnknownShell(f"No background shell with id {shell_id!r} (known: {known}).")
        return shell

    def all(self) -> list[BackgroundShell]:
        return list(self._shells.values())

    def ids(self) -> list[str]:
        return list(self._shells)

    async def kill(self, shell_id: str) -> BackgroundShell:
        shell = self.get(shell_id)
        if shell.status == "running" or self.supervisor.tree_pids(shell.process):
            shell.killed = shell.status == "running"
            self.supervisor.terminate(shell.process)
            await self.supervisor.wait_gone(shell.process, KILL_WAIT)
        return shell

    async def shutdown(self, *, grace: bool = False) -> None:
        """Kill every shell (now, or with `grace` after its escalation: see ProcessSupervisor.shutdown) and wait
        for them, bounded."""
        for shell in self._shells.values():
            if shell.status == "running":
                shell.killed = True
            self.supervisor.terminate(shell.process, force=not grace)
        for shell in self._shells.values():
            await self.supervisor.wait_gone(shell.process, KILL_WAIT)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
