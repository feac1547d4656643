"""Every way a model stream breaks ends with one clear message, keeps the streamed text, leaves a valid history,
and the next prompt works — through the real protocol, with the offline API playing each fault."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bridge.offline.validation import history_errors
from tests.e2e.harness import Editor, running_editor, text_response

ANSWER = "The first part of an answer that is cut off before the end, as streams sometimes are."
NOT_FOR_PEOPLE = re.compile(
    r"ExceptionGroup|TaskGroup|Traceback|sub-exception|\b\w+(Error|Exception)\(|"
    r"\b[A-Z]\w*(Error|Exception)\b|message_stop|content_block_"
)


def faulty(fault: dict[str, Any], text: str = ANSWER) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text, "chunks": 8}], "stop_reason": "end_turn", "fault": fault}


async def _failed_prompt(editor: Editor, sid: str) -> str:
    with pytest.raises(Exception) as caught:
        await editor.prompt(sid, "tell me")
    return str(caught.value)


def _assert_human(message: str) -> None:
    assert not NOT_FOR_PEOPLE.search(message), message
    assert "send your message again" in message, message


async def _assert_recovers(editor: Editor, sid: str, streamed: str) -> None:
    """The next prompt works, and the request it makes carries the streamed text in a valid history."""
    before = editor.text(sid)
    assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
    assert editor.text(sid)[len(before) :] == "recovered"
    messages = editor.last_request_messages()
    assert history_errors(messages, tools=editor.model.valid_requests[-1].body.get("tools")) == []
    assert messages[1]["role"] == "assistant"
    assert "".join(b.get("text", "") for b in messages[1]["content"]) == streamed
    assert editor.model.rejected == []


# fault -> what the message says (one clear sentence a person can act on)
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "garbage JSON in a data line": ({"type": "garbage", "after_events": 5}, "was not valid JSON"),
    "a truncated event": ({"type": "truncated_event", "after_events": 5}, "ended before it was complete"),
    "a block that never closes": ({"type": "unclosed_block"}, "text block that never finished"),
    "an error event": (
        {"type": "sse_error", "after_events": 5, "error_type": "overloaded_error", "message": "Overloaded"},
        "reported an error mid-response: Overloaded",
    ),
    "a dropped connection": ({"type": "drop", "after_events": 5}, "dropped mid-response"),
    "a stalled connection": ({"type": "stall", "after_events": 5}, "sent nothing for 1 s"),
}


@pytest.mark.parametrize("case", list(FAULTS))
async def test_a_broken_stream_ends_with_one_clear_message(workspace: Path, data_dir: Path, case: str) -> None:
    fault, says = FAULTS[case]
    scenario = {"responses": [faulty(fault), text_response("recovered")]}
    async with running_editor(scenario, workspace, data_dir, env={"AGENT_BRIDGE_STALL_TIMEOUT": "1"}) as editor:
        sid = await editor.new_session()
        message = await _failed_prompt(editor, sid)
        assert says in message, message
        _assert_human(message)
        streamed = editor.text(sid)
        assert streamed and ANSWER.startswith(streamed), streamed
        await _assert_recovers(editor, sid, streamed)


async def test_an_unknown_event_type_is_ignored(workspace: Path, data_dir: Path) -> None:
    """The API may add event types; like the SDK, the bridge skips what it does not know."""
    scenario = {
        "responses": [
            faulty({"type": "unknown_event", "after_events": 4, "name": "future_event"}),
            text_response("recovered"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "tell me") == {"stopReason": "end_turn"}
        assert editor.text(sid) == ANSWER
        await _assert_recovers(editor, sid, ANSWER)


async def test_a_tool_call_that_never_closes_does_not_run(workspace: Path, data_dir: Path) -> None:
    marker = workspace / "ran"
    response = {
        "content": [
            {"type": "text", "text": "Running it."},
            {"type": "tool_use", "name": "Bash", "input": {"command": f"touch {marker}"}},
        ],
        "stop_reason": "tool_use",
        "fault": {"type": "unclosed_block"},
    }
    async with running_editor({"responses": [response, text_response("recovered")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        message = await _failed_prompt(editor, sid)
        assert "tool use block that never finished" in message, message
        _assert_human(message)
        assert not marker.exists() and editor.permission_requests == []
        await _assert_recovers(editor, sid, "Running it.")


async def test_the_stream_stays_kept_across_a_session_load(workspace: Path, data_dir: Path) -> None:
    """The partial answer is in the stored history too: a new process's session/load replays it."""
    scenario = {"responses": [faulty({"type": "garbage", "after_events": 5})]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await _failed_prompt(editor, sid)
        streamed = editor.text(sid)
    assert streamed
    async with running_editor({"responses": [text_response("recovered")]}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
        assert editor.text(sid) == streamed
