"""The one place ACP shapes are built: domain objects in, the editor's dicts out."""

from __future__ import annotations

from typing import Any

from bridge.commands import Command
from bridge.display import Diff, Location, PlanEntry, SubAgentLabel, TextContent
from bridge.loop.events import (
    AgentProgress,
    LoopEvent,
    ModeChanged,
    Notice,
    PlanUpdate,
    SubAgentEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from bridge.permissions.modes import MODES
from bridge.permissions.types import PermissionRequest
from bridge.replay import replay_history, replay_turns
from bridge.server import wire
from bridge.server.updates import UpdateStream, replayed
from bridge.tools.base import AnyTool


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


async def test_a_sub_agents_events_carry_their_parent_call_and_its_text_is_never_merged() -> None:
    sent: list[dict[str, Any]] = []
    stream = UpdateStream(sent.append, interval=10)  # one long window: every later delta waits in it
    label = SubAgentLabel("Explore", "Find things", "call_1")
    started = ToolCallStarted("t2", "Grep", "Grep x", "search", {"pattern": "x"})
    progress = AgentProgress("call_1", label, "running", 1000.0, 2.5, 1, 1500, "Grep x")
    events: list[LoopEvent] = [
        TextDelta("parent "), TextDelta("says"), SubAgentEvent("call_1", TextDelta("child says")),
        TextDelta("more"), SubAgentEvent("call_1", started), progress,
        SubAgentEvent("call_1", PlanUpdate([PlanEntry("its own", "pending")])),
        SubAgentEvent("call_1", SubAgentEvent("t9", TextDelta("deeper"))),
    ]
    for event in events:
        stream.emit(event)
    stream.close()
    said = [(u["content"]["text"], (u.get("_meta") or {}).get("parentToolCallId")) for u in sent
            if u["sessionUpdate"] == "agent_message_chunk"]
    assert said == [("parent ", None), ("says", None), ("child says", "call_1"), ("more", None), ("deeper", "t9")]
    [call] = [u for u in sent if u["sessionUpdate"] == "tool_call"]
    assert call["toolCallId"] == "t2" and call["_meta"] == {"parentToolCallId": "call_1"}
    [card] = [u for u in sent if u.get("toolCallId") == "call_1"]
    assert card["sessionUpdate"] == "tool_call_update" and "_meta" in card and "parentToolCallId" not in card["_meta"]
    assert card["_meta"]["agent"] == {"type": "Explore", "description": "Find things", "status": "running",
                                      "background": False, "startedAt": 1_000_000, "elapsedMs": 2500,
                                      "toolCalls": 1, "tokens": 1500, "lastTool": "Grep x"}
    assert card["content"][0]["content"]["text"] == "Running: Grep x · 1 tool call · 1.5k tokens · 2 s"
    assert not [u for u in sent if u["sessionUpdate"] == "plan"], "a sub-agent's todo list is not the session's plan"


def test_a_sub_agents_permission_request_names_it() -> None:
    request = PermissionRequest("t2", "Bash", "`ls`", "execute", {"command": "ls"}, [], [], "needs permission", [],
                                agent=SubAgentLabel("general-purpose", "List it", "call_1"))
    params = wire.permission_params("s1", request)
    assert params["_meta"]["reason"] == "needs permission" and params["_meta"]["agent"] == {
        "type": "general-purpose", "description": "List it", "parentToolCallId": "call_1"}
    plain = wire.permission_params("s1", PermissionRequest("t3", "Bash", "`ls`", "execute", {}, [], [], "r", []))
    assert plain["_meta"]["reason"] == "r" and "agent" not in plain["_meta"]


def no_tools(_name: str) -> AnyTool | None:
    return None


def test_a_replay_puts_a_sub_agents_history_under_its_call() -> None:
    use = {"type": "tool_use", "id": "call_1", "name": "Agent", "input": {"description": "d", "prompt": "p"}}
    parent = [{"role": "user", "content": [{"type": "text", "text": "go"}]},
              {"role": "assistant", "content": [use]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "found"}]}]
    todo = {"type": "tool_use", "id": "t1", "name": "TodoWrite", "input": {"todos": [
        {"content": "x", "status": "pending", "activeForm": "x"}]}}
    child = [{"role": "user", "content": [{"type": "text", "text": "p"}]},
             {"role": "assistant", "content": [todo]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "found"}]}]
    updates = replayed(replay_history(parent, no_tools, lambda call: child if call == "call_1" else None))
    shape = [(u["sessionUpdate"], u.get("toolCallId"), (u.get("_meta") or {}).get("parentToolCallId"))
             for u in updates]
    assert shape == [("user_message_chunk", None, None), ("tool_call", "call_1", None),
                     ("user_message_chunk", None, "call_1"), ("tool_call", "t1", "call_1"),
                     ("tool_call_update", "t1", "call_1"), ("agent_message_chunk", None, "call_1"),
                     ("tool_call_update", "call_1", None)], "and no plan: the sub-agent's todo list is its own"


def test_an_older_history_without_turn_lines_replays_one_turn_per_prompt() -> None:
    """Prompts are the boundaries: an answered turn ended, a cancelled one says so, an unanswered one was cut off."""
    from bridge.messages import MARKER
    from bridge.transcript import turns_of

    def said(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": text}]}

    history = [said("user", "one"), said("assistant", "answer"), said("user", "two"), said("user", MARKER),
               said("user", "three")]
    updates = replayed(replay_turns(turns_of(history), no_tools))
    shape = [(u["sessionUpdate"], u["content"]["text"], (u.get("_meta") or {}).get("turnEnd")) for u in updates]
    assert shape == [("user_message_chunk", "one", None), ("agent_message_chunk", "answer", {"stopReason": "end_turn"}),
                     ("user_message_chunk", "two", {"stopReason": "cancelled"}),
                     ("user_message_chunk", "three", {"stopReason": None, "cutOff": True})]
    assert "turnEnd" not in replayed(replay_turns(turns_of(history), no_tools, last_running=True))[-1].get("_meta", {})
