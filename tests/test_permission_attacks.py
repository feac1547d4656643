"""The attack corpus against the real engine and the real Bash tool (issue 9).

For each attack: the engine decides in the modes and with the rules of its class; whatever it allows is
really run in a temp workspace, and the side effect the attack is after must not appear. Then the same
command is run without the engine, and the effect must appear: the attack is real, not a typo.
Allowed commands must be allowed in default mode with no rules, and must run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest

from bridge.abort import Abort
from bridge.permissions import shell
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.tools.base import ToolContext
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.edit import EditInput, EditTool
from bridge.tools.fileio import snapshot_of
from bridge.tools.write import WriteInput, WriteTool
from tests.attacks import corpus
from tests.attacks.corpus import ALLOWED, ALLOWED_GIT, ATTACKS, BACKGROUND, KEEP_RUNNING, MEMORY_FILES, Attack
from tests.attacks.workspace import (
    ENV_SECRETS,
    MEMORY,
    Workspace,
    build,
    effect_seen,
    engine,
    run_bash,
    run_control,
    setup_env,
    tools_present,
)
from tests.permission_calls import TOOLS, decide, decide_async

RM = ("Bash(rm:*)",)
EXEC_RULES = ("Bash(rm:*)", "Bash(./mark.sh:*)")
READ_DENY = ("Read(secret.txt)", "Read(.env)", "Read(~/.ssh/**)")
REDIRECTED = ("Bash(echo *)", "Bash(git log *)", "Bash(cat a.txt)")  # rules for commands, none for their redirects


class Rules(TypedDict, total=False):
    """The session rules `engine()` takes by keyword."""

    allow: tuple[str, ...]
    deny: tuple[str, ...]
    ask: tuple[str, ...]


Config = tuple[Mode, Rules]
NO_RULES: Rules = {}
CONFIGS: dict[str, list[Config]] = {
    "write-as-read": [("default", NO_RULES), ("plan", NO_RULES), ("dontAsk", NO_RULES)],
    "protected-write": [
        ("bypassPermissions", NO_RULES),
        ("acceptEdits", NO_RULES),
        ("default", {"allow": ("Bash",)}),
        ("plan", NO_RULES),
        ("dontAsk", NO_RULES),
    ],
    "exec-option": [("default", NO_RULES), ("plan", NO_RULES), ("dontAsk", NO_RULES)],
    "exec-env": [("default", NO_RULES), ("plan", NO_RULES), ("dontAsk", NO_RULES)],
    "deny-dodge": [("bypassPermissions", {"deny": RM}), ("default", {"allow": ("Bash",), "deny": RM})],
    "ask-dodge": [("bypassPermissions", {"ask": RM}), ("default", {"allow": ("Bash",), "ask": RM})],
    "read-deny": [("bypassPermissions", {"deny": READ_DENY}), ("default", {"allow": ("Bash",), "deny": READ_DENY})],
    "outside-read": [("default", NO_RULES), ("acceptEdits", NO_RULES), ("dontAsk", NO_RULES)],
    "memory": [
        ("acceptEdits", NO_RULES),
        ("default", {"allow": ("Bash", "Edit", "Write")}),
        ("plan", NO_RULES),
        ("dontAsk", NO_RULES),
    ],
    "oracle": [("default", NO_RULES), ("acceptEdits", NO_RULES), ("dontAsk", NO_RULES), ("plan", NO_RULES)],
    "exec-deny": [
        ("bypassPermissions", {"deny": EXEC_RULES}),
        ("default", {"allow": ("Bash",), "deny": EXEC_RULES}),
        ("bypassPermissions", {"ask": EXEC_RULES}),
        ("default", {"allow": ("Bash",), "ask": EXEC_RULES}),
    ],
    "env-read": [("default", NO_RULES), ("acceptEdits", NO_RULES), ("plan", NO_RULES), ("dontAsk", NO_RULES)],
    "rule-redirect": [("default", {"allow": REDIRECTED}), ("dontAsk", {"allow": REDIRECTED})],
}


def _id(attack: Attack) -> str:
    return f"{attack.cls}:{attack.command[:70]!r}"


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def build_it(*, git: bool = False, parent_repo: bool = False) -> Workspace:
        found = build(tmp_path, git=git, parent_repo=parent_repo)
        setup_env(monkeypatch, found)
        return found

    return build_it


@pytest.mark.parametrize("attack", ATTACKS, ids=[_id(a) for a in ATTACKS])
async def test_attack_is_stopped(attack: Attack, make: Any) -> None:
    found: Workspace = make(git=attack.git, parent_repo=attack.parent_repo)
    command = found.fill(attack.command)
    for mode, rules in CONFIGS[attack.cls]:
        decision = decide(engine(found, mode, **rules), "Bash", {"command": command})
        if decision.behavior == "allow":
            before = found.snapshot()
            output = await run_bash(found, command)
            effect = effect_seen(found, attack.effect, before, output)
            assert effect is None, f"{mode} {rules}: allowed ({decision.reason}) and {effect}"
            pytest.fail(f"{mode} {rules}: allowed ({decision.reason}), though it did nothing here")
        if attack.cls in ("deny-dodge", "read-deny", "exec-deny") and mode == "bypassPermissions" and "deny" in rules:
            assert decision.behavior == "deny", f"{mode}: {decision.behavior} ({decision.reason})"
    if attack.control and tools_present(attack.needs):
        before = found.snapshot()
        output = await run_control(found, command, env=ENV_SECRETS)
        assert effect_seen(found, attack.effect, before, output), f"the attack did nothing when run: {output[:300]}"


@pytest.mark.parametrize(("tool", "relative"), MEMORY_FILES, ids=[f"{t}:{p}" for t, p in MEMORY_FILES])
async def test_memory_file_writes_ask_in_every_mode_but_bypass(tool: str, relative: str, make: Any) -> None:
    found: Workspace = make()
    path = Path(os.path.normpath(found.ws / relative))
    raw: dict[str, Any] = (
        {"file_path": str(path), "content": "pwned"}
        if tool == "Write"
        else {"file_path": str(path), "old_string": "original", "new_string": "pwned"}
    )
    real = path.resolve()
    for mode, rules in CONFIGS["memory"]:
        decision = decide(engine(found, mode, **rules), tool, raw, read_only=False, paths=[(path, "write")])
        assert decision.behavior != "allow", f"{mode} {rules}: {decision.reason}"
        assert decision.suggestions == [] or decision.behavior == "deny"
    assert not real.exists() or real.read_text() == MEMORY + "\n"
    bypass = decide(engine(found, "bypassPermissions"), tool, raw, read_only=False, paths=[(path, "write")])
    # bypass lets memory files be written; inside .agent-bridge/ (settings, hooks) everything always asks
    assert bypass.behavior == ("ask" if ".agent-bridge" in relative else "allow"), bypass.reason
    # the control: the tool really writes it
    ctx = ToolContext(cwd=found.ws, abort=Abort(), data_dir=found.tmp / "data")
    if real.exists():
        ctx.read_files[path] = snapshot_of(os.stat(real))
    if tool == "Write":
        await WriteTool().call(WriteInput.model_validate(raw), ctx)
    elif real.exists():
        await EditTool().call(EditInput.model_validate(raw), ctx)
    assert real.exists() and "pwned" in real.read_text()


# --- denial of service -----------------------------------------------------------------------------------


def _backticks(command: str, levels: int) -> str:
    for _ in range(levels):
        command = "`" + command.replace("\\", "\\\\").replace("`", "\\`") + "`"
    return command


ANSWER_WITHIN_S = 1.0  # issue 9: "a 10 MB command gets its answer in ≤ 1 s"
DOS = [
    ("1 MB of commands", "touch pwned; " + "true; " * 170_000),
    ("3 MB of commands", "touch pwned; " + "true; " * 500_000),
    ("10 MB of commands", "touch pwned; " + "true; " * 1_750_000),
    ("10 MB comment", "touch pwned #" + "a" * 10_000_000),
    ("10 MB word", "touch pwned" + "x" * 10_000_000),
    ("200 kB heredoc", "cat <<EOF\n" + "line\n" * 40_000 + "EOF\ntouch pwned"),
    ("too many words", "echo " + "a " * 30_000 + "; touch pwned"),
    ("many pipes", "echo x" + " | cat" * 30_000 + "; touch pwned"),
    ("deep substitutions", "$(" * 200 + "touch pwned" + ")" * 200),
    ("deep subshells", "(" * 200 + "touch pwned" + ")" * 200),
    ("deep groups", "{ " * 200 + "touch pwned; " + "}; " * 200),
    ("deep backticks", "echo " + _backticks("touch pwned", 12)),
    ("line continuations", "touch pwned" + " \\\n" * 60_000),
    ("many quotes", "echo " + "'a'" * 40_000 + "; touch pwned"),
    ("nested bash -c", "bash -c " + '"bash -c ' * 30 + "touch pwned" + '"' * 30),
    ("NUL byte", "ls\x00; touch pwned"),
    ("escape sequence", "ls\x1b[2J; touch pwned"),
    ("unicode line separator", "ls\u2028touch pwned"),
]


@pytest.mark.parametrize(("what", "command"), DOS, ids=[d for d, _ in DOS])
@pytest.mark.parametrize("mode", ["default", "bypassPermissions", "dontAsk"])
async def test_huge_or_odd_commands_get_an_answer_not_a_hang(what: str, command: str, mode: Mode, make: Any) -> None:
    found: Workspace = make()
    started = time.monotonic()
    decision = decide(engine(found, mode), "Bash", {"command": command})
    elapsed = time.monotonic() - started
    assert decision.behavior in ("ask", "deny") or (mode == "bypassPermissions" and shell.verdict(command).ok), (
        decision.reason
    )
    # issue 9: an answer within 1 s (the largest under the size limit takes ~0.1 s alone; over it, microseconds)
    assert elapsed <= ANSWER_WITHIN_S, f"{elapsed:.2f} s"
    if len(command) > shell.MAX_COMMAND_CHARS:
        assert "MAX_COMMAND_CHARS" in decision.reason
    assert not (found.ws / "pwned").exists()


async def test_a_10_mb_command_is_answered_by_its_size_alone(make: Any) -> None:
    found: Workspace = make()
    command = "touch pwned; " + "true; " * 1_750_000
    judge = engine(found, "bypassPermissions", deny=RM)
    started = time.monotonic()
    decision = await decide_async(judge, "Bash", {"command": command})
    elapsed = time.monotonic() - started
    assert elapsed <= ANSWER_WITHIN_S, f"{elapsed:.2f} s"
    # a deny rule could apply to what can't be read: it does, and the reason names the limit
    assert decision.behavior == "deny" and "MAX_COMMAND_CHARS" in decision.reason, decision.reason


@pytest.mark.parametrize("tool", ["Read", "Write", "Edit", "Grep", "Glob"])
async def test_a_nul_byte_in_a_path_is_a_clear_denial(tool: str, make: Any) -> None:
    found: Workspace = make()
    path = Path(str(found.ws / "a.txt") + "\x00/etc/passwd")
    kind: Literal["read", "write"] = "read" if tool in ("Read", "Grep", "Glob") else "write"
    decision = decide(engine(found), tool, {"file_path": str(path)}, read_only=kind == "read", paths=[(path, kind)])
    assert decision.behavior == "deny" and "NUL" in decision.reason
    # a call that only names such a path: its tool states no path it can't open, and refuses the call before any
    # permission step (the engine reads no raw input: the tool states its facts)
    called = TOOLS[tool]
    field = "path" if tool in ("Grep", "Glob") else "file_path"
    raw = {"pattern": "*", field: "a\x00b"} if tool in ("Grep", "Glob") else {field: "a\x00b"}
    data = called.input_model.model_construct(**raw)
    ctx = ToolContext(cwd=found.ws, abort=Abort(), data_dir=found.tmp / "data")
    assert called.permission_facts(data, ctx).paths == ()
    problem = await called.validate_input(data, ctx)
    assert problem is not None and "NUL" in problem


# --- what must keep working --------------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "shown"), ALLOWED + ALLOWED_GIT, ids=[c[:60] for c, _ in ALLOWED + ALLOWED_GIT])
async def test_read_only_commands_run_without_a_question(command: str, shown: str, make: Any) -> None:
    found: Workspace = make(git=(command, shown) in ALLOWED_GIT)
    decision = decide(engine(found), "Bash", {"command": command})
    assert decision.behavior == "allow", decision.reason
    assert BashTool().is_concurrency_safe(BashInput(command=command))
    output = await run_bash(found, command)
    assert shown in output and "Exit code" not in output, output[:500]


@pytest.mark.parametrize(("command", "shown"), KEEP_RUNNING, ids=[c[:60] for c, _ in KEEP_RUNNING])
async def test_programs_that_run_no_command_keep_running_under_rm_rules(command: str, shown: str, make: Any) -> None:
    """The other side of failing closed: a program given no code or command to run is judged by what it is."""
    found: Workspace = make()
    for mode, rules in CONFIGS["deny-dodge"] + CONFIGS["ask-dodge"]:
        decision = decide(engine(found, mode, **rules), "Bash", {"command": command})
        assert decision.behavior == "allow", f"{mode} {rules}: {decision.reason}"
    output = await run_bash(found, command)
    assert shown in output and "Exit code" not in output, output[:500]


# --- one verdict: plan mode, the allow decision and concurrency agree (issue 10) ----------------------------


def _corpus_commands() -> list[str]:
    from tests.test_permission_adversarial import SHELL_ATTACKS
    from tests.test_permission_rules_table import BASH_ROWS

    commands = [a.command for a in ATTACKS] + [c for c, _ in ALLOWED + ALLOWED_GIT] + list(SHELL_ATTACKS)
    commands += [c for _, c, _, _ in BASH_ROWS] + list(corpus.DODGES) + list(BACKGROUND)
    return list(dict.fromkeys(commands))


def _three_uses(plan: PermissionEngine, default: PermissionEngine, raw: dict[str, Any]) -> tuple[bool, bool, bool]:
    """What each use makes of the call, observed from outside: plan mode's decision (denied or not), default
    mode's (allowed without a question or not), and whether the Bash tool lets it run beside other calls.
    The engine is told nothing (`read_only=False`): what it decides comes from its own reading."""
    in_plan = decide(plan, "Bash", raw)
    in_default = decide(default, "Bash", raw)
    parallel = BashTool().is_concurrency_safe(BashInput.model_validate(raw))
    return in_plan.behavior != "deny", in_default.behavior == "allow", parallel


def test_read_only_means_one_thing_in_plan_mode_the_allow_decision_and_parallel_runs(make: Any) -> None:
    """Plan mode lets a call through exactly when it may run in parallel; default mode allows without asking
    only what plan mode lets through (it may still ask about paths: outside the workspace, Read rules)."""
    found: Workspace = make(git=True)
    plan, default = engine(found, "plan"), engine(found, "default")
    raws: list[dict[str, Any]] = [{"command": found.fill(text)} for text in _corpus_commands()]
    raws += [{"command": command, "run_in_background": True} for command, _ in ALLOWED[:20]]
    disagreements = []
    for raw in raws:
        plan_lets_run, default_allows, parallel = _three_uses(plan, default, raw)
        if plan_lets_run != parallel or (default_allows and not plan_lets_run):
            disagreements.append((raw, {"plan": plan_lets_run, "default allows": default_allows, "parallel": parallel}))
    assert disagreements == []


@pytest.mark.parametrize("command", BACKGROUND)
def test_a_background_job_is_not_read_only_anywhere(command: str, make: Any) -> None:
    found: Workspace = make(git=True)
    expectations: list[tuple[Mode, str]] = [
        ("default", "ask"),
        ("dontAsk", "deny"),
        ("plan", "deny"),
        ("acceptEdits", "ask"),
    ]
    for mode, expected in expectations:
        decision = decide(engine(found, mode), "Bash", {"command": command})
        assert decision.behavior == expected, f"{mode}: {decision.behavior} ({decision.reason})"
    assert not BashTool().is_concurrency_safe(BashInput(command=command))
    if "$(" in command:
        return  # `echo $(…)`: no rule can name a computed word; the echo runs as read-only, so it asks
    # a rule that names the command still lets it run in the background
    allowed = engine(
        found,
        "default",
        allow=("Bash(ls:*)", "Bash(cat:*)", "Bash(git status:*)", "Bash(grep:*)", "Bash(sleep:*)", "Bash(echo:*)"),
    )
    assert decide(allowed, "Bash", {"command": command}).behavior == "allow"


def test_run_in_background_asks_like_a_background_job(make: Any) -> None:
    found: Workspace = make()
    raw = {"command": "ls", "run_in_background": True}
    assert decide(engine(found, "default"), "Bash", raw).behavior == "ask"
    assert decide(engine(found, "plan"), "Bash", raw).behavior == "deny"
    assert decide(engine(found, "default", allow=("Bash(ls:*)",)), "Bash", raw).behavior == "allow"
