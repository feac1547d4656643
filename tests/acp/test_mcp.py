"""MCP in `agent-bridge acp`, driven by the official ACP SDK: every message about MCP servers (a project
server's approval question, a tool's permission, an elicitation form, progress, the OAuth sign-in notice,
`session/close`) is checked by the strict oracle (the `editor` fixture fails the test on any violation).
The servers are real processes of the test fixture (tests/fixtures/mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp import schema

from tests.acp.editor import Editor, running_agent
from tests.acp.test_conformance import FS, answer, scenario_file, text, tool_use

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "mcp_server.py")
START = 120.0  # seconds a fixture server may take to start on a busy box


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def notices(editor: Editor, sid: str) -> str:
    return "\n".join(
        u.content.text for u in editor.of_kind("agent_message_chunk", sid) if u.field_meta and "notice" in u.field_meta
    )


async def test_a_project_server_is_approved_its_tools_ask_report_progress_and_close_ends_it(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    log = tmp_path / "proj.log"
    (workspace / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(log)}}
                }
            }
        )
    )
    responses = [
        answer("Approved."),
        tool_use("mcp__proj__echo", {"text": "hi"}),
        tool_use("mcp__proj__slow", {"steps": 2}),
        tool_use("mcp__proj__ask", {}),
        answer("Done."),
    ]

    async def reply(request: schema.RequestPermissionRequest) -> dict[str, Any]:
        meta = json.dumps(editor.incoming("session/request_permission")[-1]["params"].get("_meta") or {})
        if "mcpServer" in meta:
            return {"outcome": {"outcome": "selected", "optionId": "approve"}}
        if "elicitation" in meta:
            return {"outcome": {"outcome": "selected", "optionId": "accept"}, "_meta": {"content": {"colour": "teal"}}}
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    editor.on_permission = reply
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert not log.exists(), "opening the project started nothing"
        assert (await conn.prompt(session_id=sid, prompt=text("hello"))).stop_reason == "end_turn"
        approval = editor.incoming("session/request_permission")[0]["params"]
        assert approval["_meta"]["mcpServer"]["name"] == "proj"
        assert [o["optionId"] for o in approval["options"]] == ["approve", "approve_all", "once", "reject", "skip"]
        await editor.until(
            lambda: "MCP server 'proj' connected" in notices(editor, sid),
            timeout=START,
            what="the approved server to connect",
        )
        pid = int(log.read_text().split()[1])

        assert (await conn.prompt(session_id=sid, prompt=text("use it"))).stop_reason == "end_turn"
        asked = [m["params"] for m in editor.incoming("session/request_permission")[1:]]
        assert [a["toolCall"]["title"] for a in asked] == [
            'proj: Echo {"text": "hi"}',
            'proj: slow {"steps": 2}',
            "proj: ask",
            "MCP server 'proj' asks: Which colour?",
        ]
        assert {o["kind"] for o in asked[0]["options"]} >= {"allow_once", "allow_always", "reject_once"}
        assert asked[-1]["_meta"]["elicitation"]["mode"] == "form"
        updates = [u.model_dump(mode="json", by_alias=True) for u in editor.of_kind("tool_call_update", sid)]
        assert any("Progress 2/2 — step 2" in json.dumps(u, ensure_ascii=False) for u in updates), "progress shown"
        done = [u for u in updates if u.get("status") == "completed"]
        assert {"echo: hi", "did 2 steps", "accept teal False"} <= {
            c["content"]["text"] for u in done for c in u.get("content") or [] if c["type"] == "content"
        }

        await conn.close_session(session_id=sid)
        await editor.until(lambda: not alive(pid), timeout=15, what="the server to stop with its session")


async def test_an_oauth_servers_sign_in_url_reaches_the_editor_as_a_notice(
    editor: Editor, data_dir: Path, workspace: Path
) -> None:
    server = await asyncio.create_subprocess_exec(
        sys.executable, FIXTURE, "--http", "--auth", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        assert server.stdout is not None
        url = (await asyncio.wait_for(server.stdout.readline(), START)).decode().split()[1]
        remote = schema.HttpMcpServer(type="http", name="remote", url=url, headers=[])
        async with running_agent(editor, "playground", data_dir) as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=FS)
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[remote])).session_id
            await editor.until(
                lambda: "MCP server 'remote' needs you to sign in: open http" in notices(editor, sid),
                timeout=START,
                what="the sign-in notice",
            )
            [notice] = [u for u in editor.of_kind("agent_message_chunk", sid) if "sign in" in u.content.text]
            assert notice.field_meta == {"notice": "warning"}
            await conn.close_session(session_id=sid)
    finally:
        server.terminate()
        await server.wait()
