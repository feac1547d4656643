"""A turn end to end over the real protocol: streamed text, tool round trips, permissions, limits."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.offline.validation import history_errors
from tests.e2e.harness import reject_once, running_editor, text_response, tool_response


async def test_streamed_text_arrives_in_order_and_coalesced(workspace: Path, data_dir: Path) -> None:
    text = "Hello from the offline model. " * 20
    scenario = {"responses": [text_response(text, chunks=60, delay_ms=1)]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        result = await editor.prompt(sid, "hi")
        assert result == {"stopReason": "end_turn"}
        assert editor.text(sid) == text
        chunks = editor.of_kind("agent_message_chunk", sid)
        assert 1 <= len(chunks) <= 60
        assert editor.of_kind("usage_update", sid), "a usage_update follows each model response"
        usage = editor.of_kind("usage_update", sid)[-1]
        assert usage["size"] > 0 and usage["_meta"]["outputTokens"] >= 0
        assert editor.model.rejected == []


async def test_tool_round_trip_reads_a_file(workspace: Path, data_dir: Path) -> None:
    target = workspace / "notes.txt"
    target.write_text("first line\nsecond line\n")
    scenario = {
        "responses": [
            tool_response(("Read", {"file_path": str(target)}), text="Reading it."),
            text_response("The file has two lines."),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "what is in notes.txt?") == {"stopReason": "end_turn"}
        call = editor.of_kind("tool_call", sid)[0]
        assert call["kind"] == "read" and call["status"] == "pending"
        assert call["rawInput"]["file_path"] == str(target)
        final = editor.tool_updates(call["toolCallId"])[-1]
        assert final["status"] == "completed"
        messages = editor.last_request_messages()
        result = messages[-1]["content"][0]
        assert result["type"] == "tool_result" and result["tool_use_id"] == call["toolCallId"]
        assert "second line" in str(result["content"])
        assert not result.get("is_error")
        assert editor.permission_requests == [], "a read inside the workspace does not ask"
        assert editor.model.rejected == []


async def test_permission_allowed_runs_the_command(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("Bash", {"command": "echo allowed-$((6*7))"})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "run it") == {"stopReason": "end_turn"}
        [request] = editor.permission_requests
        assert request["sessionId"] == sid
        assert request["toolCall"]["rawInput"]["command"] == "echo allowed-$((6*7))"
        assert {o["kind"] for o in request["options"]} >= {"allow_once", "reject_once"}
        result = editor.last_request_messages()[-1]["content"][0]
        assert "allowed-42" in str(result["content"]) and not result.get("is_error")


async def test_permission_denied_tells_the_model_and_the_turn_goes_on(workspace: Path, data_dir: Path) -> None:
    marker = workspace / "created"
    scenario = {
        "responses": [tool_response(("Bash", {"command": f"touch {marker}"})), text_response("I will not do it.")]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        editor.on_permission = reject_once
        sid = await editor.new_session()
        assert await editor.prompt(sid, "make a file") == {"stopReason": "end_turn"}
        result = editor.last_request_messages()[-1]["content"][0]
        assert result["is_error"] is True
        assert "Permission denied by user" in str(result["content"])
        assert not marker.exists()
        call = editor.of_kind("tool_call", sid)[0]
        assert editor.tool_updates(call["toolCallId"])[-1]["status"] == "failed"
        assert editor.text(sid) == "I will not do it."


async def test_max_turns_stops_the_loop(workspace: Path, data_dir: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("x\n")
    scenario = {"responses": [tool_response(("Read", {"file_path": str(target)}))], "after_last": "repeat_last"}
    async with running_editor(scenario, workspace, data_dir, env={"AGENT_BRIDGE_MAX_TURNS": "3"}) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "loop forever") == {"stopReason": "max_turn_requests"}
        assert len(editor.model.valid_requests) == 3
        # The history is still valid: the next prompt's request is accepted.
        await editor.prompt(sid, "stop now")
        assert editor.model.rejected == []
        assert history_errors(editor.last_request_messages()) == []


async def test_several_sessions_in_one_process(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [text_response("one"), text_response("two")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        first, second = await editor.new_session(), await editor.new_session()
        assert first != second
        await editor.prompt(first, "a")
        await editor.prompt(second, "b")
        assert editor.text(first) == "one" and editor.text(second) == "two"
        assert len(editor.model.valid_requests[-1].body["messages"]) == 1, "sessions do not share history"


async def test_observers_see_backfilled_input_but_the_model_gets_its_own_bytes(workspace: Path, data_dir: Path) -> None:
    (workspace / "notes.txt").write_text("hello\n")
    sent = f"{workspace}/sub/../notes.txt"
    scenario = {"responses": [tool_response(("Read", {"file_path": sent})), text_response("done")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "read")
        call = editor.of_kind("tool_call", sid)[0]
        assert call["rawInput"]["file_path"] == str(workspace / "notes.txt"), "observers see the clean path"
        raw = editor.model.valid_requests[1].raw.decode()
        assert json.dumps(sent)[1:-1] in raw, "the request carries the model's own input, byte for byte"
        use = editor.model.valid_requests[1].body["messages"][1]["content"][0]
        assert use["input"] == {"file_path": sent}


async def test_read_sees_the_editors_unsaved_text(workspace: Path, data_dir: Path) -> None:
    from lsprotocol import types

    target = workspace / "draft.py"
    target.write_text("on disk\n")
    scenario = {"responses": [tool_response(("Read", {"file_path": str(target)})), text_response("seen")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        editor.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=target.as_uri(), language_id="python", version=1, text="unsaved in the editor\n"
                )
            )
        )
        sid = await editor.new_session()
        await editor.prompt(sid, "read the draft")
        result = editor.last_request_messages()[-1]["content"][0]
        assert "1\tunsaved in the editor" in str(result["content"]) and "1\ton disk" not in str(result["content"])


async def test_a_todo_list_shows_as_the_plan(workspace: Path, data_dir: Path) -> None:
    todos = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading the code"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
    ]
    scenario = {"responses": [tool_response(("TodoWrite", {"todos": todos})), text_response("on it")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "plan it") == {"stopReason": "end_turn"}
        [plan] = editor.of_kind("plan", sid)
        assert plan["entries"] == [
            {"content": "Read the code", "status": "completed", "priority": "medium"},
            {"content": "Fix the bug", "status": "in_progress", "priority": "medium"},
        ]
        kinds = editor.kinds(sid)
        assert kinds.index("plan") < max(i for i, k in enumerate(kinds) if k == "tool_call_update"), (
            "the plan is shown as the call finishes"
        )
