"""A folder's settings files are data from a stranger, read as such, end to end: a FIFO, a device or a link out of
the folder in place of `.agent-bridge/settings.json`, `.claude/settings.json` or `.mcp.json` is skipped with a
notice (it never hangs the bridge, other projects' sessions included, nor fills its memory); `Infinity` is not
a number; "always allow" never writes a folder's settings through a link. Each with its control."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import AGENT_BRIDGE, running_editor, text_response, tool_response
from tests.e2e.test_trust import UNTRUSTED, clone, run_cli, scenario_file

DEADLINE_S = 60


@pytest.mark.parametrize("name", [".agent-bridge/settings.json", ".claude/settings.json", ".mcp.json"])
async def test_serve_a_fifo_settings_file_is_skipped_and_every_session_answers(
    tmp_path: Path, data_dir: Path, name: str
) -> None:
    hostile, other = tmp_path / "hostile", tmp_path / "other"
    (hostile / name).parent.mkdir(parents=True)
    other.mkdir()
    os.mkfifo(hostile / name)
    scenario = {"responses": [text_response("one"), text_response("two")]}
    async with running_editor(scenario, other, data_dir, env=UNTRUSTED) as editor:
        ended = []
        for folder in (hostile, other):
            sid = await asyncio.wait_for(editor.new_session(folder), DEADLINE_S)
            ended.append((await asyncio.wait_for(editor.prompt(sid, "hi"), DEADLINE_S))["stopReason"])
        notices = "\n".join(m.message for m in editor.client.messages) + json.dumps(editor.of_kind("notice"))
    assert ended == ["end_turn", "end_turn"]
    assert f"{hostile / name} is a FIFO, not a regular file" in notices, notices


def run_bounded(tmp_path: Path, cwd: Path, scenario: str, env: dict[str, str]) -> str:
    """`agent-bridge run` with its address space bounded (a read of /dev/zero ends in MemoryError, not the host's
    memory), a deadline, every question denied."""

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    full = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        **UNTRUSTED,
        **env,
    }
    done = subprocess.run(
        [AGENT_BRIDGE, "run", "--offline", scenario, "--non-interactive", "hello"],
        cwd=cwd,
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=bound,  # a resource limit only
    )
    return done.stdout + done.stderr


@pytest.mark.parametrize("whose", ["the folder's", "the user's"])
def test_a_settings_file_linked_to_dev_zero_is_skipped(tmp_path: Path, whose: str) -> None:
    project = clone(tmp_path, {"README.md": "hi\n"})
    linked = (
        project / ".agent-bridge" / "settings.json" if whose == "the folder's" else tmp_path / "cfg" / "settings.json"
    )
    linked.parent.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/zero", linked)
    out = run_bounded(tmp_path, project, scenario_file(tmp_path, [text_response("done")]), {})
    assert "MemoryError" not in out and "done" in out, out
    why = "leads outside the allowed directories" if whose == "the folder's" else "is a character device"
    assert f"{linked}" in out and why in out, out


@pytest.mark.parametrize("number", ["Infinity", "NaN", "1e999"])
async def test_a_non_finite_number_in_settings_is_invalid_not_a_crash(tmp_path: Path, number: str) -> None:
    project = clone(tmp_path, {"README.md": "hi\n"})
    (project / ".agent-bridge").mkdir()
    (project / ".agent-bridge" / "settings.json").write_text(f'{{"sandbox": {{"limits": {{"memory": {number}}}}}}}')
    (project / ".agent-bridge" / "settings.local.json").write_text('{"sandbox": {"limits": {"memory": "1GB"}}}')
    out = await run_cli(
        tmp_path, project, "hello", "--non-interactive", scenario=scenario_file(tmp_path, [text_response("done")])
    )
    assert "done" in out and "Error" not in out, out
    assert "settings.json: is not valid JSON" in out, out


async def test_run_a_fifo_settings_file_is_skipped(tmp_path: Path) -> None:
    project = clone(tmp_path, {"README.md": "hi\n"})
    (project / ".claude").mkdir()
    os.mkfifo(project / ".claude" / "settings.json")
    out = await run_cli(
        tmp_path, project, "hello", "--non-interactive", scenario=scenario_file(tmp_path, [text_response("done")])
    )
    assert "done" in out and "is a FIFO, not a regular file" in out, out


# --- "always allow" never writes through a link ----------------------------------------------------------------


def choosing_always(asked: list[str]) -> Any:
    """Rejects every Read; answers a command with "always allow" when offered (else once)."""

    async def answer(params: dict[str, Any]) -> dict[str, Any]:
        options = {o["kind"]: o["optionId"] for o in params["options"]}
        asked.append(params["toolCall"]["title"])
        if "touch" in params["toolCall"]["title"]:
            choice = options.get("allow_always", options["allow_once"])
        else:
            choice = options["reject_once"]
        return {"outcome": {"outcome": "selected", "optionId": choice}}

    return answer


async def test_serve_always_allow_never_copies_a_linked_outside_json_into_the_folder(
    tmp_path: Path, data_dir: Path
) -> None:
    creds = data_dir / "home" / ".config" / "gcloud" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(json.dumps({"refresh_token": "REFRESH-TOKEN-F3", "type": "authorized_user"}))
    project = clone(tmp_path, {"README.md": "hi\n"})
    local = project / ".agent-bridge" / "settings.local.json"
    local.parent.mkdir()
    os.symlink(creds, local)
    read = tool_response(("Read", {"file_path": str(local)}))
    command = tool_response(("Bash", {"command": "touch made-by-the-model"}))
    scenario = {"responses": [read, command, read, text_response("done")]}
    asked: list[str] = []
    async with running_editor(scenario, project, data_dir, env=UNTRUSTED) as editor:
        editor.on_permission = choosing_always(asked)
        sid = await editor.new_session()
        await asyncio.wait_for(editor.prompt(sid, "hi"), DEADLINE_S)
        bodies = [json.dumps(r.body["messages"]) for r in editor.model.valid_requests]
    assert any("touch" in q for q in asked) and sum("Read" in q for q in asked) == 2, asked
    assert (project / "made-by-the-model").exists(), "the control: the command was allowed and ran"
    assert not any("REFRESH-TOKEN-F3" in body for body in bodies)
    assert local.is_symlink() and os.readlink(local) == str(creds)
    assert json.loads(creds.read_text()) == {"refresh_token": "REFRESH-TOKEN-F3", "type": "authorized_user"}
    for path in project.rglob("*"):
        assert not path.is_file() or path.is_symlink() or "REFRESH-TOKEN-F3" not in path.read_text(errors="replace")


@pytest.mark.parametrize("linked", [True, False])
async def test_serve_always_allow_refuses_to_save_into_a_linked_local_settings_file(
    tmp_path: Path, data_dir: Path, linked: bool
) -> None:
    """A link that stays in the folder is read (no lockdown, so "always allow" is offered), but the rule is not
    saved through it: a notice says so, the link and its target stay as they were. The control: a regular file
    gets the rule."""
    project = clone(tmp_path, {"README.md": "hi\n", "shared/settings.json": {"permissions": {"deny": ["Read(x)"]}}})
    local = project / ".agent-bridge" / "settings.local.json"
    local.parent.mkdir()
    if linked:
        os.symlink("../shared/settings.json", local)
    else:
        local.write_text((project / "shared" / "settings.json").read_text())
    scenario = {"responses": [tool_response(("Bash", {"command": "touch made-by-the-model"})), text_response("done")]}
    asked: list[str] = []
    async with running_editor(scenario, project, data_dir, env=UNTRUSTED) as editor:
        editor.on_permission = choosing_always(asked)
        sid = await editor.new_session()
        await asyncio.wait_for(editor.prompt(sid, "hi"), DEADLINE_S)
        notices = "\n".join(m.message for m in editor.client.messages) + json.dumps(editor.of_kind("notice"))
    assert (project / "made-by-the-model").exists(), "the answer still counts for this call"
    shared = json.loads((project / "shared" / "settings.json").read_text())
    assert shared == {"permissions": {"deny": ["Read(x)"]}}
    if linked:
        assert local.is_symlink() and "is a symbolic link, not a regular file" in notices, notices
        assert "the rule is not saved" in notices, notices
    else:
        assert json.loads(local.read_text())["permissions"]["allow"] == ["Bash(touch *)"], notices
