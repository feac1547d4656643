"""The session's sub-agents: each runs the same query loop (`run_turn`) with its own Conversation, system prompt,
tool set and transcript (a sidechain beside the session's), on an `Abort` that is a child of its `Agent` call's.

The signal is one tree: the turn's reason reaches every sub-agent and everything it runs at once, with the seed's
semantics at every level (partial text kept, every tool_use answered, the marker for `ctrl-c`, none for
`interrupt`); a sub-agent's own stop (its call cancelled from the editor, `TaskStop`) reaches only it. A
background agent hangs off the session's own signal instead (it outlives turns and stops with the session).

A sub-agent uses the session's tools, MCP connections included, and never closes anything it did not start:
the MCP servers belong to the session, which releases them only when it ends.

Its events go up tagged with the call that started it (`SubAgentEvent`); its usage is rolled into the session's
totals; its permission questions name it (`PermissionRequest.agent`) and go through the session's own policy,
so the session's rules and mode (plan mode too) apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, assert_never

from bridge.abort import Abort, AbortReason
from bridge.agents.definitions import AGENT_TOOL, MAX_DEPTH, NEVER_INHERITED, AgentDefinition
from bridge.agents.loader import AgentCatalog
from bridge.display import PlanEntry, SubAgentLabel
from bridge.errors import cause_text, root_cause
from bridge.loop.conversation import Conversation
from bridge.loop.events import AgentProgress, LoopEvent, SubAgentEvent, ToolCallStarted, UsageReport
from bridge.loop.executor import RunningCalls, StepObserver, ToolEnvironment, no_steps
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.loop.query import TurnSettings, run_turn
from bridge.messages import Block, Message, text_block, valid_tool_use_id
from bridge.model.types import ModelClient, ModelError
from bridge.permissions.facts import PermissionCall
from bridge.permissions.hooks import HookOutcome, HookRunner
from bridge.permissions.types import Decision, PermissionAnswer, PermissionRequest, RuleSuggestion
from bridge.tools.agent import AgentInput, TaskStatus
from bridge.tools.base import (
    AllowForTurn,
    AnyTool,
    Effect,
    LeavePlanMode,
    PlanChanged,
    ToolContext,
    ToolError,
    ToolResult,
)
from bridge.tools.tool_search import DeferredTools, ToolSearchTool
from bridge.transcript import Transcript

log = logging.getLogger(__name__)

STOP_WAIT = 5.0  # bound on waiting for a stopped agent to unwind (it answers at its next checkpoint)


@dataclass
class AgentHost:
    """What sub-agents need of their session (built by `Session`)."""

    model: ModelClient
    settings: Callable[[], TurnSettings]  # the session's turn settings now (model, limits)
    environment: str  # the system prompt's environment section (and memory), as the session's has it
    tools: Callable[[], dict[str, AnyTool]]  # the session's tools now
    deferred: Callable[[], DeferredTools]
    unavailable: dict[str, str]
    policy: PermissionPolicy
    hooks: HookRunner  # the session's hooks (PreToolUse … SubagentStop): the same rules at every level
    prompter: Prompter
    emit: Callable[[LoopEvent], None]
    context: Callable[[], ToolContext]  # a tool context of the session's (abort and id are the executor's)
    running: RunningCalls
    roll_up: Callable[[UsageReport], UsageReport]  # a sub-agent's response into the session's totals
    sidechains: Path | None = None  # where sub-agent transcripts go (None: not stored)
    steps: Callable[[str], StepObserver] = lambda _call: no_steps  # the session's checkpoints, for the agent of a call


@dataclass
class SubAgentTask:
    """One sub-agent run: what it is, its history, its signal and how it is doing."""

    id: str
    tool_call_id: str
    definition: AgentDefinition
    label: SubAgentLabel
    prompt: str
    model: str
    background: bool
    abort: Abort = field(default_factory=Abort)
    conversation: Conversation = field(default_factory=Conversation)
    started_at: float = field(default_factory=time.time)
    error: str | None = None
    last_tool: str | None = None
    tool_calls: int = 0
    tokens: int = 0
    plan: list[PlanEntry] = field(default_factory=list)  # its own todo list (not the session's)
    read: bool = False  # its result was read with TaskOutput
    _status: TaskStatus = "running"
    _started: float = field(default_factory=time.monotonic)
    _ended_at: float | None = None
    _ended: asyncio.Event = field(default_factory=asyncio.Event)
    _final: str | None = None  # once it ended: its final message (its history is in its transcript)

    def release(self) -> None:
        """It ended: keep its final message, not its history (a long session starts many)."""
        self._final = self.output()
        self.conversation.messages = []

    @property
    def status(self) -> TaskStatus:
        return self._status

    @property
    def elapsed(self) -> float:
        return (self._ended_at or time.monotonic()) - self._started

    def finish(self, status: TaskStatus, error: str | None = None) -> None:
        if self._ended.is_set():
            return
        self._status, self.error = status, error
        self._ended_at = time.monotonic()
        self._ended.set()

    async def wait(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ended.wait(), timeout)
        return self._ended.is_set()

    def output(self) -> str:
        """Its final message: the text of its last assistant message that has text (so far, while it runs)."""
        if self._final is not None:
            return self._final
        for message in reversed(self.conversation.messages):
            if message.get("role") != "assistant":
                continue
            texts = [str(b.get("text", "")) for b in message.get("content", []) if b.get("type") == "text"]
            if any(t.strip() for t in texts):
                return "\n".join(t for t in texts if t.strip())
        return ""

    def describe(self) -> str:
        state = {
            "running": "running",
            "completed": "completed",
            "failed": f"failed ({self.error})",
            "stopped": "stopped",
        }[self._status]
        return (
            f"Agent {self.id} ({self.definition.name}: {self.label.description}): {state} · "
            f"{self.tool_calls} tool calls · {self.tokens} tokens · {self.elapsed:.0f} s"
        )

    def progress(self) -> AgentProgress:
        return AgentProgress(
            tool_call_id=self.tool_call_id,
            agent=self.label,
            status=self._status,
            started_at=self.started_at,
            elapsed_s=self.elapsed,
            tool_calls=self.tool_calls,
            tokens=self.tokens,
            last_tool=self.last_tool,
            background=self.background,
        )

    def stats(self) -> dict[str, Any]:
        return {
            "agentId": self.id,
            "agentType": self.definition.name,
            "status": self._status,
            "toolUses": self.tool_calls,
            "totalTokens": self.tokens,
            "durationMs": round(self.elapsed * 1000),
            "costUsd": round(self.conversation.cost_usd, 6),
        }

    def apply(self, effect: Effect) -> None:
        """A sub-agent's tool effects stay its own: its todo list is not the session's plan."""
        match effect:
            case PlanChanged(entries):
                self.plan = list(entries)
            case LeavePlanMode():  # it has no ExitPlanMode: the session's mode is the session's to leave
                log.warning("sub-agent %s tried to leave plan mode; ignored", self.id)
            case AllowForTurn():  # a skill's tools are allowed for the session's turn, not a sub-agent's own
                log.warning("sub-agent %s used a skill with allowed-tools; its own calls still ask", self.id)
            case _:
                assert_never(effect)


class ReadOnlyPolicy:
    """The policy of an agent type that may only read: a call its tool does not call read-only is denied before
    the session's policy is asked (which still decides the rest: rules, mode, containment)."""

    def __init__(self, inner: PermissionPolicy, agent_type: str) -> None:
        self._inner = inner
        self._agent_type = agent_type

    async def decide_async(self, call: PermissionCall, *, hook: HookOutcome | None = None) -> Decision:
        if not call.read_only:
            return Decision(
                "deny", f"the {self._agent_type} agent is read-only: this {call.tool_name} call may change something"
            )
        return await self._inner.decide_async(call, hook=hook)

    def save_rule(self, suggestion: RuleSuggestion) -> None:
        self._inner.save_rule(suggestion)


class Level:
    """The sub-agents one loop starts — the session's own (depth 0) or a sub-agent's: the `AgentRunner` of the
    Agent, TaskOutput and TaskStop tools at that level. The tasks themselves are the session's (`SubAgents`)."""

    def __init__(self, agents: SubAgents, depth: int, emit: Callable[[LoopEvent], None], prompter: Prompter) -> None:
        self.agents = agents
        self.depth = depth
        self.emit = emit
        self.prompter = prompter
        self._news: list[Block] = []  # what the next request of this level's loop is told

    async def run_agent(self, data: AgentInput, ctx: ToolContext) -> ToolResult:
        definition = self.agents.catalog.get(data.subagent_type)
        if definition is None:
            raise ToolError(
                f"Unknown subagent_type {data.subagent_type!r}. Available agent types: "
                f"{', '.join(self.agents.catalog.names())}."
            )
        if self.depth >= MAX_DEPTH:
            raise ToolError(f"Sub-agents nest at most {MAX_DEPTH} deep: do this work yourself.")
        task = self.agents.new_task(definition, data, ctx.tool_use_id)
        if data.run_in_background:
            task.abort = self.agents.root.child(_every)  # it outlives the turn; the session's end stops it
            self.agents.spawn(task, self)
            return ToolResult(
                f"Async agent launched: {task.id} ({definition.name}: {task.label.description}). It works in the "
                "background: continue with other work. A <task-notification> message will tell you when it ends; "
                f'TaskOutput(task_id="{task.id}") reads its result, TaskStop stops it.',
                raw_output={**task.stats(), "background": True},
            )
        task.abort = ctx.abort.child(_every)  # the call's signal reaches it; its own stop reaches only it
        await self.agents.drive(task, self)
        return _result(task)

    def find(self, task_id: str) -> SubAgentTask | None:
        return self.agents.find(task_id)

    def known(self) -> list[str]:
        return self.agents.known()

    async def stop(self, task_id: str) -> SubAgentTask:
        return await self.agents.stop(task_id)

    def mark_read(self, task_id: str) -> None:
        task = self.agents.find(task_id)
        if task is not None:
            task.read = True

    def tell(self, block: Block) -> None:
        self._news.append(block)

    def drain(self) -> list[Block]:
        news, self._news = self._news, []
        return news


class SubAgents:
    """Every sub-agent of one session: started, running, ended; by agent id and by the call that started it."""

    def __init__(self, host: AgentHost, catalog: AgentCatalog) -> None:
        self.host = host
        self.catalog = catalog
        self.root = Abort()  # background agents hang off it: the session's end
        self.main = Level(self, 0, host.emit, host.prompter)
        self._tasks: dict[str, SubAgentTask] = {}
        self._next = 1
        self._background: set[asyncio.Task[None]] = set()

    def new_task(self, definition: AgentDefinition, data: AgentInput, tool_call_id: str) -> SubAgentTask:
        task = SubAgentTask(
            id=f"agent_{self._next}",
            tool_call_id=tool_call_id,
            definition=definition,
            label=SubAgentLabel(definition.name, data.description.strip() or definition.name, tool_call_id),
            prompt=data.prompt,
            model=definition.model_for(self.host.settings().model, data.model),
            background=bool(data.run_in_background),
        )
        self._next += 1
        self._tasks[task.id] = task
        return task

    def find(self, task_id: str) -> SubAgentTask | None:
        task = self._tasks.get(task_id)
        if task is not None:
            return task
        return next((t for t in self._tasks.values() if t.tool_call_id == task_id), None)

    def known(self) -> list[str]:
        return list(self._tasks)

    def running(self) -> list[SubAgentTask]:
        return [t for t in self._tasks.values() if t.status == "running"]

    async def stop(self, task_id: str) -> SubAgentTask:
        """Stop one agent alone (`ctrl-c` for it; `force` when it is already stopping) and wait, bounded."""
        task = self.find(task_id)
        if task is None:
            raise ToolError(f"No agent with id {task_id!r} (known: {', '.join(self._tasks) or 'none'}).")
        task.abort.abort(AbortReason.FORCE if task.abort.aborted else AbortReason.CTRL_C)
        await task.wait(STOP_WAIT)
        return task

    def stop_call(self, tool_call_id: str) -> bool:
        """The editor cancelled the call that launched a background agent: stop that agent. False: none runs."""
        task = next((t for t in self._tasks.values() if t.tool_call_id == tool_call_id and t.status == "running"), None)
        if task is None:
            return False
        task.abort.abort(AbortReason.FORCE if task.abort.aborted else AbortReason.CTRL_C)
        return True

    def spawn(self, task: SubAgentTask, level: Level) -> None:
        runner = asyncio.get_running_loop().create_task(self.drive(task, level), name=f"sub-agent {task.id}")
        self._background.add(runner)
        runner.add_done_callback(self._background.discard)

    async def shutdown(self) -> None:
        """The session ends: every background agent stops at once (force), bounded."""
        self.root.abort(AbortReason.FORCE)
        if self._background:
            _done, pending = await asyncio.wait(list(self._background), timeout=STOP_WAIT)
            for runner in pending:
                runner.cancel()

    async def drive(self, task: SubAgentTask, level: Level) -> None:
        """Run `task` to its end; never raises (a failure is the task's `error`)."""
        child = Level(self, level.depth + 1, self._emit_for(task, level.emit), self._prompter_for(task, level))
        tools, held_back = self._tools_for(task.definition, child.depth)
        transcript = self._transcript(task)
        if transcript is not None:
            task.conversation.on_message = transcript.append
            task.conversation.on_compact = transcript.restart
        base = self.host.context()
        read_files = dict(base.read_files)  # what it reads is its own; what the session read it may edit
        # What it starts in the background stops with it — while it runs: once it has ended, a later cancel of the
        # turn that started it is no stop of it (round 24's second verification).
        owner = Abort()
        detach = task.abort.on_abort(owner.abort)
        if task.abort.reason is not None:
            owner.abort(task.abort.reason)

        def context(_use_id: str) -> ToolContext:
            ctx = self.host.context()
            ctx.read_files = read_files
            ctx.services = dataclasses.replace(ctx.services, agents=child if AGENT_TOOL in tools else None, owner=owner)
            return ctx

        policy = (
            ReadOnlyPolicy(self.host.policy, task.definition.name) if task.definition.read_only else self.host.policy
        )
        env = ToolEnvironment(
            tools=tools,
            policy=policy,
            prompter=child.prompter,
            emit=child.emit,
            context=context,
            apply=task.apply,
            held_back=held_back,
            unavailable=self.host.unavailable,
            running=self.host.running,
            notifications=child.drain,
            hooks=self.host.hooks,
            steps=self.host.steps(task.tool_call_id),
        )
        settings = dataclasses.replace(
            self.host.settings(),
            model=task.model,
            prompt_hook=None,
            stop_hook="SubagentStop",
            system=[text_block(f"{task.definition.prompt}\n\n{self.host.environment}")],
        )
        level.emit(task.progress())
        try:
            stop = await run_turn(
                task.conversation,
                [text_block(task.prompt)],
                model=self.host.model,
                settings=settings,
                tools=env,
                abort=task.abort,
            )
            task.finish("stopped" if stop == "cancelled" else "completed")
        except Exception as error:  # a model failure (or a bug) ends this agent, not its parent
            expected = isinstance(root_cause(error), ModelError)
            log.warning("sub-agent %s failed: %s", task.id, error, exc_info=not expected)
            task.finish("failed", cause_text(error))
        finally:
            detach()
            task.finish("stopped")  # cancelled from outside (the session went away)
            if transcript is not None:
                transcript.close()
            level.emit(task.progress())
            task.release()
            if task.background and not task.read:
                level.tell(text_block(notification(task)))

    def _emit_for(self, task: SubAgentTask, parent: Callable[[LoopEvent], None]) -> Callable[[LoopEvent], None]:
        """The sub-agent's events, going up: tagged with its call (once: a deeper agent's are tagged already),
        its usage rolled into the session's totals, its card's progress after each tool call and response."""

        def emit(event: LoopEvent) -> None:
            if isinstance(event, SubAgentEvent):
                parent(event)
                return
            if isinstance(event, UsageReport):
                task.tokens = event.context_used + event.output_tokens
                event = self.host.roll_up(event)
            elif isinstance(event, ToolCallStarted):
                task.tool_calls += 0 if event.rewritten else 1
                task.last_tool = event.title
            parent(SubAgentEvent(task.tool_call_id, event))
            if isinstance(event, (ToolCallStarted, UsageReport)):
                parent(task.progress())

        return emit

    @staticmethod
    def _prompter_for(task: SubAgentTask, level: Level) -> Prompter:
        async def ask(request: PermissionRequest) -> PermissionAnswer:
            if request.agent is None:  # a deeper agent's question names that agent already
                request = dataclasses.replace(request, agent=task.label)
            return await level.prompter(request)

        return ask

    def _tools_for(self, definition: AgentDefinition, depth: int) -> tuple[dict[str, AnyTool], Callable[[], set[str]]]:
        """The agent's tools (its type's list, or all of the session's) and what of them is held back."""
        available = self.host.tools()
        may_nest = definition.tools is not None and AGENT_TOOL in definition.tools and depth < MAX_DEPTH
        skipped = NEVER_INHERITED | (frozenset() if may_nest else {AGENT_TOOL})
        names = list(available) if definition.tools is None else [n for n in definition.tools if n in available]
        tools = {name: available[name] for name in names if name not in skipped}
        if ToolSearchTool.name not in tools:
            return tools, set
        # Its own catalog of deferred tools: what it loads is loaded for it, not for its parent.
        session = self.host.deferred()
        own = DeferredTools({n: t for n, t in session.tools.items() if n in tools}, set(session.loaded))
        tools[ToolSearchTool.name] = ToolSearchTool(own)
        return tools, own.held_back

    def _transcript(self, task: SubAgentTask) -> Transcript | None:
        directory = self.host.sidechains
        if directory is None or not valid_tool_use_id(task.tool_call_id):
            return None
        header = {
            "type": "agent",
            "toolCallId": task.tool_call_id,
            "agentId": task.id,
            "agentType": task.definition.name,
            "description": task.label.description,
            "background": task.background,
            "createdAt": task.started_at,
        }
        return Transcript.create_sidechain(directory / f"{task.tool_call_id}.jsonl", header)


def _every(_reason: AbortReason) -> bool:
    return True


def _result(task: SubAgentTask) -> ToolResult:
    text = task.output().strip()
    raw = task.stats()
    if task.status == "completed":
        return ToolResult(text or "(The agent ended without a final message.)", raw_output=raw)
    if task.status == "failed":
        return ToolResult(f"The agent failed: {task.error}", is_error=True, raw_output=raw)
    said = f" What it had said:\n{text}" if text else ""
    return ToolResult(f"The agent was stopped before it finished.{said}", is_error=True, raw_output=raw)


def notification(task: SubAgentTask) -> str:
    """What the parent's next request is told of a background agent that ended (Claude Code's shape)."""
    verb = {"completed": "completed", "failed": "failed", "stopped": "was stopped", "running": "is running"}
    result = task.output().strip() if task.status != "failed" else f"The agent failed: {task.error}"
    return (
        "<task-notification>\n"
        f"<task-id>{task.id}</task-id>\n"
        f"<tool-use-id>{task.tool_call_id}</tool-use-id>\n"
        f"<status>{task.status}</status>\n"
        f'<summary>Agent "{task.label.description}" {verb[task.status]}</summary>\n'
        f"<result>{result or '(no final message)'}</result>\n"
        f"<usage><total_tokens>{task.tokens}</total_tokens><tool_uses>{task.tool_calls}</tool_uses>"
        f"<duration_ms>{round(task.elapsed * 1000)}</duration_ms></usage>\n"
        "</task-notification>"
    )


def sidechain_messages(directory: Path | None, tool_call_id: str) -> list[Message] | None:
    """A stored sub-agent's history (repaired), or None when there is none (no `directory`: nothing is stored)."""
    from bridge.transcript import load_sidechain

    if directory is None or not valid_tool_use_id(tool_call_id):
        return None
    path = directory / f"{tool_call_id}.jsonl"
    if not path.is_file():
        return None
    try:
        return load_sidechain(path).messages
    except (OSError, ValueError) as error:
        log.warning("cannot load sub-agent transcript %s: %s", path, error)
        return None
