"""Issue 26 item 6 through the real protocol: a Read of a FIFO that nothing writes to used to hang the turn until
the bridge was killed. It waits at most `STREAM_WAIT_S` (unit-tested in tests/test_tool_read.py), and a cancel
during the wait answers at once: the prompt is answered `cancelled` within 50 ms of the cancel, the FIFO is let
go, and the next prompt works."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from bridge.messages import INTERRUPTED_RESULT
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response

CANCEL_ANSWERED_WITHIN_S = 0.05


def holds(pid: int, path: Path) -> bool:
    """Process `pid` has `path` open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


async def test_a_cancel_while_read_waits_on_a_silent_fifo_answers_at_once(workspace: Path, data_dir: Path) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    scenario = {
        "responses": [tool_response(("Read", {"file_path": str(fifo)}), text="Reading it."), text_response("fine")]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        assert editor.client._server is not None
        pid = editor.client._server.pid
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "read the pipe")
        await poll(lambda: holds(pid, fifo), what="the bridge to wait on the FIFO")
        await poll(
            lambda: any(u.get("status") == "in_progress" for u in editor.of_kind("tool_call_update", sid)),
            what="the Read to be in progress",
        )
        started = time.monotonic()
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        took = time.monotonic() - started
        assert took <= CANCEL_ANSWERED_WITHIN_S, f"the cancel was answered after {took * 1000:.0f} ms"
        await poll(lambda: not holds(pid, fifo), timeout=5, what="the bridge to let the FIFO go")

        assert await editor.prompt(sid, "and now?") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        [result] = [b for b in messages[2]["content"] if b.get("type") == "tool_result"]
        assert result["is_error"] is True and result["content"].startswith(INTERRUPTED_RESULT)
