"""Attack round 8: an MCP server's secrets never leave the bridge through what it says about the server.

A stdio server given `DB_PASSWORD` printed it before it died the way servers do — as Python shows its config (a
repr: the backslash doubled) and inside a connection URL (percent-encoded) — and only the value as written was
redacted: the editor's notice ("its stderr ends: …") and the log carried the rest. A remote server whose URL
carries a key (`?api_key=…`, `user:pass@`) was named whole in "cannot be reached at …". Every message about a
server now redacts its secret env values and headers in the forms a program prints them, and a URL it shows
keeps its scheme, host and path, never its userinfo, query values or fragment.
"""

from __future__ import annotations

import base64
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.mcp.manager import McpManager, McpSession
from bridge.mcp.settings import McpSettings
from tests.poll import poll
from tests.test_mcp_client import Editor, files_for

PASSWORD = "Pa$$w0rd\\CANARY-MCP-7f3a9"
URL_KEY = "urlkey-CANARY-URL-55aa77"
URL_PASS = "userpass-CANARY-URL-91bc"
HEADER = "hdr-CANARY-HDR-3c3c3c"
MARKER = "[redacted]"

# A server that fails at start-up the way servers do: it quotes its config, then exits before answering.
CRASHING = """
import base64, json, os, sys, urllib.parse
pw = os.environ["DB_PASSWORD"]
print("settings:", json.dumps({"password": pw}), file=sys.stderr)
print("basic:", base64.b64encode(pw.encode()).decode(), file=sys.stderr)
print("config:", {k: v for k, v in os.environ.items() if k.startswith("DB_")}, file=sys.stderr)
print(f"could not connect to postgresql://app:{urllib.parse.quote(pw, safe='')}@db:5432/app", file=sys.stderr)
sys.exit(1)
"""


def told(editor: Editor, handle: McpSession, caplog: pytest.LogCaptureFixture) -> list[str]:
    """Everything the bridge said about its servers: notices, the /mcp listing, errors and log records."""
    records = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
    errors = [c.error or "" for c in handle.connections.values()]
    return [text for _, text in editor.notices] + [handle.status_text()] + errors + records


def assert_redacted(said: list[str], *canaries: str) -> None:
    for text in said:
        for canary in canaries:
            assert canary not in text, text


async def failed(handle: McpSession) -> None:
    await poll(
        lambda: all(c.state == "failed" for c in handle.connections.values()), what="the server to fail", timeout=90
    )


async def test_a_stdio_servers_password_is_redacted_in_every_form_it_prints_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bridge.mcp")
    script = tmp_path / "crash.py"
    script.write_text(CRASHING)
    editor = Editor()
    manager = McpManager(tmp_path / "data", McpSettings(maxRestarts=0))
    spec: dict[str, Any] = {
        "name": "db",
        "command": sys.executable,
        "args": [str(script)],
        "env": [{"name": "DB_PASSWORD", "value": PASSWORD}, {"name": "DB_HOST", "value": "db"}],
    }
    handle = manager.open(tmp_path, [spec], editor.host(), files=files_for(tmp_path))
    try:
        await failed(handle)
        await poll(lambda: editor.said("its stderr ends:"), what="the notice")
        said = told(editor, handle, caplog)
        encoded = base64.b64encode(PASSWORD.encode()).decode()
        assert_redacted(said, "CANARY-MCP", "7f3a9", encoded)
        [notice] = [text for _, text in editor.notices if "its stderr ends:" in text]
        assert MARKER in notice and "could not connect to postgresql://" in notice, notice
        assert "'DB_HOST': 'db'" in notice, "what is not a secret is still shown"
        assert any("DB_PASSWORD" in record and MARKER in record for record in said), "the log says it too"
    finally:
        await handle.release()
        await manager.close()


async def test_a_remote_servers_url_is_shown_without_its_credentials(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="bridge.mcp")
    editor = Editor()
    manager = McpManager(tmp_path / "data", McpSettings(maxRestarts=0, startupTimeout=30))
    url = f"http://app:{URL_PASS}@127.0.0.1:9/mcp?api_key={URL_KEY}&region=eu#token={URL_KEY}"
    servers: list[dict[str, Any]] = [
        {
            "type": "http",
            "name": "web",
            "url": url,
            "headers": [{"name": "Authorization", "value": f"Bearer {HEADER}"}],
        },
        {"type": "sse", "name": "events", "url": url, "headers": [{"name": "X-Api-Key", "value": HEADER}]},
    ]
    handle = manager.open(tmp_path, servers, editor.host(), files=files_for(tmp_path))
    try:
        await failed(handle)
        await poll(lambda: editor.said("'events'") and editor.said("'web'"), what="both notices")
        said = told(editor, handle, caplog)
        assert_redacted(said, "CANARY-URL", "CANARY-HDR", "app:")
        for name in ("web", "events"):
            error = handle.connections[name].error or ""
            assert "cannot be reached at http://" in error and "127.0.0.1:9/mcp?api_key=[redacted]" in error, error
        assert "127.0.0.1:9/mcp?api_key=[redacted]" in handle.status_text(), "the /mcp listing keeps host and path"
    finally:
        await handle.release()
        await manager.close()


def test_the_notice_json_the_editor_gets_has_no_escaped_form_either() -> None:
    """The forms a redaction must know, checked against what the wire and a log would carry of them."""
    from bridge.mcp.shown import Shown

    shown = Shown([PASSWORD])
    for form in (
        PASSWORD,
        repr(PASSWORD)[1:-1],
        json.dumps(PASSWORD)[1:-1],
        "Pa%24%24w0rd%5CCANARY-MCP-7f3a9",
        "Pa%24%24w0rd%5cCANARY-MCP-7f3a9",
        "Pa%24%24w0rd%5CCANARY%2DMCP%2D7f3a9",
        "Pa$$w0rd%5CCANARY-MCP-7f3a9",
        "Pa%24%24w0rd%5CCANARY-MCP-7f3a9".replace("%24", "$"),
        base64.b64encode(PASSWORD.encode()).decode(),
    ):
        text = shown.text(f"before {form} after")
        assert "CANARY" not in text and "7f3a9" not in text and text.startswith("before "), (form, text)
    assert (
        shown.url("https://u:p@host:8443/a/b?x=1&y=#f") == "https://[redacted]@host:8443/a/b?x=[redacted]&y=#[redacted]"
    )
    assert shown.url("https://host/mcp") == "https://host/mcp"
