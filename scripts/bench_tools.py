"""Tool benchmarks (issue 3), each against a baseline in the same run:

- Grep and Glob over the Python standard library (found via sysconfig) vs raw `rg` on the same query, also
  with the permission engine's result guard (a Read deny rule in force), as a session runs them
- Read with offset/limit deep in a 1 GB sparse file (time and peak Python memory)
- Edit on a 10 MB file vs a plain read + replace + write of the same bytes
- the first request's system + tools size in characters
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.abort import Abort
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.prompt import system_prompt
from bridge.tools.base import ToolContext
from bridge.tools.edit import EditInput, EditTool
from bridge.tools.glob import GlobInput, GlobTool
from bridge.tools.grep import GrepInput, GrepTool
from bridge.tools.read import ReadInput, ReadTool
from bridge.tools.registry import core_tools, rule_grammar
from bridge.tools.ripgrep import rg_binary

RUNS = 5


def _ctx(cwd: Path, data: Path) -> ToolContext:
    return ToolContext(cwd=cwd, abort=Abort(), data_dir=data)


async def _time(fn: Any) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _time_sync(argv: list[str], cwd: Path) -> float:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def main() -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    rg = rg_binary()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        ctx = _ctx(stdlib, data)
        grep, glob = GrepTool(), GlobTool()
        store = SettingsStore(stdlib, user_config_dir=data / "cfg", claude_home=data / "home")
        engine = PermissionEngine(
            cwd=stdlib, settings=store, grammar=rule_grammar(), session_rules=RuleSet.of(deny=["Read(**/secret*)"])
        )

        def guarded() -> ToolContext:  # a session builds one per call, with the guard snapshot of the rules
            return ToolContext(cwd=stdlib, abort=Abort(), data_dir=data, read_guard=engine.read_guard())

        queries = {
            "grep files_with_matches 'def __init__'": (
                lambda: grep.call(GrepInput(pattern="def __init__"), ctx),
                [rg, "--hidden", "-l", "def __init__", "."],
            ),
            "grep content -n 'TODO'": (
                lambda: grep.call(GrepInput.model_validate({"pattern": "TODO", "output_mode": "content"}), ctx),
                [rg, "--hidden", "-n", "TODO", "."],
            ),
            "grep files_with_matches, engine guard": (
                lambda: grep.call(GrepInput(pattern="def __init__"), guarded()),
                [rg, "--hidden", "-l", "def __init__", "."],
            ),
            "grep content -n, engine guard": (
                lambda: grep.call(GrepInput.model_validate({"pattern": "TODO", "output_mode": "content"}), guarded()),
                [rg, "--hidden", "-n", "TODO", "."],
            ),
            "glob **/*.py": (lambda: glob.call(GlobInput(pattern="**/*.py"), ctx), [rg, "--files", "-g", "*.py", "."]),
            "glob **/*.py, engine guard": (
                lambda: glob.call(GlobInput(pattern="**/*.py"), guarded()),
                [rg, "--files", "-g", "*.py", "."],
            ),
        }
        print(f"stdlib: {stdlib}")
        for name, (ours, raw) in queries.items():
            mine = await _time(ours)
            base = _time_sync(raw, stdlib)
            print(f"{name:<42} ours {mine * 1000:8.1f} ms   raw rg {base * 1000:8.1f} ms   ratio {mine / base:5.2f}")

        big = data / "big.log"
        with open(big, "wb") as out:
            for i in range(300_000):
                out.write(f"line {i}\n".encode())
            out.truncate(1 << 30)  # 1 GB, sparse after the text
        read = ReadTool()
        rctx = _ctx(data, data)
        tracemalloc.start()
        start = time.perf_counter()
        result = await read.call(ReadInput(file_path=str(big), offset=250_000, limit=20), rctx)
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert "line 250000" in str(result.content)
        print(f"Read offset=250000 limit=20 of a 1 GB file: {elapsed * 1000:.1f} ms, peak {peak / 1e6:.1f} MB")

        ten = data / "ten.txt"
        body = "".join(f"row {i} value {i * 7}\n" for i in range(500_000))
        ten.write_text(body)
        size = ten.stat().st_size
        edit = EditTool()
        ectx = _ctx(data, data)
        await read.call(ReadInput(file_path=str(ten), limit=1), ectx)
        start = time.perf_counter()
        done = await edit.call(EditInput(file_path=str(ten), old_string="row 250000 value", new_string="ROW"), ectx)
        edit_s = time.perf_counter() - start
        assert not done.is_error
        start = time.perf_counter()
        text = ten.read_text()
        ten.write_text(text.replace("ROW", "row 250000 value", 1))
        plain = time.perf_counter() - start
        print(
            f"Edit on a {size / 1e6:.1f} MB file: {edit_s * 1000:.1f} ms vs plain read+replace+write "
            f"{plain * 1000:.1f} ms (ratio {edit_s / plain:.2f})"
        )

    tools = [tool.schema() for tool in core_tools()]
    system = system_prompt(Path.cwd())
    print(
        f"first request: system {len(json.dumps(system)):,} + tools {len(json.dumps(tools)):,} chars "
        f"({len(tools)} tools); Claude Code sends ~78,000"
    )


if __name__ == "__main__":
    asyncio.run(main())
