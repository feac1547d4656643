"""Core benchmarks (issue 2), each with a baseline measured in the same run:

- process start -> `initialize` answered        vs  `python -c pass`
- prompt -> first request at the model server   (absolute; includes the SDK's lazy import on a cold prompt)
- tool round-trip overhead: gap between the model requests minus the tool's own run time
- ctrl-c -> `session/prompt` answered, and -> the child process gone
- text deltas per second through to the client  vs  the raw SDK reading the same stream
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.offline import OfflineServer
from tests.e2e.harness import pid_alive, poll, running_editor, server_command, server_env

RUNS = 5


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def bench_initialize(data: Path) -> dict[str, float]:
    baseline, ours = [], []
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data)
        for _ in range(RUNS):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            baseline.append(time.perf_counter() - start)
            start = time.perf_counter()
            proc = subprocess.Popen(
                server_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, stderr=subprocess.DEVNULL
            )
            assert proc.stdin and proc.stdout
            proc.stdin.write(
                _frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            )
            proc.stdin.flush()
            while proc.stdout.readline().strip():
                pass
            ours.append(time.perf_counter() - start)
            proc.stdin.close()
            proc.wait(10)
    return {
        "initialize_ms": _median(ours) * 1000,
        "python_start_ms": _median(baseline) * 1000,
        "ratio": _median(ours) / _median(baseline),
    }


def sleeping(duration: str) -> list[int]:
    """Live `sleep DURATION` processes, seen from here."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", duration.encode()] and pid_alive(int(name)):
            found.append(int(name))
    return found


async def bench_turns(root: Path) -> dict[str, float]:
    ws, data = root / "ws", root / "data"
    ws.mkdir(exist_ok=True)
    data.mkdir(exist_ok=True)
    text = "x" * 5
    responses: list[dict[str, Any]] = []
    for _ in range(RUNS):
        responses.append({"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"})  # first-request
    for _ in range(RUNS):  # tool round trips: a trivial Bash, then text
        responses.append(
            {
                "content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(ws / "f")}}],
                "stop_reason": "tool_use",
            }
        )
        responses.append({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"})
    deltas = 5000
    responses.append({"content": [{"type": "text", "deltas": [text] * deltas}], "stop_reason": "end_turn"})
    # ctrl-c during a command; each sleeps a time of its own: found by its command line (its $$ is the sandbox's)
    sleeps = [f"60.{os.getpid()}{i}" for i in range(RUNS)]
    for duration in sleeps:
        responses.append(
            {
                "content": [
                    {
                        "type": "tool_use",
                        "name": "Bash",
                        "input": {"command": f"echo $$ > {ws / 'pid'}; echo go; sleep {duration}"},
                    }
                ],
                "stop_reason": "tool_use",
            }
        )
    (ws / "f").write_text("hello\n")
    out: dict[str, float] = {}
    async with running_editor({"responses": responses}, ws, data) as editor:
        sid = await editor.new_session()
        first: list[float] = []
        for i in range(RUNS):
            start = time.monotonic()
            await editor.prompt(sid, "hi")
            first.append(editor.model.requests[-1].received_at - start)
            if i == 0:
                out["first_request_cold_ms"] = first[0] * 1000
        out["first_request_warm_ms"] = _median(first[1:]) * 1000
        gaps = []
        for _ in range(RUNS):
            n = len(editor.model.requests)
            await editor.prompt(sid, "read")
            a, b = editor.model.requests[n], editor.model.requests[n + 1]
            gaps.append(b.received_at - a.received_at)
        out["tool_round_trip_gap_ms"] = _median(gaps) * 1000
        out["read_tool_alone_ms"] = await _read_alone(ws) * 1000
        out["tool_overhead_ms"] = out["tool_round_trip_gap_ms"] - out["read_tool_alone_ms"]
        # Deltas to the client.
        before = len(editor.updates)
        start = time.perf_counter()
        await editor.prompt(sid, "stream")
        elapsed = time.perf_counter() - start
        got = "".join(
            u["update"]["content"]["text"]
            for u in editor.updates[before:]
            if u["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        assert got == text * deltas, "every delta arrived"
        out["deltas_per_s"] = deltas / elapsed
        out["updates_sent"] = len(
            [u for u in editor.updates[before:] if u["update"]["sessionUpdate"] == "agent_message_chunk"]
        )
        cancel_answer, child_gone = [], []
        for duration in sleeps:
            (ws / "pid").unlink(missing_ok=True)
            turn = editor.start_prompt(sid, "run")
            await poll(lambda d=duration: bool(sleeping(d)), timeout=10)  # type: ignore[misc]
            (pid,) = sleeping(duration)
            start = time.monotonic()
            editor.cancel(sid)
            await turn
            cancel_answer.append(time.monotonic() - start)
            await poll(lambda pid=pid: not pid_alive(pid), timeout=5)  # type: ignore[misc]
            child_gone.append(time.monotonic() - start)
        out["cancel_to_answer_ms"] = _median(cancel_answer) * 1000
        out["cancel_to_child_gone_ms"] = _median(child_gone) * 1000
    # Baseline: the raw SDK reading the same stream.
    import anthropic

    with OfflineServer({"responses": [responses[-RUNS - 1]], "after_last": "repeat_last"}) as model:
        client = anthropic.AsyncAnthropic(base_url=model.base_url, api_key="x", max_retries=0)
        for _warm_then_measure in range(2):  # the second run is measured: connection and SDK warm, like ours
            start = time.perf_counter()
            stream = await client.messages.create(
                model="m", max_tokens=10, stream=True, messages=[{"role": "user", "content": "x"}]
            )
            async for _ in stream:  # raw events, as the bridge reads them
                pass
            raw = time.perf_counter() - start
        await client.close()
    out["raw_sdk_deltas_per_s"] = deltas / raw
    out["deltas_ratio_vs_raw_sdk"] = out["deltas_per_s"] / out["raw_sdk_deltas_per_s"]
    return out


async def _read_alone(ws: Path) -> float:
    """The Read tool's own time on the same file, called directly (to subtract from the gap)."""
    from bridge.abort import Abort
    from bridge.tools.base import ToolContext
    from bridge.tools.read import ReadInput, ReadTool

    tool, samples = ReadTool(), []
    for _ in range(RUNS):
        ctx = ToolContext(cwd=ws, abort=Abort(), data_dir=ws)
        start = time.perf_counter()
        await tool.call(ReadInput(file_path=str(ws / "f")), ctx)
        samples.append(time.perf_counter() - start)
    return _median(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "d").mkdir()
        results = {"initialize": bench_initialize(root / "d"), "turns": asyncio.run(bench_turns(root))}
    for group, figures in results.items():
        for name, value in figures.items():
            print(f"{group:>10}  {name:<28} {value:>12.2f}")


if __name__ == "__main__":
    main()
