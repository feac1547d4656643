"""MCP servers from `session/new` become the session's tools (a real stdio server: tests/fixtures/mcp_server.py)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from bridge.messages import INTERRUPTED_RESULT, pairing_errors
from tests.e2e.harness import pid_alive, poll, running_editor, text_response, tool_response

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "mcp_server.py")


def fixture(log: Path, name: str = "fixture") -> dict[str, Any]:
    return {"name": name, "command": sys.executable, "args": [FIXTURE],
            "env": [{"name": "MCP_FIXTURE_LOG", "value": str(log)}]}


def results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]


async def test_an_mcp_tool_is_offered_asked_for_by_its_rule_and_called(workspace: Path, data_dir: Path) -> None:
    log = workspace.parent / "mcp.log"
    scenario = {"responses": [tool_response(("mcp__fixture__echo", {"text": "hi there"})), text_response("done")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        assert await editor.prompt(sid, "echo something") == {"stopReason": "end_turn"}
        first = editor.model.valid_requests[0].body
        [echo] = [t for t in first["tools"] if t["name"] == "mcp__fixture__echo"]
        assert echo["description"] == "Echo the text back." and echo["input_schema"]["required"] == ["text"]
        [asked] = editor.permission_requests
        assert asked["toolCall"]["title"] == "Echo (fixture)"
        always = [o for o in asked["options"] if o["kind"] == "allow_always"]
        assert always and "mcp__fixture__echo" in always[0]["name"], asked["options"]
        [result] = results(editor.last_request_messages())
        assert result["content"] == "echo: hi there" and not result.get("is_error")
        assert pairing_errors(editor.last_request_messages()) == []
        pid = int(log.read_text().split()[1])
        assert pid_alive(pid)
    await poll(lambda: not pid_alive(pid), timeout=5, what="the MCP server to stop with the bridge")


async def test_a_large_mcp_result_is_stored_and_the_model_gets_a_preview(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("mcp__fixture__big", {"chars": 100_000})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(workspace.parent / "mcp.log")])
        await editor.prompt(sid, "get the big thing")
        [result] = results(editor.last_request_messages())
        text = result["content"]
        assert len(text) < 3_000 and "Output too large (100000 chars). Full output saved to " in text
        stored = Path(text.split("Full output saved to ")[1].split(" — ")[0])
        assert stored.is_relative_to(data_dir) and len(stored.read_text()) == 100_000
        assert text.startswith(stored.read_text()[:1_000])


async def test_servers_that_cannot_be_used_are_named_and_the_session_works(workspace: Path, data_dir: Path) -> None:
    servers = [{"type": "http", "name": "web", "url": "http://127.0.0.1:9", "headers": []},
               {"name": "gone", "command": "/no/such/mcp-server", "args": [], "env": []}]
    async with running_editor({"responses": [text_response("fine")]}, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=servers)
        await poll(lambda: len(editor.client.messages) >= 2, what="both problems shown")
        shown = [m.message for m in editor.client.messages]
        assert any("'web': the http transport is not supported" in m for m in shown), shown
        assert any("'gone' could not start '/no/such/mcp-server'" in m for m in shown), shown
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert not any(t["name"].startswith("mcp__") for t in editor.model.valid_requests[0].body["tools"])


async def test_cancel_during_an_mcp_call_tells_the_server_and_keeps_the_history_valid(
    workspace: Path, data_dir: Path
) -> None:
    log = workspace.parent / "mcp.log"
    scenario = {"responses": [tool_response(("mcp__fixture__wait", {})), text_response("after")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        turn = editor.start_prompt(sid, "wait for it")
        await poll(lambda: log.exists() and "wait" in log.read_text(), what="the call at the server")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        request_id = log.read_text().split("wait ")[1].split()[0]
        await poll(lambda: f"cancelled {request_id}" in log.read_text(), what="notifications/cancelled")
        await editor.prompt(sid, "go on")
        [result] = results(editor.last_request_messages())
        assert result["is_error"] and result["content"].startswith(INTERRUPTED_RESULT)
        assert pairing_errors(editor.last_request_messages()) == []


async def test_many_mcp_tools_wait_behind_tool_search_until_loaded(workspace: Path, data_dir: Path) -> None:
    server = fixture(workspace.parent / "mcp.log")
    server["args"].append("--many")
    scenario = {"responses": [
        tool_response(("ToolSearch", {"query": "select:mcp__fixture__echo"})),
        tool_response(("mcp__fixture__echo", {"text": "loaded"})),
        text_response("done"),
    ]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=[server])
        await editor.prompt(sid, "echo via a deferred tool")
        bodies = [r.body for r in editor.model.valid_requests]
        names = [[t["name"] for t in body["tools"]] for body in bodies]
        assert "ToolSearch" in names[0] and not any(n.startswith("mcp__") for n in names[0])
        [search] = [t for t in bodies[0]["tools"] if t["name"] == "ToolSearch"]
        assert "mcp__fixture__echo" in search["description"] and "mcp__fixture__report_59" in search["description"]
        assert "mcp__fixture__echo" in names[1] and "mcp__fixture__report_1" not in names[1], "only what was loaded"
        assert next(t for t in bodies[1]["tools"] if t["name"] == "ToolSearch") == search, "a byte-stable catalog"
        [_, echoed] = results(editor.last_request_messages())
        assert echoed["content"] == "echo: loaded"
