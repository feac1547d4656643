"""A session's `session/update` stream: every loop event becomes its update here (one exhaustive match), live
and replayed alike (bridge/replay.py gives a stored session as the same events).

Messages. Text and thinking deltas are coalesced to one update per ~16 ms; the first delta of a burst goes out at
once; anything else flushes what is pending first, so order holds. Each message gets its `messageId`: a new one
when the kind of chunk changes or anything else came between (a tool call, a usage report, a turn's end). A
replay (`replayed`) sends each stored block as its own update, and a turn's end marks its last update
(`_meta.turnEnd`).

Notices are not part of the conversation. A client that advertised `session.notices` gets ACP's `notice` update;
another gets a quoted paragraph as a message of its own — held while the agent's message streams, so a notice
never lands inside an answer. (`serve` shows them through LSP instead: the `notice` callback.)

Sub-agents. A client that knows nothing of `_meta` must see a sub-agent's work where it belongs: inside the
`Agent` call that started it. So by default (`ACP`) the sub-agent's text and tool calls are the content of that
call's `tool_call_update`s (`_Card`) — the parent's message stream stays the parent's. A client that asks for
them (the VS Code extension under `serve`, or `_meta["agent-bridge/subAgentUpdates"]: "nested"`) gets the
sub-agent's own updates instead, each tagged `_meta.parentToolCallId`, and draws nested cards itself."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from bridge.loop import events as ev
from bridge.server import wire
from bridge.server.wire import ChunkKind, ClientFeatures, Level

if TYPE_CHECKING:
    from bridge.tools.base import AnyTool

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], None]
MAX_CARD_TOOLS = 40  # tool lines an `Agent` call's content lists (the latest; the count of the rest is said)


@dataclass
class _Card:
    """What an `Agent` call shows of its sub-agent's work (folded form): its progress, its messages and its tool
    calls in order."""

    progress: ev.AgentProgress | None = None
    items: list[list[str]] = field(default_factory=list)  # ["text", text] | ["tool", id, title, status]
    tools: dict[str, list[str]] = field(default_factory=dict)
    dirty: bool = False

    def text(self, delta: str) -> None:
        if self.items and self.items[-1][0] == "text":
            self.items[-1][1] += delta
        else:
            self.items.append(["text", delta])
        self.dirty = True

    def tool(self, call: str, title: str, *, rewritten: bool = False) -> None:
        if rewritten and call in self.tools:  # the same call, as a hook rewrote it: retitled
            self.tools[call][2] = title
            self.dirty = True
            return
        item = ["tool", call, title, "pending"]
        self.items.append(item)
        self.tools[call] = item
        self.dirty = True

    def status(self, call: str, status: str) -> None:
        item = self.tools.get(call)
        if item is not None and item[3] != status:
            item[3] = status
            self.dirty = True

    def content(self, result: str | None = None) -> list[dict[str, Any]]:
        """The call's content: progress, then the work (text as it was said, tool calls as lines)."""
        items = self.items
        if result is not None and items and items[-1][0] == "text" and items[-1][1].strip() == result.strip():
            items = items[:-1]  # the final message is the result, shown once
        tools = [item for item in items if item[0] == "tool"]
        hidden = {item[1] for item in tools[:-MAX_CARD_TOOLS]} if len(tools) > MAX_CARD_TOOLS else set()
        blocks: list[str] = [self.progress.summary()] if self.progress is not None else []
        lines: list[str] = []
        if hidden:
            lines.append(f"… {len(hidden)} earlier tool call{'s' if len(hidden) != 1 else ''}")
        for item in items:
            if item[0] == "tool":
                if item[1] not in hidden:
                    lines.append(wire.tool_line(item[2], item[3]))
                continue
            if lines:
                blocks.append("\n".join(lines))
                lines = []
            if item[1].strip():
                blocks.append(item[1].strip())
        if lines:
            blocks.append("\n".join(lines))
        if result:
            blocks.append(result)
        return [wire.text_content(block) for block in blocks]


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
        send: Send,
        notice: Callable[[ev.Notice], None] | None = None,
        *,
        features: ClientFeatures | None = None,
        interval: float = 0.016,
        end_turn: Callable[[dict[str, Any]], None] | None = None,
        config: Callable[[], list[dict[str, Any]]] | None = None,
        offline: bool = False,
    ) -> None:
        """`notice`: where notices go instead of the stream (`serve`: LSP messages; a replay: nowhere); None: the
        stream shows them (ACP). `config`: the session's config options now (for `config_option_update`)."""
        self._send = send
        self._notice = notice
        self.features = features or ClientFeatures(nested_sub_agents=True)
        self._offline = offline  # the offline demo model answers: its usage costs nothing
        self._interval = interval  # 0: no coalescing (a replay: each stored block is its own update)
        self._end_turn = end_turn
        self._config = config
        self._pending_kind: ChunkKind | None = None
        self._pending_parent: str | None = None
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._open: tuple[ChunkKind, str] | None = None  # the session's own message being streamed, and its id
        self._nested_open: dict[str, tuple[ChunkKind, str]] = {}  # a sub-agent's (nested form), by its call
        self._held: list[dict[str, Any]] = []  # notices waiting for the message to end
        self._cards: dict[str, _Card] = {}  # folded form: each `Agent` call's view of its sub-agent
        self._owner: dict[str, str] = {}  # a deeper agent's call -> the session's own `Agent` call it is under

    def emit(self, event: ev.LoopEvent, parent: str | None = None) -> None:
        """`parent`: the `Agent` call whose sub-agent `event` comes from."""
        if parent is not None and not self.features.nested_sub_agents:
            self._fold(event, parent)
            return
        match event:
            case ev.TextDelta(text=text):
                self.chunk("agent_message_chunk", text, parent)
            case ev.ThinkingDelta(text=text):
                self.chunk("agent_thought_chunk", text, parent)
            case ev.UserText(text=text, message_id=str(message_id)):  # a replayed prompt: ACP's `messageId`
                self.update({**wire.chunk("user_message_chunk", text), "messageId": message_id}, parent)
            case ev.UserText(text=text):
                self.chunk("user_message_chunk", text, parent)
            case ev.TurnEnded():
                self.end_turn()
                if self._end_turn is not None:
                    self._end_turn(wire.turn_end(event))
            case ev.Notice():
                self._show_notice(event.message, event.level)
            case ev.RetryWait():
                log.info("%s", event.summary())
                self.notice(event.summary(), "info", wire.retry_meta(event), parent=parent)
            case ev.SubAgentEvent(parent_tool_call_id=call, event=inner):
                self.emit(inner, call)
            case ev.ToolCallStarted():
                self.update(wire.tool_call(event), parent)
            case ev.ToolCallInProgress():
                self.update(wire.tool_in_progress(event), parent)
            case ev.ToolCallProgress():
                self.update(wire.tool_progress(event), parent)
            case ev.ToolCallFinished():
                card = self._cards.pop(event.tool_call_id, None) if parent is None else None
                before = card.content(event.text) if card is not None else None
                self.update(wire.tool_finished(event, content=before), parent)
            case ev.UsageReport():
                self.update(wire.usage(event, offline=self._offline), parent)
            case ev.AgentProgress():
                if self.features.nested_sub_agents:
                    self.update(wire.agent_progress(event), parent)
                else:
                    card = self._cards.setdefault(event.tool_call_id, _Card())
                    card.progress, card.dirty = event, True
                    self._send_card(event.tool_call_id)
            case ev.ModeChanged():
                if parent is None:  # a sub-agent cannot change the session's mode
                    self.update(wire.mode(event))
                    if self._config is not None and self.features.session_metadata:
                        self.update(wire.config_update(self._config()), closes=False)
            case ev.PlanUpdate():
                if parent is None:  # a sub-agent's todo list is its own, not the session's plan
                    self.update(wire.plan(event))
            case _:
                assert_never(event)

    def _fold(self, event: ev.LoopEvent, parent: str) -> None:
        """A sub-agent's event, as part of the content of the session's own `Agent` call it is under."""
        owner = self._owner.get(parent, parent)
        card = self._cards.setdefault(owner, _Card())
        match event:
            case ev.TextDelta(text=text):
                if owner == parent:  # a deeper agent's words reach its parent as its call's result
                    card.text(text)
            case ev.ToolCallStarted():
                self._owner[event.tool_call_id] = owner
                card.tool(event.tool_call_id, event.title, rewritten=event.rewritten)
            case ev.ToolCallInProgress() | ev.ToolCallProgress():
                card.status(event.tool_call_id, "in_progress")
            case ev.ToolCallFinished():
                card.status(event.tool_call_id, event.status)
            case ev.SubAgentEvent(parent_tool_call_id=call, event=inner):
                self._owner.setdefault(call, owner)
                self._fold(inner, call)
                return
            case ev.UsageReport():  # the session's totals (sub-agents included): the session's own update
                self.update(wire.usage(event))
                return
            case ev.RetryWait():
                log.info("%s", event.summary())
                self.notice(event.summary(), "info", wire.retry_meta(event))
                return
            case ev.Notice():
                self._show_notice(event.message, event.level)
                return
            case (
                ev.ThinkingDelta()
                | ev.UserText()
                | ev.AgentProgress()
                | ev.TurnEnded()
                | ev.ModeChanged()
                | ev.PlanUpdate()
            ):
                return  # its thoughts, its prompt (the call's input says it), a deeper card, its own plan
            case _:
                assert_never(event)
        if card.dirty:
            self._schedule_card(owner)

    # ---- messages ----------------------------------------------------------------------------------------------

    def chunk(self, kind: ChunkKind, text: str, parent: str | None = None) -> None:
        """`parent`: the sub-agent's call when the text is a sub-agent's (never coalesced with another's)."""
        if self._pending_kind is not None and (kind, parent) != (self._pending_kind, self._pending_parent):
            self.flush()
        if self._interval <= 0 or self._timer is None:  # quiet until now (or a replay): send at once
            self._send_chunk(kind, text, parent)
            if self._interval > 0:
                self._open_window()
            return
        self._pending_kind = kind
        self._pending_parent = parent
        self._pending.append(text)

    def _send_chunk(self, kind: ChunkKind, text: str, parent: str | None) -> None:
        opened = self._open if parent is None else self._nested_open.get(parent)
        if opened is None or opened[0] != kind:
            if parent is None:
                self._close_message()
            opened = (kind, wire.new_message_id())
            if parent is None:
                self._open = opened
            else:
                self._nested_open[parent] = opened
        self._send(wire.chunk(kind, text, parent, opened[1]))

    def _close_message(self) -> None:
        """The message being streamed is over: the notices that waited for it go out."""
        self._open = None
        held, self._held = self._held, []
        for update in held:
            self._send(update)

    def update(self, update: dict[str, Any], parent: str | None = None, *, closes: bool = True) -> None:
        """Any update but a chunk: what is pending goes first. `closes`: it ends the message being streamed (a
        tool call, a usage report); not so the session's own metadata (commands, config, title)."""
        self.flush()
        if parent is not None:
            self._nested_open.pop(parent, None)
            self._send(wire.nested(update, parent))
            return
        if closes:
            self._close_message()
        self._send(update)

    def notice(
        self, message: str, level: Level, meta: dict[str, Any] | None = None, *, parent: str | None = None
    ) -> None:
        """Something the user should see that is not part of the conversation (see the module docstring)."""
        if self.features.notices:
            self.flush()
            self._send(wire.notice_update(message, level, meta))
            return
        update = wire.notice_chunk(message, level, meta, wire.new_message_id())
        if parent is not None:
            self.update(update, parent)
            return
        self.flush()
        if self._open is not None and self._open[0] == "agent_message_chunk":
            self._held.append(update)  # never inside the answer being streamed
            return
        self._close_message()
        self._send(update)

    def _show_notice(self, message: str, level: Level) -> None:
        if self._notice is not None:
            self._notice(ev.Notice(message, level))
        else:
            self.notice(message, level)

    def end_turn(self) -> None:
        """The turn is over: everything pending (text, cards, held notices) goes out before its answer."""
        self.flush()
        self._close_message()
        self._nested_open.clear()

    # ---- sub-agents' cards (folded form) -------------------------------------------------------------------------

    def _schedule_card(self, call: str) -> None:
        if self._interval <= 0 or self._timer is None:
            self._send_card(call)
            if self._interval > 0:
                self._open_window()

    def _send_card(self, call: str) -> None:
        card = self._cards.get(call)
        if card is None or not card.dirty:
            return
        card.dirty = False
        self._flush_text()
        self._send(wire.agent_card(call, card.content(), card.progress))

    # ---- coalescing ----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        self._flush_text()
        for call in [c for c, card in self._cards.items() if card.dirty]:
            self._send_card(call)

    def _flush_text(self) -> None:
        if self._pending and self._pending_kind is not None:
            text = "".join(self._pending)
            kind, parent = self._pending_kind, self._pending_parent
            self._pending.clear()
            self._pending_kind = self._pending_parent = None
            self._send_chunk(kind, text, parent)

    def close(self) -> None:
        self.end_turn()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _open_window(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._pending or any(card.dirty for card in self._cards.values()):
            self.flush()
            self._open_window()


def replayed(
    events: list[ev.LoopEvent], features: ClientFeatures | None = None, *, offline: bool = False
) -> list[dict[str, Any]]:
    """A stored session's updates (bridge/replay.py's events through the same mapping as live): each block its own
    update, each turn's last update marked with how the turn ended (`_meta.turnEnd`, our extension: an ACP
    client that ignores it still sees plain updates; one that knows it shows each prompt as its own turn)."""
    out: list[dict[str, Any]] = []

    def end_turn(turn_end: dict[str, Any]) -> None:
        if out:
            last = out[-1]
            out[-1] = {**last, "_meta": {**(last.get("_meta") or {}), "turnEnd": turn_end}}

    stream = UpdateStream(
        out.append, lambda _notice: None, features=features, interval=0, end_turn=end_turn, offline=offline
    )
    for event in events:
        stream.emit(event)
    stream.close()
    return out
