"""Tool calls as `run` shows them: in the order the model made them, each with its result under it (a call's
result waits for the calls before it, so parallel calls that finish in any order still read in order), a
sub-agent's calls nested under its own call. While they run, the live area lists them: the first one under
its header with its elapsed time and the last lines of its output, the others with theirs."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from bridge.cli.screen import BOLD, DIM, GREEN, RED, Screen, cells, clip
from bridge.display import Diff, Display, TextContent
from bridge.loop.events import AgentProgress, ToolCallFinished, ToolCallInProgress, ToolCallProgress, ToolCallStarted
from bridge.visible import one_line, visible

SHOWN_LINES = 12  # of a diff or a text shown under a tool call (and in a question)
RESULT_LINES = 4  # of a tool call's result
NESTED_RESULT_LINES = 2  # of a sub-agent's tool call's result
REPORT_LINES = 8  # of a sub-agent's report
TAIL_LINES = 3  # of a running command's output, in the live area
LIVE_CALLS = 8  # running calls listed in the live area

CallEvent = ToolCallStarted | ToolCallInProgress | ToolCallProgress | ToolCallFinished | AgentProgress


def shown(text: str) -> str:
    """Text from the model, a tool or a file, safe to print: control characters made visible (tabs and line
    breaks kept)."""
    return visible(text, keep_newlines=True, keep_tabs=True)


def render(item: Display, *, applied: bool = True) -> list[str]:
    """What a tool shows, as terminal lines (bounded): a text's first lines, a diff's changed lines. A diff of a
    call that failed or was refused says it was not applied (what it proposed stays in view)."""
    return [shown(line) for line in _render(item, applied)]


def _render(item: Display, applied: bool) -> list[str]:
    match item:
        case TextContent(text=text):
            lines = text.strip().splitlines()
        case Diff():
            old = _lines(item.old_text or "")
            changed = [
                line
                for line in difflib.unified_diff(old, _lines(item.new_text), lineterm="", n=0)
                if not line.startswith(("---", "+++", "@@"))
            ]
            verb = "new file" if item.old_text is None else "edited"
            verb = "the change only: file not read" if item.unread else verb
            verb = verb if applied else f"{verb}, not applied"
            added, removed = sum(ln[0] == "+" for ln in changed), sum(ln[0] == "-" for ln in changed)
            lines = [f"{_path(item.path)} ({verb}: +{added} -{removed})", *changed]
            if not changed and (item.old_text or "") != item.new_text:
                lines.append("(only line endings changed)")
        case _:
            assert_never(item)
    more = [f"… {len(lines) - SHOWN_LINES} more lines"] if len(lines) > SHOWN_LINES else []
    return lines[:SHOWN_LINES] + more


_BREAK = re.compile(r"\r\n|\n")


def _lines(text: str) -> list[str]:
    """A file's lines as a diff shows them: broken at a newline (CRLF or LF) only. `splitlines` also breaks at a
    lone carriage return, vertical tab, form feed, the file/group/record separators, NEL and U+2028/2029, and drops
    them: an edit that turned a comment to sh (`# <CR>rm -rf ./data`) into a command (`# <LF>rm -rf ./data`)
    showed as no change (attack round 34). Any other break stays in its line, where the line's escaping shows it."""
    lines = _BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def _path(path: str) -> str:
    """A file's path on one line as it is: a newline or other hiding character escaped, and quoted when a space
    at either end would not show (`"notes.txt "`)."""
    shown = visible(path)
    return f'"{shown}"' if shown != shown.strip() else shown


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


@dataclass
class Calls:
    """Calls in the order the model made them; those before `next` are written above."""

    items: list[Call] = field(default_factory=list)
    next: int = 0

    @property
    def pending(self) -> list[Call]:
        return self.items[self.next :]


@dataclass
class Call:
    id: str
    title: str
    started: float
    running: float | None = None  # when it started to run (it may wait for a question first)
    output: str = ""  # a command's output so far
    done: ToolCallFinished | None = None
    agent: AgentProgress | None = None  # a sub-agent's call: how that agent is doing
    children: Calls = field(default_factory=Calls)  # the sub-agent's calls
    shown: bool = False  # its header line is written


class CallTree:
    """The turn's calls. `markdown(text, width)` renders a sub-agent's report (None: shown as it is)."""

    def __init__(self, screen: Screen, markdown: Callable[[str, int], list[str]] | None) -> None:
        self.screen = screen
        self.markdown = markdown
        self.calls = Calls()
        self._by_id: dict[str, Call] = {}
        self._agents: list[Call] = []  # sub-agents' calls, written: a background agent's work comes later

    @property
    def pending(self) -> int:
        return len(self.calls.pending)

    def on(self, event: CallEvent, owner: str | None, now: float) -> None:
        """A call's event; `owner`: the `Agent` call whose sub-agent made it (None: the turn's own)."""
        if isinstance(event, ToolCallStarted) and event.rewritten and event.tool_call_id in self._by_id:
            self._by_id[event.tool_call_id].title = one_line(event.title)  # what runs: a hook rewrote it
        elif isinstance(event, ToolCallStarted):
            parent = self._by_id.get(owner) if owner is not None else None
            call = Call(event.tool_call_id, one_line(event.title), now)
            (parent.children if parent is not None else self.calls).items.append(call)
            self._by_id[call.id] = call
        elif (found := self._by_id.get(event.tool_call_id)) is not None:
            if isinstance(event, ToolCallInProgress):
                found.running = now
            elif isinstance(event, ToolCallProgress):
                found.output = event.output
            elif isinstance(event, ToolCallFinished):
                found.done = event
            else:
                found.agent = event
        self.flush()

    def flush(self) -> None:
        """Write every call that can be: in order, each with its result once it has one."""
        self._flush(self.calls, 0)
        for call in self._agents:  # a background agent's calls, after its own call's result
            if call.children.pending:
                self._flush(call.children, 1)

    def _flush(self, calls: Calls, depth: int) -> bool:
        while calls.pending:
            call = calls.pending[0]
            if not call.shown:
                self.screen.commit([self._header(call, depth)], gap=depth == 0)
                call.shown = True
            if not self._flush(call.children, depth + 1) or call.done is None:
                return False
            self.screen.commit(self._result(call, call.done, depth), gap=False)
            calls.next += 1
            if call.agent is not None:
                self._agents.append(call)
        return True

    # --- written above -------------------------------------------------------------------------------------

    def _header(self, call: Call, depth: int) -> str:
        paint, width = self.screen.paint, self.screen.width()
        if depth == 0:
            return paint(BOLD, clip(f"● {call.title}", width))
        return "  " * depth + paint(DIM, clip(f"↳ {call.title}", None if width is None else width - 2 * depth))

    def _result(self, call: Call, done: ToolCallFinished, depth: int) -> list[str]:
        paint, width = self.screen.paint, self.screen.width()
        pad = "  " * (depth + 1)
        inner = None if width is None else width - len(pad) - 2
        mark = paint(RED if done.status == "failed" else GREEN, "⎿")
        rendered = False
        if call.agent is not None:  # a sub-agent: how it went, then the start of its report
            head = call.agent.summary() if call.agent.status != "running" else done.status.capitalize()
            rendered = self.markdown is not None and inner is not None
            body = (
                self.markdown(shown(done.text.strip()), inner)
                if self.markdown and inner
                else shown(done.text.strip()).splitlines()
            )
            limit = REPORT_LINES
        else:
            # blank lines off the ends only: a first line's indentation (`cat -n`'s numbers) lines up with the rest
            lines = [ln.rstrip().expandtabs(4) for ln in shown(done.text).strip("\r\n").splitlines()]
            lines = lines if any(lines) else ["(no output)"]
            head, body = lines[0], lines[1:]
            limit = RESULT_LINES - 1 if depth == 0 else NESTED_RESULT_LINES - 1
        more = len(body) - limit
        out = [f"{pad}{mark} {clip(head, inner)}"]
        out += [f"{pad}  {line if rendered else clip(line, inner)}" for line in body[:limit]]
        if more > 0:
            out.append(paint(DIM, f"{pad}  … {more} more line{'s' if more != 1 else ''}"))
        for item in done.display:
            lines = render(item, applied=done.status != "failed")
            out += [f"{pad}  {self._display_line(line, inner)}" for line in lines]
        return out

    def _display_line(self, line: str, width: int | None) -> str:
        line = clip(line, width)
        code = GREEN if line.startswith("+") else RED if line.startswith("-") else DIM
        return self.screen.paint(code, line)

    # --- the live area -------------------------------------------------------------------------------------

    def live(self, now: float, spin: str, width: int) -> list[str]:
        lines = self._live(self.calls, 0, now, spin, width)
        if len(lines) > LIVE_CALLS:
            lines = [*lines[:LIVE_CALLS], self.screen.paint(DIM, f"… {len(lines) - LIVE_CALLS} more")]
        return lines

    def _live(self, calls: Calls, depth: int, now: float, spin: str, width: int) -> list[str]:
        paint = self.screen.paint
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
            if call.shown:  # the first call not written whole: its header is above, its progress goes under it
                out += self._live(call.children, depth + 1, now, spin, width)
                if call.done is None:
                    if call.agent is None and call.output.strip():
                        tail = [ln for ln in shown(call.output).splitlines() if ln.strip()][-TAIL_LINES:]
                        out += [paint(DIM, clip(f"{pad}  {ln.expandtabs(4)}", width)) for ln in tail]
                    out.append(f"{pad}⎿ {paint(BOLD, mark)} {paint(DIM, clip(state, width - len(pad) - 4))}")
            else:
                bullet = "●" if depth == 0 else "↳"
                title = clip(f"{'  ' * depth}{bullet} {call.title}", max(10, width - cells(state) - 4))
                out.append(f"{paint(DIM, title)}  {paint(BOLD, mark)} {paint(DIM, state)}")
        return out
