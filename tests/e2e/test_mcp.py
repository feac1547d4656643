"""MCP as an editor sees it, over the real protocol: servers from `session/new`, `.mcp.json` and the settings,
started in the background; tools, progress, elicitation, prompts as commands, `/mcp`, approval, session/close.
The servers are real processes built on the same SDK (tests/fixtures/mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from bridge.messages import INTERRUPTED_RESULT
from bridge.offline.validation import history_errors
from tests.e2e.harness import (
    Editor,
    PermissionHandler,
    allow_once,
    pid_alive,
    poll,
    running_editor,
    text_response,
    tool_response,
)

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "mcp_server.py")
WAIT = {"mcp": {"turnWait": 120}}  # a prompt waits for servers still starting (they take seconds on a busy box)


def fixture(log: Path, name: str = "fixture", *flags: str) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [FIXTURE, *flags],
        "env": [{"name": "MCP_FIXTURE_LOG", "value": str(log)}],
    }


def results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]


def logged(editor: Editor, text: str) -> bool:
    shown: list[types.LogMessageParams | types.ShowMessageParams] = [
        *editor.client.log_messages,
        *editor.client.messages,
    ]
    return any(text in m.message for m in shown)


def server_approval(option: str) -> PermissionHandler:
    """Answers a project server's approval question with `option` (approve, skip, ...); tool calls: allow once."""

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        if "mcpServer" in (params.get("_meta") or {}):
            return {"outcome": {"outcome": "selected", "optionId": option}}
        return await allow_once(params)

    return answer


async def connected(editor: Editor, name: str = "fixture") -> None:
    await poll(lambda: logged(editor, f"MCP server {name!r} connected"), timeout=120, what=f"{name} to connect")


async def test_an_mcp_tool_is_offered_asked_for_by_its_rule_and_called(workspace: Path, data_dir: Path) -> None:
    log = workspace.parent / "mcp.log"
    scenario = {"responses": [tool_response(("mcp__fixture__echo", {"text": "hi there"})), text_response("done")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        assert await editor.prompt(sid, "echo something") == {"stopReason": "end_turn"}
        first = editor.model.valid_requests[0].body
        [echo] = [t for t in first["tools"] if t["name"] == "mcp__fixture__echo"]
        assert echo["description"] == "Echo the text back." and echo["input_schema"]["required"] == ["text"]
        [asked] = editor.permission_requests
        # the server, its title for the tool, and what the call runs with: a question that said `Delete repository
        # (gh)` never said which repository (attack round 35); the content has the arguments whole
        assert asked["toolCall"]["title"] == 'fixture: Echo {"text": "hi there"}'
        texts = [c["content"]["text"] for c in asked["toolCall"]["content"] if c["type"] == "content"]
        assert texts[-1] == 'fixture echo with:\n{\n  "text": "hi there"\n}'
        always = [o for o in asked["options"] if o["kind"] == "allow_always"]
        assert always and "mcp__fixture__echo" in always[0]["name"], asked["options"]
        [result] = results(editor.last_request_messages())
        assert result["content"] == "echo: hi there" and not result.get("is_error")
        assert history_errors(editor.last_request_messages()) == []
        pid = int(log.read_text().split()[1])
        assert pid_alive(pid)
    await poll(lambda: not pid_alive(pid), timeout=15, what="the MCP server to stop with the bridge")


async def test_a_large_mcp_result_is_stored_and_the_model_gets_a_preview(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("mcp__fixture__big", {"chars": 100_000})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(workspace.parent / "mcp.log")])
        await editor.prompt(sid, "get the big thing")
        [result] = results(editor.last_request_messages())
        text = result["content"]
        assert len(text) < 3_000 and "Output too large (100000 chars). Full output saved to " in text
        stored = Path(text.split("Full output saved to ")[1].split(" — ")[0])
        assert stored.is_relative_to(data_dir) and len(stored.read_text()) == 100_000


async def test_session_new_answers_at_once_and_servers_that_cannot_be_used_are_named(
    workspace: Path, data_dir: Path
) -> None:
    servers = [
        fixture(workspace.parent / "hang.log", "stuck", "--hang"),
        {"name": "gone", "command": "/no/such/mcp-server", "args": [], "env": []},
        {"name": "broken", "args": [], "env": []},
    ]
    options = {"mcp": {"startupTimeout": 2, "turnWait": 0}}
    async with running_editor(
        {"responses": [text_response("fine")]}, workspace, data_dir, initialization_options=options
    ) as editor:
        await editor.new_session()  # the domain is loaded: what follows times only session/new
        began = time.monotonic()
        sid = await editor.new_session(mcp_servers=servers)
        assert time.monotonic() - began < 2, "session/new does not wait for servers"
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert not any(t["name"].startswith("mcp__") for t in editor.model.valid_requests[0].body["tools"])
        await poll(
            lambda: (
                logged(editor, "'stuck' did not answer within 2 s")
                and logged(editor, "'gone' could not start '/no/such/mcp-server'")
            ),
            timeout=60,
            what="both problems shown",
        )
        assert logged(editor, "MCP config skipped") is False
        status = await status_of(editor, sid)
        assert "- broken: invalid: needs a command — from the editor" in status
        assert "- stuck: failed: MCP server 'stuck' did not answer within 2 s" in status


async def status_of(editor: Editor, sid: str) -> str:
    before = len(editor.text(sid))
    assert await editor.prompt(sid, "/mcp") == {"stopReason": "end_turn"}
    return editor.text(sid)[before:]


async def test_cancel_during_an_mcp_call_tells_the_server_and_keeps_the_history_valid(
    workspace: Path, data_dir: Path
) -> None:
    log = workspace.parent / "mcp.log"
    scenario = {"responses": [tool_response(("mcp__fixture__wait", {})), text_response("after")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        turn = editor.start_prompt(sid, "wait for it")
        await poll(lambda: log.exists() and "wait" in log.read_text(), timeout=120, what="the call at the server")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        request_id = log.read_text().split("wait ")[1].split()[0]
        await poll(lambda: f"cancelled {request_id}" in log.read_text(), what="notifications/cancelled")
        await editor.prompt(sid, "go on")
        [result] = results(editor.last_request_messages())
        assert result["is_error"] and result["content"].startswith(INTERRUPTED_RESULT)
        assert history_errors(editor.last_request_messages()) == []


async def test_progress_arrives_as_tool_call_updates(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("mcp__fixture__slow", {"steps": 3})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(workspace.parent / "mcp.log")])
        await editor.prompt(sid, "go slowly")
        [call] = editor.of_kind("tool_call", sid)
        shown = [str(u.get("content")) for u in editor.tool_updates(call["toolCallId"])]
        assert any("Progress 3/3 — step 3" in text for text in shown), shown
        [result] = results(editor.last_request_messages())
        assert result["content"] == "did 3 steps"


async def test_many_mcp_tools_wait_behind_tool_search_until_loaded(workspace: Path, data_dir: Path) -> None:
    server = fixture(workspace.parent / "mcp.log", "fixture", "--many")
    scenario = {
        "responses": [
            tool_response(("ToolSearch", {"query": "select:mcp__fixture__echo"})),
            tool_response(("mcp__fixture__echo", {"text": "loaded"})),
            text_response("done"),
        ]
    }
    options = {"mcp": {"turnWait": 120, "deferFraction": 0.01}}  # 1 % of 200k tokens: 8,000 characters
    async with running_editor(scenario, workspace, data_dir, initialization_options=options) as editor:
        sid = await editor.new_session(mcp_servers=[server])
        await editor.prompt(sid, "echo via a deferred tool")
        bodies = [r.body for r in editor.model.valid_requests]
        names = [[t["name"] for t in body["tools"]] for body in bodies]
        assert "ToolSearch" in names[0] and not any(n.startswith("mcp__") for n in names[0])
        [search] = [t for t in bodies[0]["tools"] if t["name"] == "ToolSearch"]
        assert "mcp__fixture__echo" in search["description"] and "mcp__fixture__report_59" in search["description"]
        assert "mcp__fixture__echo" in names[1] and "mcp__fixture__report_1" not in names[1], "only what was loaded"
        assert next(t for t in bodies[1]["tools"] if t["name"] == "ToolSearch") == search, "a byte-stable catalog"
        assert bodies[0]["system"] == bodies[1]["system"]
        [_, echoed] = results(editor.last_request_messages())
        assert echoed["content"] == "echo: loaded"


async def test_an_elicitation_is_a_permission_request_with_the_form_schema(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("mcp__fixture__ask", {})), text_response("thanks")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            if "elicitation" in (params.get("_meta") or {}):
                return {
                    "outcome": {"outcome": "selected", "optionId": "accept"},
                    "_meta": {"content": {"colour": "teal", "sure": True}},
                }
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        editor.on_permission = answer
        sid = await editor.new_session(mcp_servers=[fixture(workspace.parent / "mcp.log")])
        await editor.prompt(sid, "ask me")
        [form] = [r for r in editor.permission_requests if "elicitation" in (r.get("_meta") or {})]
        assert form["toolCall"]["title"] == "MCP server 'fixture' asks: Which colour?"
        assert form["_meta"]["elicitation"]["requestedSchema"]["required"] == ["colour"]
        assert [o["optionId"] for o in form["options"]] == ["accept", "decline"]
        [result] = results(editor.last_request_messages())
        assert result["content"] == "accept teal True"


async def test_prompts_are_slash_commands_and_mcp_lists_the_servers(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [text_response("reviewed")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(workspace.parent / "mcp.log")])
        await connected(editor)

        def offered() -> dict[str, Any]:
            updates = editor.of_kind("available_commands_update", sid)
            return {c["name"]: c for c in updates[-1]["availableCommands"]} if updates else {}

        await poll(lambda: "mcp__fixture__review" in offered(), what="the prompt as a command")
        assert offered()["mcp__fixture__review"] == {
            "name": "mcp__fixture__review",
            "description": "Review a file",
            "input": {"hint": "path [style]"},
        }
        assert "mcp" in offered()
        assert await editor.prompt(sid, "/mcp__fixture__review src/app.py") == {"stopReason": "end_turn"}
        [request] = editor.model.valid_requests
        assert request.body["messages"][-1]["content"][0]["text"] == "Review src/app.py in a short way."
        status = await status_of(editor, sid)
        assert status.startswith("MCP servers (1):\n- fixture: ready — from the editor")
        assert "tools (16): echo, big" in status and "prompts: /mcp__fixture__review" in status


async def test_server_instructions_are_in_the_system_prompt_and_the_prefix_stays_put(
    workspace: Path, data_dir: Path
) -> None:
    scenario = {
        "responses": [tool_response(("mcp__fixture__echo", {"text": "a"})), text_response("one"), text_response("two")]
    }
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        server = fixture(workspace.parent / "mcp.log", "fixture", "--instructions", "Always echo twice.")
        sid = await editor.new_session(mcp_servers=[server])
        await editor.prompt(sid, "first")
        await editor.prompt(sid, "second")
        bodies = [r.body for r in editor.model.valid_requests]
        assert len(bodies) == 3
        assert bodies[0]["system"][-1]["text"].endswith("## fixture\nAlways echo twice.")
        assert all(b["system"] == bodies[0]["system"] and b["tools"] == bodies[0]["tools"] for b in bodies)


async def test_tools_that_join_later_change_the_prefix_once_and_say_so(workspace: Path, data_dir: Path) -> None:
    gate = workspace.parent / "go"
    scenario = {"responses": [text_response("without"), text_response("with")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options={"mcp": {"turnWait": 0}}) as editor:
        sid = await editor.new_session(
            mcp_servers=[fixture(workspace.parent / "mcp.log", "late", "--start-after", str(gate))]
        )
        await editor.prompt(sid, "before")
        gate.touch()
        await connected(editor, "late")
        await editor.prompt(sid, "after")
        first, second = (r.body for r in editor.model.valid_requests)
        assert not any(t["name"].startswith("mcp__late__") for t in first["tools"])
        assert any(t["name"] == "mcp__late__echo" for t in second["tools"])
        assert logged(editor, "MCP tools changed (18 added): the request prefix changes once")


async def test_a_project_server_is_started_only_after_the_user_approves_it(workspace: Path, data_dir: Path) -> None:
    log = workspace.parent / "proj.log"
    (workspace / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(log)}}
                }
            }
        )
    )
    scenario = {"responses": [tool_response(("mcp__proj__echo", {"text": "approved"})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
        editor.on_permission = server_approval("approve")
        sid = await editor.new_session()
        assert not log.exists(), "opening the project started nothing"
        await editor.prompt(sid, "use the project's server")
        approval = editor.permission_requests[0]
        assert approval["toolCall"]["title"] == "Use the MCP server 'proj' from this project?"
        assert [o["kind"] for o in approval["options"]] == [
            "allow_always",
            "allow_always",
            "allow_once",
            "reject_always",
            "reject_once",
        ]
        saved = json.loads((data_dir / "config" / "mcp-approvals.json").read_text())
        assert list(saved["projects"][str(workspace.resolve())]["approvedConfigs"]) == ["proj"]
        assert not (workspace / ".agent-bridge").exists(), "the answer is not the repository's to keep"
        [result] = results(editor.last_request_messages())
        assert result["content"] == "echo: approved"


async def test_a_cancel_while_the_approval_question_is_open_ends_the_turn(workspace: Path, data_dir: Path) -> None:
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [FIXTURE]}}})
    )
    async with running_editor({"responses": [text_response("later")]}, workspace, data_dir) as editor:
        never = asyncio.Event()

        async def hold(params: dict[str, Any]) -> dict[str, Any]:
            await never.wait()
            return {"outcome": {"outcome": "cancelled"}}

        editor.on_permission = hold
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "hello")
        await poll(lambda: editor.permission_requests, what="the approval question")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 15) == {"stopReason": "cancelled"}
        assert not (data_dir / "config" / "mcp-approvals.json").exists()
        never.set()


async def test_session_close_stops_the_sessions_servers(workspace: Path, data_dir: Path) -> None:
    log = workspace.parent / "mcp.log"
    async with running_editor(
        {"responses": [text_response("x")]}, workspace, data_dir, initialization_options=WAIT
    ) as editor:
        sid = await editor.new_session(mcp_servers=[fixture(log)])
        await connected(editor)
        pid = int(log.read_text().split()[1])
        assert await editor.request("session/close", {"sessionId": sid}) == {}
        await poll(lambda: not pid_alive(pid), timeout=15, what="the server to stop with its session")
        try:
            await editor.prompt(sid, "still there?")
        except Exception as error:
            assert "Unknown sessionId" in str(error)
        else:
            raise AssertionError("a closed session takes no prompt")


async def test_an_http_server_with_oauth_shows_the_sign_in_url_to_the_editor(workspace: Path, data_dir: Path) -> None:
    import httpx

    process = await asyncio.create_subprocess_exec(
        sys.executable, FIXTURE, "--http", "--auth", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        url = (await asyncio.wait_for(process.stdout.readline(), 120)).decode().split()[1]
        scenario = {"responses": [tool_response(("mcp__remote__echo", {"text": "remote"})), text_response("ok")]}
        async with running_editor(scenario, workspace, data_dir, initialization_options=WAIT) as editor:
            sid = await editor.new_session(mcp_servers=[{"type": "http", "name": "remote", "url": url, "headers": []}])
            shown = await poll(
                lambda: next((m.message for m in editor.client.messages if "needs you to sign in" in m.message), None),
                timeout=120,
                what="the sign-in URL",
            )
            async with httpx.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(shown.split("open ", 1)[1])
            assert "Signed in" in page.text
            await connected(editor, "remote")
            await editor.prompt(sid, "call the remote server")
            [result] = results(editor.last_request_messages())
            assert result["content"] == "echo: remote"
    finally:
        process.terminate()
        await process.wait()


def cloned(tmp_path: Path, committed: dict[str, Any]) -> Path:
    """A repository someone else published with `committed` files, as `git clone` makes it."""
    origin = tmp_path / "origin"
    for name, data in committed.items():
        (origin / name).parent.mkdir(parents=True, exist_ok=True)
        (origin / name).write_text(json.dumps(data))
    for args in (
        ["init", "-q", str(origin)],
        ["-C", str(origin), "add", "-f", "."],
        ["-C", str(origin), "-c", "user.name=x", "-c", "user.email=x@example.com", "commit", "-qm", "x"],
        ["clone", "-q", str(origin), str(tmp_path / "project")],
    ):
        subprocess.run(["git", *args], check=True, capture_output=True)
    return tmp_path / "project"


async def test_a_name_approved_in_global_settings_does_not_start_a_cloned_folders_server(
    tmp_path: Path, data_dir: Path
) -> None:
    """Attack round 24: `enabledMcpjsonServers: ["proj"]` in the user's `~/.claude/settings.json` (a server they
    know) started a cloned folder's own `proj` — any command — when the folder was opened, outside the sandbox."""
    marker = tmp_path / "started"
    server = {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(marker)}}
    project = cloned(tmp_path, {".mcp.json": {"mcpServers": {"proj": server}}})
    for settings in (data_dir / "home" / ".claude" / "settings.json", data_dir / "config" / "settings.json"):
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"enabledMcpjsonServers": ["proj"], "enableAllProjectMcpServers": True}))
    scenario = {"responses": [tool_response(("mcp__proj__echo", {"text": "pwned"})), text_response("ok")]}
    async with running_editor(scenario, project, data_dir, initialization_options=WAIT) as editor:
        editor.on_permission = server_approval("skip")
        sid = await editor.new_session()
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        assert [r["_meta"]["mcpServer"]["name"] for r in editor.permission_requests] == ["proj"], "it asks"
        [result] = results(editor.last_request_messages())
        assert result["is_error"], "no such tool: the server was never started"
        assert not marker.exists(), "no server process started"


async def test_a_repository_that_commits_local_settings_starts_nothing_when_opened(
    tmp_path: Path, data_dir: Path
) -> None:
    """The bypass an audit found: a committed `.agent-bridge/settings.local.json` (its own servers,
    `enableAllProjectMcpServers`) and `.claude/settings.local.json` (approvals), cloned and opened."""
    marker = tmp_path / "started"
    server = {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(marker)}}
    project = cloned(
        tmp_path,
        {
            ".mcp.json": {"mcpServers": {"proj": server}},
            ".agent-bridge/settings.local.json": {"mcpServers": {"evil": server}, "enableAllProjectMcpServers": True},
            ".claude/settings.local.json": {"enabledMcpjsonServers": ["proj"]},
        },
    )
    scenario = {"responses": [tool_response(("mcp__evil__echo", {"text": "pwned"})), text_response("ok")]}
    async with running_editor(scenario, project, data_dir, initialization_options=WAIT) as editor:
        editor.on_permission = server_approval("skip")
        sid = await editor.new_session()
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        asked = sorted(r["_meta"]["mcpServer"]["name"] for r in editor.permission_requests)
        assert asked == ["evil", "proj"], "both are asked about, as the project's"
        [result] = results(editor.last_request_messages())
        assert result["is_error"], "no such tool: the server was never started"
        assert not marker.exists(), "no server process started"
