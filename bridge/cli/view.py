"""What `agent-bridge run` shows of a turn: the loop's events, in the order a person reads them.

Above, what is final, written once (bridge/cli/screen.py): the model's text rendered as markdown block by
block (bridge/cli/markdown.py), the tool calls each with its result under it in call order and a sub-agent's
calls under its own call (bridge/cli/calls.py), thinking folded to one line. Below, on a terminal only, the
live area, redrawn several times a second: the block of text still streaming (plain until it is final), the
calls still running, and while the model works a spinner saying what is waited for and for how long.

When standard output is not a terminal (a pipe, a file, CI) there is no live area and no escape sequence: the
model's text is written as it streams, unrendered (markdown is the plain text a file wants), and the calls in
order. `NO_COLOR` keeps the layout, bold and dim, without colour. Whatever the model or a tool says is printed
with its control characters made visible (`bridge.visible`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, assert_never

from bridge.cli.calls import CallEvent, CallTree, duration, shown
from bridge.cli.screen import BOLD, DIM, RED, Screen, cells, clip, is_terminal, wrap
from bridge.loop import events as ev
from bridge.permissions.types import RuleSuggestion
from bridge.visible import one_line, visible

if TYPE_CHECKING:
    from bridge.cli.markdown import Blocks, Renderer

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between redraws of the live area


class TerminalView:
    """The loop's events → the screen (see the module's docstring). `line`, `write` and `paint` are what a
    question (bridge/cli/terminal.py) uses to ask; `asking` frames it."""

    def __init__(
        self,
        out: TextIO = sys.stdout,
        *,
        color: bool | None = None,
        offline: str | None = None,
        show_thinking: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.color = is_terminal(out) if color is None else color  # escape sequences, and the live area
        self.screen = Screen(out, color=self.color, no_color=bool(os.environ.get("NO_COLOR")))
        self.offline = offline  # the offline scenario answering: named instead of a cost
        self.show_thinking = show_thinking
        self.clock = clock
        self.usage: list[ev.UsageReport] = []
        self.calls = CallTree(self.screen, self._markdown if self.color else None)
        self._blocks: Blocks | None = None  # the text streaming, on a terminal
        self._renderer: Renderer | None = None
        self._text = False  # a text block is streaming
        self._thinking: list[str] | None = None
        self._thinking_since = 0.0
        self._activity, self._since = "Waiting for the model", clock()
        self._live = False  # a turn runs: the live area is drawn
        self._ticker: asyncio.Task[None] | None = None
        self._last_draw = 0.0

    # --- what a question uses ------------------------------------------------------------------------------

    def paint(self, code: str, text: str) -> str:
        return self.screen.paint(code, text)

    def write(self, text: str) -> None:
        """Raw text (a question's `  > `): the live area stays away until the question is answered."""
        self.screen.pause()
        self.screen.write(text)

    def line(self, text: str) -> None:
        self.screen.end_line()
        self.screen.erase()
        self.screen.write(text + "\n")
        self._draw()

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """A question is on the screen: nothing else is written or drawn until it is answered."""
        self._end_text()
        self._end_thinking()
        self.calls.flush()
        self.screen.pause()
        try:
            yield
        finally:
            self.screen.resume()
            self._draw()

    def saved_soon(self, suggestion: RuleSuggestion) -> None:
        """Once the always-answer is saved (the executor saves it as soon as the question returns), say where;
        a rule that could not be saved shows as the executor's own error."""
        asyncio.get_running_loop().call_soon(self._saved, suggestion)

    def _saved(self, suggestion: RuleSuggestion) -> None:
        try:
            kept = json.loads(Path(suggestion.destination).read_text(encoding="utf-8"))["permissions"][
                suggestion.behavior
            ]
        except (OSError, ValueError, KeyError, TypeError):
            return
        if isinstance(kept, list) and all(rule in kept for rule in suggestion.rules):
            rules = ", ".join(visible(rule) for rule in suggestion.rules)
            self.screen.commit(
                [self.paint(DIM, f"  ✓ {suggestion.behavior} {rules}: saved in {visible(suggestion.destination)}")],
                gap=False,
            )
            self._draw()

    # --- the turn ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """A turn begins: on a terminal, the live area with its indicator."""
        self._live = True
        self._doing("Waiting for the model")
        if self.color:
            self._ticker = asyncio.get_running_loop().create_task(self._tick())
            self._draw()

    def stop(self) -> None:
        """The turn is over: whatever is pending is written, the live area goes."""
        self._end_text()
        self._end_thinking()
        self.calls.flush()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        self.screen.erase()
        self._live = False

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK)
            self._draw()

    def emit(self, event: ev.LoopEvent) -> None:
        match event:
            case ev.TextDelta(text=text):
                self._on_text(shown(text))
            case ev.ThinkingDelta(text=text):
                self._end_text()
                if self._thinking is None:
                    self._thinking, self._thinking_since = [], self.clock()
                    self._doing("Thinking")
                self._thinking.append(shown(text))
            case (
                ev.ToolCallStarted()
                | ev.ToolCallInProgress()
                | ev.ToolCallProgress()
                | ev.ToolCallFinished()
                | ev.AgentProgress()
            ):
                self._end_text()
                self._end_thinking()
                self._on_call(event, None)
            case ev.SubAgentEvent(parent_tool_call_id=parent, event=inner):
                self._nested(parent, inner)
            case ev.PlanUpdate(entries=entries):
                self._end_text()
                boxes = {"completed": "☒", "in_progress": "◐"}
                self.screen.commit([f"  {boxes.get(e.status, '☐')} {one_line(e.content)}" for e in entries], gap=True)
            case ev.UsageReport():
                self._end_text()
                self._end_thinking()
                self.usage.append(event)
                if not self.calls.pending:
                    self._doing("Working")
            case ev.Notice(message=message, level=level):
                self.screen.commit(
                    [self.paint(RED if level == "error" else DIM, f"[{level}] {shown(message)}")], gap=False
                )
            case ev.RetryWait():
                self.screen.commit([self.paint(DIM, f"[info] {event.summary()}")], gap=False)
                self._doing("Waiting to retry")
            case ev.ModeChanged() | ev.UserText() | ev.TurnEnded():
                pass  # the terminal keeps no mode indicator; the prompt is the user's own; the end line says it
            case _:
                assert_never(event)
        self._draw(soon=True)

    def _nested(self, parent: str, event: ev.LoopEvent) -> None:
        """A sub-agent's event: its calls go under its call; its text is its own (its report shows it)."""
        if isinstance(event, CallEvent):
            self.calls.on(event, parent, self.clock())
            return
        match event:
            case ev.SubAgentEvent(parent_tool_call_id=deeper, event=inner):
                self._nested(deeper, inner)
            case ev.UsageReport():
                self.usage.append(event)
            case ev.Notice() | ev.RetryWait():
                self.emit(event)
            case _:
                pass

    def _on_call(self, event: CallEvent, owner: str | None) -> None:
        before = self.calls.pending
        self.calls.on(event, owner, self.clock())
        if not before and self.calls.pending:
            self._doing("Running")
        elif before and not self.calls.pending:
            self._doing("Waiting for the model")  # the results go back to it

    # --- text and thinking ---------------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        self._end_thinking()
        starts = not self._text
        if starts:
            self._text = True
            self._doing("Writing")
        if not self.color:  # plain: as it comes
            self.screen.stream(text, starts=starts)
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
        if self._blocks is not None:
            self._commit_markdown(self._blocks.finish())
            self._blocks = None
        self.screen.end_line()

    def _commit_markdown(self, text: str) -> None:
        if text.strip():
            self.screen.commit(self._markdown(text, self.screen.width() or 80), gap=True)

    def _markdown(self, text: str, width: int) -> list[str]:
        if self._renderer is None:
            from bridge.cli.markdown import Renderer

            self._renderer = Renderer(color=not self.screen.no_color)
        return self._renderer.lines(text, width)

    def _end_thinking(self) -> None:
        if self._thinking is None:
            return
        lines = "".join(self._thinking).strip().splitlines()
        self._thinking = None
        took = self.clock() - self._thinking_since
        took_text = f" for {duration(took)}" if took >= 1 else ""
        count = f"{len(lines)} line{'s' if len(lines) != 1 else ''}"
        if self.show_thinking:
            out = [self.paint(DIM, f"✻ Thinking{took_text} ({count}):")]
            out += [self.paint(DIM, clip(f"  {line}", self.screen.width())) for line in lines]
        else:
            out = [self.paint(DIM, f"✻ Thought{took_text} ({count}; --show-thinking shows them)")]
        self.screen.commit(out, gap=True)
        self._doing("Working")

    # --- the live area -------------------------------------------------------------------------------------

    def _doing(self, activity: str) -> None:
        self._activity, self._since = activity, self.clock()

    def _draw(self, *, soon: bool = False) -> None:
        """Draw the live area again (`soon`: unless it was drawn a moment ago and is still there)."""
        if not (self.color and self._live) or self.screen.paused:
            return
        now = self.clock()
        if soon and self.screen.drawn and now - self._last_draw < TICK / 2:
            return
        self._last_draw = now
        columns, rows = self.screen.size()
        self.screen.draw(self._live_lines(now, columns - 1, rows))

    def _live_lines(self, now: float, width: int, rows: int) -> list[str]:
        spin = SPINNER[int(now / TICK) % len(SPINNER)]
        calls = self.calls.live(now, spin, width)
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
            above = _last_rows(self._blocks.pending, width, room)
        return [*above, *calls, *status]

    # --- the end -------------------------------------------------------------------------------------------

    def summary(self) -> str:
        if not self.usage:
            return ""
        tokens_in = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in self.usage)
        tokens_out = sum(u.output_tokens for u in self.usage)
        cache = sum(u.cache_read_tokens for u in self.usage)
        cost = (
            f"offline demo model ({self.offline}): no cost"
            if self.offline
            else f"${self.usage[-1].session_cost_usd:.4f}"
        )
        requests = len(self.usage)
        return (
            f"{requests} model request{'s' if requests != 1 else ''} · {tokens_in:,} input tokens ({cache:,} "
            f"from cache) · {tokens_out:,} output tokens · {cost}"
        )

    def end(self, text: str, *, error: bool = False) -> None:
        """The turn's last line (how it ended, what it used), after a blank line; on a terminal folded at its
        ` · ` to the width."""
        width = self.screen.width()
        lines = [text]
        if width is not None and not error:
            lines = [""]
            for part in text.split(" · "):
                joined = f"{lines[-1]} · {part}" if lines[-1] else part
                if lines[-1] and cells(joined) > width:
                    lines.append(f"  {part}")
                else:
                    lines[-1] = joined
        self.screen.commit([self.paint(RED if error else DIM, line) for line in lines], gap=True)


def _last_rows(text: str, width: int, room: int) -> list[str]:
    """The last `room` rows `text` takes at `width` columns: only its last lines are wrapped, and of a line longer
    than the rows can show, only its end (wrapping all of a 200 KB block at every draw was O(n²) over the stream —
    attack round 17)."""
    rows: list[str] = []
    for line in reversed(text.rsplit("\n", room)[-room:]):
        line = line.expandtabs(4)
        if len(line) > room * width:
            line = line[-room * width :]
        rows[:0] = wrap(line, width)
        if len(rows) >= room:
            break
    return rows[-room:]
