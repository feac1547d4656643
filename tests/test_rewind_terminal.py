"""`/rewind` and `/changes` in the terminal (issue 23 item 3): `agent-bridge run --continue` goes on with the
latest session of the folder, so the commands have a history to work on. Real `agent-bridge` processes, the
offline `playground` model, real commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def _run(tmp_path: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "AGENT_BRIDGE_SANDBOX": "0",
    }
    return subprocess.run(
        [AGENT_BRIDGE, "run", "--offline", "playground", "--dangerously-approve-all", "--cwd", str(workspace), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_rewind_in_the_terminal_on_the_continued_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    first = _run(tmp_path, workspace, "run: echo one > a.txt")
    assert first.returncode == 0, first.stderr
    assert "go on with `agent-bridge run --continue`" in first.stdout
    assert _run(tmp_path, workspace, "--continue", "run: echo two > a.txt && echo b > b.txt").returncode == 0
    assert (workspace / "a.txt").read_text() == "two\n"

    changes = _run(tmp_path, workspace, "--continue", "/changes 2")
    assert "a.txt (modified, by `echo two > a.txt && echo b > b.txt`)" in changes.stdout, changes.stdout

    listing = _run(tmp_path, workspace, "--continue", "/rewind")
    assert "1. run: echo one > a.txt — 2 files changed since" in listing.stdout, listing.stdout
    rewound = _run(tmp_path, workspace, "--continue", "/rewind 2 code")
    assert rewound.returncode == 0, rewound.stderr
    assert "Rewind code to before prompt 2" in rewound.stdout and "delete b.txt" in rewound.stdout
    assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "b.txt").exists()

    missing = _run(tmp_path, workspace, "--resume", "sess_nope", "/rewind")
    assert missing.returncode == 2 and "sess_nope" in missing.stdout
