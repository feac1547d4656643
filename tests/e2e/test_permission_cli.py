"""Attacks end to end: `agent-bridge run --non-interactive` with the offline playground model, which runs
`run: CMD` with Bash. Nothing the engine would have to ask about may happen; read-only commands run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.harness import run_agent, running_editor, text_response


async def run_cli(tmp_path: Path, workspace: Path, prompt: str, *rules: str) -> str:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    code, out = await run_agent(
        "run", "--non-interactive", "--offline", "playground", *rules, prompt, cwd=workspace, env=env
    )
    assert code == 0, out
    return out


@pytest.fixture
def ws(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    (workspace / "secret.txt").write_text("SECRET-TOKEN\n")
    (workspace / "canary").write_text("keep me\n")
    return workspace


ATTACKS = [
    ("find . -exec touch pwned \\;", "pwned", ()),
    ("sort --outp=pwned a.txt", "pwned", ()),
    ("uniq a.txt pwned", "pwned", ()),
    (
        'echo \'{"permissions": {"allow": ["Bash"]}}\' | uniq - .agent-bridge/settings.local.json',
        ".agent-bridge/settings.local.json",
        (),
    ),
    ("env GIT_CONFIG_PARAMETERS=\"'alias.x'='!touch pwned'\" git x", "pwned", ()),
    ("{touch,pwned}", "pwned", ("--allow", "Bash(*)", "--deny", "Bash(touch:*)")),
    ("echo pwned | xargs --max-procs 1 touch", "pwned", ("--allow", "Bash(*)", "--deny", "Bash(touch *)")),
    ("bash -c '$(echo touch) pwned'", "pwned", ("--allow", "Bash(*)", "--deny", "Bash(touch:*)")),
]


@pytest.mark.parametrize(("command", "marker", "rules"), ATTACKS, ids=[a[0][:50] for a in ATTACKS])
async def test_an_attack_through_the_cli_does_nothing(
    tmp_path: Path, ws: Path, command: str, marker: str, rules: tuple[str, ...]
) -> None:
    out = await run_cli(tmp_path, ws, f"run: {command}", *rules)
    assert "Permission denied" in out, out
    assert not (ws / marker).exists()


async def test_a_read_deny_rule_holds_through_the_cli(tmp_path: Path, ws: Path) -> None:
    out = await run_cli(tmp_path, ws, "run: cat secre?.txt", "--allow", "Bash(*)", "--deny", "Read(secret.txt)")
    assert "denied by rule Read(secret.txt)" in out and "SECRET-TOKEN" not in out


async def test_a_read_only_command_runs_through_the_cli(tmp_path: Path, ws: Path) -> None:
    out = await run_cli(tmp_path, ws, "run: sleep 0.1; grep -c alpha a.txt && echo visible-output")
    assert "visible-output" in out and "Permission denied" not in out


async def test_two_sleep_echo_calls_in_one_response_overlap(workspace: Path, data_dir: Path) -> None:
    """Issue 12: `sleep` and `echo` are read-only and side-effect free, so they are concurrency-safe."""
    calls = [
        {"type": "tool_use", "name": "Bash", "input": {"command": f"sleep 1; echo {name}"}}
        for name in ("first", "second")
    ]
    scenario = {"responses": [{"content": calls, "stop_reason": "tool_use"}, text_response("both done")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "sleep twice") == {"stopReason": "end_turn"}
        statuses = [u.get("status") for u in editor.of_kind("tool_call_update", sid)]
        assert statuses.count("completed") == 2
        # both were running before either finished: the second started without waiting for the first
        assert statuses.index("completed") > [i for i, s in enumerate(statuses) if s == "in_progress"][1]
        assert editor.permission_requests == []
        results = editor.last_request_messages()[-1]["content"]
        assert ["first" in json.dumps(results[0]), "second" in json.dumps(results[1])] == [True, True]
