"""Decision time per call with 1,000 rules spread over the settings sources, and the time to answer commands
of growing size (up to 10 MB, issue 9's denial of service) against a one-word command in the same run
(not part of the test suite).

    .venv/bin/python scripts/bench_permissions.py [--calls N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore


def build(root: Path) -> PermissionEngine:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    bash = [f"Bash(tool{i} run task{i} *)" for i in range(500)] + [f"Bash(cmd{i}:*)" for i in range(100)]
    paths = [f"Edit(src/pkg{i}/**)" for i in range(200)] + [f"Read(//opt/data{i}/**)" for i in range(100)]
    web = [f"WebFetch(domain:site{i}.example.com)" for i in range(50)]
    mcp = [f"mcp__server{i}" for i in range(40)]
    deny = [f"Bash(danger{i} *)" for i in range(10)]
    rules = bash + paths + web + mcp
    assert len(rules) + len(deny) == 1000
    files = {
        ws / ".agent-bridge/settings.local.json": {"allow": rules[:400]},
        ws / ".agent-bridge/settings.json": {"allow": rules[400:700], "deny": deny},
        root / "cfg/settings.json": {"allow": rules[700:850]},
        ws / ".claude/settings.json": {"allow": rules[850:]},
    }
    for path, perms in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"permissions": perms}))
    store = SettingsStore(ws, user_config_dir=root / "cfg", claude_home=root / "claude", trust="trusted")
    engine = PermissionEngine(cwd=ws, settings=store, session_rules=RuleSet())
    assert not engine.errors, engine.errors
    return engine


Call = tuple[str, dict[str, Any], bool, list[tuple[Path, Literal["read", "write"]]]]


def calls(ws: Path) -> list[Call]:
    return [
        ("Bash", {"command": "tool250 run task250 --fast"}, False, []),  # allowed by a rule
        ("Bash", {"command": "git status && ls src | head -5"}, False, []),  # read-only
        ("Bash", {"command": "make build && tool3 run task3 x > out.txt"}, False, []),  # asks
        ("Bash", {"command": "danger3 --all"}, False, []),  # denied
        ("Edit", {}, False, [(ws / "src/pkg150/a.py", "write")]),
        ("Read", {}, True, [(Path("/opt/data50/x"), "read")]),
        ("WebFetch", {"url": "https://site20.example.com/a"}, True, []),
        ("mcp__server30__do", {}, False, []),
    ]


SIZES = [("ls", "ls"), ("1 kB", "ls; " * 256), ("10 kB", "ls; " * 2_560), ("50 kB of words", "echo " + "ab " * 16_000),
         ("100 kB heredoc", "cat > f <<'EOF'\n" + "line of text\n" * 7_600 + "EOF"),
         ("1 MB", "true; " * 170_000), ("3 MB", "true; " * 500_000), ("10 MB", "true; " * 1_750_000)]


def sizes(engine: PermissionEngine) -> None:
    """Each command is new to the engine (a distinct text), so nothing comes from the verdict cache."""
    print("command size                  decision  median ms  max ms   vs `ls`")
    base = 0.0
    for n, (name, command) in enumerate(SIZES):
        times = []
        for i in range(5 if len(command) < 200_000 else 3):
            text = f"{command} #{n}-{i}"
            started = time.perf_counter()
            decision = engine.decide("Bash", {"command": text}, read_only=False, paths=[])
            times.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        base = base or median
        print(f"{name:<28}  {decision.behavior:<8}  {median:9.2f}  {max(times):6.1f}  {median / base:7.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=4000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = build(Path(tmp))
        sizes(engine)
        samples = calls(engine.cwd)
        per_kind: dict[str, list[float]] = {}
        every: list[float] = []
        for n in range(args.calls):
            tool, raw, read_only, paths = samples[n % len(samples)]
            started = time.perf_counter_ns()
            decision = engine.decide(tool, raw, read_only=read_only, paths=paths)
            elapsed = (time.perf_counter_ns() - started) / 1000
            every.append(elapsed)
            per_kind.setdefault(f"{tool} -> {decision.behavior}", []).append(elapsed)
    print(f"{args.calls} decisions, 1000 rules in 4 settings files (a stat per file per call included)")
    print(f"{'all':<28} median {statistics.median(every):8.1f} us   p95 {_p95(every):8.1f} us")
    for kind, values in per_kind.items():
        print(f"{kind:<28} median {statistics.median(values):8.1f} us   p95 {_p95(values):8.1f} us")


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


if __name__ == "__main__":
    main()
