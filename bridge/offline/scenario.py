"""Scenarios: what the offline model answers, request by request.

A scenario is either a list of scripted responses (a dict or a JSON file) or a *responder*, a callable that
looks at each request and returns one response dict. Both use the same response format (see `check_response`).
The scenario itself is immutable; `ScenarioPlayer` holds the per-server position in the script.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Json = dict[str, Any]
AfterLast = Literal["repeat_last", "end_turn_text"]

FAULT_TYPES = ("status", "drop", "sse_error", "stall", "garbage", "truncated_event", "unknown_event", "unclosed_block")
STREAM_FAULTS = ("drop", "sse_error", "stall", "garbage", "truncated_event", "unknown_event", "unclosed_block")
BLOCK_TYPES = ("text", "thinking", "redacted_thinking", "tool_use")
AFTER_LAST: tuple[AfterLast, ...] = ("repeat_last", "end_turn_text")


class ScenarioError(ValueError):
    """A scenario (or a responder's answer) that does not follow the response format."""


@dataclass
class RecordedRequest:
    """One HTTP request the offline server received, and how it was answered."""

    body: Json
    raw: bytes
    headers: dict[str, str]
    path: str = "/v1/messages"
    status: int = 0  # the HTTP status answered; 0 = no answer (a dropped or stalled non-stream request)
    errors: list[str] = field(default_factory=list)
    received_at: float = field(default_factory=time.monotonic)
    answered_at: float | None = None  # a stream's last byte written (time.monotonic()); benchmarks' tool gaps
    response: Json | None = None  # the scenario response that was played, if any
    method: str = "POST"
    head: bytes = b""  # the request line and headers as received, byte for byte (tests of what clients send)

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


Responder = Callable[[RecordedRequest], Mapping[str, Any]]


def _fail(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"{where}: {message}")


def check_response(response: Mapping[str, Any], where: str = "response") -> Json:
    """Validate one response dict and return it as a plain dict. Format:

    `{"content": [block, ...], "stop_reason": "end_turn", "delay_ms": 5, "fault": {...}, "usage": {...}}`
    with blocks `text` (`text` + optional `chunks` or explicit `deltas`), `thinking` (`thinking` or `deltas`,
    `signature`), `redacted_thinking` (`data`), `tool_use` (`name`, `input`, optional `id`, `pieces`);
    each block may carry its own `delay_ms`. Faults, all with optional `times`:
    - `status` (`status`, `retry_after`, `error_type`, `message`): the request is answered with that status;
    - after `after_events` SSE events: `drop` (the connection is closed mid-body), `stall` (nothing more is
      sent), `sse_error` (an `event: error`, then the body ends), `garbage` (an event whose `data:` line is not
      JSON — `data` to choose it — then the rest of the events), `truncated_event` (the first half of the next
      event, then the body ends cleanly), `unknown_event` (an event of type `name`, default `future_event`,
      then the rest: clients must ignore it);
    - `unclosed_block`: the last content block never gets its `content_block_stop` (message_stop still comes).
    """
    if not isinstance(response, Mapping):
        raise _fail(where, "must be an object")
    content = response.get("content", [])
    if not isinstance(content, list):
        raise _fail(where, "content must be a list of blocks")
    for index, block in enumerate(content):
        here = f"{where}.content.{index}"
        if not isinstance(block, Mapping) or block.get("type") not in BLOCK_TYPES:
            raise _fail(here, f"block type must be one of {', '.join(BLOCK_TYPES)}")
        if block["type"] == "tool_use":
            if not isinstance(block.get("name"), str) or not block["name"]:
                raise _fail(here, "tool_use needs a name")
            if not isinstance(block.get("input", {}), Mapping):
                raise _fail(here, "tool_use input must be an object")
        if "deltas" in block and not (
            isinstance(block["deltas"], list) and all(isinstance(d, str) for d in block["deltas"])
        ):
            raise _fail(here, "deltas must be a list of strings")
    fault = response.get("fault")
    if fault is not None:
        if not isinstance(fault, Mapping) or fault.get("type") not in FAULT_TYPES:
            raise _fail(where, f"fault type must be one of {', '.join(FAULT_TYPES)}")
        if fault["type"] == "status" and not isinstance(fault.get("status"), int):
            raise _fail(where, "a status fault needs an integer status")
        if not isinstance(fault.get("after_events", 0), int) or fault.get("after_events", 0) < 0:
            raise _fail(where, "fault after_events must be a non-negative integer")
        times = fault.get("times", 1)
        if not isinstance(times, int) or times < 1:
            raise _fail(where, "fault times must be a positive integer")
    return dict(response)


@dataclass(frozen=True)
class AgentScript:
    """The responses of a sub-agent's own requests: those whose first user message is exactly `prompt` (the
    prompt its `Agent` call gave). Sub-agents with the same prompt share the script."""

    prompt: str
    responses: tuple[Json, ...] = ()
    after_last: AfterLast = "end_turn_text"


@dataclass(frozen=True)
class Scenario:
    """A named script of responses (and the scripts of its sub-agents), or a responder callable."""

    name: str
    responses: tuple[Json, ...] = ()
    after_last: AfterLast = "end_turn_text"
    responder: Responder | None = None
    agents: tuple[AgentScript, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """`{"name", "responses": [...], "after_last", "agents": [{"prompt", "responses", "after_last"}]}`"""
        name = str(data.get("name", "scenario"))
        responses, after_last = _script(data, f"scenario {name}")
        agents = data.get("agents", [])
        if not isinstance(agents, list):
            raise ScenarioError(f"scenario {name}: agents must be a list of {{prompt, responses}}")
        scripts = []
        for index, agent in enumerate(agents):
            where = f"scenario {name}: agents.{index}"
            if not isinstance(agent, Mapping) or not isinstance(agent.get("prompt"), str) or not agent["prompt"]:
                raise ScenarioError(f"{where}: needs a prompt (the sub-agent's first user message)")
            agent_responses, agent_after = _script(agent, where)
            scripts.append(AgentScript(agent["prompt"].strip(), agent_responses, agent_after))
        return cls(name=name, responses=responses, after_last=after_last, agents=tuple(scripts))

    @classmethod
    def from_responses(
        cls, responses: list[Json], *, name: str = "scenario", after_last: AfterLast = "end_turn_text"
    ) -> Scenario:
        return cls.from_dict({"name": name, "responses": responses, "after_last": after_last})

    @classmethod
    def from_responder(cls, responder: Responder, *, name: str = "responder") -> Scenario:
        return cls(name=name, responder=responder)


def _script(data: Mapping[str, Any], where: str) -> tuple[tuple[Json, ...], AfterLast]:
    responses = data.get("responses", [])
    if not isinstance(responses, list):
        raise ScenarioError(f"{where}: responses must be a list")
    after_last = data.get("after_last", "end_turn_text")
    if after_last not in AFTER_LAST:
        raise ScenarioError(f"{where}: after_last must be one of {', '.join(AFTER_LAST)}")
    return tuple(check_response(r, f"{where}.responses.{i}") for i, r in enumerate(responses)), after_last


def first_user_text(body: Mapping[str, Any]) -> str:
    """The text of the first user message of a request (a sub-agent's is the prompt its parent gave it)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[0], Mapping):
        return ""
    content = messages[0].get("content")
    if isinstance(content, str):
        return content.strip()
    texts = [b.get("text") for b in content or [] if isinstance(b, Mapping) and b.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str)).strip()


def load_scenario(source: str | Path | Mapping[str, Any] | Scenario) -> Scenario:
    """A scenario from a `Scenario`, a dict, a path to a JSON file, or a built-in name."""
    if isinstance(source, Scenario):
        return source
    if isinstance(source, Mapping):
        return Scenario.from_dict(source)
    path = Path(source)
    if path.suffix == ".json" or path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ScenarioError(f"cannot load scenario file {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ScenarioError(f"scenario file {path}: must hold a JSON object")
        data.setdefault("name", path.stem)
        return Scenario.from_dict(data)
    from bridge.offline.builtins import builtin_scenario

    return builtin_scenario(str(source))


def end_turn_text(scenario: str) -> Json:
    return {
        "content": [{"type": "text", "text": f"(offline scenario '{scenario}' has no more responses)"}],
        "stop_reason": "end_turn",
    }


class _Position:
    """Where one script is: each valid request takes the next response; a fault with `times: N` answers N."""

    def __init__(self, responses: tuple[Json, ...], after_last: AfterLast, name: str) -> None:
        self.responses, self.after_last, self.name = responses, after_last, name
        self._index = 0
        self._served = 0  # how many requests the current response has answered

    def next(self) -> Json:
        if self._index >= len(self.responses):
            if self.after_last == "repeat_last" and self.responses:
                return self.responses[-1]
            return end_turn_text(self.name)
        response = self.responses[self._index]
        fault = response.get("fault")
        times = int(fault.get("times", 1)) if isinstance(fault, Mapping) else 1
        self._served += 1
        if self._served >= times:
            self._index += 1
            self._served = 0
        return response


class ScenarioPlayer:
    """Walks a scenario: the main script, and each sub-agent's script for the requests that are that agent's
    (told apart by their first user message).

    Used only from the server's event-loop thread, so it needs no lock.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self._main = _Position(scenario.responses, scenario.after_last, scenario.name)
        self._agents = {
            a.prompt: _Position(a.responses, a.after_last, f"{scenario.name}/agent") for a in reversed(scenario.agents)
        }  # the first script listed for a prompt wins

    def next_response(self, request: RecordedRequest) -> Json:
        scenario = self.scenario
        if scenario.responder is not None:
            return check_response(scenario.responder(request), f"scenario {scenario.name}: responder answer")
        position = self._agents.get(first_user_text(request.body)) if self._agents else None
        return (position or self._main).next()
