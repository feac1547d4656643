"""The query loop: stream -> tools -> results -> repeat, with the seed's interrupt semantics.

Checkpoints where the signal is looked at: the HTTP request/stream (cancelled at once), between the
end of a response and the start of its tools, and before each tool call starts. Whatever happens, the
history is left valid: partial text kept, every tool_use answered, the marker added for `ctrl-c`.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, ParamSpec

import anyio

from bridge.abort import Abort, AbortReason, cancel_on_abort
from bridge.errors import cause_text
from bridge.loop.compact import compact_conversation
from bridge.loop.conversation import Conversation
from bridge.loop.events import LoopEvent, Notice, RetryWait, TextDelta, ThinkingDelta, UsageReport
from bridge.loop.executor import ToolEnvironment, ToolExecutor, hook_stop_scope
from bridge.messages import (
    EPHEMERAL,
    MARKER,
    MARKER_TOOL_USE,
    Block,
    Message,
    repair_pairing,
    text_block,
    thinking_fits,
    tool_uses,
    user_message,
    with_cache_breakpoints,
    within_limits,
)
from bridge.model.pricing import CONTEXT_WINDOW, cost_usd
from bridge.model.types import (
    BlockComplete,
    BlockDelta,
    ModelClient,
    ModelError,
    ModelRequest,
    ResponseComplete,
    Retrying,
    Usage,
)
from bridge.permissions.hooks import HookOutcome

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


@dataclass
class TurnSettings:
    model: str
    system: list[Block]
    max_turns: int = 50
    max_tokens: int = 16_000
    context_window: int = CONTEXT_WINDOW
    compact_threshold: float = 0.8  # of the context window; 0 disables automatic compaction
    extra: dict[str, object] = field(default_factory=dict)
    # The hooks a turn runs: a sub-agent's prompt comes from its parent (no UserPromptSubmit) and its end is a
    # `SubagentStop`, as in Claude Code.
    prompt_hook: str | None = "UserPromptSubmit"
    stop_hook: str = "Stop"


@dataclass
class _Response:
    """One assistant response as it streams."""

    blocks: dict[int, Block] = field(default_factory=dict)
    partial: dict[int, Block] = field(default_factory=dict)  # blocks still streaming: text/thinking so far
    stop_reason: str | None = None
    usage: Usage | None = None

    def message(self) -> Message | None:
        """What is kept in history: complete blocks, plus streamed text of an unfinished text block.
        An unfinished tool_use (it never ran) and unsigned thinking (the API rejects it) are dropped."""
        kept: list[Block] = []
        for index in sorted(self.blocks.keys() | self.partial.keys()):
            block = self.blocks.get(index)
            if block is None:
                part = self.partial[index]
                if part["type"] == "text" and part["text"].strip():
                    kept.append(text_block(part["text"]))
                continue
            if block["type"] == "thinking" and not block.get("signature"):
                continue
            if block["type"] == "text" and not block.get("text", "").strip():
                continue
            kept.append(block)
        return {"role": "assistant", "content": kept} if kept else None


def request_tools(tools: ToolEnvironment, history: list[Message]) -> tuple[list[dict[str, Any]], set[str]]:
    """The tool definitions a request sends, and the names the model may call from it.

    Every tool but the held-back ones (deferred, not loaded), and besides them every other name a `tool_use` of
    the history uses, so that no request names an undeclared tool (the API rejects that): a held-back tool
    the model called anyway goes with its schema, a name no tool has (made up, or a stored history's tool that
    is gone) with a stand-in that says it is not available. The cache breakpoint goes on the last (tools,
    system and the latest message are the three breakpoints)."""
    held_back = tools.held_back()
    offered = [name for name in tools.tools if name not in held_back]
    schemas = [tools.tools[name].schema() for name in offered]
    declared = set(offered)
    for name in used_tool_names(history):
        if name in declared:
            continue
        declared.add(name)
        tool = tools.tools.get(name)
        if tool is not None:
            offered.append(name)
            schemas.append(tool.schema())
        else:
            schemas.append(stand_in_schema(name, tools.unavailable.get(name)))
    if schemas:
        schemas[-1] = {**schemas[-1], "cache_control": EPHEMERAL}
    return schemas, set(offered)


def offered_schemas(tools: ToolEnvironment, history: list[Message]) -> list[dict[str, Any]]:
    return request_tools(tools, history)[0]


def used_tool_names(history: list[Message]) -> list[str]:
    """The tool names the history's `tool_use` blocks name, in order of first use."""
    names = (block.get("name") for message in history for block in tool_uses(message))
    return list(dict.fromkeys(name for name in names if isinstance(name, str)))


def stand_in_schema(name: str, why: str | None) -> dict[str, Any]:
    """The definition of a tool this session does not have, kept because the history calls it."""
    reason = why or "no such tool"
    return {
        "name": name,
        "description": f"Not available in this session ({reason}). Do not call it.",
        "input_schema": {"type": "object"},
    }


_P = ParamSpec("_P")


def _in_hook_stop_scope(turn: Callable[_P, Awaitable[StopReason]]) -> Callable[_P, Awaitable[StopReason]]:
    """The turn runs with its record of a hook's `continue: false` (a sub-agent's turn shares its parent's)."""

    @functools.wraps(turn)
    async def scoped(*args: _P.args, **kwargs: _P.kwargs) -> StopReason:
        with hook_stop_scope():
            return await turn(*args, **kwargs)

    return scoped


@_in_hook_stop_scope
async def run_turn(
    conversation: Conversation,
    prompt: list[Block],
    *,
    model: ModelClient,
    settings: TurnSettings,
    tools: ToolEnvironment,
    abort: Abort,
) -> StopReason:
    """Run one user turn to its end. Raises `ModelError` (history left valid) when the API fails."""
    emit = tools.emit
    schemas = offered_schemas(tools, conversation.messages)
    # Compact before the new prompt joins the history, so the prompt itself is never summarized away.
    if not await _maybe_compact(conversation, model, settings, schemas, abort, emit):
        return "cancelled"  # the prompt never joined the history: nothing to mark
    extra: list[Block] = []
    if settings.prompt_hook is not None:
        text = "\n".join(str(b.get("text", "")) for b in prompt if b.get("type") == "text")
        submitted = HookOutcome()
        with cancel_on_abort(abort):  # a cancel stops the hook (its processes killed) and the turn
            submitted = await tools.hooks.run(settings.prompt_hook, {"prompt": text})
        if abort.aborted:
            return "cancelled"  # the prompt never joined the history: nothing to mark
        _report_hook_errors(submitted, settings.prompt_hook, emit)
        if submitted.blocked or submitted.stop:  # the prompt never reaches the model (nor the history)
            why = submitted.reason or submitted.stop_reason or "no reason given"
            emit(Notice(f"Prompt blocked by a hook: {why}", level="warning"))
            return "end_turn"
        extra = [text_block(f"[hook context] {note}") for note in submitted.additional_context]
    # News that came while no request was made (a background agent ended) goes before the prompt it preceded.
    conversation.append(user_message([*tools.notifications(), *prompt, *extra]))
    stop_hook_active = False
    system = [*settings.system[:-1], {**settings.system[-1], "cache_control": EPHEMERAL}] if settings.system else []
    for request_number in range(settings.max_turns):
        if request_number and (news := tools.notifications()):  # e.g. a background agent ended meanwhile
            conversation.append(user_message(news))
        # Each step: ToolSearch may have loaded tools, and the history may name new ones.
        schemas, offered = request_tools(tools, conversation.messages)
        if abort.aborted or (
            request_number and not await _maybe_compact(conversation, model, settings, schemas, abort, emit)
        ):
            _answer(conversation, [], abort)
            return "cancelled"
        messages = within_limits(repair_pairing(conversation.messages))
        fields = dict(settings.extra)
        if "thinking" in fields and not thinking_fits(messages):
            fields.pop("thinking")
        request = ModelRequest(
            model=settings.model,
            system=system,
            tools=schemas,
            messages=with_cache_breakpoints(messages),
            max_tokens=settings.max_tokens,
            extra=fields,
        )
        response = _Response()
        taken = tools.running.used  # the session's, every level's (a sub-agent's conversation is one of its own)
        taken.update(b["id"] for m in conversation.messages for b in tool_uses(m) if isinstance(b.get("id"), str))
        failure: ModelError | None = None
        # Tools follow the turn's signal, and are also stopped (as by `interrupt`) if the response is cut off.
        tool_abort = abort.child(lambda _reason: True)
        async with anyio.create_task_group() as group:
            executor = ToolExecutor(tools, tool_abort, group, offered)
            with cancel_on_abort(abort):
                try:
                    async for event in model.stream(request):
                        _on_event(event, response, executor, emit, taken)
                except ModelError as error:
                    failure = error
                except Exception as error:  # anything else that breaks the stream ends the response the same way
                    log.error("the model stream failed", exc_info=error)
                    failure = ModelError(
                        f"The model's response broke off: {cause_text(error)}. The partial answer is kept; send "
                        "your message again to continue.",
                        kind="api",
                    )
            message = response.message()
            if failure is not None:
                # The response was cut off: started `block` calls keep their real result; nothing new starts.
                tool_abort.abort(AbortReason.INTERRUPT)
            if message is not None:
                conversation.append(message)
            if response.usage is not None:
                _report_usage(conversation, settings, response.usage, emit)
            results = await executor.results() if executor.count else []
        _answer(conversation, results, abort)
        if failure is not None:
            raise failure
        if abort.aborted:
            return "cancelled"
        if executor.stopped is not None:  # a hook's `continue: false`: the results are in the history, and no more
            emit(Notice(f"A hook stopped the turn: {executor.stopped}", level="warning"))
            return "end_turn"
        if not results:
            outcome = HookOutcome()
            with cancel_on_abort(abort):
                outcome = await tools.hooks.run(settings.stop_hook, {"stop_hook_active": stop_hook_active})
            if abort.aborted:
                return "cancelled"
            _report_hook_errors(outcome, settings.stop_hook, emit)
            if outcome.blocked and outcome.reason and not outcome.stop and not stop_hook_active and not abort.aborted:
                stop_hook_active = True  # the hook wants more work: once, with its reason as the next message
                conversation.append(user_message([text_block(f"[Stop hook] {outcome.reason}")]))
                continue
            return _stop_reason(response.stop_reason)
    return "max_turn_requests"


def _report_hook_errors(outcome: HookOutcome, event: str, emit: Callable[[LoopEvent], None]) -> None:
    """A hook's failures, and its `systemMessage` for the user."""
    for error in outcome.errors:
        emit(Notice(f"{event} hook failed: {error}", level="warning"))
    for message in outcome.system_messages:
        emit(Notice(f"{event} hook: {message}", level="warning"))


async def _maybe_compact(
    conversation: Conversation,
    model: ModelClient,
    settings: TurnSettings,
    schemas: list[dict[str, Any]],
    abort: Abort,
    emit: Callable[[LoopEvent], None],
) -> bool:
    """Compact when the latest response's context passed the threshold. False when aborted meanwhile."""
    limit = settings.compact_threshold * settings.context_window
    if not settings.compact_threshold or conversation.context_tokens < limit or len(conversation.messages) < 2:
        return True
    emit(Notice(f"Context at {conversation.context_tokens:,} tokens: compacting the conversation"))
    return await compact_conversation(
        conversation, model=model, model_name=settings.model, system=settings.system, tools=schemas, abort=abort
    )


def _on_event(
    event: object,
    response: _Response,
    executor: ToolExecutor,
    emit: Callable[[LoopEvent], None],
    taken: set[str],
) -> None:
    """One stream event into the response; a complete tool_use starts (`taken`: the tool_use ids the history and
    this response have so far, see `unique_tool_id`)."""
    if isinstance(event, BlockDelta):
        part = response.partial.setdefault(event.index, {"type": event.block_type, "text": ""})
        part["text"] += event.text
        emit(TextDelta(event.text) if event.block_type == "text" else ThinkingDelta(event.text))
    elif isinstance(event, BlockComplete):
        response.partial.pop(event.index, None)
        response.blocks[event.index] = event.block
        if event.block["type"] == "tool_use":
            unique_tool_id(event.block, taken)
            executor.add(event.block)
    elif isinstance(event, ResponseComplete):
        response.stop_reason = event.stop_reason
        response.usage = event.usage
    elif isinstance(event, Retrying):
        emit(RetryWait(event.reason or event.message, event.attempt + 1, event.attempts, event.delay))


def unique_tool_id(block: Block, taken: set[str]) -> None:
    """`block` (a complete tool_use) given a fresh id when a call of this session already has its id, at any level:
    the history, this response, a sub-agent's, a stored sub-agent's (then taken too). The API refuses a history
    that repeats an id, so a model or gateway that reuses one (attack round 17) would make every later request of
    the session fail, and a card keyed by it would take another call's result (rounds 18, 19); the call is the
    model's all the same, so it runs, and its result goes back under the new id (before anything has seen the old
    one: the executor, the editor and the history all get the new one). Refusing it would lose the call; dropping
    it would leave the model waiting for a result it never gets."""
    original = block["id"]
    if original in taken:
        block["id"] = f"toolu_bridge_{uuid.uuid4().hex}"
        log.warning(
            "the model's response reused the tool_use id %s (an earlier call has it): its %s call runs as %s",
            original,
            block.get("name"),
            block["id"],
        )
    taken.add(block["id"])


def _answer(conversation: Conversation, results: list[Block], abort: Abort) -> None:
    """What answers a step, and the marker rule, applied once. The step's tool results (in tool_use order)
    form one user message. After a cancel (not an `interrupt`: the new prompt is the context) the marker
    follows: in that same message as `[Request interrupted by user for tool use]` when tools were in
    flight, else `[Request interrupted by user]` as a message of its own."""
    content = list(results)
    if abort.aborted and abort.reason is not AbortReason.INTERRUPT:
        content.append(text_block(MARKER_TOOL_USE if results else MARKER))
    if content:
        conversation.append(user_message(content))


def _report_usage(
    conversation: Conversation, settings: TurnSettings, usage: Usage, emit: Callable[[LoopEvent], None]
) -> None:
    cost = cost_usd(settings.model, usage)
    conversation.record(usage, cost)
    emit(
        UsageReport(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            context_used=usage.context_tokens,
            context_size=settings.context_window,
            cost_usd=cost,
            session_cost_usd=conversation.cost_usd,
        )
    )


def _stop_reason(reason: str | None) -> StopReason:
    if reason in ("max_tokens", "refusal"):
        return reason  # type: ignore[return-value]
    return "end_turn"
