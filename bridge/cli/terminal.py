"""The loop in a terminal: streamed text, tool calls, permission questions at the prompt, Ctrl-C
cancels the turn (a second Ctrl-C while it unwinds forces)."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO, assert_never

from bridge.agent import Agent
from bridge.cli.first_request import remember_tools
from bridge.config import BridgeConfig
from bridge.display import Diff, Display, TextContent
from bridge.errors import for_person, root_cause
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
from bridge.loop.permission import deny_all
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelError
from bridge.permissions.trust import TRUST_CHOICES, TrustAnswer, TrustQuestion
from bridge.permissions.trust import Ask as AskTrust
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.session import Frontend, Session

log = logging.getLogger(__name__)

DIM, BOLD, RED, GREEN, RESET = "\033[2m", "\033[1m", "\033[31m", "\033[32m", "\033[0m"
SHOWN_LINES = 12  # of a diff or a text shown under a tool call


def render(item: Display) -> list[str]:
    """What a tool shows, as terminal lines (bounded): a text's first lines, a diff's changed lines."""
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


class TerminalView:
    def __init__(self, out: TextIO = sys.stdout, *, color: bool | None = None) -> None:
        self.out = out
        self.color = out.isatty() if color is None else color
        self._in_text = False
        self.usage: list[UsageReport] = []

    def paint(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.color else text

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def line(self, text: str) -> None:
        if self._in_text:
            self.write("\n")
            self._in_text = False
        self.write(text + "\n")

    def emit(self, event: LoopEvent) -> None:
        match event:
            case TextDelta(text=text):
                self._in_text = True
                self.write(text)
            case ThinkingDelta(text=text):
                self._in_text = True
                self.write(self.paint(DIM, text))
            case ToolCallStarted(title=title):
                self.line(self.paint(BOLD, f"● {title}"))
            case ToolCallFinished():
                first = event.text.strip().splitlines()[:3]
                mark = self.paint(GREEN, "  ⎿ ") if event.status == "completed" else self.paint(RED, "  ⎿ ")
                more = " …" if len(event.text.strip().splitlines()) > 3 else ""
                self.line(mark + ("\n    ".join(first) or "(no output)") + more)
                self.show(event.display)
            case PlanUpdate(entries=entries):
                for entry in entries:
                    box = {"completed": "☒", "in_progress": "◐"}.get(entry.status, "☐")
                    self.line(f"  {box} {entry.content}")
            case UsageReport():
                self.usage.append(event)
            case Notice(message=message, level=level):
                self.line(self.paint(DIM, f"[{level}] {message}"))
            case RetryWait():
                self.line(self.paint(DIM, f"[info] {event.summary()}"))
            case SubAgentEvent(event=inner):
                self._nested(inner)
            case (ToolCallInProgress() | ToolCallProgress() | ModeChanged() | AgentProgress() | UserText()
                  | TurnEnded()):
                pass  # a finished call shows its output; the terminal keeps no mode indicator
            case _:
                assert_never(event)

    def _nested(self, event: LoopEvent) -> None:
        """A sub-agent's work: its tool calls, indented (its text is its own: its parent reports on it)."""
        match event:
            case ToolCallStarted(title=title):
                self.line(self.paint(DIM, f"  ↳ {title}"))
            case UsageReport():
                self.usage.append(event)
            case Notice() | RetryWait():
                self.emit(event)
            case _:
                pass

    def show(self, display: list[Display]) -> None:
        for item in display:
            for line in render(item):
                self.line(self.paint(DIM, f"    {line}"))

    def summary(self) -> str:
        if not self.usage:
            return ""
        tokens_in = sum(u.input_tokens + u.cache_read_tokens + u.cache_write_tokens for u in self.usage)
        tokens_out = sum(u.output_tokens for u in self.usage)
        cache = sum(u.cache_read_tokens for u in self.usage)
        cost = self.usage[-1].session_cost_usd
        return (
            f"{len(self.usage)} model requests · {tokens_in:,} input tokens ({cache:,} from cache) · "
            f"{tokens_out:,} output tokens · ${cost:.4f}"
        )


class TerminalPrompter:
    """Asks at the terminal; reads stdin without a thread so a cancel withdraws the question."""

    def __init__(self, view: TerminalView, *, auto_approve: bool = False) -> None:
        self.view = view
        self.auto_approve = auto_approve

    async def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        view = self.view
        who = f"[sub-agent {request.agent.description}] " if request.agent else ""
        why = f" ({request.reason})" if request.reason else ""
        view.line(view.paint(BOLD, f"? {who}Allow {request.title}?") + why)
        view.show(request.display)
        always = next((s for s in request.suggestions if s.behavior == "allow"), None)
        choices = "[y] yes  " + (f"[a] always allow {always.rule}  " if always else "") + "[n] no (or type feedback)"
        view.line("  " + choices)
        if self.auto_approve or not sys.stdin.isatty():
            view.line(view.paint(DIM, "  → yes (approved automatically: no terminal to ask)"))
            return PermissionAnswer("allow_once")
        view.write("  > ")
        answer = (await _read_line()).strip()
        if answer.lower() in ("y", "yes", ""):
            return PermissionAnswer("allow_once")
        if answer.lower() in ("a", "always") and always is not None:
            return PermissionAnswer("allow_always", suggestion=always)
        feedback = None if answer.lower() in ("n", "no") else answer
        return PermissionAnswer("reject_once", feedback=feedback)


def terminal_trust(view: TerminalView) -> AskTrust:
    """The folder-trust question at the terminal (bridge/permissions/trust.py): the items verbatim, one letter."""

    async def ask(question: TrustQuestion) -> TrustAnswer | None:
        view.line(view.paint(BOLD, f"? {question.title}"))
        view.line(question.text)
        keys: dict[str, TrustAnswer] = {"t": "trust", "s": "session", "n": "not_now", "k": "keep_off"}
        view.line("  " + "  ".join(f"[{key}] {dict(TRUST_CHOICES)[answer]}" for key, answer in keys.items()))
        view.write("  > ")
        answer = (await _read_line()).strip().lower()
        return keys.get(answer[:1], "not_now") if answer else "not_now"

    return ask


async def _read_line() -> str:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    fd = sys.stdin.fileno()

    def readable() -> None:
        if not future.done():
            future.set_result(sys.stdin.readline())

    loop.add_reader(fd, readable)
    try:
        return await future
    finally:
        loop.remove_reader(fd)


def _resumed(agent: Agent, resume: str, cwd: Path, frontend: Frontend) -> Session:
    """The stored session to go on with: `resume`'s id, or the newest of `cwd` for `latest`."""
    if resume == "latest":
        stored = agent.stored_sessions(cwd)
        if not stored:
            raise LookupError(f"No stored session for {cwd} to continue.")
        resume = stored[0].session_id
    session, problems = agent.load_session(resume, frontend)
    for problem in problems:
        log.warning("%s", problem)
    return session


async def run_turn_in_terminal(session: Session, text: str, view: TerminalView,
                               stops: TerminalSignals | None = None) -> int:
    """The turn, with SIGINT (Ctrl-C) and SIGTERM cancelling it (`stops`: the handlers, else installed here for
    the turn). Exit code: 0, 1 (an error), 130 (cancelled by SIGINT), 143 (by SIGTERM)."""
    own = stops is None
    signals = stops or TerminalSignals(view)
    signals.session = session
    if own:
        signals.install()
    try:
        stop = await session.prompt([{"type": "text", "text": text}])
    except Exception as error:  # one clear message: a model failure's own, else the cause's (the rest is logged)
        if not isinstance(root_cause(error), ModelError):
            log.error("the turn failed", exc_info=error)
        shown = root_cause(error) if isinstance(root_cause(error), ModelError) else for_person(error)
        view.line(view.paint(RED, f"Error: {shown}"))
        return 1
    finally:
        signals.session = None
        if own:
            signals.remove()
    view.line(view.paint(DIM, f"[{stop}] {view.summary()}"))
    if stop == "cancelled":
        return 143 if signals.last == signal.SIGTERM else 130
    return 0


class TerminalSignals:
    """SIGINT and SIGTERM while a turn runs cancel it (a second one forces); after the turn, while the bridge
    shuts down (commands get their escalation, at most about a second), one more kills what is left at once."""

    def __init__(self, view: TerminalView) -> None:
        self.view = view
        self.session: Session | None = None
        self.agent: Agent | None = None
        self.count = 0
        self.last: int | None = None

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self.on_signal, signum)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signum)

    def on_signal(self, signum: int) -> None:
        self.count += 1
        self.last = signum
        name = "^C" if signum == signal.SIGINT else "SIGTERM:"
        if self.session is not None and self.session.busy:
            self.view.line(self.view.paint(DIM, f"{name} cancelling…" if self.count == 1 else f"{name} forcing…"))
            self.session.cancel(force=self.count > 1)
        elif self.agent is not None and self.agent.processes_running():
            self.view.line(self.view.paint(DIM, f"{name} killing the commands still running…"))
            self.agent.kill_processes_now()


def run_prompt(
    text: str,
    *,
    cwd: Path,
    overrides: dict[str, Any],
    interactive: bool = True,
    auto_approve: bool = False,
) -> int:
    return asyncio.run(run_prompt_async(text, cwd=cwd, overrides=overrides, interactive=interactive,
                                        auto_approve=auto_approve))


async def run_prompt_async(
    text: str,
    *,
    cwd: Path,
    overrides: dict[str, Any],
    interactive: bool = True,
    auto_approve: bool = False,
    ahead: AnthropicModel | None = None,
    resume: str | None = None,
) -> int:
    """One prompt's turn. `ahead`: a model client holding this turn's first request, sent while the process
    was loading (bridge/cli/first_request.py); the session's client takes it over when it is the same.
    `resume`: go on with that stored session (`latest`: the newest of `cwd`) instead of a new one."""
    config, problems = BridgeConfig.load(overrides)
    view = TerminalView()
    for problem in problems:
        view.line(view.paint(RED, problem))
    agent = Agent(config)
    if ahead is not None and isinstance(agent.model, AnthropicModel):
        agent.model.adopt(ahead)
    prompter = TerminalPrompter(view, auto_approve=auto_approve) if interactive else deny_all
    ask_trust = terminal_trust(view) if interactive and sys.stdin.isatty() else None  # no one to ask: stays off
    frontend = Frontend(emit=view.emit, prompter=prompter, interactive=interactive, ask_trust=ask_trust)
    try:
        session = _resumed(agent, resume, cwd, frontend) if resume else agent.new_session(cwd, frontend)
    except LookupError as error:
        view.line(view.paint(RED, str(error)))
        await agent.shutdown()
        return 2
    for notice in session.setup.startup_notices():
        view.line(view.paint(RED, notice))
    signals = TerminalSignals(view)
    signals.agent = agent
    signals.install()
    try:
        code = await run_turn_in_terminal(session, text, view, signals)
        view.line(view.paint(DIM, f"(session {session.id}: go on with `agent-bridge run --continue`)"))
        return code
    finally:
        try:
            await agent.shutdown(grace=True)  # a cancelled command's SIGINT -> SIGTERM -> SIGKILL runs its course
            if ahead is not None:
                await ahead.aclose()
        finally:
            signals.remove()
        if not session.toolset.deferred.tools:  # the tools every new session sends: cached for the next run
            environ = {**os.environ, "AGENT_BRIDGE_DATA_DIR": str(config.data_dir)}
            remember_tools(environ, [tool.schema() for tool in session.toolset.tools.values()])
