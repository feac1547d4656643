"""Background shells (`Bash` with `run_in_background`), and the tools to watch and stop them:
`BashOutput {bash_id, filter?}` and `KillShell {shell_id}`, as in Claude Code.

A background shell belongs to the session, not to a turn: a cancelled turn leaves it running; the
bridge's shutdown (or KillShell) stops it and everything it forked. Its unread output is kept bounded
(the newest `UNREAD_CHARS`; older unread text is dropped and counted).
"""

from __future__ import annotations

import asyncio
import codecs
import re
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from bridge.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolResult, required
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
        self, command: str, *, cwd: Path, env: Mapping[str, str], sandbox: CommandWrapper | None = None
    ) -> BackgroundShell:
        """Start `command` (under `sandbox`, the session's, when given)."""
        proc = await self.supervisor.spawn(shell_argv(command), cwd=cwd, env=env, sandbox=sandbox)
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


class BashOutputInput(ToolInput):
    bash_id: str = Field(description="Id of the background shell (from Bash with run_in_background)")
    filter: str | None = Field(default=None, description="Regex: return only matching lines (the others are discarded)")


class BashOutputTool(Tool[BashOutputInput]):
    name = "BashOutput"
    input_model = BashOutputInput
    description = (
        "Read new output of a background shell started by Bash with run_in_background: returns only what "
        "was printed since the last read, with the shell's status (running, completed, failed, killed) and "
        "exit code. `filter` keeps only lines matching a regex; the other new lines are discarded."
    )
    search_hint = "background shell output status logs"
    kind = "read"
    interrupt_behavior = "cancel"

    def is_read_only(self, data: BashOutputInput) -> bool:
        return True

    async def validate_input(self, data: BashOutputInput, ctx: ToolContext) -> str | None:
        if data.filter is not None:
            try:
                re.compile(data.filter)
            except re.error as error:
                return f"filter is not a valid regular expression: {error}"
        return None

    def user_facing_title(self, data: BashOutputInput) -> str:
        return f"Output of {data.bash_id}"

    async def call(self, data: BashOutputInput, ctx: ToolContext) -> ToolResult:
        shell = required(ctx.services.background, "background shells").get(data.bash_id)
        text, dropped = shell.take()
        text = clean_output(text)
        if data.filter is not None:
            pattern = re.compile(data.filter)
            text = "\n".join(line for line in text.splitlines() if pattern.search(line))
        lines = [f"Shell {shell.id} (`{_short(shell.command)}`): {shell.describe()}"]
        if dropped:
            lines.append(f"[{dropped} earlier characters of unread output were dropped]")
        lines.append(text.rstrip("\n") if text.strip() else "(no new output)")
        raw = {"status": shell.status, "exit_code": shell.process.returncode}
        return ToolResult("\n".join(lines), raw_output=raw)


class KillShellInput(ToolInput):
    shell_id: str = Field(description="Id of the background shell to stop")


class KillShellTool(Tool[KillShellInput]):
    name = "KillShell"
    input_model = KillShellInput
    description = "Stop a background shell started by Bash with run_in_background, and every process it started."
    search_hint = "stop kill background shell process"
    kind = "execute"
    interrupt_behavior = "block"

    def user_facing_title(self, data: KillShellInput) -> str:
        return f"Kill {data.shell_id}"

    async def call(self, data: KillShellInput, ctx: ToolContext) -> ToolResult:
        shells = required(ctx.services.background, "background shells")
        before = shells.get(data.shell_id).status
        shell = await shells.kill(data.shell_id)
        if before != "running":
            return ToolResult(f"Shell {shell.id} had already finished: {shell.describe()}.")
        return ToolResult(f"Killed shell {shell.id} (`{_short(shell.command)}`).")


def _short(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"
