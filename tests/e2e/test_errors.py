"""Bad input and API failures: a clear error, nothing lost, and the process keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.offline import OfflineServer
from bridge.offline.validation import history_errors
from tests.e2e.harness import running_editor, server_command, server_env, text_response


async def _prompt_error(editor: Any, sid: str, text: str) -> str:
    with pytest.raises(Exception) as caught:
        await editor.prompt(sid, text)
    return str(caught.value)


async def test_overloaded_529_exhausted_is_a_clear_error(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [
            {"fault": {"type": "status", "status": 529, "retry_after": 0.01, "times": 3}},
            text_response("back again"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir, env={"AGENT_BRIDGE_MAX_RETRIES": "2"}) as editor:
        sid = await editor.new_session()
        message = await _prompt_error(editor, sid, "hello")
        assert "overloaded (529)" in message and "3 attempts" in message
        assert await editor.prompt(sid, "again") == {"stopReason": "end_turn"}
        assert editor.text(sid).endswith("\n\nback again"), "after the retries' notices, the answer"
        assert editor.model.rejected == []
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        assert "hello" in json.dumps(messages), "the failed prompt stays in history"


async def test_a_retry_is_a_session_update_the_editor_can_show_while_it_waits(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [{"fault": {"type": "status", "status": 529, "retry_after": 0.3}}, text_response("ok")]}
    async with running_editor(
        scenario, workspace, data_dir, env={"AGENT_BRIDGE_MAX_RETRIES": "3", "AGENT_BRIDGE_MAX_RETRY_WAIT": "5"}
    ) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        [notice] = [u for u in editor.of_kind("agent_message_chunk", sid) if "retry" in u.get("_meta", {})]
        assert notice["_meta"] == {
            "notice": "info",
            "retry": {"reason": "API overloaded", "attempt": 2, "attempts": 4, "delayMs": 300},
        }
        assert "API overloaded — retrying in 0.3 s (attempt 2/4)" in notice["content"]["text"]
        assert editor.text(sid).endswith("ok")


async def test_dropped_stream_keeps_partial_text_and_history_valid(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [
            {
                "fault": {"type": "drop", "after_events": 5},
                "content": [{"type": "text", "text": "partial answer that gets cut", "chunks": 8}],
            },
            text_response("recovered"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        message = await _prompt_error(editor, sid, "hello")
        assert "dropped mid-response" in message
        streamed = editor.text(sid)
        assert streamed, "some text was streamed before the drop"
        assert await editor.prompt(sid, "continue") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        assert messages[1]["role"] == "assistant" and messages[1]["content"][0]["text"] == streamed
        assert editor.model.rejected == []


async def test_authentication_401_says_what_to_fix(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [{"fault": {"type": "status", "status": 401}}, text_response("fine")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        message = await _prompt_error(editor, sid, "hello")
        assert "Authentication failed (401)" in message and "ANTHROPIC_API_KEY" in message
        assert await editor.prompt(sid, "again") == {"stopReason": "end_turn"}
        assert editor.model.rejected == []


async def test_unknown_session_and_bad_params_are_invalid_params(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": [text_response("hi")]}, workspace, data_dir) as editor:
        with pytest.raises(Exception, match="Unknown sessionId 'nope'"):
            await editor.prompt("nope", "hello")
        with pytest.raises(Exception, match="cwd"):
            await editor.request("session/new", {"cwd": "relative/dir"})
        with pytest.raises(Exception, match="sessionId"):
            await editor.request("session/prompt", {"prompt": []})
        with pytest.raises(Exception, match="modeId"):
            sid = await editor.new_session()
            await editor.request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        # The process still serves.
        sid = await editor.new_session()
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def _read_message(stdout: asyncio.StreamReader) -> dict[str, Any]:
    length = 0
    while True:
        line = await stdout.readline()
        if not line:
            raise EOFError("server closed stdout")
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
        elif line in (b"\r\n", b"\n") and length:
            message: dict[str, Any] = json.loads(await stdout.readexactly(length))
            return message


async def _response(stdout: asyncio.StreamReader, msg_id: Any) -> dict[str, Any]:
    while True:
        message = await asyncio.wait_for(_read_message(stdout), 10)
        if message.get("id") == msg_id and "method" not in message:
            return message


async def test_malformed_json_rpc_gets_errors_and_the_process_keeps_serving(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": [text_response("still here")]}) as model:
        env = server_env(model, data_dir)
        process = await asyncio.create_subprocess_exec(
            *server_command(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            send = process.stdin.write
            send(_frame(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}'))
            init = await _response(process.stdout, 1)
            assert init["result"]["serverInfo"]["name"] == "agent-bridge"
            assert init["result"]["capabilities"]["experimental"]["agent"]["promptCapabilities"]
            send(_frame(b'{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": '))
            parse_error = await _response(process.stdout, None)
            assert parse_error["error"]["code"] == -32700
            send(_frame(b'{"id": 3, "method": "session/new"}'))
            invalid = await _response(process.stdout, 3)
            assert invalid["error"]["code"] == -32600
            send(_frame(b"[1, 2]"))
            assert (await _response(process.stdout, None))["error"]["code"] == -32600
            send(_frame(b'{"jsonrpc": "2.0", "id": 4, "method": "no/such/method", "params": {}}'))
            assert (await _response(process.stdout, 4))["error"]["code"] == -32601
            send(_frame(b'{"jsonrpc": "2.0", "id": 5, "method": "session/new"}'))
            assert (await _response(process.stdout, 5))["error"]["code"] == -32602
            new = json.dumps({"jsonrpc": "2.0", "id": 6, "method": "session/new", "params": {"cwd": str(workspace)}})
            send(_frame(new.encode()))
            created = await _response(process.stdout, 6)
            sid = created["result"]["sessionId"]
            prompt = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
            }
            send(_frame(json.dumps(prompt).encode()))
            assert (await _response(process.stdout, 7))["result"] == {"stopReason": "end_turn"}
        finally:
            process.stdin.close()
            await asyncio.wait_for(process.wait(), 15)
        assert process.returncode == 0


def test_initialize_is_answered_without_loading_the_sdk(data_dir: Path) -> None:
    """The anthropic SDK takes seconds to import: `initialize` must not wait for it."""
    code = "import sys, bridge.server.app as app, bridge.cli.main;print('anthropic' in sys.modules)"
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "AGENT_BRIDGE_DATA_DIR": str(data_dir)},
    )
    assert out.stdout.strip() == "False"
