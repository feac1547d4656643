"""A session's checkpoints: a snapshot before and after each step that can change files, attributed to its call
and prompt, in the session's log; rewinds and reviews (bridge/checkpoints/rewind.py, review.py) read them.

Snapshots are taken one at a time, in order (an asyncio lock: FIFO), with git in a worker thread. The snapshot
after a step that was cancelled is taken in the background: the cancel answers at once, and the next step's
snapshot waits for it. A file tool's step (kind `edit` with locations) looks only at its paths; any other step
(a command, an MCP tool) scans the workspace. The first snapshot of a session starts with the session
(`warm`), so the first step does not wait for a cold index.

When the store can't work (no git, a workspace too big) the session says so once and goes on without
checkpoints: `enabled` is False and every call here does nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import stat
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio

from bridge.abort import Abort, cancel_on_abort
from bridge.checkpoints.log import Effect, Keep, Step, StepKind, StepLog, TurnMark
from bridge.checkpoints.store import (
    EMPTY_TREE,
    SOMEWHERE,
    Change,
    SessionIndex,
    Skipped,
    Snapshot,
    Store,
    StoreError,
    stoppable,
)
from bridge.transcript import private_dir, private_opener

log = logging.getLogger(__name__)

T = TypeVar("T")
CLOSE_WAIT = 10.0  # seconds a closing session waits for its last snapshots
OFF_ENV = "AGENT_BRIDGE_CHECKPOINTS"  # `0`: no checkpoints (no rewind of the code, no /changes)
CHAIN_EVERY = 16  # step trees chained on the session's ref in one commit
Waiter = Callable[[], Awaitable[Any]]  # what waits for a background command's end


@dataclass(frozen=True)
class StepCall:
    """What a step is, as the session tells it: the call and what the tool says of it."""

    call: str
    tool: str
    title: str
    kind: str
    paths: Sequence[str] | None = None  # workspace-relative paths it may change; None: it may change anything
    agent: str | None = None
    outside: str | None = None  # what it may do that no checkpoint undoes


class Checkpoints:
    def __init__(
        self,
        store: Store | None,
        name: str,
        log_path: Path | None,
        *,
        tell: Callable[[str], None] = lambda _text: None,
        problem: str | None = None,
    ) -> None:
        """`store` None: checkpoints are off (`problem` says why; told once, at the first step)."""
        self.store = store
        self.index = SessionIndex(store, name) if store is not None else None
        self.log = StepLog(log_path)
        self.turn: str | None = None
        self._tell = tell
        self._problem = problem
        self._told = False
        self._lock = asyncio.Lock()
        self._tree: str | None = None  # the last snapshot's tree (what the index holds)
        # The tree the log accounts for: the last recorded step's after (a reopened session's, from its log: what
        # changed while it was closed is then the user's, as it should be).
        self._accounted: str | None = next((s.after for s in reversed(self.log.steps)), None)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._afters: set[asyncio.Task[Any]] = set()  # the snapshots after calls that ran (`step`): their steps
        self._waiting: set[asyncio.Task[Any]] = set()  # background commands' ends awaited
        self._running: dict[str, StepCall] = {}
        self._warming = False
        self._warm: asyncio.Task[Any] | None = None  # the first snapshot, taken in the background (`warm`)
        self._working = threading.Condition()  # `_workers`: the worker threads (`run`) running now
        self._workers = 0
        self._closed = False
        self._given_up = False  # closing, told to stop waiting (`give_up`)
        self._accounted_at = 0.0  # when `_accounted` was recorded (0: before any step; `_moved_in`'s start)
        self._accounted_holes: dict[str, str] = {}  # where the snapshot of `_accounted` did not look (as far as known)
        self._unchained: list[str] = []  # step trees not on the session's ref yet
        self._chained_last: str | None = None

    @classmethod
    def open(
        cls, data_dir: Path, workspace: Path, session_id: str, *, tell: Callable[[str], None], **limits: int
    ) -> Checkpoints:
        log_path = data_dir / "sessions" / session_id / "checkpoints.jsonl"
        if os.environ.get(OFF_ENV) == "0":  # the user's choice: off, and nothing to tell
            off = cls(None, session_id, log_path, tell=tell, problem=f"turned off ({OFF_ENV}=0)")
            off._told = True
            return off
        try:
            store = Store.for_workspace(data_dir, workspace, **limits)
        except (StoreError, OSError) as error:
            log.warning("checkpoints off for %s: %s", workspace, error)
            return cls(None, session_id, log_path, tell=tell, problem=str(error))
        return cls(store, session_id, log_path, tell=tell)

    @property
    def enabled(self) -> bool:
        return self.index is not None and self._problem is None

    @property
    def workspace(self) -> Path | None:
        return self.store.workspace if self.store is not None else None

    def relative(self, path: str | Path) -> str | None:
        """`path` as the store names it (relative to the workspace's real path), or None: outside it."""
        if self.store is None:
            return None
        full = os.path.join(self.store.workspace, path)
        parent, name = os.path.split(os.path.abspath(full))
        with contextlib.suppress(OSError):
            parent = os.path.realpath(parent)
        relative = os.path.relpath(os.path.join(parent, name), self.store.workspace)
        return None if relative == "." or relative.startswith("..") else relative.replace(os.sep, "/")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in a worker thread. A cancel stops the git it is waiting for (store.stoppable) and answers
        at once; the thread ends within moments (the next snapshot waits for it: the index's own lock)."""
        stop = threading.Event()

        def call() -> T:
            with self._working:
                self._workers += 1
            try:
                if stop.is_set():  # cancelled before it began: nothing of it runs (`_threads_done`)
                    raise StoreError("stopped (cancelled)")
                with stoppable(stop):
                    return fn(*args)
            finally:
                with self._working:
                    self._workers -= 1
                    self._working.notify_all()

        try:
            return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except BaseException:
            stop.set()
            raise

    def _threads_done(self, timeout: float) -> bool:
        """Wait until no worker thread of this session's runs (at most `timeout` s); whether none does."""
        with self._working:
            return self._working.wait_for(lambda: self._workers == 0, timeout)

    # -- the session's hooks ------------------------------------------------------------------------------------

    async def _first(self) -> None:
        async with self._lock:
            if self._tree is None:
                try:
                    await self._checkpoint(None)
                except StoreError as error:
                    self._off(str(error))

    def warm(self) -> None:
        """The session's first snapshot, in the background, from now: when the session opens (its git runs while
        the rest of the session is set up, and, in an editor, while the user writes the prompt), else at its
        first turn. What changes after it and before a call is the user's, as between any two calls."""
        if not self.enabled or self._tree is not None or self._warming:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # opened outside an event loop: the first turn starts it
            return
        self._warming = True
        self._warm = self._background(self._first())

    def turn_started(self, turn: str) -> None:
        """A prompt starts: its anchor in the log; the session's first snapshot, if it has not started yet."""
        self.turn = turn
        if self.enabled:
            self.log.add(TurnMark(turn))
            self.warm()

    def effect(self, call: str, text: str) -> None:
        """A call that changes no file but can't be undone (a network request), named by a later rewind."""
        if self.enabled:
            self.log.add(Effect(self.turn, call, text))

    @contextlib.asynccontextmanager
    async def step(
        self,
        call: StepCall,
        *,
        aborted: Callable[[], bool] = lambda: False,
        abort: Abort | None = None,
    ) -> AsyncIterator[Callable[[Waiter | None], None]]:
        """Brackets one call: the snapshot before, then after (in the background when it was cancelled). Yields
        `ended(waiter)`: a background command's call passes what waits for its end, for one more checkpoint then.
        `abort` (the call's signal) ends the waits for a snapshot at once: before the call, the snapshot is given
        up (the call does not start: the executor looks at the signal); after it, the snapshot goes on in the
        background (attack round 26: a folder's costly `.gitignore` held a cancel for the whole snapshot)."""
        if not self.enabled:
            yield lambda _waiter: None
            return
        turn = self.turn
        waiters: list[Waiter] = []
        before = None
        with cancel_on_abort(abort) if abort is not None else contextlib.nullcontext():
            before = await self._before(call)
        if before is None:
            yield lambda _waiter: None
            return
        self._running[call.call] = call
        cancelled = False
        try:
            yield lambda waiter: waiters.append(waiter) if waiter is not None else None
        except BaseException as error:
            cancelled = not isinstance(error, Exception)
            raise
        finally:
            self._running.pop(call.call, None)
            ending = self._background(self._after(call, turn, before, interrupted=cancelled or aborted()))
            self._afters.add(ending)
            ending.add_done_callback(self._afters.discard)
            if not (cancelled or aborted()):
                with cancel_on_abort(abort) if abort is not None else contextlib.nullcontext():
                    await asyncio.shield(ending)
            for waiter in waiters:
                self._await_end(call, turn, waiter)

    async def _before(self, call: StepCall) -> _Before | None:
        started = time.time()
        async with self._lock:
            try:
                shot = await self._checkpoint(call.paths)
            except StoreError as error:
                self._off(str(error))
                return None
            assert self.index is not None
            external = await self.run(self.store_diff, self._accounted or shot.tree, shot.tree)
            unrecorded = self.index.unrecorded()
            return shot, external, unrecorded, await self.run(self._left_out_files, unrecorded), started

    async def _after(
        self,
        call: StepCall,
        turn: str | None,
        before: _Before,
        *,
        interrupted: bool,
    ) -> None:
        shot, external, unrecorded, left_out, started = before
        async with self._lock:
            try:
                after = await self._checkpoint(call.paths)
                changes = await self.run(self.store_diff, shot.tree, after.tree)
            except StoreError as error:
                self._off(str(error))
                return
            changes, unknown = _known_before(changes, unrecorded)
            changes, moved = self._moved_in(changes, started, left_out)
            skipped = [*shot.skipped, *after.skipped, *unknown, *moved]
            self._record_call(call, turn, shot.tree, after.tree, changes, external, skipped, interrupted=interrupted)

    def _await_end(self, call: StepCall, turn: str | None, waiter: Waiter) -> None:
        """Once the background command ends, one more checkpoint. The wait is not a snapshot in progress: what
        waits for the snapshots (`settle`) does not wait for it, and a closing session drops it."""

        async def wait() -> None:
            with contextlib.suppress(Exception):
                await waiter()
            self._background(self._at_end(call, turn))

        task = asyncio.get_running_loop().create_task(wait())
        self._waiting.add(task)
        task.add_done_callback(self._waiting.discard)

    async def _at_end(self, call: StepCall, turn: str | None) -> None:
        """A background command ended: what changed since the last step is its doing, or the user's (both ran
        meanwhile): the step is marked `background`, and a rewind asks before undoing it."""
        async with self._lock:
            last = self._accounted or EMPTY_TREE
            # where the snapshot of `last` did not look, and the latest one (a later snapshot, a rewind's preview,
            # may have looked again since): more left out is only more kept
            unrecorded = {**self._accounted_holes, **(self.index.unrecorded() if self.index is not None else {})}
            try:
                after = await self._checkpoint(None)
                changes = await self.run(self.store_diff, last, after.tree)
            except StoreError as error:
                self._off(str(error))
                return
            changes, unknown = _known_before(changes, unrecorded)
            changes, moved = self._moved_in(changes, self._accounted_at, [])
            skipped = [*after.skipped, *unknown, *moved]
            self._record_call(call, turn, last, after.tree, changes, [], skipped, background=True)

    def _left_out_files(self, unrecorded: Mapping[str, str]) -> list[str]:
        """The regular files among the places a snapshot left out (at most MAX_LEFT_OUT_FILES)."""
        if self.store is None:
            return []
        files: list[str] = []
        for path in unrecorded:
            if len(files) >= MAX_LEFT_OUT_FILES:
                break
            with contextlib.suppress(OSError, ValueError):
                if stat.S_ISREG(os.lstat(os.path.join(self.store.workspace, path)).st_mode):
                    files.append(path)
        return files

    def _moved_in(
        self, changes: list[Change], started: float, left_out: Sequence[str]
    ) -> tuple[list[Change], list[Skipped]]:
        """The changes, but for the new files that may be a file the snapshots never saw, moved or copied in: the
        step made such a file go (`cp secrets.env config/x && rm secrets.env` of an ignored one), or the new file is
        older than the step (`mv build/signing.key .` out of an ignored folder keeps its time). Deleting one would
        delete the only copy of the user's file (attack rounds 18 and 19). They are named unknown and kept; a file
        a step truly made that way is left for the person to delete."""
        if self.store is None or not any(c.old is None for c in changes):
            return changes, []
        workspace = self.store.workspace
        gone = next((p for p in left_out if not os.path.lexists(os.path.join(workspace, p))), None)
        known: list[Change] = []
        moved: list[Skipped] = []
        for change in changes:
            why = None
            if change.old is None and gone is not None:
                why = f"{gone!r}, which the snapshots left out, went in this call: this may be it, moved or copied"
            elif change.old is None:
                with contextlib.suppress(OSError, ValueError):
                    if os.lstat(os.path.join(workspace, change.path)).st_mtime < started - MOVED_SLACK_S:
                        why = "it is older than this call: it came from where the snapshots did not look, moved"
            if why is None:
                known.append(change)
            else:
                moved.append(Skipped(change.path, f"{UNKNOWN_BEFORE} ({why}); a rewind leaves it as it is"))
        return known, moved

    def _record_call(
        self,
        call: StepCall,
        turn: str | None,
        before: str,
        after: str,
        changes: list[Change],
        external: list[Change],
        skipped: list[Skipped],
        *,
        interrupted: bool = False,
        background: bool = False,
    ) -> None:
        """A tool call's step: what it changed between the trees `before` and `after`."""
        number = self.log.next_number()
        head = (number, turn, call.call, call.tool, call.title, call.kind, before, after)
        self._record(Step(*head, changes, external, skipped, call.agent, call.outside, interrupted, background))

    async def now(self) -> tuple[str, list[Change]]:
        """A snapshot of the workspace now, and what changed outside any step since the last one (not recorded:
        the next step's `external` still says it)."""
        async with self._lock:
            return await self.now_locked()

    async def now_locked(self) -> tuple[str, list[Change]]:
        shot = await self._checkpoint(None)
        return shot.tree, await self.run(self.store_diff, self._accounted or shot.tree, shot.tree)

    def unrecorded(self) -> dict[str, str]:
        """Where the last snapshot did not look (`SessionIndex.unrecorded`): taken right after `now_locked`, what a
        user's step (`record_step`) finds appear there may have been there all along."""
        return self.index.unrecorded() if self.index is not None else {}

    @property
    def lock(self) -> asyncio.Lock:
        """The lock every snapshot takes (a rewind holds it while it writes files)."""
        return self._lock

    def record_step(
        self,
        turn: str | None,
        name: str,
        title: str,
        kind: StepKind,
        before: str,
        after: Snapshot,
        changes: list[Change],
        external: list[Change],
        views: dict[str, tuple[str | None, str | None]],
        *,
        unrecorded: Mapping[str, str],
    ) -> int:
        """A step of the user's own (a rewind, an undo; `name` shows as its tool), with the lock held by the
        caller. Its number. `unrecorded`: where the snapshot of `before` did not look — a file the step makes
        appear there (a rewind that restored a `.gitignore` un-ignores the user's `secrets.env`) is no file the
        step made, and a later rewind or undo of it must not delete it (attack round 18)."""
        number = self.log.next_number()
        changes, unknown = _known_before(changes, unrecorded)
        head = (number, turn, "", name, title, kind, before, after.tree)
        self._record(Step(*head, changes, external, [*after.skipped, *unknown], views=views, at=time.time()))
        return number

    def keep(self, path: str, blob: str | None, mode: str | None) -> None:
        self.log.add(Keep(path, blob, mode))

    async def checkpoint(self, paths: Sequence[str] | None) -> Snapshot:
        """A snapshot, with the lock held by the caller."""
        return await self._checkpoint(paths)

    # -- internals ----------------------------------------------------------------------------------------------

    async def _checkpoint(self, paths: Sequence[str] | None) -> Snapshot:
        """A snapshot (of `paths` only, once a whole one was taken: a partial first one would make the rest of
        the workspace look new at the next whole one)."""
        assert self.index is not None
        shot = await self.run(self.index.snapshot, paths if self._tree is not None else None)
        self._tree = shot.tree
        if self._accounted is None:
            self._accounted = shot.tree
        return shot

    def store_diff(self, old: str, new: str) -> list[Change]:
        assert self.store is not None
        return self.store.diff(old, new)

    def tree_entries(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        assert self.store is not None
        return self.store.entries(tree, paths)

    def _record(self, step: Step) -> None:
        step.at = time.time()
        self._accounted = step.after
        self._accounted_holes = self.index.unrecorded() if self.index is not None else {}
        self._accounted_at = step.at
        self.log.add(step)
        for tree in (step.before, step.after):
            if tree not in self._unchained and tree != self._chained_last:
                self._unchained.append(tree)
        if len(self._unchained) >= CHAIN_EVERY:
            self._background(self._chain())

    async def _chain(self) -> None:
        """The trees of the steps since the last time, in one commit on the session's ref (so a gc of the store
        keeps them): batched, as a commit costs more than a snapshot's share of the machine."""
        trees, self._unchained = self._unchained, []
        if not trees or self.index is None:
            return
        steps = [s.number for s in self.log.steps[-len(trees) :]]
        message = json.dumps({"session": self.index.name, "steps": [steps[0], steps[-1]] if steps else []})
        with contextlib.suppress(StoreError):
            await self.run(self.index.record, trees, message)
            self._chained_last = trees[-1]

    def _background(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("checkpoint failed")

        def done(task: asyncio.Task[Any]) -> None:
            self._tasks.discard(task)
            work.close()  # (cancelled before it began: never awaited, and said so at exit)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(done)
        return task

    def _off(self, problem: str) -> None:
        """The store failed: no more checkpoints this session; said once."""
        log.warning("checkpoints off: %s", problem)
        self._problem = problem
        self.tell_problem()

    def tell_problem(self) -> None:
        if self._problem is not None and not self._told:
            self._told = True
            self._tell(f"Checkpoints are off: {self._problem}")

    @property
    def problem(self) -> str | None:
        return self._problem

    async def fork_to(self, data_dir: Path, session_id: str) -> None:
        """Give a forked session this one's checkpoints: its log (the steps happened in the same workspace), a
        warm index, and its ref."""
        await self.settle()
        target = data_dir / "sessions" / session_id / "checkpoints.jsonl"
        async with self._lock:
            if self.log.path is not None and self.log.path.is_file():
                private_dir(target.parent)
                await self.run(_private_copy, self.log.path, target)
            if self.index is not None and self.store is not None and self.enabled:
                index = self.index
                with contextlib.suppress(OSError, StoreError):
                    if index.path.exists():
                        await self.run(_private_copy, index.path, index.path.with_name(f"index-{session_id}"))
                    head = await self.run(lambda: index.head)
                    if head is not None:
                        await self.run(self.store.set_ref, session_id, head)

    async def settle(self) -> None:
        """Every snapshot started so far is taken, and every step's trees are on the session's ref (a test's, a
        fork's or a closing session's wait)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._unchained:
            await self._chain()

    def give_up(self) -> bool:
        """Stop waiting for the snapshots still being taken (a second Ctrl-C while the session closes): each is
        cancelled, its git stopped; the call it was for is in no step, which no rewind can undo. Whether one was."""
        pending = [task for task in (*self._afters, *self._tasks) if not task.done()]
        if pending:
            self._given_up = True
            for task in pending:
                task.cancel()
        return bool(pending)

    async def close(self) -> None:
        """The last snapshots written and chained; a store with many loose objects is packed (with deltas: a
        changed line of a big file then costs about its own size, not the file's)."""
        if self._closed:
            return
        self._closed = True
        for task in list(self._waiting):  # a background shell still running: its end is the next session's
            task.cancel()
        # no step recorded (never prompted, or cancelled before any call that changes files ran): its first snapshot
        # is no one's; its git is stopped (a session opened and closed in a big folder waited up to CLOSE_WAIT, and
        # a `run` cancelled during it too: attack round 26)
        stopped = not self.log.steps and self._warm is not None and not self._warm.done()
        if stopped and self._warm is not None:
            self._warm.cancel()
        # A call's step is waited for whole, however long its snapshot takes (its git has its own time limits): a
        # `run` cancelled during a slow one exits when it is taken, else the call's changes would be in no step and
        # no rewind could undo them (round 26's verification, my regression); the rest, up to CLOSE_WAIT.
        while self._afters:
            await asyncio.gather(*list(self._afters), return_exceptions=True)
        if not self._given_up:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.settle(), CLOSE_WAIT)
        if stopped or self._given_up:  # and its thread is done with the store before the session is (its git
            # killed, it ends at once: a test's data dir was removed while it still wrote there)
            await anyio.to_thread.run_sync(self._threads_done, CLOSE_WAIT)
        self.log.close()
        if self.store is not None and self.enabled and self._tree is not None and not self._given_up:
            with contextlib.suppress(StoreError, OSError):
                await self.run(self.store.pack_if_loose)


UNKNOWN_BEFORE = "what it was before this call is not in the checkpoints"
# what a step's `_before` took: its snapshot, the changes made outside steps since, where it did not look, the
# regular files there (`_left_out_files`), and when (time.time())
_Before = tuple[Snapshot, list[Change], dict[str, str], list[str], float]
MOVED_SLACK_S = 2.0  # a new file modified this long before its step began was there before it, somewhere unseen
MAX_LEFT_OUT_FILES = 10_000  # left-out regular files looked at again after a step (one lstat each)


def _known_before(changes: list[Change], unrecorded: Mapping[str, str]) -> tuple[list[Change], list[Skipped]]:
    """The changes whose earlier version is known, and the others, named as left out. A file a step makes appear is
    new only where the snapshot before it looked and found nothing; in a place that snapshot left out (`unrecorded`:
    ignored, a nested repository, too big, unreadable) or behind what was a link then, it may have been there all
    along, and no tree holds what it was. Those are never planned as new files: a rewind deleted a 15 MB file a
    command had rewritten, a `secrets.env` a command un-ignored (editing a `.gitignore` that ignored itself too, so
    that no change named it), and the files of a nested repository whose `.git` a command removed."""
    links = {c.path for c in changes if c.old_mode == "120000" and c.new_mode != "120000"}
    known: list[Change] = []
    unknown: list[Skipped] = []
    for change in changes:
        why = None if change.old is not None else _left_out_before(change.path, unrecorded, links)
        if why is None:
            known.append(change)
        else:
            unknown.append(Skipped(change.path, f"{UNKNOWN_BEFORE} ({why}); a rewind leaves it as it is"))
    return known, unknown


def _left_out_before(path: str, unrecorded: Mapping[str, str], links: set[str]) -> str | None:
    """Why the snapshot before a step has no word of `path` (None: it looked there, and there was nothing): the
    path itself, or a folder on its way, was left out; or a folder on its way was a link (what was behind it was
    another place's, in no snapshot)."""
    if SOMEWHERE in unrecorded:
        return f"the snapshot before this call did not look everywhere: {unrecorded[SOMEWHERE]}"
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        place = "/".join(parts[:depth])
        if place in unrecorded:
            where = "it" if place == path else f"{place}, where it is"
            return f"the snapshot before this call did not look at {where}: {unrecorded[place]}"
        if depth < len(parts) and place in links:
            return f"{place}, where it is, was a link before this call: what was behind it is in no snapshot"
    return None


def skipped_text(skipped: list[Skipped]) -> list[str]:
    return [f"{s.path}: {s.why}" for s in skipped]


def _private_copy(source: Path, target: Path) -> None:
    """A copy of a file of the data dir, its owner's alone like the original (`copyfile` makes it with the umask's
    mode)."""
    with open(source, "rb") as src, open(target, "wb", opener=private_opener) as out:
        shutil.copyfileobj(src, out)
