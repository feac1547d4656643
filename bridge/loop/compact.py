"""Compaction: the model summarizes the history into a compact continuation (task, decisions, files
touched, open todos). The transcript keeps the full history; the conversation continues from the summary."""

from __future__ import annotations

from bridge.abort import Abort, cancel_on_abort
from bridge.loop.conversation import Conversation
from bridge.messages import Block, Message, repair_pairing, text_block, user_message
from bridge.model.types import BlockDelta, ModelClient, ModelError, ModelRequest

SUMMARY_REQUEST = (
    "[compaction] Summarize the conversation so far so that the work can continue from the summary alone. "
    "Keep: the user's task and constraints, decisions made and why, every file read or changed (absolute "
    "paths) with what changed, commands run and their outcome, errors still open, and the todo list "
    "(done / in progress / pending). Be complete but terse; no preamble."
)
CONTINUATION = "This session continues from an earlier conversation that was compacted. Summary:\n\n"


def summary_prompt(instructions: str = "") -> str:
    return SUMMARY_REQUEST + (f"\nAlso: {instructions}" if instructions.strip() else "")


def continuation(summary: str) -> list[Message]:
    return [user_message([text_block(CONTINUATION + summary)])]


async def compact_conversation(
    conversation: Conversation,
    *,
    model: ModelClient,
    model_name: str,
    system: list[Block],
    tools: list[dict[str, object]],
    abort: Abort,
    instructions: str = "",
) -> bool:
    """Summarize the history and continue from the summary. False when aborted; raises ModelError."""
    history = repair_pairing([*conversation.messages, user_message([text_block(summary_prompt(instructions))])])
    request = ModelRequest(model=model_name, system=system, tools=list(tools), messages=history, max_tokens=8_000)
    parts: list[str] = []
    with cancel_on_abort(abort):
        async for event in model.stream(request):
            if isinstance(event, BlockDelta) and event.block_type == "text":
                parts.append(event.text)
    if abort.aborted:
        return False
    summary = "".join(parts).strip()
    if not summary:
        raise ModelError("Compaction failed: the model returned an empty summary.", kind="api")
    conversation.replace(continuation(summary))
    return True
