"""Deny rules that name a setting (`Bash(RAILS_ENV=production *)`) catch the setting however it reaches the command.

Such a rule matched only the command written with its literal prefix (`RAILS_ENV=production rails db:drop`):
`env RAILS_ENV=production …`, another setting first, `timeout 5 env …`, an `export` earlier in the command or a
`bash -c` under the setting ran in bypass mode, and asked (instead of being refused) in the default mode. Deny rules
always win: now a rule's settings are looked for among every setting the command gets — its own, an `env` in
front, an earlier `export`/`declare -x`/`set -a`, the command that starts it — in any order, and the rest of the rule
is matched against the command behind its wrappers. A setting whose value is only known at run time counts as
the rule's (fails closed).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bridge.permissions.modes import Mode
from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide
from tests.scripted_run import scripted_run

PROD = "Bash(RAILS_ENV=production *)"

EVASIONS = [
    "RAILS_ENV=production ./deploy.sh",  # (the literal form: caught before too)
    "env RAILS_ENV=production ./deploy.sh",
    "/usr/bin/env RAILS_ENV=production ./deploy.sh",
    "FOO=1 RAILS_ENV=production ./deploy.sh",
    "RAILS_ENV='production' FOO=1 ./deploy.sh",
    "timeout 5 env RAILS_ENV=production ./deploy.sh",
    "env FOO=1 RAILS_ENV=production timeout 5 ./deploy.sh",
    "export RAILS_ENV=production; ./deploy.sh",
    "export RAILS_ENV=production && ./deploy.sh",
    "RAILS_ENV=production; export RAILS_ENV; ./deploy.sh",
    "export RAILS_ENV=staging; RAILS_ENV=production; ./deploy.sh",
    "set -a; RAILS_ENV=production; ./deploy.sh",
    "declare -x RAILS_ENV=production; ./deploy.sh",
    "typeset -x RAILS_ENV=production; ./deploy.sh",
    "RAILS_ENV=production bash -c ./deploy.sh",
    "env RAILS_ENV=production sh -c './deploy.sh'",
    "read RAILS_ENV <<< production; export RAILS_ENV; ./deploy.sh",
    "printf -v RAILS_ENV production; export RAILS_ENV; ./deploy.sh",
    # the verification round: values the checker did not follow, auto-export, order, a name computed at run time
    "RAILS_ENV=prod RAILS_ENV+=uction ./deploy.sh",
    "RAILS_ENV=prod; RAILS_ENV+=uction; export RAILS_ENV; ./deploy.sh",
    "export RAILS_ENV=staging; read RAILS_ENV <<< production; ./deploy.sh",
    "set -a; read RAILS_ENV <<< production; ./deploy.sh",
    "declare -lx RAILS_ENV=PRODUCTION; ./deploy.sh",
    "declare -l RAILS_ENV; export RAILS_ENV=Production; ./deploy.sh",
    "bash -a -c 'RAILS_ENV=production; ./deploy.sh'",
    "bash -o allexport -c 'RAILS_ENV=production; ./deploy.sh'",
    "shopt -so allexport; RAILS_ENV=production; ./deploy.sh",
    'v=RAILS_ENV=production; export "$v"; ./deploy.sh',
    "export $(echo RAILS_ENV=production); ./deploy.sh",
    "export RAILS_ENV{=production,}; ./deploy.sh",
    "for i in 1 2; do ./deploy.sh; RAILS_ENV=production; export RAILS_ENV; done",
    "trap ./deploy.sh EXIT; RAILS_ENV=production; export RAILS_ENV",
    "RAILS_ENV=$(echo production) ./deploy.sh",  # a value known only at run time: the rule's, as far as anyone knows
]


@pytest.mark.parametrize("mode", ["default", "bypassPermissions"])
@pytest.mark.parametrize("command", EVASIONS)
def test_a_deny_rule_with_a_setting_catches_every_way_the_setting_reaches_the_command(
    found: Workspace, mode: Mode, command: str
) -> None:
    decided = decide(engine(found, mode, deny=(PROD,)), "Bash", {"command": command})
    assert decided.behavior == "deny", command


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(RAILS_ENV=production rails *)", "env RAILS_ENV=production rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "timeout 9 env RAILS_ENV=production nice rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "export RAILS_ENV=production; cd app && rails db:drop"),
        ("Bash(A=1 B=2 rm *)", "B=2 A=1 rm -rf x"),
        ("Bash(A=1 B=2 rm *)", "export A=1; env B=2 rm -rf x"),
        ("Bash(RAILS_ENV=prod* *)", "env RAILS_ENV=production-eu ./deploy.sh"),
        ("Bash(RAILS_ENV=production rails *)", "RAILS_ENV=production bundle exec rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "export RAILS_ENV=production; npx rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "trap 'rails db:drop' EXIT; export RAILS_ENV=production"),
        (
            "Bash(RAILS_ENV=production rails *)",
            "set -o posix; export RAILS_ENV=x; RAILS_ENV=production :; rails db:drop",
        ),
        ("Bash(RAILS_ENV=production rails *)", "sudo RAILS_ENV=production rails db:drop"),
        ("Bash(RAILS_ENV=production *)", "sudo RAILS_ENV=production ./deploy.sh"),
        # the second verification round: a command read in another's arguments runs with its own settings
        ("Bash(RAILS_ENV=production rails *)", "setarch x86_64 env RAILS_ENV=production FOO=1 rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "timeout 5 setarch x86_64 -- env RAILS_ENV=production FOO=1 rails x"),
        ("Bash(RAILS_ENV=production rails *)", "setarch x86_64 bash -c 'export RAILS_ENV=production; rails db:drop'"),
        ("Bash(RAILS_ENV=production rails *)", "setarch x86_64 sh -c 'RAILS_ENV=production FOO=1 rails db:drop'"),
        ("Bash(RAILS_ENV=production rails *)", "npx -c 'export RAILS_ENV=production; rails db:drop'"),
        (
            "Bash(RAILS_ENV=production rails *)",
            "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='RAILS_ENV=production rails db:drop' x",
        ),
        (
            "Bash(RAILS_ENV=production rails *)",
            "ssh -o ProxyCommand='env RAILS_ENV=production FOO=1 rails db:drop' -o ConnectTimeout=2 x",
        ),
        ("Bash(RAILS_ENV=production rails *)", "git rebase --exec 'env RAILS_ENV=production FOO=1 rails x' HEAD~1"),
        ("Bash(RAILS_ENV=production *)", "setarch x86_64 sh -c 'RAILS_ENV=production; export RAILS_ENV; ./deploy.sh'"),
        ("Bash(RAILS_ENV=production *)", "setarch x86_64 bash -c 'set -a; RAILS_ENV=production; ./deploy.sh'"),
        ("Bash(RAILS_ENV=production *)", "ssh-agent sh -c 'RAILS_ENV=production FOO=1 ./deploy.sh'"),
        ("Bash(RAILS_ENV=production *)", "tmux -L x new-session -d 'RAILS_ENV=production ./deploy.sh'"),
        # and the rule's other spellings: the prefix forms, a `*` in the name
        ("Bash(RAILS_ENV=production:*)", "env RAILS_ENV=production ./deploy.sh"),
        ("Bash(RAILS_ENV=production:*)", "set -a; RAILS_ENV=production; ./deploy.sh"),
        ("Bash(RAILS_ENV=production*)", "env RAILS_ENV=production ./deploy.sh"),
        ("Bash(RAILS_*=production *)", "env RAILS_ENV=production ./deploy.sh"),
        ("Bash(*RAILS_ENV=production *)", "timeout 5 env FOO=1 RAILS_ENV=production ./deploy.sh"),
        ("Bash(RAILS_*=production *)", "x=production; env RAILS_ENV=$x ./deploy.sh"),
    ],
)
def test_the_rest_of_the_rule_is_matched_behind_wrappers_and_the_settings_in_any_order(
    found: Workspace, rule: str, command: str
) -> None:
    assert decide(engine(found, "bypassPermissions", deny=(rule,)), "Bash", {"command": command}).behavior == "deny"


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        (PROD, "RAILS_ENV=staging ./deploy.sh"),
        (PROD, "env RAILS_ENV=staging ./deploy.sh"),
        (PROD, "echo RAILS_ENV=production"),
        (PROD, "RAILS_ENV=production"),  # a shell variable, set for no command
        (PROD, "RAILS_ENV=production; ./deploy.sh"),  # not exported: the script does not see it
        (PROD, "env RAILS_ENV=production-eu ./deploy.sh"),
        ("Bash(RAILS_ENV=production rails *)", "env RAILS_ENV=production rake db:drop"),
        ("Bash(A=1 B=2 rm *)", "A=1 rm -rf x"),
        ("Bash(RAILS_ENV=production:*)", "env RAILS_ENV=staging ./deploy.sh"),
        ("Bash(RAILS_*=production *)", "env RAILS_ENV=staging ./deploy.sh"),
        ("Bash(RAILS_ENV=production rails *)", "setarch x86_64 env RAILS_ENV=staging rails db:drop"),
        ("Bash(RAILS_ENV=production rails *)", "setarch x86_64 env RAILS_ENV=production rake db:drop"),
    ],
)
def test_a_command_without_the_rules_settings_is_not_refused(found: Workspace, rule: str, command: str) -> None:
    assert decide(engine(found, "bypassPermissions", deny=(rule,)), "Bash", {"command": command}).behavior == "allow"


def test_the_deny_rule_stops_the_deploy_end_to_end(tmp_path: Path) -> None:
    """In bypass mode, each evasion's script would leave `deployed-production`; the control leaves its own."""
    ws = tmp_path / "ws"
    ws.mkdir()
    script = ws / "deploy.sh"
    script.write_text('#!/bin/sh\ntouch "deployed-${RAILS_ENV:-none}"\n')
    script.chmod(0o755)
    env = {
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    calls = [("Bash", {"command": c}) for c in ["RAILS_ENV=staging ./deploy.sh", *EVASIONS]]
    scripted_run(ws, calls, "--dangerously-approve-all", "--deny", PROD, env=env, scenario=tmp_path / "s.json")
    assert (ws / "deployed-staging").exists(), "the control: the same script under another setting ran"
    assert not (ws / "deployed-production").exists()
    for evasion in EVASIONS[:-1]:  # and each is real: run by bash as it is, it deploys to production
        (ws / "deployed-production").unlink(missing_ok=True)
        subprocess.run(
            ["bash", "-c", evasion], cwd=ws, capture_output=True, timeout=30, env={**env, "PATH": "/usr/bin:/bin"}
        )
        assert (ws / "deployed-production").exists(), evasion
