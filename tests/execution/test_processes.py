"""The process supervisor: no descendant survives, exit codes are not stolen, output keeps flowing.

Survivors are checked independently of the supervisor: each test command exports a unique TEST_MARK and
/proc is scanned for live processes carrying it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.execution import proctable, signals
from bridge.execution import supervisor as processes
from bridge.execution.supervisor import ManagedProcess, ProcessSupervisor, command_environment, shell_argv
from tests.platforms import linux_extras
from tests.poll import poll

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")


def marked_pids(mark: str) -> list[int]:
    """Live (non-zombie) processes whose environment carries TEST_MARK=mark."""
    wanted = f"TEST_MARK={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in env and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def our_children() -> set[int]:
    """Every process whose parent is this one, live or zombie: a test's baseline (as a subreaper, this process
    also inherits other tests' orphans, which may die and lie here as zombies while a later test runs)."""
    me = os.getpid()
    found = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    if int(fh.read().rsplit(b")", 1)[1].split()[1]) == me:
                        found.add(int(name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def our_zombies() -> list[int]:
    me = os.getpid()
    zombies = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == b"Z" and int(fields[1]) == me:
                zombies.append(int(name))
    return zombies


def reap_zombies_among(pids: set[int]) -> None:
    """Reap our zombies among `pids` (processes a test saw, orphaned to this process as the subreaper and
    killed by someone else): left alone, they would count as this process's leaked zombies later."""
    for pid in set(our_zombies()) & pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return int(fh.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


ESCAPING = (
    "setsid sleep 300 & "  # a new session: leaves the process group
    "(trap '' TERM INT; sleep 300; sleep 300) & "  # ignores the polite signals
    "(nohup sleep 300 >/dev/null 2>&1 &) ; "  # double fork: reparented away from the shell
    "echo started; sleep 300"
)


@pytest.fixture
async def supervisor() -> AsyncIterator[ProcessSupervisor]:
    sup = ProcessSupervisor()
    yield sup
    await sup.shutdown()


async def spawn_marked(sup: ProcessSupervisor, command: str, mark: str) -> tuple[ManagedProcess, list[bytes]]:
    proc = await sup.spawn(shell_argv(f"export TEST_MARK={mark}; {command}"), cwd="/", env=command_environment())
    chunks: list[bytes] = []
    proc.on_output = chunks.append
    return proc, chunks


async def test_output_is_merged_in_order_and_exit_code_kept(supervisor: ProcessSupervisor) -> None:
    proc = await supervisor.spawn(shell_argv("echo one; echo two >&2; echo three; exit 4"), cwd="/", env={})
    chunks: list[bytes] = []
    proc.on_output = chunks.append
    assert await proc.wait() == 4
    await asyncio.wait_for(proc.wait_closed(), 5)
    assert b"".join(chunks) == b"one\ntwo\nthree\n"


async def test_stdin_is_devnull_and_own_session(supervisor: ProcessSupervisor) -> None:
    proc = await supervisor.spawn(shell_argv("cat; ps -o sid= -p $$; echo $$"), cwd="/tmp", env=command_environment())
    chunks: list[bytes] = []
    proc.on_output = chunks.append
    assert await proc.wait() == 0
    await proc.wait_closed()
    sid, pid = b"".join(chunks).split()
    assert sid == pid  # start_new_session: the shell leads its session (and so its group)
    assert os.getsid(0) != int(pid)


async def test_escaping_descendants_all_die_on_terminate(supervisor: ProcessSupervisor) -> None:
    earlier = our_children()  # this test process is a subreaper: other tests' orphans are not this test's
    mark = uuid.uuid4().hex
    proc, chunks = await spawn_marked(supervisor, ESCAPING, mark)
    await poll(lambda: len(marked_pids(mark)) >= 4)
    assert set(marked_pids(mark)) <= set(supervisor.live_pids())
    supervisor.terminate(proc)
    await poll(lambda: not marked_pids(mark))
    assert await supervisor.wait_all_gone(5)
    await poll(lambda: not set(our_zombies()) - earlier)
    assert b"started" in b"".join(chunks)


CLEANS_UP = "trap 'echo cleaned up; exit 7' INT; echo ready; while true; do sleep 0.05; done"


async def test_sigint_first_lets_a_command_clean_up(supervisor: ProcessSupervisor) -> None:
    proc, chunks = await spawn_marked(supervisor, CLEANS_UP, uuid.uuid4().hex)
    await poll(lambda: b"ready" in b"".join(chunks))
    supervisor.terminate(proc)
    assert await proc.wait() == 7
    await supervisor.wait_all_gone(5)
    assert b"cleaned up" in b"".join(chunks)


@pytest.mark.parametrize("reset", [True, False], ids=["reset", "control"])
async def test_a_bridge_started_with_sigint_ignored_still_lets_commands_clean_up(
    supervisor: ProcessSupervisor, monkeypatch: pytest.MonkeyPatch, reset: bool
) -> None:
    """A background job of a script starts with SIGINT ignored, and its commands would inherit that (a shell
    cannot trap a signal ignored when it started): their clean-up never ran, SIGTERM ended them (exit -15) —
    what two test runs started with `&` saw as a flaky test. The control: without the reset, exactly that."""
    if not reset:
        monkeypatch.setattr(signals, "default_signals_prefix", lambda: [])
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc, chunks = await spawn_marked(supervisor, CLEANS_UP, uuid.uuid4().hex)
    finally:
        signal.signal(signal.SIGINT, previous)
    await poll(lambda: b"ready" in b"".join(chunks))
    supervisor.terminate(proc)
    if reset:
        assert await proc.wait() == 7 and b"cleaned up" in b"".join(chunks)
    else:
        assert await proc.wait() == -signal.SIGTERM and b"cleaned up" not in b"".join(chunks)
    await supervisor.wait_all_gone(5)


@pytest.fixture
def slow_escalation(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graceful escalation that would take minutes to reach SIGKILL: a tree that ignores SIGINT and SIGTERM
    and dies within the poll's bound was killed without waiting for it — however slow the machine is (a bound
    set below the real 1 s escalation measured the scheduler as much as the supervisor)."""
    monkeypatch.setattr(processes, "SIGINT_GRACE", 120.0)
    monkeypatch.setattr(processes, "SIGTERM_GRACE", 120.0)


async def test_force_kills_a_term_ignoring_tree_at_once(supervisor: ProcessSupervisor, slow_escalation: None) -> None:
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, "trap '' TERM INT; setsid sleep 300 & echo go; sleep 300", mark)
    await poll(lambda: len(marked_pids(mark)) >= 2)
    supervisor.terminate(proc, force=True)
    await poll(lambda: not marked_pids(mark), timeout=20)  # long before the 240 s the escalation would take


async def test_force_cuts_a_running_escalation_short(supervisor: ProcessSupervisor, slow_escalation: None) -> None:
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, "trap '' TERM INT; sleep 300 & sleep 300", mark)
    await poll(lambda: len(marked_pids(mark)) >= 2)
    supervisor.terminate(proc)
    await poll(lambda: supervisor._terminations.get(proc.pid) is not None)  # the escalation is under way
    supervisor.terminate(proc, force=True)
    await poll(lambda: not marked_pids(mark), timeout=20)


async def test_the_control_a_graceful_stop_waits_for_the_escalation(
    supervisor: ProcessSupervisor, slow_escalation: None
) -> None:
    """Without force the same tree outlives the tests' bound above: what they see is force, not the escalation."""
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, "trap '' TERM INT; sleep 300 & sleep 300", mark)
    await poll(lambda: len(marked_pids(mark)) >= 2)
    supervisor.terminate(proc)
    with pytest.raises(TimeoutError):
        await poll(lambda: not marked_pids(mark), timeout=1.5)
    supervisor.terminate(proc, force=True)


async def test_shutdown_kills_everything(supervisor: ProcessSupervisor) -> None:
    marks = [uuid.uuid4().hex for _ in range(3)]
    for mark in marks:
        await spawn_marked(supervisor, ESCAPING, mark)
    await poll(lambda: all(len(marked_pids(m)) >= 4 for m in marks))
    await supervisor.shutdown()
    await poll(lambda: not any(marked_pids(m) for m in marks), timeout=3)
    assert supervisor.live_pids() == []


@linux_extras  # the subreaper
async def test_orphans_are_reaped_but_asyncio_children_keep_their_exit_code(
    supervisor: ProcessSupervisor, tmp_path: Path
) -> None:
    assert supervisor.subreaper
    earlier = our_children()  # other tests' orphans, reparented to this subreaper: not this test's
    mark = uuid.uuid4().hex
    # the subshell exits at once; its child reparents to us (the subreaper), then dies when told: a zombie of
    # ours. (Told, not timed: a child that lived 0.2 s could die before a loaded machine's first look at /proc.)
    ends = tmp_path / "end"
    wait = f"until [ -e {ends} ]; do sleep 0.02; done"
    proc, _ = await spawn_marked(supervisor, f"(sh -c '{wait}' &); sleep 300", mark)
    other = await asyncio.create_subprocess_exec("/bin/sh", "-c", f"{wait}; exit 5")
    [orphan] = await poll(
        lambda: [p for p in marked_pids(mark) if cmdline(p) == f"sh -c {wait}" and parent(p) == os.getpid()]
    )  # (its `sleep`s, forked, wear its name a moment)
    ends.touch()

    def swept_until_both_ended() -> bool:
        supervisor.live_pids()  # a sweep: reaps only zombies it knew as members
        return not os.path.exists(f"/proc/{orphan}") and other.returncode is not None

    await poll(swept_until_both_ended)  # the orphan's zombie reaped by a sweep, `other` by asyncio
    assert await other.wait() == 5
    supervisor.terminate(proc)
    assert await supervisor.wait_all_gone(5)
    await poll(lambda: not set(our_zombies()) - earlier)


async def test_wait_all_gone_and_live_pids_when_idle(supervisor: ProcessSupervisor) -> None:
    assert supervisor.live_pids() == []
    assert await supervisor.wait_all_gone(0.1)
    proc = await supervisor.spawn(shell_argv("exit 0"), cwd="/", env={})
    assert await proc.wait() == 0
    assert await supervisor.wait_all_gone(5)


@pytest.mark.parametrize(
    ("raw", "grace", "warned"),
    [
        (None, 1.0, False),
        ("4", 4.0, False),
        ("0.5", 0.5, False),
        ("0", 1.0, True),
        ("soon", 1.0, True),
        ("nan", 1.0, True),
    ],
)
def test_the_stop_grace_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, raw: str | None, grace: float, warned: bool
) -> None:
    """AGENT_BRIDGE_STOP_GRACE: how long a stopped command gets before SIGKILL; a bad value is said and ignored."""
    if raw is None:
        monkeypatch.delenv(processes.STOP_GRACE_ENV, raising=False)
    else:
        monkeypatch.setenv(processes.STOP_GRACE_ENV, raw)
    with caplog.at_level("WARNING", logger=processes.__name__):
        assert processes.stop_grace() == grace
    assert bool([r for r in caplog.records if processes.STOP_GRACE_ENV in r.getMessage()]) == warned


async def test_a_wider_stop_grace_delays_the_escalation(tmp_path: Path) -> None:
    """The grace is what the escalation waits: with 4 s, SIGTERM comes 1.2 s after SIGINT (30%), not 0.3 s —
    timed by the command's own traps in a bridge process started with the variable."""
    log = tmp_path / "signals.log"
    script = (
        "import asyncio\n"
        "from bridge.execution.supervisor import ProcessSupervisor, command_environment, shell_argv\n"
        "async def main():\n"
        "    supervisor = ProcessSupervisor()\n"
        # bash's own clock, not `date`: a `date` the trap starts is in the group, and the second SIGINT killed it
        f"    cmd = \"trap 'echo INT $EPOCHREALTIME >> {log}' INT; trap 'echo TERM $EPOCHREALTIME >> {log}' TERM; "
        'echo go; while :; do sleep 0.05; done"\n'
        "    proc = await supervisor.spawn(shell_argv(cmd), cwd='/', env=command_environment())\n"
        "    started = asyncio.Event()\n"
        "    proc.on_output = lambda chunk: started.set()\n"
        "    await started.wait()\n"
        "    supervisor.terminate(proc)\n"
        "    await proc.wait()\n"
        "    await supervisor.wait_all_gone(30)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, processes.STOP_GRACE_ENV: "4"}
    done = await asyncio.create_subprocess_exec(sys.executable, "-c", script, env=env)
    assert await asyncio.wait_for(done.wait(), 60) == 0
    # SIGINT may be seen twice (the group's and the shell's own, a millisecond apart): the first of each counts
    stamps: dict[str, float] = {}
    for line in log.read_text().splitlines():
        name, stamp = line.split()
        stamps.setdefault(name, float(stamp))
    assert set(stamps) == {"INT", "TERM"} and stamps["TERM"] - stamps["INT"] >= 1.0, log.read_text()


async def test_the_environments_of_processes_older_than_the_bridge_are_never_read(
    supervisor: ProcessSupervisor,
) -> None:
    """The tracking token is only in what our commands started, all of it younger than this process: reading every
    older process's environment made the first sweep on a busy machine tens of milliseconds (issue 26)."""
    born = proctable.start_time(os.getpid())
    assert born is not None
    assert any(info.start < born for info in proctable.scan().values())  # (init, at least)
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, ESCAPING, mark)
    await poll(lambda: len(marked_pids(mark)) >= 4)
    assert set(marked_pids(mark)) <= set(supervisor.live_pids())  # what escaped is still found by its token
    assert not [key for key in supervisor._env_tokens if key[1] < born]
    supervisor.terminate(proc)
    assert await supervisor.wait_all_gone(5)
