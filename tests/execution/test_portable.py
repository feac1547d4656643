"""The portable switch: `AGENT_BRIDGE_PORTABLE=1` takes every Linux extra away (subreaper, parent-death signal, /proc
start times, cgroups, bwrap's --die-with-parent, the watchdog's pidfd), so the process tests' second run in
scripts/test runs the paths macOS and Windows take. Each fact is read in a fresh process, with the switch and
without it (the control: the same facts differ, so the switch is what changed them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.execution import host

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not host.linux(), reason="the extras are Linux's")

FACTS = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from bridge.execution import limits, proctable
    from bridge.execution.bwrap import bwrap_argv
    from bridge.execution.linux import pdeathsig_prefix
    from bridge.execution.sandbox_plan import MountPlan
    from bridge.execution.supervisor import ProcessSupervisor, command_environment, shell_argv
    from bridge.permissions.sandbox_policy import SandboxPolicy

    async def main():
        data = Path(sys.argv[1])
        supervisor = ProcessSupervisor(data_dir=data)
        proc = await supervisor.spawn(shell_argv("sleep 30"), cwd=data, env=command_environment())
        registry = json.loads(next((data / "running").glob("*.json")).read_text())
        policy = SandboxPolicy(cwd=data, writable=(data,), protected=(), read_only=(), masked=(), network=False)
        facts = {
            "subreaper": supervisor.subreaper, "pdeathsig": pdeathsig_prefix(), "clock": proctable.clock(),
            "registry_clock": registry["clock"], "limits": limits.backend(),
            "bwrap": bwrap_argv("bwrap", policy, MountPlan()),
            "watchdog": supervisor.registry.watchdog_pid, "shell": proc.pid,
        }
        print(json.dumps(facts), flush=True)
        sys.stdin.readline()
        await supervisor.shutdown()

    asyncio.run(main())
""")


def facts(tmp_path: Path, portable: bool) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in (host.PORTABLE_ENV, "AGENT_BRIDGE_LIMITS")}
    if portable:
        env[host.PORTABLE_ENV] = "1"
    data = tmp_path / ("portable" if portable else "linux")
    data.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", FACTS, str(data)],
        cwd=ROOT,
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    found: dict[str, Any] = json.loads(child.stdout.readline())
    # The watchdog may not have exec'd yet (its cmdline reads empty until it has): read until it has, with a deadline.
    deadline = time.monotonic() + 20
    while True:
        with open(f"/proc/{found['watchdog']}/cmdline", "rb") as fh:
            found["watchdog_argv"] = [a.decode() for a in fh.read().split(b"\0") if a]
        if "--watch" in found["watchdog_argv"] or time.monotonic() > deadline:
            break
    child.stdin.write("\n")
    child.stdin.close()
    assert child.wait(20) == 0
    child.stdout.close()
    return found


def test_the_switch_turns_every_linux_extra_off(tmp_path: Path) -> None:
    portable = facts(tmp_path, portable=True)
    assert portable["subreaper"] is False
    assert portable["pdeathsig"] == []
    assert portable["clock"] == portable["registry_clock"] == "ms"  # start times from psutil, not /proc
    assert portable["limits"] == "rlimit"  # no cgroups
    assert "--die-with-parent" not in portable["bwrap"]
    import psutil

    argv = portable["watchdog_argv"]
    assert argv[-1] == "ms" and str(Path(psutil.__file__).parents[1]) in argv[argv.index("--watch") - 1]


def test_without_it_the_extras_are_on(tmp_path: Path) -> None:
    """The control: the same facts, read without the switch, are the Linux extras."""
    linux = facts(tmp_path, portable=False)
    assert linux["subreaper"] is True
    assert linux["clock"] == linux["registry_clock"] == "ticks"
    argv = linux["watchdog_argv"]
    assert argv[-1] == "ticks" and argv[argv.index("--watch") - 1] == str(ROOT)  # stdlib only
    assert "--die-with-parent" in linux["bwrap"]
    if shutil.which("setpriv"):
        assert linux["pdeathsig"][1:] == ["--pdeathsig", "KILL", "--"]
