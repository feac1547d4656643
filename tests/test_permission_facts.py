"""Tools state their permission facts; the engine names no tool (issue 25 item 3).

A tool the engine has never heard of — not in the grammar the session was composed with — states its form and its
facts, and its rules, the family rules and plan mode apply to it exactly as they do to the built-in tools.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pydantic import Field

from bridge.abort import Abort
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.facts import RuleForm, ShellCall
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.sandbox_policy import policy_from_engine, sandbox_settings
from bridge.permissions.settings import SettingsStore
from bridge.permissions.shell import call_verdict
from bridge.permissions.types import Decision
from bridge.tools.base import AnyTool, BoundCall, Tool, ToolContext, ToolInput
from tests.permission_calls import GRAMMAR


class PackInput(ToolInput):
    target: str = Field(description="the archive to write")


class PackTool(Tool[PackInput]):
    """Writes one file: a path tool about writes, unknown to the grammar."""

    name = "Pack"
    input_model = PackInput
    description = "pack"
    rule_form = RuleForm("path", "write")

    def permission_paths(self, data: PackInput, ctx: ToolContext) -> list[tuple[Path, Any]]:
        return [(Path(data.target), "write")]


class RunInput(ToolInput):
    script: str


class RunTool(Tool[RunInput]):
    """Runs a shell command: command rules, its reads judged by the rules about reads."""

    name = "Run"
    input_model = RunInput
    description = "run"
    rule_form = RuleForm("command")

    def is_read_only(self, data: RunInput) -> bool:
        return call_verdict(data.script).read_only

    def permission_command(self, data: RunInput) -> ShellCall:
        return ShellCall(data.script, call_verdict(data.script))


class GetInput(ToolInput):
    host: str


class GetTool(Tool[GetInput]):
    """Fetches from a host: `domain:` rules."""

    name = "Get"
    input_model = GetInput
    description = "get"
    rule_form = RuleForm("domain")

    def is_read_only(self, data: GetInput) -> bool:
        return True

    def permission_host(self, data: GetInput) -> str:
        return data.host


def engine(tmp_path: Path, mode: Mode = "default", **rules: list[str]) -> PermissionEngine:
    ws = tmp_path / "ws"
    (ws / ".agent-bridge").mkdir(parents=True, exist_ok=True)
    (ws / ".agent-bridge" / "settings.json").write_text(json.dumps({"permissions": {"deny": rules.get("deny", [])}}))
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    return PermissionEngine(
        cwd=ws, settings=store, grammar=GRAMMAR, mode=mode, session_rules=RuleSet.of(allow=rules.get("allow", []))
    )


def decide(judge: PermissionEngine, tool: AnyTool, raw: dict[str, Any]) -> Decision:
    data = tool.input_model.model_validate(raw)
    ctx = ToolContext(cwd=judge.cwd, abort=Abort(), data_dir=judge.cwd)
    return judge.decide(BoundCall(tool, data, raw, ctx, tool.traits(data).read_only))


def test_the_grammar_the_session_was_composed_with_does_not_know_these_tools() -> None:
    assert {"Pack", "Run", "Get"}.isdisjoint(dict(GRAMMAR.forms))


def test_a_new_path_tool_is_judged_by_its_own_rules_and_its_familys(tmp_path: Path) -> None:
    judge = engine(tmp_path, deny=["Pack(secret/**)", "Edit(vault/**)"])
    ws = judge.cwd
    assert decide(judge, PackTool(), {"target": str(ws / "secret" / "a.tgz")}).rule == "Pack(secret/**)"
    assert decide(judge, PackTool(), {"target": str(ws / "vault" / "a.tgz")}).rule == "Edit(vault/**)"
    ordinary = decide(judge, PackTool(), {"target": str(ws / "out" / "a.tgz")})
    assert ordinary.behavior == "ask"
    assert [s.rule for s in ordinary.suggestions if s.behavior == "allow"] == ["Edit(out/**)"]  # its family's name
    accepting = engine(tmp_path / "2", "acceptEdits")
    assert decide(accepting, PackTool(), {"target": str(accepting.cwd / "a.tgz")}).behavior == "allow"
    planning = engine(tmp_path / "3", "plan")
    assert decide(planning, PackTool(), {"target": str(planning.cwd / "a.tgz")}).behavior == "deny"


def test_a_new_command_tool_is_judged_like_a_shell(tmp_path: Path) -> None:
    judge = engine(tmp_path, deny=["Run(rm *)", "Read(secret/**)"], allow=["Run(touch *)"])
    assert decide(judge, RunTool(), {"script": "rm -rf build"}).rule == "Run(rm *)"
    assert decide(judge, RunTool(), {"script": "cat secret/key"}).rule == "Read(secret/**)"
    assert decide(judge, RunTool(), {"script": "touch out.txt"}).rule == "Run(touch *)"
    assert decide(judge, RunTool(), {"script": "ls"}).behavior == "allow"  # read-only, inside the workspace
    asked = decide(judge, RunTool(), {"script": "mkdir out"})
    assert asked.behavior == "ask" and asked.shown.command == "mkdir out"
    assert [s.rule for s in asked.suggestions if s.behavior == "allow"] == ["Run(mkdir *)"]


def test_a_new_fetching_tool_asks_unless_a_domain_rule_allows(tmp_path: Path) -> None:
    judge = engine(tmp_path, allow=["Get(domain:*.example.com)"])
    assert decide(judge, GetTool(), {"host": "docs.example.com"}).behavior == "allow"
    asked = decide(judge, GetTool(), {"host": "evil.io"})
    assert asked.behavior == "ask" and asked.reason == "Fetch from evil.io"
    assert [s.rule for s in asked.suggestions if s.behavior == "allow"] == ["Get(domain:evil.io)"]


def test_rules_wait_for_the_grammar_before_they_are_compiled(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".agent-bridge").mkdir(parents=True)
    (ws / ".agent-bridge" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["WebFetch(example.com)", 'Bash("unclosed)', "Edit(src/**)"]}})
    )
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    assert [r.text for r in store.rules] == ["WebFetch(example.com)", 'Bash("unclosed)', "Edit(src/**)"]
    assert not store.issues  # read as written: what a specifier means is its tool's form
    names, issues = store.compiled(RuleGrammar())
    assert not issues and all(r.path is None and r.command is None for r in names)
    compiled, issues = store.compiled(GRAMMAR)
    assert [r.text for r in compiled] == ["Edit(src/**)"] and compiled[0].path is not None
    assert len(issues) == 2 and all(i.lockdown for i in issues)
    assert "take `domain:HOST`" in issues[0].message and "command pattern" in issues[1].message


def test_the_sandbox_reads_the_engines_compiled_rules(tmp_path: Path) -> None:
    judge = engine(tmp_path, deny=["Read(secret/**)", "Edit(vendor/**)"], allow=["Edit(//opt/cache/**)"])
    undo = judge.allow_for_now(["Write(//srv/out/**)"])
    policy = policy_from_engine(judge, sandbox_settings(judge.settings))
    rules = {r.text: r for r in judge.rules()}
    assert any(p is rules["Read(secret/**)"].path for p in policy.masked)
    assert any(p is rules["Edit(vendor/**)"].path for p in policy.read_only)
    assert "Write(//srv/out/**)" in rules  # a skill's rules for its turn: the same list
    undo()
    assert "Write(//srv/out/**)" not in {r.text for r in judge.rules()}


def test_the_permission_layer_imports_no_tool() -> None:
    code = (
        "import sys, bridge.permissions.engine, bridge.permissions.sandbox_policy, bridge.permissions.settings; "
        "print([m for m in sys.modules if m.startswith(('bridge.tools', 'bridge.loop', 'bridge.server'))])"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[]"
