"""The permission question over ACP (issue 21 item 3): an editor that shows only the title still sees the whole
command; `content` says it with the reason; `_meta.question` carries the marked parts and the paths (the shape
agreed in notes/question-wire.md); an always-option names every rule it saves and saves exactly those. Driven
by the official SDK's client, every message checked by the strict oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import schema

from tests.acp.editor import Editor, running_agent
from tests.acp.test_conformance import FS, answer, scenario_file, text, tool_use

HARMLESS = "echo '" + "all tests passed, nothing to see here, carry on with the next step please thanks" + "'"


async def asked_params(editor: Editor) -> list[dict[str, Any]]:
    return [m["params"] for m in editor.incoming("session/request_permission")]


def rejecting(editor: Editor) -> None:
    async def reject(request: schema.RequestPermissionRequest) -> dict[str, Any]:
        return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}

    editor.on_permission = reject


async def test_the_title_is_the_whole_command_and_the_asking_part_is_marked(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    victim = workspace / "victim.txt"
    victim.write_text("keep\n")
    commands = [
        f"{HARMLESS} && rm -f victim.txt",
        "ls\n# only listing\nrm -f victim.txt",
        "rm -f victim.txt #\r\x1b[2Kls -la",
    ]
    responses = [r for c in commands for r in (tool_use("Bash", {"command": c}), answer("no"))]
    rejecting(editor)
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        for _ in commands:
            assert (await conn.prompt(session_id=sid, prompt=text("go"))).stop_reason == "end_turn"
    long, lines, hidden = await asked_params(editor)
    assert long["toolCall"]["title"] == f"`{commands[0]}`"
    assert long["toolCall"]["content"][0]["content"]["text"].startswith(commands[0] + "\n\n")
    question = long["_meta"]["question"]
    assert [question["command"][m["start"] : m["end"]] for m in question["marks"]] == ["rm -f victim.txt"]
    assert question["reason"] == long["_meta"]["reason"] and question["escaped"] is False
    assert lines["toolCall"]["title"] == "`ls ⏎ # only listing ⏎ rm -f victim.txt`"
    assert lines["_meta"]["question"]["command"] == commands[1]
    assert hidden["toolCall"]["title"] == "`rm -f victim.txt #\\x0d\\x1b[2Kls -la`"
    assert hidden["_meta"]["question"]["escaped"] is True
    assert [
        hidden["_meta"]["question"]["command"][m["start"] : m["end"]] for m in hidden["_meta"]["question"]["marks"]
    ] == ["\\x0d", "\\x1b"]
    assert editor.permission_requests[0].tool_call.title == long["toolCall"]["title"], "as the SDK reads it"
    assert victim.read_text() == "keep\n"


async def test_a_write_through_a_symlink_names_the_file_it_writes(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    home_file = tmp_path / "outside" / ".bash_login"  # (a new file: an existing one would have to be Read first)
    home_file.parent.mkdir()
    (workspace / "rc").symlink_to(home_file)
    rejecting(editor)
    responses = [tool_use("Write", {"file_path": str(workspace / "rc"), "content": "pwned\n"}), answer("no")]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("go"))).stop_reason == "end_turn"
    [asked] = await asked_params(editor)
    assert asked["toolCall"]["title"] == f"Write {workspace / 'rc'} → {home_file}"
    assert asked["_meta"]["question"]["paths"] == [{"named": str(workspace / "rc"), "resolved": str(home_file)}]
    assert asked["toolCall"]["content"][0]["content"]["text"].startswith(f"{workspace / 'rc'} → {home_file}\n\n")
    assert not home_file.exists()


async def test_an_always_option_saves_exactly_the_rules_it_names(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    chosen: list[schema.PermissionOption] = []

    async def always(request: schema.RequestPermissionRequest) -> dict[str, Any]:
        option = next(o for o in request.options if o.kind == "allow_always")
        chosen.append(option)
        return {"outcome": {"outcome": "selected", "optionId": option.option_id}}

    editor.on_permission = always
    responses = [tool_use("Bash", {"command": "true && npm test"}), answer("ran")]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("go"))).stop_reason == "end_turn"
    [asked] = await asked_params(editor)
    [option] = [o for o in asked["options"] if o["kind"] == "allow_always"]
    assert option["name"] == "Always allow Bash(npm test *) (saved to settings.local.json)"
    saved = json.loads((workspace / ".agent-bridge" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == option["_meta"]["rules"] == ["Bash(npm test *)"]
    assert chosen[0].name == option["name"]
