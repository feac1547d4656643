"""What `agent-bridge run` shows of a turn: the loop's events, in the order a person reads them.

Two parts of the screen. Above, what is final, written once and never redrawn: the model's text rendered as
markdown block by block (bridge/cli/markdown.py), each tool call with its result under it in the order the
model made the calls (a call's result waits for the calls before it: parallel calls finish in any order), a
sub-agent's calls nested under its own call, thinking collapsed to one line. Below, on a terminal only, a live
area redrawn in place several times a second: the block of text still streaming (plain until it is final),
the calls still running with their elapsed time and the last lines of their output, and a status line with a
spinner saying what is being waited for and for how long. It is erased before anything is written above and
while a question is asked (`asking`), so it never mixes with either.

When standard output is not a terminal (a pipe, a file, CI) there is no live area and no escape sequence: the
model's text is written as it streams, unrendered (markdown is the plain text a file wants), and the calls in
order. `NO_COLOR` keeps the layout, bold and dim, without colour.

Whatever the model or a tool says is printed with its control characters made visible (`bridge.visible`).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import os
import shutil
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, assert_never

from bridge.display import Diff, Display, TextContent
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
from bridge.permissions.types import RuleSuggestion
from bridge.visible import one_line, visible

if TYPE_CHECKING:
    from bridge.cli.markdown import Blocks, Renderer

DIM, BOLD, RED, GREEN, RESET = "\033[2m", "\033[1m", "\033[31m", "\033[32m", "\033[0m"
COLOURS = (RED, GREEN)  # what NO_COLOR leaves out (bold and dim are not colours)
SHOWN_LINES = 12  # of a diff or a text shown under a tool call (and in a question)
RESULT_LINES = 4  # of a tool call's result
NESTED_RESULT_LINES = 2  # of a sub-agent's tool call's result
REPORT_LINES = 8  # of a sub-agent's report
TAIL_LINES = 3  # of a running command's output, in the live area
LIVE_CALLS = 8  # running calls listed in the live area
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between redraws of the live area


def shown(text: str) -> str:
    """Text from the model, a tool or a file, safe to print: control characters made visible (tabs and line
    breaks kept)."""
    return visible(text, keep_newlines=True, keep_tabs=True)


def render(item: Display) -> list[str]:
    """What a tool shows, as terminal lines (bounded): a text's first lines, a diff's changed lines."""
    return [shown(line) for line in _render(item)]


def _render(item: Display) -> list[str]:
    match item:
        case TextContent(text=text):
            lines = text.strip().splitlines()
        case Diff():
            old = (item.old_text or "").splitlines()
            changed = [line for line in difflib.unified_diff(old, item.new_text.splitlines(), lineterm="", n=0)
                       if not line.startswith(("---", "+++", "@@"))]
            verb = "new file" if item.old_text is None else "edited"
            added, removed = sum(ln[0] == "+" for ln in changed), sum(ln[0] == "-" for ln in changed)
            lines = [f"{item.path} ({verb}: +{added} -{removed})", *changed]
        case _:
            assert_never(item)
    more = [f"… {len(lines) - SHOWN_LINES} more lines"] if len(lines) > SHOWN_LINES else []
    return lines[:SHOWN_LINES] + more


def cells(text: str) -> int:
    """How many terminal columns `text` takes (wide characters two, combining marks none)."""
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def clip(text: str, width: int | None) -> str:
    """`text` cut to `width` columns, an ellipsis marking the cut (None: as it is)."""
    if width is None or cells(text) <= width:
        return text
    out, used = [], 0
    for char in text:
        used += cells(char)
        if used > width - 1:
            break
        out.append(char)
    return "".join(out) + "…"


def wrap(text: str, width: int) -> list[str]:
    """`text` cut into rows of at most `width` columns (as a terminal wraps it, but known here)."""
    rows: list[str] = []
    row: list[str] = []
    used = 0
    for char in text:
        size = cells(char)
        if used + size > width and row:
            rows.append("".join(row))
            row, used = [], 0
        row.append(char)
        used += size
    rows.append("".join(row))
    return rows


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


@dataclass
class Calls:
    """Tool calls in the order the model made them; those before `next` are written above."""

    items: list[Call] = field(default_factory=list)
    next: int = 0

    @property
    def pending(self) -> list[Call]:
        return self.items[self.next:]


@dataclass
class Call:
    id: str
    title: str
    started: float
    running: float | None = None  # when it started to run (it may wait for a question first)
    output: str = ""  # a command's output so far
    done: ToolCallFinished | None = None
    agent: AgentProgress | None = None  # a sub-agent's call: how that agent is doing
    children: Calls = field(default_factory=Calls)  # a sub-agent's calls
    shown: bool = False  # its header line is written


class TerminalView:
    """The loop's events → the screen (see the module's docstring). `line`, `write` and `paint` are what a
    question (bridge/cli/terminal.py) uses to ask; `asking` frames it."""

    def __init__(self, out: TextIO = sys.stdout, *, color: bool | None = None, offline: str | None = None,
                 show_thinking: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.out = out
        tty = _isatty(out) and os.environ.get("TERM") != "dumb"
        self.color = tty if color is None else color  # escape sequences at all (and the live area)
        self.no_color = bool(os.environ.get("NO_COLOR"))
        self.offline = offline
        self.show_thinking = show_thinking
        self.clock = clock
        self.usage: list[UsageReport] = []
        self._calls = Calls()
        self._by_id: dict[str, Call] = {}
        self._agents: list[Call] = []  # sub-agents' calls, written: a background agent's work comes later
        self._blocks: Blocks | None = None  # the markdown streaming (terminal)
        self._renderer: Renderer | None = None
        self._text = False  # a text block is streaming
        self._starting_text = True  # (plain) the next text starts a new part of the turn
        self._thinking: list[str] | None = None
        self._thinking_since = 0.0
        self._activity, self._since = "Waiting for the model", clock()
        self._tail = "\n"  # the last characters written above (where the next line starts, blank lines)
        self._wrote = False
        self._live_rows = 0
        self._live = False  # a turn runs: the live area is drawn
        self._paused = False  # a question is being asked
        self._held: list[str] = []  # written above while a question was asked: after it
        self._ticker: asyncio.Task[None] | None = None
        self._last_draw = 0.0

    # --- what a question uses ------------------------------------------------------------------------------

    def paint(self, code: str, text: str) -> str:
        if not self.color or (self.no_color and code in COLOURS):
            return text
        return f"{code}{text}{RESET}"

    def write(self, text: str) -> None:
        """Raw text (a question's `  > `): the live area goes away until the question is answered."""
        self._erase()
        self._paused = True
        self._out(text)

    def line(self, text: str) -> None:
        self._end_line()
        self._erase()
        self._out(text + "\n")
        self._draw()

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """A question is on the screen: nothing else is written or drawn until it is answered."""
        self._end_text()
        self._end_thinking()
        self._flush()
        self._erase()
        self._paused = True
        try:
            yield
        finally:
            self._paused = False
            self._tail = "\n"  # the answer's Enter, echoed by the terminal
            held, self._held = self._held, []
            if held:
                self._out("".join(held))
            self._draw()

    def saved_soon(self, suggestion: RuleSuggestion) -> None:
        """Once the always-answer is saved (the executor saves it as soon as the question returns), say where;
        a rule that could not be saved shows as the executor's own error."""
        asyncio.get_running_loop().call_soon(self._saved, suggestion)

    def _saved(self, suggestion: RuleSuggestion) -> None:
        try:
            data = json.loads(Path(suggestion.destination).read_text(encoding="utf-8"))
            kept = data["permissions"][suggestion.behavior]
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(kept, list) and all(rule in kept for rule in suggestion.rules):
            rules = ", ".join(visible(rule) for rule in suggestion.rules)
            self._commit([self.paint(DIM, f"  ✓ {suggestion.behavior} {rules}: saved in "
                                          f"{visible(suggestion.destination)}")], gap=False)
            self._draw()

    # --- the turn ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """A turn begins: on a terminal, the live area with its indicator."""
        self._live = True
        self._activity, self._since = "Waiting for the model", self.clock()
        if self.color:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
            self._draw()

    def stop(self) -> None:
        """The turn is over: whatever is pending is written, the live area goes."""
        self._end_text()
        self._end_thinking()
        self._flush()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self._erase()
        self._live = False

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self._draw()

    def emit(self, event: LoopEvent) -> None:
        match event:
            case TextDelta(text=text):
                self._on_text(shown(text))
            case ThinkingDelta(text=text):
                self._end_text()
                if self._thinking is None:
                    self._thinking, self._thinking_since = [], self.clock()
                    self._doing("Thinking")
                self._thinking.append(shown(text))
            case ToolCallStarted() | ToolCallInProgress() | ToolCallProgress() | ToolCallFinished() | \
                    AgentProgress():
                self._end_text()
                self._end_thinking()
                self._on_call(event, None)
            case SubAgentEvent(parent_tool_call_id=parent, event=inner):
                self._nested(parent, inner)
            case PlanUpdate(entries=entries):
                self._end_text()
                boxes = {"completed": "☒", "in_progress": "◐"}
                self._commit([f"  {boxes.get(e.status, '☐')} {one_line(e.content)}" for e in entries], gap=True)
            case UsageReport():
                self._end_text()
                self._end_thinking()
                self.usage.append(event)
                if not self._calls.pending:
                    self._doing("Working")
            case Notice(message=message, level=level):
                self._commit([self.paint(RED if level == "error" else DIM, f"[{level}] {shown(message)}")],
                             gap=False)
            case RetryWait():
                self._commit([self.paint(DIM, f"[info] {event.summary()}")], gap=False)
                self._doing("Waiting to retry")
            case ModeChanged() | UserText() | TurnEnded():
                pass  # the terminal keeps no mode indicator; the prompt is the user's own; the end line says it
            case _:
                assert_never(event)
        self._draw(soon=True)

    def _nested(self, parent: str, event: LoopEvent) -> None:
        """A sub-agent's event: its calls go under its call; its text is its own (its report shows it)."""
        owner = self._by_id.get(parent)
        match event:
            case ToolCallStarted() | ToolCallInProgress() | ToolCallProgress() | ToolCallFinished() | \
                    AgentProgress():
                self._on_call(event, owner)
            case SubAgentEvent(parent_tool_call_id=deeper, event=inner):
                self._nested(deeper, inner)
            case UsageReport():
                self.usage.append(event)
            case Notice() | RetryWait():
                self.emit(event)
            case _:
                pass

    # --- text and thinking ---------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        self._end_thinking()
        if not self._text:
            self._text = True
            self._doing("Writing")
        if not self.color:  # plain: as it comes
            if self._starting_text and self._wrote and not self._tail.endswith("\n\n"):
                self._out("\n" if self._tail.endswith("\n") else "\n\n")
            self._starting_text = False
            self._out(text)
            return
        if self._blocks is None:
            from bridge.cli.markdown import Blocks

            self._blocks = Blocks()
        ready = self._blocks.feed(text)
        if ready:
            self._commit_markdown(ready)

    def _end_text(self) -> None:
        if not self._text:
            return
        self._text = False
        self._starting_text = True
        if self._blocks is not None:
            self._commit_markdown(self._blocks.finish())
            self._blocks = None
        self._end_line()

    def _commit_markdown(self, text: str) -> None:
        if not text.strip():
            return
        self._commit(self._markdown(text, self._width() or 80), gap=True)

    def _markdown(self, text: str, width: int) -> list[str]:
        if self._renderer is None:
            from bridge.cli.markdown import Renderer

            self._renderer = Renderer(color=not self.no_color)
        return self._renderer.lines(text, width)

    def _end_thinking(self) -> None:
        if self._thinking is None:
            return
        text = "".join(self._thinking).strip()
        self._thinking = None
        lines = text.splitlines()
        took = self.clock() - self._thinking_since
        took_text = f" for {duration(took)}" if took >= 1 else ""
        count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
        if self.show_thinking:
            shown_lines = [self.paint(DIM, f"✻ Thinking{took_text} ({count}):")]
            shown_lines += [self.paint(DIM, clip(f"  {line}", self._width())) for line in lines]
        else:
            shown_lines = [self.paint(DIM, f"✻ Thought{took_text} ({count}; --show-thinking shows them)")]
        self._commit(shown_lines, gap=True)
        self._doing("Working")

    # --- tool calls ----------------------------------------------------------------------------------------

    def _on_call(self, event: ToolCallStarted | ToolCallInProgress | ToolCallProgress | ToolCallFinished |
                 AgentProgress, owner: Call | None) -> None:
        now = self.clock()
        if isinstance(event, ToolCallStarted):
            call = Call(event.tool_call_id, one_line(event.title), now)
            (owner.children if owner is not None else self._calls).items.append(call)
            self._by_id[call.id] = call
            if owner is None and len(self._calls.pending) == 1:
                self._doing("Running")
        else:
            found = self._by_id.get(event.tool_call_id)
            if found is None:
                return
            call = found
            if isinstance(event, ToolCallInProgress):
                call.running = now
            elif isinstance(event, ToolCallProgress):
                call.output = event.output
            elif isinstance(event, ToolCallFinished):
                call.done = event
            else:
                call.agent = event
        self._flush()
        if owner is None and not self._calls.pending and isinstance(event, ToolCallFinished):
            self._doing("Waiting for the model")  # the results go back to it

    def _flush(self) -> None:
        """Write every call that can be: in order, each with its result once it has one."""
        self._flush_calls(self._calls, 0)
        for call in self._agents:  # a background agent's calls, after its own call's result
            if call.children.pending:
                self._flush_calls(call.children, 1)

    def _flush_calls(self, calls: Calls, depth: int) -> bool:
        while calls.pending:
            call = calls.pending[0]
            if not call.shown:
                self._commit([self._header(call, depth)], gap=depth == 0)
                call.shown = True
            if not self._flush_calls(call.children, depth + 1) or call.done is None:
                return False
            self._commit(self._result(call, call.done, depth), gap=False)
            calls.next += 1
            if call.agent is not None:
                self._agents.append(call)
        return True

    def _header(self, call: Call, depth: int) -> str:
        width = self._width()
        if depth == 0:
            return self.paint(BOLD, clip(f"● {call.title}", width))
        return "  " * depth + self.paint(DIM, clip(f"↳ {call.title}", None if width is None else width - 2 * depth))

    def _result(self, call: Call, done: ToolCallFinished, depth: int) -> list[str]:
        pad = "  " * (depth + 1)
        width = self._width()
        inner = None if width is None else width - len(pad) - 2
        mark = self.paint(RED if done.status == "failed" else GREEN, "⎿")
        if call.agent is not None:  # a sub-agent: how it went, then the start of its report
            head = call.agent.summary() if call.agent.status != "running" else done.status.capitalize()
            text = done.text.strip()
            body = self._markdown(text, inner) if self.color and inner else shown(text).splitlines()
            limit = REPORT_LINES
        else:
            text = shown(done.text).strip()
            lines = text.splitlines() or ["(no output)"]
            head, body = lines[0], lines[1:]
            limit = RESULT_LINES - 1 if depth == 0 else NESTED_RESULT_LINES - 1
        more = len(body) - limit
        body = body[:limit] if more > 0 else body
        out = [f"{pad}{mark} {clip(head, inner)}"]
        out += [f"{pad}  {line if call.agent is not None and self.color else clip(line, inner)}" for line in body]
        if more > 0:
            out.append(self.paint(DIM, f"{pad}  … {more} more line{'s' if more != 1 else ''}"))
        for item in done.display:
            out += [f"{pad}  {self._display_line(line, inner)}" for line in render(item)]
        return out

    def _display_line(self, line: str, width: int | None) -> str:
        line = clip(line, width)
        if line.startswith("+"):
            return self.paint(GREEN, line)
        if line.startswith("-"):
            return self.paint(RED, line)
        return self.paint(DIM, line)

    # --- writing above -------------------------------------------------------------------------------------

    def _commit(self, lines: list[str], *, gap: bool) -> None:
        """Write `lines` above the live area, after a blank line when `gap` (a new part of the turn)."""
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        if self._paused:
            self._held.append(text)
            return
        self._end_line()
        self._erase()
        if gap and self._wrote and not self._tail.endswith("\n\n"):
            text = "\n" + text
        self._out(text)

    def _end_line(self) -> None:
        """Plain text that streamed without a line break ends its line before anything else is written."""
        if not self._tail.endswith("\n"):
            self._out("\n")

    def _out(self, text: str) -> None:
        if not text:
            return
        self.out.write(text)
        self.out.flush()
        self._tail = (self._tail + text)[-2:]
        self._wrote = True

    def _width(self) -> int | None:
        """The terminal's width (None when writing to a pipe: lines are not cut)."""
        return shutil.get_terminal_size((80, 24)).columns if self.color else None

    # --- the live area -------------------------------------------------------------------------------------

    def _doing(self, activity: str) -> None:
        self._activity, self._since = activity, self.clock()

    def _erase(self) -> None:
        if self._live_rows:
            up = f"\033[{self._live_rows - 1}A" if self._live_rows > 1 else ""
            self.out.write(f"\r{up}\033[J")
            self.out.flush()
            self._live_rows = 0

    def _draw(self, *, soon: bool = False) -> None:
        """Draw the live area again (`soon`: unless it was drawn a moment ago and is still on the screen)."""
        if not (self.color and self._live) or self._paused:
            return
        now = self.clock()
        if soon and self._live_rows and now - self._last_draw < TICK / 2:
            return
        self._last_draw = now
        columns, rows = shutil.get_terminal_size((80, 24))
        lines = self._live_lines(now, columns - 1, rows)
        up = f"\033[{self._live_rows - 1}A" if self._live_rows > 1 else ""
        erase = f"\r{up}\033[J" if self._live_rows else ""
        self.out.write(erase + "\n".join(lines))
        self.out.flush()
        self._live_rows = len(lines)

    def _live_lines(self, now: float, width: int, rows: int) -> list[str]:
        spin = SPINNER[int(now / TICK) % len(SPINNER)]
        calls = self._live_calls(self._calls, 0, now, spin, width)
        if len(calls) > LIVE_CALLS:
            calls = [*calls[:LIVE_CALLS], self.paint(DIM, f"… {len(calls) - LIVE_CALLS} more")]
        status: list[str] = []
        if not calls:  # the model is working (a running call has its own spinner)
            took = duration(now - self._since)
            status = [f"{self.paint(BOLD, spin)} {self.paint(DIM, clip(f'{self._activity} · {took}', width - 2))}"]
            if cells(f"{spin} {self._activity} · {took} · ctrl-c cancels") <= width:
                status[0] += self.paint(DIM, " · ctrl-c cancels")
        above: list[str] = []
        if self._thinking is not None:
            last = next((ln for ln in reversed("".join(self._thinking).splitlines()) if ln.strip()), "")
            above = [self.paint(DIM, clip(f"✻ {last.strip()}", width))]
        if self._blocks is not None and self._blocks.pending:
            room = max(1, rows - len(calls) - len(status) - 2)
            preview = [row for line in self._blocks.pending.expandtabs(4).split("\n") for row in wrap(line, width)]
            above = preview[-room:]
        return [*above, *calls, *status] if (above or calls) else status

    def _live_calls(self, calls: Calls, depth: int, now: float, spin: str, width: int) -> list[str]:
        out: list[str] = []
        pad = "  " * (depth + 1)
        for call in calls.pending:
            since = call.running if call.running is not None else call.started
            if call.agent is not None and call.done is None:  # its summary, with the time as it goes
                state = f"{call.agent.summary().rsplit(' · ', 1)[0]} · {duration(now - since)}"
            elif call.done is not None:
                state = "done"
            elif call.running is None:
                state = f"waiting · {duration(now - since)}"
            else:
                state = f"running · {duration(now - since)}"
            mark = "✓" if call.done is not None else spin
            if call.shown:  # the first call not finished: its header is above, its progress goes under it
                out += self._live_calls(call.children, depth + 1, now, spin, width)
                if call.done is None:
                    if call.agent is None and call.output.strip():
                        tail = [ln for ln in shown(call.output).splitlines() if ln.strip()][-TAIL_LINES:]
                        out += [self.paint(DIM, clip(f"{pad}  {ln.expandtabs(4)}", width)) for ln in tail]
                    out.append(clip(f"{pad}⎿ {self.paint(BOLD, mark)} {self.paint(DIM, state)}", None))
            else:
                bullet = "●" if depth == 0 else "↳"
                title = clip(f"{'  ' * depth}{bullet} {call.title}", max(10, width - cells(state) - 4))
                out.append(f"{self.paint(DIM, title)}  {self.paint(BOLD, mark)} {self.paint(DIM, state)}")
        return out

    # --- the end -------------------------------------------------------------------------------------------

    def summary(self) -> str:
        if not self.usage:
            return ""
        tokens_in = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in self.usage)
        tokens_out = sum(u.output_tokens for u in self.usage)
        cache = sum(u.cache_read_tokens for u in self.usage)
        cost = f"offline demo model ({self.offline}): no cost" if self.offline else \
            f"${self.usage[-1].session_cost_usd:.4f}"
        requests = len(self.usage)
        return (
            f"{requests} model request{'s' if requests != 1 else ''} · {tokens_in:,} input tokens ({cache:,} from "
            f"cache) · {tokens_out:,} output tokens · {cost}"
        )

    def end(self, text: str, *, error: bool = False) -> None:
        """The turn's last line (how it ended, what it used), after a blank line; on a terminal folded at its
        ` · ` to the width."""
        width = self._width()
        lines = [text]
        if width is not None and not error:
            lines = [""]
            for part in text.split(" · "):
                joined = f"{lines[-1]} · {part}" if lines[-1] else part
                if lines[-1] and cells(joined) > width:
                    lines.append(f"  {part}")
                else:
                    lines[-1] = joined
        self._commit([self.paint(RED if error else DIM, line) for line in lines], gap=True)


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (ValueError, OSError):
        return False
