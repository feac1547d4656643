"""What the VS Code panel reads off the wire (issues 24 and 25): each a real turn through `serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.harness import reject_once, running_editor, text_response, tool_response


async def test_a_permission_question_carries_the_tools_word_on_destructive(workspace: Path, data_dir: Path) -> None:
    """`toolCall._meta.destructive` is `Tool.is_destructive` of the call, so the panel needs no guess of its own:
    `rm -rf` and an overwrite say yes, a new file and a harmless command say no."""
    existing = workspace / "notes.txt"
    existing.write_text("keep me\n")
    calls = [
        ("Bash", {"command": "rm -rf build"}),
        ("Bash", {"command": "npm test"}),
        ("Write", {"file_path": str(existing), "content": "overwritten\n"}),  # read first: an overwrite may ask
        ("Write", {"file_path": str(workspace / "new.txt"), "content": "new\n"}),
    ]
    responses = [r for call in calls for r in (tool_response(call), text_response("ok"))]
    responses[4:4] = [tool_response(("Read", {"file_path": str(existing)}))]
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        editor.on_permission = reject_once
        sid = await editor.new_session()
        for _ in calls:
            await editor.prompt(sid, "go")
        said: list[Any] = [r["toolCall"].get("_meta", {}).get("destructive") for r in editor.permission_requests]
        assert said == [True, False, True, False]
        assert existing.read_text() == "keep me\n"
