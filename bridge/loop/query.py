"""The query loop: stream -> tools -> results -> repeat, with the seed's interrupt semantics.

Checkpoints where the signal is looked at: the HTTP request/stream (cancelled at once), between the
end of a response and the start of its tools, and before each tool call starts. Whatever happens, the
history is left valid: partial text kept, every tool_use answered, the marker added for `ctrl-c`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from bridge.abort import Abort, AbortReason, cancel_on_abort
from bridge.loop.compact import continuation, summarize
from bridge.loop.events import LoopEvent, Notice, TextDelta, ThinkingDelta, UsageReport
from bridge.loop.executor import ToolEnvironment, ToolExecutor
from bridge.messages import (
    EPHEMERAL,
    MARKER,
    MARKER_TOOL_USE,
    Block,
    Message,
    repair_pairing,
    text_block,
    user_message,
    with_cache_breakpoints,
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
class Conversation:
    """The history and running totals of one session."""

    messages: list[Message] = field(default_factory=list)
    cost_usd: float = 0.0
    usage_total: Usage = field(default_factory=Usage)
    context_tokens: int = 0  # of the latest response: what the next request will at least carry
    on_message: Callable[[Message], None] = lambda _m: None  # transcript hook: each message when complete
    on_compact: Callable[[list[Message]], None] = lambda _m: None

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self.on_message(message)

    def replace(self, messages: list[Message]) -> None:
        """After compaction: continue from `messages` (the transcript keeps what came before)."""
        self.messages = list(messages)
        self.context_tokens = 0
        self.on_compact(self.messages)


async def compact_conversation(
    conversation: Conversation,
    *,
    model: ModelClient,
    settings: TurnSettings,
    tools: list[dict[str, Any]],
    abort: Abort,
    instructions: str = "",
) -> bool:
    """Summarize the history and continue from the summary. False when aborted."""
    summary = await summarize(
        conversation.messages, model=model, model_name=settings.model, system=settings.system, tools=tools,
        abort=abort, instructions=instructions,
    )
    if not summary:
        return False
    conversation.replace(continuation(summary))
    return True


@dataclass
class TurnSettings:
    model: str
    system: list[Block]
    max_turns: int = 50
    max_tokens: int = 16_000
    context_window: int = CONTEXT_WINDOW
    compact_threshold: float = 0.8  # of the context window; 0 disables automatic compaction
    extra: dict[str, object] = field(default_factory=dict)


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


def offered_schemas(tools: ToolEnvironment) -> list[dict[str, Any]]:
    """The tool definitions sent: every tool but the held-back (deferred, not loaded) ones, with the cache
    breakpoint on the last (tools, system and the latest message are the three breakpoints)."""
    held_back = tools.held_back()
    schemas = [tool.schema() for name, tool in tools.tools.items() if name not in held_back]
    if schemas:
        schemas[-1] = {**schemas[-1], "cache_control": EPHEMERAL}
    return schemas


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
    schemas = offered_schemas(tools)
    # Compact before the new prompt joins the history, so the prompt itself is never summarized away.
    if not await _maybe_compact(conversation, model, settings, schemas, abort, emit):
        return "cancelled"
    text = "\n".join(str(b.get("text", "")) for b in prompt if b.get("type") == "text")
    submitted = await tools.hooks.run("UserPromptSubmit", {"prompt": text})
    _report_hook_errors(submitted, "UserPromptSubmit", emit)
    if submitted.blocked:  # the prompt never reaches the model (nor the history)
        emit(Notice(f"Prompt blocked by a hook: {submitted.reason or 'no reason given'}", level="warning"))
        return "end_turn"
    extra = [text_block(f"[hook context] {note}") for note in submitted.additional_context]
    conversation.append(user_message([*prompt, *extra]))
    stop_hook_active = False
    system = [*settings.system[:-1], {**settings.system[-1], "cache_control": EPHEMERAL}] if settings.system else []
    for request_number in range(settings.max_turns):
        if abort.aborted:
            return _cancelled(conversation, abort, tools_ran=False)
        if request_number:
            schemas = offered_schemas(tools)  # ToolSearch may have loaded tools in the last step
        if request_number and not await _maybe_compact(conversation, model, settings, schemas, abort, emit):
            return _cancelled(conversation, abort, tools_ran=False)
        request = ModelRequest(
            model=settings.model,
            system=system,
            tools=schemas,
            messages=with_cache_breakpoints(repair_pairing(conversation.messages)),
            max_tokens=settings.max_tokens,
            extra=dict(settings.extra),
        )
        response = _Response()
        failure: ModelError | None = None
        # Tools follow the turn's signal, and are also stopped (as by `interrupt`) if the response is cut off.
        tool_abort = abort.child(lambda _reason: True)
        async with anyio.create_task_group() as group:
            executor = ToolExecutor(tools, tool_abort, group)
            with cancel_on_abort(abort):
                try:
                    async for event in model.stream(request):
                        _on_event(event, response, executor, emit)
                except ModelError as error:
                    failure = error
            message = response.message()
            if failure is not None:
                # The response was cut off: started `block` calls keep their real result; nothing new starts.
                tool_abort.abort(AbortReason.INTERRUPT)
            if message is not None:
                conversation.append(message)
            if response.usage is not None:
                _report_usage(conversation, settings, response.usage, emit)
            results = await executor.results() if executor.count else []
        if results:
            content: list[Block] = list(results)
            if abort.aborted and abort.reason is not AbortReason.INTERRUPT:
                content.append(text_block(MARKER_TOOL_USE))
            conversation.append(user_message(content))
        if failure is not None:
            raise failure
        if abort.aborted:
            if not results:
                return _cancelled(conversation, abort, tools_ran=False)
            return "cancelled"
        if not results:
            outcome = await tools.hooks.run("Stop", {"stop_hook_active": stop_hook_active})
            _report_hook_errors(outcome, "Stop", emit)
            if outcome.blocked and outcome.reason and not stop_hook_active and not abort.aborted:
                stop_hook_active = True  # the hook wants more work: once, with its reason as the next message
                conversation.append(user_message([text_block(f"[Stop hook] {outcome.reason}")]))
                continue
            return _stop_reason(response.stop_reason)
    return "max_turn_requests"


def _report_hook_errors(outcome: HookOutcome, event: str, emit: Callable[[LoopEvent], None]) -> None:
    for error in outcome.errors:
        emit(Notice(f"{event} hook failed: {error}", level="warning"))


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
    return await compact_conversation(conversation, model=model, settings=settings, tools=schemas, abort=abort)


def _on_event(event: object, response: _Response, executor: ToolExecutor, emit: Callable[[LoopEvent], None]) -> None:
    if isinstance(event, BlockDelta):
        part = response.partial.setdefault(event.index, {"type": event.block_type, "text": ""})
        part["text"] += event.text
        emit(TextDelta(event.text) if event.block_type == "text" else ThinkingDelta(event.text))
    elif isinstance(event, BlockComplete):
        response.partial.pop(event.index, None)
        response.blocks[event.index] = event.block
        if event.block["type"] == "tool_use":
            executor.add(event.block)
    elif isinstance(event, ResponseComplete):
        response.stop_reason = event.stop_reason
        response.usage = event.usage
    elif isinstance(event, Retrying):
        emit(Notice(event.message))


def _cancelled(conversation: Conversation, abort: Abort, *, tools_ran: bool) -> StopReason:
    """No tool results pending: the marker is a user message of its own (not for `interrupt`)."""
    if abort.reason is not AbortReason.INTERRUPT:
        conversation.append(user_message([text_block(MARKER_TOOL_USE if tools_ran else MARKER)]))
    return "cancelled"


def _report_usage(
    conversation: Conversation, settings: TurnSettings, usage: Usage, emit: Callable[[LoopEvent], None]
) -> None:
    conversation.context_tokens = usage.context_tokens
    cost = cost_usd(settings.model, usage)
    conversation.cost_usd += cost
    total = conversation.usage_total
    conversation.usage_total = Usage(
        total.input_tokens + usage.input_tokens,
        total.output_tokens + usage.output_tokens,
        total.cache_read_tokens + usage.cache_read_tokens,
        total.cache_write_tokens + usage.cache_write_tokens,
    )
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
