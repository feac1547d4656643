"""Background shells (`Bash` with `run_in_background`), and the tools to watch and stop background tasks — shells
and sub-agents alike: `TaskOutput {task_id, block, timeout}` and `TaskStop {task_id}`, as in Claude Code 2.1
(which replaced BashOutput and KillShell with them).

A background shell belongs to the session, not to a turn: a cancelled turn leaves it running; the
bridge's shutdown (or TaskStop) stops it and everything it forked. Its unread output is kept bounded
(the newest `UNREAD_CHARS`; older unread text is dropped and counted).
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field

from bridge.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.output import clean_output, exit_note
from bridge.tools.processes import CommandWrapper, ManagedProcess, ProcessSupervisor, shell_argv

UNREAD_CHARS = 30_000
KILL_WAIT = 3.0

Status = Literal["running", "completed", "failed", "killed"]


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
        notes = run.notes(text, self.process.returncode if self.process.closed else None)
        fresh = [note for note in notes if note not in self._heard]
        self._heard.update(fresh)
        return fresh

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
        self, command: str, *, cwd: Path, env: Mapping[str, str], sandbox: CommandWrapper | None = None,
        argv: list[str] | None = None,
    ) -> BackgroundShell:
        """Start `command` (under `sandbox`, the session's, when given)."""
        proc = await self.supervisor.spawn(argv or shell_argv(command), cwd=cwd, env=env, sandbox=sandbox)
        shell = BackgroundShell(f"bash_{self._next}", command, proc)
        self._next += 1
        proc.on_output = shell.feed
        self._shells[shell.id] = shell
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

    def get(self, shell_id: str) -> BackgroundShell:
        shell = self._shells.get(shell_id)
        if shell is None:
            known = ", ".join(self._shells) or "none"
            raise ToolError(f"No background shell with id {shell_id!r} (known: {known}).")
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


DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


class TaskOutputInput(ToolInput):
    task_id: str = Field(description="Id of a background shell (bash_N) or a background agent (agent_N)")
    block: bool = Field(default=True, description="Wait for the task to end (up to timeout) before answering")
    timeout: float = Field(default=DEFAULT_WAIT_MS, ge=0, le=MAX_WAIT_MS,
                           description=f"How long to wait, in ms (default {DEFAULT_WAIT_MS}, max {MAX_WAIT_MS})")


class TaskOutputTool(Tool[TaskOutputInput]):
    name = "TaskOutput"
    input_model = TaskOutputInput
    description = (
        "Read what a background task has produced, with its status: a shell started by Bash with "
        "run_in_background (the output printed since the last read, and its exit code) or an agent started by "
        "Agent with run_in_background (its final message once it has ended). block=true (the default) waits up "
        "to `timeout` ms for the task to end; block=false answers at once."
    )
    search_hint = "background shell agent task output status logs result"
    kind = "read"
    interrupt_behavior = "cancel"

    def is_read_only(self, data: TaskOutputInput) -> bool:
        return True

    def user_facing_title(self, data: TaskOutputInput) -> str:
        return f"Output of {data.task_id}"

    async def call(self, data: TaskOutputInput, ctx: ToolContext) -> ToolResult:
        wait = data.timeout / 1000 if data.block else 0.0
        agents = ctx.services.agents
        agent = agents.find(data.task_id) if agents is not None else None
        if agents is not None and agent is not None:
            if wait and agent.status == "running":
                await agent.wait(wait)
            if agent.status != "running":
                agents.mark_read(agent.id)
            text = agent.output().strip() or "(no text yet)"
            label = "Result" if agent.status != "running" else "Latest text"
            return ToolResult(f"{agent.describe()}\n{label}:\n{text}",
                              raw_output={"task_id": agent.id, "status": agent.status})
        shell = _shells(ctx, data.task_id).get(data.task_id)
        if wait and shell.status == "running":
            with anyio.move_on_after(wait):
                await shell.process.wait()
        text, dropped = shell.take()
        text = clean_output(text)
        lines = [f"Shell {shell.id} (`{_short(shell.command)}`): {shell.describe()}"]
        if dropped:
            lines.append(f"[{dropped} earlier characters of unread output were dropped]")
        lines.append(text.rstrip("\n") if text.strip() else "(no new output)")
        lines += [f"[sandbox] {note}" for note in shell.sandbox_notes(text)]
        raw = {"task_id": shell.id, "status": shell.status, "exit_code": shell.process.returncode}
        return ToolResult("\n".join(lines), raw_output=raw)


class TaskStopInput(ToolInput):
    task_id: str = Field(description="Id of the background shell (bash_N) or agent (agent_N) to stop")


class TaskStopTool(Tool[TaskStopInput]):
    name = "TaskStop"
    input_model = TaskStopInput
    description = (
        "Stop a background task: a shell started by Bash with run_in_background (and every process it started) "
        "or an agent started by Agent with run_in_background (and everything it runs)."
    )
    search_hint = "stop kill background shell agent task process"
    kind = "execute"
    interrupt_behavior = "block"

    def user_facing_title(self, data: TaskStopInput) -> str:
        return f"Stop {data.task_id}"

    async def call(self, data: TaskStopInput, ctx: ToolContext) -> ToolResult:
        agents = ctx.services.agents
        if agents is not None and agents.find(data.task_id) is not None:
            agent = agents.find(data.task_id)
            assert agent is not None
            if agent.status != "running":
                return ToolResult(f"{agent.describe()}: it had already ended.")
            stopped = await agents.stop(data.task_id)
            return ToolResult(f"Stopped. {stopped.describe()}")
        shells = _shells(ctx, data.task_id)
        before = shells.get(data.task_id).status
        shell = await shells.kill(data.task_id)
        if before != "running":
            return ToolResult(f"Shell {shell.id} had already finished: {shell.describe()}.")
        return ToolResult(f"Killed shell {shell.id} (`{_short(shell.command)}`).")


def _shells(ctx: ToolContext, task_id: str) -> BackgroundShells:
    """The session's shells, or an error naming every task id there is when `task_id` is none of them."""
    shells = ctx.services.background
    agents = ctx.services.agents
    known = [*(shells.ids() if shells is not None else []), *(agents.known() if agents is not None else [])]
    if shells is None or task_id not in shells.ids():
        raise ToolError(f"No background task with id {task_id!r} (known: {', '.join(known) or 'none'}).")
    return shells


def _short(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"
