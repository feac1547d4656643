"""Settings sources with real files: precedence, invalid files reported and skipped, saving always-rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import PermissionModeError
from bridge.permissions.settings import SettingsStore, SettingsWriteError
from bridge.permissions.types import RuleSuggestion
from tests.permission_calls import GRAMMAR, decide


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    return root


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def bump(path: Path) -> None:
    """Move the mtime on, so a rewrite within one clock tick is still seen as a change."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def bash(engine: PermissionEngine, command: str) -> str:
    return decide(engine, "Bash", {"command": command}).behavior


def test_every_source_is_read_and_named(ws: Path, tmp_path: Path) -> None:
    files = {
        "localSettings": ws / ".agent-bridge/settings.local.json",
        "projectSettings": ws / ".agent-bridge/settings.json",
        "userSettings": tmp_path / "cfg/settings.json",
        "claudeLocalSettings": ws / ".claude/settings.local.json",
        "claudeProjectSettings": ws / ".claude/settings.json",
        "claudeUserSettings": tmp_path / "claude/settings.json",
    }
    for i, path in enumerate(files.values()):
        write(path, {"permissions": {"allow": [f"Bash(tool{i} *)"]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    for i, (source, path) in enumerate(files.items()):
        decision = decide(engine, "Bash", {"command": f"tool{i} --x"})
        assert (decision.behavior, decision.source, decision.source_file) == ("allow", source, str(path))
    assert engine.rules_by_source()["userSettings"] == {"allow": ["Bash(tool2 *)"]}


def test_default_mode_follows_precedence(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "cfg/settings.json", {"permissions": {"defaultMode": "plan"}})
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR).mode == "plan"
    write(ws / ".agent-bridge/settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR).mode == "plan", "the user's mode"
    (tmp_path / "cfg/settings.json").unlink()
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR).mode == "acceptEdits"
    write(ws / ".agent-bridge/settings.local.json", {"permissions": {"defaultMode": "dontAsk"}})
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR).mode == "dontAsk"
    # an explicit mode (editor or CLI flag) wins over settings
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR, mode="default").mode == "default"


@pytest.mark.parametrize(
    ("user", "folder", "effective"),
    [
        ("dontAsk", "default", "dontAsk"),  # a folder's file never widens the user's own choice
        ("plan", "default", "plan"),
        ("plan", "dontAsk", "plan"),  # neither is narrower than the other: the user's stands
        ("dontAsk", "plan", "dontAsk"),
        ("acceptEdits", "bypassPermissions", "acceptEdits"),
        ("default", "plan", "plan"),  # the control: a folder may narrow
        ("default", "dontAsk", "dontAsk"),
        ("acceptEdits", "default", "default"),
        ("bypassPermissions", "plan", "plan"),
    ],
)
def test_a_folders_default_mode_only_narrows_the_users_own(
    ws: Path, tmp_path: Path, user: str, folder: str, effective: str
) -> None:
    write(tmp_path / "cfg/settings.json", {"permissions": {"defaultMode": user}})
    write(ws / ".agent-bridge/settings.json", {"permissions": {"defaultMode": folder}})
    assert PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR).mode == effective


def test_claude_files_give_rules_but_not_modes_or_hooks(ws: Path) -> None:
    write(
        ws / ".claude/settings.json",
        {
            "permissions": {"defaultMode": "bypassPermissions", "deny": ["Bash(make *)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
        },
    )
    store = SettingsStore(ws)
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR)
    assert engine.mode == "default"
    assert store.hooks("Stop") == []
    assert bash(engine, "make all") == "deny"


def test_invalid_json_is_reported_and_every_call_asks(ws: Path) -> None:
    bad = write(ws / ".agent-bridge/settings.json", '{"permissions": {"allow": ["Bash(cargo build *)"],}')
    write(
        ws / ".agent-bridge/settings.local.json",
        {"permissions": {"allow": ["Bash(npm test *)"], "deny": ["Bash(rm *)"]}},
    )
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    [issue] = engine.errors
    assert issue.file == bad and "not valid JSON" in issue.message and "line 1" in issue.message
    assert "every tool call asks" in issue.message
    assert bash(engine, "cargo build --release") == "ask"  # the bad file is skipped
    # it may have held deny rules: nothing is allowed without a question (fail closed), the others' denies hold
    assert bash(engine, "npm test") == "ask"
    assert bash(engine, "ls") == "ask"
    assert decide(engine, "Read", read_only=True, paths=[(ws / "a.txt", "read")]).behavior == "ask"
    assert bash(engine, "rm -rf x") == "deny"
    bad.write_text('{"permissions": {"allow": ["Bash(cargo build *)"]}}')
    bump(bad)
    assert bash(engine, "npm test") == "allow" and bash(engine, "cargo build --release") == "allow"
    assert bash(engine, "make all") == "deny"  # its recipes may run `rm`: a program that can't be known


def test_invalid_fields_are_skipped_one_by_one(ws: Path) -> None:
    path = write(
        ws / ".agent-bridge/settings.json",
        {
            "permissions": {
                "allow": "Bash(make *)",  # not a list
                "deny": ["Bash(rm *)", "Bash(unclosed", 42],
                "ask": ["Bash(git push *)", "Bash("],
                "defaultMode": "yolo",
            },
            "hooks": {"PreToolUse": [{"matcher": "Bash"}]},
            "env": {"A": 1},
        },
    )
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    messages = [i.message for i in engine.errors]
    assert all(i.file == path for i in engine.errors)
    assert any("permissions.allow" in m for m in messages)
    assert any("permissions.deny" in m for m in messages)  # 42 is not a string: the deny list is invalid
    assert any("permissions.ask" in m and "Bash(" in m for m in messages)
    assert any("permissions.defaultMode" in m for m in messages)
    assert any("hooks.PreToolUse" in m for m in messages)
    assert any(m.startswith("env") for m in messages)
    assert engine.mode == "default"
    assert bash(engine, "git push origin") == "ask"
    assert engine.rules_by_source()["projectSettings"] == {"ask": ["Bash(git push *)"]}


def test_a_bad_rule_does_not_drop_the_other_deny_rules(ws: Path) -> None:
    write(ws / ".agent-bridge/settings.json", {"permissions": {"deny": ["Bash(rm *)", "Bash(oops"]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    assert bash(engine, "rm -rf x") == "deny"
    assert len(engine.errors) == 1 and "Bash(oops" in engine.errors[0].message


def test_legacy_colon_star_form(ws: Path) -> None:
    write(ws / ".agent-bridge/settings.json", {"permissions": {"allow": ["Bash(npm run test:*)"]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    assert bash(engine, "npm run test") == "allow"
    assert bash(engine, "npm run test -- --watch") == "allow"
    assert bash(engine, "npm run tests") == "ask"


def test_file_changes_are_picked_up(ws: Path) -> None:
    path = write(ws / ".agent-bridge/settings.json", {"permissions": {"allow": ["Bash(make *)"]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    assert bash(engine, "make") == "allow"
    write(path, {"permissions": {"deny": ["Bash(make *)"]}})
    bump(path)
    assert bash(engine, "make") == "deny"
    path.unlink()
    assert bash(engine, "make") == "ask"


def test_save_rule_writes_once_and_applies_to_every_session_at_once(ws: Path) -> None:
    (ws / ".agent-bridge").mkdir()
    local = write(ws / ".agent-bridge/settings.local.json", {"model": "keep-me", "permissions": {"deny": ["Bash(x)"]}})
    store = SettingsStore.for_project(ws)
    assert SettingsStore.for_project(ws / ".") is store
    first = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR)
    second = PermissionEngine(cwd=ws, settings=SettingsStore.for_project(ws), grammar=GRAMMAR)
    decision = decide(first, "Bash", {"command": "npm run test -- -x"})
    assert decision.behavior == "ask"
    [allow, deny] = decision.suggestions
    assert (allow.rule, allow.behavior, allow.destination) == ("Bash(npm run test *)", "allow", str(local))
    assert (deny.rule, deny.behavior) == ("Bash(npm run test *)", "deny")
    first.save_rule(allow)
    first.save_rule(allow)
    data = json.loads(local.read_text())
    assert data["permissions"]["allow"] == ["Bash(npm run test *)"]
    assert data["model"] == "keep-me" and data["permissions"]["deny"] == ["Bash(x)"]
    assert bash(second, "npm run test") == "allow"
    assert bash(first, "npm run test -- -y") == "allow"
    decision = decide(second, "Bash", {"command": "npm run test"})
    assert (decision.source, decision.source_file) == ("localSettings", str(local))


def test_save_rule_of_a_compound_command_saves_each_part_once(ws: Path) -> None:
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    decision = decide(engine, "Bash", {"command": "make build && cargo test --all"})
    [suggestion] = decision.suggestions  # no deny option for two rules at once
    assert suggestion.rules == ("Bash(make build)", "Bash(cargo test *)")  # make: exact (`SHELL=…` runs anything)
    engine.save_rule(suggestion)
    engine.save_rule(suggestion)
    saved = json.loads((ws / ".agent-bridge/settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["Bash(make build)", "Bash(cargo test *)"]
    assert bash(engine, "make build && cargo test --all") == "allow"


def test_save_rule_refuses_files_it_must_not_write(ws: Path) -> None:
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    with pytest.raises(SettingsWriteError):
        engine.save_rule(RuleSuggestion("Bash(make *)", "allow", str(ws / ".claude/settings.json")))
    with pytest.raises(SettingsWriteError):
        engine.save_rule(RuleSuggestion("Bash(make *)", "allow", "/etc/passwd"))
    bad = write(ws / ".agent-bridge/settings.local.json", "{not json")
    with pytest.raises(SettingsWriteError, match="not overwriting"):
        engine.save_rule(RuleSuggestion("Bash(make *)", "allow", str(bad)))
    assert bad.read_text() == "{not json"


def test_edit_suggestion_is_the_directory(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    decision = decide(engine, "Edit", read_only=False, paths=[(ws / "src/pkg/a.py", "write")])
    assert decision.suggestions[0].rule == "Edit(src/pkg/**)"
    engine.save_rule(decision.suggestions[0])
    assert decide(engine, "Write", read_only=False, paths=[(ws / "src/pkg/b.py", "write")]).behavior == "allow"
    assert decide(engine, "Edit", read_only=False, paths=[(ws / "src/c.py", "write")]).behavior == "ask"


def test_disable_bypass_mode(ws: Path) -> None:
    write(
        ws / ".agent-bridge/settings.json",
        {"permissions": {"disableBypassPermissionsMode": "disable", "defaultMode": "bypassPermissions"}},
    )
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    assert engine.mode == "default"
    assert any("bypassPermissions is disabled" in i.message for i in engine.errors)
    with pytest.raises(PermissionModeError):
        engine.set_mode("bypassPermissions")
    with pytest.raises(PermissionModeError):
        engine.set_mode("yolo")


def test_plan_mode_remembers_the_previous_mode(ws: Path) -> None:
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR, mode="acceptEdits")
    engine.mode = "plan"
    assert engine.pre_plan_mode == "acceptEdits"
    assert decide(engine, "ExitPlanMode", {"plan": "p"}, read_only=True).behavior == "ask"
    assert engine.exit_plan_mode() == "acceptEdits"
    # mypy keeps `engine.mode` narrowed to "plan" by the assignment above, though exit_plan_mode() changed it
    assert engine.mode == "acceptEdits"  # type: ignore[comparison-overlap]
    engine.set_mode("plan")
    engine.set_mode("plan")  # re-entering keeps what to go back to
    assert engine.exit_plan_mode() == "acceptEdits"


def test_additional_directories_from_settings(ws: Path, tmp_path: Path) -> None:
    extra = tmp_path / "shared-lib"
    extra.mkdir()
    write(ws / ".agent-bridge/settings.json", {"permissions": {"additionalDirectories": [str(extra)]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR, mode="acceptEdits")
    assert decide(engine, "Edit", read_only=False, paths=[(extra / "x.py", "write")]).behavior == "allow"
    assert decide(engine, "Read", read_only=True, paths=[(extra / "x.py", "read")]).behavior == "allow"
    assert decide(engine, "Edit", read_only=False, paths=[(tmp_path / "x.py", "write")]).behavior == "ask"
    wider = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR, additional_dirs=[tmp_path])
    assert decide(wider, "Read", read_only=True, paths=[(tmp_path / "x.py", "read")]).behavior == "allow"


def test_relative_root_patterns_follow_the_settings_file(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "cfg/settings.json", {"permissions": {"deny": ["Read(/secret/**)", "Edit(//etc/**)"]}})
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    assert decide(engine, "Read", read_only=True, paths=[(ws / "secret/k", "read")]).behavior == "deny"
    assert decide(engine, "Write", read_only=False, paths=[(Path("/etc/hosts"), "write")]).behavior == "deny"


def test_an_always_rule_saved_to_the_users_own_settings_keeps_their_dotfiles_link(ws: Path, tmp_path: Path) -> None:
    dotfiles = write(tmp_path / "dotfiles/settings.json", {"model": "mine", "permissions": {"deny": ["Bash(x)"]}})
    linked = tmp_path / "cfg/settings.json"
    linked.parent.mkdir(parents=True)
    linked.symlink_to(dotfiles)
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    engine.save_rule(RuleSuggestion("Bash(npm run test *)", "allow", str(linked)))
    assert linked.is_symlink() and linked.resolve() == dotfiles.resolve(), "the user's link is kept"
    saved = json.loads(dotfiles.read_text())
    assert saved["permissions"]["allow"] == ["Bash(npm run test *)"] and saved["model"] == "mine"
    assert bash(engine, "npm run test") == "allow"


def test_an_always_rule_is_not_written_through_a_link_in_the_folder(ws: Path, tmp_path: Path) -> None:
    elsewhere = write(tmp_path / "elsewhere.json", {"token": "keep"})
    local = ws / ".agent-bridge/settings.local.json"
    local.parent.mkdir()
    local.symlink_to(elsewhere)
    engine = PermissionEngine(cwd=ws, settings=SettingsStore(ws), grammar=GRAMMAR)
    with pytest.raises(SettingsWriteError):
        engine.save_rule(RuleSuggestion("Bash(npm run test *)", "allow", str(local)))
    assert json.loads(elsewhere.read_text()) == {"token": "keep"} and local.is_symlink()
