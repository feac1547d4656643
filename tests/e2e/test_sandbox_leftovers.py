"""What the sandbox makes in the host's temp dir — the commands' private /tmp, a folder's hooks' own /tmp, the
empty file it shows in place of a masked one — is gone once the bridge is, whether it exits or is killed with
`kill -9` (then its watchdog removes them). A folder's hooks' /tmp and the empty file were not written down in the
process registry: every killed bridge left them behind (57 a CI run, here). Real bridges, real sandboxes, the
host's temp dir looked at directly."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

import pytest

from bridge.execution.sandbox import probe
from tests.e2e.harness import AGENT_BRIDGE, poll, text_response, tool_response
from tests.e2e.test_trust import UNTRUSTED, clone, hook, scenario_file

pytestmark = pytest.mark.skipif(not probe().ok, reason="needs the OS sandbox (bubblewrap)")


def leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("agent-bridge-") and "-tmp-" in p.name)


def empties(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("agent-bridge-empty-"))


def setting_up(tmp_path: Path, command: str) -> tuple[Path, Path, dict[str, str], list[str]]:
    """A trusted clone whose own hook runs at each prompt (so in the sandbox, with its own /tmp), a secret in it
    that a deny rule masks (with the empty file), and a turn that runs `command` in the sandbox."""
    markers = tmp_path / "project" / "markers"
    project = clone(
        tmp_path,
        {
            ".agent-bridge/settings.json": {
                "hooks": {"UserPromptSubmit": hook(f"echo > {markers}/hook")},
                "permissions": {"deny": ["Read(./secret.txt)"]},
            },
            "secret.txt": "S3CRET\n",
        },
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "home").mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        **UNTRUSTED,
    }
    scenario = scenario_file(tmp_path, [tool_response(("Bash", {"command": command})), text_response("done")])
    argv = [AGENT_BRIDGE, "run", "--offline", scenario, "--trust-folder", "--dangerously-approve-all", "go"]
    return project, tmp, env, argv


def test_an_exiting_bridge_leaves_nothing_in_the_temp_dir(tmp_path: Path) -> None:
    project, tmp, env, argv = setting_up(tmp_path, "echo ran > markers/command")
    done = subprocess.run(argv, cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (project / "markers").iterdir()) == ["command", "hook"], done.stdout + done.stderr
    assert leftovers(tmp) == [] and empties(tmp) == []


async def test_a_killed_bridges_temp_dirs_are_removed_by_its_watchdog(tmp_path: Path) -> None:
    project, tmp, env, argv = setting_up(tmp_path, "echo ran > markers/command; sleep 60")
    with (tmp_path / "out.log").open("wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    try:
        ran = lambda: (project / "markers" / "command").exists() or process.returncode is not None  # noqa: E731
        await poll(ran, timeout=60, what="the command to run")
        assert process.returncode is None, (tmp_path / "out.log").read_text()
        made = leftovers(tmp)
        assert len(made) == 2 and empties(tmp), made  # the commands' /tmp and the hooks': the control
        process.send_signal(signal.SIGKILL)
        await process.wait()
        await poll(lambda: not leftovers(tmp) and not empties(tmp), timeout=10, what="the watchdog to remove them")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
