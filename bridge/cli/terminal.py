"""The loop in a terminal: the turn shown by bridge/cli/view.py, permission questions at the prompt (framed
by the view: nothing else is drawn while one is asked), Ctrl-C cancels the turn (a second Ctrl-C while it
unwinds forces).

Whatever the model or a tool says is printed with its control characters made visible (`bridge.visible`):
an escape sequence or a carriage return in a command, a file or a reply can't redraw the screen, least of
all a permission question. A question is asked only of a person: with no terminal on standard input (CI,
cron, a pipe, `ssh host cmd`) every question is denied, a line saying what and how to allow it; approving
without asking takes `--dangerously-approve-all`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import signal
import sys
import textwrap
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from bridge.agent import Agent
from bridge.cli.calls import render
from bridge.cli.screen import BOLD, DIM, RED, advance, cells
from bridge.cli.view import TerminalView
from bridge.config import BridgeConfig
from bridge.errors import for_person, root_cause
from bridge.loop.events import Notice
from bridge.loop.permission import Prompter, deny_all
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelError
from bridge.permissions.trust import TRUST_CHOICES, TrustAnswer, TrustQuestion
from bridge.permissions.trust import Ask as AskTrust
from bridge.permissions.types import (
    Mark,
    OptionKind,
    PermissionAnswer,
    PermissionRequest,
    RuleSuggestion,
    answer_options,
)
from bridge.session import Frontend, Session
from bridge.visible import capped, one_line, visible, visible_spans

if TYPE_CHECKING:
    from bridge.mcp.host import Question as McpQuestion
    from bridge.mcp.host import Reply as McpReply

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Choice:
    """One answer a terminal question accepts: what to type (`keys`, the first shown) and what it means."""

    keys: tuple[str, ...]
    label: str

    @property
    def shown(self) -> str:
        return f"[{self.keys[0]}] {self.label}"


def choice_lines(choices: list[Choice], width: int | None) -> list[str]:
    """The answers on one line when they fit the terminal, else one a line, each wrapped at word boundaries under
    its own key: an answer is never cut mid-word ("always allow" names its rule and the file it is saved in)."""
    one = "  " + "  ".join(choice.shown for choice in choices)
    if width is None or cells(one) < width:
        return [one]
    return [
        row
        for choice in choices
        for row in textwrap.wrap(
            choice.shown, width - 1, initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False
        )
    ]


class TerminalPrompter:
    """Asks at the terminal; reads stdin without a thread so a cancel withdraws the question.

    A question is put to a person only when standard input is a terminal; otherwise it is denied, with a line
    saying what was denied and how to allow it. `approve_all` (`--dangerously-approve-all`) answers yes to
    every question without asking. `choose` is the one way this asks anything (permission questions here;
    other questions, like trusting a folder, build their lines and choices and call it)."""

    def __init__(self, view: TerminalView, *, approve_all: bool = False, stdin: TextIO | None = None) -> None:
        self.view = view
        self.approve_all = approve_all
        self.stdin = stdin or sys.stdin
        # One question on the screen at a time: sub-agents and parallel calls ask at once, and two prompts open
        # together took the next line typed for the one drawn last while the other waited under it for ever
        # (attack round 34), or took a line meant for the first.
        self.one_at_a_time = asyncio.Lock()

    @property
    def can_ask(self) -> bool:
        try:
            return self.stdin.isatty()
        except (ValueError, OSError):  # closed
            return False

    async def choose(self, lines: list[str], choices: list[Choice]) -> str | None:
        """Show `lines` and the choices, read one answer: the key typed (lower case) or the text typed when it
        is no key; None when no one answers — there is no terminal to ask, or its input ended (Ctrl-D, a closed
        connection: an end of input is never an empty line's default). The caller decides what that means."""
        if self.can_ask:
            _drop_typeahead(self.stdin)
        for line in [*lines, *choice_lines(choices, self.view.screen.width())]:
            self.view.line(line)
        if not self.can_ask:
            return None
        self.view.write("  > ")
        typed = await _read_line(self.stdin)
        if not typed:
            self.view.line("")
            return None
        answer = typed.strip()
        for choice in choices:
            if answer.lower() in choice.keys:
                return choice.keys[0]
        return answer

    async def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        view = self.view
        lines = question_lines(request, view.paint)
        always, never = _first_always(request, "allow_always"), _first_always(request, "reject_always")
        choices = [Choice(("y", "yes", ""), "yes")]
        if always is not None:
            choices.append(Choice(("a", "always"), f"always allow {_rules(always)}"))
        if never is not None:
            choices.append(Choice(("d", "deny"), f"always deny {_rules(never)}"))
        choices.append(Choice(("n", "no"), "no (or type feedback)"))
        if self.approve_all:
            for line in [*lines, *choice_lines(choices, view.screen.width())]:
                view.line(line)
            view.line(view.paint(BOLD, "  → yes: approved without asking (--dangerously-approve-all)"))
            return PermissionAnswer("allow_once")
        answer = await self.choose(lines, choices)
        if answer is None:
            why = (
                "The terminal's input ended"
                if self.can_ask
                else "There is no terminal to ask (standard input is not one)"
            )
            view.line(
                view.paint(RED, f"  ✗ Denied: {denied_what(request)}. {why}. To allow it: {how_to_allow(request)}")
            )
            return PermissionAnswer("reject_once", feedback=NO_TERMINAL)
        if answer == "y":
            return PermissionAnswer("allow_once")
        if answer == "a" and always is not None:
            return PermissionAnswer("allow_always", suggestion=always)
        if answer == "d" and never is not None:
            return PermissionAnswer("reject_always", suggestion=never)
        return PermissionAnswer("reject_once", feedback=None if answer == "n" else answer)


def terminal_trust(prompter: TerminalPrompter) -> AskTrust:
    """The folder-trust question at the terminal (bridge/permissions/trust.py): the items verbatim, one letter
    each; no one to ask (no terminal, input ended): the items stay off, as "not now"."""

    async def ask(question: TrustQuestion) -> TrustAnswer | None:
        keys: dict[str, TrustAnswer] = {"t": "trust", "s": "session", "n": "not_now", "k": "keep_off"}
        names = dict(TRUST_CHOICES)
        lines = [prompter.view.paint(BOLD, f"? {visible(question.title)}"), *question.text.splitlines()]
        answer = await prompter.choose(lines, [Choice((key,), names[choice]) for key, choice in keys.items()])
        return keys.get((answer or "n")[:1].lower(), "not_now")

    return ask


NO_TERMINAL = "No one at a terminal answered this (there is no terminal, or its input ended), so it was denied."


def _rules(suggestion: RuleSuggestion) -> str:
    """Every rule an always-choice saves (it saves exactly these), and where."""
    where = Path(suggestion.destination)
    rules = ", ".join(visible(rule) for rule in suggestion.rules)
    return f"{rules} (saved to {visible(f'{where.parent.name}/{where.name}')})"


def question_lines(request: PermissionRequest, paint: Callable[[str, str], str]) -> list[str]:
    """The question as it shows in the terminal: what runs (the whole command, every line, the parts that
    made it ask marked below them), the paths that lead elsewhere, the reason, what a tool shows (a diff)."""
    who = f"[sub-agent {visible(request.agent.description)}] " if request.agent else ""
    command = request.shown.command
    if command is None:
        lines = [paint(BOLD, f"? {who}Allow {one_line(request.title)}?")]
    else:
        background = " in the background" if request.raw_input.get("run_in_background") else ""
        lines = [paint(BOLD, f"? {who}Allow {visible(request.tool_name)} to run this command{background}?")]
        lines += _command_lines(command, request.shown.marks, paint)
    for path in request.shown.paths:
        lines.append(f"  path: {visible(path.named)} → {paint(BOLD, visible(path.resolved))}")
    if request.reason:
        lines.append(f"  why: {visible(request.reason)}")
    for item in request.display:
        lines += [paint(DIM, f"    {line}") for line in render(item)]
    return lines


def _command_lines(command: str, marks: tuple[Mark, ...], paint: Callable[[str, str], str]) -> list[str]:
    """Each line of the command after a bar, the marked spans underlined with `^` on the line below and
    explained after the command."""
    body, more = capped(command)
    text, spans = visible_spans(body, [(m.start, m.end) for m in marks])
    marked = [(span, mark) for span, mark in zip(spans, marks, strict=True) if span[1] > span[0]]
    spans = [span for span, _ in marked]
    out: list[str] = []
    offset = 0
    for line in text.split("\n"):
        end = offset + len(line)
        under: list[str] = []  # by screen columns: a wide character takes two, a combining mark none
        column, previous = 0, ""
        for i, char in enumerate(line, start=offset):
            after = advance(column, char, previous)
            under.append(("^" if any(start <= i < stop for start, stop in spans) else " ") * (after - column))
            column, previous = after, char
        out.append(f"  │ {line}")
        if "^" in under:
            out.append("  │ " + paint(RED, "".join(under).rstrip()))
        offset = end + 1
    if more:
        out.append(f"  │ {more.strip()}")
    whole = len(spans) == 1 and spans[0] == (0, len(text))
    for (start, stop), mark in marked:
        if not whole:  # (the whole command marked: the reason below says why)
            out.append(f"  ^ {one_line(text[start:stop], 120)}: {visible(mark.why)}")
    return out


def denied_what(request: PermissionRequest) -> str:
    if request.shown.command is not None:
        return f"{visible(request.tool_name)} `{one_line(request.shown.command, 200)}`"
    return one_line(request.title, 200)


def _first_always(request: PermissionRequest, kind: OptionKind) -> RuleSuggestion | None:
    """The rules the first always-answer of `kind` saves (the terminal offers one of each)."""
    return next((o.suggestion for o in answer_options(request) if o.kind == kind), None)


def how_to_allow(request: PermissionRequest) -> str:
    always = _first_always(request, "allow_always")
    flags = " ".join(f"--allow {shlex.quote(rule)}" for rule in always.rules) if always is not None else None
    ways = [f"run again with {visible(flags)}"] if flags else []
    ways += ["run it in a terminal and answer", "or pass --dangerously-approve-all (answers yes to everything)"]
    return ", ".join(ways)


def _drop_typeahead(stdin: TextIO) -> None:
    """What was typed before the question shows is not its answer: an Enter pressed while the model's text
    streamed answered the next question yes, and a `y` meant for one question answered the next (attack round
    34). The terminal's pending input is dropped just before a question is drawn."""
    try:
        import termios  # POSIX only: Windows' console has no such queue to drop
    except ImportError:
        return
    with contextlib.suppress(OSError, ValueError, termios.error):
        termios.tcflush(stdin.fileno(), termios.TCIFLUSH)


async def _read_line(stdin: TextIO) -> str:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str] = loop.create_future()
    fd = stdin.fileno()

    def readable() -> None:
        if not future.done():
            future.set_result(stdin.readline())

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
        log.warning("%s", visible(problem))
    return session


async def run_turn_in_terminal(
    session: Session, text: str, view: TerminalView, stops: TerminalSignals | None = None
) -> int:
    """The turn, with SIGINT (Ctrl-C) and SIGTERM cancelling it (`stops`: the handlers, else installed here for
    the turn). Exit code: 0, 1 (an error), 130 (cancelled by SIGINT), 143 (by SIGTERM)."""
    own = stops is None
    signals = stops or TerminalSignals(view)
    signals.session = session
    if own:
        signals.install()
    view.start()
    try:
        stop = await session.prompt([{"type": "text", "text": text}])
    except Exception as error:  # one clear message: a model failure's own, else the cause's (the rest is logged)
        if not isinstance(root_cause(error), ModelError):
            log.error("the turn failed", exc_info=error)
        view.stop()
        shown = root_cause(error) if isinstance(root_cause(error), ModelError) else for_person(error)
        view.end(f"Error: {visible(str(shown))}", error=True)
        return 1
    finally:
        view.stop()
        signals.session = None
        if own:
            signals.remove()
    view.end(f"[{stop}] {view.summary()}")
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
        self.closed = False  # the output's reader went away

    def output_closed(self) -> None:
        """`run … | head`: the reader has what it wanted; the turn stops as a Ctrl-C stops it (the exit code is
        SIGPIPE's, 141, as for a program a closed pipe ends)."""
        self.closed = True
        if self.session is not None and self.session.busy:
            self.session.cancel(force=False)

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
        elif self.agent is not None and self.agent.give_up_checkpoints():
            gave_up = f"{name} not waiting for the last checkpoint: the last call's changes can't be rewound"
            self.view.line(self.view.paint(DIM, gave_up))


def asking(view: TerminalView, prompter: TerminalPrompter) -> Prompter:
    """The question with the screen kept for it (the live area away, nothing else written meanwhile), and
    where an always-answer's rule was saved."""

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        async with prompter.one_at_a_time:
            with view.asking():
                answer = await prompter(request)
        if answer.outcome in ("allow_always", "reject_always") and answer.suggestion is not None:
            view.saved_soon(answer.suggestion)
        return answer

    return ask


def trust_asking(view: TerminalView, prompter: TerminalPrompter) -> AskTrust:
    ask = terminal_trust(prompter)

    async def framed(question: TrustQuestion) -> TrustAnswer | None:
        async with prompter.one_at_a_time:
            with view.asking():
                return await ask(question)

    return framed


def mcp_asking(view: TerminalView, prompter: TerminalPrompter) -> Callable[[McpQuestion], Awaitable[McpReply]]:
    """An MCP server's question at the terminal (approve a project's server): its text as the bridge wrote it
    (every part from a file already escaped), one number per answer. Anything but a number is no answer, which
    leaves the server off (Enter alone too: starting a program is not the default). A form a server asks to have
    filled (elicitation) is declined: the terminal draws no forms."""

    async def ask(question: McpQuestion) -> McpReply:
        from bridge.mcp.host import Reply as McpReply

        if "elicitation" in question.meta:
            view.emit(Notice(f"{question.title}: declined (a form to fill in: answer it in an editor)", "warning"))
            return McpReply(None)
        lines = [view.paint(BOLD, f"? {visible(question.title)}"), *question.text.split("\n")]
        keyed = {str(n): choice.id for n, choice in enumerate(question.choices, 1)}
        shown = [Choice((key,), visible(choice.name)) for key, choice in zip(keyed, question.choices, strict=True)]
        async with prompter.one_at_a_time:
            with view.asking():
                answer = await prompter.choose(lines, shown)
        return McpReply(keyed.get((answer or "").strip()))

    return ask


def connect_servers(agent: Agent, session: Session, view: TerminalView, prompter: TerminalPrompter | None) -> None:
    """The session's MCP servers, as an editor's session has them (the user's, plugins', the folder's once
    approved; `prompter` None: no one to approve one, it stays off). None configured: nothing of the MCP client
    loads."""
    from bridge.mcp.present import configured
    from bridge.plugins import plugin_servers

    if not configured(session.cwd) and not any(plugin_servers(p) for p in session.setup.plugins.plugins):
        return
    from bridge.mcp.host import McpHost

    host = McpHost(
        notice=lambda text, level: view.emit(Notice(text, level)),
        ask=mcp_asking(view, prompter) if prompter is not None else None,
        changed=session.toolset.refresh_commands,
    )
    agent.connect_mcp(session, [], host)


def run_prompt(
    text: str,
    *,
    cwd: Path,
    overrides: dict[str, Any],
    interactive: bool = True,
    approve_all: bool = False,
    offline: str | None = None,
) -> int:
    return asyncio.run(
        run_prompt_async(
            text, cwd=cwd, overrides=overrides, interactive=interactive, approve_all=approve_all, offline=offline
        )
    )


async def run_prompt_async(
    text: str,
    *,
    cwd: Path,
    overrides: dict[str, Any],
    interactive: bool = True,
    approve_all: bool = False,
    ahead: AnthropicModel | None = None,
    offline: str | None = None,
    show_thinking: bool = False,
    resume: str | None = None,
) -> int:
    """One prompt's turn. `ahead`: a model client holding this turn's first request, sent while the process
    was loading (bridge/first_request.py); the session's client takes it over when it is the same.
    `offline`: the offline scenario answering (named instead of a cost). `resume`: go on with that stored session
    (`latest`: the newest of `cwd`) instead of a new one."""
    config, problems = BridgeConfig.load(overrides)
    view = TerminalView(offline=offline, show_thinking=show_thinking)
    for problem in problems:
        view.line(view.paint(RED, visible(problem, keep_newlines=True)))
    if approve_all:
        view.line(
            view.paint(RED, "⚠ --dangerously-approve-all: every permission question is answered yes without asking")
        )
    agent = Agent(config)
    agent.start_warming()
    if ahead is not None and isinstance(agent.model, AnthropicModel):
        agent.model.adopt(ahead)
    terminal = TerminalPrompter(view, approve_all=approve_all)
    prompter = asking(view, terminal) if interactive else deny_all
    ask_trust = trust_asking(view, terminal) if interactive and terminal.can_ask else None
    frontend = Frontend(emit=view.emit, prompter=prompter, interactive=interactive, ask_trust=ask_trust)
    try:
        session = _resumed(agent, resume, cwd, frontend) if resume else agent.new_session(cwd, frontend)
    except LookupError as error:
        view.line(view.paint(RED, str(error)))
        await agent.shutdown()
        return 2
    for notice in session.setup.startup_notices():  # names a cloned folder chose (its agents', skills' files)
        view.line(view.paint(RED, visible(notice, keep_newlines=True)))
    connect_servers(agent, session, view, terminal if interactive and terminal.can_ask else None)
    signals = TerminalSignals(view)
    signals.agent = agent
    signals.install()
    view.screen.on_closed = signals.output_closed
    try:
        code = await run_turn_in_terminal(session, text, view, signals)
        view.line(view.paint(DIM, f"(session {session.id}: go on with `agent-bridge run --continue`)"))
        return 141 if signals.closed else code
    finally:
        try:
            await agent.shutdown(grace=True)  # a cancelled command's SIGINT -> SIGTERM -> SIGKILL runs its course
            if ahead is not None:
                await ahead.aclose()
        finally:
            signals.remove()
