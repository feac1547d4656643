"""Nothing outlives the bridge: the registry of what runs, its watchdog, and the next start's clean-up.

A "bridge" here is a real child Python process using the real supervisor; it is killed with SIGKILL.
Survivors are found independently, through the TEST_MARK each test command exports.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bridge.execution.limits import backend as limits_backend
from bridge.execution.registry import EXIT_GRACE, TOKEN_ENV, kill_registered, reap_leftovers, start_time
from bridge.execution.sandbox import probe
from bridge.execution.supervisor import ProcessSupervisor, command_environment, shell_argv
from tests.execution.test_processes import ESCAPING, marked_pids, our_zombies, reap_zombies_among
from tests.poll import poll

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")

ROOT = Path(__file__).resolve().parent.parent


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def registry_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "running").glob("*.json"))


def watchdogs(data_dir: Path) -> list[int]:
    """Live watchdogs of bridges on `data_dir` (their command line names its registry)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if b"--watch" in argv and any(str(data_dir / "running").encode() in a for a in argv) and alive(int(name)):
                found.append(int(name))
    return found


async def reap_what_a_dead_bridge_left(data_dir: Path) -> None:
    """A killed bridge's children (its watchdog, its shells) are orphaned to this process when it is a
    subreaper; once its watchdog is done, reap their zombies (no test leaves zombies for the next)."""
    await poll(lambda: not watchdogs(data_dir))
    reap_zombies_among(set(our_zombies()))


async def test_the_registry_names_what_runs_and_goes_when_it_is_done(tmp_path: Path) -> None:
    supervisor = ProcessSupervisor(data_dir=tmp_path)
    mark = uuid.uuid4().hex
    proc = await supervisor.spawn(shell_argv(f"export TEST_MARK={mark}; sleep 300"), cwd="/", env=command_environment())
    (file,) = registry_files(tmp_path)
    data = json.loads(file.read_text())
    assert data["tokens"] == [proc.token]
    assert [proc.pid, start_time(proc.pid)] in data["processes"]
    assert file.name == f"{os.getpid()}-{start_time(os.getpid())}.json"
    watchdog = supervisor.registry.watchdog_pid if supervisor.registry else None
    assert watchdog is not None and alive(watchdog)
    supervisor.terminate(proc)
    assert await supervisor.wait_gone(proc, 5)
    await poll(lambda: not registry_files(tmp_path))
    await supervisor.shutdown()
    await poll(lambda: not alive(watchdog))


async def test_a_clean_shutdown_lets_the_watchdog_go_at_once(tmp_path: Path) -> None:
    """The bridge exits right after its shutdown: neither it nor the watchdog waits out EXIT_GRACE for the
    other (the watchdog hears "released", not only the pipe closing)."""
    supervisor = ProcessSupervisor(data_dir=tmp_path)
    proc = await supervisor.spawn(shell_argv("true"), cwd="/", env=command_environment())
    assert await supervisor.wait_gone(proc, 10)
    watchdog = supervisor.registry.watchdog_pid if supervisor.registry else None
    assert watchdog is not None and alive(watchdog)
    started = time.monotonic()
    await supervisor.shutdown()
    assert time.monotonic() - started < EXIT_GRACE / 2
    assert not alive(watchdog) and not registry_files(tmp_path)


def start(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, **kwargs)


def spawn_escaped(mark: str, token: str | None) -> None:
    """A double-forked, setsid'd process that is nobody's child: what escapes a killed bridge."""
    env = {**os.environ, "TEST_MARK": mark}
    if token is not None:
        env[TOKEN_ENV] = token
    subprocess.run(["/bin/sh", "-c", "(setsid sleep 300 &) ; (trap '' TERM; sleep 301 &)"], env=env, check=True)


def settled(mark: str) -> list[int]:
    """The marked processes that have become `sleep`. One still exec'ing (the shell into setsid, setsid into
    sleep) can briefly show an empty environment, so a count taken before both settle is not a count to keep."""
    found = []
    for pid in marked_pids(mark):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                if fh.read().strip() == "sleep":
                    found.append(pid)
        except OSError:
            continue
    return found


async def test_the_next_start_kills_what_escaped_but_never_a_reused_pid(tmp_path: Path) -> None:
    by_token, by_pid = uuid.uuid4().hex, uuid.uuid4().hex
    token = uuid.uuid4().hex
    spawn_escaped(by_token, token)
    await poll(lambda: len(settled(by_token)) >= 2)
    # one with no token at all (its environment was cleared), known by pid and start time only
    lone = start(["/usr/bin/env", "-i", f"TEST_MARK={by_pid}", "sleep", "300"], start_new_session=True)
    # a live process whose pid the registry names with another start time: a reused pid
    unrelated = start(["sleep", "300"], start_new_session=True)
    await poll(lambda: len(marked_pids(by_token)) >= 2 and marked_pids(by_pid))
    seen = set(marked_pids(by_token))
    gone = start(["true"])  # a bridge that no longer runs
    gone.wait()
    running = tmp_path / "running"
    running.mkdir()
    lone_start, unrelated_start = start_time(lone.pid), start_time(unrelated.pid)
    assert lone_start is not None and unrelated_start is not None
    (running / f"{gone.pid}-1.json").write_text(
        json.dumps(
            {
                "bridge": [gone.pid, 1],
                "tokens": [token],
                "processes": [[lone.pid, lone_start], [unrelated.pid, unrelated_start + 12345]],
                "cleanup": [],
            }
        )
    )
    killed = reap_leftovers(tmp_path)
    await poll(lambda: not marked_pids(by_token) and not marked_pids(by_pid))
    assert lone.wait(5) == -signal.SIGKILL
    assert alive(unrelated.pid) and unrelated.pid not in killed
    assert not registry_files(tmp_path)
    unrelated.kill()
    unrelated.wait()
    reap_zombies_among(seen)


async def test_a_live_bridges_registry_is_left_alone(tmp_path: Path) -> None:
    mark, token = uuid.uuid4().hex, uuid.uuid4().hex
    spawn_escaped(mark, token)
    await poll(lambda: len(settled(mark)) >= 2)
    seen = set(marked_pids(mark))
    me = os.getppid()  # a live process (the one that started pytest) standing for a live bridge
    running = tmp_path / "running"
    running.mkdir()
    file = running / f"{me}-{start_time(me)}.json"
    file.write_text(json.dumps({"bridge": [me, start_time(me)], "tokens": [token], "processes": [], "cleanup": []}))
    assert reap_leftovers(tmp_path) == []
    assert len(marked_pids(mark)) >= 2 and file.exists()
    file.write_text(file.read_text().replace(f"-{start_time(me)}", "-1"))
    file.rename(running / f"{me}-1.json")  # the same pid with another start time: that bridge is dead
    reap_leftovers(tmp_path)
    await poll(lambda: not marked_pids(mark))
    reap_zombies_among(seen)


async def test_a_process_caught_in_the_middle_of_an_exec_is_still_found(tmp_path: Path) -> None:
    """A process in the middle of an `execve` reads as an empty environment (the file holds the memory the exec just
    dropped): the clean-up took that for "not ours", saw nothing left to kill, and left it running (5 to 15 of 40
    tries before the fix). A process that execs itself again and again is often caught in the middle of one."""
    loop = tmp_path / "loop.sh"
    loop.write_text('exec /bin/sh "$0"\n')
    for _ in range(25):
        token = uuid.uuid4().hex
        proc = start(["/bin/sh", str(loop)], env={**os.environ, TOKEN_ENV: token}, start_new_session=True)
        try:
            await poll(functools.partial(looping, proc.pid, loop))
            assert proc.pid in kill_registered([token], [], born=start_time(os.getpid()))
            assert proc.wait(5) == -signal.SIGKILL
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def looping(pid: int, script: Path) -> bool:
    """The process runs `script` (once: after that, it is always that script or about to be)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return str(script).encode() in fh.read()
    except OSError:
        return False


BRIDGE = textwrap.dedent("""
    import asyncio, os, subprocess, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from bridge.execution.supervisor import ProcessSupervisor, command_environment, shell_argv

    async def main():
        data, mark, sandboxed = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
        supervisor = ProcessSupervisor(data_dir=data)
        sandbox = None
        if sandboxed:
            from bridge.permissions.engine import PermissionEngine
            from bridge.permissions.settings import SettingsStore
            from bridge.execution.sandbox import Sandbox
            from bridge.tools.registry import rule_grammar
            ws = data / "ws"
            ws.mkdir()
            store = SettingsStore(ws, user_config_dir=data / "config", claude_home=data / "claude")
            sandbox = Sandbox.for_engine(PermissionEngine(cwd=ws, settings=store, grammar=rule_grammar()))
        command = f"export TEST_MARK={{mark}}; " + {escaping!r}
        await supervisor.spawn(shell_argv(command), cwd=data, env=command_environment(), sandbox=sandbox)
        server = supervisor.track_external("mcp")  # an MCP server a library started
        subprocess.Popen(["sh", "-c", "sleep 302 & sleep 303"], env={{**os.environ, "TEST_MARK": mark, **server.env}},
                         start_new_session=True)
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())
""")


@pytest.mark.parametrize("sandboxed", [False, True], ids=["bare", "sandboxed"])
async def test_a_killed_bridge_leaves_nothing_running(tmp_path: Path, sandboxed: bool) -> None:
    if sandboxed and not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    mark = uuid.uuid4().hex
    script = BRIDGE.format(root=str(ROOT), escaping=ESCAPING)
    bridge = start(
        [sys.executable, "-c", script, str(tmp_path), mark, "1" if sandboxed else "0"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert bridge.stdout is not None
    assert bridge.stdout.readline() == b"ready\n"
    await poll(lambda: len(marked_pids(mark)) >= 6, timeout=10)
    if sandboxed:  # the sandbox makes no placeholders for protected paths; the command's cgroups are noted
        assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == []
        cgroups = [
            Path(e["path"])
            for f in registry_files(tmp_path)
            for e in json.loads(f.read_text())["cleanup"]
            if e["kind"] == "cgroup"
        ]
        assert all(c.is_dir() for c in cgroups)
        assert cgroups or limits_backend() not in ("cgroup1", "cgroup2")
    bridge.kill()
    killed_at = time.monotonic()
    bridge.wait()
    bridge.stdout.close()
    await poll(lambda: not marked_pids(mark), timeout=2.0), marked_pids(mark)
    assert time.monotonic() - killed_at <= 2.0
    await poll(lambda: not registry_files(tmp_path))
    await reap_what_a_dead_bridge_left(tmp_path)
    if sandboxed:
        assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == []
        assert not any(c.exists() for c in cgroups)  # the command's cgroups were removed too


async def test_the_watchdog_started_ahead_watches_the_first_command_and_goes_at_a_clean_exit(tmp_path: Path) -> None:
    """`warm_up` (off the loop, while a front end loads) starts the watchdog before any command, so the first
    command's start doesn't wait for it (issue 26 item 3); the first command is then in the registry it watches,
    and a clean shutdown still lets it go at once."""
    supervisor = ProcessSupervisor(data_dir=tmp_path)
    assert supervisor.registry is not None and supervisor.registry.watchdog_pid is None  # the control
    await asyncio.to_thread(supervisor.warm_up)
    watchdog = supervisor.registry.watchdog_pid
    assert watchdog is not None and alive(watchdog)
    assert not registry_files(tmp_path)  # nothing to name yet
    proc = await supervisor.spawn(shell_argv("sleep 300"), cwd="/", env=command_environment())
    (file,) = registry_files(tmp_path)
    assert json.loads(file.read_text())["tokens"] == [proc.token]
    assert supervisor.registry.watchdog_pid == watchdog  # the same one, not a second
    supervisor.terminate(proc)
    assert await supervisor.wait_gone(proc, 5)
    started = time.monotonic()
    await supervisor.shutdown()
    assert time.monotonic() - started < EXIT_GRACE / 2
    assert not alive(watchdog) and not registry_files(tmp_path)
