"""Review that doesn't block: what the agent changed — in one prompt's turn, or in the whole session — as
per-file changes with hunks, and keep or undo per file and per hunk, at any time after the fact.

Views (from the checkpoint log alone; the user's own edits are not the agent's changes):
- a **turn**: each file its steps changed, from before the turn's first step that touched it to after its last;
- the **session**: each file from its review baseline — what it was before the agent first changed it, or the
  version the user last kept — to the agent's latest version of it. A file whose baseline is its latest version
  is reviewed (nothing pending) and is not listed.

Both operations are three-way, so they apply on top of whatever the file is now (the user's edits stay):
- **undo** takes the change (a hunk, or the whole file) out of the file: `merge(ours=the file now, base=the
  view's new version, theirs=that version without the change)`. When it does not apply cleanly nothing is
  written and the conflict is reported. It is a step (`kind: review`), so a rewind and the views see it.
- **keep** accepts it: the session's baseline for the file takes the change (`merge(ours=baseline, base=the
  view's old version, theirs=that version with the change)`); the file itself is not touched.

A hunk is one contiguous region of changed lines (no context), addressed by its index in the file's list and its
`id` (a digest of its lines and place): an address whose id no longer matches is refused as stale, so a client
never undoes a hunk it did not show. Binary files, links, mode changes and files over `TEXT_LIMIT` are reviewed
per file only.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from typing import Literal

from bridge import safefs
from bridge.checkpoints import files
from bridge.checkpoints.log import Keep, Step
from bridge.checkpoints.recorder import Checkpoints
from bridge.checkpoints.store import StoreError

TEXT_LIMIT = 1024 * 1024  # bytes of a version beyond which a file is reviewed as a whole

Status = Literal["added", "deleted", "modified", "mode"]


class ReviewError(Exception):
    """A request that can't be served (checkpoints off, no such file or hunk, a stale hunk): for the user."""


@dataclass(frozen=True)
class Version:
    blob: str | None  # None: absent
    mode: str | None

    @property
    def exists(self) -> bool:
        return self.blob is not None


@dataclass(frozen=True)
class Hunk:
    index: int
    old_start: int  # 0-based line index in the old text
    old_lines: int
    new_start: int
    new_lines: int
    id: str


@dataclass
class StepRef:
    call: str
    tool: str
    title: str
    turn: str | None


@dataclass
class FileReview:
    path: str
    old: Version
    new: Version
    old_text: str | None = None  # None: absent, binary, a link, or too big to show
    new_text: str | None = None
    binary: bool = False
    too_big: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    steps: list[StepRef] = field(default_factory=list)
    edited: bool = False  # the file on disk is not the view's new version (the user changed it since)

    @property
    def status(self) -> Status:
        if not self.old.exists:
            return "added"
        if not self.new.exists:
            return "deleted"
        return "mode" if self.old.blob == self.new.blob else "modified"


Done = tuple[str, int | None]  # (path, hunk index or None for the whole file)


@dataclass
class ReviewResult:
    done: list[Done] = field(default_factory=list)
    conflicts: list[tuple[Done, str]] = field(default_factory=list)  # (what, why nothing was done)
    step: int | None = None


# -- views ---------------------------------------------------------------------------------------------------


async def view(checkpoints: Checkpoints, turn: str | None = None) -> list[FileReview]:
    """The turn's changes (`turn`), or the session's pending ones (None)."""
    if not checkpoints.enabled:
        raise ReviewError(f"Checkpoints are off, so there is nothing to review: {checkpoints.problem or 'unknown'}")
    await checkpoints.settle()
    return await checkpoints.run(_view, checkpoints, turn)


def _view(checkpoints: Checkpoints, turn: str | None) -> list[FileReview]:
    entries = checkpoints.log.entries
    olds: dict[str, Version] = {}
    news: dict[str, Version] = {}
    steps: dict[str, list[StepRef]] = {}
    for entry in entries:
        if isinstance(entry, Keep) and turn is None:
            olds[entry.path] = Version(entry.blob, entry.mode)
            steps.pop(entry.path, None)
        if not isinstance(entry, Step) or (turn is not None and entry.turn != turn):
            continue
        for change in entry.changes:
            olds.setdefault(change.path, Version(change.old, change.old_mode))
            view_blob = entry.views.get(change.path)
            news[change.path] = Version(*view_blob) if view_blob else Version(change.new, change.new_mode)
            if entry.kind not in ("rewind", "review"):
                steps.setdefault(change.path, []).append(StepRef(entry.call, entry.tool, entry.title, entry.turn))
    reviews = [
        FileReview(path, olds[path], new, steps=steps.get(path, []))
        for path, new in sorted(news.items())
        if olds[path] != new
    ]
    _fill(checkpoints, reviews)
    return reviews


def _fill(checkpoints: Checkpoints, reviews: list[FileReview]) -> None:
    """Texts, hunks, and whether the disk still holds the view's new version."""
    store, root = checkpoints.store, str(checkpoints.workspace)
    assert store is not None
    blobs = store.read_blobs([b for r in reviews for b in (r.old.blob, r.new.blob) if b is not None])
    for review in reviews:
        old = blobs.get(review.old.blob or "", b"")
        new = blobs.get(review.new.blob or "", b"")
        try:
            disk = files.read(root, review.path, store.max_file_bytes)
            review.edited = (disk.data, disk.mode) != (new, review.new.mode) if disk is not None else review.new.exists
        except safefs.TooBig:  # bigger than any version the store holds: not the agent's
            review.edited = True
        links = "120000" in (review.old.mode, review.new.mode)
        review.binary = b"\0" in old[:8000] or b"\0" in new[:8000] or not _utf8(old) or not _utf8(new)
        review.too_big = max(len(old), len(new)) > TEXT_LIMIT
        if review.binary or review.too_big or links:
            continue
        review.old_text = old.decode() if review.old.exists else None
        review.new_text = new.decode() if review.new.exists else None
        review.hunks = hunks_of(old.decode(), new.decode())


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def hunks_of(old: str, new: str) -> list[Hunk]:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    found: list[Hunk] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        digest = hashlib.sha256(repr((i1, a[i1:i2], b[j1:j2])).encode()).hexdigest()[:12]
        found.append(Hunk(len(found), i1, i2 - i1, j1, j2 - j1, digest))
    return found


def _lines(text: str | None) -> list[str]:
    return (text or "").splitlines(keepends=True)


def without_hunk(review: FileReview, hunk: Hunk) -> str:
    """The view's new text with `hunk` taken back out."""
    taken = _lines(review.old_text)[hunk.old_start : hunk.old_start + hunk.old_lines]
    return _splice(_lines(review.new_text), hunk.new_start, hunk.new_lines, taken)


def with_hunk(review: FileReview, hunk: Hunk) -> str:
    """The view's old text with `hunk` applied."""
    given = _lines(review.new_text)[hunk.new_start : hunk.new_start + hunk.new_lines]
    return _splice(_lines(review.old_text), hunk.old_start, hunk.old_lines, given)


def _splice(lines: list[str], start: int, count: int, replacement: list[str]) -> str:
    return "".join(lines[:start] + replacement + lines[start + count :])


# -- keep and undo -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Address:
    """What an operation applies to: one file (`path`), one hunk of it (`hunk` index and its `id`), or every file
    of the view (`path` None)."""

    path: str | None = None
    hunk: int | None = None
    hunk_id: str | None = None


async def undo(
    checkpoints: Checkpoints,
    turn: str | None,
    address: Address,
    *,
    overwrite: bool = False,
) -> ReviewResult:
    """Take the addressed change out of the workspace (see the module docstring). `overwrite`: a whole file that
    changed since goes back to the view's old version anyway (what it held is kept in the store: the step)."""
    reviews = _select(await view(checkpoints, turn), address)
    session = {r.path: r for r in await view(checkpoints, None)} if turn is not None else None
    result = ReviewResult()
    async with checkpoints.lock:
        try:
            before, external = await checkpoints.now_locked()
        except StoreError as error:
            raise ReviewError(f"The workspace can't be read: {error}") from None
        unrecorded = checkpoints.unrecorded()  # of `before`'s snapshot (see `record_step`)
        views: dict[str, tuple[str | None, str | None]] = {}
        for review in reviews:
            latest = review if session is None else session.get(review.path)
            label, why, agent_level = await checkpoints.run(_undo_one, checkpoints, review, address, overwrite, latest)
            if why is None:
                result.done.append(label)
                views[review.path] = agent_level
            else:
                result.conflicts.append((label, why))
        if result.done:
            after = await checkpoints.checkpoint(sorted(views))
            changes = await checkpoints.run(checkpoints.store_diff, before, after.tree)
            title = "Undo " + ", ".join(p if h is None else f"{p} hunk {h + 1}" for p, h in result.done)
            result.step = checkpoints.record_step(
                None, "Undo", title, "review", before, after, changes, external, views, unrecorded=unrecorded
            )
    return result


async def keep(checkpoints: Checkpoints, turn: str | None, address: Address) -> ReviewResult:
    """Accept the addressed change: the session's review baseline takes it; no file is written."""
    reviews = _select(await view(checkpoints, turn), address)
    session = {r.path: r for r in await view(checkpoints, None)} if turn is not None else None
    result = ReviewResult()
    for review in reviews:
        if session is not None and review.path not in session:  # nothing of it is pending: kept already
            result.done.append((review.path, address.hunk))
            continue
        label, baseline, why = await checkpoints.run(
            _keep_one, checkpoints, review, address, None if session is None else session[review.path]
        )
        if baseline is None:
            result.conflicts.append((label, why or "it can't be kept"))
            continue
        checkpoints.keep(review.path, baseline.blob, baseline.mode)
        result.done.append(label)
    return result


def _select(reviews: list[FileReview], address: Address) -> list[FileReview]:
    if address.path is None:
        return reviews
    chosen = [r for r in reviews if r.path == address.path]
    if not chosen:
        raise ReviewError(f"{address.path}: no change of the agent's to review there")
    if address.hunk is not None:
        review = chosen[0]
        if not review.hunks:
            raise ReviewError(
                f"{address.path}: this change is reviewed as a whole file (binary, a link, too big, or only its mode)"
            )
        if not 0 <= address.hunk < len(review.hunks):
            raise ReviewError(f"{address.path}: no hunk {address.hunk} (it has {len(review.hunks)})")
        if address.hunk_id is not None and review.hunks[address.hunk].id != address.hunk_id:
            raise ReviewError(f"{address.path}: hunk {address.hunk} changed since it was shown; look again")
    return chosen


def _undo_one(
    checkpoints: Checkpoints, review: FileReview, address: Address, overwrite: bool, latest: FileReview | None
) -> tuple[Done, str | None, tuple[str | None, str | None]]:
    """(its label, why nothing was written or None, the agent's version of the file after it: what the session's
    view shows from now on). `latest`: the file in the session's view (the same as `review` there)."""
    store, root = checkpoints.store, str(checkpoints.workspace)
    assert store is not None
    hunk = review.hunks[address.hunk] if address.hunk is not None else None
    label = (review.path, None if hunk is None else hunk.index)
    try:
        disk = files.read(root, review.path, store.max_file_bytes)
    except safefs.TooBig:
        return label, "the file is bigger now than any version a checkpoint holds: it can't be undone", (None, None)
    if hunk is None and (review.old_text is None or review.new_text is None or review.status == "mode"):
        return label, *_undo_whole(checkpoints, review, disk, overwrite)
    assert review.new_text is not None and review.old_text is not None
    target = review.old_text if hunk is None else without_hunk(review, hunk)
    ours = disk.data if disk is not None else b""
    if disk is not None and disk.data == review.new_text.encode():
        merged, clean = target.encode(), True
    else:
        merged, clean = store.merge(ours, review.new_text.encode(), target.encode(), ("yours", "agent", "undone"))
    if not clean:
        return label, "the file changed there since: it can't be undone without losing your edit", (None, None)
    if disk is None:
        mode = review.old.mode if hunk is None else review.new.mode
    else:
        mode = review.old.mode if hunk is None and disk.mode == review.new.mode else disk.mode
    files.write(root, review.path, files.Entry(merged, mode or "100644"))
    agent = target.encode()
    if latest is not review and latest is not None and latest.new_text is not None:
        agent, clean = store.merge(
            latest.new_text.encode(), review.new_text.encode(), agent, ("session", "turn", "undone")
        )
        agent = agent if clean else merged
    return label, None, (store.write_blob(agent), mode)


def _undo_whole(
    checkpoints: Checkpoints,
    review: FileReview,
    disk: files.Entry | None,
    overwrite: bool,
) -> tuple[str | None, tuple[str | None, str | None]]:
    store, root = checkpoints.store, str(checkpoints.workspace)
    assert store is not None
    new = store.read_blobs([review.new.blob])[review.new.blob] if review.new.blob else None
    unchanged = (disk is None and new is None) or (
        disk is not None and new is not None and (disk.data, disk.mode) == (new, review.new.mode)
    )
    if not unchanged and not overwrite:
        return "the file changed since: undo it anyway with overwrite (what it holds stays in the checkpoints)", (
            None,
            None,
        )
    if review.old.blob is None:
        files.remove(root, review.path)
    else:
        old = store.read_blobs([review.old.blob])[review.old.blob]
        files.write(root, review.path, files.Entry(old, review.old.mode or "100644"))
    return None, (review.old.blob, review.old.mode)


def _keep_one(
    checkpoints: Checkpoints,
    review: FileReview,
    address: Address,
    session: FileReview | None,
) -> tuple[Done, Version | None, str | None]:
    """(its label, the new baseline or None, why not)."""
    store = checkpoints.store
    assert store is not None
    hunk = review.hunks[address.hunk] if address.hunk is not None else None
    label = (review.path, None if hunk is None else hunk.index)
    if session is None and hunk is None:  # the session's view: its new version is the baseline now
        return label, review.new, None
    wanted = (review.new_text or "") if hunk is None else with_hunk(review, hunk)
    if session is None:
        return label, Version(store.write_blob(wanted.encode()), review.old.mode or review.new.mode), None
    # A turn's change, kept into the session's baseline (which may already differ from the turn's old version).
    if (session.old_text is None and session.old.exists) or (review.old_text is None and review.old.exists):
        return label, None, "binary or too big: keep it from the session's view"
    baseline = (session.old_text or "").encode()
    merged, clean = store.merge(
        baseline, (review.old_text or "").encode(), wanted.encode(), ("baseline", "turn", "kept")
    )
    if not clean:
        return label, None, "it overlaps other changes under review: keep it from the session's view"
    return label, Version(store.write_blob(merged), session.old.mode or review.new.mode), None
