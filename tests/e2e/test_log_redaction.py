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


def test_credentials_are_redacted_however_a_message_or_its_traceback_shows_them() -> None:
    """Attack round 7: a gateway key with a stray newline reached the log as a bytes literal
    (`b'Bearer gwkey-abc\\nSECRET…'`), a server's `GITHUB_TOKEN=ghp_…` as text, a list-valued `apiKey` in part,
    and a traceback was never redacted at all."""
    import logging

    from bridge.log_redaction import Redacting

    key = "gwkey-abc\nSECRETPART9876"
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Keep()
    handler.addFilter(Redacting([key]))
    log = logging.getLogger("redaction-test")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("Illegal header value %r", f"Bearer {key}".encode())
        log.warning("its stderr ends: GITHUB_TOKEN=%s | token ghp_%s", "ghp_" + "a" * 30, "b" * 30)
        log.warning("params %s", {"apiKey": ["gwkey-listvalue-123"]})
        try:
            raise RuntimeError(f"failed with {key}")
        except RuntimeError:
            log.exception("boom")
    finally:
        log.removeHandler(handler)
    text = "\n".join(records)
    for secret in ("SECRETPART9876", "a" * 30, "b" * 30, "gwkey-listvalue-123"):
        assert secret not in text, f"{secret} in {text}"
    assert text.count("[redacted]") >= 5
