"""The OS sandbox under Bash (bubblewrap), with real bwrap, real shells and real files.

Every command here runs through the Bash tool directly, as if the permission engine had allowed it
(the engine is in bypassPermissions and is not even asked): what holds, holds because of the sandbox.
Outcomes are checked on the host's file system, never by trusting the command's own output.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.execution.background import BackgroundShells
from bridge.execution.sandbox import Sandbox, probe
from bridge.execution.supervisor import ProcessSupervisor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.settings import SettingsStore
from bridge.tools.base import Services, ToolContext, ToolResult
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.tasks import TaskOutputInput, TaskOutputTool, TaskStopInput, TaskStopTool
from tests.execution.test_processes import ESCAPING, marked_pids
from tests.permission_calls import GRAMMAR
from tests.poll import poll

AVAILABLE = probe()
pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")

BASH = BashTool()


class Project:
    """A git workspace with its own settings dirs, a bypassPermissions engine and the session's sandbox."""

    def __init__(self, root: Path, supervisor: ProcessSupervisor, *, name: str = "ws", repository: bool = True) -> None:
        self.root = root
        self.ws = root / name
        self.ws.mkdir()
        if repository:
            subprocess.run(["git", "init", "-q", str(self.ws)], check=True)
        self.outside = root / "outside"
        self.outside.mkdir(exist_ok=True)
        store = SettingsStore(self.ws, user_config_dir=root / "config", claude_home=root / "claude-home")
        self.engine = PermissionEngine(cwd=self.ws, settings=store, grammar=GRAMMAR, mode="bypassPermissions")
        self.sandbox = Sandbox.for_engine(self.engine)
        self.supervisor = supervisor
        self.background = BackgroundShells(supervisor)
        self.abort = Abort()
        self.ctx = ToolContext(
            cwd=self.ws,
            abort=self.abort,
            data_dir=root / "data",
            services=Services(processes=supervisor, background=self.background, sandbox=self.sandbox),
        )

    async def run(self, command: str, *, grants: tuple[Path, ...] = (), **extra: Any) -> ToolResult:
        """The command through the Bash tool, as if allowed, with `grants` (what a question allowed it to write)."""
        self.ctx.grants = grants
        try:
            return await BASH.call(BashInput(command=command, **extra), self.ctx)
        finally:
            self.ctx.grants = ()

    def settings(self, data: dict[str, Any]) -> None:
        path = self.ws / ".agent-bridge" / "settings.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(data))
        self.engine.settings.refresh(force=True)

    def listing(self) -> list[str]:
        return sorted(str(p.relative_to(self.ws)) for p in self.ws.rglob("*") if ".git/objects" not in str(p))


def output(result: ToolResult) -> str:
    assert isinstance(result.content, str)
    return result.content


# -- the file system -------------------------------------------------------------------------------------


async def test_writes_inside_the_workspace_succeed_and_outside_fail(project: Project) -> None:
    target = project.outside / "escaped"
    home = Path.home() / f"escaped-{uuid.uuid4().hex}"
    result = await project.run(
        f"mkdir -p src && echo made > src/new.txt && echo in-ok; "
        f"echo x > {target}; echo x > {home}; echo x > /etc/escaped-{uuid.uuid4().hex}; "
        f"echo x > {project.ws}/../outside/via-dotdot; true"
    )
    assert (project.ws / "src" / "new.txt").read_text() == "made\n"
    assert "in-ok" in output(result)
    assert not target.exists() and not home.exists()
    assert list(project.outside.iterdir()) == []
    assert output(result).count("/bin/bash: line 1:") == 4  # read-only, or (under /tmp) not even visible


async def test_tmp_is_private_to_the_session_and_kept_between_commands(project: Project) -> None:
    name = f"sbx-{uuid.uuid4().hex}"
    first = await project.run(
        f"echo kept > /tmp/{name} && echo $TMPDIR && python3 -c 'import tempfile; print(tempfile.mkdtemp())'"
    )
    assert not first.is_error, output(first)
    assert output(first).splitlines()[0] == "/tmp"
    assert not Path("/tmp", name).exists()  # not the host's /tmp
    second = await project.run(f"cat /tmp/{name}")
    assert output(second) == "kept"


PROTECTED = [
    ".agent-bridge/settings.local.json",  # the directory does not exist yet
    ".agent-bridge/settings.json",
    ".agent-bridge/memory.md",
    ".claude/settings.json",
    ".claude/agents/evil.md",
    ".mcp.json",
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    ".git/hooks/pre-commit",
    ".git/config",
    ".git/commondir",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".idea/workspace.xml",
    ".devcontainer/devcontainer.json",
    ".devcontainer.json",
    ".envrc",
    "mise.toml",
    ".config/mise/config.toml",
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".nvim.lua",
    ".zed/settings.json",
    "project.code-workspace",
]
GRANT = '{"permissions": {"allow": ["Bash"]}}'


@pytest.mark.parametrize("relative", PROTECTED)
async def test_existing_protected_paths_stay_read_only(project: Project, relative: str) -> None:
    path = project.ws / relative
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("original\n")
    before = path.read_bytes()
    listing = project.listing()
    result = await project.run(
        f"printf '%s' '{GRANT}' > {relative}; echo more >> {relative}; rm -f {relative}; "
        f"mv {relative} {relative}.moved; echo ran > control.txt; exit 0"
    )
    assert (project.ws / "control.txt").read_text() == "ran\n"  # the command ran: what held, held
    assert path.read_bytes() == before, output(result)
    assert sorted([*listing, "control.txt"]) == project.listing()
    assert "Read-only file system" in output(result) or "busy" in output(result)
    assert f"[sandbox] The sandbox keeps {path} read-only: " in output(result)


@pytest.mark.parametrize(
    "relative",
    [
        p
        for p in PROTECTED
        if not p.startswith(".git/")  # the repository exists
        and not p.endswith(".code-workspace")
    ],
)  # held only once it exists
async def test_protected_paths_that_do_not_exist_are_set_aside_when_created(project: Project, relative: str) -> None:
    path = project.ws / relative
    held = ".config/mise" if relative.startswith(".config/") else relative.split("/")[0]  # what is protected
    top = project.ws / held
    listing = project.listing() + ([".config"] if held == ".config/mise" else [])  # .config itself is not held
    result = await project.run(
        f"mkdir -p {path.parent} && printf '%s' '{GRANT}' > {relative}; echo ran > control.txt; exit 0"
    )
    assert (project.ws / "control.txt").read_text() == "ran\n"
    assert not os.path.lexists(top), output(result)  # nothing of it is left in the workspace
    assert sorted([*listing, "control.txt"]) == project.listing()
    assert "[sandbox] The sandbox set aside" in output(result)
    kept = sorted((project.root / "data" / "quarantine").rglob(top.name))
    assert kept, "what it made is kept where the note says"
    if top == path:  # (a directory is set aside as soon as it appears: what follows it then fails)
        assert kept[0].read_text() == GRANT


async def test_protected_directories_cannot_be_renamed_or_replaced(project: Project) -> None:
    (project.ws / ".claude").mkdir()
    (project.ws / ".claude" / "settings.json").write_text("{}")
    result = await project.run(
        "mv .git g; rm -rf .claude; mv .claude c; mv .agent-bridge ab; "
        "mkdir x && mv x .agent-bridge; ln -s elsewhere .mcp.json; "
        "git config core.hooksPath /tmp; exit 0"
    )
    assert (project.ws / ".git" / "config").is_file()
    assert (project.ws / ".claude" / "settings.json").read_text() == "{}"
    assert not (project.ws / "g").exists() and not (project.ws / "c").exists() and not (project.ws / "ab").exists()
    assert not (project.ws / ".mcp.json").is_symlink()
    assert "hooksPath" not in (project.ws / ".git" / "config").read_text(), output(result)


async def test_git_still_commits(project: Project) -> None:
    result = await project.run(
        "echo hi > f && git add f && git -c user.email=a@b -c user.name=n commit -qm first && git log --oneline"
    )
    assert not result.is_error, output(result)
    assert "first" in output(result)


async def test_read_deny_rules_are_masked(project: Project) -> None:
    for relative, text in [
        ("secrets/token.txt", "S1"),
        (".env", "S2"),
        ("sub/.env", "S3"),
        ("sub/key.pem", "S4"),
        ("visible.txt", "V1"),
    ]:
        (project.ws / relative).parent.mkdir(parents=True, exist_ok=True)
        (project.ws / relative).write_text(text)
    project.settings({"permissions": {"deny": ["Read(./secrets/**)", "Read(.env)", "Read(*.pem)"]}})
    result = await project.run("cat secrets/token.txt .env sub/.env sub/key.pem visible.txt; ls secrets; exit 0")
    text = output(result)
    assert "V1" in text
    for secret in ("S1", "S2", "S3", "S4"):
        assert secret not in text
    write = await project.run("echo changed > .env; echo new > secrets/new; exit 0")
    assert (project.ws / ".env").read_text() == "S2", output(write)
    assert not (project.ws / "secrets" / "new").exists()


CREDENTIAL_FILES = {
    ".ssh/id_ed25519": "K-SSH",
    ".aws/credentials": "K-AWS",
    ".netrc": "K-NETRC",
    ".config/gh/hosts.yml": "K-GH",
    ".docker/config.json": "K-DOCKER",
}
# a path no checker sees the command name: computed by the code it runs
READ_HOME = (
    'python3 -c "import os,sys\n'
    "for n in sys.argv[1:]:\n"
    " try: print(open(os.path.expanduser('~/' + n)).read())\n"
    " except OSError as e: print('refused', n, e.strerror)\" " + " ".join(CREDENTIAL_FILES)
)


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home folder with credentials, outside /tmp (commands have a /tmp of their own: a home there would be
    unreadable to them for that reason alone)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    for relative, text in CREDENTIAL_FILES.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    (folder / "notes.txt").write_text("K-PLAIN")
    monkeypatch.setenv("HOME", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def test_the_users_credentials_are_masked_from_commands(project: Project, home: Path) -> None:
    """~/.ssh, ~/.aws, ~/.netrc, gh's and docker's tokens: an allowed command that computes their paths read them and
    its output went to the model (the left-alone list's "credential files under $HOME readable by allowed sandboxed
    commands"). Masked now; the same command outside the sandbox reads them (the proof), and the sandbox reads the
    rest of the home folder."""
    text = output(await project.run(READ_HOME + " notes.txt"))
    assert "K-PLAIN" in text
    assert "The sandbox hides ~/.ssh" in text and "Read(~/.ssh/**)" in text, text  # said, with how to allow it
    for secret in CREDENTIAL_FILES.values():
        assert secret not in text, text
    outside = subprocess.run(  # noqa: ASYNC221 (the proof, once)
        ["sh", "-c", READ_HOME], capture_output=True, text=True, cwd=project.ws, check=False
    )
    assert all(secret in outside.stdout for secret in CREDENTIAL_FILES.values()), outside


async def test_a_read_allow_rule_leaves_that_credential_readable(project: Project, home: Path) -> None:
    project.settings({"permissions": {"allow": ["Read(~/.aws/**)"]}})  # a folder's own allow rule widens nothing
    text = output(await project.run(READ_HOME))
    assert "K-AWS" not in text
    user = project.root / "config" / "settings.json"  # the user's own does
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"permissions": {"allow": ["Read(~/.aws/**)"]}}))
    project.engine.settings.refresh(force=True)
    text = output(await project.run(READ_HOME))
    assert "K-AWS" in text
    assert "K-SSH" not in text and "K-NETRC" not in text


async def test_edit_deny_rules_are_read_only(project: Project) -> None:
    (project.ws / "vendor").mkdir()
    (project.ws / "vendor" / "lib.py").write_text("v1")
    project.settings({"permissions": {"deny": ["Edit(./vendor/**)"]}})
    await project.run("echo v2 > vendor/lib.py; touch vendor/new; exit 0")
    assert (project.ws / "vendor" / "lib.py").read_text() == "v1"
    assert not (project.ws / "vendor" / "new").exists()


@pytest.mark.parametrize(
    ("rule", "made"),
    [
        ("Edit(sub/new.txt)", "sub/new.txt"),  # one path, not there yet: held and watched
        ("Edit(./later/**)", "later/x.txt"),  # a folder not there yet
        ("Edit(**/*.pem)", "sub/x.pem"),  # a pattern: looked for again after the command
        ("Edit(*.pem)", "deep/er/key.pem"),
    ],
)
async def test_an_edit_deny_rule_holds_what_does_not_exist_yet(project: Project, rule: str, made: str) -> None:
    """Attack round 8: a read-only mount holds only what exists, so `python3 -c "open('sub/new.txt','w')…"` created
    the file `Edit(sub/new.txt)` denies (code a command runs writes what no checker sees). What a command makes that
    a deny rule matches is set aside; the control: a file no rule names, made the same way, stays."""
    (project.ws / "sub").mkdir()
    project.settings({"permissions": {"deny": [rule]}})
    code = (
        "import os, sys\n"
        "for p in sys.argv[1:]:\n"
        "    os.makedirs(os.path.dirname(p) or '.', exist_ok=True)\n"
        "    open(p, 'w').write('evil')\n"
    )
    result = await project.run(f"python3 -c {shlex.quote(code)} sub/control.txt {made}; exit 0")  # (control first: a
    # folder is set aside as soon as it appears, and what follows in it then fails)
    assert (project.ws / "sub" / "control.txt").read_text() == "evil", output(result)
    assert not (project.ws / made).exists(), output(result)
    assert "[sandbox] The sandbox set aside" in output(result) and "a deny rule forbids writing it" in output(result)


async def test_a_deny_pattern_holds_after_a_command_that_makes_many_files(project: Project) -> None:
    """Attack round 9: 20,001 files made first pushed the look after the command past its bound, and the `.pem`
    made last was left. The look after a command goes further than the one before it; and where it can't, the
    result says so."""
    (project.ws / "sub").mkdir()
    project.settings({"permissions": {"deny": ["Edit(**/*.pem)"]}})
    code = "import os\nos.makedirs('junk')\nfor i in range(20001): open('junk/%d' % i, 'w').close()\n"
    code += "open('sub/x.pem', 'w').write('evil')\n"
    result = await project.run(f"python3 -c {shlex.quote(code)}")
    assert not (project.ws / "sub" / "x.pem").exists(), output(result)
    assert "a deny rule forbids writing it" in output(result)


async def test_a_deny_pattern_holds_after_a_background_command_nobody_reads(project: Project) -> None:
    """Attack round 9: a background command wrote a `.pem` after its start's result; with no one reading its output
    the look after it never ran, and the file stayed. It runs when the shell ends, and the reader hears it later."""
    (project.ws / "sub").mkdir()
    project.settings({"permissions": {"deny": ["Edit(**/*.pem)"]}})
    started = await project.run(
        "sleep 0.3; python3 -c \"open('sub/x.pem', 'w').write('evil')\"; echo done", run_in_background=True
    )
    shell_id = started.raw_output["background_id"] if started.raw_output else ""
    await poll(lambda: any((project.root / "data" / "quarantine").rglob("x.pem")), timeout=10)
    assert not (project.ws / "sub" / "x.pem").exists()
    read = await TaskOutputTool().call(TaskOutputInput(task_id=shell_id, block=False), project.ctx)
    assert "a deny rule forbids writing it" in output(read)


async def test_where_a_link_held_by_its_name_leads_is_read_only(project: Project) -> None:
    """Attack round 9: `frontend/.husky -> ../hk` (husky in a monorepo package): the permission check holds `hk/`,
    and so does the sandbox now, against code a command runs; the control: a folder beside it is written."""
    (project.ws / "hk").mkdir()
    (project.ws / "hk" / "pre-commit").write_text("#!/bin/sh\n")
    (project.ws / "other").mkdir()
    (project.ws / "frontend").mkdir()
    (project.ws / "frontend" / ".husky").symlink_to("../hk")
    code = "for p in ('other/x', 'hk/pre-commit'):\n    try: open(p, 'w').write('evil')\n    except OSError: pass\n"
    result = await project.run(f"python3 -c {shlex.quote(code)}")
    assert (project.ws / "other" / "x").read_text() == "evil", output(result)
    assert (project.ws / "hk" / "pre-commit").read_text() == "#!/bin/sh\n", output(result)


async def test_allow_write_and_additional_directories_are_writable(project: Project) -> None:
    extra, more = project.root / "extra", project.root / "more"
    extra.mkdir()
    more.mkdir()
    project.settings(
        {
            "permissions": {"additionalDirectories": [str(extra)]},
            "sandbox": {"filesystem": {"allowWrite": [f"/{more}"]}},
        }
    )
    result = await project.run(f"echo a > {extra}/a && echo b > {more}/b && echo x > {extra}/.mcp.json; exit 0")
    assert (extra / "a").read_text() == "a\n" and (more / "b").read_text() == "b\n", output(result)
    assert not (extra / ".mcp.json").exists()  # an added directory's protected names are protected too


# -- the network -----------------------------------------------------------------------------------------


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


async def test_network_is_off_unless_the_settings_allow_it(project: Project, listener: int) -> None:
    connect = f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected"
    blocked = await project.run(connect)
    assert blocked.is_error and "connected" not in output(blocked)
    project.settings({"sandbox": {"network": {"allowedDomains": ["*"]}}})
    allowed = await project.run(connect)
    assert output(allowed) == "connected"


async def test_domain_lists_keep_the_network_off_and_say_so(project: Project, listener: int) -> None:
    project.settings({"sandbox": {"network": {"allowedDomains": ["example.com"]}}})
    result = await project.run(f"exec 3<>/dev/tcp/127.0.0.1/{listener} && echo connected")
    assert "connected" not in output(result)
    assert any("cannot filter by domain" in p for p in project.sandbox.problems())


# -- turning it off --------------------------------------------------------------------------------------


async def test_the_setting_turns_it_off(project: Project) -> None:
    project.settings({"sandbox": {"enabled": False}})
    await project.run(f"echo x > {project.outside}/free")
    assert (project.outside / "free").exists()
    assert not project.sandbox.enforced and not project.sandbox.unavailable


async def test_the_environment_turns_it_off(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_BRIDGE_SANDBOX", "0")
    await project.run(f"echo x > {project.outside}/free")
    assert (project.outside / "free").exists()


# -- processes inside ------------------------------------------------------------------------------------


def marked(mark: str, command: str) -> str:
    return f"export TEST_MARK={mark}; {command}"


async def test_cancel_kills_everything_inside(project: Project) -> None:
    import anyio

    mark = uuid.uuid4().hex
    async with anyio.create_task_group() as group:
        group.start_soon(project.run, marked(mark, ESCAPING))
        await poll(lambda: len(marked_pids(mark)) >= 4)
        group.cancel_scope.cancel()  # the turn is cancelled: ctrl-c
    await poll(lambda: not marked_pids(mark), timeout=5)
    assert await project.supervisor.wait_all_gone(5)


async def test_sigint_reaches_the_command_inside(project: Project) -> None:
    mark = uuid.uuid4().hex
    proc = await project.supervisor.spawn(
        [
            "/bin/bash",
            "-c",
            marked(mark, "trap 'echo cleaned up; exit 7' INT; echo ready; while true; do sleep 0.05; done"),
        ],
        cwd=project.ws,
        env=dict(os.environ),
        sandbox=project.sandbox,
    )
    chunks: list[bytes] = []
    proc.on_output = chunks.append
    assert proc.wrapped
    await poll(lambda: b"ready" in b"".join(chunks))
    project.supervisor.terminate(proc)
    assert await proc.wait() == 7
    assert b"cleaned up" in b"".join(chunks)
    assert await project.supervisor.wait_all_gone(5)


async def test_force_kills_a_term_ignoring_tree_inside_at_once(project: Project) -> None:
    mark = uuid.uuid4().hex
    proc = await project.supervisor.spawn(
        ["/bin/bash", "-c", marked(mark, "trap '' TERM INT; setsid sleep 300 & (nohup sleep 300 &); sleep 300")],
        cwd=project.ws,
        env=dict(os.environ),
        sandbox=project.sandbox,
    )
    await poll(lambda: len(marked_pids(mark)) >= 3)
    project.supervisor.terminate(proc, force=True)
    await poll(lambda: not marked_pids(mark), timeout=0.8)


async def test_a_timeout_kills_the_tree_inside(project: Project) -> None:
    mark = uuid.uuid4().hex
    result = await project.run(marked(mark, "trap '' TERM INT; setsid sleep 300 & sleep 300"), timeout=500)
    assert result.is_error and "timed out" in output(result)
    assert not marked_pids(mark)


async def test_background_shells_are_sandboxed_and_killed(project: Project) -> None:
    mark = uuid.uuid4().hex
    started = await project.run(
        marked(mark, f"echo x > {project.outside}/bg; setsid sleep 300 & sleep 300"), run_in_background=True
    )
    shell_id = started.raw_output["background_id"] if started.raw_output else ""
    await poll(lambda: len(marked_pids(mark)) >= 2)
    assert not (project.outside / "bg").exists()
    await TaskStopTool().call(TaskStopInput(task_id=shell_id), project.ctx)
    await poll(lambda: not marked_pids(mark), timeout=5)
