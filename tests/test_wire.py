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
from bridge.server import questions, session_state, wire
from bridge.server.updates import UpdateStream, replayed
from bridge.tools.base import AnyTool


def test_content_locations_and_plan_entries() -> None:
    assert wire.tool_content(TextContent("hi")) == {"type": "content", "content": {"type": "text", "text": "hi"}}
    assert wire.tool_content(Diff("/a", None, "new")) == {
        "type": "diff",
        "path": "/a",
        "oldText": None,
        "newText": "new",
    }
    assert wire.tool_content(Diff("/a", "o", "n", first_line=40)) == {
        "type": "diff",
        "path": "/a",
        "oldText": "o",
        "newText": "n",
        "_meta": {"partial": True, "line": 40},
    }
    assert wire.location(Location("/a")) == {"path": "/a"}
    assert wire.location(Location("/a", 3)) == {"path": "/a", "line": 3}
    assert wire.plan_entry(PlanEntry("Ship", "pending")) == {
        "content": "Ship",
        "status": "pending",
        "priority": "medium",
    }
    assert wire.command(Command("mode", "Show or change", "mode")) == {
        "name": "mode",
        "description": "Show or change",
        "input": {"hint": "mode"},
    }


def test_the_modes_offered_are_the_one_mode_list() -> None:
    state = session_state.modes_state("plan")
    assert state["currentModeId"] == "plan"
    assert [m["id"] for m in state["availableModes"]] == list(MODES)
    assert all(m["name"] and m["description"] for m in state["availableModes"])


async def test_every_loop_event_has_its_place() -> None:  # async: the pacing timer needs a loop
    sent: list[dict[str, Any]] = []
    notices: list[Notice] = []
    stream = UpdateStream(sent.append, notices.append)
    started = ToolCallStarted("t1", "Edit", "Edit a", "edit", {"file_path": "/a"}, [Location("/a", 2)])
    events: list[LoopEvent] = [
        TextDelta("hello"),
        started,
        ToolCallFinished("t1", "completed", "ok", [Diff("/a", "x", "y")]),
        PlanUpdate([PlanEntry("Ship", "in_progress")]),
        ModeChanged("plan"),
        Notice("careful", level="warning"),
    ]
    for event in events:
        stream.emit(event)
    stream.close()
    assert [u["sessionUpdate"] for u in sent] == [
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "current_mode_update",
    ]
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
        TextDelta("parent "),
        TextDelta("says"),
        SubAgentEvent("call_1", TextDelta("child says")),
        TextDelta("more"),
        SubAgentEvent("call_1", started),
        progress,
        SubAgentEvent("call_1", PlanUpdate([PlanEntry("its own", "pending")])),
        SubAgentEvent("call_1", SubAgentEvent("t9", TextDelta("deeper"))),
    ]
    for event in events:
        stream.emit(event)
    stream.close()
    said = [
        (u["content"]["text"], (u.get("_meta") or {}).get("parentToolCallId"))
        for u in sent
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert said == [("parent ", None), ("says", None), ("child says", "call_1"), ("more", None), ("deeper", "t9")]
    [call] = [u for u in sent if u["sessionUpdate"] == "tool_call"]
    assert call["toolCallId"] == "t2" and call["_meta"] == {"parentToolCallId": "call_1"}
    [card] = [u for u in sent if u.get("toolCallId") == "call_1"]
    assert card["sessionUpdate"] == "tool_call_update" and "_meta" in card and "parentToolCallId" not in card["_meta"]
    assert card["_meta"]["agent"] == {
        "type": "Explore",
        "description": "Find things",
        "status": "running",
        "background": False,
        "startedAt": 1_000_000,
        "elapsedMs": 2500,
        "toolCalls": 1,
        "tokens": 1500,
        "lastTool": "Grep x",
    }
    assert card["content"][0]["content"]["text"] == "Running: Grep x · 1 tool call · 1.5k tokens · 2 s"
    assert not [u for u in sent if u["sessionUpdate"] == "plan"], "a sub-agent's todo list is not the session's plan"


def test_a_sub_agents_permission_request_names_it() -> None:
    request = PermissionRequest(
        "t2",
        "Bash",
        "`ls`",
        "execute",
        {"command": "ls"},
        [],
        [],
        "needs permission",
        [],
        agent=SubAgentLabel("general-purpose", "List it", "call_1"),
    )
    params = questions.permission_params("s1", request)
    assert params["_meta"]["reason"] == "needs permission" and params["_meta"]["agent"] == {
        "type": "general-purpose",
        "description": "List it",
        "parentToolCallId": "call_1",
    }
    plain = questions.permission_params("s1", PermissionRequest("t3", "Bash", "`ls`", "execute", {}, [], [], "r", []))
    assert plain["_meta"]["reason"] == "r" and "agent" not in plain["_meta"]


def no_tools(_name: str) -> AnyTool | None:
    return None


def texts(update: dict[str, Any]) -> list[str]:
    return [c["content"]["text"] for c in update.get("content") or [] if c["type"] == "content"]


def test_a_replay_puts_a_sub_agents_history_under_its_call() -> None:
    use = {"type": "tool_use", "id": "call_1", "name": "Agent", "input": {"description": "d", "prompt": "p"}}
    parent = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "found"}]},
    ]
    todo = {
        "type": "tool_use",
        "id": "t1",
        "name": "TodoWrite",
        "input": {"todos": [{"content": "x", "status": "pending", "activeForm": "x"}]},
    }
    child = [
        {"role": "user", "content": [{"type": "text", "text": "p"}]},
        {"role": "assistant", "content": [todo]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "found"}]},
    ]
    updates = replayed(replay_history(parent, no_tools, lambda call: child if call == "call_1" else None))
    shape = [(u["sessionUpdate"], u.get("toolCallId"), (u.get("_meta") or {}).get("parentToolCallId")) for u in updates]
    assert shape == [
        ("user_message_chunk", None, None),
        ("tool_call", "call_1", None),
        ("tool_call", "t1", "call_1"),
        ("tool_call_update", "t1", "call_1"),
        ("agent_message_chunk", None, "call_1"),
        ("tool_call_update", "call_1", None),
    ], "no plan (the sub-agent's todo list is its own), no user message (its prompt is its parent's, not the user's)"
    folded = replayed(
        replay_history(parent, no_tools, lambda call: child if call == "call_1" else None), wire.ClientFeatures()
    )
    assert [(u["sessionUpdate"], u.get("toolCallId")) for u in folded] == [
        ("user_message_chunk", None),
        ("tool_call", "call_1"),
        *[("tool_call_update", "call_1")] * 4,
    ], "its work is the call's own content: its tool call started, finished, its words, the result"
    assert not [u for u in folded if "parentToolCallId" in (u.get("_meta") or {})]
    assert texts(folded[-1]) == ["✓ TodoWrite", "found"]


def test_an_older_history_without_turn_lines_replays_one_turn_per_prompt() -> None:
    """Prompts are the boundaries: an answered turn ended, a cancelled one says so, an unanswered one was cut off."""
    from bridge.messages import MARKER
    from bridge.transcript import turns_of

    def said(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"type": "text", "text": text}]}

    history = [
        said("user", "one"),
        said("assistant", "answer"),
        said("user", "two"),
        said("user", MARKER),
        said("user", "three"),
    ]
    updates = replayed(replay_turns(turns_of(history), no_tools))
    shape = [(u["sessionUpdate"], u["content"]["text"], (u.get("_meta") or {}).get("turnEnd")) for u in updates]
    assert shape == [
        ("user_message_chunk", "one", None),
        ("agent_message_chunk", "answer", {"stopReason": "end_turn"}),
        ("user_message_chunk", "two", {"stopReason": "cancelled"}),
        ("user_message_chunk", "three", {"stopReason": None, "cutOff": True}),
    ]
    assert "turnEnd" not in replayed(replay_turns(turns_of(history), no_tools, last_running=True))[-1].get("_meta", {})


async def test_a_sub_agents_work_is_its_calls_content_and_the_parents_message_stays_whole() -> None:
    """Folded form (ACP's default): a client that knows nothing of `_meta` sees the sub-agents only inside their
    `Agent` calls; two sub-agents' words never mix with each other's or the parent's."""
    sent: list[dict[str, Any]] = []
    stream = UpdateStream(sent.append, features=wire.ClientFeatures(), interval=10)
    label = SubAgentLabel("Explore", "Find things", "call_1")
    events: list[LoopEvent] = [
        TextDelta("parent "),
        SubAgentEvent("call_1", TextDelta("one says")),
        TextDelta("sa"),
        SubAgentEvent("call_2", TextDelta("two says")),
        TextDelta("ys"),
        SubAgentEvent("call_1", ToolCallStarted("t2", "Grep", "Grep x", "search", {})),
        AgentProgress("call_1", label, "running", 1000.0, 2.5, 1, 1500, "Grep x"),
        SubAgentEvent("call_1", ToolCallFinished("t2", "completed", "3 matches")),
        SubAgentEvent("call_1", SubAgentEvent("t9", TextDelta("deeper"))),
        SubAgentEvent("call_1", TextDelta(" and more")),
        ToolCallFinished("call_1", "completed", "the answer"),
    ]
    for event in events:
        stream.emit(event)
    stream.close()
    assert not [u for u in sent if "parentToolCallId" in (u.get("_meta") or {})]
    chunks = [u for u in sent if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(u["content"]["text"] for u in chunks) == "parent says"
    assert len({u["messageId"] for u in chunks}) == 1, "one message, however the sub-agents interleave"
    assert {u.get("toolCallId") for u in sent if u["sessionUpdate"] != "agent_message_chunk"} == {"call_1", "call_2"}
    first = [u for u in sent if u.get("toolCallId") == "call_1"]
    assert texts(first[-1]) == [
        "Running: Grep x · 1 tool call · 1.5k tokens · 2 s",
        "one says",
        "✓ Grep x",
        "and more",
        "the answer",
    ]
    assert first[-1]["status"] == "completed"
    assert "deeper" not in str(first), "a deeper agent's words reach its parent as its call's result"
    assert "two says" in str([u for u in sent if u.get("toolCallId") == "call_2"][-1])


async def test_notices_by_the_clients_capability_and_never_inside_an_answer() -> None:
    sent: list[dict[str, Any]] = []
    capable = UpdateStream(sent.append, features=wire.ClientFeatures(notices=True))
    capable.emit(TextDelta("half"))
    capable.emit(Notice("Server x failed to start\nbecause y", "warning"))
    capable.close()
    assert sent[1] == {
        "sessionUpdate": "notice",
        "severity": "warning",
        "title": "Server x failed to start",
        "description": "Server x failed to start\nbecause y",
    }

    sent.clear()
    plain = UpdateStream(sent.append, features=wire.ClientFeatures(), interval=10)
    events: list[LoopEvent] = [TextDelta("an "), Notice("careful", "warning"), TextDelta("answer")]
    for event in events:
        plain.emit(event)
    plain.end_turn()
    plain.emit(TextDelta("next"))
    plain.close()
    kinds = [(u["content"]["text"], u["messageId"], (u.get("_meta") or {}).get("notice")) for u in sent]
    assert [k[0] for k in kinds] == ["an ", "answer", "\n\n> **Warning:** careful\n\n", "next"]
    assert kinds[0][1] == kinds[1][1] != kinds[2][1] != kinds[3][1], "the notice is a message of its own, after"
    assert kinds[2][2] == "warning"


def test_config_options_offer_mode_model_and_thinking() -> None:
    options = session_state.config_options("plan", session_state.models_state("claude-opus-4-5"), "high")
    assert [(o["id"], o["category"], o["currentValue"]) for o in options] == [
        ("mode", "mode", "plan"),
        ("model", "model", "claude-opus-4-5"),
        ("thought_level", "thought_level", "high"),
    ]
    assert wire.option_values(options, "mode") == list(MODES)
    assert "claude-sonnet-4-5" in wire.option_values(options, "model")
    assert all(item["name"] for o in options for item in o["options"])
    assert (
        wire.option_values(
            session_state.config_options("default", session_state.models_state("my-model"), "off"), "model"
        )[0]
        == "my-model"
    )
    offline = session_state.config_options("default", session_state.offline_models_state(), "off")
    assert wire.option_values(offline, "model") == ["offline-demo"], "no Claude model (and price) on the demo model"
