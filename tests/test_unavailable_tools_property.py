"""Property: whatever tools a history calls — deferred ones not loaded, made-up names, a stored history's tools
that are gone — and wherever a turn is cancelled or interrupted, every request the bridge sends passes the API's
validation (the offline API answers 400 otherwise), and the session goes on.

In process: a real Agent and Session, the SDK over HTTP to the offline API, a stored transcript loaded from a
real data dir, and small read-only fixture tools big enough to be deferred behind ToolSearch."""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.agent import Agent
from bridge.config import BridgeConfig
from bridge.loop.events import LoopEvent
from bridge.messages import MARKER, MARKER_TOOL_USE, Message
from bridge.offline import OfflineServer, RecordedRequest, Scenario
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.session import Frontend, Session, new_session_id
from bridge.tools.base import AnyTool, InterruptBehavior, Tool, ToolContext, ToolInput, ToolResult
from bridge.transcript import Transcript


class ArchiveInput(ToolInput):
    note: str | None = None


class Archive(Tool[ArchiveInput]):
    """Read-only, with a description long enough that four of them are held back behind ToolSearch."""

    name: ClassVar[str] = "archive"
    input_model = ArchiveInput
    description: ClassVar[str] = "Look something up in the archive. " + "Details of the archive. " * 100
    interrupt_behavior: ClassVar[InterruptBehavior] = "cancel"

    def is_read_only(self, data: ArchiveInput) -> bool:
        return True

    async def call(self, data: ArchiveInput, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(0.002)
        return ToolResult(f"{self.name} found it")


def archives() -> list[AnyTool]:
    return [type(f"Archive{i}", (Archive,), {"name": f"archive_{i}"})() for i in range(4)]


INPUTS: dict[str, dict[str, Any]] = {
    "archive_0": {},
    "archive_1": {"note": "x"},
    "archive_2": {},
    "archive_3": {},  # deferred
    "ToolSearch": {"query": "select:archive_1,archive_3"},
    "ghost": {"anything": 1},  # no tool has this name
    "mcp__gone__lookup": {"q": "a"},  # a tool of an MCP server that is not connected
    "Glob": {"pattern": "*.txt"},
}
names = st.sampled_from(sorted(INPUTS))
ids = itertools.count()


def _use(name: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{next(ids):06d}", "name": name, "input": INPUTS[name]}


# A stored exchange: the tools the answer called, how many of them got a result, and whether a marker followed.
exchanges = st.tuples(st.lists(names, max_size=3), st.integers(0, 3), st.booleans())


def stored_history(drawn: list[tuple[list[str], int, bool]]) -> list[Message]:
    messages: list[Message] = []
    for number, (called, answered, marked) in enumerate(drawn):
        uses = [_use(name) for name in called]
        messages.append({"role": "user", "content": [{"type": "text", "text": f"question {number}"}]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": "let me see"}, *uses]})
        answer: list[dict[str, Any]] = [
            {"type": "tool_result", "tool_use_id": use["id"], "content": "stored result"} for use in uses[:answered]
        ]
        if marked:
            answer.append({"type": "text", "text": MARKER_TOOL_USE if uses else MARKER})
        if answer:
            messages.append({"role": "user", "content": answer})
    return messages


def responder(plan: Iterator[list[str]]) -> Any:
    def respond(request: RecordedRequest) -> dict[str, Any]:
        called = next(plan, [])
        content: list[dict[str, Any]] = [{"type": "text", "text": "working on it " * 3, "chunks": 3}]
        content += [{"type": "tool_use", "name": name, "input": INPUTS[name]} for name in called]
        return {"content": content, "stop_reason": "tool_use" if called else "end_turn", "delay_ms": 1}

    return respond


async def _allow(request: PermissionRequest) -> PermissionAnswer:
    return PermissionAnswer("allow_once")


async def _example(
    root: Path, history: list[Message], plan: list[list[str]], moment: int | None, how: str
) -> OfflineServer:
    workspace, data_dir = root / "ws", root / "data"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    sid = new_session_id()
    transcript = Transcript.create(data_dir, sid, workspace)
    for message in history:
        transcript.append(message)
    transcript.close()

    server = OfflineServer(Scenario.from_responder(responder(iter(plan)), name="unavailable-tools"))
    server.start()
    config = BridgeConfig(data_dir=data_dir, base_url=server.base_url, api_key="k", max_retries=0)
    agent = Agent(config)
    seen = itertools.count(1)
    second: list[asyncio.Task[str]] = []
    session: Session | None = None
    armed = False  # only the first turn is cancelled or interrupted

    def emit(event: LoopEvent) -> None:  # at the drawn moment: a cancel, or a new prompt (an interrupt)
        if session is None or not armed or moment is None or next(seen) != moment:
            return
        if how == "cancel":
            session.cancel()
        else:
            second.append(asyncio.ensure_future(session.prompt([{"type": "text", "text": "meanwhile"}])))

    try:
        session, _problems = agent.load_session(sid, Frontend(emit=emit, prompter=_allow))
        session.toolset.hold_back(archives())
        warnings = session.toolset.missing_tools(session.conversation.messages)
        if any(b.get("name") == "mcp__gone__lookup" for m in history for b in m["content"]):
            assert any("'gone'" in w for w in warnings), warnings
        armed = True
        assert await session.prompt([{"type": "text", "text": "go"}]) in ("end_turn", "cancelled")
        for task in second:
            assert await task in ("end_turn", "cancelled")
        armed = False
        assert await session.prompt([{"type": "text", "text": "and now?"}]) == "end_turn"
    finally:
        await agent.shutdown()
        server.stop()
    return server


@pytest.fixture(scope="module")
def isolated_home() -> Iterator[None]:
    """No user-level settings of this machine reach the sessions."""
    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", home)
        patch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(Path(home) / "config"))
        yield


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    history=st.lists(exchanges, max_size=4),
    plan=st.lists(st.lists(names, max_size=3), max_size=4),
    moment=st.none() | st.integers(min_value=1, max_value=25),
    how=st.sampled_from(["cancel", "interrupt"]),
)
def test_every_request_is_valid_whatever_tools_the_history_calls(
    isolated_home: None,
    history: list[tuple[list[str], int, bool]],
    plan: list[list[str]],
    moment: int | None,
    how: str,
) -> None:
    with tempfile.TemporaryDirectory() as root:
        server = asyncio.run(_example(Path(root), stored_history(history), plan, moment, how))
    assert server.rejected == [], [r.errors for r in server.rejected]
    assert server.valid_requests, "the session went on"
