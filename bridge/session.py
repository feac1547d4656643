"""Sessions: one conversation each, one turn at a time; a new prompt interrupts the running turn.

A session knows nothing of JSON-RPC: its front end (the editor server, the terminal) gives it an
`emit` for loop events and a `prompter` for permission questions.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from bridge import commands
from bridge.abort import Abort, AbortReason, cancel_on_abort
from bridge.agents.runner import AgentHost, SubAgents, sidechain_messages
from bridge.checkpoints.observer import CheckpointSteps
from bridge.checkpoints.recorder import Checkpoints
from bridge.config import BridgeConfig
from bridge.display import PlanEntry
from bridge.loop.compact import compact_conversation
from bridge.loop.conversation import Conversation
from bridge.loop.events import LoopEvent, ModeChanged, Notice, PlanUpdate, TextDelta, UsageReport
from bridge.loop.executor import RunningCalls, ToolEnvironment
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.loop.query import StopReason, TurnSettings, offered_schemas, run_turn
from bridge.messages import Block, Message
from bridge.model.types import ModelClient, Usage
from bridge.permissions.trust import Ask as AskTrust
from bridge.permissions.trust import TrustItem
from bridge.session_setup import SessionSetup
from bridge.tools.agent import AgentTool
from bridge.tools.base import (
    AllowForTurn,
    AnyTool,
    DocumentSource,
    Effect,
    FileSnapshot,
    LeavePlanMode,
    PlanChanged,
    Services,
    ToolContext,
)
from bridge.toolset import SessionTools
from bridge.transcript import Transcript


@dataclass
class Frontend:
    """What a session needs from whoever shows it."""

    emit: Callable[[LoopEvent], None]
    prompter: Prompter
    documents: DocumentSource = field(default_factory=DocumentSource)
    interactive: bool = True  # False: no one answers, every ask is a denial
    ask_trust: AskTrust | None = None  # None: no one to ask whether the folder's own settings may take effect


class Session:
    def __init__(
        self,
        *,
        session_id: str,
        cwd: Path,
        config: BridgeConfig,
        model: ModelClient,
        tools: list[AnyTool],
        frontend: Frontend,
        services: Services,
        setup: SessionSetup,
        policy: PermissionPolicy | None = None,
        transcript: Transcript | None = None,
        history: list[Message] | None = None,
    ) -> None:
        self.id, self.cwd, self.config, self.model, self.frontend = session_id, cwd, config, model, frontend
        self.setup = setup
        self.engine = setup.engine
        # The Agent tool lists the agent types as they were when the session started: its bytes never change.
        types = setup.agent_types.types.values()
        agent_tool = AgentTool([(a.name, a.description, a.tools_text()) for a in types])
        self.toolset = SessionTools(cwd, [*tools, agent_tool], skills=setup.skills, plugins=setup.plugins)
        self.policy: PermissionPolicy = policy or self.engine
        self.transcript = transcript
        self.conversation = Conversation(messages=list(history or []))
        if transcript is not None:
            self.conversation.on_message = transcript.append
            self.conversation.on_compact = transcript.restart
            self.conversation.on_usage = transcript.usage
        self.read_files: dict[Path, FileSnapshot] = {}
        self.services = dataclasses.replace(services, sandbox=setup.sandbox)  # the sandbox follows this engine
        self.plan: list[PlanEntry] = []  # the agent's todo list (cleared once every entry is completed)
        self.data_dir = config.data_dir / "sessions" / session_id
        self._system = setup.system
        self.running = RunningCalls()  # every level's running tool calls: one can be cancelled alone
        self.checkpoints = Checkpoints.open(config.data_dir, cwd, session_id,
                                            tell=lambda text: self.frontend.emit(Notice(text, "warning")))
        self._steps = CheckpointSteps(self.checkpoints)  # around every call, at every level (bridge/checkpoints)
        self.turn_id: str | None = None  # the running (or last) turn's id: what a rewind names
        self.subagents = SubAgents(self._agent_host(setup.environment), setup.agent_types)
        self.services.agents = self.subagents.main
        self._turn: asyncio.Task[StopReason] | None = None
        self._abort: Abort | None = None
        self._start_lock = asyncio.Lock()
        self._for_turn: list[Callable[[], None]] = []  # undoes what holds only for the turn (a skill's rules)

    @property
    def busy(self) -> bool:
        return self._turn is not None and not self._turn.done()

    async def prompt(self, blocks: list[Block]) -> StopReason:
        """Run a turn for `blocks`. A turn already running is interrupted (`interrupt`) first: its
        `block` tools finish and keep their real results, then this turn sees everything."""
        async with self._start_lock:
            previous = self._turn
            if previous is not None and not previous.done():
                assert self._abort is not None
                self._abort.abort(AbortReason.INTERRUPT)
                await asyncio.wait([previous])
            abort = Abort()
            turn = asyncio.ensure_future(self._run(blocks, abort))
            self._abort, self._turn = abort, turn
        try:
            return await asyncio.shield(turn)
        except asyncio.CancelledError:
            # The editor cancelled this request (`$/cancelRequest`) or went away: that is a ctrl-c.
            abort.abort(AbortReason.CTRL_C)
            with contextlib.suppress(Exception):
                await asyncio.shield(turn)
            raise

    def cancel_tool_call(self, tool_call_id: str) -> bool:
        """Stop one tool call alone — a sub-agent with everything it runs, or any other running call — without
        touching the turn it belongs to (which goes on with an interrupted result for it). A second cancel of
        the same call forces. False: no such call is running."""
        return self.running.stop(tool_call_id) or self.subagents.stop_call(tool_call_id)

    async def close(self) -> None:
        """The session ends: its background agents stop (its turn is cancelled by whoever ends it). Its last
        checkpoints are written by whoever ends it, once the processes are stopped (`checkpoints.close`)."""
        await self.subagents.shutdown()

    def cancel(self, *, force: bool = False) -> bool:
        """`ctrl-c`; a second cancel while the first is still unwinding (or `force`) kills at once."""
        if self._abort is None or not self.busy:
            return False
        already = self._abort.aborted and self._abort.reason is not AbortReason.INTERRUPT
        self._abort.abort(AbortReason.FORCE if force or already else AbortReason.CTRL_C)
        return True

    async def wait_idle(self) -> None:
        if self._turn is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._turn)

    def _settings(self) -> TurnSettings:
        return TurnSettings(
            model=self.config.model,
            system=self._system,
            max_turns=self.config.max_turns,
            max_tokens=self.config.max_tokens,
            context_window=self.config.context_window,
            compact_threshold=self.config.compact_threshold,
        )

    async def _run(self, blocks: list[Block], abort: Abort) -> StopReason:
        """One turn, framed in the transcript by its start and end lines (a replay shows how each turn ended)."""
        try:
            return await self._framed(blocks, abort)
        finally:
            undo, self._for_turn = self._for_turn, []
            for each in undo:
                each()

    async def _framed(self, blocks: list[Block], abort: Abort) -> StopReason:
        self.turn_id = new_turn_id()
        self.checkpoints.turn_started(self.turn_id)
        if self.transcript is None:
            return await self._run_prompt(blocks, abort)
        self.transcript.turn_started(self.turn_id)
        try:
            stop = await self._run_prompt(blocks, abort)
        except asyncio.CancelledError:
            self.transcript.turn_ended("cancelled")
            raise
        except Exception as error:
            self.transcript.turn_ended(None, str(error) or type(error).__name__)
            raise
        self.transcript.turn_ended(stop)
        return stop

    async def _run_prompt(self, blocks: list[Block], abort: Abort) -> StopReason:
        await self._settle_trust()
        first = blocks[0].get("text", "") if blocks and blocks[0].get("type") == "text" else ""
        parsed = commands.parse(str(first))
        mcp = self.toolset.mcp
        if parsed is not None and mcp is not None and mcp.has_command(parsed[0]):
            outcome = await mcp.run_command(*parsed)
            if outcome.blocks is None:
                self.frontend.emit(TextDelta(outcome.reply or ""))
                return "end_turn"
            blocks = [*outcome.blocks, *blocks[1:]]
        elif parsed is not None and parsed[0] in self.toolset.commands:
            name, arguments = parsed
            command = self.toolset.commands[name]
            skill = self.toolset.skills.get(command.skill) if command.skill else None
            if skill is not None:
                text = commands.skill_prompt(skill, arguments)
                if text is None:
                    self.frontend.emit(TextDelta(f"The skill {skill.name} cannot be read now."))
                    return "end_turn"
                if skill.allowed_tools and not skill.fork:
                    self._allow_for_turn(skill.allowed_tools, skill.path, skill.source == "project")
                blocks = [{"type": "text", "text": text}, *blocks[1:]]
            elif command.template is None:
                return await commands.run_builtin(self, name, arguments, abort)
            else:
                blocks = [{"type": "text", "text": command.expand(arguments)}, *blocks[1:]]
        return await self._turn_for(blocks, abort)

    async def _settle_trust(self) -> None:
        """The folder's own settings nobody has answered yet: asked before anything of the turn runs."""
        before = self.engine.mode
        await self.setup.settle_trust(self.frontend.ask_trust if self.frontend.interactive else None,
                                      lambda text: self.frontend.emit(Notice(text, "warning")),
                                      mode_chosen=self.config.permission_mode is not None)
        if self.engine.mode != before:
            self.announce_mode()

    async def compact(self, abort: Abort, instructions: str = "") -> bool:
        """Summarize the history and continue from the summary (`/compact`). False when aborted."""
        settings = self._settings()
        return await compact_conversation(
            self.conversation, model=self.model, model_name=settings.model, system=settings.system,
            tools=offered_schemas(self._environment(abort), self.conversation.messages), abort=abort,
            instructions=instructions,
        )

    def clear(self) -> None:
        """Start over with an empty conversation (`/clear`); the transcript keeps what came before."""
        self.conversation.replace([])
        self.read_files.clear()

    @property
    def mode(self) -> str:
        return self.engine.mode

    @property
    def model_name(self) -> str:
        return self.config.model

    def set_model(self, model: str) -> None:
        """The model of this session's next requests (other sessions keep theirs)."""
        self.config = self.config.model_copy(update={"model": model})

    def set_mode(self, mode: str, *, announce: bool = True) -> None:
        """Raises PermissionModeError for an unknown mode or a disabled bypassPermissions."""
        self.engine.set_mode(mode)
        if announce:
            self.announce_mode()

    async def sync_mcp(self) -> None:
        """At a turn's start: the MCP servers' tools and instructions as of now (bridge/toolset.py)."""
        tell = lambda text: self.frontend.emit(Notice(text, "info"))  # noqa: E731
        instructions = await self.toolset.sync_mcp(self.conversation.messages, tell)
        if instructions is not None:
            self._system = [*self.setup.system, *([{"type": "text", "text": instructions}] if instructions else [])]

    def announce_mode(self) -> None:
        self.frontend.emit(ModeChanged(self.engine.mode))

    def exit_plan_mode(self) -> None:
        self.engine.exit_plan_mode()
        self.frontend.emit(ModeChanged(self.engine.mode))

    def apply(self, effect: Effect) -> None:
        """A finished tool call's effect on the session."""
        match effect:
            case PlanChanged(entries):
                done = bool(entries) and all(entry.status == "completed" for entry in entries)
                self.plan = [] if done else list(entries)  # as Claude Code: the next plan starts fresh
                self.frontend.emit(PlanUpdate(list(entries)))
            case LeavePlanMode():
                self.exit_plan_mode()
            case AllowForTurn(rules, source, project):
                self._allow_for_turn(rules, source, project)
            case _:
                assert_never(effect)

    def _allow_for_turn(self, rules: tuple[str, ...], source: Path, project: bool) -> None:
        """A skill's `allowed-tools` for the rest of the turn; a folder's own skill's only once it is trusted."""
        if project:
            file = source.relative_to(self.cwd).as_posix() if source.is_relative_to(self.cwd) else str(source)
            inert = [r for r in rules if not self.setup.trust.admits(TrustItem(file, "allow", r))]
            if inert:
                self.frontend.emit(Notice(f"{file} asks to allow {', '.join(inert)} without asking; this folder's "
                                          "skills are not trusted, so each call still asks.", "warning"))
                return
        self._for_turn.append(self.engine.allow_for_now(rules))

    def sidechain(self, tool_call_id: str) -> list[Message] | None:
        """The stored history of the sub-agent the call `tool_call_id` started, if any (for a replay)."""
        directory = self._sidechains()
        return sidechain_messages(directory, tool_call_id) if directory is not None else None

    def _sidechains(self) -> Path | None:
        return self.data_dir / "agents" if self.transcript is not None else None

    def _agent_host(self, environment: str) -> AgentHost:
        return AgentHost(
            model=self.model, settings=self._settings, environment=environment, tools=lambda: self.toolset.tools,
            deferred=lambda: self.toolset.deferred, unavailable=self.toolset.unavailable, policy=self.policy,
            hooks=self.engine.hooks, prompter=self.frontend.prompter, emit=self.frontend.emit,
            context=lambda: self._tool_context(Abort()),
            running=self.running, roll_up=self._roll_up, sidechains=self._sidechains(), steps=self._steps.under,
        )

    def _roll_up(self, report: UsageReport) -> UsageReport:
        """A sub-agent's response, counted in the session's totals: the report the editor gets for it."""
        usage = Usage(report.input_tokens, report.output_tokens, report.cache_read_tokens, report.cache_write_tokens)
        self.conversation.add(usage, report.cost_usd)
        return dataclasses.replace(report, context_used=self.conversation.context_tokens,
                                   context_size=self.config.context_window,
                                   session_cost_usd=self.conversation.cost_usd)

    async def _turn_for(self, blocks: list[Block], abort: Abort) -> StopReason:
        with cancel_on_abort(abort):  # a cancel during an approval question or the start-up wait ends them
            await self.sync_mcp()
        env = self._environment(abort)
        return await run_turn(self.conversation, blocks, model=self.model, settings=self._settings(), tools=env,
                              abort=abort)

    def _environment(self, abort: Abort) -> ToolEnvironment:
        return ToolEnvironment(
            tools=self.toolset.tools,
            policy=self.policy,
            prompter=self.frontend.prompter,
            emit=self.frontend.emit,
            context=lambda _use_id: self._tool_context(abort),
            apply=self.apply,
            held_back=self.toolset.deferred.held_back,
            unavailable=self.toolset.unavailable,
            running=self.running,
            notifications=self.subagents.main.drain,
            hooks=self.engine.hooks,
            steps=self._steps,
        )

    def _tool_context(self, abort: Abort) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            abort=abort,
            data_dir=self.data_dir,
            read_files=self.read_files,
            documents=self.frontend.documents,
            services=self.services,
            read_guard=self.engine.read_guard(),  # files: Grep/Glob results checked against the rules (lead: keep)
        )


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:20]}"


def new_turn_id() -> str:
    """A prompt's id: in its transcript's turn line and its checkpoints, what a rewind or a fork names."""
    return f"turn_{uuid.uuid4().hex[:16]}"
