"""Attack round 24 on the Bash decision: an allow rule naming a command ran other code through what it did not name.

- `NAME=value` before the command (or `env NAME=value` in front) was set aside when an allow rule was matched unless
  the name was on a list of dangerous ones, and the list is never complete: `MAKEFILES=/dev/stdin make test <<< …`
  and `GNUMAKEFLAGS=--eval=… make test` under `Bash(make test)`, `NPM_Config_node_options=--import=… npm test`
  (npm reads `npm_config_*` in any case) under `Bash(npm test *)`. Now only settings that change how output looks
  or name a mode (`LANG`, `CI`, `NODE_ENV`…) are set aside; a rule must name any other.
- make's own options and variables give it other recipes: `make test --eval='$(shell …)'`, `-f /dev/stdin`, `-C`,
  `make test PYTEST='sh -c …'` under `Bash(make test *)`.
- pytest's options that name what it writes were no writes to the checker: `pytest --basetemp=.git` under
  `Bash(pytest *)` removed the repository's history (pytest removes its basetemp whole first).
Each is proven end to end below by its marker (and the control: the same command the rule names runs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide
from tests.scripted_run import scripted_run


def behavior(found: Workspace, command: str, *rules: str) -> str:
    return decide(engine(found, "default", allow=rules), "Bash", {"command": command}).behavior


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(make test)", "MAKEFILES=/dev/stdin make test <<< '$(shell touch pwned)'"),
        ("Bash(make test)", "GNUMAKEFLAGS='--eval=$(shell\ttouch\tpwned)' make test"),
        ("Bash(npm test *)", "NPM_Config_node_options='--import=data:text/javascript,1' npm test"),
        ("Bash(npm test)", "Npm_Config_Node_Options=--require=./x.js npm test"),
        ("Bash(yarn test)", "Yarn_Rc_Filename=/tmp/x yarn test"),
        ("Bash(npm test *)", "env NPM_Config_node_options=--require=./x.js npm test"),
        ("Bash(npm test *)", "timeout 60 env FOO=1 npm test"),
        ("Bash(npm test *)", "FOO=1 npm test"),
        ("Bash(make test *)", "make test --eval='$(shell touch pwned)'"),
        ("Bash(make test *)", "make test --ev='$(shell touch pwned)'"),
        ("Bash(make test *)", "make test -E '$(shell touch pwned)'"),
        ("Bash(make test *)", "make test -sf /dev/stdin <<< 'test: ; touch pwned'"),
        ("Bash(make test *)", "make test --file=/tmp/x.mk"),
        ("Bash(make test *)", "make test -C /tmp/x"),
        ("Bash(make test *)", "make test -I /tmp/x"),
        ("Bash(make test *)", "make test PYTEST='sh -c touch\\ pwned'"),
        ("Bash(make test *)", "make test SHELL=/tmp/x"),
        ("Bash(make *)", "make .SHELLFLAGS='-c touch\\ pwned' test"),
        ("Bash(pytest *)", "pytest --basetemp=.git"),
        ("Bash(pytest *)", "pytest --basetemp .git"),
        ("Bash(pytest *)", "pytest --basetemp=."),
        ("Bash(python3 -m pytest *)", "python3 -m pytest -q --basetemp=.git"),
        ("Bash(pytest *)", "pytest -o cache_dir=.git --cache-clear"),
        ("Bash(pytest *)", "pytest -ocache_dir=.git"),
        ("Bash(pytest *)", "pytest --junitxml=/tmp/out.xml"),
        ("Bash(pytest *)", "pytest --cov-report=html:/tmp/cov"),
        # the verification round: pytest's options by another way, make's variables after `--`
        ("Bash(pytest *)", "pytest -q -o addopts=--basetemp=.git"),
        ("Bash(pytest *)", "pytest -q -oaddopts='-x --basetemp=.git'"),
        ("Bash(pytest *)", "pytest -q --override-ini=addopts=--basetemp=.git"),
        ("Bash(python3 -B -m pytest *)", "python3 -B -m pytest --basetemp=.git"),
        ("Bash(python3 -mpytest *)", "python3 -mpytest --basetemp=.git"),
        ("Bash(coverage run *)", "coverage run -m pytest --basetemp=.git"),
        ("Bash(uv run *)", "uv run pytest --basetemp=.git"),
        ("Bash(pytest-3 *)", "pytest-3 --basetemp=.git"),
        ("Bash(make test *)", "make test -- PYTEST='touch pwned'"),
        ("Bash(make test *)", "make test -- SHELL=/tmp/x"),
        ("Bash(make *)", "make -- test X=1"),
        # the second verification round
        ("Bash(pytest *)", "pytest -xo cache_dir=.git/x"),
        ("Bash(pytest *)", "pytest -vocache_dir=.git"),
        ("Bash(pytest *)", "pytest -o addopts='-xo cache_dir=.git'"),
        ("Bash(pytest *)", "pytest --debug .git/config"),
        ("Bash(pytest *)", "pytest --rootdir=.git"),
        ("Bash(python3 -Bmpytest *)", "python3 -Bmpytest -o cache_dir=.git"),
        ("Bash(python3 -m pytest.__main__ *)", "python3 -m pytest.__main__ --basetemp=.git"),
        ("Bash(tox *)", "tox -- -o addopts=--basetemp=.git"),
        # a package runner sent to another folder's scripts
        ("Bash(npm test *)", "npm test --prefix=/tmp/other"),
        ("Bash(npm test *)", "npm test --pre /tmp/other"),
        ("Bash(yarn test *)", "yarn test --cwd /tmp/other"),
        ("Bash(pnpm test *)", "pnpm test -C /tmp/other"),
        ("Bash(pnpm test *)", "pnpm test --dir=/tmp/other"),
    ],
)
def test_a_rule_does_not_cover_what_it_does_not_name(found: Workspace, rule: str, command: str) -> None:
    (found.ws / ".git").mkdir(exist_ok=True)
    assert behavior(found, command, rule) == "ask", command


@pytest.mark.parametrize(
    "command",
    [
        "export PYTEST='touch pwned'; make test",
        "set -a; PYTEST='touch pwned'; make test",
        "declare -x PYTEST='touch pwned'; make test",
        "typeset -gx PYTEST=x && make test",
    ],
)
def test_a_setting_exported_before_the_command_is_one_the_rule_must_name(found: Workspace, command: str) -> None:
    """The verification round: `Bash(export *)` (what "always allow" offers for an export) and `Bash(make test *)`
    let `export PYTEST='touch x'; make test` run the model's recipe."""
    rules = ("Bash(make test *)", "Bash(export *)", "Bash(set *)", "Bash(declare *)", "Bash(typeset *)")
    assert behavior(found, command, *rules) == "ask", command
    assert behavior(found, "export CI=1; make test", *rules) == "allow", "a setting that changes no program"


def test_a_command_after_an_export_is_allowed_by_what_allows_every_command(found: Workspace) -> None:
    """The second verification round: treated as changing what runs, an `export FOO=1 && npm test` could be allowed
    by nothing — not `Bash`, not bypass mode. A rule for every command (or the mode) allows it; a rule for the
    command alone does not (it can't name a setting another part made), and no always-option is offered."""
    command = "export FOO=1 && npm test"
    assert behavior(found, command, "Bash(npm test *)", "Bash(export *)") == "ask"
    assert behavior(found, command, "Bash") == "allow"
    assert behavior(found, command, "Bash(*)") == "allow"
    assert decide(engine(found, "bypassPermissions"), "Bash", {"command": command}).behavior == "allow"
    asked = decide(engine(found, "default"), "Bash", {"command": command})
    assert [s for s in asked.suggestions if s.behavior == "allow"] == []
    assert behavior(found, "export FOO=1", "Bash(export *)") == "allow", "an export alone"


@pytest.mark.parametrize(
    "command",
    [
        "set -k; git status GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x",
        "set -o keyword; pytest PYTEST_ADDOPTS=--basetemp=.git",
        "set -a; declare PYTEST='touch pwned'; make test",
    ],
)
def test_set_k_and_allexport_declarations_are_settings(found: Workspace, command: str) -> None:
    rules = ("Bash(set *)", "Bash(declare *)", "Bash(make test *)", "Bash(pytest *)")
    assert behavior(found, command, *rules) == "ask", command


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(npm test *)", "CI=1 npm test"),
        ("Bash(npm test *)", "NODE_ENV=test LANG=C npm test -- --watch=false"),
        ("Bash(npm test *)", "env CI=1 npm test"),
        ("Bash(FOO=1 npm test)", "FOO=1 npm test"),
        ("Bash(make test *)", "make test -j4"),
        ("Bash(make test *)", "make test -s --no-print-directory -k"),
        ("Bash(make *)", "make -j 4 test"),
        ("Bash(pytest *)", "pytest -q -x tests"),
        ("Bash(pytest *)", "pytest --basetemp=build/tmp --junitxml=report.xml -p no:cacheprovider"),
        ("Bash(pytest *)", "pytest --debug tests -o addopts=-x"),
        ("Bash(make test *)", "make test -- -k"),
    ],
)
def test_what_the_rule_names_still_runs(found: Workspace, rule: str, command: str) -> None:
    assert behavior(found, command, rule) == "allow", command


def test_the_always_option_for_a_setting_names_it(found: Workspace) -> None:
    """What "always allow" offers covers what was asked: the settings are in the rule (a prefix rule without them
    would ask again, the next time, for the same command)."""
    asked = decide(engine(found, "default"), "Bash", {"command": "FOO=1 npm test"})
    offered = [s.rule for s in asked.suggestions if s.behavior == "allow"]
    assert offered == ["Bash(FOO=1 npm test)"]
    assert behavior(found, "FOO=1 npm test", *offered) == "allow"
    assert behavior(found, "FOO=2 npm test", *offered) == "ask"


def test_a_deny_rule_with_a_setting_is_about_the_command_with_it(found: Workspace) -> None:
    denied = decide(engine(found, "default", deny=("Bash(FOO=1 rm *)",)), "Bash", {"command": "FOO=1 rm -rf x"})
    assert denied.behavior == "deny"


def git_repository(ws: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }


def test_make_runs_what_the_rule_names_and_not_the_models_recipes(tmp_path: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Makefile").write_text("test:\n\t@touch tested\n")
    attacks = [
        f"MAKEFILES=/dev/stdin make test <<< '$(shell touch {ws}/pwned1)'",
        f"GNUMAKEFLAGS='--eval=$(shell\ttouch\t{ws}/pwned2)' make test",
        f"make test --eval='$(shell touch {ws}/pwned3)'",
        f"make test -f /dev/stdin <<< 'test: ; touch {ws}/pwned4'",
        f"make test SHELL=/bin/sh .SHELLFLAGS='-c touch\\ {ws}/pwned5;true'",
    ]
    calls = [("Bash", {"command": "make test"}), *(("Bash", {"command": a}) for a in attacks)]
    rules = ["--non-interactive", "--allow", "Bash(make test)", "--allow", "Bash(make test *)"]
    scripted_run(ws, calls, *rules, env=env, scenario=tmp_path / "s.json")
    assert (ws / "tested").exists(), "the control: the rule's own command ran"
    assert sorted(p.name for p in ws.glob("pwned*")) == []
    # and each attack is real: run as it is, in a login shell's environment, it leaves its marker. (SHELL is
    # part of it: make 4.3 evaluates GNUMAKEFLAGS' --eval before it defines its default SHELL, so that attack
    # needs the variable, which every login shell has and a CI runner may not.)
    clean = {**env, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SHELL": "/bin/sh"}
    for n, attack in enumerate(attacks, 1):
        shown = subprocess.run(["bash", "-c", attack], cwd=ws, capture_output=True, text=True, timeout=60, env=clean)
        assert (ws / f"pwned{n}").exists(), (attack, shown.returncode, shown.stdout, shown.stderr)


def test_npm_runs_the_test_script_and_not_the_models_node_options(tmp_path: Path, env: dict[str, str]) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = "node -e \"require('fs').writeFileSync('tested', 'x')\""  # (node options reach a node it starts)
    (ws / "package.json").write_text(json.dumps({"name": "x", "version": "1.0.0", "scripts": {"test": script}}))
    code = f"import(`fs`).then(m=>m.writeFileSync(`{ws}/pwned`,`x`))"
    attack = f"NPM_Config_node_options='--import=data:text/javascript,{code}' npm test"
    calls = [("Bash", {"command": "npm test"}), ("Bash", {"command": attack})]
    scripted_run(ws, calls, "--non-interactive", "--allow", "Bash(npm test *)", env=env, scenario=tmp_path / "s.json")
    assert (ws / "tested").exists(), "the control: the rule's own command ran"
    assert not (ws / "pwned").exists()
    subprocess.run(
        ["bash", "-c", attack], cwd=ws, capture_output=True, timeout=120, env={**env, "PATH": "/usr/bin:/bin"}
    )
    assert (ws / "pwned").exists(), "the attack is real"


def test_pytest_is_not_let_remove_the_repository(tmp_path: Path, env: dict[str, str]) -> None:
    """Run by the bridge, the command is `./pytest` — a stand-in doing what pytest does with these two options
    (writes the report; removes its basetemp whole, then makes it), run by the base interpreter: a venv under /tmp
    (a CI checkout) is hidden from the sandbox's private /tmp. The attack is shown real with pytest itself."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "test_a.py").write_text("def test_a(tmp_path):\n    (tmp_path / 'x').write_text('x')\n")
    stand_in = ws / "pytest"
    stand_in.write_text(
        f"#!{os.path.realpath(sys.executable)}\n"
        "import shutil, sys\nfrom pathlib import Path\n"
        "for arg in sys.argv[1:]:\n"
        "    name, _, value = arg.partition('=')\n"
        "    if name == '--junitxml':\n        Path(value).write_text('<testsuite/>')\n"
        "    if name == '--basetemp':\n        shutil.rmtree(value, ignore_errors=True)\n"
        "        Path(value).mkdir(parents=True, exist_ok=True)\n"
    )
    stand_in.chmod(0o755)
    git_repository(ws)
    calls = [
        ("Bash", {"command": "./pytest -q --junitxml=report.xml"}),
        ("Bash", {"command": "./pytest -q --basetemp=.git"}),
    ]
    scripted_run(ws, calls, "--non-interactive", "--allow", "Bash(./pytest *)", env=env, scenario=tmp_path / "s.json")
    assert (ws / "report.xml").exists(), "the control: the rule's own command ran"
    log = subprocess.run(["git", "log", "--oneline"], cwd=ws, capture_output=True, text=True)
    assert log.returncode == 0 and log.stdout.strip(), log.stderr
    real = f"{sys.executable} -m pytest -q -p no:cacheprovider test_a.py --basetemp=.git"
    subprocess.run(["bash", "-c", real], cwd=ws, capture_output=True, timeout=120)
    assert subprocess.run(["git", "log"], cwd=ws, capture_output=True).returncode != 0, "the attack is real"


@pytest.mark.parametrize(
    "command",
    [
        "git config --list",
        "git config -l --show-origin",
        "git config --global --list",
        "git config --system -l",
        "git config --get-regexp http",
        "git config --get http.https://github.com/.extraheader",
        "git config --get credential.helper",
        "git config --local --includes --list",
    ],
)
def test_git_config_showing_the_users_global_configuration_asks(found: Workspace, command: str) -> None:
    """`git config --global --list` ran unasked and showed the model what the user keeps in `~/.gitconfig`
    (`http.extraHeader` tokens): it reads outside the workspace."""
    decision = decide(engine(found, "default"), "Bash", {"command": command})
    assert decision.behavior == "ask" and "outside the workspace" in decision.reason, (command, decision.reason)


@pytest.mark.parametrize(
    "command",
    [
        "git config --get user.name",
        "git config --get-all alias.co",
        "git config --get remote.origin.url",
        "git config --local --list",
        "git log -1",
    ],
)
def test_git_config_reading_the_repositorys_own_or_plain_keys_runs(found: Workspace, command: str) -> None:
    assert decide(engine(found, "default"), "Bash", {"command": command}).behavior == "allow", command


def test_a_git_config_linked_out_of_the_repository_is_not_read(found: Workspace, tmp_path: Path) -> None:
    """Attack round 24 (folder trust): `.git/config` linked to a file outside (`~/.aws/credentials`): the check read
    it with git and quoted its key names to the model (`default.secretkey`). A config that is a link out of its git
    directory is not read: git's settings can't be checked, so it asks."""
    outside = tmp_path / "outside-creds"
    outside.write_text("[default]\n\tkeyid = AKIAxxxx\n\tsecretkey = s\n[core]\n\tpager = less\n")
    subprocess.run(["git", "init", "-q"], cwd=found.ws, check=True)
    (found.ws / ".git" / "config").unlink()
    (found.ws / ".git" / "config").symlink_to(outside)
    decision = decide(engine(found, "default"), "Bash", {"command": "git status"})
    assert decision.behavior == "ask" and "can't be read" in decision.reason, decision.reason
    assert "secretkey" not in decision.reason and "keyid" not in decision.reason
