"""The MCP SDK as our connections use it: imported off the event loop, its client session declaring what we
serve, its read stream watched for the end, and the error inside its exception groups."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

log = logging.getLogger(__name__)

_SDK_MODULES = (
    "mcp.client.session",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.auth",
    "mcp.shared._httpx_utils",
)
import_seconds: float | None = None  # how long the SDK took to import (None: not imported by us yet)


async def load_sdk() -> None:
    """Import the SDK in a worker thread (~0.6 s, more on a busy machine): the event loop keeps serving."""
    global import_seconds
    if import_seconds is not None:
        return

    def load() -> float:
        import importlib

        started = time.perf_counter()
        for module in _SDK_MODULES:
            importlib.import_module(module)
        return time.perf_counter() - started

    seconds = await asyncio.to_thread(load)
    if import_seconds is None:
        import_seconds = seconds
        log.info("mcp SDK imported in %.2f s", seconds)


class Closed(Exception):
    """The server ended the connection (the process exited, the HTTP session closed)."""


class Watched:
    """The transport's read stream, telling `closed` when it ends; everything else passed through (including
    `last_context`, which the SDK uses to pause a request's clock while a person answers)."""

    def __init__(self, inner: Any, closed: anyio.Event) -> None:
        self._inner = inner
        self._closed = closed

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed.set()
            raise

    async def aclose(self) -> None:
        self._closed.set()
        await self._inner.aclose()

    def __aiter__(self) -> Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def innermost(error: BaseException) -> BaseException | None:
    """The first error that is not a cancellation inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        leaves = [innermost(e) for e in error.exceptions]
        real = [e for e in leaves if e is not None and not isinstance(e, asyncio.CancelledError)]
        return real[0] if real else (leaves[0] if leaves else None)
    return error


@functools.cache
def session_class() -> type[ClientSession]:
    """The SDK's client session, declaring `roots` without `listChanged` (the SDK claims it whenever roots are
    served): a connection's roots are fixed — they are part of the key it is shared by — so no
    `notifications/roots/list_changed` is ever sent, and promising them would be false. The capabilities
    declared are asserted in tests/test_mcp_client.py, which fails if the SDK stops calling this hook."""
    import mcp.types as types
    from mcp.client.session import ClientSession

    class FixedRootsSession(ClientSession):
        def _build_capabilities(self, version: str) -> types.ClientCapabilities:
            declared = super()._build_capabilities(version)
            if declared.roots is None:
                return declared
            return declared.model_copy(update={"roots": types.RootsCapability()})

    return FixedRootsSession


def has_capability(session: ClientSession, what: str) -> bool:
    caps = session.server_capabilities
    return caps is not None and getattr(caps, what, None) is not None


def bridge_version() -> str:
    from bridge import __version__

    return str(__version__)
