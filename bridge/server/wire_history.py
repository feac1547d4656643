"""Wire shapes of the checkpoint methods (`_bridge/prompts`, `_bridge/rewind`, `_bridge/fork`, `session/fork`,
`_bridge/changes`, `_bridge/undo`, `_bridge/keep`; documented in the README's protocol section): their params
and the conversion of the domain's answers (bridge/history.py, bridge/checkpoints/review.py) into dicts.

A prompt is named by `turnId` (from `_bridge/prompts`) or by `prompt`, its 1-based number in the conversation as
it is now. A hunk is named by `hunk` (its 0-based index in the file's `hunks`) and, to refuse a stale address,
the `hunkId` that came with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from bridge.server.wire import SessionParams

if TYPE_CHECKING:
    from bridge.checkpoints.review import FileReview, ReviewResult
    from bridge.history import Prompt, RewindOutcome, RewindPreview


class PromptParams(SessionParams):
    turn_id: str | None = Field(default=None, alias="turnId")
    prompt: int | None = Field(default=None, ge=1)

    @property
    def target(self) -> str | int | None:
        return self.turn_id if self.turn_id is not None else self.prompt


class RewindParams(PromptParams):
    mode: Literal["both", "code", "conversation"] = "both"
    confirm: bool = False
    resolutions: dict[str, Literal["keep", "merge", "overwrite"]] = Field(default={})


class ReviewParams(PromptParams):
    path: str | None = None
    hunk: int | None = Field(default=None, ge=0)
    hunk_id: str | None = Field(default=None, alias="hunkId")
    overwrite: bool = False


class ForkParams(SessionParams):
    """ACP's `session/fork` (unstable): `cwd` and `mcpServers` as in `session/new`; `_meta.turnId` or
    `_meta.prompt` forks from before that prompt (absent: the whole conversation)."""

    cwd: str | None = None
    mcp_servers: list[dict[str, Any]] = Field(default=[], alias="mcpServers")


def prompt(item: Prompt, changed_after: int) -> dict[str, Any]:
    return {"index": item.index, "turnId": item.turn, "text": item.text, "changedAfter": changed_after}


def rewind_preview(preview: RewindPreview) -> dict[str, Any]:
    code = preview.code
    answer: dict[str, Any] = {
        "prompt": {"index": preview.prompt.index, "turnId": preview.prompt.turn, "text": preview.prompt.text},
        "mode": preview.mode,
        "text": preview.describe(),
        "files": [],
        "irreversible": [],
        "codeProblem": preview.code_problem,
    }
    if code is not None:
        answer["files"] = [
            {
                "path": f.path,
                "action": f.action,
                "conflict": f.conflict,
                "steps": list(dict.fromkeys(step.title for step, _c in f.touches)),
            }
            for f in code.files
        ]
        answer["irreversible"] = list(code.irreversible)
    return answer


def rewind_outcome(preview: RewindPreview, outcome: RewindOutcome) -> dict[str, Any]:
    code = outcome.code
    return {
        "text": outcome.describe(preview),
        "conversation": outcome.conversation,
        "restored": code.restored if code else [],
        "merged": code.merged if code else [],
        "overwritten": code.overwritten if code else [],
        "kept": [{"path": path, "why": why} for path, why in code.kept] if code else [],
    }


def file_review(review: FileReview) -> dict[str, Any]:
    return {
        "path": review.path,
        "status": review.status,
        "binary": review.binary,
        "tooBig": review.too_big,
        "oldText": review.old_text,
        "newText": review.new_text,
        "oldMode": review.old.mode,
        "newMode": review.new.mode,
        "editedSince": review.edited,
        "hunks": [
            {
                "index": h.index,
                "id": h.id,
                "oldStart": h.old_start,
                "oldLines": h.old_lines,
                "newStart": h.new_start,
                "newLines": h.new_lines,
            }
            for h in review.hunks
        ],
        "steps": [{"toolCallId": s.call, "tool": s.tool, "title": s.title, "turnId": s.turn} for s in review.steps],
    }


def review_result(result: ReviewResult) -> dict[str, Any]:
    return {
        "done": [{"path": path, "hunk": hunk} for path, hunk in result.done],
        "conflicts": [{"path": path, "hunk": hunk, "why": why} for (path, hunk), why in result.conflicts],
        "step": result.step,
    }
