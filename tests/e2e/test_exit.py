"""Ending the process: SIGINT and SIGTERM, in `run` and in `serve`, cancel the turn, give a running command its
SIGINT -> SIGTERM -> SIGKILL escalation, leave no process behind and the transcript on disk; a finished run
ends at once with its exit code."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.offline import OfflineServer
from tests.e2e.harness import pid_alive, poll, running_editor, server_env, text_response, tool_response


def trapping_command(ws: Path) -> tuple[str, Path, Path]:
    """A command that records SIGINT and SIGTERM and survives both (only SIGKILL ends it); it writes its pid
    (the sandbox's: find it with `running`) when it has set its traps."""
    log, pid = ws / "signals.log", ws / "pid"
    # An executable file run by its path: `trap` on a command line, or `sh FILE`, make the permission layer ask
    # (it can't see what a script does), and `run --non-interactive` denies what asks.
    script = ws / "traps.sh"
    script.write_text(
        f"#!/bin/sh\ntrap 'echo INT >> {log}' INT\ntrap 'echo TERM >> {log}' TERM\n"
        f"echo $$ > {pid}\nwhile true; do sleep 0.02; done\n"
    )
    script.chmod(0o755)
    return str(script), log, pid


# The escalation's grace, widened for the tests that watch it run its course: a shell's trap that runs a beat
# late on a loaded machine must still land before SIGKILL (the order, not the default 1 s, is what they check).
GRACE_ENV = {"AGENT_BRIDGE_STOP_GRACE": "4"}


async def start_run(
    model: OfflineServer, ws: Path, data: Path, *args: str, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        "run",
        "go",
        "--non-interactive",
        "--cwd",
        str(ws),
        "--allow",
        "Bash",
        *args,
        env={**server_env(model, data), **(env or {})},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


def running(command: str) -> list[int]:
    """Live processes (not zombies) running `command` (a unique path), seen from here."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command.encode() in cmdline and pid_alive(int(name)):
            found.append(int(name))
    return found


def transcript_messages(data: Path) -> list[dict[str, Any]]:
    (path,) = (data / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r["message"] for r in records if r["type"] == "message"]


async def test_a_finished_run_exits_with_its_code_and_its_transcript(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": [text_response("all done")]}) as model:
        process = await start_run(model, workspace, data_dir)
        out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0 and "all done" in out.decode()
    assert [m["role"] for m in transcript_messages(data_dir)] == ["user", "assistant"]


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_signal_while_text_streams_cancels_and_exits(
    workspace: Path, data_dir: Path, signum: int, code: int
) -> None:
    slow = {
        "content": [{"type": "text", "text": "word " * 300, "chunks": 300, "delay_ms": 20}],
        "stop_reason": "end_turn",
    }
    with OfflineServer({"responses": [slow]}) as model:
        process = await start_run(model, workspace, data_dir)
        assert process.stdout
        line = await asyncio.wait_for(process.stdout.readuntil(b"word word"), 60)
        assert line
        process.send_signal(signum)
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == code
    messages = transcript_messages(data_dir)
    assert messages[-1]["role"] == "user" and "interrupted" in json.dumps(messages[-1]).lower(), messages


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_signal_during_a_command_waits_for_its_escalation(
    workspace: Path, data_dir: Path, signum: int, code: int
) -> None:
    command, log, pid_file = trapping_command(workspace)
    with OfflineServer({"responses": [tool_response(("Bash", {"command": command}))]}) as model:
        process = await start_run(model, workspace, data_dir, env=GRACE_ENV)
        await poll(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=60, what="the command")
        assert running(command)
        process.send_signal(signum)
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == code
    assert log.read_text().split() == ["INT", "TERM"]  # the grace ran its course before SIGKILL
    assert not running(command)


async def test_serve_on_sigterm_cancels_the_turn_and_leaves_nothing(workspace: Path, data_dir: Path) -> None:
    command, log, pid_file = trapping_command(workspace)
    responses = [tool_response(("Bash", {"command": command})), text_response("never")]
    async with running_editor({"responses": responses}, workspace, data_dir, env=GRACE_ENV) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "go")
        await poll(lambda: pid_file.exists() and pid_file.read_text().strip(), timeout=60, what="the command")
        assert running(command)
        server = editor.client._server
        assert server is not None
        server.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(turn, 30) == {"stopReason": "cancelled"}
        await asyncio.wait_for(server.wait(), 30)
        assert server.returncode == 143
    assert log.read_text().split() == ["INT", "TERM"]
    assert not running(command)
    messages = transcript_messages(data_dir)
    assert messages[1]["content"][-1]["type"] == "tool_use" and messages[2]["content"][0]["type"] == "tool_result"


async def test_serve_on_sigint_when_idle_exits(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        await editor.new_session()
        server = editor.client._server
        assert server is not None
        server.send_signal(signal.SIGINT)
        await asyncio.wait_for(server.wait(), 30)
        assert server.returncode == 130


def ignoring_sigint() -> None:
    """As a shell starts a background job (and CI runners their steps): SIGINT ignored, inherited through exec."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


INHERITED = pytest.mark.parametrize("inherited", [None, ignoring_sigint], ids=["default", "ignored"])


async def spawn_serve(model: OfflineServer, data_dir: Path, inherited: Any, *options: str) -> Any:
    """`agent-bridge [options] serve`, its pipes open, SIGINT as `inherited` leaves it."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        *options,
        "serve",
        env=server_env(model, data_dir, PYTHONFAULTHANDLER="1"),  # SIGABRT prints every thread's stack
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=inherited,
    )


async def stopped(process: Any, signum: int) -> int:
    """Its exit code after `signum`. Still running 20 s later, it fails with what it was doing: the kernel's view
    of its threads, then the Python stacks faulthandler prints on SIGABRT, and its log."""
    process.send_signal(signum)
    try:
        code: int = await asyncio.wait_for(asyncio.shield(process.wait()), 20)
    except TimeoutError:
        state = stuck_state(process.pid)
        process.send_signal(signal.SIGABRT)
        try:
            await asyncio.wait_for(process.wait(), 10)
            log = await asyncio.wait_for(process.stderr.read(), 10)
        except TimeoutError:
            log = b"(no stack: it did not end on SIGABRT)"
        raise AssertionError(
            f"still running 20 s after signal {signum}:\n{state}\n{log.decode(errors='replace')}"
        ) from None
    finally:
        if process.returncode is None:
            process.kill()
    return code


def stuck_state(pid: int) -> str:
    """Each thread's name, state and kernel wait channel (what a blocked system call waits on)."""
    lines = []
    with contextlib.suppress(OSError):
        for tid in sorted(os.listdir(f"/proc/{pid}/task")):
            task = Path(f"/proc/{pid}/task/{tid}")
            with contextlib.suppress(OSError):
                status = dict(
                    line.split(":\t", 1) for line in task.joinpath("status").read_text().splitlines() if ":\t" in line
                )
                lines.append(
                    f"thread {tid} {status.get('Name', '?')} {status.get('State', '?')} wchan="
                    f"{task.joinpath('wchan').read_text()} SigBlk={status.get('SigBlk')} SigCgt={status.get('SigCgt')}"
                )
        with contextlib.suppress(OSError):
            whole = Path(f"/proc/{pid}/status").read_text()
            lines += [line for line in whole.splitlines() if line.startswith(("SigPnd", "ShdPnd", "SigIgn"))]
    return "\n".join(lines)


@INHERITED
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("delay_ms", [0, 20, 150, 300, 400, 500, 700, 1000])
async def test_serve_on_a_stop_signal_while_it_still_loads_exits(
    workspace: Path, data_dir: Path, delay_ms: int, inherited: Any, signum: int
) -> None:
    """`initialize` and `session/new` are answered before the server loads (bridge/server/fast_initialize.py): an
    editor may stop the bridge at once, while it reads, waits for a prompt or imports; it ends all the same."""
    with OfflineServer({"responses": []}) as model:
        process = await spawn_serve(model, data_dir, inherited)
        assert process.stdin and process.stdout and process.stderr
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
        ):
            body = json.dumps(message).encode()
            process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await process.stdin.drain()
        seen = b""
        while b'"id": 2' not in seen:
            seen += await asyncio.wait_for(process.stdout.read(4096), 30)
        await asyncio.sleep(delay_ms / 1000)
        code = await stopped(process, signum)
        log = (await process.stderr.read()).decode(errors="replace")
    assert code == 128 + signum, log
    assert "Traceback" not in log, log


@INHERITED
async def test_serve_on_sigint_before_any_message_exits(data_dir: Path, inherited: Any) -> None:
    """A person who started `agent-bridge serve` by hand and presses Ctrl-C before sending anything."""
    with OfflineServer({"responses": []}) as model:
        process = await spawn_serve(model, data_dir, inherited, "--log-level", "debug")
        line = b""
        while b"waiting for the editor's first message" not in line:
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            assert line, "the bridge ended before it waited"
        assert await stopped(process, signal.SIGINT) == 130
