"""What the OS sandbox under every command is given by the permission layer (`policy_from_engine`, the policy the
sandbox runs with): writable roots, protected paths, the paths deny rules about reads mask — from the engine's own
compiled rules, the session's included."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.rules import RuleSet
from bridge.permissions.sandbox_policy import credential_masks, policy_from_engine, sandbox_settings
from bridge.permissions.settings import SettingsStore
from tests.permission_calls import GRAMMAR


def test_the_sandbox_policy_follows_the_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # (the user's credentials there are masked too)
    ws, extra = tmp_path / "ws", tmp_path / "lib"
    (ws / ".agent-bridge").mkdir(parents=True)
    extra.mkdir()
    (ws / ".agent-bridge" / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {
                    "additionalDirectories": [str(extra)],
                    "deny": ["Read(.env)", "Read(~/.ssh/**)", "Bash(rm *)"],
                }
            }
        )
    )
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    engine = PermissionEngine(
        cwd=ws, settings=store, grammar=GRAMMAR, session_rules=RuleSet.of(deny=["Read(secrets/**)"])
    )
    policy = policy_from_engine(engine, sandbox_settings(store))
    protected = [held.path for held in policy.protected]
    assert policy.writable == (ws.resolve(), extra.resolve())
    root = ws.resolve()
    for name in (".agent-bridge", ".claude", ".mcp.json", "CLAUDE.md", "CLAUDE.local.md", "AGENTS.md"):
        assert root / name in protected
    assert root / ".git" in protected  # not a repository yet: a new one's settings are watched
    for name in (".vscode", ".idea", ".envrc", ".devcontainer", ".husky", ".pre-commit-config.yaml"):
        assert root / name in protected
    assert tmp_path / "cfg" / "settings.json" in protected
    assert tmp_path / "claude" / "CLAUDE.md" in protected
    assert sorted(p.pattern for p in policy.masked) == [".env", ".ssh/**", "secrets/**"]
    assert all(p.matches(root / ".env") or p.pattern != ".env" for p in policy.masked)


def test_a_repository_holds_what_git_reads_its_settings_and_hooks_from(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.hooksPath", "tools/hooks"], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.fsmonitor", "tools/watch.sh"], check=True)
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR)
    protected = [held.path for held in policy_from_engine(engine, sandbox_settings(store)).protected]
    root = ws.resolve()
    for name in ("config", "hooks", "commondir", "config.worktree"):
        assert root / ".git" / name in protected
    assert root / ".git" not in protected  # the rest of it (objects, refs, index) stays writable for commits
    assert root / "tools" / "hooks" in protected and root / "tools" / "watch.sh" in protected


@pytest.mark.parametrize(
    "key",
    [
        "interactive.diffFilter",
        "gpg.ssh.defaultKeyCommand",
        "trailer.sign.command",
        "sendemail.sendmailCmd",
        "browser.x.cmd",
        "guitool.x.cmd",
    ],
)
def test_a_script_any_git_setting_runs_is_held(tmp_path: Path, key: str) -> None:
    """Attack round 7: a script `interactive.diffFilter` (and the others here) names was writable: git runs it."""
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", key, "tools/run.sh"], check=True)
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR)
    protected = [held.path for held in policy_from_engine(engine, sandbox_settings(store)).protected]
    assert ws.resolve() / "tools" / "run.sh" in protected


def test_each_store_gets_its_own_sandbox_settings_even_when_python_reuses_an_id(tmp_path: Path) -> None:
    # the cache was keyed by id(store): a store made after another was freed often gets its id, and got
    # the freed one's allowWrite (a flaky write failure in the sandbox tests, seen in CI)
    seen: set[int] = set()
    reused = False
    for n in range(40):
        ws = tmp_path / f"ws{n}"
        (ws / ".agent-bridge").mkdir(parents=True)
        (ws / ".agent-bridge" / "settings.json").write_text(
            json.dumps({"sandbox": {"filesystem": {"allowWrite": [f"//tmp/only-{n}"]}}})
        )
        store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
        reused = reused or id(store) in seen
        seen.add(id(store))
        allowed = [str(p) for p in sandbox_settings(store).allow_write]
        assert len(allowed) == 1 and f"only-{n}" in allowed[0], (n, allowed)
        del store
    assert reused, "no id was reused: the test did not exercise what it is for"


def test_a_writable_path_reached_through_a_link_in_the_workspace_is_left_out(tmp_path: Path) -> None:
    """`allowWrite: ["build"]` and an allow rule for writes (`Edit(cache/**)`) name places in the workspace. A
    command (an always-allowed `npm run build`) can swap `build` for a link to the home folder: the next
    command's sandbox made the home folder writable. A link in the workspace is the folder's doing: the path is
    left out, never followed. A link outside it (the user's own, `~/fast -> /mnt/fast`) is still followed."""
    ws, home, fast = tmp_path / "ws", tmp_path / "home", tmp_path / "mnt-fast"
    for where in (ws / ".agent-bridge", home, fast, ws / "dist"):
        where.mkdir(parents=True)
    (ws / "build").symlink_to(home)  # swapped by a command since the settings were trusted
    (ws / "cache").symlink_to(home)
    (ws / "out").symlink_to("dist")  # a link that stays in the workspace: nothing new is writable either way
    (tmp_path / "fast").symlink_to(fast)  # the user's own link, outside the workspace
    settings = {
        "permissions": {"allow": ["Edit(cache/**)"]},
        "sandbox": {"filesystem": {"allowWrite": ["build", "out", f"/{tmp_path}/fast"]}},
    }
    (ws / ".agent-bridge" / "settings.json").write_text(json.dumps(settings))
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR)

    writable = policy_from_engine(engine, sandbox_settings(store)).writable

    assert home.resolve() not in writable
    assert fast.resolve() in writable
    assert ws.resolve() in writable


def test_the_users_credentials_are_masked_unless_opened_or_allowed_by_the_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".aws").mkdir()
    (home / ".netrc").write_text("machine x password y\n")
    ws = home / "code" / "ws"
    ws.mkdir(parents=True)
    masked = [path.relative_to(home).as_posix() for path, _ in credential_masks([], [ws], home)]
    assert masked == [".ssh", ".aws", ".netrc"]  # what exists, nothing else
    opened = credential_masks([], [home / ".ssh"], home)  # the user opened ~/.ssh itself
    assert [path.relative_to(home).as_posix() for path, _ in opened] == [".aws", ".netrc"]
    for pattern in (pattern for _, pattern in credential_masks([], [ws], home)):
        assert pattern.matches(home / ".ssh") or pattern.matches(home / ".aws") or pattern.matches(home / ".netrc")
