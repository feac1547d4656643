"""Hooks as real subprocesses, configured in settings the way Claude Code writes them."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.settings import SettingsStore
from tests.permission_calls import GRAMMAR, decide

PY = shlex.quote(sys.executable)


def py(code: str) -> str:
    return f"{PY} -c {shlex.quote(code)}"


def engine_with_hooks(tmp_path: Path, hooks: dict[str, Any], **kw: Any) -> PermissionEngine:
    """Hooks in the user's own settings (Claude Code's semantics; a folder's own hooks may only narrow:
    tests/execution/test_sandbox_hooks.py)."""
    ws = tmp_path / "ws"
    (ws / ".agent-bridge").mkdir(parents=True)
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    return PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, **kw)


def hook(matcher: str, command: str, timeout: float | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        entry["timeout"] = timeout
    return {"matcher": matcher, "hooks": [entry]}


BLOCK = py(
    "import sys, json; d = json.load(sys.stdin); "
    "print('no edits to ' + d['tool_input']['file_path'], file=sys.stderr); sys.exit(2)"
)
ALLOW = py(
    "import json; print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
    "'permissionDecision': 'allow', 'permissionDecisionReason': 'checked by the hook'}}))"
)


async def test_blocking_hook_reaches_the_reason(tmp_path: Path) -> None:
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("Edit|Write", BLOCK)]}, mode="bypassPermissions")
    payload: dict[str, Any] = {"tool_name": "Edit", "tool_input": {"file_path": "/x/a.py"}}
    outcome = await engine.run_hooks("PreToolUse", payload, tool_name="Edit")
    assert outcome.blocked and outcome.decision == "deny"
    assert outcome.reason == "no edits to /x/a.py"
    decision = decide(
        engine, "Edit", payload["tool_input"], read_only=False, paths=[(engine.cwd / "a.py", "write")], hook=outcome
    )
    assert (decision.behavior, decision.reason) == ("deny", "no edits to /x/a.py")


async def test_json_allow_skips_the_prompt(tmp_path: Path) -> None:
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("Bash", ALLOW)]})
    raw = {"command": "make build"}
    assert decide(engine, "Bash", raw).behavior == "ask"
    outcome = await engine.run_hooks("PreToolUse", {"tool_input": raw}, tool_name="Bash")
    assert outcome.decision == "allow" and not outcome.errors
    decision = decide(engine, "Bash", raw, hook=outcome)
    assert (decision.behavior, decision.reason) == ("allow", "checked by the hook")


async def test_hook_allow_does_not_beat_deny_rules_or_protected_paths(tmp_path: Path) -> None:
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("", ALLOW)]})
    engine.add_session_rule("deny", "Bash(rm *)")
    outcome = await engine.run_hooks("PreToolUse", {}, tool_name="Bash")
    assert decide(engine, "Bash", {"command": "rm -rf x"}, hook=outcome).behavior == "deny"
    git = [(engine.cwd / ".git" / "config", "write")]
    assert decide(engine, "Write", read_only=False, paths=git, hook=outcome).behavior == "ask"  # type: ignore[arg-type]


async def test_json_ask_and_updated_input(tmp_path: Path) -> None:
    code = (
        "import json; print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'ask', "
        "'permissionDecisionReason': 'double-check', 'updatedInput': {'command': 'make -n'}}}))"
    )
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("*", py(code))]}, mode="bypassPermissions")
    outcome = await engine.run_hooks("PreToolUse", {}, tool_name="Bash")
    decision = decide(engine, "Bash", {"command": "make"}, hook=outcome)
    assert (decision.behavior, decision.reason) == ("ask", "double-check")
    assert decision.updated_input == {"command": "make -n"}


async def test_timeout_is_reported_not_fatal(tmp_path: Path) -> None:
    sleeper = py("import time; time.sleep(30)")
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("Bash", sleeper, timeout=0.5), hook("Bash", ALLOW)]})
    started = time.monotonic()
    outcome = await engine.run_hooks("PreToolUse", {}, tool_name="Bash")
    assert time.monotonic() - started < 10
    assert len(outcome.errors) == 1 and "timed out after 0.5 s" in outcome.errors[0]
    assert outcome.decision == "allow"  # the other hook still answered
    assert [r.timed_out for r in outcome.runs] == [True, False]


async def test_failing_hook_is_reported_not_fatal(tmp_path: Path) -> None:
    crash = py("import sys; print('boom', file=sys.stderr); sys.exit(1)")
    engine = engine_with_hooks(tmp_path, {"PreToolUse": [hook("", crash), hook("", "/no/such/hook-binary")]})
    outcome = await engine.run_hooks("PreToolUse", {}, tool_name="Read")
    assert not outcome.blocked and outcome.decision is None
    assert len(outcome.errors) == 2
    assert any("exit code 1: boom" in e for e in outcome.errors)


async def test_matchers_filter_by_tool(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    record = py(
        f"import sys, json; d = json.load(sys.stdin); "
        f"open({str(marker)!r}, 'a').write(d['tool_name'] + ' ' + d['hook_event_name'] + '\\n')"
    )
    engine = engine_with_hooks(
        tmp_path,
        {
            "PreToolUse": [hook("Edit|Write", record), hook("^mcp__github__.*", record)],
            "PostToolUse": [hook("Bash", record)],
        },
    )
    for tool in ["Bash", "Edit", "Read", "Write", "mcp__github__create_issue", "mcp__gitlab__x", "EditX"]:
        await engine.run_hooks("PreToolUse", {}, tool_name=tool)
    await engine.run_hooks("PostToolUse", {"tool_response": {}}, tool_name="Bash")
    await engine.run_hooks("PostToolUse", {"tool_response": {}}, tool_name="Edit")
    assert marker.read_text().splitlines() == [
        "Edit PreToolUse",
        "Write PreToolUse",
        "mcp__github__create_issue PreToolUse",
        "Bash PostToolUse",
    ]


async def test_stdin_payload_and_prompt_hooks(tmp_path: Path) -> None:
    dump = tmp_path / "payload.json"
    code = f"import sys; open({str(dump)!r}, 'w').write(sys.stdin.read()); print('Today is a test day.')"
    engine = engine_with_hooks(tmp_path, {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": py(code)}]}]})
    outcome = await engine.run_hooks("UserPromptSubmit", {"session_id": "s1", "prompt": "hello"})
    payload = json.loads(dump.read_text())
    assert payload["prompt"] == "hello" and payload["hook_event_name"] == "UserPromptSubmit"
    assert payload["cwd"] == str(engine.cwd) and payload["permission_mode"] == "default"
    assert outcome.additional_context == ["Today is a test day."]


async def test_stop_hook_can_block_and_end_the_turn(tmp_path: Path) -> None:
    code = (
        "import json; print(json.dumps({'decision': 'block', 'reason': 'tests still fail', 'continue': False, "
        "'stopReason': 'halt'}))"
    )
    engine = engine_with_hooks(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": py(code)}]}]})
    outcome = await engine.run_hooks("Stop", {"stop_hook_active": False})
    assert outcome.blocked and outcome.reason == "tests still fail"
    assert outcome.stop and outcome.stop_reason == "halt"


async def test_no_hooks_is_a_no_op(tmp_path: Path) -> None:
    engine = engine_with_hooks(tmp_path, {})
    outcome = await engine.run_hooks("PreToolUse", {}, tool_name="Bash")
    assert outcome.decision is None and not outcome.runs


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
async def test_exit_2_on_tool_events(tmp_path: Path, event: str) -> None:
    code = py("import sys; print('stop that', file=sys.stderr); sys.exit(2)")
    engine = engine_with_hooks(tmp_path, {event: [hook("Bash", code)]})
    outcome = await engine.run_hooks(event, {}, tool_name="Bash")
    assert outcome.blocked and outcome.reason == "stop that"
    assert outcome.decision == ("deny" if event == "PreToolUse" else None)


async def test_hooks_run_through_their_own_runner_not_the_permission_policy(tmp_path: Path) -> None:
    from bridge.loop.permission import PermissionPolicy
    from bridge.permissions.hooks import NoHooks

    code = "import json; print(json.dumps({'decision': 'block', 'reason': 'not yet'}))"
    engine = engine_with_hooks(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": py(code)}]}]})
    outcome = await engine.hooks.run("Stop", {"stop_hook_active": False})
    assert outcome.blocked and outcome.reason == "not yet"
    assert (await NoHooks().run("Stop", {})).runs == []
    assert not hasattr(PermissionPolicy, "run_hooks")


async def test_a_json_answer_too_long_to_read_whole_stops_what_it_was_asked_about(tmp_path: Path) -> None:
    """The bridge keeps 64 KiB of a hook's output (a hook that prints gigabytes fills none of its memory). A JSON
    answer longer than that can't be read: what it said (a deny, `continue: false`) was lost and the call went ahead.
    Now the call or prompt does not go ahead and the failure says why; a long answer that is not JSON is output as
    before (the control), and after the fact (PostToolUse) it is only said."""
    deny = py(
        "import json; print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
        "'permissionDecision': 'deny', 'permissionDecisionReason': 'no', 'pad': 'x' * 70000}}))"
    )
    plain = py("print('x' * 70000)")
    engine = engine_with_hooks(
        tmp_path,
        {"PreToolUse": [hook("Bash", deny), hook("Read", plain)], "PostToolUse": [hook("Bash", deny)]},
    )
    outcome = await engine.run_hooks("PreToolUse", {"tool_input": {"command": "ls"}}, tool_name="Bash")
    assert outcome.blocked and outcome.decision == "deny", outcome
    assert "more than 64 KiB of JSON; it was not read" in outcome.reason and outcome.errors, outcome
    outcome = await engine.run_hooks("PreToolUse", {"tool_input": {"file_path": "a"}}, tool_name="Read")
    assert not outcome.blocked and outcome.decision is None and not outcome.errors, outcome
    outcome = await engine.run_hooks("PostToolUse", {"tool_response": {}}, tool_name="Bash")
    assert not outcome.blocked and outcome.errors, outcome
