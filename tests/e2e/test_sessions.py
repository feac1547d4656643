"""Sessions that last: transcripts written as the turn goes, listed and loaded after a crash."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from bridge.messages import MARKER, MARKER_TOOL_USE
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response

LONG = {"content": [{"type": "text", "text": "slow " * 500, "chunks": 500}], "stop_reason": "end_turn", "delay_ms": 10}


async def test_kill_9_mid_turn_then_load(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": [text_response("first answer"), LONG]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "first prompt")
        total_before = editor.of_kind("usage_update", sid)[-1]["cost"]["amount"]
        assert total_before > 0
        turn = editor.start_prompt(sid, "second prompt")
        await poll(lambda: "slow" in editor.text(sid), what="the second answer streaming")
        editor.kill_server()
        with contextlib.suppress(Exception):  # the server is gone: the request fails
            await asyncio.wait_for(turn, 10)

    async with running_editor({"responses": [text_response("continuing")]}, workspace, data_dir) as editor:
        listed = await editor.request("session/list", {"cwd": str(workspace)})
        [entry] = listed["sessions"]
        assert entry["sessionId"] == sid and entry["title"] == "first prompt" and entry["cwd"] == str(workspace)
        loaded = await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert loaded["modes"]["currentModeId"] == "default"  # ACP's LoadSessionResponse
        await poll(lambda: editor.text(sid), what="the replay")
        assert editor.text(sid, "user_message_chunk").startswith("first prompt")
        assert "second prompt" in editor.text(sid, "user_message_chunk"), "nothing before the kill is lost"
        assert editor.text(sid) == "first answer"
        [mode] = await poll(lambda: editor.of_kind("current_mode_update", sid), what="the loaded session's mode")
        assert mode["currentModeId"] == "default"
        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        usage = editor.of_kind("usage_update", sid)[-1]
        # the session's cost goes on from the stored total (a panel shows a turn's cost as the difference); each
        # figure is rounded to the micro-dollar on its own, so the sum of the rounded ones may be 1e-6 off
        assert abs(usage["cost"]["amount"] - (total_before + usage["_meta"]["responseCost"])) < 2e-6
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        texts = [b.get("text") for m in messages for b in m["content"]]
        assert texts[:2] == ["first prompt", "first answer"] and texts[-2:] == ["second prompt", "go on"]
        assert editor.model.rejected == []


async def test_a_corrupt_transcript_line_is_reported_and_skipped(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": [text_response("stored")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "keep me")
    transcript = data_dir / "sessions" / f"{sid}.jsonl"
    lines = transcript.read_text().splitlines()
    transcript.write_text("\n".join([lines[0], '{"type": "message", "message": {broken', *lines[1:]]) + "\n")

    async with running_editor({"responses": [text_response("after")]}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        await poll(lambda: editor.client.messages, what="the problem shown to the user")
        assert "corrupt line skipped" in editor.client.messages[-1].message
        assert editor.text(sid) == "stored"
        await editor.prompt(sid, "still works")
        assert history_errors(editor.last_request_messages()) == []
        assert editor.model.rejected == []


async def test_loading_an_unknown_session_creates_nothing(workspace: Path, data_dir: Path) -> None:
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        try:
            await editor.request("session/load", {"sessionId": "sess_nope", "cwd": str(workspace)})
        except Exception as error:
            assert "Unknown sessionId" in str(error)
        else:
            raise AssertionError("expected an error")
        assert (await editor.request("session/list", {}))["sessions"] == []


async def test_a_loaded_session_replays_tool_calls_as_they_showed_live_and_hides_the_markers(
    workspace: Path, data_dir: Path
) -> None:
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    scenario = {
        "responses": [
            tool_response(("Read", {"file_path": str(workspace / "notes.txt")})),
            text_response("read it"),
            tool_response(("Bash", {"command": "echo started; sleep 300"})),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "read the notes")
        turn = editor.start_prompt(sid, "now wait")
        await poll(lambda: "started" in str(editor.of_kind("tool_call_update", sid)), what="the command's output")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        live = {u["toolCallId"]: u for u in editor.of_kind("tool_call", sid)}
    assert MARKER_TOOL_USE in (data_dir / "sessions" / f"{sid}.jsonl").read_text(), "the transcript keeps the marker"

    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        replayed = {u["toolCallId"]: u for u in editor.of_kind("tool_call", sid)}
        assert replayed.keys() == live.keys()
        for call_id, shown in live.items():
            for key in ("title", "kind", "locations", "rawInput"):
                assert replayed[call_id][key] == shown[key], (key, replayed[call_id], shown)
        assert {u["kind"] for u in replayed.values()} == {"read", "execute"}
        user_text = editor.text(sid, "user_message_chunk")
        assert "now wait" in user_text and MARKER_TOOL_USE not in user_text and MARKER not in user_text


def _turn_ends(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u["_meta"]["turnEnd"] for u in updates if "turnEnd" in (u.get("_meta") or {})]


async def test_a_loaded_session_replays_each_turn_with_how_it_ended_and_its_usage(
    workspace: Path, data_dir: Path
) -> None:
    """Two prompts in a row (the first cut off by a kill -9) stay two turns; each ends as it did, with usage."""
    (workspace / "a.txt").write_text("one\ntwo\n")
    scenario = {
        "responses": [
            tool_response(("Read", {"file_path": str(workspace / "a.txt")})),
            tool_response(("Edit", {"file_path": str(workspace / "a.txt"), "old_string": "two", "new_string": "TWO"})),
            text_response("edited"),
            LONG,
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "edit it") == {"stopReason": "end_turn"}
        live_usage = editor.of_kind("usage_update", sid)
        turn = editor.start_prompt(sid, "long")
        await poll(lambda: "slow" in editor.text(sid), what="the long answer streaming")
        editor.kill_server()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(turn, 10)

    async with running_editor({"responses": [text_response("still here")]}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert await editor.prompt(sid, "still there after the crash?") == {"stopReason": "end_turn"}
        replayed = [u["update"] for u in editor.updates if u["sessionId"] == sid]
        after = ("available_commands_update", "current_mode_update")  # sent once the load is answered
        replay = replayed[: next(i for i, u in enumerate(replayed) if u["sessionUpdate"] in after)]
        assert _turn_ends(replay) == [{"stopReason": "end_turn"}, {"stopReason": None, "cutOff": True}]
        first_end = next(i for i, u in enumerate(replay) if "turnEnd" in (u.get("_meta") or {}))
        # turn 1: its prompt, the calls, the answer, then one usage_update with the turn's tokens (which ends it)
        usage = replay[first_end]
        assert usage["sessionUpdate"] == "usage_update"
        assert usage["_meta"]["outputTokens"] == sum(u["_meta"]["outputTokens"] for u in live_usage)
        assert usage["cost"] == live_usage[-1]["cost"] and usage["size"] == live_usage[-1]["size"]
        # turn 2: only its prompt was stored before the kill; it is a bubble of its own, marked cut off
        cut = replay[first_end + 1 :]
        assert [u["sessionUpdate"] for u in cut] == ["user_message_chunk"]
        assert cut[0]["content"]["text"] == "long"
        # the replayed Edit shows its diff, as it did live
        edit = next(u for u in replay if u["sessionUpdate"] == "tool_call" and u["title"].startswith("Edit"))
        result = next(
            u for u in replay if u.get("toolCallId") == edit["toolCallId"] and u["sessionUpdate"] == "tool_call_update"
        )
        [diff] = [c for c in result["content"] if c["type"] == "diff"]
        assert diff["oldText"] == "two" and diff["newText"] == "TWO" and diff["path"] == str(workspace / "a.txt")
        assert diff["_meta"] == {"partial": True, "line": 2}
        # the new turn is live and ends as usual (the answer to its prompt, nothing replayed after it)
        assert replayed[-1]["sessionUpdate"] == "usage_update" and "turnEnd" not in replayed[-1].get("_meta", {})


async def test_a_session_open_in_another_process_is_not_opened_twice(workspace: Path, data_dir: Path) -> None:
    """Attack round 6: a second bridge loaded a session another was running, both appended to its transcript, and a
    third load sent one reply merged from both turns (a real result dropped as an orphan). One process writes a
    session: another's load, resume or delete says where it is open; once closed there (or that process gone), it
    opens."""
    async with running_editor({"responses": [text_response("from A")]}, workspace, data_dir) as first:
        sid = await first.new_session()
        assert await first.prompt(sid, "in A") == {"stopReason": "end_turn"}
        async with running_editor({"responses": [text_response("from B")]}, workspace, data_dir) as second:
            for method in ("session/load", "session/resume"):
                with pytest.raises(Exception, match="open in another"):
                    await second.request(method, {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
            with pytest.raises(Exception, match="open in another"):
                await second.request("session/delete", {"sessionId": sid})
            await first.request("session/close", {"sessionId": sid})
            await second.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
            assert await second.prompt(sid, "in B") == {"stopReason": "end_turn"}
            texts = [b.get("text") for m in second.last_request_messages() for b in m["content"]]
            assert texts == ["in A", "from A", "in B"]
