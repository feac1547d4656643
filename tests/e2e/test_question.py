"""The permission question through `agent-bridge serve` (the VS Code extension's transport; issue 21 item 3):
the title is the whole command, every line, escapes visible; `_meta.question` marks the part that asks; an
always-option lists every rule it saves and the answer saves exactly those."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.harness import reject_once, running_editor, text_response, tool_response

HARMLESS = "echo '" + "all tests passed, nothing to see here, carry on with the next step please thanks" + "'"
COMMANDS = [
    f"{HARMLESS} && rm -f victim.txt",
    "ls\nrm -f victim.txt",
    "rm -f victim.txt #\r\x1b[2Kls -la",
    "rm -f victim.txt # \u202eexplained\u200b",
]
TITLES = [
    f"`{COMMANDS[0]}`",
    "`ls ⏎ rm -f victim.txt`",
    "`rm -f victim.txt #\\x0d\\x1b[2Kls -la`",
    "`rm -f victim.txt # \\u{202e}explained\\u{200b}`",
]


async def test_every_command_is_shown_whole_and_the_part_that_asks_is_marked(workspace: Path, data_dir: Path) -> None:
    (workspace / "victim.txt").write_text("keep\n")
    responses = [r for c in COMMANDS for r in (tool_response(("Bash", {"command": c})), text_response("no"))]
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        editor.on_permission = reject_once
        sid = await editor.new_session()
        for _ in COMMANDS:
            assert await editor.prompt(sid, "go") == {"stopReason": "end_turn"}
        asked = editor.permission_requests
    assert [a["toolCall"]["title"] for a in asked] == TITLES
    for params in asked:
        question = params["_meta"]["question"]
        shown = question["command"]
        assert params["toolCall"]["content"][0]["content"]["text"] == f"{shown}\n\n{question['reason']}"
        assert shown == f"{params['toolCall']['title'][1:-1]}".replace(" ⏎ ", "\n")
    marks = [
        [a["_meta"]["question"]["command"][m["start"] : m["end"]] for m in a["_meta"]["question"]["marks"]]
        for a in asked
    ]
    assert marks == [["rm -f victim.txt"], ["rm -f victim.txt"], ["\\x0d", "\\x1b"], ["rm -f victim.txt"]]
    assert [a["_meta"]["question"]["escaped"] for a in asked] == [False, False, True, True]
    assert (workspace / "victim.txt").read_text() == "keep\n"


async def test_an_always_answer_saves_exactly_the_rules_its_option_names(workspace: Path, data_dir: Path) -> None:
    command = "npm test && make build"
    scenario = {"responses": [tool_response(("Bash", {"command": command})), text_response("done")]}
    async with running_editor(scenario, workspace, data_dir) as editor:

        async def always(params: dict[str, Any]) -> dict[str, Any]:
            option = next(o for o in params["options"] if o["kind"] == "allow_always")
            return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}

        editor.on_permission = always
        sid = await editor.new_session()
        assert await editor.prompt(sid, "build") == {"stopReason": "end_turn"}
        [asked] = editor.permission_requests
    [option] = [o for o in asked["options"] if o["kind"] == "allow_always"]
    assert option["name"] == "Always allow Bash(npm test *), Bash(make build) (saved to settings.local.json)"
    saved = json.loads((workspace / ".agent-bridge" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == option["_meta"]["rules"] == ["Bash(npm test *)", "Bash(make build)"]
