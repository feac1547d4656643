"""Rewinding the code to before a prompt, three-way: the agent's changes since then are undone; the user's are
never silently lost.

For each file a step changed after the prompt's anchor, the target is what the file was just before the first of
those steps touched it (so an edit the user made after the prompt but before the agent's step is kept too). The
file is restored silently only when nothing outside the steps changed it after that first touch (and, where the
snapshot now has no file, there is none: one it did not look at, ignored or left out, is in no checkpoint). Otherwise
it is a conflict, shown with why, and the user decides:
- `keep` (the default): the file stays as it is now;
- `merge`: each of the agent's changes to it is taken out of the current text, newest first (`git merge-file`,
  as `git revert` does); the file is kept as it is when that does not apply cleanly or the file is binary;
- `overwrite`: the file becomes the checkpoint's version (the version it replaces stays in the store: the
  rewind's own step records it).
What no checkpoint can undo — what commands did outside the workspace or to ignored files, network requests,
files left out for their size — is listed in the plan, before the user confirms.

A plan is made, shown, confirmed, then applied; `apply` plans again under the snapshot lock and applies a
decision only to a file that was a conflict in the plan the user saw (a file that became one since is kept).
The rewind itself is a step (`kind: rewind`), so the log stays the whole story.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from bridge import safefs
from bridge.checkpoints import files
from bridge.checkpoints.log import Effect, Step
from bridge.checkpoints.recorder import UNKNOWN_BEFORE, Checkpoints
from bridge.checkpoints.store import Change, StoreError

Resolution = Literal["keep", "merge", "overwrite"]
RESOLUTIONS: tuple[Resolution, ...] = ("keep", "merge", "overwrite")


class RewindError(Exception):
    """The code can't go back there (no checkpoints reach it, or they are off): a message for the user."""


@dataclass
class FilePlan:
    path: str
    target_blob: str | None  # None: the file did not exist then
    target_mode: str | None
    touches: list[tuple[Step, Change]]  # the steps after the anchor that changed it, in order
    conflict: str | None = None  # why the user must decide (None: restored silently)
    now: tuple[str, str] | None = None  # (mode, blob) as it is now (None: absent or not storable)

    @property
    def action(self) -> str:
        if self.target_blob is None:
            return "delete"
        if self.now is None:
            return "recreate"
        return "mode" if self.now[1] == self.target_blob else "restore"


@dataclass
class RewindPlan:
    turn: str
    files: list[FilePlan]
    irreversible: list[str]
    steps: int  # how many steps it goes back over

    @property
    def conflicts(self) -> list[FilePlan]:
        return [f for f in self.files if f.conflict is not None]

    @property
    def restores(self) -> list[FilePlan]:
        return [f for f in self.files if f.conflict is None]


@dataclass
class RewindResult:
    restored: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # (path, why)
    step: int | None = None


async def plan_rewind(checkpoints: Checkpoints, turn: str) -> RewindPlan:
    if not checkpoints.enabled:
        raise RewindError(f"Checkpoints are off, so the code can't be rewound: {checkpoints.problem or 'unknown'}")
    async with checkpoints.lock:
        tree, external = await _now(checkpoints)
        return await _plan(checkpoints, turn, tree, external)


async def apply_rewind(
    checkpoints: Checkpoints, shown: RewindPlan, resolutions: dict[str, Resolution] | None = None
) -> RewindResult:
    """Apply `shown` as the user confirmed it: decisions for its conflicts in `resolutions` (absent: keep)."""
    resolutions = resolutions or {}
    decided = {f.path for f in shown.conflicts}
    agreed = {f.path: (f.target_blob, f.target_mode, f.action) for f in shown.files}
    async with checkpoints.lock:
        tree, external = await _now(checkpoints)
        unrecorded = checkpoints.unrecorded()  # of `tree`'s snapshot: what the rewind makes appear there isn't its
        plan = await _plan(checkpoints, shown.turn, tree, external)
        result = RewindResult()
        # what was shown is what is done: a file the plan holds now but did not then (a background agent's step
        # since, a file changed again) is kept and said, never written unseen
        unseen = [f for f in plan.files if agreed.get(f.path) != (f.target_blob, f.target_mode, f.action)]
        for item in unseen:
            result.kept.append((item.path, "changed since the plan was shown: not restored (rewind again to see it)"))
        plan.files = [f for f in plan.files if agreed.get(f.path) == (f.target_blob, f.target_mode, f.action)]
        views: dict[str, tuple[str | None, str | None]] = {}
        # Removals first, deepest first, then writes: a file where a directory was (or the reverse) has room.
        ordered = sorted(
            plan.files,
            key=lambda f: (
                f.target_blob is not None,
                -f.path.count("/") if f.target_blob is None else f.path.count("/"),
                f.path,
            ),
        )
        for item in ordered:
            # a file shown as a conflict gets the user's decision (keep, by default), whatever it is now; one that
            # became a conflict since is kept
            choice: Resolution = (
                resolutions.get(item.path, "keep")
                if item.path in decided
                else ("overwrite" if item.conflict is None else "keep")
            )
            if choice == "keep":
                result.kept.append((item.path, item.conflict or "kept"))
                continue
            try:
                if choice == "overwrite":
                    await checkpoints.run(_restore, checkpoints, item)
                    (result.restored if item.conflict is None else result.overwritten).append(item.path)
                    continue
                why = await checkpoints.run(_merge, checkpoints, item)
            except OSError as error:
                # one file that can't be written as planned (a directory on its way became a link since: never
                # written through) is kept and said; the others go on, and the step is recorded as it went
                result.kept.append((item.path, f"not restored: {error.strerror or error}"))
                continue
            if why is None:
                result.merged.append(item.path)
                views[item.path] = (item.target_blob, item.target_mode)
            else:
                result.kept.append((item.path, why))
        touched = [*result.restored, *result.merged, *result.overwritten]
        if touched or plan.files:
            after = await checkpoints.checkpoint(None)
            changes = await checkpoints.run(checkpoints.store_diff, tree, after.tree)
            title = f"Rewind to {shown.turn}"
            args = (checkpoints.turn, "Rewind", title, "rewind", tree, after, changes, external, views)
            result.step = checkpoints.record_step(*args, unrecorded=unrecorded)
        return result


async def _now(checkpoints: Checkpoints) -> tuple[str, list[Change]]:
    try:
        return await checkpoints.now_locked()
    except StoreError as error:
        raise RewindError(f"The workspace can't be read for a rewind: {error}") from None


async def _plan(checkpoints: Checkpoints, turn: str, tree: str, external: list[Change]) -> RewindPlan:
    log = checkpoints.log
    anchor = log.anchor(turn)
    if anchor is None:
        raise RewindError(
            "No checkpoint reaches back to that message (it came before checkpoints were kept for "
            "this session), so its code can't be restored; the conversation can still be rewound."
        )
    later = log.entries[anchor + 1 :]
    steps = [e for e in later if isinstance(e, Step)]
    unknown: dict[str, int] = {}  # a path whose version before a step is in no checkpoint (recorder.UNKNOWN_BEFORE)
    for index, step in enumerate(steps):
        for skipped in step.skipped:
            if skipped.why.startswith(UNKNOWN_BEFORE):
                unknown.setdefault(skipped.path, index)
    first: dict[str, int] = {}
    touches: dict[str, list[tuple[Step, Change]]] = {}
    for index, step in enumerate(steps):
        for change in step.changes:
            if change.path not in first and index <= unknown.get(change.path, -1):
                # what it was before that step is in no checkpoint (named among what a rewind can't undo): what
                # the steps after it did is undone, back to the version that step left (attack round 18, G4: a
                # file un-ignored by one call and deleted by a later one stayed deleted)
                continue
            first.setdefault(change.path, index)
            touches.setdefault(change.path, []).append((step, change))
    edited: dict[str, str] = {}  # path -> when the user (or something outside the steps) changed it
    for index, step in enumerate(steps):
        for change in step.external:
            if change.path in first and first[change.path] < index:
                edited.setdefault(
                    change.path,
                    f"changed outside the agent's steps (by you, or a command still running) before step {step.number}",
                )
    for change in external:
        if change.path in first:
            edited.setdefault(
                change.path,
                "changed outside the agent's steps (by you, or a command still running) since its last step",
            )
    for path, changes in touches.items():
        background = next((step for step, _c in changes if step.background), None)
        if background is not None:
            edited.setdefault(path, f"changed while {background.title} ran in the background (by it, or by you?)")
    now = await checkpoints.run(checkpoints.tree_entries, tree, sorted(first))
    plans: list[FilePlan] = []
    for path in sorted(first):
        _step, change = touches[path][0]
        item = FilePlan(path, change.old, change.old_mode, touches[path], now=now.get(path))
        if item.now == (item.target_mode, item.target_blob) or (item.now is None and item.target_blob is None):
            continue  # already as it was
        if path in edited:
            item.conflict = f"{edited[path]}: it is not overwritten silently"
        plans.append(item)
    unseen = [item for item in plans if item.action == "recreate" and item.conflict is None]
    if unseen:
        present = await checkpoints.run(_present, checkpoints, [item.path for item in unseen])
        for item in unseen:
            if item.path in present:
                item.conflict = f"{UNSEEN}: it is not overwritten silently"
    return RewindPlan(turn, plans, _irreversible(later, steps, {item.path for item in plans}), len(steps))


UNSEEN = "a file is there that no checkpoint holds (ignored, or left out, since)"


def _present(checkpoints: Checkpoints, paths: list[str]) -> set[str]:
    """Those of `paths` (absent from the snapshot now) where a file is all the same: the snapshot did not look there
    (ignored, left out), so what it holds is in no checkpoint. Recreating the old version over it would lose it (a
    file the agent deleted, then the user wrote again under a name they had ignored since)."""
    root = str(checkpoints.workspace)
    return {path for path in paths if files.occupied(root, path)}


_LEAVES_IT = "; a rewind leaves it as it is"  # how recorder.py's UNKNOWN_BEFORE entries end


def _irreversible(later: Sequence[object], steps: list[Step], planned: set[str]) -> list[str]:
    """What the rewind can't undo. A file whose version before a step is in no checkpoint, but which later steps
    changed again (`planned`), is brought back only to what that step left: said so."""
    said: list[str] = []
    for entry in later:
        if isinstance(entry, Step) and entry.outside:
            said.append(entry.outside)
        elif isinstance(entry, Effect):
            said.append(entry.text)
    for step in steps:
        for s in step.skipped:
            if s.why.startswith(UNKNOWN_BEFORE) and s.why.endswith(_LEAVES_IT):
                done = (
                    "the later calls' changes to it are undone, back to what this call left"
                    if s.path in planned
                    else "a rewind leaves it as it is"
                )
                said.append(f"{s.path}: {s.why.removesuffix(_LEAVES_IT)}; {done}")
            else:
                said.append(f"{s.path}: {s.why} — its changes are not in any checkpoint")
    return list(dict.fromkeys(said))


def _restore(checkpoints: Checkpoints, item: FilePlan) -> None:
    root = str(checkpoints.workspace)
    if item.target_blob is None:
        files.remove(root, item.path)
        return
    assert checkpoints.store is not None
    data = checkpoints.store.read_blobs([item.target_blob])[item.target_blob]
    files.write(root, item.path, files.Entry(data, item.target_mode or "100644"))


def _merge(checkpoints: Checkpoints, item: FilePlan) -> str | None:
    """The agent's changes taken out of the file as it is now, newest first; None when written, else why not."""
    store, root = checkpoints.store, str(checkpoints.workspace)
    assert store is not None
    try:
        current = files.read(root, item.path, store.max_file_bytes)
    except safefs.TooBig:
        return "bigger now than any version a checkpoint holds: it can't be merged (keep it, or overwrite it)"
    if current is not None and current.mode == "120000":
        return "a symbolic link: it can't be merged (keep it, or overwrite it)"
    blobs = store.read_blobs([b for _s, c in item.touches for b in (c.old, c.new) if b is not None])
    text = current.data if current is not None else b""
    for _step, change in reversed(item.touches):
        base, theirs = blobs.get(change.new or "", b""), blobs.get(change.old or "", b"")
        if any(b"\0" in part[:8000] for part in (text, base, theirs)):
            return "binary: it can't be merged (keep it, or overwrite it)"
        text, clean = store.merge(text, base, theirs, ("yours", "agent", "checkpoint"))
        if not clean:
            return "the agent's changes and yours overlap: it can't be merged (keep it, or overwrite it)"
    if item.target_blob is None and not text:
        files.remove(root, item.path)
    else:
        last_mode = item.touches[-1][1].new_mode
        mode = item.target_mode if current is None or current.mode == last_mode else current.mode
        files.write(root, item.path, files.Entry(text, mode or "100644"))
    return None
