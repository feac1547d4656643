"""What the loop tells its front ends (the editor server, the terminal). A tagged union on `kind`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from bridge.display import Display, Location, PlanEntry, SubAgentLabel
from bridge.tools.base import ToolKind


@dataclass(frozen=True)
class TextDelta:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingDelta:
    text: str
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class ToolCallStarted:
    tool_call_id: str
    name: str
    title: str
    tool_kind: ToolKind
    raw_input: dict[str, Any]
    locations: list[Location] = field(default_factory=list)
    rewritten: bool = False  # the same call again, as a PreToolUse hook rewrote it: what runs (its card retitled)
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True)
class ToolCallProgress:
    """Tool output so far (whole text each time, e.g. Bash's streamed output)."""

    tool_call_id: str
    output: str
    kind: Literal["tool_progress"] = "tool_progress"


@dataclass(frozen=True)
class ToolCallInProgress:
    tool_call_id: str
    kind: Literal["tool_in_progress"] = "tool_in_progress"


@dataclass(frozen=True)
class ToolCallFinished:
    tool_call_id: str
    status: Literal["completed", "failed"]
    text: str
    display: list[Display] = field(default_factory=list)
    raw_output: dict[str, Any] | None = None
    kind: Literal["tool_done"] = "tool_done"


@dataclass(frozen=True)
class UsageReport:
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    context_used: int
    context_size: int
    cost_usd: float
    session_cost_usd: float
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True)
class PlanUpdate:
    entries: list[PlanEntry]
    kind: Literal["plan"] = "plan"


@dataclass(frozen=True)
class Notice:
    """Something a person should see that is not part of the conversation (a retry, a warning)."""

    message: str
    level: Literal["info", "warning", "error"] = "info"
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class RetryWait:
    """The model API failed in a way worth retrying: the turn waits `delay` seconds, then makes attempt
    `attempt` of at most `attempts` (0: not said)."""

    reason: str
    attempt: int
    attempts: int
    delay: float
    kind: Literal["retry_wait"] = "retry_wait"

    def summary(self) -> str:
        """'API overloaded — retrying in 3 s (attempt 2/4)'."""
        of = f"/{self.attempts}" if self.attempts else ""
        return f"{self.reason} — retrying in {round(self.delay, 1):g} s (attempt {self.attempt}{of})"


@dataclass(frozen=True)
class ModeChanged:
    mode: str
    kind: Literal["mode"] = "mode"


@dataclass(frozen=True)
class AgentProgress:
    """How a sub-agent started by the `Agent` call `tool_call_id` is doing (its card in the editor)."""

    tool_call_id: str
    agent: SubAgentLabel
    status: Literal["running", "completed", "failed", "stopped"]
    started_at: float  # seconds since the epoch
    elapsed_s: float
    tool_calls: int
    tokens: int  # input + output of every response so far
    last_tool: str | None = None  # the title of its latest tool call
    background: bool = False
    kind: Literal["agent_progress"] = "agent_progress"

    def summary(self) -> str:
        """One line for a person: what it is doing, how much it has used, for how long."""
        doing = {
            "running": f"Running: {self.last_tool}" if self.last_tool else "Thinking",
            "completed": "Done",
            "failed": "Failed",
            "stopped": "Stopped",
        }[self.status]
        calls = f"{self.tool_calls} tool call{'s' if self.tool_calls != 1 else ''}"
        return f"{doing} · {calls} · {_tokens(self.tokens)} tokens · {self.elapsed_s:.0f} s"


@dataclass(frozen=True)
class SubAgentEvent:
    """An event of a sub-agent's loop, going up to the session tagged with the `Agent` call that started it."""

    parent_tool_call_id: str
    event: LoopEvent
    kind: Literal["sub_agent"] = "sub_agent"


@dataclass(frozen=True)
class UserText:
    """What the user said. A live front end has the prompt already; a replay (bridge/replay.py) shows it, and a
    sub-agent's prompt comes up as its call's."""

    text: str
    message_id: str | None = None  # a replayed prompt's turn id (what a rewind or a fork names)
    kind: Literal["user_text"] = "user_text"


@dataclass(frozen=True)
class TurnEnded:
    """How a turn ended: its stop reason, or the error it failed with, or `cut_off` (the bridge stopped under it).
    A replay frames each stored turn with it; live, the prompt's answer says it."""

    stop_reason: str | None
    error: str | None = None
    cut_off: bool = False
    kind: Literal["turn_end"] = "turn_end"


def _tokens(count: int) -> str:
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


LoopEvent = (
    TextDelta
    | ThinkingDelta
    | ToolCallStarted
    | ToolCallProgress
    | ToolCallInProgress
    | ToolCallFinished
    | UsageReport
    | PlanUpdate
    | Notice
    | RetryWait
    | ModeChanged
    | AgentProgress
    | SubAgentEvent
    | UserText
    | TurnEnded
)
