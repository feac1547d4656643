"""The OS sandbox's cost per command (issue 9): `true` and `echo x` through the Bash tool, sandboxed
(bubblewrap) vs unsandboxed, interleaved in one run so both see the same machine load. Median and p95.
Also: the same with a Read deny rule that makes the sandbox walk the workspace (`Read(.env)`), and (issue 21)
how long a file a command makes at a protected name exists before the sandbox sets it aside, and the cost of
per-command resource limits on sandboxed `echo x`: each backend this machine has
(`AGENT_BRIDGE_LIMITS`) against limits off, in interleaved blocks of 5 (a session's commands share a backend;
a memory cgroup's first command after the bridge ran in another costs more: see limits.CgroupPool).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.abort import Abort
from bridge.execution import limits
from bridge.execution.sandbox import Sandbox, probe
from bridge.execution.supervisor import ProcessSupervisor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.settings import SettingsStore
from bridge.tools.base import Services, ToolContext
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.registry import rule_grammar

RUNS = 40
BLOCK = 5  # consecutive commands per limits backend, blocks interleaved
BASH = BashTool()


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def line(name: str, samples: list[float]) -> str:
    return f"{name:<34} median {statistics.median(samples) * 1000:7.1f} ms   p95 {p95(samples) * 1000:7.1f} ms"


async def main() -> None:
    available = probe()
    if not available.ok:
        print(f"sandbox unavailable: {available.reason}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        git_init(ws)
        for i in range(200):  # a small project for the deny rule to walk
            (ws / f"pkg{i % 20}").mkdir(exist_ok=True)
            (ws / f"pkg{i % 20}" / f"mod{i}.py").write_text("x = 1\n")
        store = SettingsStore(ws, user_config_dir=root / "config", claude_home=root / "claude")
        engine = PermissionEngine(cwd=ws, settings=store, grammar=rule_grammar(), mode="bypassPermissions")
        supervisor = ProcessSupervisor(data_dir=root / "data")
        sandbox = Sandbox.for_engine(engine)
        plain = ToolContext(cwd=ws, abort=Abort(), data_dir=root / "data", services=Services(processes=supervisor))
        boxed = ToolContext(
            cwd=ws, abort=Abort(), data_dir=root / "data", services=Services(processes=supervisor, sandbox=sandbox)
        )
        results: dict[str, list[float]] = {}
        for command in ("true", "echo x"):
            for _ in range(3):  # warm up both
                await BASH.call(BashInput(command=command), plain)
                await BASH.call(BashInput(command=command), boxed)
            for _ in range(RUNS):
                for name, ctx in ((f"{command!r} unsandboxed", plain), (f"{command!r} sandboxed", boxed)):
                    start = time.perf_counter()
                    result = await BASH.call(BashInput(command=command), ctx)
                    results.setdefault(name, []).append(time.perf_counter() - start)
                    assert not result.is_error, result.content
        backends = ["off", *(b for b in limits.BACKENDS if b == "rlimit" or limits._available(b))]
        for _ in range(RUNS // BLOCK):  # in blocks: a session's commands all run with the same backend
            for backend in backends:
                os.environ[limits.LIMITS_ENV] = backend
                for _ in range(BLOCK):
                    start = time.perf_counter()
                    result = await BASH.call(BashInput(command="echo x"), boxed)
                    elapsed = time.perf_counter() - start
                    results.setdefault(f"'echo x' sandboxed, limits {backend}", []).append(elapsed)
                    assert not result.is_error, result.content
        os.environ.pop(limits.LIMITS_ENV, None)
        # how long a file made at a protected name that did not exist stays before it is set aside (the window a
        # program outside the sandbox has to read it), timed inside the command
        made = (
            "import os, time\nt = time.perf_counter()\nopen('.envrc', 'w').close()\n"
            "while os.path.lexists('.envrc'):\n    time.sleep(0.0001)\nprint(time.perf_counter() - t)\n"
        )
        for _ in range(RUNS // 2):
            result = await BASH.call(BashInput(command=f"python3 -c {shlex.quote(made)}"), boxed)
            first = str(result.content).split()[0]
            results.setdefault("set-aside window (.envrc made)", []).append(float(first))
        os.environ.pop(limits.LIMITS_ENV, None)
        (ws / ".agent-bridge").mkdir()
        (ws / ".agent-bridge" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(.env)"]}}))
        store.refresh(force=True)
        for _ in range(RUNS // 2):
            start = time.perf_counter()
            await BASH.call(BashInput(command="true"), boxed)
            results.setdefault("'true' sandboxed + Read(.env) deny", []).append(time.perf_counter() - start)
        await supervisor.shutdown()
        sandbox.close()
    for name, samples in results.items():
        print(line(name, samples))
    for command in ("true", "echo x"):
        boxed_median = statistics.median(results[f"{command!r} sandboxed"])
        plain_median = statistics.median(results[f"{command!r} unsandboxed"])
        ratio, extra = boxed_median / plain_median, boxed_median - plain_median
        print(f"{command!r}: sandboxed / unsandboxed median ratio {ratio:.2f} (+{extra * 1000:.1f} ms)")
    off = statistics.median(results["'echo x' sandboxed, limits off"])
    for name, samples in results.items():
        if name.startswith("'echo x' sandboxed, limits ") and not name.endswith(" off"):
            median = statistics.median(samples)
            print(
                f"{name.split('limits ')[1]} limits: median ratio to limits off {median / off:.2f} "
                f"(+{(median - off) * 1000:.1f} ms), p95 {p95(samples) * 1000:.1f} ms vs "
                f"{p95(results[chr(39) + 'echo x' + chr(39) + ' sandboxed, limits off']) * 1000:.1f} ms"
            )


if __name__ == "__main__":
    asyncio.run(main())
