"""A session's `session/update` stream: every loop event becomes its update here (one exhaustive match), live
and replayed alike (bridge/replay.py gives a stored session as the same events). Live, text and thinking deltas
are coalesced to one update per ~16 ms; the first delta of a burst goes out at once; anything else flushes what
is pending first, so order holds. A replay (`replayed`) sends each stored block as its own update, and a turn's
end marks its last update (`_meta.turnEnd`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_never

from bridge.loop.events import (
    AgentProgress,
    LoopEvent,
    ModeChanged,
    Notice,
    PlanUpdate,
    RetryWait,
    SubAgentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallInProgress,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
    UsageReport,
    UserText,
)
from bridge.server import wire
from bridge.server.wire import ChunkKind

if TYPE_CHECKING:
    from bridge.tools.base import AnyTool

log = logging.getLogger(__name__)


def tool_meta(tool: AnyTool | None, raw_input: dict[str, Any]) -> dict[str, Any]:
    """What a call's tool says of it, for its tool call's `_meta` (ours): `destructive` — it deletes or
    overwrites (`Tool.is_destructive`), so an editor keeps "always allow" out of reach and warns. The input
    observers see may carry derived fields (an absolute path): only the tool's own fields are validated. A
    tool that can't answer says nothing. May read a command (Bash): call it off the event loop."""
    if tool is None:
        return {}
    fields = {name for name in tool.input_model.model_fields}
    fields |= {info.alias for info in tool.input_model.model_fields.values() if info.alias}
    try:
        data = tool.input_model.model_validate({k: v for k, v in raw_input.items() if k in fields})
        return {"destructive": bool(tool.is_destructive(data))}
    except Exception:
        log.debug("tool %s could not say whether a call is destructive", tool.name, exc_info=True)
        return {}


class UpdateStream:
    def __init__(
        self,
        send: Callable[[dict[str, Any]], None],
        notice: Callable[[Notice], None] = lambda _notice: None,
        *,
        interval: float = 0.016,
        end_turn: Callable[[dict[str, Any]], None] | None = None,
        offline: bool = False,
    ) -> None:
        self._send = send
        self._offline = offline  # the offline demo model answers: its usage costs nothing
        self._notice = notice  # not part of the conversation: shown apart (a log line, a message)
        self._interval = interval  # 0: no coalescing (a replay: each stored block is its own update)
        self._end_turn = end_turn
        self._pending_kind: ChunkKind | None = None
        self._pending_parent: str | None = None
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def emit(self, event: LoopEvent, parent: str | None = None) -> None:
        """`parent`: the `Agent` call whose sub-agent `event` comes from (its updates carry
        `_meta.parentToolCallId`)."""
        match event:
            case TextDelta(text=text):
                self.chunk("agent_message_chunk", text, parent)
            case ThinkingDelta(text=text):
                self.chunk("agent_thought_chunk", text, parent)
            case UserText(text=text, message_id=str(message_id)):  # a replayed prompt: ACP's `messageId`
                self.update({**wire.chunk("user_message_chunk", text), "messageId": message_id}, parent)
            case UserText(text=text):
                self.chunk("user_message_chunk", text, parent)
            case TurnEnded():
                self.flush()
                if self._end_turn is not None:
                    self._end_turn(wire.turn_end(event))
            case Notice():
                self._notice(event)
            case RetryWait():
                log.info("%s", event.summary())
                self.update(wire.retry(event), parent)
            case SubAgentEvent(parent_tool_call_id=call, event=inner):
                self.emit(inner, call)
            case ToolCallStarted():
                self.update(wire.tool_call(event), parent)
            case ToolCallInProgress():
                self.update(wire.tool_in_progress(event), parent)
            case ToolCallProgress():
                self.update(wire.tool_progress(event), parent)
            case ToolCallFinished():
                self.update(wire.tool_finished(event), parent)
            case UsageReport():
                self.update(wire.usage(event, offline=self._offline), parent)
            case AgentProgress():
                self.update(wire.agent_progress(event), parent)
            case ModeChanged():
                if parent is None:  # a sub-agent cannot change the session's mode
                    self.update(wire.mode(event))
            case PlanUpdate():
                if parent is None:  # a sub-agent's todo list is its own, not the session's plan
                    self.update(wire.plan(event))
            case _:
                assert_never(event)

    def chunk(self, kind: ChunkKind, text: str, parent: str | None = None) -> None:
        """`parent`: the sub-agent's call when the text is a sub-agent's (never coalesced with another's)."""
        if self._pending_kind is not None and (kind, parent) != (self._pending_kind, self._pending_parent):
            self.flush()
        if self._interval <= 0:
            self._send(wire.chunk(kind, text, parent))
            return
        if self._timer is None:  # quiet until now: send at once, then hold a window open
            self._send(wire.chunk(kind, text, parent))
            self._open_window()
            return
        self._pending_kind = kind
        self._pending_parent = parent
        self._pending.append(text)

    def update(self, update: dict[str, Any], parent: str | None = None) -> None:
        self.flush()
        self._send(wire.nested(update, parent) if parent is not None else update)

    def flush(self) -> None:
        if self._pending and self._pending_kind is not None:
            text = "".join(self._pending)
            kind, parent = self._pending_kind, self._pending_parent
            self._pending.clear()
            self._pending_kind = self._pending_parent = None
            self._send(wire.chunk(kind, text, parent))

    def close(self) -> None:
        self.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _open_window(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._pending:
            self.flush()
            self._open_window()


def replayed(events: list[LoopEvent], *, offline: bool = False) -> list[dict[str, Any]]:
    """A stored session's updates (bridge/replay.py's events through the same mapping as live): each block its own
    update, each turn's last update marked with how the turn ended (`_meta.turnEnd`, our extension: an ACP
    client that ignores it still sees plain updates; one that knows it shows each prompt as its own turn)."""
    out: list[dict[str, Any]] = []

    def end_turn(turn_end: dict[str, Any]) -> None:
        if out:
            last = out[-1]
            out[-1] = {**last, "_meta": {**(last.get("_meta") or {}), "turnEnd": turn_end}}

    stream = UpdateStream(out.append, interval=0, end_turn=end_turn, offline=offline)
    for event in events:
        stream.emit(event)
    return out
