"""How a session's parts meet the loop: the settings a turn runs with, the tools' environment and context, the
sub-agents' host and a compaction, each said in the loop's own terms (bridge/loop) from what the session holds.

`Session` (bridge/session.py) keeps turns and owns the parts; this module only connects them, so a new part of
a tool call's world is wired here, not added to the session's methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bridge.abort import Abort
from bridge.agents.runner import AgentHost
from bridge.loop.compact import compact_conversation
from bridge.loop.events import UsageReport
from bridge.loop.executor import ToolEnvironment
from bridge.loop.query import TurnSettings, offered_schemas
from bridge.model import thinking
from bridge.tools.base import ToolContext

if TYPE_CHECKING:
    from bridge.session import Session


def turn_settings(session: Session) -> TurnSettings:
    """The next request's model, system prompt and limits (the thought level decides max_tokens and thinking)."""
    config = session.config
    max_tokens, extra = thinking.request_fields(session.thought_level, config.max_tokens)
    return TurnSettings(
        model=config.model,
        system=session.system,
        max_turns=config.max_turns,
        max_tokens=max_tokens,
        context_window=config.context_window,
        compact_threshold=config.compact_threshold,
        extra=extra,
    )


def tool_context(session: Session, abort: Abort) -> ToolContext:
    # read_guard: Grep/Glob results are checked against the rules file by file
    return ToolContext(
        cwd=session.cwd,
        abort=abort,
        data_dir=session.data_dir,
        read_files=session.read_files,
        documents=session.frontend.documents,
        services=session.services,
        read_guard=session.engine.read_guard(),
    )


def tool_environment(session: Session, abort: Abort) -> ToolEnvironment:
    """What the loop runs a turn's tool calls with: the session's tools as of now, its policy and effects."""
    toolset, frontend = session.toolset, session.frontend
    return ToolEnvironment(
        tools=toolset.tools,
        policy=session.policy,
        prompter=frontend.prompter,
        emit=frontend.emit,
        context=lambda _use_id: tool_context(session, abort),
        apply=session.effects.apply,
        held_back=toolset.deferred.held_back,
        unavailable=toolset.unavailable,
        running=session.running,
        notifications=session.subagents.main.drain,
        hooks=session.engine.hooks,
        steps=session.steps,
    )


def agent_host(session: Session, environment: str) -> AgentHost:
    """What sub-agents share with the session: its model and settings, tools, policy, questions and checkpoints."""
    toolset, frontend = session.toolset, session.frontend

    def roll_up(report: UsageReport) -> UsageReport:
        return session.conversation.roll_up(report, session.config.context_window)

    return AgentHost(
        model=session.model,
        settings=lambda: turn_settings(session),
        environment=environment,
        tools=lambda: toolset.tools,
        deferred=lambda: toolset.deferred,
        unavailable=toolset.unavailable,
        policy=session.policy,
        hooks=session.engine.hooks,
        prompter=frontend.prompter,
        emit=frontend.emit,
        context=lambda: tool_context(session, Abort()),
        running=session.running,
        roll_up=roll_up,
        sidechains=session.sidechains,
        steps=session.steps.under,
    )


async def compact(session: Session, abort: Abort, instructions: str = "") -> bool:
    """Summarize the history and continue from the summary (`/compact`). False when aborted."""
    settings = turn_settings(session)
    return await compact_conversation(
        session.conversation,
        model=session.model,
        model_name=settings.model,
        system=settings.system,
        tools=offered_schemas(tool_environment(session, abort), session.conversation.messages),
        abort=abort,
        instructions=instructions,
    )
