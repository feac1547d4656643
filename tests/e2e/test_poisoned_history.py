"""One bad prompt must not break every prompt after it (attack round 6): what the API would refuse is refused at the
door, a prompt the API refuses anyway is not kept, a lone surrogate can neither be stored nor sent, and a history
left by a cancel is one the API takes with thinking on. Each through the real protocol against the offline model,
whose request checker refuses what the Messages API refuses."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from bridge.transcript import load
from tests.e2e.harness import running_editor, text_response, tool_response

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
REFUSED = {
    "fault": {
        "type": "status",
        "status": 400,
        "error_type": "invalid_request_error",
        "message": "prompt is too long: 212000 tokens > 200000 maximum",
        "times": 1,
    }
}


def texts(messages: list[dict[str, Any]]) -> str:
    return json.dumps(messages)


def transcript_of(data_dir: Path, sid: str) -> Path:
    [path] = [p for p in data_dir.rglob(f"*{sid}*.jsonl")]
    return path


TOO_LARGE = {
    "fault": {
        "type": "status",
        "status": 413,
        "error_type": "request_too_large",
        "message": "Request exceeds the maximum allowed number of bytes.",
        "times": 1,
    }
}


@pytest.mark.parametrize("refusal", [REFUSED, TOO_LARGE], ids=["400", "413"])
async def test_a_prompt_the_api_refuses_is_not_kept(workspace: Path, data_dir: Path, refusal: dict[str, Any]) -> None:
    """A 400 (or a 413: too large) on the turn's first request: the prompt leaves the history (memory and
    transcript), the error says so, and the next prompt is answered without it."""
    scenario = {"responses": [refusal, text_response("fine"), text_response("still fine")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        with pytest.raises(Exception) as caught:
            await editor.prompt(sid, "the refused prompt")
        assert refusal["fault"]["message"] in str(caught.value) and "not kept" in str(caught.value)
        assert await editor.prompt(sid, "the next one") == {"stopReason": "end_turn"}
        sent = texts(editor.last_request_messages())
        assert "the next one" in sent and "the refused prompt" not in sent
        assert await editor.prompt(sid, "and one more") == {"stopReason": "end_turn"}
        assert "the refused prompt" not in texts(editor.last_request_messages())
    stored = texts(load(transcript_of(data_dir, sid)).messages)
    assert "the next one" in stored and "the refused prompt" not in stored


@pytest.mark.parametrize(
    ("image", "error"),
    [
        ({"mimeType": "image/png", "data": "A" * (5 * 1024 * 1024 + 4)}, "5 MB"),
        ({"mimeType": "image/png", "data": "!!!! not base64"}, "not valid base64"),
        ({"mimeType": "image/png", "data": base64.b64encode(b"plain text, no image").decode()}, "not a PNG"),
    ],
    ids=["too large", "not base64", "not an image"],
)
async def test_an_image_the_api_would_refuse_is_refused_at_the_door(
    workspace: Path, data_dir: Path, image: dict[str, str], error: str
) -> None:
    async with running_editor({"responses": [text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        prompt = [{"type": "text", "text": "look"}, {"type": "image", **image}]
        with pytest.raises(Exception, match=error):
            await editor.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert '"image"' not in texts(editor.last_request_messages())
        assert editor.model.rejected == []


async def test_too_many_images_and_a_misnamed_type(workspace: Path, data_dir: Path) -> None:
    """101 images in a prompt: refused (the API takes 100 a request). A PNG the editor called JPEG goes as PNG."""
    async with running_editor({"responses": [text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        many = [{"type": "image", "mimeType": "image/png", "data": PNG}] * 101
        with pytest.raises(Exception, match="at most 100 images"):
            await editor.request("session/prompt", {"sessionId": sid, "prompt": many})
        misnamed = [{"type": "text", "text": "this?"}, {"type": "image", "mimeType": "image/jpeg", "data": PNG}]
        assert await editor.request("session/prompt", {"sessionId": sid, "prompt": misnamed}) == {
            "stopReason": "end_turn"
        }
        [image] = [b for b in editor.last_request_messages()[-1]["content"] if b.get("type") == "image"]
        assert image["source"]["media_type"] == "image/png"
        assert editor.model.rejected == []


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": None},
        {"type": "text", "text": ["a"]},
        {"type": "resource", "resource": "str"},
        {"type": "resource", "resource": {"uri": "file:///x", "text": 5}},
        {"type": "resource_link", "uri": 7},
        "not a block",
    ],
)
async def test_a_malformed_content_block_is_invalid_params(workspace: Path, data_dir: Path, block: Any) -> None:
    async with running_editor({"responses": [text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        with pytest.raises(Exception, match=r"Invalid params: prompt\.0"):
            await editor.request("session/prompt", {"sessionId": sid, "prompt": [block]})
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert "None" not in texts(editor.last_request_messages())


async def test_a_lone_surrogate_is_stored_and_sent_as_a_replacement_character(workspace: Path, data_dir: Path) -> None:
    """An editor selection cut mid-emoji (`\\ud83d` alone) once failed the prompt, then every prompt after it,
    since the history in memory could no longer be sent."""
    scenario = {"responses": [text_response("one"), text_response("two")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        prompt = [
            {"type": "text", "text": "hi \ud800 there"},
            {"type": "resource", "resource": {"uri": "file:///a.py", "text": "print('ok') # \ud83d"}},
        ]
        assert await editor.request("session/prompt", {"sessionId": sid, "prompt": prompt}) == {
            "stopReason": "end_turn"
        }
        assert "hi \ufffd there" in editor.model.valid_requests[-1].raw.decode()
        assert await editor.prompt(sid, "next") == {"stopReason": "end_turn"}
        assert editor.model.rejected == []
    stored = load(transcript_of(data_dir, sid)).messages
    assert "hi \ufffd there" in json.dumps(stored, ensure_ascii=False)


async def test_thinking_turned_on_after_a_cancelled_command_is_taken(workspace: Path, data_dir: Path) -> None:
    """A command cancelled, thinking turned on, a prompt: the history ends in an assistant message with a
    tool_use and no thinking, which the API refuses with thinking on; that request goes without thinking."""
    scenario = {
        "responses": [
            tool_response(("Bash", {"command": "echo go; sleep 30"})),
            text_response("answered"),
            text_response("answered again"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        running = editor.start_prompt(sid, "run it")
        await editor.wait_for_output(sid, "go")
        editor.cancel(sid)
        assert await running == {"stopReason": "cancelled"}
        params = {"sessionId": sid, "configId": "thought_level", "value": "high"}
        await editor.request("session/set_config_option", params)
        assert await editor.prompt(sid, "now think") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "and again") == {"stopReason": "end_turn"}
        assert editor.model.rejected == []
        # the request after that one (a complete history) carries thinking again
        assert "thinking" in editor.model.valid_requests[-1].body
