"""Property: cancel at any moment, as often as you like — the model never sees an invalid history
(the offline API would answer 400) and no process the turn started is left alive."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.offline import RecordedRequest, Scenario
from tests.e2e.harness import Editor, poll, running_editor
from tests.test_processes import marked_pids

T = TypeVar("T")


def responder(request: RecordedRequest) -> dict[str, Any]:
    """Stateless on the history: `go` gets text + a long Bash + Read; tool results or `again` get text."""
    messages = request.body["messages"]
    last = messages[-1]["content"]
    answered = any(b.get("type") == "tool_result" for b in last if isinstance(b, dict))
    texts = [b["text"] for b in last if b.get("type") == "text"]
    if answered or (texts and texts[-1].startswith("again")):
        return {"content": [{"type": "text", "text": "done " * 30, "chunks": 30}], "stop_reason": "end_turn",
                "delay_ms": 2}
    pidfile = texts[-1].split("pidfile=")[1].split()[0]
    # Pids as the command sees them are its sandbox's (a pid namespace): processes are found by TEST_MARK.
    command = (f"export TEST_MARK={Path(pidfile).name}; echo $$ >> {pidfile}; sleep 30 & echo $! >> {pidfile}; "
               "echo go; wait")
    return {
        "content": [
            {"type": "text", "text": "Let me look. " * 10, "chunks": 10},
            {"type": "tool_use", "name": "Bash", "input": {"command": command}},
            {"type": "tool_use", "name": "Read", "input": {"file_path": pidfile}},
        ],
        "stop_reason": "tool_use",
        "delay_ms": 3,
    }


class Background:
    """One editor for all examples, on an event loop in its own thread."""

    def __init__(self, workspace: Path, data_dir: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self._stack = contextlib.AsyncExitStack()
        self.editor: Editor = self.run(self._start(workspace, data_dir))

    async def _start(self, workspace: Path, data_dir: Path) -> Editor:
        scenario = Scenario.from_responder(responder, name="cancel-property")
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
