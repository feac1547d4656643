"""A cancel while Glob matches a slow pattern against the listed names (on a worker thread, holding the GIL most of
the time): the prompt is answered `cancelled` at once, the matching stops (the bridge's CPU goes quiet), the history
stays valid and the next prompt works. Before, the cancel waited for the matching: up to its 30 s deadline."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from bridge.messages import INTERRUPTED_RESULT
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response
from tests.test_tool_glob import DEEP, SLOW

CANCEL_ANSWERED_WITHIN_S = 0.5


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_a_cancel_while_glob_matches_answers_at_once_and_stops_the_matching(
    workspace: Path, data_dir: Path
) -> None:
    folder = workspace / DEEP
    folder.mkdir(parents=True)
    for i in range(60):  # ~30 s of matching
        (folder / f"f{i}").write_text("")
    scenario = {"responses": [tool_response(("Glob", {"pattern": SLOW}), text="Looking."), text_response("fine")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        assert editor.client._server is not None
        pid = editor.client._server.pid
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "find them")
        await poll(
            lambda: any(u.get("status") == "in_progress" for u in editor.of_kind("tool_call_update", sid)),
            what="the Glob to be in progress",
        )
        busy_from = cpu_seconds(pid)
        await poll(lambda: cpu_seconds(pid) - busy_from >= 0.5, timeout=20, what="the bridge to be busy matching")
        started = time.monotonic()
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        took = time.monotonic() - started
        assert took <= CANCEL_ANSWERED_WITHIN_S, f"the cancel was answered after {took * 1000:.0f} ms"

        quiet_from, at = cpu_seconds(pid), time.monotonic()
        await poll(lambda: time.monotonic() - at >= 1.0, what="a second to pass")
        assert cpu_seconds(pid) - quiet_from < 0.5, "the matching went on after the cancel"

        assert await editor.prompt(sid, "and now?") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        [result] = [b for b in messages[2]["content"] if b.get("type") == "tool_result"]
        assert result["is_error"] is True and result["content"].startswith(INTERRUPTED_RESULT)
