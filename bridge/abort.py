"""The turn's single abort signal (the seed's AbortController).

One `Abort` per turn is shared by every action of that turn: the HTTP stream, each tool, each permission
wait. It carries a reason: `ctrl-c` (the user stops), `interrupt` (a new message takes over; `block` tools
finish), `force` (a second cancel: kill everything at once). A reason may only escalate
(interrupt -> ctrl-c -> force); listeners hear every escalation so process killers can skip their grace.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from enum import StrEnum

import anyio


class AbortReason(StrEnum):
    INTERRUPT = "interrupt"
    CTRL_C = "ctrl-c"
    FORCE = "force"


_RANK = {AbortReason.INTERRUPT: 0, AbortReason.CTRL_C: 1, AbortReason.FORCE: 2}

Listener = Callable[[AbortReason], None]


class Aborted(Exception):
    """Raised at a checkpoint when the turn's signal has fired."""

    def __init__(self, reason: AbortReason) -> None:
        super().__init__(f"aborted: {reason}")
        self.reason = reason


class Abort:
    def __init__(self, *, accepts: Callable[[AbortReason], bool] | None = None) -> None:
        self._reason: AbortReason | None = None
        self._event = anyio.Event()
        self._listeners: list[Listener] = []
        self._accepts = accepts

    @property
    def reason(self) -> AbortReason | None:
        return self._reason

    @property
    def aborted(self) -> bool:
        return self._reason is not None

    def abort(self, reason: AbortReason) -> None:
        """Fire (or escalate) the signal. Lower or equal reasons after the first are ignored."""
        if self._accepts is not None and not self._accepts(reason):
            return
        if self._reason is not None and _RANK[reason] <= _RANK[self._reason]:
            return
        self._reason = reason
        self._event.set()
        for listener in list(self._listeners):
            listener(reason)

    def on_abort(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` on every (escalating) abort; returns the unsubscribe function."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def child(self, accepts: Callable[[AbortReason], bool]) -> Abort:
        """A view that fires only for the reasons `accepts` lets through (e.g. not `interrupt` for a
        `block` tool). It follows this signal, including a reason that already fired."""
        view = Abort(accepts=accepts)
        if self._reason is not None:
            view.abort(self._reason)
        self.on_abort(view.abort)
        return view

    def raise_if_aborted(self) -> None:
        if self._reason is not None:
            raise Aborted(self._reason)

    async def wait(self) -> AbortReason:
        await self._event.wait()
        assert self._reason is not None
        return self._reason


@contextlib.contextmanager
def cancel_on_abort(abort: Abort) -> Iterator[anyio.CancelScope]:
    """A cancel scope cancelled when `abort` fires. Check `abort.aborted` after the block to tell an
    abort from normal completion (the scope swallows its own cancellation)."""
    with anyio.CancelScope() as scope:
        unsubscribe = abort.on_abort(lambda _reason: scope.cancel())
        if abort.aborted:
            scope.cancel()
        try:
            yield scope
        finally:
            unsubscribe()


def not_interrupt(reason: AbortReason) -> bool:
    """Filter for `block` tools: they run to the end when a new message interrupts the turn."""
    return reason is not AbortReason.INTERRUPT
