"""One update stream per session: what a turn streamed reaches the editor before its `session/prompt` answer,
also after `session/load` of a session that is live in this process."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.e2e.harness import Editor, poll, running_editor, text_response

FAST = {"content": [{"type": "text", "text": "tick " * 400, "chunks": 400}], "stop_reason": "end_turn", "delay_ms": 1}


def _assistant_text_after(messages: list[dict[str, Any]], prompt: str) -> str:
    """The assistant text that followed the user message holding `prompt` (the kept partial answer)."""
    for index, message in enumerate(messages):
        texts = [b.get("text") for b in message["content"] if b.get("type") == "text"]
        if message["role"] == "user" and prompt in texts:
            reply = messages[index + 1]
            assert reply["role"] == "assistant", messages
            return "".join(b["text"] for b in reply["content"] if b.get("type") == "text")
    raise AssertionError(f"{prompt!r} not in the request")


async def _cancelled_turn(editor: Editor, sid: str, prompt: str) -> str:
    """Run a turn, cancel it mid-stream, and return the text the editor had when the answer arrived."""
    start = len(editor.updates)
    seen_at_answer: list[int] = []
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": prompt}]}
    # The callback runs as the answer is handled, after every notification sent before it.
    future = editor.client.protocol.send_request(
        "session/prompt", params, callback=lambda _result: seen_at_answer.append(len(editor.updates))
    )
    await poll(lambda: "tick" in _chunks(editor, sid, start, len(editor.updates)), what="the answer streaming")
    editor.cancel(sid)
    assert await asyncio.wait_for(asyncio.wrap_future(future), 15) == {"stopReason": "cancelled"}
    [end] = seen_at_answer
    return _chunks(editor, sid, start, end)


def _chunks(editor: Editor, sid: str, start: int, end: int) -> str:
    return "".join(
        u["update"]["content"]["text"]
        for u in editor.updates[start:end]
        if u["sessionId"] == sid and u["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_a_cancelled_turn_after_loading_a_live_session_streams_everything_before_its_answer(
    workspace: Path, data_dir: Path
) -> None:
    responses = [text_response("first answer")] + [FAST, text_response("noted")] * 3
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "first")
        assert "modes" in await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        for turn in range(3):  # a chunk may be pending at the cancel only by chance: three tries
            prompt = f"stream {turn}"
            shown = await _cancelled_turn(editor, sid, prompt)
            assert await editor.prompt(sid, f"after {turn}") == {"stopReason": "end_turn"}
            kept = _assistant_text_after(editor.last_request_messages(), prompt)
            assert kept and shown == kept, (
                f"the editor had {len(shown)} chars at the answer; the history keeps {len(kept)}"
            )
        assert editor.model.rejected == []
