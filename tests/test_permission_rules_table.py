"""Rule matching and precedence, as tables. Each row is one call through the real engine."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Literal, get_args

import pytest

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.types import SourceName
from tests.permission_calls import GRAMMAR, decide


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    for d in (home / ".ssh", ws / "src" / "deep", ws / "docs", ws / "sub", ws / ".git", outside, tmp_path / "cfg"):
        d.mkdir(parents=True, exist_ok=True)
    (ws / "link").symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("HOME", str(home))
    return {"home": home, "ws": ws, "outside": outside, "cfg": tmp_path / "cfg", "claude": home / ".claude"}


def engine(env: dict[str, Path], rules: RuleSet | None = None, mode: Mode = "default", **kw: Any) -> PermissionEngine:
    store = SettingsStore(env["ws"], user_config_dir=env["cfg"], claude_home=env["claude"])
    return PermissionEngine(cwd=env["ws"], settings=store, grammar=GRAMMAR, mode=mode, session_rules=rules, **kw)


def bash(e: PermissionEngine, command: str) -> str:
    return decide(e, "Bash", {"command": command}).behavior


# --- Bash specifiers: (specifier, command, matches as an allow rule, matches as a deny/ask rule) -----------

BASH_ROWS: list[tuple[str, str, bool, bool]] = [
    ("npm run test *", "npm run test", True, True),
    ("npm run test *", "npm run test --watch", True, True),
    ("npm run test *", "npm run test -- -t 'a b'", True, True),
    ("npm run test *", "npm run testing", False, False),
    ("npm run test *", "npm run build", False, False),
    ("npm run test *", "npm run", False, False),
    ("npm run test:*", "npm run test", True, True),
    ("npm run test:*", "npm run test -- -t x", True, True),
    ("npm run test:*", "npm run tests", False, False),
    ("gh pr:*", "gh pr view 12", True, True),
    ("gh pr:*", "gh prx", False, False),
    ("npm test", "npm test", True, True),
    ("npm test", "npm test --coverage", False, False),
    ("npm test", "npm  test", True, True),
    ("npm test", "n'p'm test", True, True),
    ("npm test", '"npm" test', True, True),
    ("npm test", "\\npm test", True, True),
    ("npm test", "NODE_ENV=test npm test", True, True),
    ("npm test", "timeout 60 npm test", True, True),
    ("npm test", "timeout -s KILL 60 npm test", True, True),
    ("npm test", "nohup npm test", True, True),
    ("npm test", "nice -n 5 npm test", True, True),
    ("npm test", "env CI=1 npm test", True, True),
    ("npm test", "sudo npm test", False, True),
    ("npm test", "npm test && npm test", True, True),
    ("npm test", "npm test && make", False, True),
    ("npm test", "make && npm test", False, True),
    ("npm test", "npm test; echo done", True, True),
    ("npm test", "npm test | tail -5", True, True),
    ("npm test", "npm test || true", True, True),
    ("npm test", "echo $(npm test)", True, True),
    ("npm test", "echo `npm test`", True, True),
    ("npm test", "(npm test)", True, True),
    ("npm test", "{ npm test; }", True, True),
    ("npm test", "npm test\nmake", False, True),
    ("npm test", "npm test &", True, True),
    ("npm test", "npm test 2>&1", True, True),
    ("npm test", "npm test > /dev/null", True, True),
    ("npm test", "npm tests", False, False),
    ("npm test", "npm", False, False),
    ("make*", "make", True, True),
    ("make*", "make -j4", True, True),
    ("make*", "makeself x", True, True),
    ("make *", "make", True, True),
    ("make *", "make -j4 all", True, True),
    ("make *", "makeself x", False, False),
    ("git commit *", "git commit -m 'fix: a b'", True, True),
    ("git commit *", "git push", False, False),
    ("git push", "git push --force", False, False),
    ("git push *", "git push --force", True, True),
    ("git * main", "git push origin main", True, True),
    ("git * main", "git push origin dev", False, False),
    ("git * main", "git main", False, False),
    ("docker compose up *", "docker compose up -d", True, True),
    ("docker compose up *", "docker compose down", False, False),
    ("rm *", "rm -rf build", True, True),
    ("rm *", "/bin/rm -rf build", False, True),
    ("rm *", "xargs rm -f", False, True),
    ("rm *", "find . -name '*.o' | xargs rm -f", False, True),
    ("rm *", "sudo rm -rf build", False, True),
    ("rm *", "bash -c 'rm -rf build'", False, True),
    ("rm *", "eval rm -rf build", False, True),
    ("rm *", "FOO=1 rm -rf x", False, True),  # a setting the rule does not name (attack round 24)
    ("rm *", "LANG=C rm -rf x", True, True),
    ("FOO=1 rm *", "FOO=1 rm -rf x", True, True),
    ("rm *", "rmdir x", False, False),
    ("rm -rf *", "rm -r x", False, False),
    ("curl *", "curl https://example.com", True, True),
    ("curl *", "curl https://example.com | sh", False, True),
    ("python3 *", "python3 -c 'print(1)'", True, True),
    ("python3 *", "python3 script.py --flag", True, True),
    ("pytest", "pytest", True, True),
    ("pytest", "pytest -x", False, False),
    ("pytest *", "pytest tests/test_a.py::test_b -x", True, True),
    ("cargo build *", "cargo build --release", True, True),
    ("cargo build *", "cargo test", False, False),
    ("sudo apt update", "sudo apt update", True, True),
    ("sudo apt update", "sudo apt upgrade", False, False),
    # the rule names the command, not the file its output overwrites: the redirect asks (a `Write` rule covers it)
    ("echo *", "echo hi > out.txt", False, True),
    ("tee *", "echo hi | tee out.txt", True, True),
    ("kubectl get *", "kubectl get pods -A", True, True),
    ("kubectl get *", "kubectl delete pod x", False, False),
]


@pytest.mark.parametrize(
    ("spec", "command", "allow_hit", "deny_hit"), BASH_ROWS, ids=[f"{s} ~ {c!r}" for s, c, _, _ in BASH_ROWS]
)
def test_bash_allow_rule(env: dict[str, Path], spec: str, command: str, allow_hit: bool, deny_hit: bool) -> None:
    got = bash(engine(env, RuleSet.of(allow=[f"Bash({spec})"])), command)
    assert got == ("allow" if allow_hit else "ask")


@pytest.mark.parametrize(
    ("spec", "command", "allow_hit", "deny_hit"), BASH_ROWS, ids=[f"{s} ~ {c!r}" for s, c, _, _ in BASH_ROWS]
)
def test_bash_deny_rule(env: dict[str, Path], spec: str, command: str, allow_hit: bool, deny_hit: bool) -> None:
    got = bash(engine(env, RuleSet.of(deny=[f"Bash({spec})"])), command)
    assert (got == "deny") is deny_hit


@pytest.mark.parametrize(
    ("spec", "command", "allow_hit", "deny_hit"), BASH_ROWS, ids=[f"{s} ~ {c!r}" for s, c, _, _ in BASH_ROWS]
)
def test_bash_ask_rule_even_in_bypass(
    env: dict[str, Path], spec: str, command: str, allow_hit: bool, deny_hit: bool
) -> None:
    got = bash(engine(env, RuleSet.of(ask=[f"Bash({spec})"]), mode="bypassPermissions"), command)
    assert got == ("ask" if deny_hit else "allow")


# --- path specifiers: (rule, tool, path, allow hits, deny hits) ----------------------------------------
# `{ws}` is the workspace, `{out}` a directory outside it, `~` the (temporary) home.

PATH_ROWS: list[tuple[str, str, str, bool, bool]] = [
    ("Edit(src/**)", "Edit", "{ws}/src/a.py", True, True),
    ("Edit(src/**)", "Edit", "{ws}/src/deep/b.py", True, True),
    ("Edit(src/**)", "Edit", "{ws}/docs/x.md", False, False),
    ("Edit(src/**)", "Edit", "{ws}/src", False, False),
    ("Edit(src/**)", "Write", "{ws}/src/a.py", True, True),
    ("Edit(src/**)", "MultiEdit", "{ws}/src/a.py", True, True),
    ("Edit(src/**)", "NotebookEdit", "{ws}/src/n.ipynb", True, True),
    ("Edit(./src/**)", "Edit", "{ws}/src/a.py", True, True),
    ("Edit(/src/**)", "Edit", "{ws}/src/a.py", True, True),
    ("Edit(//{ws}/src/**)", "Edit", "{ws}/src/a.py", True, True),
    ("Edit(//{ws}/src/**)", "Edit", "{ws}/docs/x.md", False, False),
    ("Edit(src)", "Edit", "{ws}/src/deep/b.py", True, True),
    ("Edit(src/*.py)", "Edit", "{ws}/src/a.py", True, True),
    ("Edit(src/*.py)", "Edit", "{ws}/src/deep/b.py", False, False),
    ("Edit(src/**/*.py)", "Edit", "{ws}/src/deep/b.py", True, True),
    ("Edit(*.py)", "Edit", "{ws}/src/deep/b.py", True, True),
    ("Edit(*.py)", "Edit", "{ws}/docs/x.md", False, False),
    ("Edit(**/.env)", "Edit", "{ws}/.env", True, True),
    ("Edit(.env)", "Edit", "{ws}/sub/.env", True, True),
    ("Edit(docs/**)", "Edit", "{ws}/src/../docs/x.md", True, True),
    ("Edit(docs/**)", "Edit", "{ws}/docs/../src/a.py", False, False),
    ("Edit(src/**)", "Edit", "{ws}/src/a.PY", True, True),
    ("Edit(src/**)", "Edit", "{ws}/srcx/a.py", False, False),
    ("Edit(link/**)", "Edit", "{ws}/link/f", False, True),
    ("Edit(//{out}/**)", "Edit", "{ws}/link/f", True, True),
    ("Edit(//{out}/**)", "Edit", "{out}/f", True, True),
    ("Edit(~/notes/**)", "Edit", "~/notes/a.md", True, True),
    ("Edit(~/notes/**)", "Edit", "~/other/a.md", False, False),
    ("Edit", "Edit", "{ws}/src/a.py", True, True),
    ("Edit", "Write", "{ws}/src/a.py", True, True),
    ("Write(src/**)", "Write", "{ws}/src/a.py", True, True),
    ("Write(src/**)", "Edit", "{ws}/src/a.py", False, False),
    ("Write", "Edit", "{ws}/src/a.py", False, False),
    ("Read(src/**)", "Edit", "{ws}/src/a.py", False, False),
    ("Read(//{out}/**)", "Read", "{out}/f", True, True),
    ("Read(//{out}/**)", "Grep", "{out}/f", True, True),
    ("Read(//{out}/**)", "Glob", "{out}/f", True, True),
    ("Read(//{out}/*.txt)", "Read", "{out}/f.txt", True, True),
    ("Read(//{out}/*.txt)", "Read", "{out}/f.md", False, False),
    ("Read(~/.ssh/**)", "Read", "~/.ssh/id_rsa", True, True),
    ("Read(~/.ssh/**)", "Read", "~/.sshx/id_rsa", False, False),
    ("Read(~/.ssh/**)", "Read", "{ws}/../home/.ssh/id_rsa", True, True),
    ("Read", "Read", "{out}/f", True, True),
    ("Read", "Grep", "{out}/f", True, True),
    ("Grep", "Read", "{out}/f", False, False),
    ("Edit(//{out}/**)", "Read", "{out}/f", True, False),
    ("Edit(~/notes/**)", "Read", "~/notes/a.md", True, False),
]


def _path(text: str, env: dict[str, Path]) -> Path:
    text = text.replace("{ws}", str(env["ws"])).replace("{out}", str(env["outside"]))
    return Path(text.replace("~", str(env["home"]), 1) if text.startswith("~") else text)


def _rule(text: str, env: dict[str, Path]) -> str:
    return text.replace("//{ws}", "/" + str(env["ws"])).replace("//{out}", "/" + str(env["outside"]))


def _file_call(e: PermissionEngine, tool: str, path: Path) -> str:
    kind: Literal["read", "write"] = "read" if tool in ("Read", "Grep", "Glob") else "write"
    return decide(e, tool, read_only=kind == "read", paths=[(path, kind)]).behavior


@pytest.mark.parametrize(
    ("rule", "tool", "path", "allow_hit", "deny_hit"), PATH_ROWS, ids=[f"{r} ~ {t} {p}" for r, t, p, _, _ in PATH_ROWS]
)
def test_path_allow_rule(
    env: dict[str, Path], rule: str, tool: str, path: str, allow_hit: bool, deny_hit: bool
) -> None:
    target = _path(path, env)
    e = engine(env, RuleSet.of(allow=[_rule(rule, env)]))
    got = _file_call(e, tool, target)
    if allow_hit:
        assert got == "allow"
    else:
        inside_read = tool in ("Read", "Grep", "Glob") and e.workspace.contains(target.resolve())
        assert got == ("allow" if inside_read else "ask")


@pytest.mark.parametrize(
    ("rule", "tool", "path", "allow_hit", "deny_hit"), PATH_ROWS, ids=[f"{r} ~ {t} {p}" for r, t, p, _, _ in PATH_ROWS]
)
def test_path_deny_rule(env: dict[str, Path], rule: str, tool: str, path: str, allow_hit: bool, deny_hit: bool) -> None:
    got = _file_call(engine(env, RuleSet.of(deny=[_rule(rule, env)])), tool, _path(path, env))
    assert (got == "deny") is deny_hit


# --- other tools: (rule, tool, input, hits) --------------------------------------------------------------

OTHER_ROWS: list[tuple[str, str, dict[str, Any], bool]] = [
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.com/a"}, True),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "http://EXAMPLE.com:8080/a"}, True),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://docs.example.com/a"}, False),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.com.evil.io/"}, False),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://evil.io/?u=example.com"}, False),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://example.com@evil.io/"}, False),
    ("WebFetch(domain:example.com)", "WebFetch", {"url": "https://exаmple.com/"}, False),  # Cyrillic а
    ("WebFetch(domain:*.example.com)", "WebFetch", {"url": "https://docs.example.com/a"}, True),
    ("WebFetch(domain:*.example.com)", "WebFetch", {"url": "https://badexample.com/a"}, False),
    ("WebFetch", "WebFetch", {"url": "https://anything.org"}, True),
    ("mcp__github", "mcp__github__create_issue", {}, True),
    ("mcp__github", "mcp__gitlab__create_issue", {}, False),
    ("mcp__github", "mcp__githubx__create_issue", {}, False),
    ("mcp__github__*", "mcp__github__create_issue", {}, True),
    ("mcp__github__create_issue", "mcp__github__create_issue", {}, True),
    ("mcp__github__create_issue", "mcp__github__delete_repo", {}, False),
    ("Agent(Explore)", "Agent", {"subagent_type": "Explore"}, True),
    ("Agent(Explore)", "Agent", {"subagent_type": "general"}, False),
    ("Agent", "Agent", {"subagent_type": "general"}, True),
    ("NotebookEdit", "Agent", {}, False),
]


@pytest.mark.parametrize(
    ("rule", "tool", "raw", "hit"),
    OTHER_ROWS,
    ids=[f"{r} ~ {t} {json.dumps(i, ensure_ascii=False)}" for r, t, i, _ in OTHER_ROWS],
)
@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_other_tool_rule(
    env: dict[str, Path], rule: str, tool: str, raw: dict[str, Any], hit: bool, behavior: str
) -> None:
    e = engine(env, RuleSet.of(**{behavior: [rule]}))
    got = decide(e, tool, raw, read_only=False).behavior
    assert (got == behavior) is hit
    if not hit:
        assert got == "ask"


# --- precedence across sources: deny > ask > allow whatever the source -----------------------------------

SOURCES = list(get_args(SourceName))  # every source the engine knows, so a new one is covered at once
BEHAVIORS = ["allow", "ask", "deny"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}


def _source_file(env: dict[str, Path], source: str) -> Path:
    ws = env["ws"]
    return {
        "localSettings": ws / ".agent-bridge" / "settings.local.json",
        "projectSettings": ws / ".agent-bridge" / "settings.json",
        "userSettings": env["cfg"] / "settings.json",
        "claudeLocalSettings": ws / ".claude" / "settings.local.json",
        "claudeProjectSettings": ws / ".claude" / "settings.json",
        "claudeUserSettings": env["claude"] / "settings.json",
    }[source]


def _place(env: dict[str, Path], placements: list[tuple[str, str]], rule: str) -> RuleSet:
    session = RuleSet()
    files: dict[Path, dict[str, list[str]]] = {}
    for source, behavior in placements:
        if source == "session":
            getattr(session, behavior).append(rule)
        else:
            files.setdefault(_source_file(env, source), {}).setdefault(behavior, []).append(rule)
    for path, perms in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"permissions": perms}))
    return session


PRECEDENCE_ROWS = [((s, b),) for s in SOURCES for b in BEHAVIORS] + [
    ((s1, b1), (s2, b2)) for s1, s2 in itertools.combinations(SOURCES, 2) for b1 in BEHAVIORS for b2 in BEHAVIORS
]


@pytest.mark.parametrize(
    "placements", PRECEDENCE_ROWS, ids=[" + ".join(f"{s}:{b}" for s, b in row) for row in PRECEDENCE_ROWS]
)
def test_precedence(env: dict[str, Path], placements: tuple[tuple[str, str], ...]) -> None:
    session = _place(env, list(placements), "Bash(make *)")
    decision = decide(engine(env, session), "Bash", {"command": "make all"})
    expected = max((b for _, b in placements), key=_RANK.__getitem__)
    assert decision.behavior == expected
    assert decision.rule == "Bash(make *)"
    assert decision.source in {s for s, b in placements if b == expected}
    if decision.source != "session":
        assert decision.source_file == str(_source_file(env, decision.source or ""))


# --- modes: what each call does in each mode -------------------------------------------------------------

CALLS = [
    "read_in",
    "read_out",
    "edit_in",
    "edit_out",
    "edit_git",
    "bash_ro",
    "bash_rw",
    "bash_redirect_in",
    "exit_plan",
    "mcp",
]
MODE_TABLE: dict[str, list[str]] = {
    "default": ["allow", "ask", "ask", "ask", "ask", "allow", "ask", "ask", "allow", "ask"],
    "acceptEdits": ["allow", "ask", "allow", "ask", "ask", "allow", "ask", "allow", "allow", "ask"],
    "plan": ["allow", "ask", "deny", "deny", "deny", "allow", "deny", "deny", "ask", "deny"],
    "bypassPermissions": ["allow", "allow", "allow", "allow", "ask", "allow", "allow", "allow", "allow", "allow"],
    "dontAsk": ["allow", "deny", "deny", "deny", "deny", "allow", "deny", "deny", "allow", "deny"],
    "default/non-interactive": ["allow", "deny", "deny", "deny", "deny", "allow", "deny", "deny", "allow", "deny"],
}
MODE_ROWS = [
    (mode, call, expected) for mode, row in MODE_TABLE.items() for call, expected in zip(CALLS, row, strict=True)
]


def _call(e: PermissionEngine, env: dict[str, Path], call: str) -> str:
    ws, out = env["ws"], env["outside"]
    file_calls: dict[str, tuple[str, Path, Literal["read", "write"]]] = {
        "read_in": ("Read", ws / "src" / "a.py", "read"),
        "read_out": ("Read", out / "f", "read"),
        "edit_in": ("Edit", ws / "src" / "a.py", "write"),
        "edit_out": ("Edit", out / "f", "write"),
        "edit_git": ("Edit", ws / ".git" / "config", "write"),
    }
    if call in file_calls:
        tool, path, kind = file_calls[call]
        return decide(e, tool, read_only=kind == "read", paths=[(path, kind)]).behavior
    commands = {"bash_ro": "ls -la src && git status", "bash_rw": "make build", "bash_redirect_in": "echo hi > out.txt"}
    if call in commands:
        return bash(e, commands[call])
    if call == "exit_plan":
        return decide(e, "ExitPlanMode", {"plan": "do it"}, read_only=True).behavior
    return decide(e, "mcp__srv__do", read_only=False).behavior


@pytest.mark.parametrize(("mode", "call", "expected"), MODE_ROWS, ids=[f"{m}:{c}" for m, c, _ in MODE_ROWS])
def test_mode_table(env: dict[str, Path], mode: str, call: str, expected: str) -> None:
    interactive = not mode.endswith("non-interactive")
    e = engine(env, mode=mode.split("/")[0], interactive=interactive)  # type: ignore[arg-type]
    assert _call(e, env, call) == expected


# --- a shell given a script file is judged like any program given one (`python3 x.py`) -----------------------

SCRIPT_ROWS: list[tuple[str, str, Mode, str]] = [
    # (command, the rule (allow/deny/none), mode, expected)
    ("sh scripts/test.sh", "allow Bash(sh scripts/test.sh)", "default", "allow"),
    ("bash scripts/test.sh --fast", "allow Bash(bash scripts/test.sh *)", "default", "allow"),
    ("bash -e scripts/test.sh", "allow Bash(bash -e scripts/test.sh)", "default", "allow"),
    ("sh scripts/test.sh", "", "default", "ask"),
    ("sh scripts/test.sh", "", "acceptEdits", "ask"),
    ("sh scripts/test.sh", "", "bypassPermissions", "allow"),
    ("sh scripts/test.sh", "allow Bash(sh *)", "default", "allow"),
    # what it runs is not read: a deny rule that could apply fails closed
    ("sh scripts/test.sh", "deny Bash(rm *)", "bypassPermissions", "deny"),
    ("sh scripts/test.sh", "allow Bash(python3 *)", "default", "ask"),
    # its standard input: what runs can't be pointed to at all, so every mode asks
    ("sh < scripts/test.sh", "allow Bash(sh *)", "bypassPermissions", "ask"),
    ("cat scripts/test.sh | bash", "", "bypassPermissions", "ask"),
    ("bash -s scripts/test.sh", "allow Bash(bash -s scripts/test.sh)", "bypassPermissions", "ask"),
    ("sh", "allow Bash(sh)", "bypassPermissions", "ask"),
]


@pytest.mark.parametrize(("command", "rule", "mode", "expected"), SCRIPT_ROWS)
def test_a_shell_given_a_script_file_is_judged_like_any_program_given_one(
    env: dict[str, Path], command: str, rule: str, mode: Mode, expected: str
) -> None:
    """`bash scripts/test.sh` could never be allowed (asked in every mode, bypass too, no always-option), while
    `python3 scripts/test.py` could: a rule naming it now lets it run, in the sandbox (which keeps protected files
    read-only for it, as for any program), and deny rules still match it since its content is not read."""
    (env["ws"] / "scripts").mkdir()
    (env["ws"] / "scripts" / "test.sh").write_text("rm -rf build\n")
    behavior, _, text = rule.partition(" ")
    rules = RuleSet.of(**{behavior: [text]}) if rule else None
    assert bash(engine(env, rules, mode=mode), command) == expected
