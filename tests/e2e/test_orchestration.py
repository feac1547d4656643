"""Tool orchestration over the protocol: parallel safe calls, early start, stored results, and what a
new prompt does to `cancel` tools mid-turn."""

from __future__ import annotations

import asyncio
import http.server
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.messages import INTERRUPTED_RESULT
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response


async def test_two_read_only_calls_in_one_message_overlap(workspace: Path, data_dir: Path) -> None:
    first, second = workspace / "p1", workspace / "p2"
    os.mkfifo(first)
    os.mkfifo(second)
    calls = (("Read", {"file_path": str(first)}), ("Read", {"file_path": str(second)}))
    scenario = {"responses": [tool_response(*calls), text_response("both read")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "read both pipes")
        # Each Read waits until its pipe is written: both can only be running at once if they overlap.
        await poll(
            lambda: len([u for u in editor.of_kind("tool_call_update", sid) if u.get("status") == "in_progress"]) == 2,
            what="both calls running at once",
        )
        for pipe, text in ((second, "two"), (first, "one")):
            await asyncio.to_thread(pipe.write_text, text + "\n")
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "end_turn"}
        results = editor.last_request_messages()[-1]["content"]
        assert ["one" in str(results[0]["content"]), "two" in str(results[1]["content"])] == [True, True]
        assert editor.permission_requests == []


async def test_a_read_starts_before_the_response_finishes_streaming(workspace: Path, data_dir: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    response = {
        "content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": str(workspace / "a.txt")}},
            {"type": "text", "text": "z" * 60, "chunks": 60},
        ],
        "stop_reason": "tool_use",
        "delay_ms": 10,
    }
    async with running_editor({"responses": [response, text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "go")
        kinds = [
            (u["update"]["sessionUpdate"], u["update"].get("status")) for u in editor.updates if u["sessionId"] == sid
        ]
        done = kinds.index(("tool_call_update", "completed"))
        last_text = max(i for i, k in enumerate(kinds) if k[0] == "agent_message_chunk")
        assert done < last_text, "the Read finished while the model was still streaming"


async def test_a_large_result_is_stored_and_the_model_gets_a_preview(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("Bash", {"command": "seq 1 200000"})), text_response("big")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "count")
        content = str(editor.last_request_messages()[-1]["content"][0]["content"])
        assert len(content) < 40_000 and "\n1\n" in "\n" + content and "200000" in content
        assert "\n100000\n" not in content, "the middle is not sent"
        stored = next(Path(word.strip("()[].,")) for word in content.split() if str(data_dir) in word)
        assert "\n100000\n" in stored.read_text(), f"the full output is at {stored}"


class _Slow(http.server.BaseHTTPRequestHandler):
    release = threading.Event()

    def do_GET(self) -> None:
        self.release.wait(20)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"late")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_site() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        _Slow.release.set()
        server.shutdown()
        server.server_close()


async def test_a_new_prompt_stops_a_cancel_tool(workspace: Path, data_dir: Path, slow_site: str) -> None:
    fetch = ("WebFetch", {"url": slow_site, "prompt": "what is there"})
    scenario = {"responses": [tool_response(fetch), text_response("new turn")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        first = editor.start_prompt(sid, "fetch it")
        await poll(
            lambda: [u for u in editor.of_kind("tool_call_update", sid) if u.get("status") == "in_progress"],
            what="the fetch running",
        )
        second = editor.start_prompt(sid, "never mind, do this")
        assert await asyncio.wait_for(first, 10) == {"stopReason": "cancelled"}
        assert await asyncio.wait_for(second, 10) == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        result = messages[2]["content"][0]
        assert result["is_error"] and result["content"].startswith(INTERRUPTED_RESULT)
        assert [b["text"] for b in messages[2]["content"] if b["type"] == "text"] == ["never mind, do this"]


async def test_background_shells_belong_to_their_session(workspace: Path, data_dir: Path) -> None:
    mark = uuid.uuid4().hex
    scenario = {
        "responses": [
            tool_response(("Bash", {"command": f"echo {mark}; sleep 300", "run_in_background": True})),
            text_response("started it"),
            tool_response(("TaskOutput", {"task_id": "bash_1", "block": False})),
            text_response("looked"),
            tool_response(("TaskOutput", {"task_id": "bash_1", "block": False})),
            text_response("looked again"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        owner, other = await editor.new_session(), await editor.new_session()
        await editor.prompt(owner, "start the server in the background")
        await editor.prompt(other, "what does bash_1 print?")
        [peek] = editor.of_kind("tool_call", other)
        [denied] = [u for u in editor.tool_updates(peek["toolCallId"]) if u.get("status") == "failed"]
        assert "No background task with id 'bash_1'" in str(denied["content"]), denied
        await editor.prompt(owner, "and now?")
        read = editor.of_kind("tool_call", owner)[-1]
        assert read["rawInput"] == {"task_id": "bash_1", "block": False}
        await poll(lambda: mark in str(editor.tool_updates(read["toolCallId"])), what="the owner reading its shell")
