"""The bridge's own secrets never reach the model (finding F4), end to end: a real `agent-bridge run` whose
workspace is the user's home folder, or `~/.claude` (opened to edit agents and skills), with Claude Code's
credentials, the bridge's MCP sign-in tokens and an earlier session's transcripts in it. The scripted model reads
them with Read, searches for them with Grep and Glob, follows a link to them, and `cat`s and `grep -r`s them from
Bash while the OS sandbox is unavailable (`AGENT_BRIDGE_BWRAP=/bin/false`: commands that read run unsandboxed);
with the sandbox, a search of the whole home folder runs and the sandbox masks them.
Proof is what the offline API received: no secret in any request. Each attempt has its control: an ordinary file
next to the secrets is read, found and listed in the same turn."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bridge.offline import OfflineServer
from tests.e2e.harness import run_agent, text_response, tool_response

SECRETS = (
    "USER-SETTINGS-11",
    "BRIDGE-SETTINGS-12",
    "CLAUDE-CRED-1",
    "MCP-TOKEN-3",
    "TRANSCRIPT-4",
    "AGENT-TRANSCRIPT-5",
    "CLAUDE-STATE-8",
    "CLAUDE-STATE-9",
    "CLAUDE-BACKUP-10",
)


@dataclass
class Home:
    home: Path
    claude: Path  # ~/.claude: CLAUDE_CONFIG_DIR
    data: Path  # the bridge's data dir, in its default place
    config: Path

    @property
    def credentials(self) -> Path:
        return self.claude / ".credentials.json"

    @property
    def token(self) -> Path:
        return self.data / "mcp-auth" / "server-0123.json"


def a_home(tmp_path: Path) -> Home:
    """A user's home with the bridge's secrets where they live, and an ordinary file next to each."""
    home = tmp_path / "home"
    place = Home(home, home / ".claude", home / ".local" / "share" / "agent-bridge", tmp_path / "cfg")
    files = {
        place.credentials: {"claudeAiOauth": {"accessToken": "sk-ant-oat01-CLAUDE-CRED-1"}},
        place.claude / "ordinary.json": {"accessToken": "ORDINARY-TOKEN-2"},
        place.token: {"access_token": "MCP-TOKEN-3"},
        place.data / "visible.json": {"access_token": "DATA-VISIBLE-6"},
        place.claude / "plain" / "config.json": {"accessToken": "PLAIN-TOKEN-7"},
        # Claude Code's state (`~/.claude.json`, or in CLAUDE_CONFIG_DIR) and its backups: MCP servers' headers and
        # env, the API key, the account — what a user keeps there, without servers that would start here
        place.home / ".claude.json": {"primaryApiKey": "sk-ant-api03-CLAUDE-STATE-8"},
        place.claude / ".claude.json": {"oauthAccount": {"accessToken": "CLAUDE-STATE-9"}},
        place.claude / "backups" / ".claude.json.backup.1764900000000": {"primaryApiKey": "CLAUDE-BACKUP-10"},
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content))
    sessions = place.data / "sessions"
    (sessions / "sess_old" / "agents").mkdir(parents=True)
    (sessions / "sess_old.jsonl").write_text(json.dumps({"tool_result": '{"accessToken": "TRANSCRIPT-4"}'}) + "\n")
    (sessions / "sess_old" / "agents" / "agent_1.jsonl").write_text('{"accessToken": "AGENT-TRANSCRIPT-5"}\n')
    place.config.mkdir()
    # the user's settings: an MCP server's token, a gateway's (attack round 24: Read and Grep showed them)
    (place.claude / "settings.json").write_text(json.dumps({"env": {"ANTHROPIC_AUTH_TOKEN": "USER-SETTINGS-11"}}))
    servers = {"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GH_TOKEN": "BRIDGE-SETTINGS-12"}}}}
    (place.config / "settings.json").write_text(json.dumps(servers))
    return place


async def run_turn(
    place: Home, cwd: Path, calls: list[tuple[str, dict[str, Any]]], *flags: str, sandbox: bool = False
) -> tuple[Any, str]:
    """One `run` turn whose model makes `calls` one by one; the requests the model received and the output.
    Without `sandbox` the OS sandbox cannot start: commands that read run unsandboxed."""
    scenario = {"responses": [tool_response(call) for call in calls] + [text_response("done")]}
    with OfflineServer(scenario) as model:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
        env.update(
            HOME=str(place.home),
            AGENT_BRIDGE_DATA_DIR=str(place.data),
            AGENT_BRIDGE_CONFIG_DIR=str(place.config),
            CLAUDE_CONFIG_DIR=str(place.claude),
            ANTHROPIC_BASE_URL=model.base_url,
            ANTHROPIC_API_KEY="test-key",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # the wheel's `rg`
        )
        if not sandbox:
            env["AGENT_BRIDGE_BWRAP"] = "/bin/false"  # what bwrap does where user namespaces are blocked
        _, out = await run_agent("run", *flags, "look around", cwd=cwd, env=env)
        requests = [r.body for r in model.requests]
    assert len(requests) == len(calls) + 1, out
    return requests, out


def results(body: Any) -> list[str]:
    """The text of each tool result the model received, in the order of its calls."""
    found: list[str] = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_result":
                content = block.get("content")
                found.append(content if isinstance(content, str) else json.dumps(content))
    return found


def leaked(requests: list[Any], out: str) -> list[str]:
    return [s for s in SECRETS if any(s in json.dumps(body) for body in requests) or s in out]


@pytest.mark.parametrize("opened", ["home", "claude"])
async def test_no_tool_shows_the_model_the_bridges_own_secrets_in_the_workspace(tmp_path: Path, opened: str) -> None:
    place = a_home(tmp_path)
    workspace = place.home if opened == "home" else place.claude
    (workspace / "link.json").symlink_to(place.credentials)  # a link in the workspace is what it leads to
    calls = [
        ("Read", {"file_path": str(place.credentials)}),
        ("Read", {"file_path": str(place.claude / "ordinary.json")}),
        ("Read", {"file_path": str(workspace / "link.json")}),
        ("Grep", {"pattern": "access_?[tT]oken", "path": str(workspace), "output_mode": "content"}),
        ("Glob", {"pattern": "**/*.json*", "path": str(workspace)}),
        ("Edit", {"file_path": str(place.credentials), "old_string": "CLAUDE", "new_string": "MINE"}),
        ("Bash", {"command": f"cat {place.credentials} {place.token}"}),
        ("Bash", {"command": f"cat {place.claude / 'ordinary.json'}"}),
        ("Bash", {"command": f"grep -r accessToken {workspace}"}),
        ("Bash", {"command": f"grep -r accessToken {place.claude / 'plain'}"}),
    ]
    requests, out = await run_turn(place, workspace, calls, "--non-interactive")
    read, ordinary, link, grep, glob, edit, cat, cat_ordinary, grep_r, grep_r_plain = results(requests[-1])

    assert leaked(requests, out) == [], out
    for denied in (read, link, edit, cat):
        assert "the bridge's own secret" in denied, denied
    assert "ORDINARY-TOKEN-2" in ordinary and "ORDINARY-TOKEN-2" in cat_ordinary, "the control: a file beside it"
    assert "ORDINARY-TOKEN-2" in grep and "PLAIN-TOKEN-7" in grep, grep
    assert ("DATA-VISIBLE-6" in grep) == (opened == "home"), "the control: the data dir's other files are found"
    assert "ordinary.json" in glob and "config.json" in glob, glob
    for name in (".credentials.json", "server-0123.json", "sess_old.jsonl", "agent_1.jsonl", ".claude.json"):
        assert name not in glob and name not in grep, (glob, grep)
    assert "holds the bridge's own secret" in grep_r and "no OS sandbox" in grep_r, grep_r
    assert "PLAIN-TOKEN-7" in grep_r_plain, "the control: a tree with no secret in it is searched"
    assert "CLAUDE-CRED-1" in place.credentials.read_text(), "the edit was refused"


async def test_a_yes_to_everything_does_not_open_the_bridges_own_secrets(tmp_path: Path) -> None:
    """Deny wins: approving every question (and no sandbox) still reads no secret with Read, Grep or `cat`."""
    place = a_home(tmp_path)
    calls = [
        ("Read", {"file_path": str(place.token)}),
        ("Grep", {"pattern": "TOKEN|CRED|SETTINGS", "path": str(place.home), "output_mode": "content"}),
        ("Bash", {"command": f"cat {place.token} {place.data / 'visible.json'}"}),
        ("Bash", {"command": f"cat {place.data / 'visible.json'}"}),
        ("Read", {"file_path": str(place.config / "settings.json")}),
        ("Grep", {"pattern": "SETTINGS", "path": str(place.config), "output_mode": "content"}),
    ]
    requests, out = await run_turn(place, place.home, calls, "--dangerously-approve-all")
    read, grep, cat, cat_visible, read_settings, _ = results(requests[-1])

    assert leaked(requests, out) == [], out
    assert "the bridge's own secret" in read and "the bridge's own secret" in cat, (read, cat)
    assert "the bridge's own secret" in read_settings, read_settings
    assert "ORDINARY-TOKEN-2" in grep and "left out" in grep, grep
    assert "DATA-VISIBLE-6" in cat_visible, "the control: the data dir's other files are read"


async def test_with_the_sandbox_a_search_of_the_home_folder_runs_and_finds_no_secret() -> None:
    """The sandbox masks the secrets for commands, so `grep -r` over the home folder needs no question; the
    control: the ordinary files in the same folders are found."""
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="agent-bridge-test-"))  # not /tmp: commands have their own
    try:
        place = a_home(root)
        calls = [("Bash", {"command": f"grep -r -i token {place.home}"})]
        requests, out = await run_turn(place, place.home, calls, "--non-interactive", sandbox=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    [grep_r] = results(requests[-1])
    assert leaked(requests, out) == [], out
    assert "ORDINARY-TOKEN-2" in grep_r and "DATA-VISIBLE-6" in grep_r and "PLAIN-TOKEN-7" in grep_r, grep_r


async def test_claude_codes_state_file_and_its_backups_are_the_bridges_own_secrets(tmp_path: Path) -> None:
    """`~/.claude.json` (and `$CLAUDE_CONFIG_DIR/.claude.json`, and Claude Code's backups of it) holds MCP servers'
    tokens, the API key and the account: no tool reads it, in any mode; the bridge itself still does."""
    place = a_home(tmp_path)
    state, claude_state = place.home / ".claude.json", place.claude / ".claude.json"
    backup = place.claude / "backups" / ".claude.json.backup.1764900000000"
    calls = [
        ("Read", {"file_path": str(state)}),
        ("Read", {"file_path": str(claude_state)}),
        ("Bash", {"command": f"cat {backup}"}),
        ("Grep", {"pattern": "CLAUDE|TOKEN", "path": str(place.home), "output_mode": "content"}),
        ("Bash", {"command": f"cat {place.claude / 'ordinary.json'}"}),
    ]
    requests, out = await run_turn(place, place.home, calls, "--non-interactive")  # a question would be a no
    read, read_claude, cat, grep, control = results(requests[-1])

    assert leaked(requests, out) == [], out
    for denied in (read, read_claude, cat):
        assert "the bridge's own secret" in denied and "Claude Code" in denied, denied
    assert "ORDINARY-TOKEN-2" in grep and "PLAIN-TOKEN-7" in grep, grep
    assert "ORDINARY-TOKEN-2" in control, "the control: a file beside them is read"


def _hard_link_or_skip(target: Path, link: Path) -> None:
    try:
        os.link(target, link)
    except OSError as error:  # a file system without hard links
        pytest.skip(f"no hard links here: {error}")


@pytest.mark.parametrize("sandbox", [False, True])
async def test_a_hard_link_to_a_secret_is_the_secret(sandbox: bool) -> None:
    """A workspace file that is a second name of a secret (same inode) is denied like the secret, for Read, Grep,
    `cat` and `grep -r`, with or without the sandbox (it masks paths, not inodes); the control: a file beside it."""
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="agent-bridge-test-"))  # not /tmp: commands have their own
    try:
        place = a_home(root)
        project = place.home / "project"
        project.mkdir()
        (project / "plain.json").write_text('{"accessToken": "PROJECT-PLAIN-11"}')
        _hard_link_or_skip(place.token, project / "notes.json")
        _hard_link_or_skip(place.credentials, project / "cache.json")
        calls = [
            ("Read", {"file_path": str(project / "notes.json")}),
            ("Grep", {"pattern": "oken", "path": str(project), "output_mode": "content"}),
            ("Bash", {"command": "cat notes.json"}),
            ("Bash", {"command": "grep -r oken ."}),
            ("Edit", {"file_path": str(project / "cache.json"), "old_string": "CLAUDE", "new_string": "MINE"}),
            ("Read", {"file_path": str(project / "plain.json")}),
        ]
        requests, out = await run_turn(place, project, calls, "--non-interactive", sandbox=sandbox)
        assert "CLAUDE-CRED-1" in place.credentials.read_text(), "the edit was refused"
    finally:
        shutil.rmtree(root, ignore_errors=True)
    read, grep, cat, grep_r, edit, control = results(requests[-1])

    assert leaked(requests, out) == [], out
    for denied in (read, cat, grep_r, edit):
        assert "the bridge's own secret" in denied, denied
    assert "PROJECT-PLAIN-11" in grep and "notes.json" not in grep, grep
    assert "PROJECT-PLAIN-11" in control, "the control: a file beside them is read"


@pytest.mark.parametrize("sandbox", [False, True])
async def test_a_search_that_follows_links_does_not_follow_one_to_a_secret(sandbox: bool) -> None:
    """`grep -R`, `rg -L` follow links while they walk: a link in the tree to a secret, or to a folder holding one,
    is not followed into it. With the sandbox the search runs (the sandbox masks the secret); without it the
    command is denied, in any mode; the control: the same search of a tree without such a link runs."""
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="agent-bridge-test-"))  # not /tmp: commands have their own
    try:
        place = a_home(root)
        project = place.home / "project"
        (project / "docs").mkdir(parents=True)
        (project / "plain").mkdir()
        (project / "plain" / "a.json").write_text('{"accessToken": "PROJECT-PLAIN-11"}')
        (project / "docs" / "data").symlink_to(place.data)  # a folder holding the MCP tokens and transcripts
        (project / "docs" / "cred.json").symlink_to(place.credentials)
        calls = [
            ("Bash", {"command": "grep -R oken project/docs"}),
            ("Bash", {"command": "rg -L oken project/docs"}),
            ("Bash", {"command": "grep -R oken project/plain"}),
        ]
        # the home folder is the workspace: the links lead inside it
        requests, out = await run_turn(place, place.home, calls, "--dangerously-approve-all", sandbox=sandbox)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    grep_r, rg_l, control = results(requests[-1])

    assert leaked(requests, out) == [], out
    assert "approved without asking" not in out, "denied, not asked; the control runs unasked"
    if sandbox:
        assert "DATA-VISIBLE-6" in grep_r, "the sandbox masks the secrets, not the folder"
    else:
        for denied in (grep_r, rg_l):
            assert "the bridge's own secret" in denied and "no OS sandbox" in denied, denied
    assert "PROJECT-PLAIN-11" in control, "the control: a tree without such a link is searched"


async def test_without_a_sandbox_no_mode_reads_a_tree_holding_a_secret(tmp_path: Path) -> None:
    """bypassPermissions and `--dangerously-approve-all` skip questions: a command that reads a folder holding the
    bridge's secrets while no sandbox masks them is denied, not asked; the control: a folder without one is read."""
    place = a_home(tmp_path)
    (place.config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "bypassPermissions"}}))
    calls = [
        ("Bash", {"command": f"grep -r oken {place.home}"}),
        ("Bash", {"command": f"grep -r oken {place.claude / 'plain'}"}),
    ]
    for flags in ((), ("--dangerously-approve-all",)):
        requests, out = await run_turn(place, place.home, calls, *flags)
        grep_r, control = results(requests[-1])
        assert leaked(requests, out) == [], out
        assert "approved without asking" not in out, "denied, not asked; the control runs unasked"
        assert "the bridge's own secret" in grep_r and "no OS sandbox" in grep_r, grep_r
        assert "PLAIN-TOKEN-7" in control, "the control: a tree with no secret in it is searched"


async def test_without_a_sandbox_a_program_the_checker_does_not_know_reads_no_folder_reaching_a_secret(
    tmp_path: Path,
) -> None:
    """`tar`, `cp -rL`, `find -L`: what they walk the checker can't say, so a folder they are given that holds a
    secret, or has a link in it to one, is denied in every mode while no sandbox hides the secrets (a yes-to-all
    would run them); the control: the same programs on a folder without such a link run."""
    place = a_home(tmp_path)
    project = place.home / "project"
    (project / "docs").mkdir(parents=True)
    (project / "plain").mkdir()
    (project / "plain" / "a.json").write_text('{"accessToken": "PROJECT-PLAIN-11"}')
    (project / "docs" / "data").symlink_to(place.data)
    copy = tmp_path / "copy"
    calls = [
        ("Bash", {"command": f"tar -cf - {place.data}"}),
        ("Bash", {"command": "tar -chf - project/docs"}),
        ("Bash", {"command": f"cp -rL project/docs {copy} && cat {copy}/data/mcp-auth/*"}),
        ("Bash", {"command": "find -L project/docs -type f -exec cat {} +"}),
        ("Bash", {"command": "tar -chf - project/plain"}),
    ]
    requests, out = await run_turn(place, place.home, calls, "--dangerously-approve-all")
    *denied, control = results(requests[-1])

    assert leaked(requests, out) == [], out
    for result in denied:
        assert "the bridge's own secret" in result and "no OS sandbox" in result, result
    assert "PROJECT-PLAIN-11" in control, "the control: a folder without such a link is read"
