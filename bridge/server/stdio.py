"""Serving on stdio: LSP's Content-Length framing (`serve`) or ACP's one message per line (`acp`), until the client
goes away or a signal comes; then everything the bridge started is stopped."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from pygls.io_ import StdinAsyncReader, StdoutWriter

from bridge.server.app import build_server
from bridge.server.jsonrpc import LineWriter, run_until_eof, serve_lines

if TYPE_CHECKING:
    from bridge.server.fast_initialize import FirstMessage


def serve(overrides: dict[str, Any] | None = None, *, acp: bool = False, first: FirstMessage | None = None) -> int:
    """Serve on stdio until the client goes away; then kill everything we started. `acp`: ACP's own
    framing (one message per line) instead of LSP's Content-Length headers. `first`: what was read (and maybe
    answered) before the server was loaded (bridge/server/fast_initialize.py)."""
    from bridge.server.fast_initialize import AnswerFilter, FirstMessage, Replay

    first = first or FirstMessage(b"")
    server = build_server(overrides, acp=acp)
    reader = StdinAsyncReader(Replay(first.consumed, sys.stdin.buffer), server.thread_pool)  # type: ignore[arg-type]
    stdout = AnswerFilter(sys.stdout.buffer, first)
    if acp:
        server.protocol.set_writer(LineWriter(stdout), include_headers=False)
    else:
        server.protocol.set_writer(StdoutWriter(stdout))  # type: ignore[arg-type]
    stop = threading.Event()
    server._stop_event = stop
    signalled: list[int] = []

    async def main() -> None:
        reading = asyncio.current_task()
        assert reading is not None

        def on_signal(signum: int) -> None:
            """SIGINT/SIGTERM: every turn is cancelled (as Ctrl-C: commands get their escalation), then the
            process ends; another signal meanwhile kills the commands at once."""
            signalled.append(signum)
            if len(signalled) == 1:
                reading.cancel()
            elif server._agent is not None:
                server._agent.kill_processes_now()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, on_signal, signum)
        try:
            if acp:
                await serve_lines(reader, server.protocol, stop)  # type: ignore[arg-type]
            else:
                await run_until_eof(reader, server.protocol, stop)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            if not signalled:
                raise
        finally:
            if server._agent is not None:
                await server._agent.shutdown(grace=bool(signalled))

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):
        pass
    finally:
        if not signalled:  # (after a signal, stdin may still be open: its reader thread is never joined)
            server.shutdown()  # type: ignore[no-untyped-call]
    return 128 + signalled[0] if signalled else 0
