"""The Anthropic implementation of `ModelClient`: the official SDK, streaming, bounded retries.

The SDK is imported lazily (it costs seconds): `warm_up()` imports it in a background thread so the
editor's `initialize` never waits for it.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio

from bridge.messages import Block
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

log = logging.getLogger(__name__)

RETRYABLE = {408, 409, 429, 500, 502, 503, 504, 529}


def warm_up() -> None:
    """Import the SDK in the background so the first prompt doesn't pay for it."""

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
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._timeout = timeout
        self.stall_timeout = stall_timeout
        self._client: Any = None

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

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        import anthropic

        client = self._sdk()
        attempt = 0
        while True:
            try:
                stream = await client.messages.create(**request.params(), stream=True)
                break
            except anthropic.APIStatusError as error:
                attempt += 1
                status = error.status_code
                if status not in RETRYABLE or attempt > self.max_retries:
                    raise _status_error(error, request.model, attempt) from error
                delay = self._delay(attempt, error.response.headers)
                yield Retrying(attempt, delay, f"{_reason(status)}; retrying in {delay:.1f} s")
                await anyio.sleep(delay)
            except anthropic.APIConnectionError as error:
                attempt += 1
                if attempt > self.max_retries:
                    raise ModelError(
                        f"Cannot reach the model API at {self._where()}: {_detail(error, 'no answer')}. Check your "
                        "network or ANTHROPIC_BASE_URL.",
                        kind="connection",
                    ) from error
                delay = self._delay(attempt, {})
                yield Retrying(attempt, delay, f"connection failed; retrying in {delay:.1f} s")
                await anyio.sleep(delay)
            except Exception as error:  # whatever else the SDK raises before the answer starts
                log.warning("the request to the model API failed", exc_info=True)
                raise ModelError(
                    f"The request to the model API at {self._where()} failed before any answer came "
                    f"({_detail(error, 'an unexpected error')}). Send your message again to retry.",
                    kind="api",
                ) from error
        try:
            async with stream:
                async for event in _events(stream, self.stall_timeout):
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
        return self._base_url or "https://api.anthropic.com"


async def _events(stream: Any, stall_timeout: float) -> AsyncIterator[ModelEvent]:
    """The SDK's stream events as ours. Unknown event and delta types are ignored (the API adds new ones);
    anything that breaks the stream becomes a `ModelError` that says what happened."""
    import anthropic
    import httpx2

    blocks: dict[int, Block] = {}
    open_blocks: set[int] = set()
    json_parts: dict[int, list[str]] = {}
    usage = Usage()
    stop_reason: str | None = None
    finished = False
    try:
        async for event in stream:
            kind = event.type
            if kind == "message_start":
                u = event.message.usage
                usage = Usage(
                    input_tokens=u.input_tokens or 0,
                    output_tokens=u.output_tokens or 0,
                    cache_read_tokens=getattr(u, "cache_read_input_tokens", 0) or 0,
                    cache_write_tokens=getattr(u, "cache_creation_input_tokens", 0) or 0,
                )
            elif kind == "content_block_start":
                block = event.content_block.model_dump(mode="json", exclude_none=True)
                if block["type"] == "tool_use":
                    block["input"] = {}
                    json_parts[event.index] = []
                blocks[event.index] = block
                open_blocks.add(event.index)
            elif kind == "content_block_delta":
                if event.index not in open_blocks:
                    raise _malformed("a part of it arrived for a content block that was not open")
                delta = event.delta
                block = blocks[event.index]
                if delta.type == "text_delta":
                    block["text"] = block.get("text", "") + delta.text
                    yield BlockDelta(event.index, delta.text, "text")
                elif delta.type == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + delta.thinking
                    yield BlockDelta(event.index, delta.thinking, "thinking")
                elif delta.type == "signature_delta":
                    block["signature"] = block.get("signature", "") + delta.signature
                elif delta.type == "input_json_delta":
                    json_parts.setdefault(event.index, []).append(delta.partial_json)
            elif kind == "content_block_stop":
                if event.index not in open_blocks:
                    raise _malformed("it closed a content block that was not open")
                open_blocks.discard(event.index)
                block = blocks[event.index]
                if block["type"] == "tool_use":
                    raw = "".join(json_parts.pop(event.index, []))
                    try:
                        block["input"] = json.loads(raw) if raw.strip() else {}
                    except json.JSONDecodeError:
                        block["input"] = {"__invalid_json__": raw}
                yield BlockComplete(event.index, block)
            elif kind == "message_delta":
                stop_reason = event.delta.stop_reason or stop_reason
                if event.usage is not None:
                    usage = Usage(
                        input_tokens=usage.input_tokens,
                        output_tokens=event.usage.output_tokens or usage.output_tokens,
                        cache_read_tokens=usage.cache_read_tokens,
                        cache_write_tokens=usage.cache_write_tokens,
                    )
            elif kind == "message_stop":
                finished = True
    except anthropic.APIStatusError as error:  # an `event: error` mid-stream
        raise ModelError(
            f"The model API reported an error mid-response: {_message_of(error)}. The partial answer is kept; "
            "send your message again to retry.",
            kind="overloaded" if error.status_code == 529 or "overloaded" in str(error).lower() else "api",
            status=error.status_code,
        ) from error
    except (httpx2.TimeoutException, anthropic.APITimeoutError) as error:
        raise ModelError(
            f"The model API sent nothing for {stall_timeout:g} s in the middle of its response, so it was given "
            "up. The partial answer is kept; send your message again to continue (to wait longer, raise "
            "AGENT_BRIDGE_STALL_TIMEOUT).",
            kind="stream_stalled",
        ) from error
    except (httpx2.HTTPError, anthropic.APIConnectionError) as error:
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


def _message_of(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))


def _status_error(error: Any, model: str, attempts: int) -> ModelError:
    status: int = error.status_code
    detail = _message_of(error)
    if status == 401:
        return ModelError(
            f"Authentication failed (401): {detail}. Set ANTHROPIC_API_KEY to a valid key.",
            kind="authentication", status=status,
        )
    if status == 403:
        return ModelError(f"Permission denied by the API (403): {detail}.", kind="authentication", status=status)
    if status == 404:
        return ModelError(
            f"Model {model!r} was not found (404): {detail}. Set AGENT_BRIDGE_MODEL (or `model` in settings) "
            "to a model your key can use.",
            kind="not_found", status=status,
        )
    if status == 429:
        wait = _retry_after(error.response.headers)
        hint = f" Try again in {wait:.0f} s." if wait else " Try again shortly."
        return ModelError(
            f"Rate limited by the API (429) after {attempts} attempts: {detail}.{hint}",
            kind="rate_limited", status=status,
        )
    if status == 529:
        return ModelError(
            f"The API is overloaded (529) after {attempts} attempts. Try again in a minute.",
            kind="overloaded", status=status,
        )
    if status == 400:
        return ModelError(f"The API rejected the request (400): {detail}", kind="invalid_request", status=status)
    return ModelError(f"The API failed ({status}) after {attempts} attempts: {detail}", kind="api", status=status)
