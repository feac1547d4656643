"""The one way tests wait: poll a predicate until it holds, with a deadline (no fixed sleeps)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any


async def poll(
    predicate: Callable[[], Any],
    *,
    timeout: float = 10.0,
    what: str = "condition",
    interval: float = 0.005,
    changed: asyncio.Event | None = None,
) -> Any:
    """`predicate()`'s first truthy value; TimeoutError naming `what` after `timeout` s. Checked every
    `interval` s, or — given `changed`, an event set whenever what the predicate reads changes — at once on it."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        if changed is None:
            await asyncio.sleep(min(interval, left))
        else:
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(left, 0.25))
    return value
