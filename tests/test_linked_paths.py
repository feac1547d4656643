"""Deny rules against other names of the files they name (bridge/permissions/linked_paths.py): a hard link is the
same file under a name no path comparison sees. Found by an attack round: `Read(secret.env)` denied `secret.env`
and let `sub/copy.txt` (a hard link to it) be read by Read, Grep and `cat`; `Edit(prot.txt)` let `echo > sub/hl.txt`
rewrite it. Real `agent-bridge run` processes, the offline model scripted, real files; proven by what reached the
transcript and what changed on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

from bridge.permissions.linked_paths import file_key, linked_name
from bridge.permissions.specifiers import compile_path_specifier
from tests.scripted_run import scripted_run, transcripts


def test_a_hard_link_to_a_denied_file_is_denied_under_every_tool(tmp_path: Path) -> None:
    ws, outside, cfg, data = tmp_path / "ws", tmp_path / "outside", tmp_path / "cfg", tmp_path / "data"
    for d in (ws / "sub", outside, cfg, tmp_path / "home"):
        d.mkdir(parents=True)
    (ws / "secret.env").write_text("TOPSECRET-DENIED\n")
    os.link(ws / "secret.env", ws / "sub" / "copy.txt")
    (outside / "deny_out.txt").write_text("TOPSECRET-OUT\n")
    os.link(outside / "deny_out.txt", ws / "hl_out.txt")
    (ws / "prot.txt").write_text("protected original\n")
    os.link(ws / "prot.txt", ws / "sub" / "hl.txt")
    (ws / "plain.txt").write_text("PLAIN-CONTROL\n")
    (cfg / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {
                    "deny": ["Read(secret.env)", f"Read(/{outside}/deny_out.txt)", "Edit(prot.txt)"],
                    "defaultMode": "acceptEdits",
                }
            }
        )
    )
    calls = [
        ("Read", {"file_path": str(ws / "sub" / "copy.txt")}),
        ("Read", {"file_path": str(ws / "hl_out.txt")}),
        ("Grep", {"pattern": "TOPSECRET", "output_mode": "content", "path": str(ws)}),
        ("Bash", {"command": "cat sub/copy.txt"}),
        ("Bash", {"command": "grep -r TOPSECRET ."}),
        ("Bash", {"command": "echo PWNED > sub/hl.txt"}),
        ("Read", {"file_path": str(ws / "plain.txt")}),
    ]
    env = {"HOME": str(tmp_path / "home"), "AGENT_BRIDGE_CONFIG_DIR": str(cfg), "AGENT_BRIDGE_DATA_DIR": str(data)}
    done = scripted_run(ws, calls, "--allow", "Bash(echo *)", env=env, scenario=tmp_path / "scenario.json")
    [(_, transcript)] = transcripts(data)
    assert "PLAIN-CONTROL" in transcript, "the control: a file with one name is read"
    for secret in ("TOPSECRET-DENIED", "TOPSECRET-OUT"):
        assert secret not in transcript and secret not in done.stdout, secret
    assert (ws / "prot.txt").read_text() == "protected original\n", "the link's write was denied"
    assert transcript.count("denied by rule") >= 4, transcript[-3000:]


def test_a_link_made_after_the_listing_is_found_and_one_name_costs_nothing(tmp_path: Path) -> None:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    for d in (ws, elsewhere):
        d.mkdir()
    (ws / "secret.env").write_text("s\n")
    (ws / "other.txt").write_text("o\n")
    pattern = compile_path_specifier("secret.env", cwd=ws, root=ws)
    assert file_key(ws / "other.txt") is None, "one name: nothing is listed"
    os.link(ws / "other.txt", elsewhere / "other2.txt")
    assert linked_name(pattern, file_key(elsewhere / "other2.txt")) is None, "a link to a file no rule names"
    # listed above while `secret.env` had one name; the new name is in a folder the listing never saw
    os.link(ws / "secret.env", elsewhere / "late.txt")
    assert linked_name(pattern, file_key(elsewhere / "late.txt")) == str(ws / "secret.env")


def test_a_tree_search_off_the_rules_branch_finds_the_hard_link_in_it(tmp_path: Path) -> None:
    """Found by the next attack round: `grep -r`/`rg` over `sub` read `sub/notes.txt`, a hard link to the denied
    `secret/key.txt` (or to a denied file outside the workspace), unasked: the tree was not on the rule's branch,
    so it was not looked into. Now it is, whenever a file the rule names has another name. Control: with no such
    link, the same searches are read-only commands in the workspace, allowed."""
    from bridge.permissions.engine import PermissionEngine
    from bridge.permissions.rules import RuleSet
    from bridge.permissions.settings import SettingsStore
    from tests.permission_calls import GRAMMAR, decide

    ws, outside = tmp_path / "ws", tmp_path / "outside"
    for d in (ws / "secret", ws / "sub", outside):
        d.mkdir(parents=True)
    (ws / "secret" / "key.txt").write_text("INWS-CANARY\n")
    (outside / "secret.txt").write_text("OUT-CANARY\n")
    (ws / "sub" / "plain.txt").write_text("x\n")
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude")
    deny = ["Read(secret/key.txt)", f"Read(/{outside}/secret.txt)"]
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, session_rules=RuleSet.of(deny=deny))
    searches = ["grep -r CANARY sub", "rg CANARY sub", "grep -R CANARY sub"]
    for command in searches:
        assert decide(engine, "Bash", {"command": command}).behavior == "allow", f"the control: {command}"
    os.link(ws / "secret" / "key.txt", ws / "sub" / "notes.txt")
    os.link(outside / "secret.txt", ws / "sub" / "link.txt")
    for command in searches:
        decision = decide(engine, "Bash", {"command": command})
        assert decision.behavior == "deny" and "denied by rule" in decision.reason, (command, decision)
    (ws / "sub" / "notes.txt").unlink()
    (ws / "sub" / "link.txt").unlink()
    assert decide(engine, "Bash", {"command": "grep -r CANARY sub"}).behavior == "allow", "the links gone"


def test_the_listings_kept_are_bounded(tmp_path: Path) -> None:
    """A long `serve` across many folders keeps at most MAX_LISTINGS listings, the oldest going first."""
    from bridge.permissions import linked_paths

    (tmp_path / "f").write_text("x")
    os.link(tmp_path / "f", tmp_path / "g")
    key = file_key(tmp_path / "g")
    for n in range(linked_paths.MAX_LISTINGS + 5):
        linked_name(compile_path_specifier(f"secret-{n}.env", cwd=tmp_path, root=tmp_path), key)
    assert len(linked_paths._listings) <= linked_paths.MAX_LISTINGS
    newest = compile_path_specifier(f"secret-{linked_paths.MAX_LISTINGS + 4}.env", cwd=tmp_path, root=tmp_path)
    assert (str(newest.base), newest.pattern) in linked_paths._listings
