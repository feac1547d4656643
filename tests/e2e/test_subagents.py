"""Sub-agents over the protocol: the Agent tool runs the same loop on a child of its call's abort signal; its work is
shown nested under its card; its history is stored beside the session's (real server, real processes)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bridge.messages import INTERRUPTED_RESULT, MARKER_TOOL_USE
from bridge.offline.validation import history_errors
from tests.e2e.harness import Editor, pid_alive, poll, running_editor, text_response, tool_response
from tests.execution.test_processes import marked_pids

FIXTURE = str(Path(__file__).parent.parent / "fixtures" / "mcp_server.py")


def agent_call(prompt: str, description: str = "a job", **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("Agent", {"description": description, "prompt": prompt, **extra})


def script(prompt: str, *responses: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": prompt, "responses": list(responses)}


def sidechain(data_dir: Path, sid: str, call_id: str) -> list[dict[str, Any]]:
    """A sub-agent's stored history, as written (no repair)."""
    path = data_dir / "sessions" / sid / "agents" / f"{call_id}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert records[0]["type"] == "agent" and records[0]["toolCallId"] == call_id
    return [r["message"] for r in records[1:] if r["type"] == "message"]


def nested(editor: Editor, parent: str, kind: str | None = None) -> list[dict[str, Any]]:
    return [
        u["update"]
        for u in editor.updates
        if (u["update"].get("_meta") or {}).get("parentToolCallId") == parent
        and kind in (None, u["update"]["sessionUpdate"])
    ]


def agent_cards(editor: Editor, sid: str) -> list[dict[str, Any]]:
    return [
        c
        for c in editor.of_kind("tool_call", sid)
        if c["rawInput"].get("prompt") is not None and "parentToolCallId" not in (c.get("_meta") or {})
    ]


def printed(editor: Editor, text: str) -> bool:
    """A command's streamed output (any level's) contains `text` (an Agent card's progress line does not count:
    it names the command)."""
    return any(
        u["update"]["sessionUpdate"] == "tool_call_update"
        and "agent" not in (u["update"].get("_meta") or {})
        and text in str(u["update"].get("content"))
        for u in editor.updates
    )


def texts_of(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


def results_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b.get("type") == "tool_result"]


def long_command(mark: str, name: str) -> str:
    """A shell and its child that would run 5 min, both started with TEST_MARK in their environment: their pids are
    their sandbox's (a pid namespace), so they are found by the mark."""
    return f"export TEST_MARK={mark}; sh -c 'sleep 300 & echo started-{name}; wait'"


async def test_a_sub_agent_runs_its_own_loop_and_returns_its_final_message(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [
            tool_response(agent_call("count the files", "Count files"), text="Delegating."),
            text_response("There are three files."),
        ],
        "agents": [
            script(
                "count the files",
                tool_response(("Glob", {"pattern": "*.txt"}), text="Looking."),
                text_response("I found 3 files: a.txt, b.txt, c.txt."),
            )
        ],
    }
    for name in "abc":
        (workspace / f"{name}.txt").write_text(name)
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "how many text files?") == {"stopReason": "end_turn"}
        parent, child, _child_final, parent_final = editor.model.valid_requests
        # The sub-agent's own request: its prompt first, its system prompt, no Agent tool, no ExitPlanMode.
        assert child.body["messages"][0]["content"][0]["text"] == "count the files"
        system = child.body["system"][0]["text"]
        assert "sub-agent" in system and "Working directory:" in system
        child_tools = {t["name"] for t in child.body["tools"]}
        assert "Agent" not in child_tools and "ExitPlanMode" not in child_tools and "Glob" in child_tools
        assert "Agent" in {t["name"] for t in parent.body["tools"]}
        # Its final message is the parent's tool result; its text is not the parent's.
        [result] = results_of(parent_final.body["messages"][-1])
        assert result["content"] == "I found 3 files: a.txt, b.txt, c.txt." and not result.get("is_error")
        own = "".join(
            u["content"]["text"]
            for u in editor.of_kind("agent_message_chunk", sid)
            if "parentToolCallId" not in (u.get("_meta") or {})
        )
        assert own == "Delegating.There are three files.", "the sub-agent's text is tagged as its own"
        [card] = agent_cards(editor, sid)
        assert card["title"] == "Count files" and card["kind"] == "think"
        inner = nested(editor, card["toolCallId"])
        [glob] = [u for u in inner if u["sessionUpdate"] == "tool_call"]
        assert glob["title"].startswith("Glob") or "*.txt" in glob["title"]
        said = "".join(u["content"]["text"] for u in inner if u["sessionUpdate"] == "agent_message_chunk")
        assert "Looking." in said and "I found 3 files" in said
        progress = [u for u in editor.tool_updates(card["toolCallId"]) if "agent" in (u.get("_meta") or {})]
        assert progress[-1]["_meta"]["agent"]["status"] == "completed"
        assert progress[-1]["_meta"]["agent"]["toolCalls"] == 1 and progress[-1]["_meta"]["agent"]["tokens"] > 0
        assert any((u["_meta"]["agent"]["lastTool"] or "").startswith("Glob") for u in progress)
        # Usage: the sub-agent's responses count in the session's total.
        usage = editor.of_kind("usage_update", sid)
        assert len(usage) == 4 and [bool((u.get("_meta") or {}).get("parentToolCallId")) for u in usage] == [
            False,
            True,
            True,
            False,
        ]
        assert abs(usage[-1]["cost"]["amount"] - sum(u["_meta"]["responseCost"] for u in usage)) < 1e-5
        stored = sidechain(data_dir, sid, card["toolCallId"])
        assert history_errors(stored) == [] and stored[-1]["content"][-1]["text"].startswith("I found 3 files")
        assert editor.model.rejected == []


async def test_two_parallel_sub_agents_cancelled_every_process_gone_every_history_valid(
    workspace: Path, data_dir: Path
) -> None:
    mark = uuid.uuid4().hex
    scenario = {
        "responses": [
            tool_response(agent_call("run job A", "Job A"), agent_call("run job B", "Job B")),
            text_response("what now?"),
        ],
        "agents": [
            script("run job A", tool_response(("Bash", {"command": long_command(mark, "a")}), text="A runs.")),
            script("run job B", tool_response(("Bash", {"command": long_command(mark, "b")}), text="B runs.")),
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run both jobs")
        await poll(
            lambda: all(printed(editor, f"started-{n}") for n in "ab"),
            timeout=20,
            what="both sub-agents' commands running",
        )
        await poll(lambda: len(marked_pids(mark)) >= 4, what="both commands and their children")
        asked = [p["_meta"]["agent"] for p in editor.permission_requests]
        assert sorted(a["description"] for a in asked) == ["Job A", "Job B"], "each sub-agent named in its ask"
        began = time.monotonic()
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}  # the bound of a single command
        print(f"\ncancel with 2 sub-agents answered in {1000 * (time.monotonic() - began):.0f} ms")
        await poll(lambda: not marked_pids(mark), timeout=5, what="every process to die")

        cards = agent_cards(editor, sid)
        assert len(cards) == 2
        for card in cards:  # each child: the synthesized result and the marker, its output so far kept
            stored = sidechain(data_dir, sid, card["toolCallId"])
            assert history_errors(stored) == [], stored
            [result] = results_of(stored[-1])
            assert result["is_error"] and result["content"].startswith(INTERRUPTED_RESULT)
            assert "started-" in result["content"]
            assert texts_of(stored[-1]) == [MARKER_TOOL_USE]
            assert stored[-2]["content"][0]["text"].endswith("runs."), "the child's streamed text is kept"

        assert await editor.prompt(sid, "what happened?") == {"stopReason": "end_turn"}
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        answered = results_of(messages[2])
        assert [r["is_error"] for r in answered] == [True, True]
        assert all(r["content"].startswith(INTERRUPTED_RESULT) for r in answered)
        assert texts_of(messages[2]) == [MARKER_TOOL_USE, "what happened?"]
        assert editor.model.rejected == []


async def test_a_new_prompt_interrupts_sub_agents_whose_commands_finish(workspace: Path, data_dir: Path) -> None:
    gate = workspace / "gate"
    command = f"echo waiting; while [ ! -e {gate} ]; do sleep 0.02; done; echo finished-for-real"
    scenario = {
        "responses": [tool_response(agent_call("wait for the gate")), text_response("taking the new message")],
        "agents": [script("wait for the gate", tool_response(("Bash", {"command": command})))],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        first = editor.start_prompt(sid, "start the job")
        await poll(lambda: printed(editor, "waiting"), what="the sub-agent's command running")
        second = editor.start_prompt(sid, "also do this")
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "default"})
        assert not first.done()
        gate.touch()  # the sub-agent's `block` command finishes on its own
        assert await asyncio.wait_for(first, 10) == {"stopReason": "cancelled"}
        assert await asyncio.wait_for(second, 10) == {"stopReason": "end_turn"}
        [card] = agent_cards(editor, sid)
        stored = sidechain(data_dir, sid, card["toolCallId"])
        [result] = results_of(stored[-1])
        assert "finished-for-real" in result["content"] and not result.get("is_error")
        assert texts_of(stored[-1]) == [], "no marker for `interrupt` in the sub-agent either"
        messages = editor.last_request_messages()
        [agent_result] = results_of(messages[2])
        assert agent_result["is_error"] and agent_result["content"].startswith(INTERRUPTED_RESULT)
        assert texts_of(messages[2]) == ["also do this"]
        assert editor.model.rejected == []


def mcp_fixture(log: Path) -> dict[str, Any]:
    return {
        "name": "fixture",
        "command": sys.executable,
        "args": [FIXTURE],
        "env": [{"name": "MCP_FIXTURE_LOG", "value": str(log)}],
    }


@pytest.mark.parametrize("how", ["_bridge/cancel_tool_call", "session/cancel"])
async def test_a_sub_agent_stopped_alone_the_parent_goes_on_and_mcp_still_answers(
    workspace: Path, data_dir: Path, how: str
) -> None:
    log = workspace.parent / "mcp.log"
    scenario = {
        "responses": [
            tool_response(agent_call("wait on the server", "Wait on MCP")),
            tool_response(("mcp__fixture__echo", {"text": "still here"})),
            text_response("carried on"),
        ],
        "agents": [script("wait on the server", tool_response(("mcp__fixture__wait", {}), text="Waiting."))],
    }
    wait = {"mcp": {"turnWait": 120}}  # the prompt waits for the server (it takes seconds to start on a busy box)
    async with running_editor(scenario, workspace, data_dir, initialization_options=wait) as editor:
        sid = await editor.new_session(mcp_servers=[mcp_fixture(log)])
        turn = editor.start_prompt(sid, "wait, then echo")
        await poll(lambda: log.exists() and "wait" in log.read_text(), timeout=20, what="the sub-agent's MCP call")
        [card] = agent_cards(editor, sid)
        server_pid = int(log.read_text().split()[1])
        params: dict[str, Any] = {"sessionId": sid, "toolCallId": card["toolCallId"]}
        if how == "session/cancel":
            params = {"sessionId": sid, "_meta": {"toolCallId": card["toolCallId"]}}
        editor.notify(how, params)
        assert await asyncio.wait_for(turn, 20) == {"stopReason": "end_turn"}, "the parent's turn went on"
        messages = editor.last_request_messages()
        agent_result, echo = [r for m in messages for r in results_of(m)]
        assert agent_result["is_error"] and agent_result["content"].startswith(INTERRUPTED_RESULT)
        assert echo["content"] == "echo: still here" and not echo.get("is_error"), "the MCP server still answers"
        assert MARKER_TOOL_USE not in [t for m in messages for t in texts_of(m) if m["role"] == "user"]
        stored = sidechain(data_dir, sid, card["toolCallId"])
        assert history_errors(stored) == [] and texts_of(stored[-1]) == [MARKER_TOOL_USE]
        assert pid_alive(server_pid)
        assert editor.model.rejected == []


async def test_any_running_call_can_be_stopped_alone_and_the_turn_goes_on(workspace: Path, data_dir: Path) -> None:
    mark = uuid.uuid4().hex
    scenario = {
        "responses": [
            tool_response(("Bash", {"command": long_command(mark, "x")}), ("Bash", {"command": "echo quick"})),
            text_response("went on"),
        ]
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, "run them")
        await poll(lambda: printed(editor, "started-x"), what="the long command running")
        await poll(lambda: len(marked_pids(mark)) >= 2, what="the command and its child")
        long_call = editor.of_kind("tool_call", sid)[0]["toolCallId"]
        editor.notify("_bridge/cancel_tool_call", {"sessionId": sid, "toolCallId": long_call})
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "end_turn"}
        await poll(lambda: not marked_pids(mark), timeout=5, what="its processes to die")
        stopped, quick = results_of(editor.last_request_messages()[-1])
        assert stopped["is_error"] and stopped["content"].startswith(INTERRUPTED_RESULT)
        assert "started-x" in stopped["content"], "its output so far is kept"
        assert quick["content"] == "quick" and not quick.get("is_error")
        assert texts_of(editor.last_request_messages()[-1]) == [], "no marker: the turn was not cancelled"
        editor.notify("_bridge/cancel_tool_call", {"sessionId": sid, "toolCallId": "toolu_gone"})  # ignored
        editor.notify("_bridge/cancel_tool_call", {"sessionId": "sess_nope", "toolCallId": long_call})
        assert await editor.prompt(sid, "still there?") == {"stopReason": "end_turn"}


async def test_a_background_agent_reaches_the_parents_next_request(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [
            tool_response(agent_call("count slowly", "Count slowly", run_in_background=True)),
            text_response("It is running."),
            text_response("It said 42."),
        ],
        "agents": [
            script(
                "count slowly",
                tool_response(("Bash", {"command": "sleep 0.3; echo counted"})),
                text_response("The count is 42."),
            )
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "count in the background") == {"stopReason": "end_turn"}
        [card] = agent_cards(editor, sid)
        launched = [u for u in editor.tool_updates(card["toolCallId"]) if u.get("status") == "completed"]
        assert "agent_1" in str(launched[0]["content"]) and "TaskOutput" in str(launched[0]["content"])
        await poll(
            lambda: any(
                (u.get("_meta") or {}).get("agent", {}).get("status") == "completed"
                for u in editor.tool_updates(card["toolCallId"])
            ),
            timeout=20,
            what="the background agent to end",
        )
        assert await editor.prompt(sid, "and?") == {"stopReason": "end_turn"}
        last = editor.last_request_messages()[-1]
        [note] = [t for t in texts_of(last) if t.startswith("<task-notification>")]
        assert "<task-id>agent_1</task-id>" in note and "<status>completed</status>" in note
        assert "<result>The count is 42.</result>" in note
        assert texts_of(last)[-1] == "and?", "the news comes before the prompt it preceded"
        assert editor.model.rejected == []


async def test_task_output_waits_for_a_background_agent(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [
            tool_response(agent_call("slow answer", run_in_background=True)),
            tool_response(("TaskOutput", {"task_id": "agent_1", "timeout": 20_000})),
            text_response("Got it."),
            text_response("ok"),
        ],
        "agents": [
            script("slow answer", tool_response(("Bash", {"command": "sleep 0.2"})), text_response("Slow answer: 7."))
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "go") == {"stopReason": "end_turn"}
        read = results_of(editor.model.valid_requests[-1].body["messages"][-1])
        assert "completed" in read[-1]["content"] and "Slow answer: 7." in read[-1]["content"]
        await editor.prompt(sid, "again")
        last = editor.last_request_messages()[-1]
        assert not any(t.startswith("<task-notification>") for t in texts_of(last)), "read already: no repeat"


async def test_a_custom_agent_cannot_call_a_tool_outside_its_list(workspace: Path, data_dir: Path) -> None:
    agents = workspace / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reader.md").write_text(
        "---\nname: reader\ndescription: Reads files and says what is in them.\n"
        "tools: Read, Glob\nmodel: haiku\n---\nYou only read.\n"
    )
    (agents / "broken.md").write_text("---\nname: [oops\n---\nbody\n")
    target = workspace / "written.txt"
    scenario = {
        "responses": [tool_response(agent_call("write a file", subagent_type="reader")), text_response("ok")],
        "agents": [
            script(
                "write a file",
                tool_response(("Write", {"file_path": str(target), "content": "x"})),
                text_response("I could not write it."),
            )
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        shown = await poll(
            lambda: [m.message for m in editor.client.messages if "broken.md" in m.message],
            what="the invalid agent file reported",
        )
        assert shown and "Invalid agent file" in shown[0], "an invalid agent file is reported, not fatal"
        await editor.prompt(sid, "write it through the reader")
        parent, child, child_after, _ = editor.model.valid_requests
        [agent_tool] = [t for t in parent.body["tools"] if t["name"] == "Agent"]
        assert "- reader: Reads files and says what is in them. (Tools: Read, Glob)" in agent_tool["description"]
        assert [t["name"] for t in child.body["tools"]] == ["Read", "Glob"]
        assert child.body["model"] == "claude-haiku-4-5"
        assert child.body["system"][0]["text"].startswith("You only read.")
        [refused] = results_of(child_after.body["messages"][-1])
        assert refused["is_error"] and "No such tool: Write" in refused["content"]
        assert not target.exists()
        assert editor.model.rejected == []


async def test_an_unknown_agent_type_is_an_error_listing_the_types(workspace: Path, data_dir: Path) -> None:
    scenario = {"responses": [tool_response(agent_call("x", subagent_type="wizard")), text_response("ok")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "use the wizard")
        [result] = results_of(editor.last_request_messages()[-1])
        assert result["is_error"]
        assert result["content"] == "Unknown subagent_type 'wizard'. Available agent types: general-purpose, Explore."


async def test_plan_mode_applies_to_sub_agents(workspace: Path, data_dir: Path) -> None:
    target = workspace / "plan.txt"
    scenario = {
        "responses": [tool_response(agent_call("write in plan mode")), text_response("ok")],
        "agents": [
            script(
                "write in plan mode",
                tool_response(("Write", {"file_path": str(target), "content": "x"})),
                text_response("Denied."),
            )
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.request("session/set_mode", {"sessionId": sid, "modeId": "plan"})
        await editor.prompt(sid, "try")
        child_after = editor.model.valid_requests[2]
        [denied] = results_of(child_after.body["messages"][-1])
        assert denied["is_error"] and "Plan mode" in denied["content"]
        assert not target.exists() and editor.permission_requests == []


async def test_an_explore_agent_runs_only_read_only_commands(workspace: Path, data_dir: Path) -> None:
    (workspace / "notes.txt").write_text("alpha\n")
    scenario = {
        "responses": [tool_response(agent_call("look around", subagent_type="Explore")), text_response("ok")],
        "agents": [
            script(
                "look around",
                tool_response(("Bash", {"command": "cat notes.txt"}), ("Bash", {"command": "touch made"})),
                text_response("notes.txt says alpha."),
            )
        ],
    }
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "explore")
        child = editor.model.valid_requests[1]
        assert sorted(t["name"] for t in child.body["tools"]) == ["Bash", "Glob", "Grep", "Read"]
        read, write = results_of(editor.model.valid_requests[2].body["messages"][-1])
        assert read["content"] == "alpha" and not read.get("is_error")
        assert write["is_error"] and "read-only" in write["content"]
        assert not (workspace / "made").exists() and editor.permission_requests == []


async def test_a_loaded_session_replays_sub_agents_nested_under_their_card(workspace: Path, data_dir: Path) -> None:
    scenario = {
        "responses": [tool_response(agent_call("list them", "List files")), text_response("Listed.")],
        "agents": [script("list them", tool_response(("Glob", {"pattern": "*"})), text_response("One file."))],
    }
    (workspace / "only.txt").write_text("x")
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "list")
        [card] = agent_cards(editor, sid)
    async with running_editor({"responses": []}, workspace, data_dir) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []})
        kinds = [
            (
                u["update"]["sessionUpdate"],
                u["update"].get("toolCallId"),
                (u["update"].get("_meta") or {}).get("parentToolCallId"),
            )
            for u in editor.updates
        ]
        at = kinds.index(("tool_call", card["toolCallId"], None))
        inner = [k for k in kinds if k[2] == card["toolCallId"]]
        # (its prompt is its parent's, not the user's: no user message, as live — issue 22)
        assert [k[0] for k in inner] == ["tool_call", "tool_call_update", "agent_message_chunk"]
        assert kinds[at + 1 : at + 1 + len(inner)] == inner, "the sub-agent's work right after its card"
        assert kinds[at + 1 + len(inner)] == ("tool_call_update", card["toolCallId"], None)
