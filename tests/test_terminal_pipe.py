"""`agent-bridge run … | head -2`: when the reader goes away, the turn stops as a Ctrl-C stops it and the process
ends with SIGPIPE's code (141), quietly. Before, the broken pipe went up through the turn's tool calls as a
traceback on stderr, and the verification round saw a run hang on it once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def test_a_closed_pipe_stops_the_turn_quietly(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = ws / "second-call-ran"
    calls = [{"command": "seq 1 20000"}, {"command": f"touch {marker}"}]
    responses = [
        {"content": [{"type": "tool_use", "name": "Bash", "input": call}], "stop_reason": "tool_use"} for call in calls
    ]
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps({"responses": [*responses, {"content": [{"type": "text", "text": "done"}]}]}))
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    argv = [AGENT_BRIDGE, "run", "--cwd", str(ws), "--offline", str(scenario), "--allow", "Bash(touch *)", "go"]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, stdin=subprocess.DEVNULL)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    assert first, "the control: it wrote before the reader left"
    process.stdout.close()  # as `head -1` does
    try:
        code = process.wait(timeout=60)
        err = process.stderr.read().decode()
    finally:
        process.kill()
        process.stderr.close()
    assert code == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert not marker.exists(), "the turn stopped: the call after the closed output never ran"
