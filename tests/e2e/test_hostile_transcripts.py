"""Attack round 17 F3 end to end: a stored transcript anyone may have written (a hand edit, another tool, an
attacker) is loaded (`session/load`, `run --resume`, `run --continue`), what of it the API would refuse is
dropped and said, and the next prompt is answered: no traceback, no bare `'id'`, no request the offline API (which
refuses what the Messages API refuses) turns down, and the session list survives the file."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.offline.validation import history_errors
from tests.e2e.harness import running_editor, text_response
from tests.poll import poll

REPO = Path(__file__).resolve().parents[2]


def _msg(role: str, *blocks: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": list(blocks)}}


def _use(use_id: Any, **extra: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": use_id, "name": "Read", "input": {"file_path": "a.txt"}, **extra}
    return {k: v for k, v in block.items() if v is not None}


ASK = _msg("user", {"type": "text", "text": "do it"})
CASES: dict[str, list[dict[str, Any]]] = {
    "dup ids": [ASK, _msg("assistant", _use("toolu_1"), _use("toolu_1"))],
    "one id in two turns": [
        ASK,
        _msg("assistant", _use("toolu_2")),
        _msg("user", {"type": "tool_result", "tool_use_id": "toolu_2", "content": "x"}),
        _msg("assistant", _use("toolu_2")),
        _msg("user", {"type": "tool_result", "tool_use_id": "toolu_2", "content": "y"}),
        _msg("assistant", {"type": "text", "text": "fine"}),
    ],
    "bad id chars": [ASK, _msg("assistant", _use("../../x y"))],
    "no id": [ASK, _msg("assistant", _use(None))],
    "string block": [ASK, _msg("assistant", "just a string")],
    "text not str": [_msg("user", {"type": "text", "text": 5})],
    "input not dict": [ASK, _msg("assistant", {"type": "tool_use", "id": "toolu_3", "name": "Read", "input": "s"})],
    "unknown block": [ASK, _msg("assistant", {"type": "bogus", "x": 1})],
    "thinking no sig": [ASK, _msg("assistant", {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "a"})],
    "result in assistant": [ASK, _msg("assistant", {"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"})],
    "tool_use in user": [_msg("user", {"type": "text", "text": "hi"}, _use("toolu_4"))],
    "bad image": [_msg("user", {"type": "image", "source": {"type": "base64", "media_type": "x/y", "data": "!!"}})],
}


def _write(data_dir: Path, sid: str, workspace: Path, lines: list[dict[str, Any]]) -> None:
    sessions = data_dir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    header = {"type": "session", "sessionId": sid, "cwd": str(workspace), "createdAt": time.time()}
    (sessions / f"{sid}.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *lines]) + "\n")


def _more_than(items: list[Any], count: int) -> bool:
    return len(items) > count


def _sid(name: str) -> str:
    return "sess_" + name.replace(" ", "_")


async def test_hostile_transcripts_load_and_go_on_through_the_protocol(workspace: Path, data_dir: Path) -> None:
    for name, lines in CASES.items():
        _write(data_dir, _sid(name), workspace, lines)
    scenario = {"responses": [text_response("ok") for _ in CASES]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        listed = await editor.request("session/list", {"cwd": str(workspace)})
        assert {s["sessionId"] for s in listed["sessions"]} == {_sid(n) for n in CASES}
        for name in CASES:
            sid = _sid(name)
            shown = len(editor.client.messages)
            await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
            assert await editor.prompt(sid, "continue please") == {"stopReason": "end_turn"}, name
            request = editor.model.valid_requests[-1].body
            assert history_errors(request["messages"], tools=request.get("tools")) == [], name
            assert editor.model.rejected == [], (name, [r.errors for r in editor.model.rejected])
            await poll(functools.partial(_more_than, editor.client.messages, shown), what=f"{name}: the problem")
            assert any("dropped" in m.message or "left out" in m.message for m in editor.client.messages[shown:])


def _run(tmp_path: Path, workspace: Path, scenario: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`agent-bridge run` of this checkout (not an installed one) with the offline model of `scenario`."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_SANDBOX": "0",
        "AGENT_BRIDGE_CHECKPOINTS": "0",
    }
    command = [sys.executable, "-m", "bridge.cli.main", "run", "--offline", str(scenario), "--non-interactive"]
    return subprocess.run(
        [*command, "--cwd", str(workspace), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )


@pytest.mark.parametrize("name", ["string block", "no id", "dup ids"])
def test_a_hostile_transcript_resumed_in_the_terminal(tmp_path: Path, workspace: Path, name: str) -> None:
    """The crashes of the round (a traceback from a string block, exit 2 with `'id'`) and a 400: `--resume` and
    `--continue` answer, and say what was dropped."""
    (tmp_path / "home").mkdir()
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"responses": [text_response("answered"), text_response("again")]}))
    _write(tmp_path / "data", _sid(name), workspace, CASES[name])
    resumed = _run(tmp_path, workspace, scenario, "--resume", _sid(name), "continue please")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "answered" in resumed.stdout and "Traceback" not in resumed.stderr
    assert "dropped" in resumed.stderr or "left out" in resumed.stderr, resumed.stderr
    continued = _run(tmp_path, workspace, scenario, "--continue", "and again")
    assert continued.returncode == 0 and "400" not in continued.stdout + continued.stderr, continued.stderr


def _edit(use_id: str, path: Path) -> list[dict[str, Any]]:
    data = {"file_path": str(path), "old_string": "old words", "new_string": "NEEDLE here"}
    result = {"type": "tool_result", "tool_use_id": use_id, "content": "The file has been updated."}
    return [
        _msg("assistant", {"type": "tool_use", "id": use_id, "name": "Edit", "input": data}),
        _msg("user", result),
    ]


async def test_a_replayed_edit_reads_no_file_outside_the_workspace(
    tmp_path: Path, workspace: Path, data_dir: Path
) -> None:
    """A stored Edit call's replay looks for the line its new text is at now: only in the session's workspace and
    added folders. A forged transcript naming any other file must not make the bridge read it (attack round 17:
    up to 4 MB of any file the bridge's user may read, its line numbers shown)."""
    added, outside = tmp_path / "added", tmp_path / "outside"
    for folder in (added, outside):
        folder.mkdir()
    files = {
        "toolu_in": workspace / "in.txt",
        "toolu_added": added / "in.txt",
        "toolu_out": outside / "secret.txt",
        "toolu_link": workspace / "link.txt",
    }
    for path in list(files.values())[:3]:
        path.write_text("one\ntwo\nNEEDLE here\n")
    files["toolu_link"].symlink_to(files["toolu_out"])
    lines = [ASK, *(line for use_id, path in files.items() for line in _edit(use_id, path))]
    _write(data_dir, "sess_edits", workspace, lines)
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        params = {"sessionId": "sess_edits", "cwd": str(workspace), "additionalDirectories": [str(added)]}
        await editor.request("session/load", params)
        shown: dict[str, Any] = {}
        for use_id in files:
            [finished] = [u for u in editor.tool_updates(use_id) if u.get("status") == "completed"]
            [diff] = [c for c in finished["content"] if c["type"] == "diff"]
            shown[use_id] = diff.get("_meta", {}).get("line")
    assert shown == {"toolu_in": 3, "toolu_added": 3, "toolu_out": None, "toolu_link": None}, shown
