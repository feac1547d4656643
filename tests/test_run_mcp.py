"""`agent-bridge run` has the session's MCP servers, as an editor's session has them: the user's start and their
tools are offered; a folder's own server starts only once the person at the terminal approves it, and stays off
with no one to ask or with Enter alone. Proven by the server's own log (it writes `pid P` when it starts) and by
the call's result on the screen. The servers are real processes (tests/fixtures/mcp_server.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.e2e.harness import text_response, tool_response
from tests.test_terminal_view import finished, piped, terminal, workspace

FIXTURE = str(Path(__file__).parent / "fixtures" / "mcp_server.py")
CALL = {"responses": [tool_response(("mcp__fixture__echo", {"text": "hi there"})), text_response("done")]}


def server(log: Path) -> dict[str, Any]:
    fixture = {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(log)}}
    return {"mcpServers": {"fixture": fixture}}


def started(log: Path) -> bool:
    return log.exists() and "pid " in log.read_text()


def test_the_users_server_starts_and_its_tool_runs(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(json.dumps(server(log)))
    shown = piped(tmp_path, CALL, "go", "--allow", "mcp__fixture__echo")
    assert "echo: hi there" in shown, shown
    assert started(log)


def test_with_no_one_to_approve_it_a_folders_server_stays_off(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    workspace(tmp_path).joinpath(".mcp.json").write_text(json.dumps(server(log)))
    shown = piped(tmp_path, CALL, "go", "--allow", "mcp__fixture__echo")  # (standard input: /dev/null)
    assert "echo: hi there" not in shown
    assert not started(log), log.read_text()


async def test_a_folders_server_starts_once_approved_at_the_terminal(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    workspace(tmp_path).joinpath(".mcp.json").write_text(json.dumps(server(log)))
    async with terminal(tmp_path, CALL, "go", "--allow", "mcp__fixture__echo") as term:
        await term.until(lambda shown: "from this project?" in shown and "[5] Not now" in shown, "the whole question")
        shown = term.text()
        unwrapped = shown.replace("\n", "")  # (a long path wraps at the terminal's 80 columns)
        assert FIXTURE in unwrapped and "[3] Use it for this session only" in shown, shown  # what runs, the answers
        assert not started(log)  # nothing starts before the answer
        term.type("3\r")
        await finished(term)
    assert "echo: hi there" in term.text()
    assert started(log)
    assert not (tmp_path / "cfg" / "mcp-approvals.json").exists()  # "this session only": nothing saved


async def test_enter_alone_leaves_a_folders_server_off(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    workspace(tmp_path).joinpath(".mcp.json").write_text(json.dumps(server(log)))
    async with terminal(tmp_path, CALL, "go", "--allow", "mcp__fixture__echo") as term:
        await term.until(lambda shown: "from this project?" in shown, "the question")
        term.type("\r")
        await finished(term)
    assert "echo: hi there" not in term.text()
    assert not started(log)
