"""The one place ACP shapes are built: domain objects in, the editor's dicts out."""

from __future__ import annotations

from typing import Any

from bridge.commands import Command
from bridge.display import Diff, Location, PlanEntry, TextContent
from bridge.loop.events import LoopEvent, ModeChanged, Notice, PlanUpdate, TextDelta, ToolCallFinished, ToolCallStarted
from bridge.permissions.modes import MODES
from bridge.server import wire
from bridge.server.updates import UpdateStream


def test_content_locations_and_plan_entries() -> None:
    assert wire.tool_content(TextContent("hi")) == {"type": "content", "content": {"type": "text", "text": "hi"}}
    assert wire.tool_content(Diff("/a", None, "new")) == {"type": "diff", "path": "/a", "oldText": None,
                                                           "newText": "new"}
    assert wire.tool_content(Diff("/a", "o", "n", first_line=40)) == {
        "type": "diff", "path": "/a", "oldText": "o", "newText": "n", "_meta": {"partial": True, "line": 40}}
    assert wire.location(Location("/a")) == {"path": "/a"}
    assert wire.location(Location("/a", 3)) == {"path": "/a", "line": 3}
    assert wire.plan_entry(PlanEntry("Ship", "pending")) == {"content": "Ship", "status": "pending",
                                                              "priority": "medium"}
    assert wire.command(Command("mode", "Show or change", "mode")) == {
        "name": "mode", "description": "Show or change", "input": {"hint": "mode"}}


def test_the_modes_offered_are_the_one_mode_list() -> None:
    state = wire.modes_state("plan")
    assert state["currentModeId"] == "plan"
    assert [m["id"] for m in state["availableModes"]] == list(MODES)
    assert all(m["name"] and m["description"] for m in state["availableModes"])


async def test_every_loop_event_has_its_place() -> None:  # async: the pacing timer needs a loop
    sent: list[dict[str, Any]] = []
    notices: list[Notice] = []
    stream = UpdateStream(sent.append, notices.append)
    started = ToolCallStarted("t1", "Edit", "Edit a", "edit", {"file_path": "/a"}, [Location("/a", 2)])
    events: list[LoopEvent] = [
        TextDelta("hello"), started, ToolCallFinished("t1", "completed", "ok", [Diff("/a", "x", "y")]),
        PlanUpdate([PlanEntry("Ship", "in_progress")]), ModeChanged("plan"), Notice("careful", level="warning"),
    ]
    for event in events:
        stream.emit(event)
    stream.close()
    assert [u["sessionUpdate"] for u in sent] == [
        "agent_message_chunk", "tool_call", "tool_call_update", "plan", "current_mode_update"]
    assert sent[1]["locations"] == [{"path": "/a", "line": 2}]
    assert sent[2]["content"][1]["type"] == "diff"
    assert notices == [Notice("careful", level="warning")]
