"""`session/update` pacing: text and thinking deltas coalesced to one update per ~16 ms; the first
delta of a burst goes out at once; anything else flushes what is pending first, so order holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal

ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk"]


class UpdateStream:
    def __init__(self, send: Callable[[dict[str, Any]], None], *, interval: float = 0.016) -> None:
        self._send = send
        self._interval = interval
        self._pending_kind: ChunkKind | None = None
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def chunk(self, kind: ChunkKind, text: str) -> None:
        if self._pending_kind is not None and kind != self._pending_kind:
            self.flush()
        if self._timer is None:  # quiet until now: send at once, then hold a window open
            self._send(_chunk(kind, text))
            self._open_window()
            return
        self._pending_kind = kind
        self._pending.append(text)

    def update(self, update: dict[str, Any]) -> None:
        self.flush()
        self._send(update)

    def flush(self) -> None:
        if self._pending and self._pending_kind is not None:
            text = "".join(self._pending)
            kind = self._pending_kind
            self._pending.clear()
            self._pending_kind = None
            self._send(_chunk(kind, text))

    def close(self) -> None:
        self.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _open_window(self) -> None:
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._pending:
            self.flush()
            self._open_window()


def _chunk(kind: ChunkKind, text: str) -> dict[str, Any]:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
