"""What runs later, outside the sandbox, is held: git's redirects and hooks, the files hooks name, a new
repository's settings; and the file tools ask for them in every mode, saying why.

Each hole is proven closed by its side effect: a marker file that the attack's code would create when git, a
hook or the editor runs it *outside* the sandbox afterwards — with a control run where the sandbox is off, in
which the same attack leaves the marker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.execution.supervisor import ProcessSupervisor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import parse_mode
from bridge.permissions.sandbox_policy import policy_from_engine, sandbox_settings
from bridge.permissions.settings import SettingsStore
from tests.execution.test_sandbox import AVAILABLE, Project, output
from tests.permission_calls import GRAMMAR, decide

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


@pytest.fixture(params=["sandboxed", "control"])
def guarded(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[bool]:
    """Each attack twice: sandboxed (it must leave nothing that runs), and with the sandbox off (the control:
    the same command leaves what runs, so the attack is real)."""
    sandboxed = request.param == "sandboxed"
    if not sandboxed:
        monkeypatch.setenv("AGENT_BRIDGE_SANDBOX", "0")
    yield sandboxed


def run_outside(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A program as the user (or the editor, or a hook) runs it later, outside any sandbox."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, **GIT_ENV})


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_outside(cwd, "git", *args)


async def test_a_commondir_made_in_the_sandbox_moves_nothing(project: Project, guarded: bool) -> None:
    marker = project.root / "ran-outside"
    result = await project.run(
        "cp -r .git evil && "
        f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {marker}; :\\n' > evil/config && "
        "echo ../evil > .git/commondir; echo done"
    )
    git(project.ws, "status")
    assert marker.exists() is not guarded, output(result)
    if guarded:
        assert not (project.ws / ".git" / "commondir").exists()
        assert "[sandbox] The sandbox set aside" in output(result) and "commondir" in output(result)


async def test_hooks_under_core_hooks_path_cannot_be_planted(project: Project, guarded: bool) -> None:
    git(project.ws, "config", "core.hooksPath", "tools/hooks")
    marker = project.root / "hook-ran"
    result = await project.run(
        f"mkdir -p tools/hooks && printf '#!/bin/sh\\ntouch {marker}\\n' > tools/hooks/pre-commit && "
        "chmod +x tools/hooks/pre-commit; echo done"
    )
    git(project.ws, "commit", "-q", "--allow-empty", "-m", "later")
    assert marker.exists() is not guarded, output(result)
    if guarded:
        assert not (project.ws / "tools" / "hooks").exists()
        assert (project.ws / "tools").is_dir()  # only what git runs is held: the rest of tools/ was made


async def test_an_existing_hooks_path_and_a_script_git_settings_name_stay_read_only(project: Project) -> None:
    hooks = project.ws / "githooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    watch = project.ws / "watch.sh"
    watch.write_text("#!/bin/sh\n")
    git(project.ws, "config", "core.hooksPath", "githooks")
    git(project.ws, "config", "alias.fmt", "!sh ./watch.sh")
    result = await project.run(
        "echo 'touch x' >> githooks/pre-commit; echo 'touch y' >> watch.sh; echo ok > other.sh; exit 0"
    )
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    assert watch.read_text() == "#!/bin/sh\n"
    assert (project.ws / "other.sh").read_text() == "ok\n"  # a file git settings don't name: writable
    assert "alias.fmt" in output(result) and "core.hooksPath" in output(result)  # the notes say why


async def test_a_new_repository_may_appear_but_not_with_settings_that_run_programs(
    tmp_path: Path, guarded: bool
) -> None:
    supervisor = ProcessSupervisor(data_dir=tmp_path / "data")
    project = Project(tmp_path, supervisor, name="fresh", repository=False)
    fresh = project.ws
    marker = tmp_path / "fsmonitor-ran"
    try:
        result = await project.run(
            f"git init -q && git config user.name someone && git config core.fsmonitor 'touch {marker}; :'; echo done"
        )
        git(fresh, "status")
        assert marker.exists() is not guarded, output(result)
        assert (fresh / ".git" / "HEAD").is_file()  # the repository itself is there either way
        if guarded:
            assert not (fresh / ".git" / "config").exists()
            assert "fsmonitor" in output(result) and "[sandbox] The sandbox set aside" in output(result)
            inert = await project.run("git config user.name someone && git config --local --get user.name")
            assert output(inert) == "someone"  # a new repository's inert settings stay
            assert git(fresh, "config", "--get", "user.name").stdout == "someone\n"
    finally:
        await supervisor.shutdown()
        project.sandbox.close()


async def test_a_script_a_hook_names_is_held(project: Project) -> None:
    script = project.ws / "scripts" / "fmt.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho formatted\n")
    project.settings(
        {
            "hooks": {
                "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "sh scripts/fmt.sh"}]}]
            }
        }
    )
    marker = project.root / "hook-script-ran"
    result = await project.run(f"echo 'touch {marker}' >> scripts/fmt.sh; echo ok > scripts/other.sh; exit 0")
    run_outside(project.ws, "sh", "scripts/fmt.sh")  # the hook, later
    assert not marker.exists(), output(result)
    assert script.read_text() == "#!/bin/sh\necho formatted\n"
    assert (project.ws / "scripts" / "other.sh").read_text() == "ok\n"
    assert "PostToolUse hook" in output(result)


async def test_a_dot_git_file_keeps_pointing_where_it_did(tmp_path: Path, project: Project) -> None:
    linked = project.ws / "linked"
    assert git(project.ws, "commit", "-q", "--allow-empty", "-m", "one").returncode == 0
    assert git(project.ws, "worktree", "add", "-q", str(linked)).returncode == 0
    before = (linked / ".git").read_text()
    project.ctx.cwd = linked
    try:
        await project.run("printf 'gitdir: /tmp/elsewhere\\n' > .git; exit 0")
    finally:
        project.ctx.cwd = project.ws
    assert (linked / ".git").read_text() == before


async def test_an_older_sandbox_cannot_rewrite_what_an_allowed_call_writes(project: Project, guarded: bool) -> None:
    from bridge.permissions.runs_later import GRANTS
    from bridge.tools.tasks import TaskOutputInput, TaskOutputTool
    from tests.poll import poll

    # started while CLAUDE.md does not exist (so without a read-only mount for it): it waits for the file
    started = await project.run(
        "while [ ! -s CLAUDE.md ]; do sleep 0.005; done; echo injected > CLAUDE.md", run_in_background=True
    )
    shell_id = started.raw_output["background_id"] if started.raw_output else ""
    shell = project.background.get(shell_id)
    memory = project.ws / "CLAUDE.md"
    with GRANTS.hold([memory]):  # the user allowed a Write of CLAUDE.md (the file tools write outside bwrap)
        memory.write_text("# notes\n")
    await poll(lambda: shell.status != "running", what="the background shell to end")
    assert (memory.read_text() == "# notes\n") is guarded  # the control: the waiting command rewrites it
    if guarded:
        report = await TaskOutputTool().call(TaskOutputInput(task_id=shell_id, block=False), project.ctx)
        assert "its sandbox could not hold it read-only, and it was stopped" in output(report)


# -- the file tools ask, in every mode ----------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "fmt.sh").write_text("#!/bin/sh\n")
    (ws / ".agent-bridge").mkdir()
    (ws / ".agent-bridge" / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "",
                            "hooks": [{"type": "command", "command": "sh $CLAUDE_PROJECT_DIR/scripts/fmt.sh"}],
                        }
                    ]
                }
            }
        )
    )
    return ws


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize(
    ("relative", "words"),
    [
        (".vscode/tasks.json", "run its tasks by itself when the folder opens"),
        (".vscode/settings.json", "terminal profiles"),
        (".vscode/extensions.json", "VS Code reads its workspace settings"),
        (".idea/runConfigurations/x.xml", "run configurations"),
        (".devcontainer/devcontainer.json", "initializeCommand"),
        (".envrc", "direnv runs it"),
        ("sub/.envrc", "direnv runs it"),
        (".husky/pre-commit", "husky"),
        (".pre-commit-config.yaml", "pre-commit runs the hooks"),
        (".git/config", "make git run programs"),
        ("scripts/fmt.sh", "PreToolUse hook"),
        ("team.code-workspace", "workspace file"),
    ],
)
def test_the_file_tools_ask_for_what_runs_later_in_every_mode(
    tmp_path: Path, repo: Path, mode: str, relative: str, words: str
) -> None:
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR, mode=parse_mode(mode))
    path = repo.resolve() / relative
    for tool in ("Write", "Edit"):
        decision = decide(engine, tool, {"file_path": str(path)}, read_only=False, paths=[(path, "write")])
        assert decision.behavior == "ask" and words in decision.reason, decision
        assert decision.suggestions == []  # no always-option
        assert path in decision.grants  # allowing it allows exactly this write
    ordinary = repo.resolve() / "src" / "app.py"
    decision = decide(engine, "Write", {"file_path": str(ordinary)}, read_only=False, paths=[(ordinary, "write")])
    assert decision.behavior == ("ask" if mode == "default" else "allow")  # the control: an ordinary file
    assert decision.grants == ()


def test_a_makefile_is_project_code_not_held(tmp_path: Path, repo: Path) -> None:
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR, mode="acceptEdits")
    for name in ("Makefile", "package.json", ".nvmrc", ".gitattributes", ".gitmodules"):
        path = repo.resolve() / name
        decision = decide(engine, "Write", {"file_path": str(path)}, read_only=False, paths=[(path, "write")])
        assert decision.behavior == "allow", name


@pytest.mark.parametrize(
    ("command", "held"),
    [
        ("git config user.name x", ".git/config"),
        ("git config --unset core.editor", ".git/config"),
        ("git remote add origin https://example.com/x.git", ".git/config"),
        ("git push -u origin main", ".git/config"),
        ("git lfs install", ".git/hooks"),
        ("echo x > .vscode/tasks.json", ".vscode/tasks.json"),
        ("cat notes >> CLAUDE.md", "CLAUDE.md"),
    ],
)
def test_a_command_that_writes_what_runs_later_asks_even_in_bypass_and_grants_exactly_that(
    tmp_path: Path, repo: Path, command: str, held: str
) -> None:
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    mode = "default" if held == "CLAUDE.md" else "bypassPermissions"  # memory files don't ask in bypass
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR, mode=parse_mode(mode))
    decision = decide(engine, "Bash", {"command": command})
    assert decision.behavior == "ask", decision
    assert repo.resolve() / held in decision.grants
    for harmless in ("git config --get user.name", "git status", "git commit -m x"):
        quiet = decide(engine, "Bash", {"command": harmless})
        assert not quiet.grants and "git's settings" not in quiet.reason


def test_a_command_whose_writes_cannot_be_known_is_granted_nothing(tmp_path: Path, repo: Path) -> None:
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR)
    decision = decide(engine, "Bash", {"command": 'echo x > "$TARGET"'})
    assert decision.behavior == "ask" and decision.grants == ()
    assert "the sandbox keeps them read-only" in decision.reason


def test_hooks_and_mcp_servers_name_what_they_run(tmp_path: Path, repo: Path) -> None:
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"tools": {"command": "node", "args": ["./mcp/server.js"]}}})
    )
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR)
    held = [h.path for h in policy_from_engine(engine, sandbox_settings(store)).protected]
    assert repo.resolve() / "scripts" / "fmt.sh" in held
    assert repo.resolve() / "mcp" / "server.js" in held
    assert shutil.which("node") is None or Path(shutil.which("node") or "") not in held  # programs on PATH: not


@pytest.mark.parametrize("folder", ["existing", "new"])
async def test_a_repository_made_one_level_down_may_not_run_programs_either(
    project: Project, guarded: bool, folder: str
) -> None:
    if folder == "existing":
        (project.ws / "lib").mkdir()
    marker = project.root / "nested-fsmonitor-ran"
    result = await project.run(
        f"mkdir -p lib && cd lib && git init -q && git config user.name x && "
        f"git config core.fsmonitor 'touch {marker}; :'; echo done"
    )
    git(project.ws / "lib", "status")  # an editor opens a repository it finds in a subfolder, and runs git there
    assert marker.exists() is not guarded, output(result)
    if guarded:
        # the repository may be made: `cargo new` does
        assert (project.ws / "lib" / ".git" / "HEAD").is_file(), output(result)
        assert not (project.ws / "lib" / ".git" / "config").exists()
        assert "[sandbox] The sandbox set aside" in output(result)


async def test_an_existing_repository_one_level_down_keeps_its_settings_and_hooks(project: Project) -> None:
    lib = project.ws / "lib"
    git(project.ws, "init", "-q", str(lib))
    config = (lib / ".git" / "config").read_bytes()
    result = await project.run(
        "git -C lib config core.fsmonitor true; echo x > lib/.git/hooks/pre-commit; echo y > lib/code.py; exit 0"
    )
    assert (lib / ".git" / "config").read_bytes() == config
    assert not (lib / ".git" / "hooks" / "pre-commit").exists()
    assert (lib / "code.py").read_text() == "y\n", output(result)  # the rest of it is ordinary work


def test_a_recursive_write_of_a_folder_holding_what_runs_later_asks(tmp_path: Path, repo: Path) -> None:
    (repo / "tools" / "git" / "hooks").mkdir(parents=True)
    git(repo, "config", "core.hooksPath", "tools/git/hooks")
    store = SettingsStore(repo, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude-home")
    engine = PermissionEngine(cwd=repo, settings=store, grammar=GRAMMAR, mode="bypassPermissions")
    decision = decide(engine, "Bash", {"command": "rm -rf tools"})
    assert decision.behavior == "ask" and "core.hooksPath" in decision.reason
    assert decide(engine, "Bash", {"command": "rm -rf src"}).behavior == "allow"


async def test_a_link_put_where_a_write_rule_points_opens_nothing_outside(project: Project) -> None:
    """An allow rule for writes in the workspace (`Edit(build/**)`, saved by "always allow"), then `build` becomes
    a link to a folder outside: a pull that checks out a link there, or a command run without the sandbox. The
    next command wrote through it (its sandbox followed the link and bound the folder writable, once the
    settings were read again). Now the link is left out: the write fails, the folder outside is unchanged."""
    (project.ws / "build").mkdir()
    project.settings({"permissions": {"allow": ["Edit(build/**)"]}})
    assert "made" in output(await project.run("echo made > build/marker && echo made"))
    with tempfile.TemporaryDirectory(dir="/var/tmp") as outside:  # not under /tmp: the sandbox has its own
        shutil.rmtree(project.ws / "build")
        (project.ws / "build").symlink_to(outside)
        project.engine.settings.refresh(force=True)  # read again: a rule saved by "always allow", an edit

        result = await project.run("echo owned > build/marker")

        assert not (Path(outside) / "marker").exists(), output(result)
