"""Sessions: one conversation each, one turn at a time; a new prompt interrupts the running turn.

A session knows nothing of JSON-RPC: its front end (the editor server, the terminal) gives it an
`emit` for loop events and a `prompter` for permission questions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridge import commands
from bridge import session_wiring as wiring
from bridge.abort import Abort, cancel_on_abort
from bridge.agents.runner import SubAgents
from bridge.checkpoints.observer import CheckpointSteps
from bridge.checkpoints.recorder import Checkpoints
from bridge.config import BridgeConfig
from bridge.display import PlanEntry
from bridge.loop.conversation import Conversation
from bridge.loop.events import LoopEvent, Notice
from bridge.loop.executor import RunningCalls
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.loop.query import StopReason, run_turn
from bridge.messages import Block, Message
from bridge.model import thinking
from bridge.model.types import ModelClient, ModelError
from bridge.permissions.trust import Ask as AskTrust
from bridge.session_effects import SessionEffects
from bridge.session_id import new_session_id as new_session_id
from bridge.session_setup import SessionSetup
from bridge.tools.agent import AgentTool
from bridge.tools.base import AnyTool, DocumentSource, FileSnapshot, Services
from bridge.toolset import SessionTools
from bridge.transcript import Transcript, sidechain_tool_ids
from bridge.turns import Turns


@dataclass
class Frontend:
    """What a session needs from whoever shows it."""

    emit: Callable[[LoopEvent], None]
    prompter: Prompter
    documents: DocumentSource = field(default_factory=DocumentSource)
    interactive: bool = True  # False: no one answers, every ask is a denial
    ask_trust: AskTrust | None = None  # None: no one to ask whether the folder's own settings may take effect


class Session:
    """A conversation with its tools, permissions and sub-agents: it runs turns (bridge/turns.py keeps them one at a
    time), hands tool calls' effects to bridge/session_effects.py and slash commands to bridge/commands.py."""

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
        self.data_dir = config.data_dir / "sessions" / session_id
        self.system = setup.system  # the setup's, plus the MCP servers' instructions as of the last turn
        self.sidechains = self.data_dir / "agents" if transcript is not None else None  # sub-agents' histories
        self.running = RunningCalls()  # every level's running tool calls: one can be cancelled alone
        if history and self.sidechains is not None:  # a stored session: its sub-agents' ids are its cards' too
            self.running.used.update(sidechain_tool_ids(self.sidechains))
        self.checkpoints = Checkpoints.open(
            config.data_dir, cwd, session_id, tell=lambda text: self.frontend.emit(Notice(text, "warning"))
        )
        self.checkpoints.warm()  # the first snapshot's git runs while the rest is set up
        self.steps = CheckpointSteps(self.checkpoints)  # around every call, at every level (bridge/checkpoints)
        self.subagents = SubAgents(wiring.agent_host(self, setup.environment), setup.agent_types)
        self.services.agents = self.subagents.main
        self.thought_level = thinking.DEFAULT  # how much the model thinks first (bridge/model/thinking.py)
        self.turns = Turns(self._run, transcript, started=self.checkpoints.turn_started)
        self.effects = SessionEffects(cwd, self.engine, setup.trust.admits, self.turns, frontend.emit)

    @property
    def busy(self) -> bool:
        return self.turns.busy

    @property
    def turn_id(self) -> str | None:
        """The running (or last) turn's id: what a rewind names."""
        return self.turns.turn_id

    async def prompt(self, blocks: list[Block], told: Callable[[str], None] | None = None) -> StopReason:
        """Run a turn for `blocks`, interrupting a running one (bridge/turns.py); `told`: given its turn id."""
        return await self.turns.prompt(blocks, told)

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
        return self.turns.cancel(force=force)

    async def wait_idle(self) -> None:
        await self.turns.wait_idle()

    async def _run(self, blocks: list[Block], abort: Abort) -> StopReason:
        """What one turn does: the folder's trust settled, a slash command expanded (bridge/commands.py), then the
        loop's turn with the MCP servers' tools as of now."""
        await self._settle_trust()
        expanded = await commands.expand(self, blocks, abort)
        if isinstance(expanded, str):
            return expanded
        with cancel_on_abort(abort):  # a cancel during an approval question or the start-up wait ends them
            await self.sync_mcp()
        env = wiring.tool_environment(self, abort)
        settings = wiring.turn_settings(self)
        answered = _answers(self.conversation.messages)
        try:
            return await run_turn(
                self.conversation, expanded, model=self.model, settings=settings, tools=env, abort=abort
            )
        except ModelError as error:
            # Refused (400) before any answer: kept, the prompt would make every later request fail the same way.
            messages = self.conversation.messages
            if error.kind != "invalid_request" or not messages or messages[-1].get("role") != "user":
                raise
            if _answers(messages) > answered:
                raise
            self._forget_prompt()
            raise ModelError(
                f"{str(error).rstrip('.')}. Your message was not kept, so the next one starts without it: change it "
                "and send it again.",
                kind=error.kind,
                status=error.status,
            ) from None

    def _forget_prompt(self) -> None:
        """The running turn's prompt leaves the history: a rewind of the conversation to before it (its line in
        the transcript says so), or, without a transcript, the message dropped."""
        if self.transcript is not None and self.turns.turn_id is not None:
            from bridge.history import rewind_conversation

            rewind_conversation(self, self.turns.turn_id)
        else:
            self.conversation.messages = self.conversation.messages[:-1]

    async def _settle_trust(self) -> None:
        """The folder's own settings nobody has answered yet: asked before anything of the turn runs."""
        before = self.engine.mode
        await self.setup.settle_trust(
            self.frontend.ask_trust if self.frontend.interactive else None,
            lambda text: self.frontend.emit(Notice(text, "warning")),
            mode_chosen=self.config.permission_mode is not None,
        )
        if self.engine.mode != before:
            self.announce_mode()

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

    def set_thought_level(self, level: str) -> None:
        """How much the model thinks from the next turn on (a turn keeps what it started with: the API wants a
        tool loop's requests to agree on thinking). Raises ValueError for an unknown level."""
        if not thinking.is_level(level):
            raise ValueError(f"unknown thought level {level!r}")
        self.thought_level = level

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
            self.system = [*self.setup.system, *([{"type": "text", "text": instructions}] if instructions else [])]

    def announce_mode(self) -> None:
        self.effects.announce_mode()

    def allow_for_turn(self, rules: tuple[str, ...], source: Path, project: bool) -> None:
        self.effects.allow_for_turn(rules, source, project)

    @property
    def plan(self) -> list[PlanEntry]:
        return self.effects.plan


def _answers(messages: list[Message]) -> int:
    return sum(1 for message in messages if message.get("role") == "assistant")
