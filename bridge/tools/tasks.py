"""The tools that watch and stop background tasks — shells and sub-agents alike: `TaskOutput {task_id, block,
timeout}` and `TaskStop {task_id}`, as in Claude Code 2.1 (which replaced BashOutput and KillShell with them). The
shells themselves (started by Bash with `run_in_background`) are bridge/execution/background.py's.
"""

from __future__ import annotations

import anyio
from pydantic import Field

from bridge.execution.background import BackgroundShells
from bridge.execution.output import clean_output
from bridge.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.visible import code_span, one_line

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000


class TaskOutputInput(ToolInput):
    task_id: str = Field(description="Id of a background shell (bash_N) or a background agent (agent_N)")
    block: bool = Field(default=True, description="Wait for the task to end (up to timeout) before answering")
    timeout: float = Field(
        default=DEFAULT_WAIT_MS,
        ge=0,
        le=MAX_WAIT_MS,
        description=f"How long to wait, in ms (default {DEFAULT_WAIT_MS}, max {MAX_WAIT_MS})",
    )


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
            return ToolResult(
                f"{agent.describe()}\n{label}:\n{text}", raw_output={"task_id": agent.id, "status": agent.status}
            )
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
        return f"Stop {code_span(one_line(data.task_id))}"  # a command's title: the panel renders its code spans

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
