"""The OS sandbox through the real protocol: what a session allows, the sandbox still stops; where it can't
start, the editor hears so once and commands ask."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bridge.execution.sandbox import probe
from tests.e2e.harness import Editor, poll, running_editor
from tests.git_env import GIT_TEST_ENV

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


# -- the workspace as it is, through the real protocol --------------------------------------------------------

GIT = GIT_TEST_ENV


def outside(cwd: Path, command: str) -> str:
    """The same command as the user would run it, outside the sandbox (the oracle)."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, **GIT}
    )
    return (done.stdout + done.stderr).strip()


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below `root` with its content; the index (inode numbers and times differ between two copies)
    as `git ls-files -s`."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if name == ".git/index":
            found[name] = outside(root, "git ls-files -s")
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_bytes()
    return found


async def run(editor: Editor, sid: str, command: str) -> str:
    """`command` through the Bash tool in a real turn; what the tool gave the model."""
    assert await editor.prompt(sid, f"run: {command}") == {"stopReason": "end_turn"}
    block = editor.model.valid_requests[-1].body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    content = block["content"]
    return str(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))


@pytest.mark.parametrize("repository", [True, False], ids=["repo", "fresh"])
async def test_git_through_the_bash_tool_changes_exactly_what_it_would_outside(
    workspace: Path, data_dir: Path, tmp_path: Path, repository: bool
) -> None:
    if not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / ".gitignore").write_text("build/\n")
    if repository:
        outside(workspace, "git init -q && git add -A && git commit -q -m base")
        (workspace / "README.md").write_text("# r\n")
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy, symlinks=True)
    commands = (
        ["git add -A && git commit -q -m x && git log --format=%H"]
        if repository
        else ["git init -q && git add -A && git commit -q -m first && git log --format=%H"]
    )
    commands += ["git config user.name someone", "ls -A; git status --porcelain --untracked-files=all"]
    async with running_editor("playground", workspace, data_dir, env=GIT) as editor:
        sid = await editor.new_session()
        for command in commands:
            inside = await run(editor, sid, command)
            assert inside.split("\n\n[sandbox]")[0] == (outside(copy, command) or "(no output)"), inside
            assert "[sandbox]" not in inside
        asked = [r["toolCall"]["rawInput"]["command"] for r in editor.permission_requests]
        assert asked == commands[:2]  # every command but the read-only listing asked; the editor allowed them
        config_question = json.dumps(editor.permission_requests[1])
        assert "git run programs outside the sandbox" in config_question
    assert tree(workspace) == tree(copy)  # the same files, the same commit, the same config: nothing else


async def test_a_command_over_a_limit_ends_cleanly_and_the_next_prompt_works(workspace: Path, data_dir: Path) -> None:
    if not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    (workspace / ".agent-bridge").mkdir()
    (workspace / ".agent-bridge" / "settings.json").write_text(
        json.dumps({"sandbox": {"limits": {"processes": 30, "memory": "100MB"}}})
    )
    async with running_editor("playground", workspace, data_dir, initialization_options=BYPASS) as editor:
        sid = await editor.new_session()
        fork_bomb = await run(editor, sid, "for i in $(seq 100); do sleep 30 & done; wait")
        assert '"processes": ' in fork_bomb and "so the sandbox stopped it" in fork_bomb
        hog = await run(editor, sid, "python3 -c \"b = b'x' * (500 * 1024 * 1024)\"")
        assert '"memory": ' in hog
        assert await run(editor, sid, "echo still here") == "still here"
