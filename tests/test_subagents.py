"""Sub-agents in process: a real Agent and Session, the SDK over HTTP to the offline API, real temp dirs and
processes; the session's events as the front end receives them."""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bridge.agent import Agent
from bridge.agents.runner import SubAgentTask
from bridge.config import BridgeConfig
from bridge.loop.events import AgentProgress, LoopEvent, PlanUpdate, SubAgentEvent, ToolCallStarted
from bridge.offline import OfflineServer
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.session import Frontend, Session
from bridge.tools.agent import TaskStatus
from tests.poll import poll


@dataclass
class Run:
    session: Session
    model: OfflineServer
    events: list[LoopEvent] = field(default_factory=list)
    asked: list[PermissionRequest] = field(default_factory=list)

    def requests_of(self, prompt: str) -> list[dict[str, Any]]:
        """The bodies of the requests whose first message is `prompt` (one agent's)."""
        return [r.body for r in self.model.valid_requests if r.body["messages"][0]["content"][0].get("text") == prompt]


def use(name: str, **data: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": data}


def step(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": list(blocks),
        "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
    }


def say(text: str) -> dict[str, Any]:
    return step({"type": "text", "text": text})


@pytest.fixture
async def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> AsyncIterator[Run]:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "config"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    scenario, setup = request.param
    setup(workspace)
    model = OfflineServer(scenario)
    model.start()
    agent = Agent(BridgeConfig(data_dir=tmp_path / "data", base_url=model.base_url, api_key="k", max_retries=0))
    events: list[LoopEvent] = []
    asked: list[PermissionRequest] = []

    async def allow(permission: PermissionRequest) -> PermissionAnswer:
        asked.append(permission)
        return PermissionAnswer("allow_once")

    session = agent.new_session(workspace, Frontend(emit=events.append, prompter=allow))
    try:
        yield Run(session, model, events, asked)
    finally:
        await agent.shutdown()
        model.stop()


def nothing(_workspace: Path) -> None:
    return None


def lead_agent(workspace: Path) -> None:
    agents = workspace / ".agent-bridge" / "agents"
    agents.mkdir(parents=True)
    (agents / "lead.md").write_text("---\nname: lead\ndescription: Delegates.\ntools: Agent, Glob\n---\nLead.\n")


NESTED = (
    {
        "responses": [
            step(use("Agent", description="Lead it", prompt="lead the work", subagent_type="lead")),
            say("all done"),
        ],
        "agents": [
            {
                "prompt": "lead the work",
                "responses": [step(use("Agent", description="Do it", prompt="do the work")), say("the helper did it")],
            },
            {"prompt": "do the work", "responses": [step(use("Glob", pattern="*")), say("did the work")]},
        ],
    },
    lead_agent,
)


@pytest.mark.parametrize("run", [NESTED], indirect=True)
async def test_an_agent_type_that_lists_agent_nests_once_and_events_name_their_own_parent(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    [lead] = run.requests_of("lead the work")[:1]
    [helper] = run.requests_of("do the work")[:1]
    assert [t["name"] for t in lead["tools"]] == ["Agent", "Glob"], "the lead may start an agent"
    assert "Agent" not in {t["name"] for t in helper["tools"]}, "at the deepest level there is no Agent tool"
    top = [e for e in run.events if isinstance(e, ToolCallStarted)]
    assert [e.name for e in top] == ["Agent"]
    lead_call = top[0].tool_call_id
    nested = [e for e in run.events if isinstance(e, SubAgentEvent)]
    helper_call = next(
        e.event.tool_call_id
        for e in nested
        if isinstance(e.event, ToolCallStarted) and e.parent_tool_call_id == lead_call
    )
    glob = [e for e in nested if isinstance(e.event, ToolCallStarted) and e.event.name == "Glob"]
    assert [e.parent_tool_call_id for e in glob] == [helper_call], "tagged once, with the immediate parent"
    cards = {e.event.tool_call_id for e in nested if isinstance(e.event, AgentProgress)}
    assert cards == {helper_call}, "the helper's card progress comes through its parent, tagged with it"
    assert {e.tool_call_id for e in run.events if isinstance(e, AgentProgress)} == {lead_call}
    final = run.model.valid_requests[-1].body["messages"][-1]["content"][0]
    assert final["content"] == "the helper did it"


FAILING = (
    {
        "responses": [step(use("Agent", description="Break", prompt="break please")), say("it broke; going on")],
        "agents": [
            {
                "prompt": "break please",
                "responses": [{"fault": {"type": "status", "status": 400, "message": "prompt is too long"}}],
            }
        ],
    },
    nothing,
)


@pytest.mark.parametrize("run", [FAILING], indirect=True)
async def test_a_sub_agents_model_failure_is_its_calls_error_and_the_parent_goes_on(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    [result] = run.model.valid_requests[-1].body["messages"][-1]["content"]
    assert result["is_error"] and result["content"].startswith("The agent failed: ")
    assert "prompt is too long" in result["content"] and "Traceback" not in result["content"]


TODO = (
    {
        "responses": [step(use("Agent", description="Plan", prompt="plan it")), say("ok")],
        "agents": [
            {
                "prompt": "plan it",
                "responses": [
                    step(
                        use("TodoWrite", todos=[{"content": "its step", "status": "pending", "activeForm": "stepping"}])
                    ),
                    say("planned"),
                ],
            }
        ],
    },
    nothing,
)


@pytest.mark.parametrize("run", [TODO], indirect=True)
async def test_a_sub_agents_todo_list_is_its_own(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    assert run.session.plan == [] and not [e for e in run.events if isinstance(e, PlanUpdate)]
    [task] = [run.session.subagents.find(t) for t in run.session.subagents.known()]
    assert task is not None and [e.content for e in task.plan] == ["its step"]


def hooked(workspace: Path) -> None:
    # in the workspace, by a name the hook computes: a folder's own hooks run in the sandbox, which holds the files
    # a hook's text names
    # (`python3` from PATH: this interpreter may be under the host's /tmp, which the sandbox hides)
    command = "python3 -c " + shlex.quote(
        "import json, os, sys; open(os.environ['CLAUDE_PROJECT_DIR'] + '/hooks.log', 'a')"
        ".write(json.load(sys.stdin)['hook_event_name'] + '\\n')"
    )
    hooks = {
        event: [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        for event in ("UserPromptSubmit", "Stop", "SubagentStop")
    }
    (workspace / ".agent-bridge").mkdir()
    (workspace / ".agent-bridge" / "settings.json").write_text(json.dumps({"hooks": hooks}))


HOOKED = (
    {
        "responses": [step(use("Agent", description="Help", prompt="help out")), say("ok")],
        "agents": [{"prompt": "help out", "responses": [say("helped")]}],
    },
    hooked,
)


@pytest.mark.parametrize("run", [HOOKED], indirect=True)
async def test_a_sub_agent_runs_subagent_stop_hooks_and_no_prompt_hook(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    log = run.session.cwd / "hooks.log"
    assert log.read_text().split() == ["UserPromptSubmit", "SubagentStop", "Stop"]


BACKGROUND = (
    {
        "responses": [
            step(use("Agent", description="Forever", prompt="run forever", run_in_background=True)),
            say("started"),
            step(use("TaskStop", task_id="agent_1")),
            say("stopped it"),
        ],
        "agents": [{"prompt": "run forever", "responses": [step(use("Bash", command="touch started; sleep 300"))]}],
    },
    nothing,
)


@pytest.mark.parametrize("run", [BACKGROUND], indirect=True)
async def test_task_stop_stops_a_background_agent_and_everything_it_runs(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "start"}]) == "end_turn"
    task = run.session.subagents.find("agent_1")
    assert task is not None and task.status == "running" and task.background
    await poll(
        lambda: (
            run.session.running
            and any(isinstance(e, SubAgentEvent) and isinstance(e.event, ToolCallStarted) for e in run.events)
        )
    )
    await poll(lambda: run.asked)  # the sub-agent's Bash asked (and was allowed): it runs now
    assert run.asked[0].agent is not None and run.asked[0].agent.description == "Forever"
    assert await run.session.prompt([{"type": "text", "text": "stop it"}]) == "end_turn"
    assert status_of(task) == "stopped"
    stopped, note = run.model.valid_requests[-1].body["messages"][-1]["content"]
    assert stopped["content"].startswith("Stopped. Agent agent_1 (general-purpose: Forever): stopped")
    assert note["text"].startswith("<task-notification>") and "<status>stopped</status>" in note["text"]


SHUTDOWN = (
    {
        "responses": [
            step(use("Agent", description="Forever", prompt="run forever", run_in_background=True)),
            say("started"),
        ],
        "agents": [{"prompt": "run forever", "responses": [step(use("Bash", command="touch started; sleep 300"))]}],
    },
    nothing,
)


@pytest.mark.parametrize("run", [SHUTDOWN], indirect=True)
async def test_background_agents_stop_with_their_session(run: Run) -> None:
    assert await run.session.prompt([{"type": "text", "text": "start"}]) == "end_turn"
    await poll(lambda: run.asked)
    task = run.session.subagents.find("agent_1")
    assert task is not None and task.status == "running"
    await run.session.close()
    assert status_of(task) == "stopped"


def status_of(task: SubAgentTask) -> TaskStatus:
    """Its status now (a call mypy cannot narrow from an earlier assert: the task changes in between)."""
    return task.status
