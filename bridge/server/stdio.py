"""Serving on stdio: LSP's Content-Length framing (`serve`) or ACP's one message per line (`acp`), until the client
goes away or a signal comes; then everything the bridge started is stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from bridge import codecache, gcpause

if TYPE_CHECKING:
    from bridge.server.app import BridgeServer
    from bridge.server.fast_initialize import FirstMessage


def serve(overrides: dict[str, Any] | None = None, *, acp: bool = False, first: FirstMessage | None = None) -> int:
    """Serve on stdio until the client goes away; then kill everything we started. `acp`: ACP's own
    framing (one message per line) instead of LSP's Content-Length headers. `first`: what was read (and maybe
    answered) before the server was loaded (bridge/server/fast_initialize.py); when it holds a first prompt, its
    model request goes out before the server framework loads (as `run`'s does)."""
    from bridge.server.fast_initialize import FirstMessage, catch_signals

    catch_signals(hold=True)  # until main() puts its own handlers in place
    first = first or FirstMessage(b"")
    servers: list[BridgeServer] = []
    signalled: list[int] = []
    gone: list[bool] = []  # stdout closed under us: the client is gone

    async def main() -> None:
        ahead = await _send_ahead(first)
        server = _start(overrides, acp=acp, first=first)
        gcpause.resume()  # the server is loaded (bridge/gcpause.py)
        codecache.loaded()
        server.ahead = ahead
        servers.append(server)
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
                server._agent.give_up_checkpoints()

        loop = asyncio.get_running_loop()

        def on_stdout_closed() -> None:
            """A write found stdout closed: the client is gone, as when it closes stdin. Every turn is cancelled
            and what it started stopped (commands it ran went on, unseen, while the bridge read on)."""
            if not gone:
                gone.append(True)
                logging.getLogger(__name__).warning("stdout is closed: the client is gone; stopping")
                loop.call_soon_threadsafe(reading.cancel)

        server.stdout_filter.on_closed = on_stdout_closed
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, on_signal, signum)
            except (NotImplementedError, RuntimeError):  # Windows, or not the main thread: Python's own
                with contextlib.suppress(ValueError):
                    signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL)
        from bridge.server.fast_initialize import HELD_SIGNALS

        held, HELD_SIGNALS[:] = list(HELD_SIGNALS), []
        for early in held[:2]:  # a signal that came while the server loaded (fast_initialize.catch_signals)
            on_signal(early)
        from bridge.server.jsonrpc import run_until_eof, serve_lines

        try:
            if acp:
                await serve_lines(server.reader, server.protocol, server.stop)  # type: ignore[arg-type]
            else:
                await run_until_eof(server.reader, server.protocol, server.stop)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            if not signalled and not gone:
                raise
        finally:
            if server._agent is not None:
                await server._agent.shutdown(grace=bool(signalled or gone))

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):
        pass
    finally:
        if servers and not signalled:  # (after a signal, stdin may still be open: its reader thread is never joined)
            servers[0].shutdown()  # type: ignore[no-untyped-call]
    return 128 + signalled[0] if signalled else 0


async def _send_ahead(first: FirstMessage) -> Any:
    """The first prompt's model request, sent before the server loads (bridge/first_request.py, `run`'s
    own), with the settings the early answers had (the editor's options under the command line's): the model
    client holding it (the session's takes it over), or None."""
    if first.prompt is None:
        return None
    from bridge.first_request import send_ahead

    text, cwd = first.prompt
    early = send_ahead(text, cwd, first.overrides)
    if early is None:
        return None
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(early[1].wait(), 1.0)  # written: its answer waits in the socket while we load
    return early[0]


def _start(overrides: dict[str, Any] | None, *, acp: bool, first: FirstMessage) -> BridgeServer:
    """The server, reading what was read already and then stdin, writing to stdout but for the answers sent
    already."""
    codecache.install_attrs()  # before pygls and lsprotocol make their ~560 attrs classes
    from bridge.pydantic_setup import no_plugins

    no_plugins()
    from pygls.io_ import StdinAsyncReader, StdoutWriter

    from bridge.server.app import build_server
    from bridge.server.fast_initialize import AnswerFilter, Replay
    from bridge.server.jsonrpc import LineWriter

    server = build_server(overrides, acp=acp)
    server.early_ids = dict(first.session_ids)
    server.reader = StdinAsyncReader(Replay(first.consumed, sys.stdin.buffer), server.thread_pool)  # type: ignore[arg-type]
    stdout = AnswerFilter(sys.stdout.buffer, first)
    server.stdout_filter = stdout
    if acp:
        server.protocol.set_writer(LineWriter(stdout), include_headers=False)
    else:
        server.protocol.set_writer(StdoutWriter(stdout))  # type: ignore[arg-type]
    server.stop = threading.Event()
    server._stop_event = server.stop
    return server
