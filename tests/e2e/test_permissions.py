"""The permission engine over the protocol: remembered rules, feedback, modes, hooks, bad settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.harness import poll, running_editor, text_response, tool_response


def _option(request: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(o for o in request["options"] if o["kind"] == kind)


def _result(editor: Any, index: int = -1) -> dict[str, Any]:
    block: dict[str, Any] = editor.model.valid_requests[index].body["messages"][-1]["content"][0]
    return block


async def test_allow_always_saves_the_shown_rule_once_and_the_next_call_runs(workspace: Path, data_dir: Path) -> None:
    command = "npm run test --silent"
    bash = ("Bash", {"command": command})
    scenario = {"responses": [tool_response(bash), text_response("1"), tool_response(bash), text_response("2")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        shown: list[dict[str, Any]] = []

        async def always(params: dict[str, Any]) -> dict[str, Any]:
            option = _option(params, "allow_always")
            shown.append(option)
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

        editor.on_permission = always
        first, second = await editor.new_session(), await editor.new_session()
        await editor.prompt(first, "run tests")
        [option] = shown
        rule, destination = option["_meta"]["rule"], Path(option["_meta"]["destination"])
        assert rule == "Bash(npm run test *)" and rule in option["name"]
        assert destination == workspace / ".agent-bridge" / "settings.local.json"
        assert json.loads(destination.read_text())["permissions"]["allow"] == [rule]
        await editor.prompt(second, "again, in another session of the project")
        assert len(editor.permission_requests) == 1, "the saved rule applies at once to every session"
        assert json.loads(destination.read_text())["permissions"]["allow"] == [rule], "saved once"


async def test_reject_with_feedback_reaches_the_model(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(("Bash", {"command": "rm -rf build"})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:

        async def reject(params: dict[str, Any]) -> dict[str, Any]:
            return {
                "outcome": {"outcome": "selected", "optionId": _option(params, "reject_once")["optionId"]},
                "_meta": {"feedback": "use make clean instead"},
            }

        editor.on_permission = reject
        sid = await editor.new_session()
        assert await editor.prompt(sid, "clean") == {"stopReason": "end_turn"}
        result = _result(editor)
        assert result["is_error"] and "Permission denied by user" in result["content"]
        assert "use make clean instead" in result["content"]


async def test_modes(workspace: Path, data_dir: Path) -> None:
    target = workspace / "out.txt"
    write = ("Write", {"file_path": str(target), "content": "hi\n"})
    responses = [tool_response(write), text_response("a")] * 3 + [
        tool_response(("ExitPlanMode", {"plan": "1. write the file"})),
        text_response("b"),
    ]
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "acceptEdits"})
        await editor.prompt(sid, "write it")
        assert target.read_text() == "hi\n" and editor.permission_requests == [], "acceptEdits: edits run"
        target.unlink()
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "dontAsk"})
        await editor.prompt(sid, "write it")
        assert not target.exists() and editor.permission_requests == [], "dontAsk: would-ask is denied"
        assert "denied" in _result(editor)["content"]
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        await editor.prompt(sid, "write it")
        assert not target.exists() and editor.permission_requests == [], "plan: only read-only tools"
        await editor.prompt(sid, "done planning")
        [request] = editor.permission_requests
        assert request["toolCall"]["title"] == "Ready to code?"
        assert editor.of_kind("current_mode_update", sid)[-1]["currentModeId"] == "dontAsk", (
            "accepting the plan leaves plan mode for the mode before it"
        )


async def test_a_pre_tool_use_hook_blocks(workspace: Path, data_dir: Path) -> None:
    hook = workspace / "hook.py"
    hook.write_text(
        "import sys, json\ndata = json.load(sys.stdin)\n"
        "print('no curl here: ' + data['tool_input']['command'], file=sys.stderr)\nsys.exit(2)\n"
    )
    settings = workspace / ".agent-bridge" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": f"python3 {hook}"}]}]
                }
            }
        )
    )
    scenario = {"responses": [tool_response(("Bash", {"command": "curl example.com"})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "fetch")
        result = _result(editor)
        assert result["is_error"] and "no curl here: curl example.com" in result["content"]
        assert editor.permission_requests == [], "the hook decided before any dialog"


async def test_an_invalid_settings_file_is_reported_and_skipped(workspace: Path, data_dir: Path) -> None:
    settings = workspace / ".agent-bridge" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": ["Bash(ls *)"], "deny": 7}}')
    (workspace / ".agent-bridge" / "settings.local.json").write_text("{not json")
    async with running_editor({"responses": [text_response("fine")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()

        # (three messages may come, in any order: the MCP config reader skips the broken local file too)
        def shown() -> str:
            return " ".join(m.message for m in editor.client.messages)

        await poll(
            lambda: "settings.json:" in shown().replace("settings.local.json", "") and "settings.local.json" in shown(),
            what="both problems shown",
        )
        assert await editor.prompt(sid, "still works") == {"stopReason": "end_turn"}


async def test_an_edit_asks_with_its_diff(workspace: Path, data_dir: Path) -> None:
    target = workspace / "app.py"
    target.write_text("x = 1\ny = 2\n")
    edit = ("Edit", {"file_path": str(target), "old_string": "y = 2", "new_string": "y = 3"})
    scenario = {
        "responses": [tool_response(("Read", {"file_path": str(target)})), tool_response(edit), text_response("edited")]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "change y")
        [request] = editor.permission_requests
        [diff] = [c for c in request["toolCall"]["content"] if c["type"] == "diff"]
        assert diff["path"] == str(target)
        assert "y = 2" in diff["oldText"] and "y = 3" in diff["newText"]
        assert target.read_text() == "x = 1\ny = 3\n"
        always = _option(request, "allow_always")
        assert always["_meta"]["rule"].startswith("Edit(") and "settings.local.json" in always["name"]


async def test_session_rules_from_the_editor_rank_first_and_deny_wins(workspace: Path, data_dir: Path) -> None:
    settings = workspace / ".agent-bridge" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(touch *)"]}}))
    made, listed = workspace / "made", workspace / "listed"
    scenario = {
        "responses": [
            tool_response(("Bash", {"command": f"touch {made}"})),
            text_response("1"),
            tool_response(("Bash", {"command": f"mkdir {listed}"})),
            text_response("2"),
        ]
    }
    options = {"deny": ["Bash(touch *)"], "allow": ["Bash(mkdir *)"]}
    async with running_editor(scenario, workspace, data_dir, initialization_options=options) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "touch")
        assert not made.exists() and "denied by rule Bash(touch *)" in _result(editor)["content"]
        await editor.prompt(sid, "mkdir")
        assert listed.is_dir() and editor.permission_requests == [], "the editor's allow rule applies"


async def test_the_settings_env_reaches_commands_and_an_edit_applies_to_the_next_one(
    workspace: Path, data_dir: Path
) -> None:
    settings = workspace / ".agent-bridge" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"env": {"AB_GREETING": "first-value"}}))
    echo = ("Bash", {"command": "echo greeting=$AB_GREETING"})
    scenario = {"responses": [tool_response(echo), text_response("1"), tool_response(echo), text_response("2")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "greet")
        assert "greeting=first-value" in str(_result(editor)["content"])
        settings.write_text(json.dumps({"env": {"AB_GREETING": "second-value!"}}))  # another size: a new stat key
        await editor.prompt(sid, "greet again")
        assert "greeting=second-value!" in str(_result(editor)["content"])
