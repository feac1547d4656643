"""A command's output redirections are writes of their own (attack round 6): a rule about the command does not
cover them, a path rule does, and a question about one offers the rules that would really let it run.

Found by an attack round: with `Bash(git log *)` allowed, `git log -1 --format='{"scripts":{"test":"…"}}' >
package.json && npm test` rewrote package.json unasked, and the planted test script ran under `Bash(npm test)`.
"""

from __future__ import annotations

import pytest

from bridge.permissions.modes import Mode
from tests.attacks.workspace import Workspace, engine, run_bash
from tests.permission_calls import decide


def judged(found: Workspace, command: str, *allow: str, mode: Mode = "default") -> tuple[str, list[tuple[str, ...]]]:
    decision = decide(engine(found, mode, allow=allow), "Bash", {"command": command})
    return decision.behavior, [s.rules for s in decision.suggestions if s.behavior == "allow"]


@pytest.mark.parametrize(
    ("command", "allow", "rules"),
    [
        # the command is allowed: the question is only about the file, and the option saves only its rule (a file
        # at the root by its absolute path: `Write(a.txt)` would match every a.txt below too)
        ("echo y > a.txt", ("Bash(echo *)",), [("Write(/{ws}/a.txt)",)]),
        ("npm test > src/log.txt", ("Bash(npm test)",), [("Write(src/**)",)]),
        # a read-only command: the same
        ("ls > list.txt", (), [("Write(/{ws}/list.txt)",)]),
        # a command that needs its own rule too: both, in one option
        ("npm run build > build.log", (), [("Bash(npm run build *)", "Write(/{ws}/build.log)")]),
        (
            "npm run build 2>&1 | tee x > out.txt",
            (),
            [("Bash(npm run build *)", "Bash(tee *)", "Write(/{ws}/out.txt)")],
        ),
    ],
)
def test_a_rule_for_a_command_does_not_cover_what_its_redirections_write(
    found: Workspace, command: str, allow: tuple[str, ...], rules: list[tuple[str, ...]]
) -> None:
    assert judged(found, command, *allow) == ("ask", [tuple(found.fill(r) for r in rule) for rule in rules])


def test_the_rules_an_always_option_offers_let_the_command_run_and_no_other_write(found: Workspace) -> None:
    for command, allow in [("echo y > a.txt", ("Bash(echo *)",)), ("npm run build > build.log", ())]:
        _, [offered] = judged(found, command, *allow)
        saved = (*allow, *offered)
        assert judged(found, command, *saved)[0] == "allow", (command, saved)
        other = command.rsplit(">", 1)[0] + "> src/x.py"
        assert judged(found, other, *saved)[0] == "ask", (other, saved)


def test_accept_edits_lets_a_command_allowed_by_rule_write_the_workspace(found: Workspace) -> None:
    assert judged(found, "npm test > a.txt", "Bash(npm test)", mode="acceptEdits")[0] == "allow"
    assert judged(found, "echo y >> a.txt", mode="acceptEdits")[0] == "allow"


def test_a_redirect_to_a_null_device_or_a_descriptor_is_no_write(found: Workspace) -> None:
    assert judged(found, "npm test > /dev/null 2>&1", "Bash(npm test)") == ("allow", [])


async def test_the_chain_the_attack_used_writes_nothing(found: Workspace) -> None:
    """`Bash(git log *)` and `Bash(cat a.txt)` allowed: the redirect asks, so nothing runs; run without the
    engine, the same command rewrites the file (the attack is real)."""
    command = "git log -1 --format=planted > a.txt 2>/dev/null || echo planted > a.txt"
    before = (found.ws / "a.txt").read_bytes()
    assert judged(found, command, "Bash(git log *)", "Bash(echo *)")[0] == "ask"
    assert (found.ws / "a.txt").read_bytes() == before
    await run_bash(found, command)
    assert b"planted" in (found.ws / "a.txt").read_bytes()


def test_a_nameref_is_an_assignment_to_whatever_it_names(found: Workspace) -> None:
    """`declare -n r=PATH; r=bin` sets PATH under another name: later programs can't be known, even with
    `declare` and `ls` allowed by rule (bin/ls is the folder's)."""
    allow = ("Bash(declare *)", "Bash(ls *)")
    assert judged(found, "declare -n r=PATH; r=bin; ls", *allow)[0] == "ask"
    assert judged(found, "typeset -gn r=PATH; r=bin; ls", *allow)[0] == "ask"
    assert judged(found, "declare x=1; ls", *allow)[0] == "allow"
