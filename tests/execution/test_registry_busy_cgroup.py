"""A command's cgroup still busy when the bridge exits (its last process killed without waiting, still dying) is
removed by the watchdog once the bridge is gone: `close` used to let the watchdog go with the cgroup left behind
(one empty `agent-bridge-*` cgroup per CI run). A real registry, watchdog, cgroup and process, in a bridge-like
process that ends with `os._exit`, as `agent-bridge` does."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from asyncio.subprocess import PIPE, STDOUT
from pathlib import Path

import pytest

from bridge.execution import limits
from tests.poll import poll

BRIDGE = """
import os, signal, subprocess, sys
from pathlib import Path
from bridge.execution.registry import ProcessRegistry
data, cgroup = Path(sys.argv[1]), Path(sys.argv[2])
child = subprocess.Popen(["sleep", "60"])
(cgroup / "cgroup.procs").write_text(str(child.pid))
registry = ProcessRegistry(data)
registry.add_cleanup(cgroup, "cgroup")
registry.close()  # the cgroup is busy: its process still runs
print("left" if cgroup.is_dir() else "removed", flush=True)
os.kill(child.pid, signal.SIGKILL)  # killed, not waited for
os._exit(0)
"""


def cgroup_base() -> Path | None:
    base = limits._own_cgroup1_dir("pids") or limits._own_cgroup2_dir()
    if base is None or not os.access(base, os.W_OK):
        return None
    return base


@pytest.mark.skipif(sys.platform != "linux" or cgroup_base() is None, reason="needs a cgroup this user can make")
async def test_a_cgroup_busy_at_a_clean_exit_is_removed_once_the_bridge_is_gone(tmp_path: Path) -> None:
    base = cgroup_base()
    assert base is not None
    cgroup = base / f"agent-bridge-test-{uuid.uuid4().hex[:8]}"
    cgroup.mkdir()
    try:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        bridge = await asyncio.create_subprocess_exec(
            sys.executable, "-c", BRIDGE, str(tmp_path / "data"), str(cgroup), env=env, stdout=PIPE, stderr=STDOUT
        )
        out, _ = await asyncio.wait_for(bridge.communicate(), 60)
        assert out.decode().strip() == "left", out.decode()  # the control: busy at close
        await poll(lambda: not cgroup.exists(), timeout=10, what="the watchdog to remove the cgroup")
        assert list((tmp_path / "data" / "running").glob("*.json")) == []  # and its file
    finally:
        if cgroup.exists():
            for pid in (cgroup / "cgroup.procs").read_text().split():
                os.kill(int(pid), 9)
            await poll(lambda: not (cgroup / "cgroup.procs").read_text().strip(), timeout=10, what="empty")
            cgroup.rmdir()
