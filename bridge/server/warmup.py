"""Start-up of `serve` and `acp` after `initialize` is answered: the rest of the bridge loads in steps, one turn
of the event loop each, so a request that arrives meanwhile is answered in order between them; the anthropic SDK,
when no wire profile covers it, loads on a thread of its own (`sdk_loaded` is what a prompt waits for), and so do
the sandbox's once-per-process checks."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Right after `initialize` is answered: load what the first session and prompt need before they come — in
    steps, each its own turn of the event loop, so a request that arrives meanwhile is served between two steps,
    in order. The anthropic SDK (only when no wire profile covers it) takes seconds to import: it loads on a
    worker thread, never on the loop (a prompt waits for it, `sdk_loaded`; nothing else does). Everything else
    is imported here, on the loop, before that thread starts, so the two never import the same modules at once
    (Python's import locks)."""
    loop = asyncio.get_running_loop()
    steps: list[Callable[[], None]] = [_load_domain, _warm_sandbox, _load_transport]

    def step(index: int) -> None:
        try:
            steps[index]()
        except Exception:  # reported when a request needs it
            log.exception("warm-up failed")
            return
        if index + 1 < len(steps):
            loop.call_soon(step, index + 1)

    loop.call_soon(step, 0)


def _load_domain() -> None:
    import bridge.agent  # noqa: F401


def _warm_sandbox() -> None:
    """The first command's once-per-process checks, on a thread of their own (they wait on the kernel, and import
    nothing: `_load_domain` did)."""
    from bridge.execution.sandbox import warm_up

    threading.Thread(target=warm_up, name="sandbox-warm-up", daemon=True).start()


_sdk_import: concurrent.futures.Future[None] | None = None


def _load_transport() -> None:
    global _sdk_import
    from bridge.model import direct

    if direct.supported() is None:
        direct.prepare()
    elif _sdk_import is None and "anthropic" not in sys.modules:
        future: concurrent.futures.Future[None] = concurrent.futures.Future()

        def load() -> None:
            try:
                import anthropic  # noqa: F401
            except BaseException as error:  # the prompt that needs it imports it again, and reports
                log.warning("importing the anthropic SDK failed: %s", error)
            future.set_result(None)

        threading.Thread(target=load, name="anthropic-import", daemon=True).start()
        _sdk_import = future


def sdk_loading() -> bool:
    """The SDK's import is under way on its thread."""
    return _sdk_import is not None and not _sdk_import.done()


async def sdk_loaded() -> None:
    """The SDK's import, if one is under way on its thread, has ended (the loop stays free meanwhile)."""
    if _sdk_import is not None:
        await asyncio.wrap_future(_sdk_import)
