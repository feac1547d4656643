"""A real `agent-bridge run` process on a scripted offline model: each tool call its own model answer, then "done".
What a test proves by a side effect reads the result: the output, and the session transcripts in the data dir."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def scripted_run(
    cwd: Path,
    calls: Sequence[tuple[str, dict[str, Any]]],
    *flags: str,
    env: Mapping[str, str],
    scenario: Path,
) -> subprocess.CompletedProcess[str]:
    """Runs `calls` (tool name, input) in `cwd` with `flags` (`--allow …`, `--dangerously-approve-all`); the
    scenario file is written at `scenario`. Fails the test when the run does not end well."""
    responses = [
        {"content": [{"type": "tool_use", "name": name, "input": params}], "stop_reason": "tool_use"}
        for name, params in calls
    ]
    scenario.write_text(json.dumps({"responses": [*responses, {"content": [{"type": "text", "text": "done"}]}]}))
    done = subprocess.run(
        [AGENT_BRIDGE, "run", "--cwd", str(cwd), "--offline", str(scenario), *flags, "x"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done


def transcripts(data_dir: Path) -> list[tuple[str, str]]:
    """Every stored session's folder and transcript text."""
    found = []
    for path in sorted((data_dir / "sessions").glob("*.jsonl")):
        text = path.read_text()
        found.append((json.loads(text.splitlines()[0])["cwd"], text))
    return found
