"""No process outlives the bridge (issue 11): `kill -9` of `agent-bridge serve` mid-command.

The command runs through the offline `playground` model (`run: CMD`) and leaves a tree that escapes every
easy kill: a setsid'd child, a double fork, a TERM-ignoring subshell. Survivors are found through the
TEST_MARK the command exports, independently of the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bridge.execution.registry import start_time
from bridge.execution.sandbox import probe
from tests.e2e.harness import Editor, poll, running_editor
from tests.e2e.test_mcp import FIXTURE as MCP_FIXTURE
from tests.execution.test_process_registry import reap_what_a_dead_bridge_left, watchdogs
from tests.execution.test_processes import ESCAPING, marked_pids
from tests.platforms import linux_extras


def sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


async def kill_9(editor: Editor) -> None:
    """`kill -9` the bridge and wait until it is reaped (so the editor does not try to shut it down)."""
    editor.kill_server()
    assert editor.client._server is not None
    await asyncio.wait_for(editor.client._server.wait(), 10)


async def start_escaping_command(editor: Editor, mark: str) -> None:
    sid = await editor.new_session()
    editor.start_prompt(sid, f"run: export TEST_MARK={mark}; {ESCAPING}")
    await editor.wait_for_output(sid, "started")
    await poll(lambda: len(marked_pids(mark)) >= 4, what="the command's whole tree")


@pytest.mark.parametrize("sandbox", ["1", "0"], ids=["sandboxed", "unsandboxed"])
async def test_kill_9_of_the_bridge_kills_its_commands_within_2_s(
    workspace: Path, data_dir: Path, sandbox: str
) -> None:
    if sandbox == "1" and not probe().ok:
        pytest.skip(f"bubblewrap cannot run here: {probe().reason}")
    mark = uuid.uuid4().hex
    async with running_editor(
        "playground",
        workspace,
        data_dir,
        env={"AGENT_BRIDGE_SANDBOX": sandbox},
        initialization_options={"permissionMode": "bypassPermissions"},
    ) as editor:
        await start_escaping_command(editor, mark)
        killed = time.monotonic()
        await kill_9(editor)
        await poll(lambda: not marked_pids(mark), timeout=2.0, what="every process of the command to die")
        assert time.monotonic() - killed <= 2.0
    await reap_what_a_dead_bridge_left(data_dir)


async def test_what_escapes_is_killed_by_the_next_bridge_but_a_reused_pid_is_not(
    workspace: Path, data_dir: Path
) -> None:
    """The kernel's help and the watchdog both defeated: an unsandboxed command (its double-forked
    children have no parent-death signal) and the watchdog killed together with the bridge."""
    mark = uuid.uuid4().hex
    unrelated = sleeper()
    try:
        async with running_editor(
            "playground",
            workspace,
            data_dir,
            env={"AGENT_BRIDGE_SANDBOX": "0"},
            initialization_options={"permissionMode": "bypassPermissions"},
        ) as editor:
            await start_escaping_command(editor, mark)
            [watchdog] = await poll(lambda: watchdogs(data_dir), what="the watchdog")
            os.kill(watchdog, signal.SIGKILL)
            await kill_9(editor)
            await poll(lambda: not watchdogs(data_dir), what="the watchdog to die")
        survivors = marked_pids(mark)
        assert survivors, "the escape worked: something outlived the bridge"
        [registry] = list((data_dir / "running").glob("*.json"))
        data = json.loads(registry.read_text())
        start = start_time(unrelated.pid)
        assert start is not None
        data["processes"].append([unrelated.pid, start + 9999])  # the same pid, another process
        registry.write_text(json.dumps(data))

        async with running_editor("playground", workspace, data_dir, env={"AGENT_BRIDGE_SANDBOX": "0"}) as editor:
            await editor.new_session()  # the bridge starts its agent on this data dir (answered maybe before that)
            await poll(lambda: not marked_pids(mark), timeout=5, what="the leftovers to be killed")
            await poll(lambda: not registry.exists(), timeout=5, what="the dead bridge's registry to go")
            assert unrelated.poll() is None, "a reused pid is never killed"
        await reap_what_a_dead_bridge_left(data_dir)
    finally:
        unrelated.kill()
        unrelated.wait()
        with contextlib.suppress(ProcessLookupError):
            for pid in marked_pids(mark):
                os.kill(pid, signal.SIGKILL)


def escaping_mcp_server(mark: str, log: Path) -> dict[str, Any]:
    """A real MCP server (the SDK fixture) that ignores SIGTERM and SIGHUP and leaves a setsid'd child and a
    TERM-ignoring one behind: the SDK's own shutdown would never get to run."""
    script = (
        f"export TEST_MARK={mark}; setsid sleep 300 & (trap '' TERM INT; sleep 300) & "
        f"trap '' TERM HUP; exec {shlex.quote(sys.executable)} {shlex.quote(MCP_FIXTURE)}"
    )
    return {
        "name": "stubborn",
        "command": "sh",
        "args": ["-c", script],
        "env": [{"name": "MCP_FIXTURE_LOG", "value": str(log)}],
    }


@pytest.mark.parametrize("watchdog", ["alive", pytest.param("killed", marks=linux_extras)])  # killed: pdeathsig
async def test_kill_9_of_the_bridge_kills_its_mcp_servers(workspace: Path, data_dir: Path, watchdog: str) -> None:
    """Within 2 s by the kernel and the watchdog; with the watchdog killed too, the server itself still dies
    (parent-death signal) and what it forked is killed by the next bridge on the same data dir."""
    mark = uuid.uuid4().hex
    try:
        async with running_editor(
            "playground", workspace, data_dir, initialization_options={"mcp": {"turnWait": 120}}
        ) as editor:
            await editor.new_session(mcp_servers=[escaping_mcp_server(mark, workspace.parent / "mcp.log")])
            await poll(lambda: (workspace.parent / "mcp.log").exists(), timeout=120, what="the server to start")
            await poll(lambda: len(marked_pids(mark)) >= 3, what="the server and its children")
            if watchdog == "killed":
                [dog] = await poll(lambda: watchdogs(data_dir), what="the watchdog")
                os.kill(dog, signal.SIGKILL)
            killed = time.monotonic()
            await kill_9(editor)
            if watchdog == "alive":
                await poll(lambda: not marked_pids(mark), timeout=2.0, what="the MCP server and its children to die")
                assert time.monotonic() - killed <= 2.0
            else:
                await poll(lambda: len(marked_pids(mark)) == 2, timeout=2.0, what="the server itself to die")
        if watchdog == "killed":
            async with running_editor("playground", workspace, data_dir) as editor:
                await editor.new_session()  # the next bridge on this data dir
                await poll(lambda: not marked_pids(mark), timeout=5, what="the server's children to be killed")
        await reap_what_a_dead_bridge_left(data_dir)
    finally:
        for pid in marked_pids(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
