"""Property: cancel at any moment, as often as you like — the model never sees an invalid history
(the offline API would answer 400) and no process the turn started is left alive."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.messages import repair_pairing
from bridge.offline import RecordedRequest, Scenario
from bridge.offline.validation import history_errors
from tests.e2e.harness import Editor, poll, running_editor
from tests.execution.test_processes import marked_pids

T = TypeVar("T")


def responder(request: RecordedRequest) -> dict[str, Any]:
    """Stateless on the history: `go` gets text + a long Bash + Read; tool results or `again` get text."""
    messages = request.body["messages"]
    last = messages[-1]["content"]
    answered = any(b.get("type") == "tool_result" for b in last if isinstance(b, dict))
    texts = [b["text"] for b in last if b.get("type") == "text"]
    if answered or (texts and texts[-1].startswith("again")):
        return {
            "content": [{"type": "text", "text": "done " * 30, "chunks": 30}],
            "stop_reason": "end_turn",
            "delay_ms": 2,
        }
    pidfile = texts[-1].split("pidfile=")[1].split()[0]
    # Pids as the command sees them are its sandbox's (a pid namespace): processes are found by TEST_MARK.
    command = (
        f"export TEST_MARK={Path(pidfile).name}; echo $$ >> {pidfile}; sleep 30 & echo $! >> {pidfile}; echo go; wait"
    )
    return {
        "content": [
            {"type": "text", "text": "Let me look. " * 10, "chunks": 10},
            {"type": "tool_use", "name": "Bash", "input": {"command": command}},
            {"type": "tool_use", "name": "Read", "input": {"file_path": pidfile}},
        ],
        "stop_reason": "tool_use",
        "delay_ms": 3,
    }


def nested_responder(request: RecordedRequest) -> dict[str, Any]:
    """The same, one level down: `go` gets text + two Agent calls, whose sub-agents each get `responder`'s long
    Bash + Read (their prompt carries the pidfile); their results, or `again`, get text."""
    messages = request.body["messages"]
    first = messages[0]["content"][0].get("text", "")
    if first.startswith("job "):  # a sub-agent's own request
        return responder(request)
    last = messages[-1]["content"]
    answered = any(b.get("type") == "tool_result" for b in last if isinstance(b, dict))
    texts = [b["text"] for b in last if b.get("type") == "text"]
    if answered or (texts and texts[-1].startswith("again")):
        return {
            "content": [{"type": "text", "text": "all done " * 20, "chunks": 20}],
            "stop_reason": "end_turn",
            "delay_ms": 2,
        }
    pidfile = texts[-1].split("pidfile=")[1].split()[0]
    agents = [
        {
            "type": "tool_use",
            "name": "Agent",
            "input": {"description": f"job {n}", "prompt": f"job {n} pidfile={pidfile}"},
        }
        for n in "ab"
    ]
    return {
        "content": [{"type": "text", "text": "Two jobs. " * 5, "chunks": 5}, *agents],
        "stop_reason": "tool_use",
        "delay_ms": 3,
    }


class Background:
    """One editor for all examples, on an event loop in its own thread."""

    def __init__(self, workspace: Path, data_dir: Path, respond: Any = responder) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._stack = contextlib.AsyncExitStack()
        self.data_dir = data_dir
        self.editor: Editor = self.run(self._start(workspace, data_dir, respond))

    async def _start(self, workspace: Path, data_dir: Path, respond: Any) -> Editor:
        scenario = Scenario.from_responder(respond, name="cancel-property")
        editor = await self._stack.enter_async_context(running_editor(scenario, workspace, data_dir))
        return editor

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.run(self._stack.aclose())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture(scope="module")
def background(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background]:
    root = tmp_path_factory.mktemp("cancel-property")
    (root / "ws").mkdir()
    (root / "data").mkdir()
    env = Background(root / "ws", root / "data")
    try:
        yield env
    finally:
        env.close()


counter = iter(range(10**6))


async def _example(editor: Editor, cancel_after: int, force: bool, twice: bool) -> str:
    pidfile = editor.workspace / f"pids-{next(counter)}"
    pidfile.touch()
    sid = await editor.new_session()
    turn = editor.start_prompt(sid, f"go pidfile={pidfile}")
    seen = len(editor.updates)

    def moment() -> bool:  # after `cancel_after` updates — or once the long command runs, whichever is first
        return len(editor.updates) - seen >= cancel_after or turn.done() or len(pidfile.read_text().split()) >= 2

    await poll(moment, timeout=20, what="the moment to cancel")
    editor.cancel(sid, force=force)
    if twice:
        editor.cancel(sid)
    result = await asyncio.wait_for(turn, 20)
    assert result["stopReason"] in ("cancelled", "end_turn")
    # The next prompt's request must be valid history.
    await asyncio.wait_for(editor.prompt(sid, f"again pidfile={pidfile}"), 30)
    await poll(lambda: not editor.model.active_streams, timeout=10, what="streams to finish")
    return pidfile.name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cancel_after=st.integers(min_value=0, max_value=14), force=st.booleans(), twice=st.booleans())
def test_cancel_at_any_moment_keeps_history_valid_and_kills_processes(
    background: Background, cancel_after: int, force: bool, twice: bool
) -> None:
    editor = background.editor
    mark = background.run(_example(editor, cancel_after, force, twice))
    assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
    # Every process the turn started is gone.
    background.run(poll(lambda: not marked_pids(mark), timeout=5, what="every process to die"))


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Background]:
    root = tmp_path_factory.mktemp("cancel-property-nested")
    (root / "ws").mkdir()
    (root / "data").mkdir()
    env = Background(root / "ws", root / "data", nested_responder)
    try:
        yield env
    finally:
        env.close()


async def _nested_example(editor: Editor, cancel_after: int, how: str) -> tuple[str, str]:
    pidfile = editor.workspace / f"pids-{next(counter)}"
    pidfile.touch()
    sid = await editor.new_session()
    turn = editor.start_prompt(sid, f"go pidfile={pidfile}")
    seen = len(editor.updates)

    def moment() -> bool:  # after `cancel_after` updates — or once both sub-agents' commands run
        return len(editor.updates) - seen >= cancel_after or turn.done() or len(pidfile.read_text().split()) >= 4

    await poll(moment, timeout=20, what="the moment to cancel")
    if how == "interrupt":  # a new prompt takes over; the `block` commands would take 30 s: then a ctrl-c
        again = editor.start_prompt(sid, f"again pidfile={pidfile}")
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "default"})  # it has interrupted
        editor.cancel(sid)
        assert (await asyncio.wait_for(turn, 60))["stopReason"] in ("cancelled", "end_turn")
        assert (await asyncio.wait_for(again, 60))["stopReason"] in ("cancelled", "end_turn")
    else:
        if how == "stop-one":  # one sub-agent stopped alone (when one has started); then the rest by ctrl-c
            cards = [
                u
                for u in editor.of_kind("tool_call", sid)
                if not (u.get("_meta") or {}).get("parentToolCallId") and "job a" in json.dumps(u.get("rawInput", {}))
            ]
            if cards:
                card = cards[0]["toolCallId"]
                editor.notify("_bridge/cancel_tool_call", {"sessionId": sid, "toolCallId": card})
                await poll(
                    lambda: (
                        turn.done()
                        or any(u.get("status") in ("completed", "failed") for u in editor.tool_updates(card))
                    ),
                    timeout=20,
                    what="the stopped sub-agent's call to end",
                )
                assert not turn.done() or turn.result()["stopReason"] == "end_turn", "stopping one stopped the turn"
        editor.cancel(sid, force=how == "force")
        if how == "twice":
            editor.cancel(sid)
        assert (await asyncio.wait_for(turn, 20))["stopReason"] in ("cancelled", "end_turn")
    await asyncio.wait_for(editor.prompt(sid, f"again pidfile={pidfile}"), 30)
    await poll(lambda: not editor.model.active_streams, timeout=10, what="streams to finish")
    return sid, pidfile.name


# ~45 updates go by until both sub-agents' commands run: the moments cover every stage up to there.
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cancel_after=st.integers(min_value=0, max_value=55),
    how=st.sampled_from(["ctrl-c", "force", "twice", "interrupt", "stop-one"]),
)
def test_cancel_nested_loops_at_any_moment_keeps_every_level_valid(
    nested: Background, cancel_after: int, how: str
) -> None:
    editor = nested.editor
    sid, mark = nested.run(_nested_example(editor, cancel_after, how), timeout=120)
    # Every request of every level (the session's and each sub-agent's) passed the API's validation.
    assert editor.model.rejected == [], [r.errors for r in editor.model.rejected]
    nested.run(poll(lambda: not marked_pids(mark), timeout=5, what="every process to die"))
    for path in sorted((nested.data_dir / "sessions" / sid / "agents").glob("*.jsonl")):
        stored = [json.loads(line)["message"] for line in path.read_text().splitlines()[1:]]
        # Each sub-agent's history is one its loop could go on from, as the session's is: the request built
        # from it with one more message (consecutive user content merged, as for every request) is valid.
        follow = {"role": "user", "content": [{"type": "text", "text": "go on"}]}
        assert history_errors(repair_pairing([*stored, follow])) == [], (path.name, stored)
