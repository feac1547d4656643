"""The macOS sandbox's profile (Seatbelt, SBPL), generated from the same plan bubblewrap mounts: pinned per policy case,
and read back as s-expressions by a reader of this file's own (SBPL is Scheme-like: lists, symbols, strings, `;`
comments), so what `sandbox-exec -p` gets is well-formed and says what the policy says. sandbox-exec itself runs only
on a Mac; here the profile is what can be proven."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge.execution.sandbox_plan import MountPlan, plan_mounts
from bridge.execution.seatbelt import profile, quote, seatbelt_argv
from bridge.permissions.held import HeldPath
from bridge.permissions.sandbox_policy import SandboxPolicy, with_private_home
from bridge.permissions.specifiers import compile_path_specifier
from tests.permission_calls import GRAMMAR

# -- a reader for SBPL's s-expressions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Str:
    value: str


Expr = str | int | Str | list["Expr"]
_TOKEN = re.compile(r'\s+|;[^\n]*|(?P<open>\()|(?P<close>\))|"(?P<str>(?:[^"\\]|\\.)*)"|(?P<atom>[^\s()";]+)')


def read(text: str) -> list[Expr]:
    """Every top-level form of `text`; ValueError on anything that is not an s-expression."""
    stack: list[list[Expr]] = [[]]
    position = 0
    while position < len(text):
        token = _TOKEN.match(text, position)
        if token is None:
            raise ValueError(f"unreadable at {position}: {text[position : position + 20]!r}")
        position = token.end()
        if token["open"]:
            stack.append([])
        elif token["close"]:
            if len(stack) == 1:
                raise ValueError(f"unbalanced ')' at {position}")
            done = stack.pop()
            stack[-1].append(done)
        elif token["str"] is not None:
            stack[-1].append(Str(re.sub(r"\\(.)", r"\1", token["str"])))
        elif token["atom"]:
            atom = token["atom"]
            stack[-1].append(int(atom) if atom.isdigit() else atom)
    if len(stack) != 1:
        raise ValueError("unbalanced '(': the text ends inside a list")
    return stack[0]


OPERATIONS = {
    "default",
    "file-write*",
    "file-read*",
    "file-read-data",
    "file-write-unlink",
    "network-outbound",
    "network-inbound",
    "network-bind",
}


def check_sbpl(forms: list[Expr]) -> list[tuple[str, tuple[str, ...], list[Expr]]]:
    """Each rule of a profile as (action, operations, filters), asserting the shape of SBPL as we use it."""
    assert forms[0] == ["version", 1], forms[0]
    rules = []
    for form in forms[1:]:
        assert isinstance(form, list) and form and form[0] in ("allow", "deny"), form
        operations = tuple(x for x in form[1:] if isinstance(x, str))
        filters: list[Expr] = [x for x in form[1:] if isinstance(x, list)]
        assert operations and set(operations) <= OPERATIONS and len(operations) + len(filters) == len(form) - 1, form
        for each in filters:
            match each:
                case ["subpath" | "literal", Str(value)]:
                    assert value.startswith("/"), each
                case ["remote" | "local", "ip", Str(value)]:
                    assert value == "*:*", each
                case _:
                    raise AssertionError(f"unknown filter {each}")
        rules.append((str(form[0]), operations, filters))
    return rules


def test_the_reader_refuses_what_is_not_an_s_expression() -> None:
    """The oracle's own check: it would catch a broken profile."""
    assert read('(version 1)\n; a comment\n(allow file-write* (subpath "/a \\"b\\""))') == [
        ["version", 1],
        ["allow", "file-write*", ["subpath", Str('/a "b"')]],
    ]
    for broken in ("(allow default", "(allow default))", '(deny file-write* (subpath "/x))'):
        with pytest.raises(ValueError):
            read(broken)
    with pytest.raises(AssertionError):
        check_sbpl(read('(version 1)\n(allow file-write* (subpath "relative"))'))


# -- the policy cases --------------------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".agent-bridge").mkdir(parents=True)
    (root / ".agent-bridge" / "settings.json").write_text("{}")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "secrets").mkdir()
    (root / "secrets" / "key.pem").write_text("k")
    (root / ".env").write_text("TOKEN=1")
    (tmp_path / "tmp").mkdir()
    return root


def policy_for(
    ws: Path,
    *,
    network: bool = False,
    held: tuple[HeldPath, ...] = (),
    edit_deny: tuple[str, ...] = (),
    read_deny: tuple[str, ...] = (),
) -> SandboxPolicy:
    return SandboxPolicy(
        cwd=ws,
        writable=(ws,),
        protected=held,
        network=network,
        read_only=tuple(compile_path_specifier(s, cwd=ws, root=ws) for s in edit_deny),
        masked=tuple(compile_path_specifier(s, cwd=ws, root=ws) for s in read_deny),
    )


def render(ws: Path, policy: SandboxPolicy, grants: tuple[Path, ...] = ()) -> tuple[str, str, MountPlan]:
    """The profile as sandbox-exec gets it, the same with the test's temp dir shown as ROOT, and the plan."""
    tmp = ws.parent / "tmp"
    plan = plan_mounts(policy, tmp, grants)
    text = profile(policy, plan, tmp)
    return text, text.replace(str(ws.parent), "ROOT"), plan


def paths(filters: list[Expr], kind: str = "subpath") -> list[str]:
    return [f[1].value for f in filters if isinstance(f, list) and f[0] == kind and isinstance(f[1], Str)]


BARE = """\
(version 1)
; agent-bridge: generated from the session's sandbox policy
(allow default)
; everything read-only but what follows
(deny file-write*)
; writable: devices, the session's temp dir, the workspace roots
(allow file-write*
  (subpath "/dev")
  (subpath "ROOT/tmp")
  (subpath "ROOT/ws"))
; no network
(deny network-outbound (remote ip "*:*"))
(deny network-inbound (local ip "*:*"))
(deny network-bind (local ip "*:*"))
"""


def test_a_bare_workspace_writable_and_no_network(ws: Path) -> None:
    text, shown, _ = render(ws, policy_for(ws))
    assert shown == BARE
    rules = check_sbpl(read(text))
    assert rules[0] == ("allow", ("default",), []) and rules[1] == ("deny", ("file-write*",), [])


def test_network_allowed_has_no_network_rule(ws: Path) -> None:
    text, shown, _ = render(ws, policy_for(ws, network=True))
    assert shown == BARE[: BARE.index("; no network")]
    assert not [r for r in check_sbpl(read(text)) if any(op.startswith("network") for op in r[1])]


HELD = (
    HeldPath(Path("ws/.agent-bridge/settings.json"), "file", "it is the project's settings"),
    HeldPath(Path("ws/.git/hooks"), "dir", "git runs its hooks"),
    HeldPath(Path("ws/.vscode/tasks.json"), "file", "VS Code runs its tasks"),  # missing: no placeholder, denied
    HeldPath(Path("ws/sub/.git"), "dir", "a new repository", checked="repository"),  # checked after the command
)

EVERYTHING = """\
(version 1)
; agent-bridge: generated from the session's sandbox policy
(allow default)
; everything read-only but what follows
(deny file-write*)
; writable: devices, the session's temp dir, the workspace roots
(allow file-write*
  (subpath "/dev")
  (subpath "ROOT/tmp")
  (subpath "ROOT/ws"))
; held: settings, memory, what runs later
(deny file-write*
  (subpath "ROOT/ws/.agent-bridge/settings.json")
  (subpath "ROOT/ws/.git/hooks")
  (subpath "ROOT/ws/.vscode/tasks.json"))
; the way to what is held: it can't be moved away
(deny file-write-unlink
  (literal "ROOT/ws/.agent-bridge")
  (literal "ROOT/ws/.git"))
; Edit deny rules
(deny file-write*
  (subpath "ROOT/ws/secrets"))
; Read deny rules: unreadable
(deny file-read* file-write*
  (subpath "ROOT/ws/.env"))
; no network
(deny network-outbound (remote ip "*:*"))
(deny network-inbound (local ip "*:*"))
(deny network-bind (local ip "*:*"))
"""


def held_in(ws: Path) -> tuple[HeldPath, ...]:
    return tuple(HeldPath(ws.parent / h.path, h.kind, h.why, checked=h.checked) for h in HELD)


def test_held_missing_edit_and_read_deny(ws: Path) -> None:
    policy = policy_for(ws, held=held_in(ws), edit_deny=("secrets/**",), read_deny=(".env",))
    text, shown, plan = render(ws, policy)
    assert shown == EVERYTHING
    check_sbpl(read(text))
    # the same plan bubblewrap mounts: what the profile denies, bwrap binds read-only or masks
    assert plan.args[plan.args.index(str(ws / "secrets")) - 1] == "--ro-bind"
    assert ["--ro-bind", "/dev/null", str(ws / ".env")] == plan.args[
        plan.args.index(str(ws / ".env")) - 2 : plan.args.index(str(ws / ".env")) + 1
    ]


def test_a_folders_hook_reads_nothing_of_the_home_folder_but_its_tools_and_the_workspace(tmp_path: Path) -> None:
    """A folder's own hook (`with_private_home`): the home folder's contents denied, the tools' folders (a link's
    target, as macOS sees paths) and the workspace in it allowed again after, the masks after that; bwrap's plan
    holds the same: an empty home, the tools bound back read-only, the workspace writable, then read-only."""
    home = tmp_path / "home"
    ws = home / "src" / "ws"
    ws.mkdir(parents=True)
    (home / ".local" / "bin").mkdir(parents=True)
    (tmp_path / "nvm").mkdir()
    (home / ".nvm").symlink_to(tmp_path / "nvm")
    (home / ".ssh").mkdir()
    policy = with_private_home(policy_for(ws, read_deny=("/" + str(home / ".ssh") + "/**",)), home)
    assert policy.home_tools == (home / ".local" / "bin", home / ".nvm")
    text, _, plan = render(ws, policy)
    rules = check_sbpl(read(text))
    hidden = rules.index(("deny", ("file-read-data",), [["subpath", Str(str(home))]]))
    shown = rules[hidden + 1]
    assert shown[:2] == ("allow", ("file-read-data",))
    assert paths(shown[2]) == [str(home / ".local" / "bin"), str(tmp_path / "nvm"), str(ws)]
    assert str(home / ".ssh") not in text  # hidden with the rest: nothing to mask
    args = plan.args
    assert args[args.index("--tmpfs") + 1] == str(home)
    assert ["--ro-bind", str(tmp_path / "nvm"), str(home / ".nvm")] == args[args.index(str(tmp_path / "nvm")) - 1 :][:3]
    assert args.index("--tmpfs") < args.index(str(ws)) < args.index("--remount-ro")
    assert str(home / ".ssh") not in args  # hidden with the rest: nothing to mask
    # the user opened the home folder itself: nothing to hide it from
    assert with_private_home(policy_for(home), home).private_home is None


def test_what_the_user_allowed_this_call_is_writable_but_not_outside_the_workspace(ws: Path) -> None:
    granted = (ws / ".agent-bridge" / "settings.json", ws / ".git" / "hooks" / "pre-commit", Path("/etc/hosts"))
    text, _, _ = render(ws, policy_for(ws, held=held_in(ws)), granted)
    rules = check_sbpl(read(text))
    held = [p for r in rules if r[:2] == ("deny", ("file-write*",)) for p in paths(r[2])]
    assert str(granted[0]) not in held  # granted: not held at all (bwrap doesn't mount it read-only either)
    assert str(ws / ".git" / "hooks") in held
    allowed_after_held = rules[[r[0] for r in rules].index("deny", 2) + 1 :]
    grants = [p for r in allowed_after_held if r[0] == "allow" for p in paths(r[2])]
    assert grants == [str(granted[0]), str(granted[1])]  # /etc/hosts is outside the workspace: stays read-only


def test_paths_are_quoted_as_sbpl_strings(tmp_path: Path) -> None:
    odd = tmp_path / 'we"ird\\ws'
    odd.mkdir()
    (tmp_path / "tmp").mkdir()
    text = profile(policy_for(odd), plan_mounts(policy_for(odd), tmp_path / "tmp"), tmp_path / "tmp")
    assert str(odd) in [p for r in check_sbpl(read(text)) for p in paths(r[2])]
    assert quote('a"b\\c') == '"a\\"b\\\\c"'


def test_sandbox_exec_gets_the_profile_inline_then_the_command() -> None:
    assert seatbelt_argv("/usr/bin/sandbox-exec", "(version 1)") == ["/usr/bin/sandbox-exec", "-p", "(version 1)", "--"]


async def test_the_seatbelt_backend_runs_behind_the_sandbox_interface(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Bash tool through the session's Sandbox with the macOS backend chosen, and a stand-in `sandbox-exec` that
    records the profile it is given and runs the command (it sandboxes nothing: the profile is what is tested)."""
    from bridge.abort import Abort
    from bridge.execution import host
    from bridge.execution.sandbox import Sandbox, probe
    from bridge.execution.seatbelt import SANDBOX_EXEC_ENV
    from bridge.execution.supervisor import ProcessSupervisor
    from bridge.permissions.engine import PermissionEngine
    from bridge.permissions.settings import SettingsStore
    from bridge.tools.base import Services, ToolContext
    from bridge.tools.bash import BashInput, BashTool

    given = ws.parent / "profile.sb"
    fake = ws.parent / "sandbox-exec"
    fake.write_text(
        f'#!/bin/sh\n[ "$1" = -p ] || exit 64\nprintf %s "$2" > {given}\nshift 2\n[ "$1" = -- ] && shift\nexec "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(host, "macos", lambda: True)
    monkeypatch.setenv(SANDBOX_EXEC_ENV, str(fake))
    monkeypatch.delenv("AGENT_BRIDGE_SANDBOX", raising=False)
    assert probe().ok and probe().backend == "seatbelt"
    store = SettingsStore(ws, user_config_dir=ws.parent / "config", claude_home=ws.parent / "claude-home")
    engine = PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, mode="bypassPermissions")
    sandbox = Sandbox.for_engine(engine)
    assert sandbox.enforced and sandbox.problems() == []
    supervisor = ProcessSupervisor()
    try:
        ctx = ToolContext(
            cwd=ws, abort=Abort(), data_dir=ws.parent / "data", services=Services(processes=supervisor, sandbox=sandbox)
        )
        result = await BashTool().call(BashInput(command='echo "tmp=$TMPDIR sandboxed=$AGENT_BRIDGE_SANDBOXED"'), ctx)
    finally:
        await supervisor.shutdown()
        sandbox.close()
    assert not result.is_error, result.content
    assert "sandboxed=1" in str(result.content) and "tmp=/tmp\n" not in str(result.content)  # its own temp dir
    rules = check_sbpl(read(given.read_text()))
    held = [p for r in rules if r[:2] == ("deny", ("file-write*",)) for p in paths(r[2])]
    # what runs later, existing (.agent-bridge, .git/hooks) or not (.vscode, .envrc, CLAUDE.md: no placeholder)
    assert {str(ws / name) for name in (".agent-bridge", ".git/hooks", ".vscode", ".envrc", "CLAUDE.md")} <= set(held)
    assert not [name for name in os.listdir(ws) if name not in (".agent-bridge", ".git", "secrets", ".env")]
    assert ("deny", ("network-outbound",), [["remote", "ip", Str("*:*")]]) in rules


def test_a_seatbelt_refusal_of_a_held_path_says_why(ws: Path) -> None:
    """Seatbelt says EPERM where bubblewrap says EROFS; a held path named in the output gets the same note."""
    from bridge.execution.sandbox_notes import refusal_notes

    policy = policy_for(ws, held=held_in(ws))
    _, _, plan = render(ws, policy)
    plan.backend = "seatbelt"
    output = f"touch: {ws}/.agent-bridge/settings.json: Operation not permitted\nkill: 1: Operation not permitted\n"
    [note] = refusal_notes(output, policy, plan)
    settings = ws / ".agent-bridge" / "settings.json"
    assert note.startswith(f"The sandbox keeps {settings} read-only: it is the project's settings")
    assert refusal_notes("kill: 1: Operation not permitted\n", policy, plan) == []  # EPERM alone: not the sandbox's
