"""What the VS Code extension needs of the bridge: an edit the user changed before accepting is what gets
written (and the model is told), a rejected edit keeps its diff, the model picker (`models`,
`session/set_model`) and the editor's extra directories."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from tests.e2e.harness import running_editor, text_response, tool_response


def _edit_scenario(target: Path) -> dict[str, Any]:
    edit = ("Edit", {"file_path": str(target), "old_string": "y = 2", "new_string": "y = 3"})
    return {
        "responses": [tool_response(("Read", {"file_path": str(target)})), tool_response(edit), text_response("edited")]
    }


def _last_result(editor: Any) -> dict[str, Any]:
    block: dict[str, Any] = editor.model.valid_requests[-1].body["messages"][-1]["content"][0]
    return block


def _accepting(edited: str) -> Any:
    """An editor's answer to the edit's question: allowed once, with the proposed text edited to `edited`."""

    async def answer(_params: dict[str, Any]) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}, "_meta": {"editedText": edited}}

    return answer


def _finished(editor: Any, sid: str) -> dict[str, Any]:
    return next(
        u
        for u in editor.of_kind("tool_call_update", sid)
        if u.get("status") in ("completed", "failed") and any(c.get("type") == "diff" for c in u.get("content") or [])
    )


async def test_an_edit_changed_by_the_user_is_written_as_changed_and_the_model_is_told(
    workspace: Path, data_dir: Path
) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\ny = 2\n")
    async with running_editor(_edit_scenario(target), workspace, data_dir) as editor:

        async def accept_edited(params: dict[str, Any]) -> dict[str, Any]:
            [diff] = [c for c in params["toolCall"]["content"] if c["type"] == "diff"]
            assert diff["newText"] == "x = 1\ny = 3\n"
            return {
                "outcome": {"outcome": "selected", "optionId": "allow_once"},
                "_meta": {"editedText": "x = 1\ny = 30  # the user's value\n"},
            }

        editor.on_permission = accept_edited
        sid = await editor.new_session()
        assert await editor.prompt(sid, "change y") == {"stopReason": "end_turn"}
        assert target.read_text() == "x = 1\ny = 30  # the user's value\n"
        result = _last_result(editor)
        assert not result.get("is_error")
        text = str(result["content"])
        assert "The user edited the proposed change before accepting it" in text
        assert "-y = 3\n+y = 30  # the user's value" in text
        [diff] = [c for c in _finished(editor, sid)["content"] if c["type"] == "diff"]
        assert diff["newText"] == "x = 1\ny = 30  # the user's value\n", "the card shows what was written"


async def test_an_unchanged_edit_text_is_a_plain_accept(workspace: Path, data_dir: Path) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\ny = 2\n")
    async with running_editor(_edit_scenario(target), workspace, data_dir) as editor:
        editor.on_permission = _accepting("x = 1\ny = 3\n")  # the proposal as it was
        sid = await editor.new_session()
        await editor.prompt(sid, "change y")
        assert target.read_text() == "x = 1\ny = 3\n"
        assert "The user edited" not in str(_last_result(editor)["content"])


async def test_edited_text_on_a_reject_writes_nothing_and_the_rejected_call_keeps_its_diff(
    workspace: Path, data_dir: Path
) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\ny = 2\n")
    async with running_editor(_edit_scenario(target), workspace, data_dir) as editor:

        async def reject(params: dict[str, Any]) -> dict[str, Any]:
            return {
                "outcome": {"outcome": "selected", "optionId": "reject_once"},
                "_meta": {"editedText": "oops\n", "feedback": "keep y"},
            }

        editor.on_permission = reject
        sid = await editor.new_session()
        await editor.prompt(sid, "change y")
        assert target.read_text() == "x = 1\ny = 2\n"
        finished = _finished(editor, sid)
        assert finished["status"] == "failed"
        [diff] = [c for c in finished["content"] if c["type"] == "diff"]
        assert diff["newText"] == "x = 1\ny = 3\n", "a rejected edit still shows what it proposed"


async def test_session_new_lists_models_and_set_model_changes_the_sessions_model(
    workspace: Path, data_dir: Path
) -> None:
    scenario = {"responses": [text_response("one"), text_response("two")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        result = await editor.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        models = result["models"]
        assert models["currentModelId"] == "claude-sonnet-4-5"
        assert {m["modelId"] for m in models["availableModels"]} >= {"claude-sonnet-4-5", "claude-opus-4-5"}
        sid = result["sessionId"]
        await editor.prompt(sid, "first")
        assert editor.model.valid_requests[-1].body["model"] == "claude-sonnet-4-5"
        assert await editor.request("session/set_model", {"sessionId": sid, "modelId": "claude-opus-4-5"}) == {}
        await editor.prompt(sid, "second")
        assert editor.model.valid_requests[-1].body["model"] == "claude-opus-4-5"
        again = await editor.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert again["models"]["currentModelId"] == "claude-sonnet-4-5", "only that session changed"


async def test_set_model_without_a_model_id_is_invalid_params(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        try:
            await editor.request("session/set_model", {"sessionId": sid, "modelId": ""})
        except Exception as error:
            assert "modelId" in str(error)
        else:
            raise AssertionError("an empty modelId was accepted")


async def test_additional_directories_from_the_editor_are_workspace(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    extra = tmp_path / "shared-lib"
    extra.mkdir()
    target = extra / "notes.txt"
    scenario = {
        "responses": [tool_response(("Write", {"file_path": str(target), "content": "hi\n"})), text_response("written")]
    }
    options = {"additionalDirectories": [str(extra)], "permissionMode": "acceptEdits"}
    async with running_editor(scenario, workspace, data_dir, initialization_options=options) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "write the note")
        assert editor.permission_requests == [], "acceptEdits covers the extra directory like the workspace"
        assert target.read_text() == "hi\n"


async def test_a_loaded_session_replays_its_last_plan(workspace: Path, data_dir: Path) -> None:
    first = [
        {"content": "Read the code", "status": "completed", "activeForm": "Reading"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing"},
    ]
    later = [{**first[0]}, {**first[1], "status": "completed"}]
    scenario = {
        "responses": [
            tool_response(("TodoWrite", {"todos": first})),
            tool_response(("TodoWrite", {"todos": later})),
            text_response("planned"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "plan it")
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        [plan] = editor.of_kind("plan", sid)
        assert [(e["content"], e["status"]) for e in plan["entries"]] == [
            ("Read the code", "completed"),
            ("Fix the bug", "completed"),
        ]


async def test_an_edit_of_a_diff_that_is_not_the_whole_file_is_refused_not_written_as_the_file(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    """Attack round 8: an Edit of a file outside the workspace is asked before the file is read, so its diff is
    only old_string -> new_string. The user's edit of that text was written as the whole file: 100 lines became
    one. Such a diff is marked (`_meta.partial`, `unread`), and an edit of it is refused: nothing is written, the
    user and the model are told. A Write over such a file is not shown as a new file either."""
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "notes.txt"
    original = "".join(f"line {n}\n" for n in range(1, 101))
    target.write_text(original)
    edit = ("Edit", {"file_path": str(target), "old_string": "line 50\n", "new_string": "line fifty\n"})
    write = ("Write", {"file_path": str(outside / "other.txt"), "content": "new\n"})
    (outside / "other.txt").write_text("old\n")
    scenario = {
        "responses": [
            tool_response(("Read", {"file_path": str(target)})),
            tool_response(edit),
            tool_response(write),
            text_response("done"),
        ]
    }
    shown: list[dict[str, Any]] = []
    async with running_editor(scenario, workspace, data_dir) as editor:

        async def answer(params: dict[str, Any]) -> dict[str, Any]:
            diffs = [c for c in params["toolCall"].get("content") or [] if c["type"] == "diff"]
            shown.extend(diffs)
            if diffs and diffs[0]["path"] == str(target):
                return {
                    "outcome": {"outcome": "selected", "optionId": "allow_once"},
                    "_meta": {"editedText": "line FIFTY\n"},
                }
            if diffs:
                return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        editor.on_permission = answer
        sid = await editor.new_session()
        assert await editor.prompt(sid, "change line 50") == {"stopReason": "end_turn"}
        assert target.read_text() == original
        edit_result = editor.model.valid_requests[2].body["messages"][-1]["content"][0]
        assert "can't be written as the file: nothing was written" in str(edit_result["content"])
    [edit_diff, write_diff] = shown
    assert edit_diff["_meta"] == {"partial": True, "unread": True}
    assert write_diff["oldText"] is None and write_diff["_meta"] == {"partial": True, "unread": True}
    assert (outside / "other.txt").read_text() == "old\n"


async def test_post_tool_use_hooks_are_told_the_users_edit_that_ran(workspace: Path, data_dir: Path) -> None:
    """A PostToolUse hook (a formatter, an audit log) was handed the model's proposal, not the user's edit of it that
    was written: it now gets the call that ran, its tool and input."""
    seen = workspace.parent / "post-seen.jsonl"
    record = f"import sys; open({str(seen)!r}, 'a').write(sys.stdin.read() + chr(10))"
    (data_dir / "config").mkdir(parents=True, exist_ok=True)
    command = {"type": "command", "command": f"python3 -c {shlex.quote(record)}"}
    hooks = {"PostToolUse": [{"matcher": "Edit|Write", "hooks": [command]}]}
    (data_dir / "config" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    target = workspace / "app.py"
    target.write_text("x = 1\ny = 2\n")
    async with running_editor(_edit_scenario(target), workspace, data_dir) as editor:
        editor.on_permission = _accepting("x = 1\ny = 30\n")
        sid = await editor.new_session()
        assert await editor.prompt(sid, "change y") == {"stopReason": "end_turn"}
    assert target.read_text() == "x = 1\ny = 30\n"
    [told] = [json.loads(line) for line in seen.read_text().splitlines() if line.strip()]
    assert "y = 30" in json.dumps(told["tool_input"]) and 'y = 3"' not in json.dumps(told["tool_input"]), told
    assert told["tool_name"] in ("Edit", "Write"), told
