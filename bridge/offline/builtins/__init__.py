"""The scenarios that ship with the bridge, by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bridge.offline.builtins import playground, todo_demo
from bridge.offline.scenario import Json, RecordedRequest, Scenario, ScenarioError

BUILTIN_NAMES = ("todo-demo", "playground", "echo")


def _with_delay(
    responder: Callable[[RecordedRequest], Json], delay_ms: int | None
) -> Callable[[RecordedRequest], Json]:
    if delay_ms is None:
        return responder

    def respond(request: RecordedRequest) -> Json:
        response = dict(responder(request))
        response["delay_ms"] = delay_ms
        response["content"] = [
            {k: v for k, v in dict(b).items() if k != "delay_ms"}
            for b in response.get("content", [])
            if isinstance(b, Mapping)
        ]
        return response

    return respond


def builtin_scenario(name: str, *, delay_ms: int | None = None) -> Scenario:
    """A built-in scenario. `delay_ms` replaces every delay between SSE events (0 = as fast as possible)."""
    responders: dict[str, Callable[[RecordedRequest], Any]] = {
        "todo-demo": todo_demo.respond,
        "playground": playground.playground,
        "echo": playground.echo,
    }
    if name not in responders:
        raise ScenarioError(
            f"unknown scenario {name!r}: built-in scenarios are {', '.join(BUILTIN_NAMES)}, "
            "or give the path of a .json scenario file"
        )
    return Scenario.from_responder(_with_delay(responders[name], delay_ms), name=name)


__all__ = ["BUILTIN_NAMES", "builtin_scenario"]
