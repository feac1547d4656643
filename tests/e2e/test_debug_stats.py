"""`_bridge/stats` (the soak's view of the bridge's insides): answered only with AGENT_BRIDGE_DEBUG_STATS set."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcMethodNotFound

from bridge.server.stats import DEBUG_STATS_ENV
from tests.e2e.harness import running_editor, text_response


async def test_stats_count_tasks_threads_sessions(workspace: Path, data_dir: Path) -> None:
    async with running_editor(
        {"responses": [text_response("hi")]}, workspace, data_dir, env={DEBUG_STATS_ENV: "1"}
    ) as editor:
        before = await editor.request("_bridge/stats", {})
        assert before["sessions"] == 0
        sid = await editor.new_session()
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}
        stats = await editor.request("_bridge/stats", {})
        assert editor.client._server is not None and stats["pid"] == editor.client._server.pid
        assert stats["sessions"] == 1 and stats["threads"] >= 1
        assert stats["tasks"] == sum(stats["taskNames"].values()) >= 1
        assert all(isinstance(name, str) and count >= 1 for name, count in stats["taskNames"].items())


async def test_stats_absent_without_the_variable(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": []}, workspace, data_dir, env={DEBUG_STATS_ENV: ""}) as editor:
        with pytest.raises(JsonRpcMethodNotFound):
            await editor.request("_bridge/stats", {})
        await editor.new_session()  # and the server goes on
