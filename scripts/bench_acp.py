"""ACP latencies from an editor's side (issue 13), measured with the official SDK client against
`agent-bridge acp --offline playground`; medians of N runs. Baselines from the same run:

- spawn -> `initialize` answered, against the same spawn of a bare Python that answers one ndjson line
  (the interpreter's own start), and of one that first imports pygls and lsprotocol (their share);
- `session/prompt` -> first `agent_message_chunk`, and `session/cancel` mid-stream -> `{stopReason: cancelled}`,
  against one `session/list` round trip on the same connection (the protocol's floor);
- start-up as a client that works at once sees it (issue 22): spawn -> `initialize` answered, spawn -> `session/new`
  answered (sent the moment `initialize` is answered), and a second `session/new` sent 10 ms after the
  `initialize` answer (from its sending to its answer), against a `session/new` on the same process once warm;
  median and p95 of STARTS spawns, over raw ndjson (exact timing, no client library in between).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acp import schema
from acp.helpers import ContentBlock
from acp.interfaces import Client
from acp.stdio import spawn_agent_process

from tests.acp.editor import Editor, agent_env, running_agent

SPAWNS = 5
TURNS = 10
PYGLS = "import pygls.lsp.server, lsprotocol.types; "
BARE = "import sys, json; line = sys.stdin.readline(); print(json.dumps({'jsonrpc': '2.0', 'id': json.loads(line)['id'], 'result': {'protocolVersion': 1}}), flush=True); sys.stdin.read()"  # noqa: E501


def text(value: str) -> list[ContentBlock]:
    return [schema.TextContentBlock(type="text", text=value)]


async def spawn_to_initialize(data: Path, *, bare: str | None) -> float:
    """`bare`: a Python that imports that much, then answers `initialize`; None: the bridge."""
    editor = Editor()
    started = time.perf_counter()
    if bare is not None:
        client = cast(Client, editor)  # the test editor answers what these turns ask, not all of `Client`
        async with spawn_agent_process(client, sys.executable, "-c", bare + BARE, env=agent_env(data)) as (conn, _):
            await conn.initialize(protocol_version=1)
            return time.perf_counter() - started
    async with running_agent(editor, "playground", data) as (conn, _):
        await conn.initialize(protocol_version=1)
        return time.perf_counter() - started


async def turns(data: Path, workspace: Path) -> tuple[list[float], list[float], list[float]]:
    editor = Editor()
    first_chunk: list[float] = []
    cancelled: list[float] = []
    round_trip: list[float] = []
    async with running_agent(editor, "playground", data) as (conn, _):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await conn.prompt(session_id=sid, prompt=text("warm up"))
        for i in range(TURNS):
            started = time.perf_counter()
            await conn.list_sessions()
            round_trip.append(time.perf_counter() - started)

            seen = len(editor.of_kind("agent_message_chunk", sid))
            started = time.perf_counter()
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text(f"hello {i}")))
            await editor.until(lambda seen=seen: len(editor.of_kind("agent_message_chunk", sid)) > seen, timeout=60)
            first_chunk.append(time.perf_counter() - started)
            await turn

            seen = len(editor.of_kind("agent_message_chunk", sid))
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("long")))
            await editor.until(lambda seen=seen: len(editor.of_kind("agent_message_chunk", sid)) > seen + 3, timeout=60)
            started = time.perf_counter()
            await conn.cancel(session_id=sid)
            answer = await turn
            cancelled.append(time.perf_counter() - started)
            assert answer.stop_reason == "cancelled"
    assert not editor.validator.violations, editor.validator.violations
    return first_chunk, cancelled, round_trip


STARTS = 12


async def start_up(data: Path, workspace: Path) -> tuple[float, float, float, float]:
    """One spawn: (spawn -> initialize answered, spawn -> session/new answered, the second session/new's latency,
    a warm session/new's latency)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        "acp",
        "--offline",
        "playground",
        env=agent_env(data),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    started = time.perf_counter()
    answered: dict[int, float] = {}

    async def send(msg_id: int, method: str, params: dict[str, object]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode() + b"\n")
        await stdin.drain()

    async def answer(msg_id: int) -> float:
        while msg_id not in answered:
            message = json.loads(await stdout.readline())
            if "id" in message and "method" not in message:
                answered[message["id"]] = time.perf_counter()
        return answered[msg_id]

    new: dict[str, object] = {"cwd": str(workspace), "mcpServers": []}
    await send(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    initialized = await answer(1)
    await send(2, "session/new", new)
    await asyncio.sleep(max(0.0, initialized + 0.010 - time.perf_counter()))
    second_sent = time.perf_counter()
    await send(3, "session/new", new)
    first_new, second_new = await answer(2), await answer(3)
    warm_sent = time.perf_counter()
    await send(4, "session/new", new)
    warm = await answer(4) - warm_sent
    stdin.close()
    await process.wait()
    return initialized - started, first_new - started, second_new - second_sent, warm


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:7.1f} ms, p95 {p95(values) * 1000:7.1f} ms"


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms (min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})"


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        bare = [await spawn_to_initialize(root, bare="") for _ in range(SPAWNS)]
        pygls = [await spawn_to_initialize(root, bare=PYGLS) for _ in range(SPAWNS)]
        bridge = [await spawn_to_initialize(root, bare=None) for _ in range(SPAWNS)]
        first_chunk, cancelled, round_trip = await turns(root, workspace)
        starts = [await start_up(root, workspace) for _ in range(STARTS)]
    print(f"spawn -> initialize answered (median of {SPAWNS})")
    ratio = statistics.median(bridge) / statistics.median(bare)
    print(f"  agent-bridge acp   {ms(bridge)}   {ratio:.1f}x the baseline")
    print(f"  bare python        {ms(bare)}   (baseline)")
    print(f"  python + pygls     {ms(pygls)}   (importing pygls and lsprotocol, then answering)")
    print(f"session/prompt -> first chunk, session/cancel -> cancelled (median of {TURNS}, warm session)")
    print(f"  first chunk        {ms(first_chunk)}")
    print(f"  cancel->cancelled  {ms(cancelled)}")
    print(f"  session/list rtt   {ms(round_trip)}   (baseline)")
    init, new, second, warm = (list(column) for column in zip(*starts, strict=True))
    print(f"start-up, as a client that works at once sees it ({STARTS} spawns)")
    print(f"  spawn -> initialize answered                 {spread(init)}")
    print(f"  spawn -> session/new answered                {spread(new)}")
    print(f"  2nd session/new, sent 10 ms after initialize {spread(second)}")
    print(f"  session/new on the warm process              {spread(warm)}   (baseline)")


if __name__ == "__main__":
    asyncio.run(main())
