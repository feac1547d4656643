"""Attack round 34: what a question shows is what runs, and the answer typed is the answer to the question shown.

Each case failed on the code before: two questions open at once took a line meant for one as the other's
answer; an Enter typed before a question showed answered it yes; a diff whose only change was a line separator
showed no change; the editor's trust card and a sub-agent's label carried hidden characters raw; the terminal's
underline of the part that asks fell under other text when wide characters came before it."""

from __future__ import annotations

import asyncio
import io
import os
import pty
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from bridge.cli.calls import render
from bridge.cli.screen import cells
from bridge.cli.terminal import TerminalPrompter, _command_lines, asking
from bridge.cli.view import TerminalView
from bridge.display import Diff, SubAgentLabel
from bridge.permissions.trust import TrustItem, TrustQuestion
from bridge.permissions.types import Mark, PermissionRequest, Shown
from bridge.server.questions import permission_params, trust_params
from bridge.visible import has_hidden
from tests.poll import poll


def bash(command: str, marks: tuple[Mark, ...] = (), agent: SubAgentLabel | None = None) -> PermissionRequest:
    return PermissionRequest(
        "t1", "Bash", command, "execute", {"command": command}, [], [], "why", [], agent=agent,
        shown=Shown(command, marks),
    )  # fmt: skip


@pytest.fixture
def keyboard() -> Iterator[tuple[int, TextIO]]:
    """A terminal: what is typed at its keyboard (write to the first) and the program's standard input."""
    master, slave = pty.openpty()
    stdin = os.fdopen(slave, "r", buffering=1)
    try:
        yield master, stdin
    finally:
        stdin.close()
        os.close(master)


async def test_two_questions_at_once_are_asked_one_after_the_other(keyboard: tuple[int, TextIO]) -> None:
    """Sub-agents asking at once: both questions were drawn, each with its `>`; the line typed went to the one
    drawn last, and the other waited for ever (or took the next question's answer)."""
    master, stdin = keyboard
    out = io.StringIO()
    view = TerminalView(out, color=False)
    ask = asking(view, TerminalPrompter(view, stdin=stdin))
    first = asyncio.ensure_future(ask(bash("touch A")))
    second = asyncio.ensure_future(ask(bash("touch B")))
    await poll(lambda: out.getvalue().count("  > ") == 1, what="the first question")
    assert "touch B" not in out.getvalue(), "one question on the screen at a time"
    os.write(master, b"n\n")
    assert (await asyncio.wait_for(first, 10)).outcome == "reject_once"
    await poll(lambda: out.getvalue().count("  > ") == 2, what="the second question, once the first is answered")
    assert "touch B" in out.getvalue().split("  > ")[1]
    os.write(master, b"y\n")
    assert (await asyncio.wait_for(second, 10)).outcome == "allow_once"


async def test_what_was_typed_before_a_question_showed_does_not_answer_it(keyboard: tuple[int, TextIO]) -> None:
    """An Enter pressed while the model's text streamed (Enter alone is a yes) answered the next question."""
    master, stdin = keyboard
    out = io.StringIO()
    view = TerminalView(out, color=False)
    ask = asking(view, TerminalPrompter(view, stdin=stdin))
    os.write(master, b"\n")  # typed ahead
    question = asyncio.ensure_future(ask(bash("touch PWNED")))
    await poll(lambda: "  > " in out.getvalue(), what="the question")
    os.write(master, b"n\n")  # the control: what is typed once it shows is its answer
    assert (await asyncio.wait_for(question, 10)).outcome == "reject_once"


@pytest.mark.parametrize("separator", ["\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028"])
def test_a_diff_whose_change_is_a_line_separator_shows_it(separator: str) -> None:
    """`# <CR>rm -rf ./data` is a comment to sh; `# <LF>rm -rf ./data` runs rm. The question showed `+0 -0`."""
    old = f"#!/bin/sh\necho building # {separator}rm -rf ./data\n"
    lines = render(Diff("/w/build.sh", old, "#!/bin/sh\necho building # \nrm -rf ./data\n"))
    assert lines[0] == "/w/build.sh (edited: +2 -1)"
    assert lines[2:] == ["+echo building # ", "+rm -rf ./data"]
    assert lines[1].startswith("-echo building # \\") and not has_hidden(lines[1])


def test_a_diff_of_line_endings_only_says_so() -> None:
    assert render(Diff("/w/a.txt", "a\r\nb\r\n", "a\nb\n")) == [
        "/w/a.txt (edited: +0 -0)",
        "(only line endings changed)",
    ]
    assert render(Diff("/w/a.txt", "a\nb\n", "a\nc\n")) == ["/w/a.txt (edited: +1 -1)", "-b", "+c"]  # the control


def test_the_trust_card_gets_a_hooks_hidden_characters_escaped() -> None:
    """The text escaped a folder hook's bidi controls; `_meta.trust`, which VS Code's card draws, had them raw:
    the card showed `touch` inside a comment."""
    hook = "echo formatting \u202e \u2066; touch PWNED | sh -s \u2069 \u2066# fmt check\u2069"
    item = TrustItem(".agent-bridge/settings.json", "hook", f"PreToolUse (Bash): {hook}")
    params = trust_params("s", TrustQuestion(Path("/w/\u202eproject"), (item,)))
    assert not has_hidden(params["toolCall"]["content"][0]["content"]["text"])  # the control: the text
    meta = params["_meta"]["trust"]
    assert "\\u{202e}" in meta["items"][0]["text"] and not has_hidden(str(meta))


def test_a_sub_agents_description_reaches_the_editor_escaped() -> None:
    """The model writes a sub-agent's description: a U+202E in it turned the question's line around."""
    label = SubAgentLabel("general-purpose", "\u202elint check", "toolu_1")
    meta = permission_params("s", bash("rm -f victim.txt", agent=label))["_meta"]
    assert meta["agent"]["description"] == "\\u{202e}lint check"


def test_the_underline_falls_under_the_part_that_asks_in_screen_columns() -> None:
    before = "echo '全部テスト成功しました' && "
    command = before + "rm -f victim.txt && git status"
    lines = _command_lines(command, (Mark(len(before), len(before) + 16, "rm deletes"),), lambda _color, t: t)
    shown, under = lines[0], lines[1]
    assert under.index("^") == cells(shown[: shown.index("rm -f")])
    assert cells(under.rstrip()) == cells(shown[: shown.index(" && git")])
