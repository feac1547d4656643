"""Sub-agent benchmarks (issue 15), over the protocol: how long a cancel takes to answer `cancelled` — and for
every process to be gone — when two parallel sub-agents each run a long command, against a turn that runs one
long command itself (the baseline, in the same run); and what a sub-agent adds to a turn that runs nothing.
Every command runs in the OS sandbox (bubblewrap) unless AGENT_BRIDGE_SANDBOX=0."""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.harness import Editor, poll, running_editor, text_response, tool_response
from tests.execution.test_processes import marked_pids

ROUNDS = 7


def command(mark: str, name: str) -> str:
    """A shell and a child that would run 5 min, found by TEST_MARK (their pids are their sandbox's)."""
    return f"export TEST_MARK={mark}; sh -c 'sleep 300 & echo started-{name}; wait'"


def printed(editor: Editor, text: str) -> bool:
    return any(
        u["update"]["sessionUpdate"] == "tool_call_update"
        and "agent" not in (u["update"].get("_meta") or {})
        and text in str(u["update"].get("content"))
        for u in editor.updates
    )


async def cancel_once(root: Path, agents: bool) -> tuple[float, float]:
    ws, data = root / "ws", root / "data"
    ws.mkdir()
    data.mkdir()
    mark = uuid.uuid4().hex
    if agents:
        calls = [("Agent", {"description": f"job {n}", "prompt": f"job {n}"}) for n in "ab"]
        scenario: dict[str, Any] = {
            "responses": [tool_response(*calls), text_response("ok")],
            "agents": [
                {"prompt": f"job {n}", "responses": [tool_response(("Bash", {"command": command(mark, n)}))]}
                for n in "ab"
            ],
        }
        names = "ab"
    else:
        scenario = {"responses": [tool_response(("Bash", {"command": command(mark, "a")})), text_response("ok")]}
        names = "a"
    async with running_editor(scenario, ws, data, initialization_options={"allow": ["Bash"]}) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "go")
        await poll(lambda: all(printed(editor, f"started-{n}") for n in names), timeout=30, what="the commands")
        await poll(lambda: len(marked_pids(mark)) >= 2 * len(names), timeout=30, what="every process started")
        begin = time.perf_counter()
        editor.cancel(sid)
        await asyncio.wait_for(turn, 10)
        answered = time.perf_counter() - begin
        await poll(lambda: not marked_pids(mark), timeout=10, what="every process to die")
        gone = time.perf_counter() - begin
    return answered, gone


async def turn_time(root: Path, agents: bool) -> float:
    ws, data = root / "ws", root / "data"
    ws.mkdir()
    data.mkdir()
    if agents:
        scenario: dict[str, Any] = {
            "responses": [tool_response(("Agent", {"description": "d", "prompt": "p"})), text_response("ok")],
            "agents": [{"prompt": "p", "responses": [text_response("done")]}],
        }
    else:
        scenario = {"responses": [tool_response(("Glob", {"pattern": "*"})), text_response("ok")]}
    async with running_editor(scenario, ws, data) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "warm up")  # the SDK import and the first connection are not the point
        begin = time.perf_counter()
        await editor.prompt(sid, "go")
        return time.perf_counter() - begin


async def main() -> None:
    figures: dict[str, list[tuple[float, float]]] = {"one command": [], "two sub-agents": []}
    for _ in range(ROUNDS):
        for label, agents in (("one command", False), ("two sub-agents", True)):
            with tempfile.TemporaryDirectory() as tmp:
                figures[label].append(await cancel_once(Path(tmp), agents))
    base = statistics.median(a for a, _ in figures["one command"])
    for label, runs in figures.items():
        answered = statistics.median(a for a, _ in runs)
        gone = statistics.median(g for _, g in runs)
        print(
            f"cancel, {label:15}: answered in {answered * 1000:6.1f} ms (median of {ROUNDS}, "
            f"ratio {answered / base:.2f}), every process gone after {gone * 1000:6.1f} ms"
        )
    with tempfile.TemporaryDirectory() as tmp:
        plain = await turn_time(Path(tmp), agents=False)
    with tempfile.TemporaryDirectory() as tmp:
        nested = await turn_time(Path(tmp), agents=True)
    print(
        f"a turn with one Glob call: {plain * 1000:.0f} ms; with one sub-agent instead (one more model "
        f"request): {nested * 1000:.0f} ms (ratio {nested / plain:.2f})"
    )


if __name__ == "__main__":
    asyncio.run(main())
