"""`agent-bridge acp` driven by the official ACP Python SDK, as Zed, JetBrains or Neovim would drive it.

Every message the bridge sends is checked by the strict oracle (tests/acp/strict.py; the `editor` fixture
fails the test on any violation). The model is the offline `playground` scenario (`run: CMD`, `long`, …) or a
scripted JSON scenario written next to the test.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema
from acp.helpers import ContentBlock

from tests.acp.editor import Editor, running_agent

FS = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True))
RESOURCE_NOT_FOUND = -32002
AUTH_REQUIRED = -32000


def text(value: str) -> list[ContentBlock]:
    return [schema.TextContentBlock(type="text", text=value)]


def scenario_file(tmp_path: Path, responses: list[dict[str, Any]]) -> str:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"name": "conformance", "responses": responses}))
    return str(path)


def tool_use(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": data}], "stop_reason": "tool_use"}


def answer(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value, "chunks": 3}], "stop_reason": "end_turn"}


def position(editor: Editor, predicate: Any) -> int:
    return next(i for i, w in enumerate(editor.wire) if w.direction == "in" and predicate(w.message))


async def test_initialize_says_who_the_bridge_is_and_what_it_offers(editor: Editor, data_dir: Path) -> None:
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=FS)
        assert init.protocol_version == 1
        assert init.agent_info is not None and init.agent_info.name == "agent-bridge"
        assert init.agent_info.title and init.agent_info.version
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.load_session is True
        assert capabilities.session_capabilities is not None and capabilities.session_capabilities.list is not None
        assert capabilities.prompt_capabilities is not None and capabilities.prompt_capabilities.embedded_context
        methods = init.auth_methods or []
        assert [m.id for m in methods] == ["anthropic-api-key"]
        assert "ANTHROPIC_API_KEY" in json.dumps(methods[0].model_dump(by_alias=True))
        await conn.authenticate(method_id="anthropic-api-key")  # a key is set (offline): nothing to do


async def test_session_new_is_answered_before_any_update_of_that_session(
    editor: Editor, data_dir: Path, workspace: Path
) -> None:
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        for _ in range(5):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await editor.until(lambda sid=sid: editor.of_kind("available_commands_update", sid), what="commands")
            answered = position(
                editor, lambda m, sid=sid: isinstance(m.get("result"), dict) and m["result"].get("sessionId") == sid
            )
            first_update = position(editor, lambda m, sid=sid: (m.get("params") or {}).get("sessionId") == sid)
            assert answered < first_update, "an update for a session the editor does not know yet"
            commands = editor.of_kind("available_commands_update", sid)[0].available_commands
            assert {"compact", "clear"} <= {c.name for c in commands}
            assert session.modes is not None and session.modes.current_mode_id == "default"


async def test_a_turn_streams_text_and_asks_before_running_a_command(
    editor: Editor, data_dir: Path, workspace: Path
) -> None:
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        done = await conn.prompt(session_id=sid, prompt=text("hello there"))
        assert done.stop_reason == "end_turn"
        assert "hello there" in editor.text(sid)
        marker = workspace / "made"
        done = await conn.prompt(session_id=sid, prompt=text(f"run: touch {marker}"))
        assert done.stop_reason == "end_turn" and marker.exists()
        [asked] = editor.permission_requests
        assert asked.tool_call.kind == "execute" and {o.kind for o in asked.options} >= {"allow_once", "reject_once"}
        statuses = [u.status for u in editor.of_kind("tool_call_update", sid) if u.status]
        assert statuses[-1] == "completed"
        assert editor.of_kind("usage_update", sid)


async def test_an_edit_acts_on_the_editors_unsaved_text_and_is_written_through_the_editor(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    source = workspace / "app.py"
    source.write_text("print('saved')\n")
    editor.buffers[str(source)] = "print('unsaved')\n"  # the user typed, did not save
    responses = [
        tool_use("Read", {"file_path": str(source)}),
        tool_use("Edit", {"file_path": str(source), "old_string": "unsaved", "new_string": "edited"}),
        answer("Edited."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        done = await conn.prompt(session_id=sid, prompt=text("edit it"))
        assert done.stop_reason == "end_turn"
        assert str(source) in editor.reads
        assert editor.writes == [(str(source), "print('edited')\n")]
        assert source.read_text() == "print('saved')\n", "the disk is the editor's business"
        [asked] = editor.permission_requests
        [diff] = [c for c in asked.tool_call.content or [] if c.type == "diff"]
        assert (diff.old_text, diff.new_text) == ("print('unsaved')\n", "print('edited')\n")
        shown = [c for u in editor.of_kind("tool_call_update", sid) for c in u.content or [] if c.type == "diff"]
        assert shown and shown[-1].new_text == "print('edited')\n"


async def test_the_unsaved_label_is_only_for_text_that_differs_from_the_disk(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    """Every read goes through the editor; the model is told "unsaved" only when the editor's text is not the
    disk's (issue 22: every read was labelled, even byte for byte the file on disk)."""
    same, changed = workspace / "same.py", workspace / "changed.py"
    same.write_text("a = 1\n")
    changed.write_text("b = 1\n")
    editor.buffers[str(same)] = "a = 1\n"  # open in the editor, saved
    editor.buffers[str(changed)] = "b = 2\n"  # open in the editor, typed into
    responses = [
        tool_use("Read", {"file_path": str(same)}),
        tool_use("Read", {"file_path": str(changed)}),
        answer("Read both."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("read them"))).stop_reason == "end_turn"
    assert editor.reads == [str(same), str(changed)], "both were asked of the editor"
    results = {
        u.tool_call_id: " ".join(c.content.text for c in u.content or [] if c.type == "content")
        for u in editor.of_kind("tool_call_update", sid)
        if u.status == "completed"
    }
    [same_result, changed_result] = results.values()
    assert "a = 1" in same_result and "unsaved" not in same_result
    assert "b = 2" in changed_result and "unsaved version" in changed_result


async def test_without_the_fs_capability_files_are_the_disks(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    source = workspace / "app.py"
    source.write_text("a = 1\n")
    responses = [
        tool_use("Read", {"file_path": str(source)}),
        tool_use("Edit", {"file_path": str(source), "old_string": "a = 1", "new_string": "a = 2"}),
        answer("Edited."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("edit it"))).stop_reason == "end_turn"
        assert editor.reads == [] and editor.writes == []
        assert source.read_text() == "a = 2\n"


async def test_a_write_the_editor_refuses_fails_the_tool_and_leaves_the_disk(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    source = workspace / "app.py"
    source.write_text("a = 1\n")
    editor.buffers[str(source)] = "a = 1\n# typed, not saved\n"  # only unsaved changes go through the editor
    editor.fs_refuses = True
    responses = [
        tool_use("Read", {"file_path": str(source)}),
        tool_use("Edit", {"file_path": str(source), "old_string": "a = 1", "new_string": "a = 2"}),
        answer("Could not."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("edit it"))).stop_reason == "end_turn"
        failed = [u for u in editor.of_kind("tool_call_update", sid) if u.status == "failed"]
        assert failed and "read-only" in json.dumps([c.model_dump() for c in failed[-1].content or []])
        assert source.read_text() == "a = 1\n"


async def test_cancel_mid_stream_mid_command_and_mid_permission(
    editor: Editor, data_dir: Path, workspace: Path
) -> None:
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id

        # Mid-stream: `long` streams for seconds.
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("long")))
        await editor.until(lambda: "Part 3" in editor.text(sid), what="the long answer streaming")
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 15)).stop_reason == "cancelled"

        # Mid-command: the command runs (allowed), then the turn is cancelled.
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("run: echo started; sleep 30")))
        await editor.until(
            lambda: "started" in json.dumps([u.model_dump() for u in editor.of_kind("tool_call_update", sid)]),
            what="the command's output",
        )
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 15)).stop_reason == "cancelled"

        # Mid-permission: the editor never answers; the bridge withdraws the question with `$/cancel_request`.
        marker = workspace / "never"
        pending: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

        async def hold(request: schema.RequestPermissionRequest) -> dict[str, Any]:
            return await pending

        editor.on_permission = hold
        asked_before = len(editor.permission_requests)
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text(f"run: touch {marker}")))
        await editor.until(lambda: len(editor.permission_requests) > asked_before, what="the permission request")
        asked_id = editor.incoming("session/request_permission")[-1]["id"]
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 15)).stop_reason == "cancelled"
        await editor.until(lambda: asked_id in editor.withdrawn, what="$/cancel_request for the question")
        pending.set_result({"outcome": {"outcome": "cancelled"}})  # the editor answers it, late
        assert not marker.exists()
        assert not editor.incoming("$/cancelRequest"), "LSP's cancel is not ACP"

        # ACP's protocol-level cancel of the prompt request itself answers `cancelled` too.
        editor.on_permission = hold
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("long")))
        await editor.until(lambda: editor.text(sid).count("Part 3") >= 2, what="the second long answer")
        await editor.cancel_request(editor.request_id("session/prompt"))
        assert (await asyncio.wait_for(turn, 15)).stop_reason == "cancelled"

        # And the session goes on.
        assert (await conn.prompt(session_id=sid, prompt=text("still there?"))).stop_reason == "end_turn"


async def test_set_mode_then_list_then_load_in_a_new_process(editor: Editor, data_dir: Path, workspace: Path) -> None:
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("remember this"))).stop_reason == "end_turn"
        await conn.set_session_mode(session_id=sid, mode_id="plan")
        await editor.until(lambda: editor.of_kind("current_mode_update", sid), what="the mode update")
        answered = position(editor, lambda m: "result" in m and m.get("id") == editor.request_id("session/set_mode"))
        told = position(
            editor, lambda m: (m.get("params") or {}).get("update", {}).get("sessionUpdate") == "current_mode_update"
        )
        assert answered < told
        listed = await conn.list_sessions(cwd=str(workspace))
        assert sid in [s.session_id for s in listed.sessions]

    later = Editor()
    async with running_agent(later, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        loaded = await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        assert loaded is not None and loaded.modes is not None
        assert {m.id for m in loaded.modes.available_modes} >= {"default", "plan", "acceptEdits"}
        assert "remember this" in later.text(sid, "user_message_chunk")
        assert "remember this" in later.text(sid)
        assert (await conn.prompt(session_id=sid, prompt=text("and now?"))).stop_reason == "end_turn"
    assert [str(v) for v in later.validator.violations] == []


async def test_errors_carry_acps_codes(editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path) -> None:
    responses = [{"fault": {"type": "status", "status": 401}}, answer("fine now")]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="sess_nope", prompt=text("hi"))
        assert unknown.value.code == RESOURCE_NOT_FOUND and "sess_nope" in str(unknown.value)
        with pytest.raises(RequestError) as unknown:
            await conn.set_session_mode(session_id="sess_nope", mode_id="plan")
        assert unknown.value.code == RESOURCE_NOT_FOUND
        with pytest.raises(RequestError) as unknown:
            await conn.load_session(session_id="sess_nope", cwd=str(workspace), mcp_servers=[])
        assert unknown.value.code == RESOURCE_NOT_FOUND
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        with pytest.raises(RequestError) as denied:
            await conn.prompt(session_id=sid, prompt=text("hi"))
        assert denied.value.code == AUTH_REQUIRED and "ANTHROPIC_API_KEY" in str(denied.value)
        assert (await conn.prompt(session_id=sid, prompt=text("again"))).stop_reason == "end_turn"


async def test_warnings_reach_the_editor_as_a_message_it_shows(editor: Editor, data_dir: Path, workspace: Path) -> None:
    broken = schema.McpServerStdio(name="broken", command=str(workspace / "no-such-server"), args=[], env=[])
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[broken])).session_id
        warned = "could not start"  # the server starts in the background; its failure is a notice of the session
        await editor.until(lambda: warned in editor.text(sid), what="the warning")
        [notice] = [u for u in editor.of_kind("agent_message_chunk", sid) if warned in u.content.text]
        assert notice.field_meta == {"notice": "warning"}
        assert not editor.incoming("window/showMessage") and not editor.incoming("window/logMessage")
        assert (await conn.prompt(session_id=sid, prompt=text("hello"))).stop_reason == "end_turn"


async def test_on_the_offline_demo_model_the_model_option_offers_that_model_alone(
    editor: Editor, data_dir: Path, workspace: Path
) -> None:
    """`acp --offline`: the `model` config option names the demo model, not a Claude model with a price (as
    `serve`'s `models` does), it can be picked, and the usage costs nothing."""
    async with running_agent(editor, "playground", data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        sid = session.session_id
        options = {o.id: o for o in session.config_options or []}
        model = options["model"]
        assert isinstance(model, schema.SessionConfigOptionSelect) and model.current_value == "offline-demo"
        assert [(o.value, o.name) for o in model.options if isinstance(o, schema.SessionConfigSelectOption)] == [
            ("offline-demo", "Offline demo model")
        ]
        assert {"mode", "thought_level"} <= options.keys()
        answered = await conn.set_config_option(config_id="model", session_id=sid, value="offline-demo")
        assert [o.current_value for o in answered.config_options if o.id == "model"] == ["offline-demo"]
        with pytest.raises(RequestError):
            await conn.set_config_option(config_id="model", session_id=sid, value="claude-sonnet-4-5")
        assert (await conn.prompt(session_id=sid, prompt=text("hello"))).stop_reason == "end_turn"
        usage = editor.of_kind("usage_update", sid)
        assert usage and all(u.cost is None for u in usage)
