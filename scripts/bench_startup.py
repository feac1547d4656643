"""The start-up matrix (issue 26): fresh and used HOME x with and without NO_PROXY x `run` / `serve` / `acp`.

For each cell, median and p95 of
- start -> first model request (spawn -> request at the server; `serve`/`acp` send `initialize`, `session/new` and
  `session/prompt` each as soon as the protocol allows), as a ratio against the floor: a bare Python process that
  imports the HTTP client and posts the bridge's own first request body, measured in the same run, interleaved;
- the first tool gap (the model's answer with a `Bash echo` call fully sent -> the next request arrives) against
  the same turn's later gaps (three more identical rounds): a cliff after the first request shows as a ratio > 1.

Limits (ok / FAIL): `run` <= 1.5x the floor, `serve`/`acp` <= 2x, first gap <= 1.5x the later gaps, `run`'s peak RSS
<= 0.3x Claude Code's 200 MiB. BENCH_RUNS (default 7) runs per cell. Every child gets its own HOME; a used HOME has
had one run of the same front end before. Each cell also shows start -> the first tool's result at the model (the
second request): where the loading went, whichever of the two ratios it lands in, and in brackets the most it can be
with both limits held (the first request at its limit, the model's answer as it came, the first gap at 1.5x the
later ones): a cell over that fails one limit or the other whatever is loaded when, and only less work meets both;
and for `serve`/`acp`, spawn -> `initialize` answered.

`--mechanisms`: each start-up mechanism on and off instead (`mechanism_cells`), to tell what each one buys.

The bridge's bytecode is compiled first (`compileall`, into its own `__pycache__` folders, ignored by git), as
installing a wheel does: with PYTHONDONTWRITEBYTECODE set (as on the machines this runs on) an editable install
would otherwise compile its ~190 modules from source at every start, a cost no installed bridge pays. For the
same reason every start may write the generated methods' kept code (bridge/codecache.py: AGENT_BRIDGE_CODE_CACHE=write,
from bench_lifecycle.env_for), as a start does wherever Python writes bytecode; the warm-up runs fill it.
"""

from __future__ import annotations

import argparse
import compileall
import itertools
import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
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


MODEL_MS = 0.0  # `--model-ms`: how long the model takes over each tool call it answers


def answer(request: RecordedRequest) -> dict[str, Any]:
    """Every turn alike: ROUNDS `echo hi` calls, then a line of text (by the assistant messages so far)."""
    rounds = sum(1 for message in request.body.get("messages", []) if message.get("role") == "assistant")
    if rounds < ROUNDS:
        call: dict[str, Any] = {"type": "tool_use", "name": "Bash", "input": {"command": "echo hi"}}
        if MODEL_MS:  # the block's three events (start, one delta, stop) each wait a third of it
            call |= {"pieces": 1, "delay_ms": MODEL_MS / 3}
        return {"content": [call], "stop_reason": "tool_use"}
    return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def one_run(
    front: str, model: OfflineServer, env: dict[str, str], ws: Path, bridge: str = BRIDGE, capabilities: str = "{}"
) -> dict[str, float]:
    """One start of `front` through a whole turn: start -> first request, the tool gaps, peak RSS (run)."""
    n = len(model.requests)
    if front == "run":
        child = Child.spawn([bridge, "run", "go", "--non-interactive", "--cwd", str(ws)], env)
        child.reap(120)
        started, rss = child.started, child.maxrss / MIB
        initialized = float("nan")
    else:
        client = (Lsp if front == "serve" else Ndjson)([bridge, front], env)
        init = (
            {"processId": os.getpid(), "capabilities": json.loads(capabilities)}
            if front == "serve"
            else {"protocolVersion": 1, "clientCapabilities": {}}
        )
        client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        initialized = client.answer(1)[0]
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
        "first_result_s": requests[1].received_at - started,
        "initialize_s": initialized - started,
        "later_gaps_s": statistics.median(gaps[1:]),
        "peak_rss_mib": rss,
    }


def floor_run(model: OfflineServer, env: dict[str, str], body: Path) -> float:
    n = len(model.requests)
    child = Child.spawn([PY, "-c", FLOOR, model.base_url, str(body)], env, read_stdout=False)
    child.reap()
    return model.wait_for_requests_sync(n + 1)[n].received_at - child.started


@dataclass(frozen=True)
class Cell:
    """One line of a table: a front end started in one setting (`env`: variables set, or removed when None;
    `settings`: the user's settings.json; `used`: the HOME had one start before; `capabilities`: `serve`'s
    `initialize` capabilities, as JSON)."""

    front: str
    label: str
    used: bool = False
    env: tuple[tuple[str, str | None], ...] = ()
    settings: str | None = None
    bridge: str = BRIDGE
    capabilities: str = "{}"


def matrix_cells() -> list[Cell]:
    return [
        Cell(front, f"{'used' if used else 'fresh':5} {'set' if proxy else '-':8}", used, no_proxy(proxy))
        for front in FRONT_ENDS
        for used in (False, True)
        for proxy in (False, True)
    ]


def no_proxy(on: bool) -> tuple[tuple[str, str | None], ...]:
    return tuple((name, NO_PROXY if on else None) for name in ("NO_PROXY", "no_proxy"))


def mechanism_cells() -> list[Cell]:
    """Each start-up mechanism (issue 26 item 5) on and off, the rest alike (used HOME, no NO_PROXY):
    - `initialize` answered before the server loads (bridge/server/fast_initialize.py): off for capabilities it
      cannot be sure how pygls reads (position encodings given as a string; `serve` only: `acp`'s answer is the
      same for every client);
    - the predicted first request sent ahead (bridge/first_request.py): off where the user's settings name
      `hooks` (an empty object: nothing runs, but a hook could change the prompt, so nothing is sent ahead);
    - the SDK's bytes sent without the SDK (bridge/model/direct.py): off with AGENT_BRIDGE_MODEL_TRANSPORT=sdk (the
      SDK's import; send-ahead needs the direct transport, so it is off too);
    - `session/new` answered, and the first prompt's request sent, before the server loads
      (bridge/server/early_session.py): off where the user has a settings file (an empty one: nothing changes, but
      a settings file could change the answer, so the server answers);
    - the generated methods' kept code (bridge/codecache.py): off with AGENT_BRIDGE_CODE_CACHE=0;
    - the collector paused while the bridge loads (bridge/gcpause.py): off with AGENT_BRIDGE_GC_PAUSE=0."""
    sdk = (("AGENT_BRIDGE_MODEL_TRANSPORT", "sdk"),)
    uncached = (("AGENT_BRIDGE_CODE_CACHE", "0"),)
    collected = (("AGENT_BRIDGE_GC_PAUSE", "0"),)
    cells = [
        Cell("run", "all on", True),
        Cell("run", "no send-ahead", True, settings='{"hooks": {}}'),
        Cell("run", "SDK transport", True, sdk),
        Cell("run", "no kept code", True, uncached),
        Cell("run", "no GC pause", True, collected),
    ]
    for front in ("serve", "acp"):
        cells += [
            Cell(front, "all on", True),
            Cell(front, "no early session", True, settings="{}"),
            Cell(front, "SDK transport", True, sdk),
            Cell(front, "no kept code", True, uncached),
            Cell(front, "no GC pause", True, collected),
        ]
    cells.insert(
        6, Cell("serve", "no early initialize", True, capabilities='{"general": {"positionEncodings": "utf-16"}}')
    )
    return cells


def measure(cells: list[Cell]) -> tuple[dict[Cell, list[dict[str, float]]], list[float]]:
    """Every cell RUNS times, interleaved with the floor (load changes hit every cell and the floor alike)."""
    samples: dict[Cell, list[dict[str, float]]] = {cell: [] for cell in cells}
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
        for n, bridge in enumerate(dict.fromkeys(cell.bridge for cell in cells)):  # and the server's first start
            one_run("serve", model, env_for(model, root / f"first-serve-{n}"), ws, bridge)
        for i in range(RUNS):
            for n, cell in enumerate(cells):
                env = env_for(model, root / f"{cell.front}-{n}-{i}")
                for name, value in cell.env:
                    if value is None:
                        env.pop(name, None)
                    else:
                        env[name] = value
                if cell.settings is not None:
                    config = Path(env["AGENT_BRIDGE_CONFIG_DIR"])
                    config.mkdir(parents=True, exist_ok=True)
                    (config / "settings.json").write_text(cell.settings)
                if cell.used:
                    one_run(cell.front, model, env, ws, cell.bridge, cell.capabilities)  # not counted
                samples[cell].append(one_run(cell.front, model, env, ws, cell.bridge, cell.capabilities))
                floors.append(floor_run(model, env_for(model, root / f"floor-{i}"), body))
    return samples, floors


def report(cells: list[Cell], samples: dict[Cell, list[dict[str, float]]], floor: float, *, verdicts: bool) -> int:
    """One line a cell; the cells that fail their limits (counted only with `verdicts`)."""
    print(
        f"{'front':6} {'setting':19} {'init':7} {'first request ms (x floor)':30} {'gap 1 / later':16} "
        f"{'to 1st result (both limits)':27} {'peak RSS MiB':12} {'verdict' if verdicts else ''}"
    )
    failed = 0
    for cell in cells:
        runs = samples[cell]
        first = [r["first_request_s"] for r in runs]
        ratio = statistics.median(first) / floor
        gap_ratio = statistics.median([r["first_gap_s"] / r["later_gaps_s"] for r in runs])
        rss = statistics.median([r["peak_rss_mib"] for r in runs])
        limit = 1.5 if cell.front == "run" else 2.0
        ok = ratio <= limit and gap_ratio <= 1.5 and (cell.front != "run" or rss <= 0.3 * CLAUDE_CODE_RSS_MIB)
        failed += not ok
        first_text = f"{statistics.median(first) * 1000:4.0f} / p95 {p95(first) * 1000:4.0f} ({ratio:.2f}x <= {limit})"
        gaps = (
            f"{statistics.median([r['first_gap_s'] for r in runs]) * 1000:3.0f}/"
            f"{statistics.median([r['later_gaps_s'] for r in runs]) * 1000:3.0f} ms {gap_ratio:.2f}x"
        )
        # the most start -> 1st result can be with both limits held: the first request at its limit, the model's
        # answer as it came, the first gap at 1.5x the later ones; over it, no order of loading meets both
        most = statistics.median(
            [
                limit * floor
                + (r["first_result_s"] - r["first_request_s"] - r["first_gap_s"])
                + 1.5 * r["later_gaps_s"]
                for r in runs
            ]
        )
        result = f"{statistics.median([r['first_result_s'] for r in runs]) * 1000:4.0f} ms (<= {most * 1000:3.0f})"
        verdict = ("ok" if ok else "FAIL") if verdicts else ""
        init = statistics.median([r["initialize_s"] for r in runs]) * 1000
        print(
            f"{cell.front:6} {cell.label:19} {'' if init != init else f'{init:4.0f} ms':7} {first_text:30} {gaps:16} "
            f"{result:27} {'' if rss != rss else f'{rss:.0f}':12} {verdict}"
        )
    return failed


def checkout_of(bridge: str) -> Path:
    """The checkout an `agent-bridge` console script runs: <checkout>/.venv/bin/agent-bridge."""
    return Path(bridge).resolve().parents[2] if Path(bridge).name == "agent-bridge" else ROOT


def compare(now: list[Cell], before: list[Cell], samples: dict[Cell, list[dict[str, float]]]) -> None:
    """Each cell's medians now and before, measured interleaved: ratios over 1 are slower now."""
    print(f"{'front':6} {'setting':19} {'first request now/before ms':28} {'to 1st result now/before ms':28}")
    for cell, old in zip(now, before, strict=True):
        texts = []
        for key in ("first_request_s", "first_result_s"):
            a = statistics.median([r[key] for r in samples[cell]]) * 1000
            b = statistics.median([r[key] for r in samples[old]]) * 1000
            texts.append(f"{a:5.0f} / {b:5.0f} ({a / b:.2f}x)")
        print(f"{cell.front:6} {cell.label:19} {texts[0]:28} {texts[1]:28}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--mechanisms",
        action="store_true",
        help="instead of the matrix: each start-up mechanism on and off (what each one buys), no verdicts",
    )
    parser.add_argument(
        "--model-ms",
        type=float,
        default=0.0,
        help="the model takes this long over each answer (default 0: it answers at once, so nothing the bridge "
        "loads after the first request overlaps it; a real model takes 0.5-2 s)",
    )
    parser.add_argument(
        "--against",
        metavar="AGENT_BRIDGE",
        help="another checkout's `agent-bridge` (e.g. the commit before a change, in its own venv): the matrix for "
        "both, interleaved in one run, and each cell's figures now / before",
    )
    args = parser.parse_args()
    global MODEL_MS
    MODEL_MS = args.model_ms
    for bridge in (BRIDGE, *([args.against] if args.against else [])):
        if not compileall.compile_dir(checkout_of(bridge) / "bridge", quiet=1):
            sys.exit(f"compiling the bytecode of {checkout_of(bridge)} failed")
    if args.against:
        now = matrix_cells()
        before = [replace(cell, bridge=args.against) for cell in now]
        samples, floors = measure([cell for pair in zip(now, before, strict=True) for cell in pair])
        print(f"floor: median {statistics.median(floors) * 1000:.0f} ms, {len(floors)} runs")
        compare(now, before, samples)
        return
    cells = mechanism_cells() if args.mechanisms else matrix_cells()
    samples, floors = measure(cells)
    floor = statistics.median(floors)
    print(
        f"floor (python + httpx2 posting the bridge's first request): median {floor * 1000:.0f} ms, "
        f"p95 {p95(floors) * 1000:.0f} ms, {len(floors)} runs"
    )
    failed = report(cells, samples, floor, verdicts=not args.mechanisms)
    if not args.mechanisms:
        print(f"{len(cells) - failed} of {len(cells)} cells ok")


if __name__ == "__main__":
    main()
