"""Tools the model can't call: a deferred tool not loaded yet, a made-up name, a stored history's tools that are
gone. Each call answers an error the model can act on, and no later request fails the API's validation (the
offline API answers 400 when a `tool_use` in the history names a tool the request does not declare)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response
from tests.e2e.test_mcp import fixture, results


def _tool_names(body: dict[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools", [])]


async def test_a_deferred_tool_called_before_it_is_loaded_says_how_to_load_it(workspace: Path, data_dir: Path) -> None:
    server = fixture(workspace.parent / "mcp.log")
    server["args"].append("--many")
    scenario = {
        "responses": [
            tool_response(("mcp__fixture__echo", {"text": "too early"})),
            tool_response(("ToolSearch", {"query": "select:mcp__fixture__echo"})),
            tool_response(("mcp__fixture__echo", {"text": "loaded"})),
            text_response("done"),
        ]
    }
    options = {"mcp": {"turnWait": 120, "deferFraction": 0.01}}  # 1 % of 200k tokens: 8,000 characters
    async with running_editor(scenario, workspace, data_dir, initialization_options=options) as editor:
        sid = await editor.new_session(mcp_servers=[server])
        assert await editor.prompt(sid, "echo via a deferred tool") == {"stopReason": "end_turn"}
        assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
        first = editor.model.valid_requests[0].body
        assert "mcp__fixture__echo" not in _tool_names(first), "held back until loaded"
        early, _search, echoed = results(editor.last_request_messages())
        assert early["is_error"] and "deferred" in early["content"], early
        assert "ToolSearch" in early["content"] and "select:mcp__fixture__echo" in early["content"], early
        assert "echo: too early" not in early["content"], "the deferred tool was not run"
        assert echoed["content"] == "echo: loaded" and not echoed.get("is_error")
        assert history_errors(editor.last_request_messages()) == []


async def test_a_made_up_tool_name_answers_no_such_tool_and_the_session_goes_on(
    workspace: Path, data_dir: Path
) -> None:
    scenario = {
        "responses": [tool_response(("Teleport", {"to": "mars"})), text_response("sorry"), text_response("still here")]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "go") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "and now?") == {"stopReason": "end_turn"}
        assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
        [result] = results(editor.last_request_messages())
        assert result["is_error"] and "No such tool: Teleport" in result["content"]
        assert "Read" in result["content"] and "Bash" in result["content"], "the names that exist"
        assert editor.text(sid).endswith("still here")


@pytest.mark.parametrize("how", ["removed", "renamed", "failing"])
async def test_a_stored_session_whose_mcp_server_is_gone_loads_warns_and_goes_on(
    workspace: Path, data_dir: Path, how: str
) -> None:
    log = workspace.parent / "mcp.log"
    first = {"responses": [tool_response(("mcp__fixture__echo", {"text": "hi"})), text_response("echoed")]}
    async with running_editor(first, workspace, data_dir) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        assert await editor.prompt(sid, "echo") == {"stopReason": "end_turn"}

    servers = {
        "removed": [],
        "renamed": [fixture(log, "other")],
        "failing": [{"name": "fixture", "command": sys.executable, "args": ["-c", "raise SystemExit(3)"], "env": []}],
    }[how]
    later = {
        "responses": [
            text_response("without it"),
            tool_response(("mcp__fixture__echo", {"text": "again"})),
            text_response("it is gone"),
        ]
    }
    async with running_editor(later, workspace, data_dir) as editor:
        params = {"sessionId": sid, "cwd": str(workspace), "mcpServers": servers}
        assert "modes" in await editor.request("session/load", params)
        warnings = await poll(
            lambda: [
                m.message
                for m in editor.client.messages
                if "mcp__fixture__echo" in m.message or "'fixture'" in m.message
            ],
            what="a warning naming the missing tool or its server",
        )
        assert "'fixture'" in warnings[0], warnings
        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "echo again") == {"stopReason": "end_turn"}
        assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
        last = results(editor.last_request_messages())[-1]
        assert last["is_error"] and "echo: again" not in last["content"], last
        why = "could not start" if how == "failing" else "not connected"
        assert why in last["content"] and "'fixture'" in last["content"], last
        assert history_errors(editor.last_request_messages()) == []
