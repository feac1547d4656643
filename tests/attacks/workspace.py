"""A workspace for attacks: real files and symlinks in a temp directory, secrets to keep, a canary to keep,
scripts that leave a marker when run, and the real Bash tool to run a command the engine allowed.

Layout (under `tmp`):
  home/            HOME; .ssh/id_rsa holds SSH_KEY
  outside/         outside the workspace; hidden-outside-name.txt holds OUTSIDE
  ws/              the workspace: a.txt, b.txt, secret.txt + .env + src/.env (SECRET), canary, CLAUDE.md,
                   evil.sh (touches ws/pwned), escape -> outside/, link.txt -> outside file, lists naming files,
                   runners of their arguments (runner, runstr), a Makefile and an awk program that remove the canary
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.abort import Abort
from bridge.execution.supervisor import ProcessSupervisor, command_environment, shell_argv
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.tools.base import Services, ToolContext
from bridge.tools.bash import BashInput, BashTool
from tests.execution.test_processes import marked_pids
from tests.permission_calls import GRAMMAR
from tests.poll import poll

SECRET = "SECRET-TOKEN"
SSH_KEY = "SSH-KEY-SECRET"
OUTSIDE = "OUTSIDE-CONTENT"
OUTSIDE_NAME = "hidden-outside-name.txt"
MEMORY = "original memory"
ENV_SECRET = "ENV-SECRET-VALUE-7f3a"  # the value of secret-looking variables (ENV_SECRETS) the commands get
ENV_SECRETS = {
    name: ENV_SECRET for name in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY")
}
SETTINGS: dict[str, Any] = {"permissions": {"allow": []}}
VENV_BIN = str(Path(sys.executable).parent)  # rg lives there (the ripgrep wheel)


@dataclass
class Workspace:
    tmp: Path
    ws: Path
    outside: Path
    home: Path
    secret_blob: str = ""

    def fill(self, text: str) -> str:
        return (
            text.replace("{outside}", str(self.outside))
            .replace("{ws}", str(self.ws))
            .replace("{secret_blob}", self.secret_blob)
            .replace("{sha}", _sha256(self.outside / "x.txt"))
        )

    def snapshot(self) -> dict[str, bytes | None]:
        """The files whose change an attack may be after."""
        out: dict[str, bytes | None] = {}
        for root in (self.ws, self.outside):
            for path in root.rglob("*"):
                if "objects" in path.parts or (path.is_dir() and not path.is_symlink()):
                    continue
                try:
                    out[str(path)] = path.read_bytes() if not path.is_symlink() else os.readlink(path).encode()
                except OSError:
                    out[str(path)] = None
        return out


def build(tmp: Path, *, git: bool = False, parent_repo: bool = False) -> Workspace:
    home, outside, ws = tmp / "home", tmp / "outside", tmp / "ws"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_KEY + "\n")
    outside.mkdir()
    (outside / OUTSIDE_NAME).write_text(OUTSIDE + "\n")
    (outside / "x.txt").write_text(OUTSIDE + "\n")
    (ws / "src").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\n")
    (ws / "b.txt").write_text("alpha\ngamma\n")
    (ws / "secret.txt").write_text(SECRET + "\n")
    (ws / ".env").write_text(SECRET + "\n")
    (ws / "src" / ".env").write_text(SECRET + "\n")
    (ws / "src" / "x.py").write_text("print('x')\n")
    (ws / "canary").write_text("keep me\n")
    (ws / "CLAUDE.md").write_text(MEMORY + "\n")
    (ws / "alias.txt").symlink_to("secret.txt")
    (ws / "escape").symlink_to(outside, target_is_directory=True)
    (ws / "link.txt").symlink_to(outside / OUTSIDE_NAME)
    (ws / "mem").symlink_to("CLAUDE.md")
    (ws / ".agent-bridge" / "agents").mkdir(parents=True)
    (ws / ".agent-bridge" / "settings.json").write_text(json.dumps(SETTINGS))
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "commands").mkdir(parents=True)
    evil = ws / "evil.sh"
    evil.write_text(f'#!/bin/sh\n: > {ws / "pwned"}\nif [ -f "$1" ]; then cat "$1"; else cat; fi\n')
    evil.chmod(0o755)
    (ws / "bin").mkdir()
    for name in ("ls", "git-x"):
        (ws / "bin" / name).write_text(f"#!/bin/sh\n: > {ws / 'pwned'}\n")  # no PATH needed
        (ws / "bin" / name).chmod(0o755)
    (ws / "script.sh").write_text("rm canary\n")
    (ws / "prog.awk").write_text('BEGIN { system("rm canary") }\n')
    (ws / "Makefile").write_text("all:\n\trm canary\n")
    for name, body in (("runner", 'exec "$@"'), ("runstr", 'exec sh -c "$*"')):  # runners the checker doesn't know
        (ws / name).write_text(f'#!/bin/sh\n[ "$1" = -x ] && shift\n{body}\n')
        (ws / name).chmod(0o755)
    (ws / "list").write_text("canary\n")
    (ws / "secretlist").write_text("secret.txt\n")
    (ws / "list0").write_bytes(b"secret.txt\0")
    (ws / "list0out").write_bytes(f"../outside/{OUTSIDE_NAME}\0".encode())
    (ws / "listout").write_text(f"../outside/{OUTSIDE_NAME}\n")
    digest = subprocess.run(["md5sum", f"../outside/{OUTSIDE_NAME}"], cwd=ws, capture_output=True, text=True).stdout
    (ws / "sumsout").write_text(digest)
    # checklists naming an outside file in the forms GNU `*sum -c` reads besides the plain one (issue 21: a
    # checksum verifier is a content oracle: its `OK` says a guess of the content is right)
    sha = _sha256(outside / "x.txt")
    blake = subprocess.run(
        ["b2sum", "-l", "256", "../outside/x.txt"], cwd=ws, capture_output=True, text=True
    ).stdout.split()[0]
    (ws / "sumsesc").write_text(f"\\{sha}  ../outside/x.txt\n")
    (ws / "sumsspace").write_text(f"  {sha}  ../outside/x.txt\n")
    (ws / "sumsone").write_text(f"{sha} ../outside/x.txt\n")
    (ws / "sumscrlf").write_bytes(f"{sha}  ../outside/x.txt\r\n".encode())
    (ws / "sumstag").write_text(f"SHA256 (../outside/x.txt) = {sha}\n")
    (ws / "sumstight").write_text(f"SHA256(../outside/x.txt)= {sha}\n")
    (ws / "b2tag").write_text(f"BLAKE2b-256 (../outside/x.txt) = {blake}\n")
    (ws / "sumsin").write_text(f"{sha}  ../outside/x.txt\n")  # fed through standard input
    (ws / "guess").write_text(OUTSIDE + "\n")
    (ws / "envlink").symlink_to("/proc/self/environ")
    (ws / "mark.sh").write_text(f"#!/bin/sh\n: > {ws / 'pwned'}\n")  # leaves the marker, reads nothing, exits
    (ws / "mark.sh").chmod(0o755)
    (ws / "sshcfg").write_text("Host x\n  ProxyCommand rm canary\n")
    (ws / "rgrc").write_text(f"--pre={ws / 'evil.sh'}\n")
    (ws / "gitcfg").write_text(f"[core]\n\tfsmonitor = {ws / 'evil.sh'}\n")
    (ws / "fakehome").mkdir()
    (ws / "fakehome" / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {ws / 'evil.sh'}\n")
    (ws / "xdg" / "git").mkdir(parents=True)
    (ws / "xdg" / "git" / "config").write_text(f"[core]\n\tfsmonitor = {ws / 'evil.sh'}\n")
    (ws / "magic").write_text("0\tstring\talpha\tAlpha text\n")
    (ws / "big.txt").write_text("".join(f"{i * 7919 % 100003}\n" for i in range(60_000)))
    found = Workspace(tmp, ws, outside, home)
    if git:
        _git(ws, "init", "-q")
        _git(ws, "add", "a.txt", "secret.txt", ".env")
        _git(ws, "commit", "-qm", "init")
        found.secret_blob = _git(ws, "rev-parse", "HEAD:secret.txt")
        (ws / "a.txt").write_text("alpha\nbeta\nchanged\n")  # a change for git diff
    if parent_repo:
        _git(tmp, "init", "-q")
        _git(tmp, "add", f"outside/{OUTSIDE_NAME}")
        _git(tmp, "commit", "-qm", "parent")
    return found


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _git(where: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_SYSTEM": "/dev/null",
    }
    return subprocess.run(["git", *args], cwd=where, env=env, check=True, capture_output=True, text=True).stdout.strip()


def engine(
    found: Workspace,
    mode: Mode = "default",
    *,
    allow: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    ask: tuple[str, ...] = (),
    interactive: bool = True,
) -> PermissionEngine:
    store = SettingsStore(found.ws, user_config_dir=found.tmp / "cfg", claude_home=found.home / ".claude")
    return PermissionEngine(
        cwd=found.ws,
        settings=store,
        grammar=GRAMMAR,
        mode=mode,
        session_rules=RuleSet.of(allow=allow, deny=deny, ask=ask),
        interactive=interactive,
    )


async def run_bash(found: Workspace, command: str) -> str:
    """The real Bash tool in the workspace; the output it returns."""
    supervisor = ProcessSupervisor()
    ctx = ToolContext(
        cwd=found.ws,
        abort=Abort(),
        data_dir=found.tmp / "data",
        tool_use_id="toolu_attack",
        services=Services(processes=supervisor),
    )
    try:
        result = await BashTool().call(BashInput(command=command, timeout=20_000), ctx)
        # what the command left running (`setsid …`, `… &`) gets to finish, bounded, before it is killed:
        # a control run proves its effect only once that is done
        await supervisor.wait_all_gone(10)
    finally:
        await supervisor.shutdown()
        reap_orphans()
    return str(result.content)


async def run_control(found: Workspace, command: str, env: dict[str, str] | None = None) -> str:
    """The command as a terminal would run it (`bash -c`, the commands' environment, no Bash tool, which stops
    what a command leaves behind once its shell exits): its output, once everything it started — `setsid`,
    `&`, `nohup` included — has ended (bounded). A control proves the attack's effect is real."""
    mark = uuid.uuid4().hex
    proc = await asyncio.create_subprocess_exec(
        *shell_argv(command),
        cwd=found.ws,
        env={**command_environment(), **(env or {}), "TEST_MARK": mark},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), 20)
        await poll(lambda: not marked_pids(mark), timeout=10)
    finally:
        for pid in marked_pids(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        reap_orphans()
    return output.decode(errors="replace")


def reap_orphans() -> None:
    """An attack's escaped processes reparent to us (the supervisor made us a subreaper) and die as our
    zombies once the supervisor is gone: reap them, so later tests see no zombies of ours."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == b"Z" and int(fields[1]) == me:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(name), os.WNOHANG)


def secret_forms() -> list[str]:
    return [SECRET, SSH_KEY, base64.b64encode((SECRET + "\n").encode()).decode()[:12]]


def effect_seen(found: Workspace, effect: str, before: dict[str, bytes | None], output: str) -> str | None:
    """What the attack achieved (None: nothing). `effect`: pwned | canary | secret | outside | environ (a
    secret-looking variable's value) | said:TEXT (an oracle's answer) | file:REL."""
    if effect == "pwned":
        hit = [p for p in (found.ws / "pwned", found.tmp / "pwned") if p.exists()]
        return f"{hit[0]} was created" if hit else None
    if effect == "canary":
        return None if (found.ws / "canary").exists() else "the canary was removed"
    if effect == "secret":
        shown = [s for s in secret_forms() if s in output]
        return f"the output shows {shown[0]}" if shown else None
    if effect == "environ":
        return "the output shows a secret from the environment" if ENV_SECRET in output else None
    if effect.startswith("said:"):
        return f"the output says {effect[5:]!r}" if effect[5:] in output else None
    if effect == "outside":
        shown = [s for s in (OUTSIDE, OUTSIDE_NAME) if s in output]
        return f"the output shows {shown[0]}" if shown else None
    if effect.startswith("file:"):
        path = str(found.ws / effect[5:])
        after = found.snapshot()
        if before.get(path) != after.get(path):
            return f"{effect[5:]} was written"
        return None
    raise ValueError(effect)


def tools_present(names: tuple[str, ...]) -> bool:
    path = os.environ.get("PATH", "") + os.pathsep + VENV_BIN
    return all(shutil.which(name, path=path) for name in names)


def setup_env(monkeypatch: Any, found: Workspace) -> None:
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(found.home))
    monkeypatch.setenv("OLDPWD", str(found.outside))
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + VENV_BIN)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "t")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "t@x")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "t")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@x")
