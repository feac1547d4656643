"""The seed's interrupt semantics over the protocol: ctrl-c, a new prompt mid-turn, force."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from bridge.messages import INTERRUPTED_RESULT, MARKER, MARKER_TOOL_USE
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response, tool_response
from tests.execution.test_processes import marked_pids

LONG_TEXT = {
    "content": [{"type": "text", "text": "word " * 400, "chunks": 400}],
    "stop_reason": "end_turn",
    "delay_ms": 10,
}


def _user_texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


async def test_cancel_while_streaming_keeps_partial_text(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [LONG_TEXT, text_response("next answer")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "tell me a long story")
        await poll(lambda: len(editor.text(sid)) > 20, what="some streamed text")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        partial = editor.text(sid)
        assert 0 < len(partial) < len("word " * 400)

        assert await editor.prompt(sid, "and now?") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        kept = messages[1]["content"][0]["text"]
        assert partial.startswith(kept) and kept.strip(), "the streamed text so far is kept in history"
        assert _user_texts(messages[2]) == [MARKER, "and now?"]
        assert editor.model.rejected == []


async def test_cancel_during_bash_kills_the_process_group(workspace: Path, data_dir: Path) -> None:
    mark = uuid.uuid4().hex  # the command's own pids are its sandbox's: find its processes by TEST_MARK
    command = f"export TEST_MARK={mark}; exec bash -c 'sleep 300 & echo started; wait'"  # the shell marked too
    scenario = {
        "responses": [tool_response(("Bash", {"command": command}), text="Running it."), text_response("ok, stopped")]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run the long thing")
        await editor.wait_for_output(sid, "started")
        await poll(lambda: len(marked_pids(mark)) >= 2, what="the command's processes")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        await poll(lambda: not marked_pids(mark), timeout=5, what="the process group to die")

        assert await editor.prompt(sid, "what happened?") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        results = messages[2]["content"]
        assert results[0]["type"] == "tool_result" and results[0]["is_error"] is True
        assert results[0]["content"].startswith(INTERRUPTED_RESULT)
        assert "started" in results[0]["content"], "the output so far is kept"
        assert _user_texts(messages[2]) == [MARKER_TOOL_USE, "what happened?"]
        assert editor.model.rejected == []


async def test_cancel_during_a_pending_permission_request(workspace: Path, data_dir: Path) -> None:
    never = workspace / "never"
    scenario = {"responses": [tool_response(("Bash", {"command": f"touch {never}"})), text_response("fine")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        withdrawn = asyncio.Event()

        async def never_answer(params: dict[str, Any]) -> dict[str, Any]:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                withdrawn.set()  # the bridge sent $/cancelRequest for it
                raise
            raise AssertionError("unreachable")

        editor.on_permission = never_answer
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run it")
        await poll(lambda: editor.permission_requests, what="the permission request")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        await asyncio.wait_for(withdrawn.wait(), 5)

        await editor.prompt(sid, "never mind")
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        result = messages[2]["content"][0]
        assert result["content"] == INTERRUPTED_RESULT and result["is_error"] is True
        assert _user_texts(messages[2]) == [MARKER_TOOL_USE, "never mind"]
        assert not never.exists(), "a tool whose permission was pending never runs"


async def test_new_prompt_interrupts_and_block_tool_keeps_its_real_result(workspace: Path, data_dir: Path) -> None:
    gate = workspace / "gate"
    command = f"echo waiting; while [ ! -e {gate} ]; do sleep 0.02; done; echo finished-for-real"
    scenario = {"responses": [tool_response(("Bash", {"command": command})), text_response("taking the new message")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        first = editor.start_prompt(sid, "start the job")
        await editor.wait_for_output(sid, "waiting")
        second = editor.start_prompt(sid, "also do this")
        # A round trip after it: the bridge reads messages in order, so the new prompt has interrupted by now.
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "default"})
        assert not first.done() and len(editor.model.requests) == 1
        gate.touch()  # the `block` tool now finishes on its own
        assert await asyncio.wait_for(first, 10) == {"stopReason": "cancelled"}
        assert await asyncio.wait_for(second, 10) == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        result = messages[2]["content"][0]
        assert "finished-for-real" in str(result["content"]) and not result.get("is_error")
        texts = _user_texts(messages[2])
        assert texts == ["also do this"], "no marker for `interrupt`: the new message is the context"
        assert editor.model.rejected == []


async def test_second_cancel_forces(workspace: Path, data_dir: Path) -> None:
    mark = uuid.uuid4().hex
    command = (
        f"export TEST_MARK={mark}; exec bash -c \"trap '' INT TERM; echo started; while true; do sleep 0.05; done\""
    )
    scenario = {"responses": [tool_response(("Bash", {"command": command})), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run it")
        await editor.wait_for_output(sid, "started")
        await poll(lambda: marked_pids(mark), what="the command's shell")  # it ignores SIGINT and SIGTERM
        editor.cancel(sid)
        editor.cancel(sid, force=True)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        await poll(lambda: not marked_pids(mark), timeout=3, what="a process that ignores SIGINT/SIGTERM to die")


async def test_cancel_request_for_the_prompt_answers_cancelled(workspace: Path, data_dir: Path) -> None:
    from lsprotocol import types

    scenario = {"responses": [LONG_TEXT, text_response("after")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        params = {"sessionId": sid, "prompt": [{"type": "text", "text": "long please"}]}
        turn = asyncio.wrap_future(editor.client.protocol.send_request("session/prompt", params, msg_id="p-1"))
        await poll(lambda: editor.text(sid), what="streaming")
        editor.notify(types.CANCEL_REQUEST, types.CancelParams(id="p-1"))
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}, "not an error: a ctrl-c"
        assert await editor.prompt(sid, "next") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == [] and _user_texts(messages[2]) == [MARKER, "next"]


async def test_the_playground_takes_the_next_prompt_after_a_cancel(workspace: Path, data_dir: Path) -> None:
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run: sleep 30")
        await poll(
            lambda: [u for u in editor.of_kind("tool_call_update", sid) if u.get("status") == "in_progress"],
            what="the command running",
        )
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        assert await editor.prompt(sid, "run: echo second-command") == {"stopReason": "end_turn"}
        calls = editor.of_kind("tool_call", sid)
        assert calls[-1]["rawInput"]["command"] == "echo second-command"
        assert "second-command" in editor.text(sid)


async def test_a_cancel_right_after_allow_stops_the_command_before_its_next_step(
    workspace: Path, data_dir: Path
) -> None:
    """Attack round 6: `allow`, then a cancel 5-40 ms later. The prompt answered `cancelled` at once, yet in 18 of 32
    runs the command ran on to its end: SIGINT reached the shell while it was starting its next command, not that
    command, and bash, waiting for a child that did not die of it, went on. Every member that appears during a
    step of the stop gets that step's signal now."""
    delays = [0.0, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05]
    marks = [uuid.uuid4().hex for _ in delays]
    commands = [
        f"export TEST_MARK={mark}; echo start > f{i}.txt; sleep 0.25; echo end >> f{i}.txt"
        for i, mark in enumerate(marks)
    ]
    scenario = {"responses": [tool_response(("Bash", {"command": c})) for c in commands]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        for i, (delay, mark) in enumerate(zip(delays, marks, strict=True)):
            asked = len(editor.permission_requests)
            turn = editor.start_prompt(sid, f"step {i}")
            await poll(lambda asked=asked: len(editor.permission_requests) > asked, what="the question")  # type: ignore[misc]
            await asyncio.sleep(delay)  # the race's variable: how long after the answer the cancel comes
            editor.cancel(sid)
            assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
            await poll(lambda mark=mark: not marked_pids(mark), timeout=5, what="the command's processes to end")  # type: ignore[misc]
            written = (workspace / f"f{i}.txt").read_text() if (workspace / f"f{i}.txt").exists() else ""
            assert "end" not in written, f"cancelled {delay * 1000:.0f} ms after the answer, the command ran on"


async def test_a_cancel_also_ends_a_prompt_waiting_to_interrupt(workspace: Path, data_dir: Path) -> None:
    """Attack round 6: a command runs, a second prompt waits to interrupt it, then a cancel: the first prompt was
    cancelled and the waiting one ran to its end anyway. A cancel is for everything the session has under way:
    the waiting prompt ends `cancelled` too, without a request, and leaves nothing in the history."""
    command = "echo waiting; sleep 30"
    scenario = {"responses": [tool_response(("Bash", {"command": command})), text_response("after")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        first = editor.start_prompt(sid, "start the job")
        await editor.wait_for_output(sid, "waiting")
        second = editor.start_prompt(sid, "also do this")
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "default"})  # it is waiting by now
        editor.cancel(sid)
        assert await asyncio.wait_for(first, 10) == {"stopReason": "cancelled"}
        assert await asyncio.wait_for(second, 10) == {"stopReason": "cancelled"}
        assert len(editor.model.requests) == 1
        assert await editor.prompt(sid, "next") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        assert "also do this" not in str(messages)


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "PostToolUse"])
async def test_a_cancel_stops_a_running_hook(workspace: Path, data_dir: Path, event: str) -> None:
    """Attack round 7: a hook `sleep 3; date > M`, cancelled a second in: the prompt answered only when the hook
    ended, and its effect landed after the cancel. A cancel now kills the hooks under way."""
    mark = uuid.uuid4().hex
    started, effect = workspace / "hook-started", workspace / "hook-effect"
    command = f"export TEST_MARK={mark}; touch {started}; sleep 5; touch {effect}"
    config = data_dir / "config"
    config.mkdir(parents=True, exist_ok=True)
    hook = [{"matcher": "", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]
    (config / "settings.json").write_text(json.dumps({"hooks": {event: hook}}))
    scenario = {"responses": [tool_response(("Read", {"file_path": str(workspace / "x.txt")})), text_response("ok")]}
    (workspace / "x.txt").write_text("x\n")
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "read it")
        await poll(started.exists, what="the hook running")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        await poll(lambda: not marked_pids(mark), timeout=5, what="the hook's processes to end")
        assert not effect.exists(), "the hook ran on after the cancel"
        assert await editor.prompt(sid, "next") == {"stopReason": "end_turn"}
        assert history_errors(editor.last_request_messages()) == []
