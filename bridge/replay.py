"""A stored session as the events a live one emitted (`session/load`): the same `LoopEvent`s — with the two a
live turn has no need of, the user's own words (`UserText`) and where each turn ended (`TurnEnded`) — so one
event → wire mapping (bridge/server/updates.py) serves live and replayed sessions alike.

Each stored turn's messages are repaired on their own (a call a crash cut off shows as interrupted); a turn
that made requests is followed by its stored usage; its end closes it, unless it is the one still running (a
live session loaded again). The interruption markers are for the model, not the reader: they are skipped (the
interrupted call already says `Interrupted by user`). A sub-agent's stored history is replayed right after the
call that started it, tagged with that call (`SubAgentEvent`), as live — and as live, without the user text of
its history: that is its parent's prompt for it (the call's input), not anything the user typed. The plan is what
the tools say their calls did (`Tool.replayed_effects`): the last one the session's own calls set comes last.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from bridge.display import Display, PlanEntry
from bridge.loop.events import (
    LoopEvent,
    PlanUpdate,
    SubAgentEvent,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    TurnEnded,
    UsageReport,
    UserText,
)
from bridge.loop.executor import replayed_effects, started_event, stored_display
from bridge.messages import MARKER, MARKER_TOOL_USE, Block, Message, repair_pairing
from bridge.tools.base import AnyTool, PlanChanged
from bridge.transcript import StoredTurn

Tools = Callable[[str], AnyTool | None]
Sidechain = Callable[[str], list[Message] | None]
Readable = Callable[[Path], bool]


def _no_sidechain(_call: str) -> list[Message] | None:
    return None


def _nothing_readable(_path: Path) -> bool:
    return False


def workspace_readable(roots: Sequence[Path], guard: Callable[[Path, Path | None], str | None]) -> Readable:
    """Whether a replay may read a file a stored call names (an Edit's, for the line its text is at now): its
    real path is in one of `roots` (the session's workspace and added folders), and `guard` (the session's read
    guard: deny rules, the bridge's own secrets) lets it be shown. Bypass mode or an allow rule never widens this:
    the stored input is not this session's model's but anyone's who could write the transcript (attack round 17:
    a forged one made the bridge read any file, up to 4 MB, and show where a text is in it)."""
    real_roots = [os.path.realpath(root) for root in roots]

    def readable(path: Path) -> bool:
        try:
            real = os.path.realpath(path)
            inside = any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in real_roots)
            return inside and guard(path, None) is None
        except (OSError, ValueError):  # (a NUL in the name: ValueError)
            return False

    return readable


def replay_turns(
    turns: list[StoredTurn],
    tools: Tools,
    sidechain: Sidechain = _no_sidechain,
    *,
    context_size: int = 0,
    last_running: bool = False,
    readable: Readable = _nothing_readable,
) -> list[LoopEvent]:
    """The events of a stored session, turn by turn (module docstring). `readable(path)`: whether a file a stored
    call names may be read for its display (the session's workspace and added folders; by default none)."""
    events: list[LoopEvent] = []
    plan: list[PlanEntry] | None = None
    for index, turn in enumerate(turns):
        part, turn_plan = _replay(repair_pairing(turn.messages), tools, sidechain, readable)
        if turn.id is not None:  # its prompt's text carries the turn's id (the editor's "rewind to here")
            part = _prompt_tagged(part, turn.id)
        plan = turn_plan if turn_plan is not None else plan
        if turn.responses:
            part.append(_stored_usage(turn, context_size))
        if part and not (last_running and index == len(turns) - 1):
            part.append(_turn_end(turn))
        events += part
    if plan is not None:
        events.append(PlanUpdate(plan))
    return events


def replay_history(
    messages: list[Message],
    tools: Tools,
    sidechain: Sidechain = _no_sidechain,
    *,
    readable: Readable = _nothing_readable,
) -> list[LoopEvent]:
    """A stored history without turns (a sub-agent's) as events; the session's plan as last set comes last."""
    events, plan = _replay(messages, tools, sidechain, readable)
    if plan is not None:
        events.append(PlanUpdate(plan))
    return events


def _prompt_tagged(events: list[LoopEvent], turn_id: str) -> list[LoopEvent]:
    """The turn's leading user text (its prompt) tagged with the turn's id."""
    tagged: list[LoopEvent] = []
    for at, event in enumerate(events):
        if not isinstance(event, UserText):
            return tagged + events[at:]
        tagged.append(dataclasses.replace(event, message_id=turn_id))
    return tagged


def _turn_end(turn: StoredTurn) -> TurnEnded:
    if turn.error is not None:
        return TurnEnded(None, error=turn.error)
    if not turn.ended:
        return TurnEnded(None, cut_off=True)
    return TurnEnded(turn.stop_reason)


def _stored_usage(turn: StoredTurn, context_size: int) -> UsageReport:
    """A turn's stored usage as one report (live there is one per response; the totals are the same)."""
    usage = turn.usage
    return UsageReport(
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        context_used=turn.context_tokens,
        context_size=context_size,
        cost_usd=turn.cost_usd,
        session_cost_usd=turn.session_cost_usd,
    )


def _replay(
    messages: list[Message], tools: Tools, sidechain: Sidechain, readable: Readable, *, sub_agent: bool = False
) -> tuple[list[LoopEvent], list[PlanEntry] | None]:
    """The events of `messages` (a sub-agent's: no user text), and the plan the last of their calls set (None:
    none did)."""
    events: list[LoopEvent] = []
    plan: list[PlanEntry] | None = None
    uses: dict[str, Block] = {}
    for message in messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                if message["role"] == "user" and (sub_agent or block["text"] in (MARKER, MARKER_TOOL_USE)):
                    continue
                events.append(UserText(block["text"]) if message["role"] == "user" else TextDelta(block["text"]))
            elif kind == "thinking":
                events.append(ThinkingDelta(block["thinking"]))
            elif kind == "tool_use":
                call = str(block["id"])
                tool = tools(block["name"])
                uses[call] = block
                for effect in replayed_effects(block, tool):
                    if isinstance(effect, PlanChanged):
                        plan = list(effect.entries)
                events.append(started_event(block, tool))
                child = sidechain(call)
                if child is not None:  # a sub-agent's plan is its own, not the session's
                    replayed = _replay(child, tools, sidechain, readable, sub_agent=True)[0]
                    events += [SubAgentEvent(call, e) for e in replayed]
            elif kind == "tool_result":
                events.append(_finished(block, uses, tools, readable))
    return events, plan


def _finished(block: Block, uses: dict[str, Block], tools: Tools, readable: Readable) -> ToolCallFinished:
    content = block.get("content")
    text = (
        content
        if isinstance(content, str)
        else " ".join(str(b.get("text", "")) for b in content or [] if isinstance(b, dict))
    )
    failed = bool(block.get("is_error"))
    use = uses.get(str(block.get("tool_use_id")))
    shown: list[Display] = stored_display(use, tools(use["name"]), readable) if use is not None and not failed else []
    return ToolCallFinished(str(block["tool_use_id"]), "failed" if failed else "completed", text, shown)
