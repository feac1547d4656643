"""Issue 21 item 6 through the real protocol: the offline API, playing a hostile gateway, names a Bash call with an
id that climbs out of the data dir. The turn ends with a clear message, nothing runs, no file appears outside
the data dir, the history stays valid and the next prompt works. With an honest id the same command's output
spills inside the data dir (so the spill path is live in this setup)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.offline.validation import history_errors
from tests.e2e.harness import running_editor, text_response

LOUD = "head -c 80000 /dev/zero | tr '\\0' x; touch ran-marker"  # beyond the output buffer: it spills


def _bash(block_id: str) -> dict[str, Any]:
    return {
        "content": [
            {"type": "text", "text": "Running it."},
            {"type": "tool_use", "id": block_id, "name": "Bash", "input": {"command": LOUD}},
        ],
        "stop_reason": "tool_use",
    }


def _files_outside(tmp_path: Path, data_dir: Path) -> list[Path]:
    return [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_relative_to(data_dir) and "planted" in p.name]


async def test_an_id_that_climbs_out_is_refused_and_nothing_runs(
    tmp_path: Path, workspace: Path, data_dir: Path
) -> None:
    bad = "../" * 8 + str(tmp_path).lstrip("/") + "/planted"
    scenario = {"responses": [_bash(bad), text_response("recovered")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        with pytest.raises(Exception) as caught:
            await editor.prompt(sid, "run it")
        message = str(caught.value)
        assert "not an id the Messages API gives" in message and "ANTHROPIC_BASE_URL" in message, message
        assert editor.of_kind("tool_call", sid) == [], "the call never reached the editor"
        assert not (workspace / "ran-marker").exists(), "nothing ran"
        assert _files_outside(tmp_path, data_dir) == [] and not list(data_dir.rglob("bash-output/*"))
        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages, tools=editor.model.valid_requests[-1].body.get("tools")) == []
        assert bad not in str(messages)
        assert editor.model.rejected == []


async def test_an_honest_id_spills_inside_the_data_dir(tmp_path: Path, workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [_bash("toolu_01HonestId"), text_response("done")]}
    async with running_editor(
        scenario, workspace, data_dir, initialization_options={"permissionMode": "bypassPermissions"}
    ) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "run it") == {"stopReason": "end_turn"}
        assert (workspace / "ran-marker").exists()
        [spilled] = list(data_dir.rglob("bash-output/toolu_01HonestId.log"))  # the session's own data dir
        assert spilled.stat().st_size >= 80000
