"""Sessions: one conversation each, one turn at a time; a new prompt interrupts the running turn.

A session knows nothing of JSON-RPC: its front end (the editor server, the terminal) gives it an
`emit` for loop events and a `prompter` for permission questions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge import commands
from bridge.abort import Abort, AbortReason
from bridge.commands import available_commands
from bridge.config import BridgeConfig
from bridge.loop.events import LoopEvent, ModeChanged, TextDelta, ToolCallStarted
from bridge.loop.executor import ToolEnvironment, started_event
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.loop.query import Conversation, StopReason, TurnSettings, compact_conversation, run_turn
from bridge.memory import memory_section
from bridge.messages import Block, Message
from bridge.model.types import ModelClient
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import PermissionModeError, parse_mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.prompt import system_prompt
from bridge.tools.base import AnyTool, DocumentSource, FileSnapshot, ToolContext
from bridge.tools.storage import bound_result
from bridge.tools.tool_search import DEFER_OVER, DeferredTools, ToolSearchTool, schema_chars
from bridge.transcript import Transcript

log = logging.getLogger(__name__)

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")


@dataclass
class Frontend:
    """What a session needs from whoever shows it."""

    emit: Callable[[LoopEvent], None]
    prompter: Prompter
    documents: DocumentSource = field(default_factory=DocumentSource)
    interactive: bool = True  # False: no one answers, every ask is a denial


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
        services: dict[str, Any],
        policy: PermissionPolicy | None = None,
        transcript: Transcript | None = None,
        history: list[Message] | None = None,
    ) -> None:
        self.id = session_id
        self.cwd = cwd
        self.config = config
        self.model = model
        self.tools = {tool.name: tool for tool in tools}
        self.deferred = DeferredTools()
        self._deferrable: list[str] = []
        self.frontend = frontend
        self.engine = PermissionEngine(
            cwd=cwd,
            settings=SettingsStore.for_project(cwd),
            mode=parse_mode(config.permission_mode) if config.permission_mode in MODES else None,
            session_rules=RuleSet.of(allow=config.allow, ask=config.ask, deny=config.deny),
            interactive=frontend.interactive,
        )
        self.policy: PermissionPolicy = policy or self.engine
        self.transcript = transcript
        self.conversation = Conversation(messages=list(history or []))
        if transcript is not None:
            self.conversation.on_message = transcript.append
            self.conversation.on_compact = transcript.restart
        self.commands = available_commands(cwd)
        self.read_files: dict[Path, FileSnapshot] = {}
        self.services = {**services, "exit_plan_mode": self.exit_plan_mode, "settings_env": self._settings_env}
        self.data_dir = config.data_dir / "sessions" / session_id
        self._system = system_prompt(cwd, memory=memory_section(cwd))
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
        first = blocks[0].get("text", "") if blocks and blocks[0].get("type") == "text" else ""
        parsed = commands.parse(str(first))
        if parsed is not None and parsed[0] in self.commands:
            name, arguments = parsed
            command = self.commands[name]
            if command.template is None:
                return await self._builtin(name, arguments, abort)
            blocks = [{"type": "text", "text": command.expand(arguments)}, *blocks[1:]]
        return await self._turn_for(blocks, abort)

    async def _builtin(self, name: str, arguments: str, abort: Abort) -> StopReason:
        say = self.frontend.emit
        conversation = self.conversation
        if name == "compact":
            before = len(conversation.messages)
            if before == 0:
                say(TextDelta("Nothing to compact yet."))
                return "end_turn"
            schemas = [t.schema() for name, t in self.tools.items() if name not in self.deferred.held_back()]
            done = await compact_conversation(
                conversation, model=self.model, settings=self._settings(), tools=schemas, abort=abort,
                instructions=arguments,
            )
            if not done:
                return "cancelled"
            size = len(conversation.messages[0]["content"][0]["text"])
            say(TextDelta(f"Compacted {before} messages into a summary of {size:,} characters."))
        elif name == "clear":
            conversation.replace([])
            self.read_files.clear()
            say(TextDelta("Started a new, empty conversation."))
        elif name == "cost":
            u = conversation.usage_total
            say(TextDelta(
                f"Session cost: ${conversation.cost_usd:.4f} — input {u.input_tokens:,}, output {u.output_tokens:,}, "
                f"cache read {u.cache_read_tokens:,}, cache write {u.cache_write_tokens:,} tokens."
            ))
        elif name == "status":
            say(TextDelta(
                f"Model: {self.config.model}\nMode: {self.mode}\nWorking directory: {self.cwd}\n"
                f"Context: {conversation.context_tokens:,} of {self.config.context_window:,} tokens\n"
                f"Messages: {len(conversation.messages)}"
            ))
        elif name == "mode":
            if not arguments:
                say(TextDelta(f"Mode: {self.mode} (one of {', '.join(MODES)})"))
            else:
                try:
                    self.set_mode(arguments)
                    say(TextDelta(f"Mode set to {self.mode}."))
                except PermissionModeError as error:
                    say(TextDelta(f"{error} (modes: {', '.join(MODES)})"))
        return "end_turn"

    @property
    def mode(self) -> str:
        return self.engine.mode

    def set_mode(self, mode: str, *, announce: bool = True) -> None:
        """Raises PermissionModeError for an unknown mode or a disabled bypassPermissions."""
        self.engine.set_mode(mode)
        if announce:
            self.announce_mode()

    def _settings_env(self) -> dict[str, str]:
        """The settings files' `env` (ours only: Claude Code's files give rules), reloaded when they change."""
        self.engine.settings.refresh()
        return self.engine.settings.env

    def add_tools(self, tools: list[AnyTool], *, deferrable: bool = False) -> list[str]:
        """Adds tools (an MCP server's); a name already taken is skipped. Returns the names added.

        `deferrable` tools are held back behind ToolSearch once their schemas pass `DEFER_OVER` characters
        in all (see bridge/tools/tool_search.py); until then they are sent like the core tools."""
        added = [tool.name for tool in tools if tool.name not in self.tools]
        self.tools.update({tool.name: tool for tool in tools if tool.name in added})
        if deferrable and added:
            self._deferrable += added
            candidates = [self.tools[name] for name in self._deferrable]
            if schema_chars(candidates) > DEFER_OVER:
                self.deferred.tools.update({tool.name: tool for tool in candidates})
                self.tools.setdefault(ToolSearchTool.name, ToolSearchTool(self.deferred))
        return added

    def describe_tool_use(self, block: Block) -> ToolCallStarted:
        """A stored tool_use as the editor saw it live (title, kind, locations): for a loaded session's replay."""
        return started_event(block, self.tools.get(block["name"]))

    def announce_mode(self) -> None:
        self.frontend.emit(ModeChanged(self.engine.mode))

    def exit_plan_mode(self) -> None:
        self.engine.exit_plan_mode()
        self.frontend.emit(ModeChanged(self.engine.mode))

    def settings_problems(self) -> list[str]:
        return [f"{issue.file}: {issue.message}" for issue in self.engine.errors]

    async def _turn_for(self, blocks: list[Block], abort: Abort) -> StopReason:
        settings = self._settings()
        env = ToolEnvironment(
            tools=self.tools,
            policy=self.policy,
            prompter=self.frontend.prompter,
            emit=self.frontend.emit,
            context=lambda _use_id: self._tool_context(abort),
            bound=self._bound,
            held_back=self.deferred.held_back,
            hooks=self.engine.hooks,
        )
        return await run_turn(self.conversation, blocks, model=self.model, settings=settings, tools=env, abort=abort)

    def _tool_context(self, abort: Abort) -> ToolContext:
        return ToolContext(
            cwd=self.cwd,
            abort=abort,
            data_dir=self.data_dir,
            read_files=self.read_files,
            documents=self.frontend.documents,
            services=self.services,
        )

    def _bound(self, text: str, limit: float, tool_use_id: str) -> str:
        return bound_result(text, limit=limit, data_dir=self.data_dir, tool_use_id=tool_use_id)


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex[:20]}"
