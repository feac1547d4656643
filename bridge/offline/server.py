"""`OfflineServer`: the Anthropic Messages API on loopback, played from a scenario.

It runs its own asyncio loop in a daemon thread, so sync and async callers (and other processes) use it the
same way: over real HTTP. Every request is recorded; invalid ones get the real API's 400 and consume nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from bridge.offline import http
from bridge.offline.render import error_json, fault_error, message_json, new_id, sse_events
from bridge.offline.scenario import (
    STREAM_FAULTS,
    Json,
    RecordedRequest,
    Scenario,
    ScenarioPlayer,
    end_turn_text,
    load_scenario,
)
from bridge.offline.usage import PromptCache, estimate_tokens
from bridge.offline.validation import request_errors

log = logging.getLogger("bridge.offline")

DEFAULT_FAULT_TEXT = "This response is cut off before it ends, as a real stream sometimes is."


class OfflineServer:
    """An HTTP server speaking the Messages API from `scenario`. Use `start()`/`stop()` or `with`."""

    # The base URLs this process serves: a bridge started with `--offline` runs on the demo model, which the
    # editor shows as such (its name, no cost) instead of pretending to be Claude.
    running: ClassVar[set[str]] = set()

    def __init__(
        self, scenario: Scenario | Mapping[str, Any] | str | Path, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.scenario = load_scenario(scenario)
        self.host = host
        self.port = port
        self._player = ScenarioPlayer(self.scenario)
        self._cache = PromptCache()
        self._requests: list[RecordedRequest] = []
        self._other_requests: list[RecordedRequest] = []
        self._active_streams = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    # ---- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> str:
        if self._thread is not None:
            return self.base_url
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(ready, failure), name="offline-api", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise RuntimeError(f"offline server could not listen on {self.host}:{self.port}") from failure[0]
        log.info("offline API (scenario %s) listening on %s", self.scenario.name, self.base_url)
        OfflineServer.running.add(self.base_url)
        return self.base_url

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None:
            OfflineServer.running.discard(self.base_url)
        if loop is None or thread is None:
            return
        if self._stopped is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already finished
                loop.call_soon_threadsafe(self._stopped.set)
        thread.join()
        self._thread = None

    def __enter__(self) -> OfflineServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._loop is None:
            raise RuntimeError("the offline server is not started")
        return f"http://{self.host}:{self.port}"

    # ---- what tests look at ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every `/v1/messages` request, in order of arrival (rejected ones included)."""
        return list(self._requests)

    @property
    def valid_requests(self) -> list[RecordedRequest]:
        return [r for r in self._requests if 200 <= r.status < 300]

    @property
    def rejected(self) -> list[RecordedRequest]:
        return [r for r in self._requests if r.status == 400]

    @property
    def other_requests(self) -> list[RecordedRequest]:
        """Requests to any other path (count_tokens, models, unknown paths, unreadable HTTP)."""
        return list(self._other_requests)

    @property
    def active_streams(self) -> int:
        return self._active_streams

    def _timeout_message(self, n: int, timeout: float) -> str:
        seen = [
            f"#{i} status={r.status}{' errors=' + '; '.join(r.errors) if r.errors else ''}"
            for i, r in enumerate(self._requests)
        ]
        return (
            f"offline server (scenario {self.scenario.name}): waited {timeout}s for {n} requests, "
            f"got {len(self._requests)}: {', '.join(seen) or 'none'}"
        )

    async def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while len(self._requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(self._timeout_message(n, timeout))
            await asyncio.sleep(0.005)
        return self.requests

    def wait_for_requests_sync(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while len(self._requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(self._timeout_message(n, timeout))
            time.sleep(0.005)
        return self.requests

    # ---- the loop thread -------------------------------------------------------------------------------

    def _run(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._serve(ready))
        except BaseException as exc:  # reported to start()'s caller
            failure.append(exc)
        finally:
            ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, ready: threading.Event) -> None:
        self._stopped = asyncio.Event()
        server = await asyncio.start_server(self._on_connection, self.host, self.port)
        self.port = server.sockets[0].getsockname()[1]
        self._loop = asyncio.get_running_loop()
        ready.set()
        try:
            await self._stopped.wait()
        finally:
            server.close()
            for writer in list(self._writers):
                writer.transport.abort()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await http.read_request(reader)
                except http.BadRequest as exc:
                    self._other_requests.append(RecordedRequest({}, b"", {}, path="?", status=400, errors=[str(exc)]))
                    writer.write(
                        http.response_bytes(400, error_json("invalid_request_error", str(exc)), {}, keep_alive=False)
                    )
                    break
                if request is None or not await self._dispatch(request, reader, writer):
                    break
        except (ConnectionError, asyncio.CancelledError):
            pass
        except Exception:
            log.exception("offline server: connection handler failed")
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            if self._stopped is not None and self._stopped.is_set():
                writer.transport.abort()
            else:
                writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    # ---- requests --------------------------------------------------------------------------------------

    async def _dispatch(
        self, request: http.HttpRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; True if the connection stays open for the next one."""
        record = RecordedRequest(
            body={},
            raw=request.body,
            headers=dict(request.headers),
            path=request.path,
            method=request.method,
            head=request.head,
        )
        keep_alive = request.keep_alive
        if request.method == "POST" and request.path == "/v1/messages":
            return await self._messages(request, record, reader, writer)
        self._other_requests.append(record)
        if request.method == "POST" and request.path == "/v1/messages/count_tokens":
            body = self._parse(record)
            has_fields = (
                body is not None and isinstance(body.get("messages"), list) and isinstance(body.get("model"), str)
            )
            if body is not None and not has_fields:
                record.errors.append("model and messages: Field required")
            if record.errors:
                return await self._send(
                    writer, record, 400, error_json("invalid_request_error", "; ".join(record.errors)), {}, keep_alive
                )
            return await self._send(writer, record, 200, {"input_tokens": estimate_tokens(body)}, {}, keep_alive)
        if request.method == "GET" and request.path in ("/health", "/v1/models"):
            model = {
                "type": "model",
                "id": "claude-offline",
                "display_name": "Offline scenario model",
                "created_at": "2025-01-01T00:00:00Z",
            }
            answer: Json = (
                {"ok": True, "scenario": self.scenario.name}
                if request.path == "/health"
                else {"data": [model], "has_more": False, "first_id": model["id"], "last_id": model["id"]}
            )
            return await self._send(writer, record, 200, answer, {}, keep_alive)
        message = f"{request.method} {request.path} is not served by the offline API"
        return await self._send(writer, record, 404, error_json("not_found_error", message), {}, keep_alive)

    def _parse(self, record: RecordedRequest) -> Json | None:
        try:
            body = json.loads(record.raw or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            record.errors.append(f"request body is not valid JSON: {exc}")
            return None
        if not isinstance(body, dict):
            record.errors.append("request body must be a JSON object")
            return None
        record.body = body
        return body

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        record: RecordedRequest,
        status: int,
        body: Json,
        headers: dict[str, str],
        keep_alive: bool,
    ) -> bool:
        record.status = status
        writer.write(http.response_bytes(status, body, {"request-id": new_id("req"), **headers}, keep_alive=keep_alive))
        await writer.drain()
        return keep_alive

    async def _messages(
        self,
        request: http.HttpRequest,
        record: RecordedRequest,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        keep_alive = request.keep_alive
        body = self._parse(record)
        if body is not None:
            record.errors.extend(request_errors(body))
        if record.errors:
            record.status = 400
            self._requests.append(record)
            log.warning("offline API rejected request %d: %s", len(self._requests) - 1, "; ".join(record.errors))
            return await self._send(
                writer, record, 400, error_json("invalid_request_error", "; ".join(record.errors)), {}, keep_alive
            )
        assert body is not None
        try:
            response = self._player.next_response(record)
        except Exception as exc:
            record.errors.append(f"scenario {self.scenario.name} failed: {exc!r}")
            self._requests.append(record)
            log.error("offline scenario %s failed:\n%s", self.scenario.name, traceback.format_exc())
            return await self._send(writer, record, 500, error_json("api_error", record.errors[0]), {}, keep_alive)
        record.response = response
        fault: Json = dict(response.get("fault") or {})
        kind = fault.get("type")
        if kind == "status":
            return await self._status_fault(writer, record, fault, keep_alive)
        if kind in STREAM_FAULTS and not response.get("content"):
            response = {**response, "content": [{"type": "text", "text": DEFAULT_FAULT_TEXT}]}
        usage = self._cache.usage_for(body)
        if not record.stream:
            return await self._non_stream(writer, reader, record, response, fault, usage, keep_alive)
        record.status = 200
        self._requests.append(record)
        events = sse_events(response, body, usage)
        self._active_streams += 1
        try:
            ended = await self._stream(writer, reader, events, fault)
            if ended:
                record.answered_at = time.monotonic()
            return ended and keep_alive
        finally:
            self._active_streams -= 1

    async def _status_fault(
        self, writer: asyncio.StreamWriter, record: RecordedRequest, fault: Json, keep_alive: bool
    ) -> bool:
        status, error = fault_error(fault)
        headers: dict[str, str] = {}
        retry_after = fault.get("retry_after")
        if isinstance(retry_after, (int, float)):
            headers["retry-after"] = f"{retry_after:g}"
            headers["retry-after-ms"] = f"{retry_after * 1000:g}"
        if "should_retry" in fault:
            headers["x-should-retry"] = "true" if fault["should_retry"] else "false"
        record.status = status
        self._requests.append(record)
        return await self._send(writer, record, status, error, headers, keep_alive)

    async def _non_stream(
        self,
        writer: asyncio.StreamWriter,
        reader: asyncio.StreamReader,
        record: RecordedRequest,
        response: Json,
        fault: Json,
        usage: Any,
        keep_alive: bool,
    ) -> bool:
        kind = fault.get("type")
        if kind in ("drop", "stall"):
            self._requests.append(record)  # status 0: never answered
            if kind == "stall":
                await self._until_client_gone(reader, writer)
            return False
        if kind == "sse_error":
            status, error = fault_error(fault, default_status=529)
            self._requests.append(record)
            return await self._send(writer, record, status, error, {}, keep_alive)
        if kind in ("garbage", "truncated_event"):  # a 200 whose JSON body is cut in half
            record.status = 200
            self._requests.append(record)
            whole = http.response_bytes(200, message_json(response, record.body, usage), {}, keep_alive=False)
            head, _, body = whole.partition(b"\r\n\r\n")
            writer.write(head + b"\r\n\r\n" + body[: len(body) // 2] + b" " * (len(body) - len(body) // 2))
            await writer.drain()
            return False
        delay = float(response.get("delay_ms", 0)) / 1000
        if delay:
            await asyncio.sleep(delay)
        record.status = 200
        self._requests.append(record)
        return await self._send(writer, record, 200, message_json(response, record.body, usage), {}, keep_alive)

    @staticmethod
    def _client_gone(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        return reader.at_eof() or reader.exception() is not None or writer.is_closing()

    async def _until_client_gone(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Hold the connection until the client closes it (the connection is not reused afterwards, so
        whatever it sends is discarded); the server's stop cancels this."""
        with contextlib.suppress(ConnectionError):
            while not writer.is_closing() and await reader.read(65536):
                pass

    async def _stream(
        self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader, events: list[Any], fault: Json
    ) -> bool:
        """Write the SSE events (and the fault, if any); True if the response ended cleanly."""
        kind = fault.get("type")
        if kind == "unclosed_block":
            stops = [i for i, e in enumerate(events) if e.type == "content_block_stop"]
            events = [e for i, e in enumerate(events) if not stops or i != stops[-1]]
        cut = len(events)
        if kind in ("drop", "stall", "sse_error", "garbage", "truncated_event", "unknown_event"):
            cut = max(0, min(int(fault.get("after_events", 0)), len(events) - 1))
        writer.write(http.stream_head({"request-id": new_id("req")}))
        await writer.drain()
        if not await self._write_events(writer, reader, events[:cut]):
            return False
        if kind == "drop":
            return False  # the connection handler closes the socket in the middle of the chunked body
        if kind == "stall":
            await self._until_client_gone(reader, writer)
            return False
        rest: list[Any] = []
        if kind == "sse_error":
            _, error = fault_error(fault, default_status=529)
            writer.write(http.chunk(f"event: error\ndata: {json.dumps(error)}\n\n".encode()))
        elif kind == "garbage":
            data = str(fault.get("data", '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_'))
            writer.write(http.chunk(f"event: {events[cut].type}\ndata: {data}\n\n".encode()))
            rest = events[cut:]
        elif kind == "truncated_event":
            encoded = events[cut].encode()
            writer.write(http.chunk(encoded[: max(1, len(encoded) // 2)]))
        elif kind == "unknown_event":
            name = str(fault.get("name", "future_event"))
            payload = json.dumps({"type": name, "detail": "an event type this client does not know"})
            writer.write(http.chunk(f"event: {name}\ndata: {payload}\n\n".encode()))
            rest = events[cut:]
        else:
            rest = events[cut:]
        if not await self._write_events(writer, reader, rest):
            return False
        writer.write(http.LAST_CHUNK)
        await writer.drain()
        return True

    async def _write_events(
        self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader, events: list[Any]
    ) -> bool:
        for event in events:
            if event.delay:
                await asyncio.sleep(event.delay)
            if self._client_gone(reader, writer):
                return False
            writer.write(http.chunk(event.encode()))
            await writer.drain()
        return True


__all__ = ["OfflineServer", "RecordedRequest", "end_turn_text"]
