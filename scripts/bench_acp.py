"""ACP latencies from an editor's side (issue 13), measured with the official SDK client against
`agent-bridge acp --offline playground`; medians of N runs. Baselines from the same run:

- spawn -> `initialize` answered, against the same spawn of a bare Python that answers one ndjson line
  (the interpreter's own start), and of one that first imports pygls and lsprotocol (their share);
- `session/prompt` -> first `agent_message_chunk`, and `session/cancel` mid-stream -> `{stopReason: cancelled}`,
  against one `session/list` round trip on the same connection (the protocol's floor).
"""

from __future__ import annotations

import asyncio
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
    print(f"spawn -> initialize answered (median of {SPAWNS})")
    ratio = statistics.median(bridge) / statistics.median(bare)
    print(f"  agent-bridge acp   {ms(bridge)}   {ratio:.1f}x the baseline")
    print(f"  bare python        {ms(bare)}   (baseline)")
    print(f"  python + pygls     {ms(pygls)}   (importing pygls and lsprotocol, then answering)")
    print(f"session/prompt -> first chunk, session/cancel -> cancelled (median of {TURNS}, warm session)")
    print(f"  first chunk        {ms(first_chunk)}")
    print(f"  cancel->cancelled  {ms(cancelled)}")
    print(f"  session/list rtt   {ms(round_trip)}   (baseline)")


if __name__ == "__main__":
    asyncio.run(main())
