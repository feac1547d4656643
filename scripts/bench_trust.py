"""The folder-trust check's cost at session start (issue 20): settings loaded with the trust store consulted and
the pending items computed, uncached (a new bridge: every file read) and cached (the same store: one stat per
file), against the same load with trust off (`trusted`: nothing to look up) in the same run.

    .venv/bin/python scripts/bench_trust.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bridge.permissions.settings import SettingsStore
from bridge.permissions.trust import TrustPolicy


def project(root: Path) -> Path:
    ws = root / "ws"
    settings = {
        "permissions": {
            "allow": [f"Bash(tool{i} *)" for i in range(40)],
            "deny": ["Read(.env)"],
            "defaultMode": "acceptEdits",
            "additionalDirectories": ["../shared"],
        },
        "hooks": {
            "PreToolUse": [
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": f"fmt {i}"}]} for i in range(10)
            ]
        },
        "env": {f"VAR{i}": str(i) for i in range(20)},
        "sandbox": {"network": {"allowedDomains": ["*"]}},
    }
    for name in (".agent-bridge/settings.json", ".claude/settings.json"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(json.dumps(settings))
    # the user's store: answers about 200 other folders and half of this one's items
    store = SettingsStore(ws, user_config_dir=root / "cfg", claude_home=root / "claude")
    folders = {f"/home/u/src/p{i}": {"approved": [{"file": "x", "kind": "env", "text": f"A={i}"}]} for i in range(200)}
    (root / "cfg").mkdir(exist_ok=True)
    (root / "cfg" / "trusted-folders.json").write_text(json.dumps({"version": 1, "folders": folders}))
    store.trust.approve(store.pending_trust()[::2])
    return ws


def measure(runs: int, action: Callable[[], object]) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = project(root)

        def start(policy: TrustPolicy) -> Callable[[], object]:
            def run() -> object:
                store = SettingsStore(ws, user_config_dir=root / "cfg", claude_home=root / "claude", trust=policy)
                return store.pending_trust(), store.rules, store.hooks("PreToolUse"), store.env

            return run

        warm = SettingsStore(ws, user_config_dir=root / "cfg", claude_home=root / "claude", trust="ask")

        def cached() -> object:
            return warm.pending_trust(), warm.rules, warm.hooks("PreToolUse"), warm.env

        pending = len(warm.pending_trust())
        rows = [
            ("uncached, trust asked (new bridge)", measure(args.runs, start("ask"))),
            ("uncached, trust off (baseline)", measure(args.runs, start("trusted"))),
            ("cached, trust asked (same store)", measure(args.runs, cached)),
        ]
        print(
            f"folder: {len(warm.trust_items)} widening items ({pending} pending), 2 settings files, a trust store "
            f"of 201 folders; {args.runs} runs"
        )
        base = rows[1][1][0]
        for name, (median, p95) in rows:
            print(f"  {name:38s} median {median:7.3f} ms  p95 {p95:7.3f} ms  ×{median / base:.2f} of the baseline")


if __name__ == "__main__":
    main()
