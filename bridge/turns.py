"""One turn at a time: a new prompt interrupts the running turn, a cancel escalates, the transcript frames each
turn, and what holds only for a turn (a skill's `allowed-tools`) is undone when it ends.

The seed's interrupt rules live here, apart from what a turn does (bridge/session.py gives `run`): the previous
turn is aborted with INTERRUPT (its `block` tools finish and keep their real results), a cancel is a ctrl-c, and
a second cancel while the first is still unwinding forces.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

from bridge.abort import Abort, AbortReason
from bridge.loop.query import StopReason
from bridge.messages import Block
from bridge.transcript import Transcript

RunTurn = Callable[[list[Block], Abort], Awaitable[StopReason]]


def new_turn_id() -> str:
    """A prompt's id: in its transcript's turn line and its checkpoints, what a rewind or a fork names."""
    return f"turn_{uuid.uuid4().hex[:16]}"


class Turns:
    def __init__(
        self, run: RunTurn, transcript: Transcript | None, started: Callable[[str], None] | None = None
    ) -> None:
        self._run = run
        self._transcript = transcript
        self._started = started  # told each turn's id as it starts, before its transcript line (the checkpoints)
        self.turn_id: str | None = None  # the running (or last) turn's id
        self._turn: asyncio.Task[StopReason] | None = None
        self._abort: Abort | None = None
        self._start_lock = asyncio.Lock()
        self._for_turn: list[Callable[[], None]] = []
        self._cancels = 0  # cancels so far: a prompt that waited through one does not start

    @property
    def busy(self) -> bool:
        return self._turn is not None and not self._turn.done()

    async def prompt(self, blocks: list[Block], told: Callable[[str], None] | None = None) -> StopReason:
        """Run a turn for `blocks`. A turn already running is interrupted first: its `block` tools finish and
        keep their real results, then this turn sees everything. `told`: given this turn's id as it starts (an
        editor names the prompt by it later: a rewind, a fork)."""
        cancels = self._cancels
        async with self._start_lock:
            previous = self._turn
            if previous is not None and not previous.done():
                assert self._abort is not None
                self._abort.abort(AbortReason.INTERRUPT)
                await asyncio.wait([previous])
            if self._cancels != cancels:
                # cancelled while it waited for the turn it interrupts: a cancel is for all the session has under
                # way, this prompt too (it never started: no request, nothing in the history)
                return "cancelled"
            abort = Abort()
            turn_id = new_turn_id()
            if told is not None:
                told(turn_id)
            turn = asyncio.ensure_future(self._framed(blocks, abort, turn_id))
            self._abort, self._turn = abort, turn
        try:
            return await asyncio.shield(turn)
        except asyncio.CancelledError:
            # The editor cancelled this request (`$/cancelRequest`) or went away: that is a ctrl-c.
            abort.abort(AbortReason.CTRL_C)
            with contextlib.suppress(Exception):
                await asyncio.shield(turn)
            raise

    def cancel(self, *, force: bool = False) -> bool:
        """`ctrl-c`; a second cancel while the first is still unwinding (or `force`) kills at once. A prompt
        waiting to interrupt the running turn is cancelled with it."""
        self._cancels += 1
        if self._abort is None or not self.busy:
            return False
        already = self._abort.aborted and self._abort.reason is not AbortReason.INTERRUPT
        self._abort.abort(AbortReason.FORCE if force or already else AbortReason.CTRL_C)
        return True

    async def wait_idle(self) -> None:
        if self._turn is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(self._turn)

    def hold_for_turn(self, undo: Callable[[], None]) -> None:
        """`undo` runs when the running turn ends, however it ends."""
        self._for_turn.append(undo)

    async def _framed(self, blocks: list[Block], abort: Abort, turn_id: str) -> StopReason:
        """One turn, framed in the transcript by its start and end lines (a replay shows how each turn ended)."""
        try:
            self.turn_id = turn_id
            if self._started is not None:
                self._started(self.turn_id)
            if self._transcript is None:
                return await self._run(blocks, abort)
            self._transcript.turn_started(self.turn_id)
            try:
                stop = await self._run(blocks, abort)
            except asyncio.CancelledError:
                self._transcript.turn_ended("cancelled")
                raise
            except Exception as error:
                self._transcript.turn_ended(None, str(error) or type(error).__name__)
                raise
            self._transcript.turn_ended(stop)
            return stop
        finally:
            undo, self._for_turn = self._for_turn, []
            for each in undo:
                each()
