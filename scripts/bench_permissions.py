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
from typing import Any, cast

from bridge.abort import Abort
from bridge.mcp.tools import Calls, tools_of
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.tools.base import AnyTool, BoundCall, ToolContext
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.registry import core_tools, rule_grammar


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
    engine = PermissionEngine(cwd=ws, settings=store, grammar=rule_grammar(), session_rules=RuleSet())
    assert not engine.errors, engine.errors
    return engine


def bound(tool: AnyTool, raw: dict[str, Any], cwd: Path) -> BoundCall:
    """A call as the executor hands it to the engine: the tool bound to its parsed input (parsed before timing)."""
    data = tool.input_model.model_validate(raw)
    return BoundCall(tool, data, raw, ToolContext(cwd=cwd, abort=Abort(), data_dir=cwd), tool.traits(data).read_only)


def calls(ws: Path) -> list[BoundCall]:
    tools = {tool.name: tool for tool in core_tools()}
    [mcp] = tools_of(cast(Calls, None), "server30", [{"name": "do"}], set())
    return [
        bound(tools["Bash"], {"command": "tool250 run task250 --fast"}, ws),  # allowed by a rule
        bound(tools["Bash"], {"command": "git status && ls src | head -5"}, ws),  # read-only
        bound(tools["Bash"], {"command": "make build && tool3 run task3 x > out.txt"}, ws),  # asks
        bound(tools["Bash"], {"command": "danger3 --all"}, ws),  # denied
        bound(tools["Edit"], {"file_path": str(ws / "src/pkg150/a.py"), "old_string": "a", "new_string": "b"}, ws),
        bound(tools["Read"], {"file_path": "/opt/data50/x"}, ws),
        bound(tools["WebFetch"], {"url": "https://site20.example.com/a", "prompt": "p"}, ws),
        bound(mcp, {}, ws),
    ]


SIZES = [
    ("ls", "ls"),
    ("1 kB", "ls; " * 256),
    ("10 kB", "ls; " * 2_560),
    ("50 kB of words", "echo " + "ab " * 16_000),
    ("100 kB heredoc", "cat > f <<'EOF'\n" + "line of text\n" * 7_600 + "EOF"),
    ("1 MB", "true; " * 170_000),
    ("3 MB", "true; " * 500_000),
    ("10 MB", "true; " * 1_750_000),
]


def sizes(engine: PermissionEngine) -> None:
    """Each command is new to the engine (a distinct text), so nothing comes from the verdict cache."""
    print("command size                  decision  median ms  max ms   vs `ls`")
    bash, ctx = BashTool(), ToolContext(cwd=engine.cwd, abort=Abort(), data_dir=engine.cwd)
    base = 0.0
    for n, (name, command) in enumerate(SIZES):
        times = []
        for i in range(5 if len(command) < 200_000 else 3):
            text = f"{command} #{n}-{i}"
            call = BoundCall(bash, BashInput(command=text), {"command": text}, ctx, read_only=False)
            started = time.perf_counter()
            decision = engine.decide(call)
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
            call = samples[n % len(samples)]
            started = time.perf_counter_ns()
            decision = engine.decide(call)
            elapsed = (time.perf_counter_ns() - started) / 1000
            every.append(elapsed)
            per_kind.setdefault(f"{call.tool_name} -> {decision.behavior}", []).append(elapsed)
    print(f"{args.calls} decisions, 1000 rules in 4 settings files (a stat per file per call included)")
    print(f"{'all':<28} median {statistics.median(every):8.1f} us   p95 {_p95(every):8.1f} us")
    for kind, values in per_kind.items():
        print(f"{kind:<28} median {statistics.median(values):8.1f} us   p95 {_p95(values):8.1f} us")


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


if __name__ == "__main__":
    main()
