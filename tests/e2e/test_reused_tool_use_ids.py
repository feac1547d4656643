"""Attack round 17 F2 through the real protocol: the offline API, playing a model or a gateway that reuses a
tool_use id (twice in one response, or one an earlier response gave), must not break the session. Every call
runs and its result goes back paired with an id of its own, so the next request (and every one after it, and the
same session loaded again) is one the Messages API takes: the offline API refuses duplicate ids as it does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.messages import repair_pairing
from bridge.offline.validation import history_errors
from bridge.transcript import load
from tests.e2e.harness import Editor, running_editor, text_response


def _reads(workspace: Path, *calls: tuple[str, str]) -> dict[str, Any]:
    """One response with a Read call per (id, file name)."""
    content = [
        {"type": "tool_use", "id": use_id, "name": "Read", "input": {"file_path": str(workspace / name)}}
        for use_id, name in calls
    ]
    return {"content": content, "stop_reason": "tool_use"}


def _results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each tool_result's text by its tool_use id (a duplicate id would collapse two into one)."""
    found: dict[str, str] = {}
    for message in messages:
        for block in message["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
                assert block["tool_use_id"] not in found, f"two results answer {block['tool_use_id']}"
                found[block["tool_use_id"]] = text
    return found


def _uses(messages: list[dict[str, Any]]) -> dict[str, str]:
    """Each tool_use's file name by its id."""
    found: dict[str, str] = {}
    for message in messages:
        for block in message["content"]:
            if block.get("type") == "tool_use":
                assert block["id"] not in found, f"two calls carry the id {block['id']}"
                found[block["id"]] = Path(block["input"]["file_path"]).name
    return found


def _valid(editor: Editor) -> None:
    assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
    for request in editor.model.valid_requests:
        assert history_errors(request.body["messages"], tools=request.body.get("tools")) == []


CASES = {
    "twice in one response": [["a.txt", "b.txt"]],
    "three times in one response": [["a.txt", "b.txt", "c.txt"]],
    "again in the next response": [["a.txt"], ["b.txt"]],
    "again after another id": [["a.txt"], ["b.txt", "c.txt"]],
}


@pytest.mark.parametrize("steps", list(CASES.values()), ids=list(CASES))
async def test_a_reused_id_runs_every_call_and_keeps_the_session_valid(
    workspace: Path, data_dir: Path, steps: list[list[str]]
) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (workspace / name).write_text(f"contents of {name}\n")
    responses = [_reads(workspace, *[("toolu_dup", name) for name in step]) for step in steps]
    scenario = {"responses": [*responses, text_response("done"), text_response("still here")]}
    read = [name for step in steps for name in step]
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "read them") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "and then?") == {"stopReason": "end_turn"}
        _valid(editor)
        messages = editor.last_request_messages()
        uses, results = _uses(messages), _results(messages)
        assert sorted(uses.values()) == sorted(read), "every call is kept"
        assert set(results) == set(uses), "each call has its own result"
        for use_id, name in uses.items():  # each result is its own call's, not its namesake's
            assert f"contents of {name}" in results[use_id], (use_id, name, results[use_id])
        calls = {u["toolCallId"] for u in editor.of_kind("tool_call", sid)}
        assert len(calls) == len(read), "the editor saw each call under an id of its own"
    stored = load(data_dir / "sessions" / f"{sid}.jsonl")
    assert history_errors(repair_pairing([*stored.messages, {"role": "user", "content": [text("x")]}])) == []

    async with running_editor({"responses": [text_response("resumed")]}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        _valid(editor)


async def test_an_id_from_an_earlier_turn_is_not_reused(workspace: Path, data_dir: Path) -> None:
    """The reuse crosses a prompt: the first turn's call and the second's carry one id."""
    (workspace / "a.txt").write_text("contents of a.txt\n")
    (workspace / "b.txt").write_text("contents of b.txt\n")
    scenario = {
        "responses": [
            _reads(workspace, ("toolu_01Same", "a.txt")),
            text_response("first done"),
            _reads(workspace, ("toolu_01Same", "b.txt")),
            text_response("second done"),
            text_response("third"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "one") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "two") == {"stopReason": "end_turn"}
        assert await editor.prompt(sid, "three") == {"stopReason": "end_turn"}
        _valid(editor)
        messages = editor.last_request_messages()
        uses, results = _uses(messages), _results(messages)
        assert uses.get("toolu_01Same") == "a.txt", "the first call keeps the id it was given"
        assert sorted(uses.values()) == ["a.txt", "b.txt"]
        for use_id, name in uses.items():
            assert f"contents of {name}" in results[use_id]


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


async def test_a_loaded_sessions_new_call_does_not_take_a_stored_sub_agents_id(workspace: Path, data_dir: Path) -> None:
    """Attack round 19: the ids a session has used were its main history's alone after a load, and a sub-agent's
    stored card (replayed by session/load) kept its id: the new call with that id put its result on the old card in
    any editor that keys cards by id."""
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text(f"contents of {name}\n")
    agent = {"description": "alpha", "prompt": "alpha", "subagent_type": "general-purpose"}
    scenario = {
        "responses": [
            {"content": [{"type": "tool_use", "id": "toolu_A1", "name": "Agent", "input": agent}]},
            text_response("main done"),
        ],
        "agents": [{"prompt": "alpha", "responses": [_reads(workspace, ("toolu_X", "a.txt")), text_response("ALPHA")]}],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "one") == {"stopReason": "end_turn"}
    later = {"responses": [_reads(workspace, ("toolu_X", "b.txt")), text_response("resumed")]}
    async with running_editor(later, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        replayed = len(editor.updates)
        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        cards = [
            u["update"].get("toolCallId") for u in editor.updates if u["update"].get("sessionUpdate") == "tool_call"
        ]
        loaded, new = set(cards[: len(cards) - 1]), cards[-1]
        assert "toolu_X" in loaded and new not in loaded, (loaded, new)
        assert replayed < len(editor.updates)
