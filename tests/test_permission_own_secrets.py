"""The bridge's own secrets (bridge/permissions/own_secrets.py) in the engine's decisions, when the workspace holds
them (the user opened their home folder): any call that names one is denied whatever the mode or rules, as named
or through a link; a command that reads a tree holding one asks unless the OS sandbox masks them; Grep and Glob
results leave them out. The end-to-end proof is tests/e2e/test_bridge_secrets.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.own_secrets import OwnSecrets
from bridge.permissions.rules import RuleSet
from bridge.permissions.sandbox_policy import EXPAND_ENTRIES, expand
from bridge.permissions.settings import SettingsStore
from bridge.permissions.shell_paths import MAX_SCAN_ENTRIES
from tests.permission_calls import GRAMMAR, decide
from tests.scripted_run import scripted_run, transcripts


class Home:
    def __init__(self, tmp: Path) -> None:
        self.home = Path(os.path.realpath(tmp)) / "home"
        self.claude = self.home / ".claude"
        self.data = self.home / ".local" / "share" / "agent-bridge"
        self.credentials = self.claude / ".credentials.json"
        self.token = self.data / "mcp-auth" / "server.json"
        self.transcript = self.data / "sessions" / "sess_old.jsonl"
        self.sidechain = self.data / "sessions" / "sess_old" / "agents" / "agent_1.jsonl"
        self.stored = self.data / "sessions" / "sess_old" / "tool-results" / "toolu_1.txt"
        self.ordinary = self.claude / "ordinary.json"
        for path in (self.credentials, self.token, self.transcript, self.sidechain, self.stored, self.ordinary):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}")
        # sess_old is a session of this folder (the home folder, opened as the workspace): its stored results are
        # the folder's own to read
        self.transcript.write_text(json.dumps({"type": "session", "sessionId": "sess_old", "cwd": str(self.home)}))

    def engine(self, mode: Mode = "default", allow: tuple[str, ...] = ()) -> PermissionEngine:
        store = SettingsStore(self.home, user_config_dir=self.home.parent / "cfg", claude_home=self.claude)
        return PermissionEngine(
            cwd=self.home,
            settings=store,
            grammar=GRAMMAR,
            mode=mode,
            session_rules=RuleSet.of(allow=list(allow)),
            secrets=OwnSecrets.of(
                self.data, self.claude, self.home, cwd=self.home, config_dir=self.home.parent / "cfg"
            ),
        )


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions"])
def test_a_call_naming_a_secret_is_denied_in_every_mode_and_over_allow_rules(home: Home, mode: Mode) -> None:
    engine = home.engine(mode, allow=("Read", "Edit", "Bash"))
    for path in (home.credentials, home.token, home.transcript, home.sidechain):
        for tool, raw in (
            ("Read", {"file_path": str(path)}),
            ("Edit", {"file_path": str(path), "old_string": "{", "new_string": "["}),
            ("Write", {"file_path": str(path), "content": "x"}),
            ("Bash", {"command": f"cat {path}"}),
        ):
            decision = decide(engine, tool, raw)
            assert decision.behavior == "deny" and "the bridge's own secret" in decision.reason, (tool, path, decision)
    assert decide(engine, "Grep", {"pattern": "x", "path": str(home.token.parent)}).behavior == "deny"
    new_token = {"file_path": str(home.token.parent / "new.json"), "content": "x"}
    assert decide(engine, "Write", new_token).behavior == "deny"


def test_beside_a_secret_reads_as_before(home: Home) -> None:
    engine = home.engine()
    for path in (home.ordinary, home.stored, home.data / "sessions"):
        assert decide(engine, "Read", {"file_path": str(path)}).behavior == "allow", path
    assert decide(engine, "Bash", {"command": f"cat {home.ordinary}"}).behavior == "allow"
    assert decide(engine, "Grep", {"pattern": "x", "path": str(home.home)}).behavior == "allow"


def test_a_link_in_the_workspace_to_a_secret_is_the_secret(home: Home) -> None:
    (home.home / "creds.json").symlink_to(home.credentials)
    (home.home / "auth").symlink_to(home.token.parent)
    engine = home.engine("bypassPermissions")
    for path in (home.home / "creds.json", home.home / "auth" / "server.json"):
        assert decide(engine, "Read", {"file_path": str(path)}).behavior == "deny", path
        assert decide(engine, "Bash", {"command": f"cat {path}"}).behavior == "deny", path


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
def test_a_command_reading_a_tree_that_holds_a_secret_is_denied_unless_the_sandbox_masks_it(
    home: Home, mode: Mode
) -> None:
    engine = home.engine(mode)
    (home.claude / "plugins").mkdir()
    command = {"command": f"grep -r token {home.home}"}
    decision = decide(engine, "Bash", command)
    assert decision.behavior == "deny" and "holds the bridge's own secret" in decision.reason, decision
    assert decide(engine, "Bash", {"command": f"grep -r token {home.claude / 'plugins'}"}).behavior == "allow"
    engine.sandboxed = lambda: True
    assert decide(engine, "Bash", command).behavior == "allow"


def test_a_hard_link_to_a_secret_made_after_the_secrets_were_listed_is_still_one(home: Home) -> None:
    engine = home.engine("bypassPermissions")
    project = home.home / "project"
    project.mkdir()
    (project / "plain.txt").write_text("x")
    assert decide(engine, "Bash", {"command": f"grep -r x {project}"}).behavior == "allow"
    assert decide(engine, "Read", {"file_path": str(project / "plain.txt")}).behavior == "allow"
    later = home.data / "mcp-auth" / "later.json"  # a secret that did not exist when they were listed
    later.write_text("{}")
    os.link(later, project / "notes.txt")
    engine.sandboxed = lambda: True
    for tool, raw in (
        ("Read", {"file_path": str(project / "notes.txt")}),
        ("Bash", {"command": f"cat {project / 'notes.txt'}"}),
        ("Bash", {"command": f"grep -r x {project}"}),
    ):
        decision = decide(engine, tool, raw)
        assert decision.behavior == "deny" and "the bridge's own secret" in decision.reason, (tool, decision)
    assert decide(engine, "Read", {"file_path": str(project / "plain.txt")}).behavior == "allow"
    guard = engine.read_guard()
    assert "hard link" in (guard(project / "notes.txt", project) or "")
    assert guard(project / "plain.txt", project) is None


def test_a_link_following_walk_too_big_to_check_asks_even_in_bypass_mode(home: Home) -> None:
    big = home.home / "big"
    big.mkdir()
    for i in range(MAX_SCAN_ENTRIES + 1):
        (big / str(i)).touch()
    engine = home.engine("bypassPermissions")
    decision = decide(engine, "Bash", {"command": f"grep -R x {big}"})
    assert decision.behavior == "ask" and "too many files" in decision.reason, decision
    assert decide(engine, "Bash", {"command": f"grep -r x {big}"}).behavior == "allow", "no link is followed"
    engine.sandboxed = lambda: True
    assert decide(engine, "Bash", {"command": f"grep -R x {big}"}).behavior == "allow", "the sandbox masks them"


def test_the_sandbox_finds_every_secret_to_mask_without_walking_the_home_folder(home: Home) -> None:
    """The masks share a budget of entries visited: a secret whose pattern walked the home folder would use it up
    (a large home) and leave the secrets after it unmasked."""
    state = home.home / ".claude.json"
    state.write_text("{}")
    big = home.home / "big"
    big.mkdir()
    for i in range(EXPAND_ENTRIES + 1):
        (big / str(i)).touch()
    found = expand(OwnSecrets.of(home.data, home.claude, home.home).patterns)
    assert found.truncated == []
    assert {state, home.credentials, home.token.parent, home.transcript} <= set(found.paths), found.paths


def test_the_sandbox_finds_every_transcript_to_mask_beside_a_session_with_many_stored_results(home: Home) -> None:
    """`sessions/*/agents` lies one level down: the walk for it need not look inside a session's stored results
    (thousands of files), which would use up the budget and leave transcripts unmasked."""
    stored = home.data / "sessions" / "sess_big" / "tool-results"
    stored.mkdir(parents=True)
    for i in range(EXPAND_ENTRIES + 1):
        (stored / str(i)).touch()
    found = expand(OwnSecrets.of(home.data, home.claude, home.home).patterns)
    assert found.truncated == []
    assert {home.transcript, home.sidechain.parent} <= set(found.paths), found.paths


def test_claude_codes_state_is_a_secret_wherever_claude_keeps_it(home: Home) -> None:
    engine = home.engine("bypassPermissions")
    for path in (
        home.home / ".claude.json",
        home.claude / ".claude.json",
        home.home / ".claude.json.backup",
        home.claude / "backups" / ".claude.json.backup.1764900000000",
        home.claude / "projects" / "-home-me-app" / "0b1c.jsonl",
        home.claude / "projects" / "-home-me-app" / "0b1c" / "subagents" / "agent-1.jsonl",
    ):
        decision = decide(engine, "Read", {"file_path": str(path)})
        assert decision.behavior == "deny" and "Claude Code" in decision.reason, (path, decision)
    for path in (home.home / "project" / ".claude.json", home.claude / "todos" / "a"):
        assert decide(engine, "Read", {"file_path": str(path)}).behavior == "allow", path


def test_the_users_settings_and_the_bridges_approvals_are_secrets(home: Home) -> None:
    """Attack round 24: after one "yes" to a read outside the workspace (or with approve-all), Read and Grep showed
    the model the tokens in the user's settings (an MCP server's `env`/`headers`, a gateway token in `env`): the
    sandbox held them from commands, the file tools did not. The approval and trust stores start servers and apply
    a folder's settings unasked: no tool writes them either."""
    config = home.home.parent / "cfg"
    files = [
        home.claude / "settings.json",
        home.claude / "settings.local.json",
        config / "settings.json",
        config / "mcp-approvals.json",
        config / "trusted-folders.json",
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"env": {"ANTHROPIC_AUTH_TOKEN": "gw-token-123456"}}')
    engine = home.engine("bypassPermissions")
    for path in files:
        for tool, params in (("Read", {"file_path": str(path)}), ("Write", {"file_path": str(path), "content": "{}"})):
            decision = decide(engine, tool, {**params})
            assert decision.behavior == "deny", (tool, path, decision)
        assert "the bridge's own secret" in (engine.read_guard()(path, home.home) or ""), path
    assert decide(engine, "Bash", {"command": f"cat {files[0]}"}).behavior == "deny"


def test_grep_and_glob_results_leave_the_secrets_out(home: Home) -> None:
    (home.home / "creds.json").symlink_to(home.credentials)
    modes: tuple[Mode, ...] = ("default", "bypassPermissions")
    for mode in modes:
        guard = home.engine(mode).read_guard()
        for path in (home.credentials, home.token, home.transcript, home.sidechain, home.home / "creds.json"):
            assert "the bridge's own secret" in (guard(path, home.home) or ""), (mode, path)
        for path in (home.ordinary, home.stored):
            assert guard(path, home.home) is None, (mode, path)


@pytest.mark.parametrize("folder", [".claude/skills", ".agents/skills", ".agent-bridge/skills", ".claude/agents"])
def test_acceptedits_asks_before_writing_a_skill_that_loads_into_the_next_sessions_prompt(
    tmp_path: Path, folder: str
) -> None:
    """Attack round: a project skill's description goes into the next session's first request, as an agent
    definition does; acceptEdits writes ordinary files without asking, never these."""
    ws = Path(os.path.realpath(tmp_path)) / "ws"
    ws.mkdir()
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, mode="acceptEdits")
    write = {"file_path": str(ws / folder / "setup" / "SKILL.md"), "content": "x"}
    assert decide(engine, "Write", write, read_only=False).behavior == "ask"
    ordinary = {"file_path": str(ws / "docs" / "setup.md"), "content": "x"}
    assert decide(engine, "Write", ordinary, read_only=False).behavior == "allow", "the control"


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
def test_the_record_of_running_processes_is_not_written_by_a_tool(home: Home, mode: Mode) -> None:
    """The next bridge kills what `<data dir>/running/*.json` names and deletes the folders it lists: a tool that
    wrote one would kill the user's processes or delete their files at the next start."""
    engine = home.engine(mode)
    record = home.data / "running" / "1-1.json"
    decision = decide(engine, "Write", {"file_path": str(record), "content": '{"processes": [[1, 1]]}'})
    assert decision.behavior == "deny" and "the bridge's own secret" in decision.reason, decision
    assert decide(engine, "Write", {"file_path": str(home.data / "notes.txt"), "content": "x"}).behavior == "allow"


def test_the_secrets_inodes_are_listed_again_when_a_folder_of_them_changes(home: Home) -> None:
    """The listing is kept while its folders are unchanged (settled: older than a clock tick); a secret written
    since is in the next one, and a link made since to a secret already listed is seen at once."""
    secrets = OwnSecrets.of(home.data, home.claude, home.home)
    past = time.time() - 60
    for folder, _, _ in os.walk(home.home):
        os.utime(folder, (past, past))
    assert not secrets.inodes.any_linked()
    assert secrets.inodes.index() is secrets.inodes.index(), "kept while nothing changed"
    os.link(home.token, home.home / "a.txt")
    assert secrets.inodes.any_linked() and secrets.linked(home.home / "a.txt") is not None
    later = home.data / "mcp-auth" / "later.json"
    later.write_text("{}")
    os.link(later, home.home / "b.txt")
    assert secrets.linked(home.home / "b.txt") == "its MCP servers' sign-in tokens"
    assert secrets.linked(home.ordinary) is None


def test_a_sessions_checkpoint_log_is_not_written_by_a_tool(home: Home) -> None:
    """Rewind restores files from the steps `sessions/<id>/checkpoints.jsonl` records: a tool that wrote one would
    choose what a later rewind writes into the workspace."""
    engine = home.engine("acceptEdits")
    log = home.data / "sessions" / "sess_old" / "checkpoints.jsonl"
    decision = decide(engine, "Write", {"file_path": str(log), "content": "{}"})
    assert decision.behavior == "deny" and "the bridge's own secret" in decision.reason, decision
    assert decide(engine, "Read", {"file_path": str(home.stored)}).behavior == "allow", "its stored results are read"


def test_another_folders_stored_tool_output_is_never_read_and_the_folders_own_is(tmp_path: Path) -> None:
    """Found by an attack round: a session's stored command output (`sessions/<id>/bash-output/`, the whole text of
    a long result) was readable from another project's session with a yes (or bypass): any project's past output.
    Now it is one of the bridge's own secrets to every other folder's session, in every mode; a session of the same
    folder (forked or resumed from it, whose history names the file) still reads it."""
    data, a, b = tmp_path / "data", tmp_path / "projA", tmp_path / "projB"
    for folder in (a, b):
        folder.mkdir()
    (a / "big.txt").write_text("".join(f"OTHERPROJ-CANARY line {i} {'x' * 80}\n" for i in range(600)))
    env = {"AGENT_BRIDGE_DATA_DIR": str(data), "HOME": str(tmp_path), "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg")}
    scripted_run(
        a, [("Bash", {"command": "cat big.txt"})], "--allow", "Bash(cat *)", env=env, scenario=tmp_path / "1.json"
    )
    [stored] = list(data.glob("sessions/*/bash-output/*"))
    for n, cwd in enumerate((b, a)):  # every question answered yes: outside the workspace, the data dir asks
        read = [("Read", {"file_path": str(stored)})]
        scripted_run(cwd, read, "--dangerously-approve-all", env=env, scenario=tmp_path / f"{n + 2}.json")
    found = transcripts(data)
    [in_b] = [t for cwd, t in found if cwd == str(b)]
    assert "another folder's session's stored command output" in in_b
    assert "OTHERPROJ-CANARY line 0" not in in_b, "project B never sees project A's output"
    [second_a] = [t for cwd, t in found if cwd == str(a) and "cat big.txt" not in t]
    assert "OTHERPROJ-CANARY line 0" in second_a, "the control: a later session of folder A reads it"


def test_a_hard_link_to_a_secret_is_masked_for_commands_whose_reads_no_checker_sees(tmp_path: Path) -> None:
    """Found by an attack round: with every question answered yes, `python3 -c "print(open('sub/c.json').read())"`
    printed Claude Code's sign-in through `sub/c.json`, a hard link to `~/.claude/.credentials.json`: the sandbox
    masks the secrets' paths, and the checker can't see what code reads. While a secret has another name, the
    sandbox finds its names in the workspace and masks them too. The control: a plain file reads."""
    from bridge.execution.sandbox import probe

    if not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / ".claude").mkdir(parents=True)
    (ws / "sub").mkdir(parents=True)
    credentials = home / ".claude" / ".credentials.json"
    credentials.write_text('{"claudeAiOauth": {"accessToken": "sk-ant-oat01-CREDCANARY"}}')
    os.link(credentials, ws / "sub" / "c.json")
    (ws / "sub" / "plain.txt").write_text("PLAIN-CONTROL")
    code = "print(open('sub/plain.txt').read()); print(open('sub/c.json').read())"
    env = {
        "HOME": str(home),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
    }
    calls = [("Bash", {"command": f'python3 -c "{code}"'})]
    done = scripted_run(ws, calls, "--dangerously-approve-all", env=env, scenario=tmp_path / "scenario.json")
    assert "PLAIN-CONTROL" in done.stdout, done.stdout
    assert "CREDCANARY" not in done.stdout
    assert all("CREDCANARY" not in text for _, text in transcripts(tmp_path / "data"))


def test_a_gateway_credential_in_the_custom_headers_reaches_no_command_log_or_transcript(tmp_path: Path) -> None:
    """Attack round 8: `ANTHROPIC_CUSTOM_HEADERS` carries a gateway's `Authorization` with every model request (the
    SDK reads it): it is the bridge's credential. `env` in a command printed it, so it went to the model and into
    the transcript. Now it is handed to nothing, under its name or another, and redacted in the DEBUG log; the
    control: an ordinary variable set beside it reaches the command."""
    from bridge.environment import credential_values

    token = "gwtok-CANARY-HDR-0123456789abcdef"
    headers = f"Authorization: Bearer {token}\nX-Team: platform"
    assert credential_values({"ANTHROPIC_CUSTOM_HEADERS": headers}) == [headers, f"Bearer {token}", token]
    env = {
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
        "ANTHROPIC_CUSTOM_HEADERS": headers,
        "GATEWAY_COPY": f"x{token}",  # the token under another name
        "ORDINARY_CONTROL": "control-value-42",
        "AGENT_BRIDGE_LOG": "DEBUG",
    }
    ws = tmp_path / "ws"
    ws.mkdir()
    done = scripted_run(
        ws, [("Bash", {"command": "env"})], "--allow", "Bash(env)", env=env, scenario=tmp_path / "s.json"
    )
    [(_, transcript)] = transcripts(tmp_path / "data")
    assert "control-value-42" in transcript, "the control: what the command printed went to the model"
    for where, text in (("output", done.stdout), ("log", done.stderr), ("transcript", transcript)):
        assert token not in text, where
