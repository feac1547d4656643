"""The start-up matrix (issue 26): fresh and used HOME x with and without NO_PROXY x `run` / `serve` / `acp`.

For each cell, median and p95 of
- start -> first model request (spawn -> request at the server; `serve`/`acp` send `initialize`, `session/new` and
  `session/prompt` each as soon as the protocol allows), as a ratio against the floor: a bare Python process that
  imports the HTTP client and posts the bridge's own first request body, measured in the same run, interleaved;
- the first tool gap (the model's answer with a `Bash echo` call fully sent -> the next request arrives) against
  the same turn's later gaps (three more identical rounds): a cliff after the first request shows as a ratio > 1.

Limits (ok / FAIL): `run` <= 1.5x the floor, `serve`/`acp` <= 2x, first gap <= 1.5x the later gaps, `run`'s peak RSS
<= 0.3x Claude Code's 200 MiB. BENCH_RUNS (default 7) runs per cell. Every child gets its own HOME; a used HOME has
had one run of the same front end before.

The bridge's bytecode is compiled first (`compileall`, into its own `__pycache__` folders, ignored by git), as
installing a wheel does: with PYTHONDONTWRITEBYTECODE set (as on the machines this runs on) an editable install
would otherwise compile its ~190 modules from source at every start, a cost no installed bridge pays.
"""

from __future__ import annotations

import compileall
import itertools
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lifecycle import BRIDGE, MIB, PY, ROOT, Child, Lsp, Ndjson, env_for

from bridge.offline import OfflineServer
from bridge.offline.scenario import RecordedRequest, Scenario

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
ROUNDS = 4  # tool rounds in the turn: the first gap against the three after it
CLAUDE_CODE_RSS_MIB = 200.0
FRONT_ENDS = ("run", "serve", "acp")
NO_PROXY = "127.0.0.1,localhost"

FLOOR = """\
import sys, httpx2
body = open(sys.argv[2], "rb").read()
headers = {"x-api-key": "k", "content-type": "application/json", "anthropic-version": "2023-06-01"}
with httpx2.stream("POST", sys.argv[1] + "/v1/messages", content=body, headers=headers) as r:
    for _ in r.iter_bytes():
        pass
"""


def answer(request: RecordedRequest) -> dict[str, Any]:
    """Every turn alike: ROUNDS `echo hi` calls, then a line of text (by the assistant messages so far)."""
    rounds = sum(1 for message in request.body.get("messages", []) if message.get("role") == "assistant")
    if rounds < ROUNDS:
        return {
            "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "echo hi"}}],
            "stop_reason": "tool_use",
        }
    return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def one_run(front: str, model: OfflineServer, env: dict[str, str], ws: Path) -> dict[str, float]:
    """One start of `front` through a whole turn: start -> first request, the tool gaps, peak RSS (run)."""
    n = len(model.requests)
    if front == "run":
        child = Child.spawn([BRIDGE, "run", "go", "--non-interactive", "--cwd", str(ws)], env)
        child.reap(120)
        started, rss = child.started, child.maxrss / MIB
    else:
        client = (Lsp if front == "serve" else Ndjson)([BRIDGE, front], env)
        init = {"capabilities": {}} if front == "serve" else {"protocolVersion": 1, "clientCapabilities": {}}
        client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        client.answer(1)
        if front == "serve":
            client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        client.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}})
        sid = client.answer(2)[1]["result"]["sessionId"]
        client.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]},
            }
        )
        client.answer(3, timeout=120)
        assert client.proc.stdin is not None
        client.proc.stdin.close()
        client.proc.wait(30)
        started, rss = client.started, float("nan")
    requests = model.wait_for_requests_sync(n + ROUNDS + 1)[n:]
    gaps = []
    for before, after in itertools.pairwise(requests):
        assert before.answered_at is not None, "a response that did not end cleanly"
        gaps.append(after.received_at - before.answered_at)
    return {
        "first_request_s": requests[0].received_at - started,
        "first_gap_s": gaps[0],
        "later_gaps_s": statistics.median(gaps[1:]),
        "peak_rss_mib": rss,
    }


def floor_run(model: OfflineServer, env: dict[str, str], body: Path) -> float:
    n = len(model.requests)
    child = Child.spawn([PY, "-c", FLOOR, model.base_url, str(body)], env, read_stdout=False)
    child.reap()
    return model.wait_for_requests_sync(n + 1)[n].received_at - child.started


def main() -> None:
    if not compileall.compile_dir(ROOT / "bridge", quiet=1):
        sys.exit("compiling the bridge's bytecode failed")
    cells = [(front, used, proxy) for front in FRONT_ENDS for used in (False, True) for proxy in (False, True)]
    samples: dict[tuple[str, bool, bool], list[dict[str, float]]] = {cell: [] for cell in cells}
    floors: list[float] = []
    scenario = Scenario.from_responder(answer, name="startup")
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, OfflineServer(scenario) as model:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        body = root / "body.json"
        # the bridge's own first request, for the floor to post byte for byte
        warm = env_for(model, root / "first")
        Child.spawn([BRIDGE, "run", "go", "--non-interactive", "--cwd", str(ws)], warm).reap(120)
        body.write_bytes(model.requests[0].raw)
        for i in range(RUNS):
            for cell in cells:  # interleaved: load changes hit every cell and the floor alike
                front, used, proxy = cell
                home = root / f"{front}-{'used' if used else 'fresh'}-{int(proxy)}-{i}"
                env = env_for(model, home)
                for name in ("NO_PROXY", "no_proxy"):
                    if proxy:
                        env[name] = NO_PROXY
                    else:
                        env.pop(name, None)
                if used:
                    one_run(front, model, env, ws)  # the HOME's first start: not counted
                samples[cell].append(one_run(front, model, env, ws))
                floors.append(floor_run(model, env_for(model, root / f"floor-{i}"), body))
    floor = statistics.median(floors)
    print(
        f"floor (python + httpx2 posting the bridge's first request): median {floor * 1000:.0f} ms, "
        f"p95 {p95(floors) * 1000:.0f} ms, {len(floors)} runs"
    )
    print(
        f"{'front':6} {'HOME':5} {'NO_PROXY':8}  {'first request ms (x floor)':30} {'gap 1 / later':14} "
        f"{'peak RSS MiB':12} verdict"
    )
    failed = 0
    for cell in cells:
        front, used, proxy = cell
        runs = samples[cell]
        first = [r["first_request_s"] for r in runs]
        ratio = statistics.median(first) / floor
        gap_ratio = statistics.median([r["first_gap_s"] / r["later_gaps_s"] for r in runs])
        rss = statistics.median([r["peak_rss_mib"] for r in runs])
        limit = 1.5 if front == "run" else 2.0
        ok = ratio <= limit and gap_ratio <= 1.5 and (front != "run" or rss <= 0.3 * CLAUDE_CODE_RSS_MIB)
        failed += not ok
        first_text = f"{statistics.median(first) * 1000:4.0f} / p95 {p95(first) * 1000:4.0f} ({ratio:.2f}x <= {limit})"
        gaps = (
            f"{statistics.median([r['first_gap_s'] for r in runs]) * 1000:3.0f}/"
            f"{statistics.median([r['later_gaps_s'] for r in runs]) * 1000:3.0f} ms {gap_ratio:.2f}x"
        )
        print(
            f"{front:6} {'used' if used else 'fresh':5} {'set' if proxy else '-':8}  {first_text:30} {gaps:14} "
            f"{'' if rss != rss else f'{rss:.0f}':12} {'ok' if ok else 'FAIL'}"
        )
    print(f"{len(cells) - failed} of {len(cells)} cells ok")


if __name__ == "__main__":
    main()
