"""The protocol's edges (issue 22, item 5), over the real `agent-bridge acp` process: a JSON body that is no object
gets -32600 (not silence and a TypeError), a message that is both a request and a response gets -32600, an error
never echoes megabytes back, an ordinary API failure is one WARNING line in the log (no traceback), and an empty
prompt is a valid prompt (the schema allows it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.server.jsonrpc import MAX_ERROR_TEXT
from tests.acp.editor import Editor, running_agent
from tests.acp.test_conformance import scenario_file, text
from tests.e2e.test_hostile_input import RawBridge


@pytest.fixture
async def bridge(workspace: Path, data_dir: Path) -> Any:
    raw = RawBridge(True, workspace, data_dir)
    await raw.start()
    try:
        await raw.initialize()
        yield raw
    finally:
        await raw.stop()


@pytest.mark.parametrize("body", [b"null", b"123", b"true", b'"text"', b"-1.5"])
async def test_a_body_that_is_no_object_is_answered_invalid_request(bridge: RawBridge, body: bytes) -> None:
    before = len(bridge.responses(None))
    await bridge.send(body)
    await bridge.wait(lambda: len(bridge.responses(None)) > before, f"the answer to {body!r}")
    answer = bridge.responses(None)[-1]
    assert answer["error"]["code"] == -32600 and "JSON object" in answer["error"]["message"]
    await bridge.barrier()
    assert "Traceback" not in bridge.stderr_text() and "TypeError" not in bridge.stderr_text()


async def test_a_request_with_a_result_is_an_invalid_request(bridge: RawBridge) -> None:
    await bridge.send({"jsonrpc": "2.0", "id": "both", "method": "session/list", "params": {}, "result": {}})
    assert (await bridge.response("both"))["error"]["code"] == -32600
    await bridge.send(
        {"jsonrpc": "2.0", "id": "both-error", "method": "session/list", "error": {"code": 1, "message": "x"}}
    )
    assert (await bridge.response("both-error"))["error"]["code"] == -32600
    await bridge.prompt_works()


async def test_an_error_never_echoes_a_huge_value(bridge: RawBridge) -> None:
    cwd = "/" + "x" * (5 * 1024 * 1024)
    answer = await bridge.request("session/new", {"cwd": cwd, "mcpServers": []})
    error = answer["error"]
    assert error["code"] == -32602 and "cwd" in error["message"]
    assert len(error["message"]) <= MAX_ERROR_TEXT + 100, len(error["message"])
    method = await bridge.request("x" * 100_000, {})
    assert method["error"]["code"] == -32601 and len(method["error"]["message"]) <= MAX_ERROR_TEXT + 100
    load = await bridge.request("session/load", {"sessionId": "s" * 100_000, "cwd": "/", "mcpServers": []})
    assert load["error"]["code"] in (-32602, -32002) and len(load["error"]["message"]) <= MAX_ERROR_TEXT + 100


@pytest.mark.parametrize("status", [401, 529])
async def test_an_api_error_is_one_warning_line_without_a_traceback(
    status: int, tmp_path: Path, workspace: Path, data_dir: Path, editor: Editor
) -> None:
    fault = {"fault": {"type": "status", "status": status, "retry_after": 0.01, "times": 9}}
    scenario = scenario_file(tmp_path, [fault])
    async with running_agent(editor, scenario, data_dir, env={"AGENT_BRIDGE_MAX_RETRIES": "1"}) as (conn, _):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        with pytest.raises(Exception) as caught:
            await conn.prompt(session_id=sid, prompt=text("hello"))
        assert str(status) in str(caught.value)
    log = (data_dir / "stderr.log").read_text()
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if f"({status})" in line and "retrying" not in line.lower()]
    assert len(lines) == 1, log
    assert " WARNING " in lines[0] or lines[0].startswith("WARNING"), lines[0]
    assert not [line for line in log.splitlines() if " ERROR " in line or line.startswith("ERROR")], log


async def test_an_empty_prompt_is_accepted(tmp_path: Path, workspace: Path, data_dir: Path, editor: Editor) -> None:
    scenario = scenario_file(tmp_path, [{"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}])
    async with running_agent(editor, scenario, data_dir) as (conn, _):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        empty = await conn.prompt(session_id=sid, prompt=[])
        assert empty.stop_reason == "end_turn"
        assert editor.text(sid) == "", "nothing was asked, nothing is answered"
        after = await conn.prompt(session_id=sid, prompt=text("hello"))
        assert after.stop_reason == "end_turn" and editor.text(sid) == "hi", "the one scripted answer was still there"
