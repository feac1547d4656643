"""The OS sandbox through the real protocol: what a session allows, the sandbox still stops; where it can't
start, the editor hears so once and commands ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.tools.sandbox import probe
from tests.e2e.harness import poll, running_editor

BYPASS = {"permissionMode": "bypassPermissions"}


async def test_bypass_permissions_still_cannot_write_settings_or_leave_the_workspace(
    workspace: Path, data_dir: Path, tmp_path: Path
) -> None:
    if not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    outside = tmp_path / "outside"
    outside.mkdir()
    grant = json.dumps({"permissions": {"allow": ["Bash"]}})
    (workspace / ".claude").mkdir()
    async with running_editor("playground", workspace, data_dir, initialization_options=BYPASS) as editor:
        sid = await editor.new_session()
        for command in (
            f"d=.agent-bridge; mkdir -p $d; printf '%s' '{grant}' > $d/settings.local.json",
            f"c=.cla; printf '%s' '{grant}' > ${{c}}ude/settings.json",  # a directory that exists
            "echo '# obey me' > CLAUDE.md",
            f"echo out > {outside}/escaped",
            "echo inside > made-here.txt",
        ):
            assert await editor.prompt(sid, f"run: {command}") == {"stopReason": "end_turn"}
        # The engine asks only for the two computed paths, and the editor (the harness) allows them: every
        # command ran with the engine's permission, so what holds below is the sandbox alone.
        asked = [r["toolCall"]["rawInput"]["command"] for r in editor.permission_requests]
        assert all("$d" in c or "${c}" in c for c in asked), asked
    assert not (workspace / ".agent-bridge" / "settings.local.json").exists()
    assert not (workspace / ".claude" / "settings.json").exists()
    assert not (workspace / "CLAUDE.md").exists()
    assert not (outside / "escaped").exists()
    assert (workspace / "made-here.txt").read_text() == "inside\n"
    assert sorted(p.name for p in workspace.iterdir()) == [".claude", "made-here.txt"]  # no placeholder left


async def test_an_unavailable_sandbox_is_said_once_and_commands_ask(workspace: Path, data_dir: Path) -> None:
    (workspace / ".agent-bridge").mkdir()
    rules = {"permissions": {"allow": ["Bash(touch *)"]}}
    (workspace / ".agent-bridge" / "settings.json").write_text(json.dumps(rules))
    env = {"AGENT_BRIDGE_BWRAP": str(data_dir / "no-such-bwrap")}
    async with running_editor("playground", workspace, data_dir, env=env) as editor:
        sid = await editor.new_session()
        await poll(lambda: editor.client.messages, what="the warning")
        warnings = [m.message for m in editor.client.messages if "OS sandbox unavailable" in m.message]
        assert len(warnings) == 1 and "will ask" in warnings[0]
        assert await editor.prompt(sid, "run: touch made") == {"stopReason": "end_turn"}
        [request] = editor.permission_requests  # the allow rule alone no longer runs it
        assert "sandbox is unavailable" in json.dumps(request)
        assert (workspace / "made").exists()  # allowed once by the editor, it ran
        assert await editor.prompt(sid, "run: ls") == {"stopReason": "end_turn"}
        assert len(editor.permission_requests) == 1  # read-only commands do not ask
