"""Where the sandbox can't start: a warning once, and every Bash command that is not read-only asks.
Runs everywhere: bwrap is pointed at a path that does not exist (`AGENT_BRIDGE_BWRAP`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.execution.sandbox import Sandbox
from bridge.execution.supervisor import ProcessSupervisor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.sandbox_policy import (
    SandboxPolicy,
    expand,
    policy_from_engine,
    sandbox_settings,
)
from bridge.permissions.settings import SettingsStore
from bridge.permissions.specifiers import compile_path_specifier
from bridge.tools.base import Services, ToolContext
from bridge.tools.bash import BashInput, BashTool
from tests.permission_calls import GRAMMAR, decide


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AGENT_BRIDGE_BWRAP", str(tmp_path / "no-such-bwrap"))
    monkeypatch.delenv("AGENT_BRIDGE_SANDBOX", raising=False)


def engine_for(tmp_path: Path, settings: dict[str, Any] | None = None, **kw: Any) -> PermissionEngine:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    if settings is not None:
        (ws / ".agent-bridge").mkdir(exist_ok=True)
        (ws / ".agent-bridge" / "settings.json").write_text(json.dumps(settings))
    store = SettingsStore(ws, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    return PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, **kw)


def decide_over(engine: PermissionEngine, sandbox: Sandbox, command: str) -> str:
    """The engine's answer with this sandbox under it (as a session wires them)."""
    engine.unsandboxed = lambda: sandbox.unavailable
    return decide(engine, "Bash", {"command": command}).behavior


@pytest.mark.usefixtures("no_bwrap")
def test_unavailable_sandbox_warns_and_asks_for_every_command_that_is_not_read_only(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"permissions": {"allow": ["Bash(make *)"]}})
    sandbox = Sandbox.for_engine(engine)
    assert sandbox.unavailable and not sandbox.enforced
    problems = sandbox.problems()
    assert len(problems) == 1 and "OS sandbox unavailable" in problems[0] and "will ask" in problems[0]
    assert decide(engine, "Bash", {"command": "make build"}).behavior == "allow"
    assert decide_over(engine, sandbox, "make build") == "ask"
    assert decide_over(engine, sandbox, "ls") == "allow"  # read-only: nothing for a sandbox to hold
    engine.set_mode("bypassPermissions")
    assert decide_over(engine, sandbox, "make build") == "allow"  # the user's explicit choice
    engine.set_mode("dontAsk")
    assert decide_over(engine, sandbox, "make build") == "deny"


@pytest.mark.usefixtures("no_bwrap")
def test_turned_off_means_no_warning_and_the_rules_as_written(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"sandbox": {"enabled": False}, "permissions": {"allow": ["Bash(make *)"]}})
    sandbox = Sandbox.for_engine(engine)
    assert not sandbox.unavailable and sandbox.problems() == []
    assert decide_over(engine, sandbox, "make build") == "allow"


@pytest.fixture
async def supervisor() -> AsyncIterator[ProcessSupervisor]:
    sup = ProcessSupervisor()
    yield sup
    await sup.shutdown()


@pytest.mark.usefixtures("no_bwrap")
async def test_fail_if_unavailable_refuses_to_run(tmp_path: Path, supervisor: ProcessSupervisor) -> None:
    engine = engine_for(tmp_path, {"sandbox": {"failIfUnavailable": True}}, mode="bypassPermissions")
    sandbox = Sandbox.for_engine(engine)
    assert "will fail" in sandbox.problems()[0]
    ctx = ToolContext(
        cwd=engine.cwd,
        abort=Abort(),
        data_dir=tmp_path / "data",
        services=Services(processes=supervisor, sandbox=sandbox),
    )
    marker = tmp_path / "ran"
    with pytest.raises(Exception, match="failIfUnavailable"):
        await BashTool().call(BashInput(command=f"touch {marker}"), ctx)
    assert not marker.exists()


@pytest.mark.usefixtures("no_bwrap")
async def test_without_fail_if_unavailable_the_approved_command_runs_unsandboxed(
    tmp_path: Path, supervisor: ProcessSupervisor
) -> None:
    engine = engine_for(tmp_path, mode="bypassPermissions")
    ctx = ToolContext(
        cwd=engine.cwd,
        abort=Abort(),
        data_dir=tmp_path / "data",
        services=Services(processes=supervisor, sandbox=Sandbox.for_engine(engine)),
    )
    marker = tmp_path / "ran"
    await BashTool().call(BashInput(command=f"touch {marker}"), ctx)
    assert marker.exists()


def test_invalid_sandbox_settings_are_problems_and_defaults_apply(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"sandbox": {"enabled": "sometimes"}})
    settings = sandbox_settings(engine.settings)
    assert settings.enabled is True
    assert any("sandbox is invalid" in p for p in settings.problems)


def test_policy_from_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # (the user's credentials there are masked too)
    extra = tmp_path / "extra"
    extra.mkdir()
    npm = tmp_path / "npm-cache"
    npm.mkdir()
    engine = engine_for(
        tmp_path,
        {
            "permissions": {
                "additionalDirectories": [str(extra)],
                "allow": [f"Edit(/{npm}/**)"],
                "deny": ["Read(./secrets/**)", "Edit(./vendor/**)"],
            }
        },
    )
    policy: SandboxPolicy = policy_from_engine(engine, sandbox_settings(engine.settings))
    assert policy.writable[:2] == (engine.cwd, extra.resolve())
    assert npm.resolve() in policy.writable
    protected = {str(h.path) for h in policy.protected}
    assert {str(engine.cwd / ".mcp.json"), str(extra.resolve() / ".agent-bridge")} <= protected
    assert [p.pattern for p in policy.masked] == ["secrets/**"]
    assert [p.pattern for p in policy.read_only] == ["vendor/**"]
    assert policy.network is False


def test_expanding_deny_patterns_is_bounded(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"d{i}").mkdir()
        (tmp_path / f"d{i}" / ".env").write_text("x")
    pattern = compile_path_specifier(".env", cwd=tmp_path, root=tmp_path)
    full = expand((pattern,))
    assert len(full.paths) == 50 and not full.truncated
    bounded = expand((pattern,), entries=20)
    assert bounded.truncated and len(bounded.paths) < 50
    directory = compile_path_specifier("./d1/", cwd=tmp_path, root=tmp_path)
    assert expand((directory,)).paths == [tmp_path / "d1"]  # a directory stands for all below it
