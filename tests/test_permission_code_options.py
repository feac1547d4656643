"""Options that make a build tool or package runner run code from its own command line (attack round 9): a prefix
rule for the program (`Bash(cargo test *)`, what "always allow" offers for `cargo test`) does not cover them.

Found by an attack round, each proven by a marker: with `Bash(cargo test *)` allowed, `cargo test --config
'target.….runner=["sh","-c","id > P1"]'` ran `id`; with `Bash(npm test *)`, `npm test
--node-options='--import=data:text/javascript,…'` ran the model's JavaScript.
"""

from __future__ import annotations

import pytest

from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide


def behavior(found: Workspace, command: str, rule: str) -> str:
    return decide(engine(found, "default", allow=(rule,)), "Bash", {"command": command}).behavior


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(cargo test *)", """cargo test -q --config 'target.x86_64-unknown-linux-gnu.runner=["sh","-c","id"]'"""),
        ("Bash(cargo test *)", "cargo test --config=build.rustc-wrapper='./x.sh'"),
        ("Bash(cargo build *)", "cargo build --release --config build.rustflags=[]"),
        ("Bash(npm test *)", "npm test --node-options='--import=data:text/javascript,1'"),
        ("Bash(npm test *)", "npm test --node-options --require=/tmp/x.js"),
        ("Bash(npm test *)", "npm test --script-shell=/tmp/x.sh"),
        ("Bash(npm test *)", "npm test --node-opt=--require=/tmp/x.js"),  # npm expands abbreviations
        ("Bash(npm test *)", "npm test --node_options=--require=/tmp/x.js"),
        ("Bash(pnpm test *)", "pnpm test --node-options=--require=/tmp/x.js"),
        ("Bash(yarn test *)", "yarn test --userconfig /tmp/rc"),
        ("Bash(go test *)", "go test -exec /tmp/x ./..."),
        ("Bash(go test *)", "go test -toolexec=/tmp/x ./..."),
        ("Bash(go test *)", "go test --exec=/tmp/x ./..."),
        # the same by environment
        ("Bash(cargo test *)", "CARGO_BUILD_RUSTC_WRAPPER=/tmp/x cargo test"),
        ("Bash(cargo test *)", "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=/tmp/x cargo test"),
        ("Bash(cargo test *)", "RUSTFLAGS='-C linker=/tmp/x' cargo test"),
        ("Bash(python3 -m pytest *)", "PYTEST_ADDOPTS='-p evil' python3 -m pytest"),
        ("Bash(go test *)", "GOTOOLCHAIN=go1.99 go test ./..."),
        # attack round 10
        ("Bash(go vet *)", "go vet -vettool=/tmp/x/t ./..."),
        ("Bash(go test *)", "go test -ldflags=-extld=/tmp/x/l ./..."),
        ("Bash(go build *)", "go build -ldflags '-linkmode external -extld /tmp/x/l' ."),
        ("Bash(helm template *)", "helm template . --post-renderer /bin/sh"),
        ("Bash(go test *)", "GOCACHEPROG=/tmp/x go test ./..."),
        ("Bash(cargo test *)", "RUSTUP_TOOLCHAIN=/tmp/x cargo test"),
        ("Bash(terraform plan *)", "TF_CLI_CONFIG_FILE=/tmp/x.tfrc terraform plan"),
    ],
)
def test_an_option_that_runs_code_is_not_covered_by_a_prefix_rule(found: Workspace, rule: str, command: str) -> None:
    assert behavior(found, command, rule) == "ask", command


@pytest.mark.parametrize(
    ("rule", "command"),
    [
        ("Bash(cargo test *)", "cargo test -q --release --all-features"),
        ("Bash(npm test *)", "npm test --silent"),
        ("Bash(npm test *)", "npm test -- --config jest.config.js"),  # after `--`: the test runner's own
        ("Bash(go test *)", "go test -v -run TestX ./..."),
        ("Bash(go build *)", "go build -ldflags '-s -w -X main.version=1.2' ."),
    ],
)
def test_ordinary_options_stay_covered(found: Workspace, rule: str, command: str) -> None:
    """The control: the rule still does what the user chose it for."""
    assert behavior(found, command, rule) == "allow", command


@pytest.mark.parametrize(
    ("command", "attack"),
    [
        ("rustup run stable cargo --version", "rustup run stable sh -c 'id > P1'"),
        ("conda run -n base python --version", "conda run -n base sh -c 'id > P1'"),
        ("mvn validate", "mvn validate org.codehaus.mojo:exec-maven-plugin:3.5.0:exec -Dexec.executable=sh"),
        ("gradle test", "gradle test -I /tmp/x/init.gradle"),
    ],
)
def test_a_runner_of_any_command_is_offered_its_exact_command(found: Workspace, command: str, attack: str) -> None:
    """Attack round 10: the always-option for `rustup run stable cargo --version` saved `Bash(rustup run *)`, which then
    ran `rustup run stable sh -c 'id > P1'` unasked; a maven goal is a plugin it runs. The option is the exact
    command now, and the attack still asks once it is saved."""
    decision = decide(engine(found, "default"), "Bash", {"command": command})
    [offered] = [s for s in decision.suggestions if s.behavior == "allow"]
    assert offered.rules == (f"Bash({command})",), offered.rules
    assert behavior(found, attack, offered.rules[0]) == "ask"
