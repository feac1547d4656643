"""Attack round 24: a password in ANTHROPIC_BASE_URL (`http://user:secret@gateway/`, sent as Basic authorization in
place of the key) is a credential like the key: at INFO the HTTP client logged the URL whole, and an unreachable
gateway's error showed it on the terminal and kept it in the transcript. Now logs and errors show `user:***@`, and
the password is one of the values no command is handed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from bridge.environment import credential_values
from bridge.log_redaction import redact
from bridge.offline import OfflineServer
from tests.e2e.harness import text_response

PASSWORD = "gwPASS-SECRET-8181"
AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def run(tmp_path: Path, base_url: str) -> tuple[subprocess.CompletedProcess[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    data = tmp_path / "data"
    env.update(
        HOME=str(tmp_path / "home"),
        AGENT_BRIDGE_DATA_DIR=str(data),
        AGENT_BRIDGE_CONFIG_DIR=str(tmp_path / "cfg"),
        ANTHROPIC_BASE_URL=base_url,
        ANTHROPIC_API_KEY="test-key-1234",
        AGENT_BRIDGE_LOG="DEBUG",
        AGENT_BRIDGE_MAX_RETRIES="0",
    )
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [AGENT_BRIDGE, "run", "--cwd", str(ws), "--non-interactive", "hello"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    stored = "".join(p.read_text() for p in data.rglob("*.jsonl")) if data.exists() else ""
    return done, stored


def test_a_gateways_password_is_in_no_log_error_or_transcript(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # (nothing listens once it is closed)
    done, stored = run(tmp_path / "down", f"http://gwuser:{PASSWORD}@127.0.0.1:{port}/")
    assert "Cannot reach the model API at http://gwuser:***@127.0.0.1" in done.stdout + done.stderr, done.stderr
    assert PASSWORD not in done.stdout + done.stderr + stored

    with OfflineServer({"responses": [text_response("hi there")]}) as model:
        url = model.base_url.replace("http://", f"http://gwuser:{PASSWORD}@")
        done, stored = run(tmp_path / "up", url)
        assert [r.headers.get("authorization", "") for r in model.requests][:1] != [""], "the control: it was sent"
    assert "hi there" in done.stdout, done.stderr
    assert "gwuser:***@" in done.stderr, "the control: the URL was logged"
    assert PASSWORD not in done.stdout + done.stderr + stored


def test_the_password_is_a_credential_as_written_and_decoded() -> None:
    assert credential_values({"ANTHROPIC_BASE_URL": "https://u:gw%2Dpass%40word@host/"}) == [
        "gw%2Dpass%40word",
        "gw-pass@word",
    ]
    assert (
        redact("GET https://u:p%40ss-word@host:8/x and ftp://a:b@c/") == "GET https://u:***@host:8/x and ftp://a:***@c/"
    )


def test_a_raw_at_sign_in_the_password_is_hidden_too() -> None:
    """The verification round: the pattern stopped at the first `@`, and the rest of the password showed."""
    assert redact("at https://u:pa@ssw0rdXYZ@127.0.0.1:9/ and x") == "at https://u:***@127.0.0.1:9/ and x"
