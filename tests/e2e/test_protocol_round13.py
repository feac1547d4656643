"""Attack round 13 on the protocol (a helper as a hostile client, the real `serve`/`acp` processes):

- a noise line over 8 KiB before a valid LSP message made that message vanish unanswered;
- a second request with the id of one still running took its place: both answered, neither refused, and the
  first could no longer be cancelled by id;
- `$/cancel_request` with an id that is an object raised a TypeError (logged with its traceback);
- stdout closed under the bridge was no disconnect: the turn and its commands went on, a traceback per write;
- a `session/new` answered before the server loaded, whose making then failed (its folder removed meanwhile), was
  a session the client held and no one could tell why it was unknown.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hostile_input import RawBridge, _error, bridge  # noqa: F401 - the fixture
from tests.poll import poll


async def test_a_long_noise_line_before_a_message_does_not_hide_it(bridge: RawBridge) -> None:  # noqa: F811
    if bridge.acp:
        pytest.skip("LSP framing's header lines")
    body = json.dumps({"jsonrpc": "2.0", "id": "z3", "method": "session/list", "params": {}}).encode()
    await bridge.raw(b"X" * 9000 + b"\r\n" + bridge.frame(body))
    assert "result" in await bridge.response("z3")
    await bridge.raw(b"Y" * 9000)  # and with no newline at all: the noise runs into the next head
    await bridge.raw(b"\r\n" + bridge.frame(body.replace(b'"z3"', b'"z4"')))
    assert "result" in await bridge.response("z4")


def _prompt(sid: str, text: str, msg_id: str) -> dict[str, Any]:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    return {"jsonrpc": "2.0", "id": msg_id, "method": "session/prompt", "params": params}


async def test_an_id_in_use_is_refused_and_the_first_still_cancelled_by_it(bridge: RawBridge) -> None:  # noqa: F811
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    await bridge.send(_prompt(sid, "long: 400", "D"))
    await bridge.wait(
        lambda: any(m.get("method") == "session/update" for m in bridge.received), "the long answer streaming"
    )
    await bridge.send({"jsonrpc": "2.0", "id": "D", "method": "session/list", "params": {}})
    refused = _error(await bridge.response("D"))
    assert "in use" in refused["message"]
    cancel = "$/cancel_request" if bridge.acp else "$/cancelRequest"
    await bridge.send({"jsonrpc": "2.0", "method": cancel, "params": {"requestId" if bridge.acp else "id": "D"}})
    await bridge.wait(lambda: len(bridge.responses("D")) == 2, "the prompt's own answer")
    answered = bridge.responses("D")[1]
    assert answered.get("result") == {"stopReason": "cancelled"} or answered.get("error", {}).get("code") == -32800


async def test_a_response_naming_the_clients_own_running_request_is_ignored(bridge: RawBridge) -> None:  # noqa: F811
    """Attack round 23a: `{"id": <a running session/prompt's>, "result": null}` took the prompt out of what pygls
    keeps, so its cancel by id named an unknown request and the prompt ran to its end."""
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    await bridge.send(_prompt(sid, "long: 400", "P"))
    await bridge.wait(
        lambda: any(m.get("method") == "session/update" for m in bridge.received), "the long answer streaming"
    )
    await bridge.send({"jsonrpc": "2.0", "id": "P", "result": None})  # forged: P is the client's own request
    await bridge.send({"jsonrpc": "2.0", "id": "nobody", "error": {"code": 1, "message": "x"}})  # and no one's
    await bridge.barrier()
    cancel = "$/cancel_request" if bridge.acp else "$/cancelRequest"
    await bridge.send({"jsonrpc": "2.0", "method": cancel, "params": {"requestId" if bridge.acp else "id": "P"}})
    answered = await bridge.response("P")
    assert answered.get("result") == {"stopReason": "cancelled"} or answered.get("error", {}).get("code") == -32800
    assert "no request of ours" in bridge.stderr_text()


async def test_a_cancel_naming_an_object_is_ignored_quietly(bridge: RawBridge) -> None:  # noqa: F811
    cancel = "$/cancel_request" if bridge.acp else "$/cancelRequest"
    await bridge.send({"jsonrpc": "2.0", "method": cancel, "params": {"requestId": {"a": 1}, "id": {"a": 1}}})
    await bridge.barrier()
    assert "Traceback" not in bridge.stderr_text() and "TypeError" not in bridge.stderr_text()


@pytest.mark.parametrize("front", ["acp", "serve"])
async def test_stdout_closed_is_a_disconnect_that_stops_every_command(
    front: str, workspace: Path, data_dir: Path
) -> None:
    marker = f"sleep 7{os.getpid() % 1000:03d}1"
    scenario = data_dir / "scenario.json"
    call = {"type": "tool_use", "name": "Bash", "input": {"command": marker}}  # (read-only: asked nothing)
    scenario.write_text(json.dumps({"responses": [{"content": [call], "stop_reason": "tool_use"}]}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        AGENT_BRIDGE_DATA_DIR=str(data_dir),
        AGENT_BRIDGE_CONFIG_DIR=str(data_dir / "config"),
        HOME=str(data_dir),
        AGENT_BRIDGE_LOG="WARNING",
    )
    read_end, write_end = os.pipe()
    stderr_file = open(data_dir / "stderr.log", "wb")  # noqa: SIM115 - closed once the child has it
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        front,
        "--offline",
        str(scenario),
        stdin=asyncio.subprocess.PIPE,
        stdout=write_end,
        stderr=stderr_file,
        env=env,
    )
    os.close(write_end)
    stderr_file.close()
    assert process.stdin is not None
    raw = RawBridge(front == "acp", workspace, data_dir)

    async def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(raw.frame(json.dumps(message).encode()))
        await process.stdin.drain()

    params: dict[str, Any] = (
        {"protocolVersion": 1, "clientCapabilities": {}} if raw.acp else {"capabilities": {}, "processId": None}
    )
    await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    new = {"cwd": str(workspace), "mcpServers": []}
    await send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new})
    received = b""
    loop = asyncio.get_running_loop()
    while (found := re.search(rb'"sessionId":\s*"([^"]+)"', received)) is None:
        chunk = await asyncio.wait_for(loop.run_in_executor(None, os.read, read_end, 65536), 30)
        assert chunk, (data_dir / "stderr.log").read_text()[-2000:]
        received += chunk
    sid = found.group(1).decode()
    await send(_prompt(sid, "go", "p"))

    def sleeping() -> bool:
        return any(marker in _cmdline(pid) for pid in _pids())

    await poll(sleeping, timeout=30, what="the command running")
    os.close(read_end)  # the client is gone: its end of stdout closed (stdin still open)
    for _ in range(3):
        await send({"jsonrpc": "2.0", "id": "x", "method": "session/list", "params": {}})
    await asyncio.wait_for(process.wait(), 30)
    await poll(lambda: not sleeping(), timeout=10, what="the command stopped")
    stderr = (data_dir / "stderr.log").read_text()
    assert stderr.count("Traceback") == 0, stderr[-3000:]


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_session_answered_early_then_not_made_says_why_it_is_unknown() -> None:
    import io

    from bridge.agent import UnknownSession
    from bridge.server.fast_initialize import FAILED_EARLY, AnswerFilter, FirstMessage
    from bridge.server.rpc_errors import unknown_session

    first = FirstMessage(b"")
    sent = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "sess_early1"}}).encode() + b"\n"
    first.early = {2: sent}
    out = io.BytesIO()
    answers = AnswerFilter(out, first)
    error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "cwd: no such directory /gone"}}
    answers.write(json.dumps(error).encode() + b"\n")
    assert out.getvalue() == b""  # the early answer stands (it was sent)
    try:
        message = unknown_session(UnknownSession("sess_early1")).message
    finally:
        FAILED_EARLY.pop("sess_early1", None)
    assert "could not be made" in message and "no such directory /gone" in message
