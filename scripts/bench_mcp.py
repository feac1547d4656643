"""MCP benchmarks (issue 14): the SDK's import cost against the bridge's own, session/new with servers against
without, and 5 sessions x 3 servers — processes and memory when the sessions share servers (one cwd) against
when each has its own copies (a per-session env makes every config distinct: the old behaviour's count).
Checks (an `ok`/`FAIL` line; exit status 1 on FAIL): the five sessions on one cwd share 3 processes."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.harness import Editor, poll, running_editor, text_response

FIXTURE = str(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mcp_server.py")


def import_seconds(statement: str, runs: int = 5) -> float:
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    return statistics.median(
        float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(runs)
    )


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            found += [child, *descendants(child)]
    return found


def servers_of(bridge: int) -> list[int]:
    """The bridge's MCP server processes: its descendants running the fixture (not its process watchdog)."""
    found: list[int] = []
    for pid in descendants(bridge):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if FIXTURE.encode() in command:
            found.append(pid)
    return found


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def server(name: str, tag: str) -> dict[str, object]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [FIXTURE, "--name", name],
        "env": [{"name": "BENCH_TAG", "value": tag}],
    }


async def connected(editor: Editor, count: int) -> None:
    await poll(
        lambda: sum("connected" in m.message for m in editor.client.log_messages) >= count,
        timeout=600,
        what=f"{count} servers to connect",
    )


async def five_by_three(shared: bool) -> tuple[int, int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "data").mkdir()
        scenario = {"responses": [text_response("ok")] * 10}
        async with running_editor(scenario, root / "ws", root / "data") as editor:
            assert editor.client._server is not None
            bridge = editor.client._server.pid
            began = time.monotonic()
            sids = [
                await editor.new_session(
                    mcp_servers=[server(n, "same" if shared else f"s{i}") for n in ("one", "two", "three")]
                )
                for i in range(5)
            ]
            await connected(editor, 15)
            ready = time.monotonic() - began
            children = servers_of(bridge)
            memory = sum(rss_kb(pid) for pid in children)
            for sid in sids:
                await editor.request("session/close", {"sessionId": sid})
            await poll(lambda: not servers_of(bridge), timeout=60, what="every server to stop")
            return len(children), memory, ready


async def session_new_seconds(with_servers: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "data").mkdir()
        async with running_editor({"responses": []}, root / "ws", root / "data") as editor:
            await editor.new_session()  # load the domain first
            servers = [server(n, "x") for n in ("one", "two", "three")] if with_servers else []
            began = time.monotonic()
            await editor.new_session(mcp_servers=servers)
            answered = time.monotonic() - began
            if with_servers:
                await connected(editor, 3)
            return answered, time.monotonic() - began


async def main() -> None:
    base = import_seconds("import bridge.agent")
    lazy = import_seconds("import bridge.agent, bridge.mcp.manager, bridge.mcp.connection")
    sdk = import_seconds("import mcp.client.session, mcp.client.stdio, mcp.client.streamable_http, mcp.client.auth")
    anthropic = import_seconds("import anthropic")
    print(
        f"import: bridge.agent {base:.3f} s; + bridge.mcp (no SDK) {lazy:.3f} s ({lazy / base:.2f}x); the mcp SDK "
        f"client {sdk:.3f} s (anthropic SDK {anthropic:.3f} s, in the same run)"
    )
    plain, _ = await session_new_seconds(False)
    answered, ready = await session_new_seconds(True)
    print(
        f"session/new: no servers {plain * 1000:.0f} ms; 3 stdio servers {answered * 1000:.0f} ms to answer "
        f"({answered / plain:.2f}x), {ready:.2f} s until all 3 connected"
    )
    copies, copies_kb, copies_s = await five_by_three(shared=False)
    shared, shared_kb, shared_s = await five_by_three(shared=True)
    print(
        f"5 sessions x 3 servers: own copies {copies} processes, {copies_kb / 1024:.0f} MiB RSS "
        f"({copies_s:.1f} s to connect); shared {shared} processes, {shared_kb / 1024:.0f} MiB RSS "
        f"({shared_s:.1f} s); after session/close of all five: 0 processes"
    )
    ok = shared == 3
    print(f"{'ok' if ok else 'FAIL'}: 5 sessions x 3 servers on one cwd share {shared} server processes (expected 3)")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    asyncio.run(main())
