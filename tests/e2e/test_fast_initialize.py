"""`initialize` answered before the server loads (bridge/server/fast_initialize.py): the editor gets the very
bytes pygls sends, once; the server then works as always; a kept answer that no longer matches is dropped; and
whatever the first message is, the server reads exactly what the client sent."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bridge.offline import OfflineServer
from bridge.server.fast_initialize import Replay
from tests.e2e.harness import server_env

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "processId": 4242,
        "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
        "initializationOptions": {},
    },
}


def frame(message: dict[str, Any], *, acp: bool = False) -> bytes:
    body = json.dumps(message).encode()
    return body + b"\n" if acp else b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(stream: asyncio.StreamReader, *, acp: bool = False) -> tuple[bytes, dict[str, Any]]:
    """One framed message: its exact bytes and its JSON."""
    if acp:
        line = await stream.readline()
        return line, json.loads(line)
    head = await stream.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    body = await stream.readexactly(length)
    return head + body, json.loads(body)


async def session(
    env: dict[str, str], ws: Path, *, acp: bool = False, first: dict[str, Any] = INITIALIZE
) -> tuple[bytes, list[dict[str, Any]]]:
    """Start the bridge, initialize, make a session, prompt; the raw initialize answer and every message."""
    command = "acp" if acp else "serve"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        command,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin and process.stdout
    params = {"protocolVersion": 1, "clientCapabilities": {}} if acp else first["params"]
    process.stdin.write(frame({**first, "params": params}, acp=acp))
    await process.stdin.drain()
    raw, answer = await asyncio.wait_for(read_message(process.stdout, acp=acp), 60)
    seen = [answer]
    process.stdin.write(
        frame(
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}}, acp=acp
        )
    )
    await process.stdin.drain()
    while not any(m.get("id") == 2 for m in seen):
        seen.append((await asyncio.wait_for(read_message(process.stdout, acp=acp), 60))[1])
    sid = next(m for m in seen if m.get("id") == 2)["result"]["sessionId"]
    process.stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
            },
            acp=acp,
        )
    )
    await process.stdin.drain()
    while not any(m.get("id") == 3 for m in seen):
        seen.append((await asyncio.wait_for(read_message(process.stdout, acp=acp), 60))[1])
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 30)
    return raw, seen


def kept_answers(data: Path) -> list[Path]:
    return sorted((data / "cache").glob("initialize-*")) if (data / "cache").exists() else []


async def test_the_second_start_answers_with_pyglss_bytes_once(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        cold, cold_seen = await session(env, workspace)
        assert len(kept_answers(data_dir)) == 1
        warm, warm_seen = await session(env, workspace)
        other, _ = await session(
            env, workspace, first={**INITIALIZE, "params": {**INITIALIZE["params"], "processId": 7}}
        )
    assert warm == cold == other  # the kept answer is pygls's, byte for byte (processId does not count)
    for seen in (cold_seen, warm_seen):
        assert [m.get("id") for m in seen].count(1) == 1  # answered once
        assert next(m for m in seen if m.get("id") == 3)["result"] == {"stopReason": "end_turn"}
    assert len(model.requests) == 3


async def test_other_capabilities_get_pyglss_own_answer(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        plain, _ = await session(env, workspace)
        utf8 = {
            **INITIALIZE,
            "params": {**INITIALIZE["params"], "capabilities": {"general": {"positionEncodings": ["utf-8"]}}},
        }
        first, _ = await session(env, workspace, first=utf8)
        again, _ = await session(env, workspace, first=utf8)
    assert first == again != plain
    assert b'"positionEncoding": "utf-8"' in first
    assert len(kept_answers(data_dir)) == 2


async def test_a_kept_answer_that_differs_is_dropped(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        right, _ = await session(env, workspace)
        (kept,) = kept_answers(data_dir)
        kept.write_bytes(right.replace(b"agent-bridge", b"agent-bridgX"))
        wrong, seen = await session(env, workspace)
        assert b"agent-bridgX" in wrong and [m.get("id") for m in seen].count(1) == 1
        assert next(m for m in seen if m.get("id") == 3)["result"] == {"stopReason": "end_turn"}
        assert not kept.exists()  # dropped: the next start asks pygls again
        healed, _ = await session(env, workspace)
    assert healed == right


async def test_acp_too(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        cold, _ = await session(env, workspace, acp=True)
        warm, seen = await session(env, workspace, acp=True)
    assert warm == cold and cold.endswith(b"\n")
    assert json.loads(warm)["result"]["protocolVersion"] == 1
    assert next(m for m in seen if m.get("id") == 3)["result"] == {"stopReason": "end_turn"}


OPS = st.lists(st.tuples(st.sampled_from(["readline", "read"]), st.integers(-1, 12)), max_size=20)


@given(data=st.binary(max_size=60).map(lambda b: b.replace(b"x", b"\n")), split=st.integers(0, 60), ops=OPS)
def test_replay_reads_as_the_stream_would(data: bytes, split: int, ops: list[tuple[str, int]]) -> None:
    expected, replay = (
        io.BufferedReader(io.BytesIO(data)),
        Replay(data[:split], io.BufferedReader(io.BytesIO(data[split:]))),
    )
    for op, n in ops:
        assert getattr(replay, op)(n) == getattr(expected, op)(n), (op, n)
    assert replay.read() == expected.read()
