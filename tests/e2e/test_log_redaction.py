"""The bridge's log never carries its credentials (attack round 6): at DEBUG, pygls logged `initialize` in full,
`initializationOptions.apiKey` and all, to stderr, which editors show and users paste into issues."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ENV_KEY = "env-credential-9f8e7d6c5b4a"
OPTION_KEY = "sk-ant-api03-OPTIONKEYOPTIONKEY"
PLAIN_KEY = "plain-option-secret-123456"


def _frame(message: Mapping[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_debug_logging_shows_no_key_from_the_environment_or_the_editor(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_"))}
    env |= {
        "ANTHROPIC_API_KEY": ENV_KEY,
        "AGENT_BRIDGE_LOG": "DEBUG",
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "HOME": str(tmp_path),
    }
    messages = b"".join(
        _frame(m)
        for m in (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": 1,
                    "capabilities": {},
                    "initializationOptions": {"apiKey": OPTION_KEY, "model": "claude-sonnet-4-5"},
                },
            },
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "initialize",
                "params": {"initializationOptions": {"apiKey": PLAIN_KEY}},
            },
            {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli.main", "serve"], input=messages, env=env, capture_output=True, timeout=60
    )
    stderr = done.stderr.decode(errors="replace")
    assert "initializationOptions" in stderr or "initialization_options" in stderr, stderr[-2000:]  # it was logged
    for secret in (ENV_KEY, OPTION_KEY, PLAIN_KEY, "OPTIONKEY"):
        assert secret not in stderr, f"{secret} in the log"
    assert "[redacted]" in stderr
