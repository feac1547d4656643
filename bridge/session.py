"""Sessions: one conversation each, one turn at a time; a new prompt interrupts the running turn.

A session knows nothing of JSON-RPC: its front end (the editor server, the terminal) gives it an
`emit` for loop events and a `prompter` for permission questions.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from bridge import commands
from bridge.abort import Abort, AbortReason, cancel_on_abort
from bridge.agents.loader import load_catalog
from bridge.agents.runner import AgentHost, SubAgents, sidechain_messages
from bridge.commands import available_commands
from bridge.config import BridgeConfig
from bridge.display import Display, PlanEntry
from bridge.loop.compact import compact_conversation
from bridge.loop.conversation import Conversation
from bridge.loop.events import LoopEvent, ModeChanged, Notice, PlanUpdate, TextDelta, ToolCallStarted, UsageReport
from bridge.loop.executor import RunningCalls, ToolEnvironment, started_event, stored_display
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.loop.query import StopReason, TurnSettings, offered_schemas, run_turn, used_tool_names
from bridge.memory import load_memory
from bridge.messages import Block, Message
from bridge.model.types import ModelClient, Usage
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import MODES, parse_mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.trust import Ask as AskTrust
from bridge.permissions.trust import TrustPrompt
from bridge.prompt import environment_section, system_prompt
from bridge.tools.agent import AgentTool
from bridge.tools.base import (
    AnyTool,
    DocumentSource,
    Effect,
    FileSnapshot,
    LeavePlanMode,
    PlanChanged,
    Services,
    ToolContext,
)
from bridge.tools.sandbox import Sandbox
from bridge.tools.tool_search import DeferredTools, ToolSearchTool
from bridge.transcript import StoredTurn, Transcript, turns_of
from bridge.transcript import load as load_transcript

if TYPE_CHECKING:
    from bridge.mcp.manager import McpSession

log = logging.getLogger(__name__)


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
        settings: SettingsStore | None = None,
        policy: PermissionPolicy | None = None,
        transcript: Transcript | None = None,
        history: list[Message] | None = None,
    ) -> None:
        self.id = session_id
        self.cwd = cwd
        self.config = config
        self.model = model
        settings = settings or SettingsStore.for_project(cwd)
        self.agent_types = load_catalog(cwd, user_config_dir=settings.user_config_dir,
                                        claude_home=settings.claude_home)
        # The Agent tool lists the agent types as they were when the session started: its bytes never change.
        agent_tool = AgentTool([(a.name, a.description, a.tools_text()) for a in self.agent_types.types.values()])
        self.tools = {tool.name: tool for tool in [*tools, agent_tool]}
        self.deferred = DeferredTools()
        self.unavailable: dict[str, str] = {}  # tools the stored history calls that this session lacks, and why
        self.mcp: McpSession | None = None  # set by Agent.connect_mcp; released only when the session ends
        self._mcp_tools: list[str] = []
        self.frontend = frontend
        self.engine = PermissionEngine(
            cwd=cwd,
            settings=settings,
            mode=parse_mode(config.permission_mode) if config.permission_mode in MODES else None,
            session_rules=RuleSet.of(allow=config.allow, ask=config.ask, deny=config.deny),
            additional_dirs=[cwd / Path(d).expanduser() for d in config.additional_directories],
            interactive=frontend.interactive,
        )
        self.trust = TrustPrompt(settings, cwd)  # the folder's own settings wait for the user's trust
        self.sandbox = Sandbox.for_engine(self.engine)  # the OS sandbox under Bash, from the same rules
        self.engine.unsandboxed = lambda: self.sandbox.unavailable
        self.policy: PermissionPolicy = policy or self.engine
        self.transcript = transcript
        self.conversation = Conversation(messages=list(history or []))
        if transcript is not None:
            self.conversation.on_message = transcript.append
            self.conversation.on_compact = transcript.restart
            self.conversation.on_usage = transcript.usage
        self.commands = available_commands(cwd)
        self.read_files: dict[Path, FileSnapshot] = {}
        self.services = dataclasses.replace(services, sandbox=self.sandbox)  # the sandbox follows this engine
        self.plan: list[PlanEntry] = []  # the agent's todo list (cleared once every entry is completed)
        self.data_dir = config.data_dir / "sessions" / session_id
        loaded_memory = load_memory(cwd)
        memory = loaded_memory.section
        self.memory_skipped = loaded_memory.skipped  # told to the user with the settings problems
        self._base_system = self._system = system_prompt(cwd, memory=memory)
        self.running = RunningCalls()  # every level's running tool calls: one can be cancelled alone
        self.subagents = SubAgents(self._agent_host(environment_section(cwd) + (f"\n\n{memory}" if memory else "")),
                                   self.agent_types)
        self.services.agents = self.subagents.main
        self._turn: asyncio.Task[StopReason] | None = None
        self._abort: Abort | None = None
        self._start_lock = asyncio.Lock()

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
        """The session ends: its background agents stop (its turn is cancelled by whoever ends it)."""
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
        if self.transcript is None:
            return await self._run_prompt(blocks, abort)
        self.transcript.turn_started()
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
        if parsed is not None and self.mcp is not None and self.mcp.has_command(parsed[0]):
            outcome = await self.mcp.run_command(*parsed)
            if outcome.blocks is None:
                self.frontend.emit(TextDelta(outcome.reply or ""))
                return "end_turn"
            blocks = [*outcome.blocks, *blocks[1:]]
        elif parsed is not None and parsed[0] in self.commands:
            name, arguments = parsed
            command = self.commands[name]
            if command.template is None:
                return await commands.run_builtin(self, name, arguments, abort)
            blocks = [{"type": "text", "text": command.expand(arguments)}, *blocks[1:]]
        return await self._turn_for(blocks, abort)

    async def _settle_trust(self) -> None:
        """Before anything of the turn runs (its hooks included): ask about the folder's own settings nobody has
        answered yet; a permissive `defaultMode` just admitted applies if the session is still in its start mode."""
        ask = self.frontend.ask_trust if self.frontend.interactive else None
        admitted = await self.trust.before_turn(ask, lambda text: self.frontend.emit(Notice(text, "warning")))
        mode = self.engine.settings.default_mode
        if any(i.kind == "defaultMode" for i in admitted) and mode and self.config.permission_mode is None \
                and self.engine.mode == "default":
            with contextlib.suppress(Exception):  # bypass disabled: the mode stays
                self.set_mode(mode)

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
        """At a turn's start: the MCP servers' tools and instructions as of now (bridge/mcp/manager.py). They
        change only here, so every request of a turn has the same prefix; a change after the first request is
        said once (a notice). Past the deferral threshold the servers' tools wait behind ToolSearch."""
        if self.mcp is None:
            return
        await self.mcp.before_turn()
        self._mark_failed_servers()
        snapshot = self.mcp.snapshot()
        if snapshot is None:
            return
        for name in self._mcp_tools:
            self.tools.pop(name, None)
            self.deferred.tools.pop(name, None)
        offered = [t for t in [*snapshot.tools, *snapshot.deferrable] if t.name not in self.tools]
        self.tools.update({tool.name: tool for tool in offered})
        self._mcp_tools = [tool.name for tool in offered]
        for name in self._mcp_tools:
            self.unavailable.pop(name, None)  # its server came back
        if snapshot.defer:
            self.hold_back([t for t in snapshot.deferrable if t.name in self._mcp_tools])
        elif not self.deferred.tools:
            self.tools.pop(ToolSearchTool.name, None)
        extra = [{"type": "text", "text": snapshot.instructions}] if snapshot.instructions else []
        self._system = [*self._base_system, *extra]
        if snapshot.notice:
            self.frontend.emit(Notice(snapshot.notice, "info"))

    def _mark_failed_servers(self) -> None:
        """A history's MCP tools whose configured server never came up answer with the server's failure (not
        "no such tool"): the model hears why, and that it is the server, not the name."""
        from bridge.mcp.tools import name_part

        assert self.mcp is not None
        failed = {name_part(name): c.error for name, c in self.mcp.connections.items()
                  if c.state == "failed" and not c.ever_ready}
        for name in used_tool_names(self.conversation.messages):
            parts = name.split("__")
            if name not in self.tools and len(parts) >= 3 and parts[0] == "mcp" and parts[1] in failed:
                self.unavailable[name] = f"its MCP server could not start ({failed[parts[1]]})"

    def hold_back(self, tools: list[AnyTool]) -> None:
        """Tools the session has but does not send until the model loads them with ToolSearch (deferred)."""
        self.tools.update({tool.name: tool for tool in tools})
        self.deferred.tools.update({tool.name: tool for tool in tools})
        self.tools.setdefault(ToolSearchTool.name, ToolSearchTool(self.deferred))

    def refresh_commands(self) -> None:
        """The slash commands again (an MCP server's prompts came or went)."""
        provided = [commands.Command(c.name, c.description, c.hint) for c in self.mcp.commands()] if self.mcp else []
        self.commands = available_commands(self.cwd, provided)

    def missing_tools(self) -> list[str]:
        """Tools the history calls that this session does not have (an MCP server gone, renamed or failing; a
        tool that no longer exists): one warning per server or tool. The session goes on: requests keep
        declaring them (so the history stays valid) and a call to one answers that it is not connected."""
        warnings: list[str] = []
        by_server: dict[str, list[str]] = {}
        configured = {entry.name for entry in self.mcp.entries} if self.mcp is not None else set()
        for name in used_tool_names(self.conversation.messages):
            if name in self.tools or name in self.unavailable:
                continue
            parts = name.split("__")
            if len(parts) >= 3 and parts[0] == "mcp" and parts[1] in configured:
                continue  # its server is configured, and joins when it has started
            if len(parts) >= 3 and parts[0] == "mcp":
                by_server.setdefault(parts[1], []).append(name)
                self.unavailable[name] = f"its MCP server {parts[1]!r} is not connected in this session"
            else:
                self.unavailable[name] = "this tool does not exist in this session"
                warnings.append(f"Tool {name} of this session's history does not exist here; calls to it will fail.")
        for server, names in by_server.items():
            warnings.insert(0, f"MCP server {server!r} of this session's history is not connected: its tools "
                               f"{', '.join(names)} will answer that they are not connected.")
        return warnings

    def describe_tool_use(self, block: Block) -> ToolCallStarted:
        """A stored tool_use as the editor saw it live (title, kind, locations): for a loaded session's replay."""
        return started_event(block, self.tools.get(block["name"]))

    def stored_display(self, block: Block) -> list[Display]:
        """What a stored tool_use's call showed, as far as its input tells (a replayed Edit's diff)."""
        return stored_display(block, self.tools.get(block["name"]))

    def stored_turns(self) -> list[StoredTurn]:
        """The history since the last compaction as turns, with how each ended and what it cost (for a replay):
        read back from the transcript; without one, the prompts in the history are the only boundaries."""
        if self.transcript is not None:
            try:
                return load_transcript(self.transcript.path).turns
            except (OSError, ValueError) as error:
                log.warning("cannot read %s for the replay: %s", self.transcript.path, error)
        return turns_of(self.conversation.messages)

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
            case _:
                assert_never(effect)

    def settings_problems(self) -> list[str]:
        return [f"{issue.file}: {issue.message}" for issue in self.engine.errors] + self.sandbox.problems()

    def startup_notices(self) -> list[str]:
        """What the user should hear when the session opens: invalid settings, agent files and memory files
        skipped."""
        return ([f"Invalid settings (skipped): {problem}" for problem in self.settings_problems()]
                + [f"Invalid agent file (skipped): {problem}" for problem in self.agent_problems()]
                + [f"Memory file skipped: {problem}" for problem in self.memory_skipped])

    def agent_problems(self) -> list[str]:
        """Agent files that could not be used (reported like invalid settings; the others work)."""
        return list(self.agent_types.problems)

    def sidechain(self, tool_call_id: str) -> list[Message] | None:
        """The stored history of the sub-agent the call `tool_call_id` started, if any (for a replay)."""
        directory = self._sidechains()
        return sidechain_messages(directory, tool_call_id) if directory is not None else None

    def _sidechains(self) -> Path | None:
        return self.data_dir / "agents" if self.transcript is not None else None

    def _agent_host(self, environment: str) -> AgentHost:
        return AgentHost(
            model=self.model, settings=self._settings, environment=environment, tools=lambda: self.tools,
            deferred=lambda: self.deferred, unavailable=self.unavailable, policy=self.policy,
            hooks=self.engine.hooks, prompter=self.frontend.prompter, emit=self.frontend.emit,
            context=lambda: self._tool_context(Abort()),
            running=self.running, roll_up=self._roll_up, sidechains=self._sidechains(),
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
            tools=self.tools,
            policy=self.policy,
            prompter=self.frontend.prompter,
            emit=self.frontend.emit,
            context=lambda _use_id: self._tool_context(abort),
            apply=self.apply,
            held_back=self.deferred.held_back,
            unavailable=self.unavailable,
            running=self.running,
            notifications=self.subagents.main.drain,
            hooks=self.engine.hooks,
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
