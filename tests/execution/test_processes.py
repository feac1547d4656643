"""The process supervisor: no descendant survives, exit codes are not stolen, output keeps flowing.

Survivors are checked independently of the supervisor: each test command exports a unique TEST_MARK and
/proc is scanned for live processes carrying it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator

import pytest

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
    mark = uuid.uuid4().hex
    proc, chunks = await spawn_marked(supervisor, ESCAPING, mark)
    await poll(lambda: len(marked_pids(mark)) >= 4)
    assert set(marked_pids(mark)) <= set(supervisor.live_pids())
    supervisor.terminate(proc)
    await poll(lambda: not marked_pids(mark))
    assert await supervisor.wait_all_gone(5)
    await poll(lambda: not our_zombies())
    assert b"started" in b"".join(chunks)


async def test_sigint_first_lets_a_command_clean_up(supervisor: ProcessSupervisor) -> None:
    proc, chunks = await spawn_marked(
        supervisor, "trap 'echo cleaned up; exit 7' INT; echo ready; while true; do sleep 0.05; done", uuid.uuid4().hex
    )
    await poll(lambda: b"ready" in b"".join(chunks))
    supervisor.terminate(proc)
    assert await proc.wait() == 7
    await supervisor.wait_all_gone(5)
    assert b"cleaned up" in b"".join(chunks)


async def test_force_kills_a_term_ignoring_tree_at_once(supervisor: ProcessSupervisor) -> None:
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, "trap '' TERM INT; setsid sleep 300 & echo go; sleep 300", mark)
    await poll(lambda: len(marked_pids(mark)) >= 2)
    supervisor.terminate(proc, force=True)
    # well before the 1 s a graceful escalation would take to reach SIGKILL
    await poll(lambda: not marked_pids(mark), timeout=0.8)


async def test_force_cuts_a_running_escalation_short(supervisor: ProcessSupervisor) -> None:
    mark = uuid.uuid4().hex
    proc, _ = await spawn_marked(supervisor, "trap '' TERM INT; sleep 300 & sleep 300", mark)
    await poll(lambda: len(marked_pids(mark)) >= 2)
    supervisor.terminate(proc)
    supervisor.terminate(proc, force=True)
    await poll(lambda: not marked_pids(mark), timeout=0.8)


async def test_shutdown_kills_everything(supervisor: ProcessSupervisor) -> None:
    marks = [uuid.uuid4().hex for _ in range(3)]
    for mark in marks:
        await spawn_marked(supervisor, ESCAPING, mark)
    await poll(lambda: all(len(marked_pids(m)) >= 4 for m in marks))
    await supervisor.shutdown()
    await poll(lambda: not any(marked_pids(m) for m in marks), timeout=3)
    assert supervisor.live_pids() == []


@linux_extras  # the subreaper
async def test_orphans_are_reaped_but_asyncio_children_keep_their_exit_code(supervisor: ProcessSupervisor) -> None:
    assert supervisor.subreaper
    mark = uuid.uuid4().hex
    # the subshell exits at once; its child reparents to us (the subreaper), then dies: a zombie of ours
    proc, _ = await spawn_marked(supervisor, "(sleep 0.2 &); sleep 300", mark)
    other = await asyncio.create_subprocess_exec("/bin/sh", "-c", "sleep 0.3; exit 5")
    [orphan] = await poll(lambda: [p for p in marked_pids(mark) if cmdline(p) == "sleep 0.2"])

    def swept_until_both_ended() -> bool:
        supervisor.live_pids()  # a sweep: reaps only zombies it knew as members
        return not os.path.exists(f"/proc/{orphan}") and other.returncode is not None

    await poll(swept_until_both_ended)  # the orphan's zombie reaped by a sweep, `other` by asyncio
    assert await other.wait() == 5
    supervisor.terminate(proc)
    assert await supervisor.wait_all_gone(5)
    await poll(lambda: not our_zombies())


async def test_wait_all_gone_and_live_pids_when_idle(supervisor: ProcessSupervisor) -> None:
    assert supervisor.live_pids() == []
    assert await supervisor.wait_all_gone(0.1)
    proc = await supervisor.spawn(shell_argv("exit 0"), cwd="/", env={})
    assert await proc.wait() == 0
    assert await supervisor.wait_all_gone(5)
