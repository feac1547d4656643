"""`/rewind` and `/changes`: the slash commands over a session's history and review (bridge/history.py,
bridge/checkpoints/review.py), the same in every front end (the terminal, ACP editors through
`available_commands`, the panel).

- `/rewind` lists the prompts; `/rewind N [both|code|conversation] [keep|merge|overwrite]` shows what the rewind
  will do — the files it restores, those changed since by someone else (kept unless `merge` or `overwrite` is
  given), and what it can't undo — and asks before doing it (the permission question of the front end).
- `/changes [N]` shows the session's pending changes (or prompt N's) as diffs — also as a tool call's diff content,
  which ACP editors render — with each hunk numbered; `/changes [N] undo|keep PATH[#HUNK]|all` undoes or keeps
  a file, a hunk, or everything shown.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING

from bridge import history
from bridge.abort import Abort, cancel_on_abort
from bridge.checkpoints.review import Address, Done, FileReview, ReviewError, ReviewResult, keep, undo, view
from bridge.checkpoints.rewind import RESOLUTIONS, Resolution
from bridge.display import Diff, Display, Location, TextContent
from bridge.loop.events import ToolCallFinished, ToolCallStarted
from bridge.permissions.types import PermissionRequest
from bridge.visible import visible

if TYPE_CHECKING:
    from bridge.session import Session

REWIND_USAGE = "Usage: /rewind N [both|code|conversation] [keep|merge|overwrite]"
CHANGES_USAGE = "Usage: /changes [N] [undo|keep PATH[#HUNK]|all]"


async def rewind_command(session: Session, arguments: str, abort: Abort) -> str | None:
    words = arguments.split()
    try:
        if not words:
            return _list(session)
        mode: history.RewindMode = "both"
        resolution: Resolution = "keep"
        for word in words[1:]:
            if word in history.MODES:
                mode = word
            elif word in RESOLUTIONS:
                resolution = word
            else:
                return f"Unknown word {word!r}. {REWIND_USAGE}"
        preview = await history.preview_rewind(session, words[0], mode)
    except history.HistoryError as error:
        return str(error)
    text = preview.describe()
    if preview.code is not None and preview.code.conflicts:
        text += f"\nFor those: {resolution}."
    request = PermissionRequest(
        tool_call_id=f"rewind_{uuid.uuid4().hex[:12]}",
        tool_name="Rewind",
        title=f"Rewind {mode} to before prompt {preview.prompt.index}",
        kind="other",
        raw_input={
            "prompt": preview.prompt.index,
            "turnId": preview.prompt.turn,
            "mode": mode,
            "conflicts": resolution,
        },
        display=[TextContent(text)],
        locations=[],
        reason="a rewind",
        suggestions=[],
    )
    answer = None
    with cancel_on_abort(abort):
        answer = await session.frontend.prompter(request)
    if answer is None:
        return None
    if not answer.allowed:
        return "Not rewound."
    conflicts = preview.code.conflicts if preview.code is not None else []
    outcome = await history.rewind(session, preview, {item.path: resolution for item in conflicts})
    return outcome.describe(preview)


def _list(session: Session) -> str:
    listed = history.prompts(session)
    if not listed:
        return "No prompt to rewind to yet."
    lines = ["Prompts (rewind to before one of them):"]
    for prompt in listed:
        changed = history.changed_after(session, prompt.turn)
        since = f" — {changed} file{'s' if changed != 1 else ''} changed since" if changed else ""
        lines.append(f"  {prompt.index}. {visible(prompt.text)}{since}")
    return "\n".join(lines) + f"\n\n{REWIND_USAGE}"  # (a paragraph of its own: not a part of the list's last item)


async def changes_command(session: Session, arguments: str, abort: Abort) -> str | None:
    words = arguments.split()
    turn: str | None = None
    try:
        if words and words[0].isdigit():
            prompt = history.find_prompt(session, int(words.pop(0)))
            turn = prompt.turn
        if not words:
            return await _show(session, turn)
        if words[0] not in ("undo", "keep") or len(words) != 2:
            return CHANGES_USAGE
        address = _address(words[1])
        result = await (
            undo(session.checkpoints, turn, address) if words[0] == "undo" else keep(session.checkpoints, turn, address)
        )
    except (history.HistoryError, ReviewError, ValueError) as error:
        return str(error)
    return _result_text(words[0], result)


def _address(word: str) -> Address:
    if word == "all":
        return Address()
    path, sep, hunk = word.rpartition("#")
    if sep and hunk.isdigit():
        return Address(path, int(hunk) - 1)
    return Address(word)


def _result_text(verb: str, result: ReviewResult) -> str:
    past = "Undid" if verb == "undo" else "Kept"
    participle = "undone" if verb == "undo" else "kept"
    lines = [f"{past}: {', '.join(map(_label, result.done))}." if result.done else f"Nothing {participle}."]
    lines += [f"Not {participle}: {_label(where)}: {visible(why)}" for where, why in result.conflicts]
    return "\n".join(lines)


def _label(done: Done) -> str:
    path, hunk = done
    return visible(path) if hunk is None else f"{visible(path)}#{hunk + 1}"


async def _show(session: Session, turn: str | None) -> str:
    reviews = await view(session.checkpoints, turn)
    scope = "this session (not yet kept)" if turn is None else "that prompt"
    if not reviews:
        return f"No changes of the agent's in {scope}."
    call = f"changes_{uuid.uuid4().hex[:12]}"
    root = session.checkpoints.workspace or session.cwd
    title = f"Changes in {scope}: {len(reviews)} file{'s' if len(reviews) != 1 else ''}"
    session.frontend.emit(
        ToolCallStarted(
            call, "Changes", title, "edit", {"turnId": turn}, [Location(str(root / r.path)) for r in reviews]
        )
    )
    text = "\n".join(_describe(r) for r in reviews)
    session.frontend.emit(ToolCallFinished(call, "completed", text, [_display(root, r) for r in reviews]))
    # The card above shows every file and hunk; the answer names them and says what to do (as the agent's text it
    # is rendered as markdown: the hunks' `+`/`-` lines would become list items, and its lines would run together).
    files = "\n".join(f"- {_code(visible(r.path))} ({r.status}, {_count(len(r.hunks), 'hunk')})" for r in reviews)
    return f"{title}:\n\n{files}\n\n{CHANGES_USAGE}"


def _code(path: str) -> str:
    """`path` as markdown code (a path may hold backticks: a longer run of them around it)."""
    fence = "`" * (max((len(run) for run in re.findall("`+", path)), default=0) + 1)
    return f"{fence} {path} {fence}" if "`" in path else f"`{path}`"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _describe(review: FileReview) -> str:
    # (names and titles escaped: a line break in a file name made lines of its own, attack round 26)
    by = ", ".join(dict.fromkeys(visible(step.title) for step in review.steps)) or "a rewind or an undo"
    head = f"{visible(review.path)} ({review.status}, by {by}{'; you changed it since' if review.edited else ''})"
    if review.binary or review.too_big or (review.old_text is None and review.new_text is None):
        return head + ("\n  (binary)" if review.binary else "\n  (too big to show)" if review.too_big else "")
    old, new = (review.old_text or "").splitlines(), (review.new_text or "").splitlines()
    lines = [head]
    for hunk in review.hunks:
        lines.append(
            f"  hunk #{hunk.index + 1} (-{hunk.old_start + 1},{hunk.old_lines} +{hunk.new_start + 1},{hunk.new_lines})"
        )
        lines += [f"  -{line}" for line in old[hunk.old_start : hunk.old_start + hunk.old_lines]]
        lines += [f"  +{line}" for line in new[hunk.new_start : hunk.new_start + hunk.new_lines]]
    if review.status == "mode":
        lines.append(f"  mode {review.old.mode} -> {review.new.mode}")
    return "\n".join(lines)


def _display(root: object, review: FileReview) -> Display:
    if (review.old_text is None and review.new_text is None) or review.binary or review.too_big:
        return TextContent(f"{visible(review.path)}: {review.status}" + (" (binary)" if review.binary else ""))
    return Diff(f"{root}/{review.path}", review.old_text, review.new_text or "")
