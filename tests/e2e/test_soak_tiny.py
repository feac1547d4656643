"""scripts/bench_soak.py at its smallest (1 session x 3 turns: a cancelled command, the kill -9 + restart, an
Edit; no MCP server, to keep it cheap), so that the soak keeps working between runs of the real one
(scripts/bench)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_soak.py"


def load_soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_soak", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def test_tiny_soak_meets_its_goals() -> None:
    soak = load_soak()
    size = soak.parse_args(["--sessions", "1", "--turns", "3", "--kinds", "cancel-command,edit", "--no-mcp"])
    summary = await soak.run(size)
    assert summary["cancels"] == 1 and summary["killed_turns"] == 1
    assert summary["goals"] == dict.fromkeys(summary["goals"], "PASS") and len(summary["goals"]) == 4
    assert summary["checks"] == dict.fromkeys(summary["checks"], "PASS")
    assert summary["processes_before_kill"] > 2 and summary["processes_left"] == 0
