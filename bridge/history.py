"""A session's history as a person moves in it: the prompts a rewind or a fork can go back to, and rewinding the
conversation, the code, or both, to before one of them. Views on the transcript and the checkpoints
(bridge/checkpoints): the transcript stays append-only — a rewind of the conversation is a line of its own, and the
history is loaded back through the one reader of transcripts (bridge/transcript.py), so `session/load` and the
live session agree. The messages kept are the stored ones, byte for byte: the next request's prefix is one the
model has seen, and its prompt cache still holds.

A prompt is addressed by its turn id (what the panel and `_bridge/*` use) or by its number in the conversation
as it is now (1-based, what `/rewind N` shows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from bridge.checkpoints.rewind import Resolution, RewindPlan, RewindResult, apply_rewind, plan_rewind
from bridge.transcript import is_prompt, load
from bridge.visible import visible

if TYPE_CHECKING:
    from bridge.session import Session

RewindMode = Literal["both", "code", "conversation"]
MODES: tuple[RewindMode, ...] = ("both", "code", "conversation")


class HistoryError(Exception):
    """The request can't be served (no such prompt, no transcript): a message for the user."""


@dataclass(frozen=True)
class Prompt:
    index: int  # 1-based, in the conversation as it is now
    turn: str
    text: str  # its first line


def prompts(session: Session) -> list[Prompt]:
    """The prompts of the conversation as it is now, oldest first (those a rewind or a fork can go back to)."""
    if session.transcript is None:
        return []
    try:
        turns = load(session.transcript.path).turns
    except (OSError, ValueError) as error:
        raise HistoryError(f"The session's transcript can't be read: {error}") from None
    found: list[Prompt] = []
    for turn in turns:
        if turn.id is None or not turn.messages or not is_prompt(turn.messages[0]):
            continue
        text = next(
            (str(b.get("text", "")) for b in turn.messages[0]["content"] if b.get("type") == "text"), "(an image)"
        )
        first = text.strip().splitlines()[0] if text.strip() else ""
        found.append(Prompt(len(found) + 1, turn.id, first[:100]))
    return found


def find_prompt(session: Session, target: str | int) -> Prompt:
    listed = prompts(session)
    for prompt in listed:
        if target in (prompt.turn, prompt.index) or (isinstance(target, str) and target == str(prompt.index)):
            return prompt
    count = f"1 to {len(listed)}" if listed else "none yet"
    raise HistoryError(f"No prompt {target!r} in this conversation (prompts: {count}).")


@dataclass
class RewindPreview:
    """What a rewind will do, shown before the user confirms."""

    prompt: Prompt
    mode: RewindMode
    code: RewindPlan | None = None
    code_problem: str | None = None  # why the code can't be rewound (the conversation still can)
    later_prompts: int = 0

    def describe(self) -> str:
        # (each name on a line of its own, escaped: a file name with a line break added lines the user confirmed,
        # attack round 26)
        lines = [f"Rewind {_what(self.mode)} to before prompt {self.prompt.index}: “{visible(self.prompt.text)}”."]
        if self.mode != "code":
            lines.append(
                f"The conversation loses that prompt and the {self.later_prompts - 1} after it."
                if self.later_prompts > 1
                else "The conversation loses that prompt and its answer."
            )
        if self.code_problem is not None:
            lines.append(self.code_problem)
        if self.code is not None:
            lines += _code_lines(self.code)
        return "\n".join(lines)


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


@dataclass
class RewindOutcome:
    code: RewindResult | None = None
    conversation: bool = False
    notes: list[str] = field(default_factory=list)

    def describe(self, preview: RewindPreview) -> str:
        lines = []
        if self.conversation:
            lines.append(f"The conversation is back to before prompt {preview.prompt.index}.")
        if self.code is not None:
            code = self.code
            # a file the plan showed as `delete` was deleted, not restored (it did not exist then)
            deleting = {f.path for f in preview.code.files if f.target_blob is None} if preview.code else set()
            done = [p for p in [*code.restored, *code.overwritten] if p not in deleting]
            deleted = [p for p in [*code.restored, *code.overwritten] if p in deleting]
            if done or not deleted:
                lines.append(
                    f"Restored {len(done)} file{'s' if len(done) != 1 else ''}"
                    + (f": {', '.join(map(visible, done))}" if done else "")
                    + "."
                )
            if deleted:
                lines.append(f"Deleted {_files(len(deleted))} the agent had made: {', '.join(map(visible, deleted))}.")
            if code.merged:
                lines.append(f"Took the agent's changes out of: {', '.join(map(visible, code.merged))}.")
            lines += [f"Kept {visible(path)}: {visible(why)}" for path, why in code.kept]
        return "\n".join([*lines, *self.notes])


async def preview_rewind(session: Session, target: str | int, mode: RewindMode) -> RewindPreview:
    prompt = find_prompt(session, target)
    preview = RewindPreview(prompt, mode, later_prompts=len(prompts(session)) - prompt.index + 1)
    if mode != "conversation":
        from bridge.checkpoints.rewind import RewindError

        try:
            preview.code = await plan_rewind(session.checkpoints, prompt.turn)
        except RewindError as error:
            if mode == "code":
                raise HistoryError(str(error)) from None
            preview.code_problem = f"The code stays as it is: {error}"
    return preview


async def rewind(
    session: Session,
    preview: RewindPreview,
    resolutions: dict[str, Resolution] | None = None,
) -> RewindOutcome:
    """Apply a confirmed preview: the code first (three-way: see bridge/checkpoints/rewind.py), then the
    conversation (a `rewind` line in the transcript, and the history as it was before the prompt)."""
    outcome = RewindOutcome()
    if preview.code is not None:
        outcome.code = await apply_rewind(session.checkpoints, preview.code, resolutions)
    if preview.mode != "code":
        rewind_conversation(session, preview.prompt.turn, code=outcome.code is not None)
        outcome.conversation = True
    elif session.transcript is not None:
        session.transcript.rewound(preview.prompt.turn, conversation=False, code=True)
    return outcome


def rewind_conversation(session: Session, turn: str, *, code: bool = False) -> None:
    transcript = session.transcript
    if transcript is None:
        raise HistoryError("This session keeps no transcript, so its conversation can't be rewound.")
    transcript.rewound(turn, conversation=True, code=code)
    loaded = load(transcript.path)
    session.conversation.messages = loaded.messages  # not `replace`: that would write a restart line
    session.conversation.context_tokens = 0  # unknown until the next response says it
    session.read_files.clear()  # what it had read may have changed: read again before an edit


def changed_after(session: Session, turn: str) -> int:
    """How many files the agent's steps changed since the prompt of `turn` (0: none, or no checkpoints)."""
    from bridge.checkpoints.log import Step

    log = session.checkpoints.log
    anchor = log.anchor(turn)
    if anchor is None:
        return 0
    return len({c.path for e in log.entries[anchor + 1 :] if isinstance(e, Step) for c in e.changes})


def _what(mode: RewindMode) -> str:
    return {"both": "the code and the conversation", "code": "the code", "conversation": "the conversation"}[mode]


def _code_lines(plan: RewindPlan) -> list[str]:
    lines: list[str] = []
    if not plan.files:
        lines.append("No file the agent changed since then needs restoring.")
    for item in plan.restores:
        by = ", ".join(dict.fromkeys(visible(step.title) for step, _c in item.touches))
        lines.append(f"  {item.action} {visible(item.path)} (changed by {by})")
    if plan.conflicts:
        lines.append(
            "Changed since by someone else — you decide (kept as they are unless you choose merge or overwrite):"
        )
        lines += [f"  {visible(item.path)}: {visible(item.conflict or '')}" for item in plan.conflicts]
    if plan.irreversible:
        lines.append("Not undone by a rewind:")
        lines += [f"  {visible(text)}" for text in plan.irreversible]
    return lines
