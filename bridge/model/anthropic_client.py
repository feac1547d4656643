"""The Anthropic implementation of `ModelClient`: streaming, bounded retries, one clear error.

Requests go on the wire directly (bridge/model/direct.py: the SDK's own bytes, without importing the SDK, which
costs seconds) where the installed SDK version has a wire profile; otherwise, or when
AGENT_BRIDGE_MODEL_TRANSPORT=sdk, through the official SDK. Both give the same requests, events and errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import anyio

from bridge.messages import TOOL_USE_ID_MAX, Block, valid_tool_use_id
from bridge.model.failures import connection_failure, status_failure
from bridge.model.types import (
    BlockComplete,
    BlockDelta,
    ModelError,
    ModelEvent,
    ModelRequest,
    ResponseComplete,
    Retrying,
    Usage,
)

if TYPE_CHECKING:
    from bridge.model.direct import Profile, WireClient

log = logging.getLogger(__name__)

Transport = Literal["auto", "sdk", "wire"]

RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}


def warm_up() -> None:
    """Import the SDK in the background (when requests need it) so the first prompt doesn't pay for it."""
    from bridge.model import direct as wire

    if wire.supported() is None:
        return

    def load() -> None:
        try:
            import anthropic  # noqa: F401
        except Exception:  # pragma: no cover - reported when a prompt needs it
            log.exception("importing anthropic failed")

    threading.Thread(target=load, name="anthropic-import", daemon=True).start()


DEFAULT_STALL_TIMEOUT = 90.0
"""Seconds without a byte from the model API before a response is given up as stalled (the API sends `ping`
events while the model works, so a live stream is never this quiet). Setting: AGENT_BRIDGE_STALL_TIMEOUT /
`stallTimeout`."""


class AnthropicModel:
    """`stream` raises only `ModelError` (whose text is for a person), whatever the API or the network does;
    the events yielded before the failure stand (the loop keeps the partial answer)."""

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None,
        max_retries: int = 4,
        max_retry_wait: float = 20.0,
        timeout: float = 600.0,
        stall_timeout: float = DEFAULT_STALL_TIMEOUT,
        transport: Transport = "auto",
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._timeout = timeout
        self.stall_timeout = stall_timeout
        self._client: Any = None
        self._wire: WireClient | None = None
        self._transport = transport
        self._ahead: tuple[bytes, asyncio.Task[Any]] | None = None  # a request sent ahead (`send_ahead`)

    @property
    def transport(self) -> Literal["sdk", "wire"]:
        """How requests are sent: `wire` (directly, the SDK's bytes) or `sdk` (through the SDK)."""
        if self._transport == "auto":
            from bridge.model import direct as wire

            reason = wire.supported(base_url=self._base_url)
            if reason is not None:
                log.info("model requests go through the anthropic SDK: %s", reason)
            self._transport = "wire" if reason is None else "sdk"
        return self._transport

    def _wire_client(self) -> WireClient:
        if self._wire is None:
            from bridge.model.direct import WireClient

            self._wire = WireClient(
                api_key=self._api_key or "missing-key",
                base_url=self._base_url,
                timeout=self._timeout,
                stall_timeout=self.stall_timeout,
            )
        return self._wire

    def _sdk(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key or "missing-key",
                base_url=self._base_url,
                max_retries=0,  # ours: bounded waits, abortable, reported
                # `read` is the wait for each piece of the body: the stall timeout.
                timeout=anthropic.Timeout(self._timeout, connect=5.0, read=self.stall_timeout),
            )
        return self._client

    def send_ahead(self, request: ModelRequest) -> asyncio.Event | None:
        """Start sending `request` now, before whoever will stream it is ready (the process is still loading):
        the next `stream` of a request with exactly these bytes takes this response instead of sending again; any
        other request discards it. Returns an event set once the request is written (or failed), or None when
        it cannot be sent ahead (the SDK transport, a request the wire profile lacks). Needs a running loop."""
        if self.transport != "wire" or self._ahead is not None:
            return None
        client = self._wire_client()
        written = asyncio.Event()

        async def trace(event: str, info: Any) -> None:
            if event.endswith("send_request_body.complete"):
                written.set()

        try:
            built = client.build(request.params(), trace=trace)
        except Exception:
            log.info("the request cannot be sent ahead", exc_info=True)
            return None
        task = asyncio.get_running_loop().create_task(client.send(built))

        def finished(done: asyncio.Task[Any]) -> None:
            written.set()
            if not done.cancelled():
                done.exception()  # retrieved: whoever streams it (if anyone) sees it raised again

        task.add_done_callback(finished)
        self._ahead = (built.content, task)
        return written

    def adopt(self, other: AnthropicModel) -> bool:
        """Take over `other`'s request sent ahead (and its connection) if this client would have sent the same
        bytes the same way; else `other`'s is discarded. True when taken over."""
        ahead, client = other._ahead, other._wire
        other._ahead, other._wire = None, None
        if ahead is None or client is None:
            return False
        same = (
            self.transport == "wire"
            and self._wire is None
            and self._ahead is None
            and (client.settings() == self._wire_client().settings())
        )
        if not same:
            log.warning("a model request sent ahead was discarded: the settings changed")
            _discard(ahead[1], client)
            return False
        self._wire, self._ahead = client, ahead
        return True

    async def aclose(self) -> None:
        if self._ahead is not None:
            _discard(self._ahead[1], None)
            self._ahead = None
        if self._client is not None:
            await self._client.close()
        if self._wire is not None:
            await self._wire.aclose()

    async def _open_wire(self, client: WireClient, params: dict[str, Any]) -> Any:
        built = client.build(params)
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            body, task = ahead
            if body == built.content:
                log.info("the first request was sent ahead: its response is taken")
                return await task
            log.warning("a model request sent ahead was discarded: the turn's first request differs from it")
            _discard(task, None)
        return await client.send(built)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        wire_client: WireClient | None = None
        params = request.params()
        if self.transport == "wire":
            from bridge.model.direct import Unsupported

            wire_client = self._wire_client()
            try:
                wire_client.body(params)
            except Unsupported as why:
                log.info("this request goes through the anthropic SDK: %s", why)
                wire_client = None
        attempt = 0
        while True:
            try:
                if wire_client is not None:
                    opened: Any = await self._open_wire(wire_client, params)
                else:
                    opened = await self._sdk().messages.create(**params, stream=True)
                break
            except Exception as error:
                failure = _failure_kind(error)
                attempt += 1
                if failure == "status":
                    status = error.status_code  # type: ignore[attr-defined]
                    if status not in RETRYABLE or attempt > self.max_retries:
                        raise _status_error(error, request.model, attempt) from error
                    delay = self._delay(attempt, error.response.headers)  # type: ignore[attr-defined]
                    yield Retrying(
                        attempt,
                        delay,
                        f"{_reason(status)}; retrying in {delay:.1f} s",
                        _short_reason(status),
                        self.max_retries + 1,
                    )
                elif failure == "connection":
                    if attempt > self.max_retries:
                        raise connection_failure(error, url=self._where()) from error
                    delay = self._delay(attempt, {})
                    yield Retrying(
                        attempt,
                        delay,
                        f"connection failed; retrying in {delay:.1f} s",
                        "connection failed",
                        self.max_retries + 1,
                    )
                else:  # whatever else is raised before the answer starts
                    log.warning("the request to the model API failed", exc_info=True)
                    raise ModelError(
                        f"The request to the model API at {self._where()} failed before any answer came "
                        f"({_detail(error, 'an unexpected error')}). Send your message again to retry.",
                        kind="api",
                    ) from error
                await anyio.sleep(delay)
        try:
            if wire_client is not None:
                from bridge.model.direct import stream_events

                reading = _wire_reading(wire_client.profile)
                async for event in _events(stream_events(opened), reading, self.stall_timeout):
                    yield event
            else:
                async with opened:
                    async for event in _events(opened, _sdk_reading(), self.stall_timeout):
                        yield event
        except ModelError:
            raise
        except Exception as error:  # the stream broke in a way nothing below names: still one clear message
            log.warning("reading the model's response failed", exc_info=True)
            raise _malformed("it could not be read") from error

    def _delay(self, attempt: int, headers: Any) -> float:
        hinted = _retry_after(headers)
        if hinted is None:
            hinted = min(0.5 * 2 ** (attempt - 1), 8.0) * (0.75 + random.random() / 2)
        return max(0.0, min(hinted, self.max_retry_wait))

    def _where(self) -> str:
        return self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


def _discard(task: asyncio.Task[Any], client: WireClient | None) -> None:
    """Forget a request sent ahead: cancel it, close its response if it came, and its client if given."""

    async def close(done: asyncio.Task[Any]) -> None:
        with contextlib.suppress(BaseException):
            response = done.result()
            await response.aclose()
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()

    def closed(done: asyncio.Task[Any]) -> None:
        loop = done.get_loop()
        if loop.is_closed():
            return
        cleanup = loop.create_task(close(done))
        _background.add(cleanup)
        cleanup.add_done_callback(_background.discard)

    task.cancel()
    task.add_done_callback(closed)


_background: set[asyncio.Task[None]] = set()  # closings under way (a task must be held until it is done)


def _failure_kind(error: BaseException) -> Literal["status", "connection", "other"]:
    """How a failure to open the stream counts, whichever transport raised it."""
    from bridge.model import direct as wire

    if isinstance(error, wire.StatusError):
        return "status"
    if isinstance(error, wire.ConnectionFailure):
        return "connection"
    sdk = sys.modules.get("anthropic")
    if sdk is not None:
        if isinstance(error, sdk.APIStatusError):
            return "status"
        if isinstance(error, sdk.APIConnectionError):
            return "connection"
    return "other"


@dataclass(frozen=True)
class _Reading:
    """How one transport's stream events read: a field of an event (`get`), a started block as the API's JSON
    (`dump`, given its `content_block_start` event), and the transport's own error classes."""

    get: Callable[[Any, str], Any]
    dump: Callable[[Any], Awaitable[Block]]
    status_errors: tuple[type[BaseException], ...]  # an `event: error` mid-stream (with `status_code`)
    timeout_errors: tuple[type[BaseException], ...]
    connection_errors: tuple[type[BaseException], ...]


def _sdk_reading() -> _Reading:
    import anthropic
    import httpx2

    async def dump(event: Any) -> Block:
        block: Block = event.content_block.model_dump(mode="json", exclude_none=True)
        return block

    return _Reading(
        getattr,
        dump,
        (anthropic.APIStatusError,),
        (httpx2.TimeoutException, anthropic.APITimeoutError),
        (httpx2.HTTPError, anthropic.APIConnectionError),
    )


def _wire_reading(profile: Profile) -> _Reading:
    """Every field read as the SDK's models answer it (a missing field is None), every failure the same."""
    import httpx2

    from bridge.model.direct import StatusError, dump_block, field, sdk_dump_block

    async def dump(event: Any) -> Block:
        block = dump_block(field(event, "content_block"), profile)
        if block is None:  # a block type (or field) only the SDK's models know how to dump
            block = await anyio.to_thread.run_sync(sdk_dump_block, event)
        return block

    return _Reading(field, dump, (StatusError,), (httpx2.TimeoutException,), (httpx2.HTTPError,))


async def _events(stream: AsyncIterator[Any], how: _Reading, stall_timeout: float) -> AsyncIterator[ModelEvent]:
    """A transport's stream events as ours. Unknown event and delta types are ignored (the API adds new ones);
    anything that breaks the stream becomes a `ModelError` that says what happened."""
    get = how.get
    blocks: dict[int, Block] = {}
    open_blocks: set[int] = set()
    json_parts: dict[int, list[str]] = {}
    usage = Usage()
    stop_reason: str | None = None
    finished = False
    try:
        async for event in stream:
            kind = get(event, "type")
            if kind == "message_start":
                u = get(get(event, "message"), "usage")
                usage = Usage(
                    input_tokens=get(u, "input_tokens") or 0,
                    output_tokens=get(u, "output_tokens") or 0,
                    cache_read_tokens=get(u, "cache_read_input_tokens") or 0,
                    cache_write_tokens=get(u, "cache_creation_input_tokens") or 0,
                )
            elif kind == "content_block_start":
                index = get(event, "index")
                block = await how.dump(event)
                _check_ids(block)
                if block["type"] == "tool_use":
                    block["input"] = {}
                    json_parts[index] = []
                blocks[index] = block
                open_blocks.add(index)
            elif kind == "content_block_delta":
                index = get(event, "index")
                if index not in open_blocks:
                    raise _malformed("a part of it arrived for a content block that was not open")
                delta = get(event, "delta")
                block = blocks[index]
                delta_type = get(delta, "type")
                if delta_type == "text_delta":
                    block["text"] = block.get("text", "") + get(delta, "text")
                    yield BlockDelta(index, get(delta, "text"), "text")
                elif delta_type == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + get(delta, "thinking")
                    yield BlockDelta(index, get(delta, "thinking"), "thinking")
                elif delta_type == "signature_delta":
                    block["signature"] = block.get("signature", "") + get(delta, "signature")
                elif delta_type == "input_json_delta":
                    json_parts.setdefault(index, []).append(get(delta, "partial_json"))
            elif kind == "content_block_stop":
                index = get(event, "index")
                if index not in open_blocks:
                    raise _malformed("it closed a content block that was not open")
                open_blocks.discard(index)
                block = blocks[index]
                if block["type"] == "tool_use":
                    raw = "".join(json_parts.pop(index, []))
                    try:
                        block["input"] = json.loads(raw) if raw.strip() else {}
                    except json.JSONDecodeError:
                        block["input"] = {"__invalid_json__": raw}
                yield BlockComplete(index, block)
            elif kind == "message_delta":
                stop_reason = get(get(event, "delta"), "stop_reason") or stop_reason
                delta_usage = get(event, "usage")
                if delta_usage is not None:
                    usage = Usage(
                        input_tokens=usage.input_tokens,
                        output_tokens=get(delta_usage, "output_tokens") or usage.output_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                    )
            elif kind == "message_stop":
                finished = True
    except how.status_errors as error:  # an `event: error` mid-stream
        status = int(getattr(error, "status_code", 0))
        raise ModelError(
            f"The model API reported an error mid-response: {_message_of(error)}. The partial answer is kept; "
            "send your message again to retry.",
            kind="overloaded" if status == 529 or "overloaded" in str(error).lower() else "api",
            status=status,
        ) from error
    except how.timeout_errors as error:
        raise ModelError(
            f"The model API sent nothing for {stall_timeout:g} s in the middle of its response, so it was given "
            "up. The partial answer is kept; send your message again to continue (to wait longer, raise "
            "AGENT_BRIDGE_STALL_TIMEOUT).",
            kind="stream_stalled",
        ) from error
    except how.connection_errors as error:
        raise _dropped(_detail(error, "the connection closed")) from error
    except json.JSONDecodeError as error:
        raise _malformed("an event of it was not valid JSON") from error
    if not finished or stop_reason is None:
        raise ModelError(
            "The model's response ended before it was complete (the stream stopped early). The partial answer "
            "is kept; send your message again to continue.",
            kind="stream_dropped",
        )
    if open_blocks:
        kinds = ", ".join(sorted({str(blocks[i].get("type", "content")).replace("_", " ") for i in open_blocks}))
        raise _malformed(f"it ended with a {kinds} block that never finished")
    yield ResponseComplete(stop_reason, usage)


def _check_ids(block: Block) -> None:
    """Ids enter here (tool_use ids, and the tool_use_id a server tool's result names): one that is not an id
    the API would send or accept back is refused, never passed on — ids become file names (a command's output,
    a stored result, a sub-agent's transcript). Refused rather than rewritten: the id must go back to the API
    unchanged in the tool_result, and a gateway that sends `../x` is not one to keep talking to quietly."""
    for key in ("id", "tool_use_id"):
        if key in block and not valid_tool_use_id(block[key]):
            shown = repr(block[key])
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise ModelError(
                f"The model's response named a {block.get('type', 'content')} block with the {key} {shown}, which "
                "is not an id the Messages API gives (letters, digits, _ and -, at most "
                f"{TOOL_USE_ID_MAX} characters). Nothing of that block was run. Whatever serves the API "
                "(ANTHROPIC_BASE_URL) sent it: check that it is the server you meant to use.",
                kind="stream_invalid",
            )


def _dropped(detail: str) -> ModelError:
    return ModelError(
        f"The connection to the model dropped mid-response ({detail}). The partial answer is kept; send your "
        "message again to continue.",
        kind="stream_dropped",
    )


def _malformed(what: str) -> ModelError:
    return ModelError(
        f"The model's response was corrupted mid-stream: {what}. The partial answer is kept; send your message "
        "again to continue.",
        kind="stream_invalid",
    )


def _detail(error: BaseException, fallback: str) -> str:
    """An exception's own words, never its class name (empty text says `fallback`)."""
    text = str(error).strip()
    return text.rstrip(".") if text else fallback


def _retry_after(headers: Any) -> float | None:
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after"):
            return float(headers["retry-after"])
    except (TypeError, ValueError):
        return None
    return None


def _reason(status: int) -> str:
    return {429: "rate limited (429)", 529: "the API is overloaded (529)"}.get(status, f"the API answered {status}")


def _short_reason(status: int) -> str:
    return {429: "rate limited", 529: "API overloaded"}.get(status, f"API error {status}")


def _message_of(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))


def _status_error(error: Any, model: str, attempts: int) -> ModelError:
    return status_failure(
        error.status_code,
        _message_of(error),
        model=model,
        attempts=attempts,
        retry_after=_retry_after(error.response.headers),
    )
