"""A model stream that breaks in a way the model client does not know: the editor gets one clear message (no
exception group, class name or traceback), the streamed text stays in history, and the next prompt works.

The API here is a small real HTTP server of the test's own whose first response carries an SSE `data:` line
that is not JSON (the offline API only breaks streams in ways the client already names)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bridge.offline.validation import request_errors
from tests.e2e.harness import running_editor

LEAKS = ("ExceptionGroup", "TaskGroup", "Traceback", "JSONDecodeError", "sub-exception")


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _opening() -> bytes:
    usage = {"input_tokens": 10, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    return _event("message_start", {"message": message}) + _event(
        "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
    )


def _text(piece: str) -> bytes:
    return _event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": piece}})


def _closing() -> bytes:
    return (
        _event("content_block_stop", {"index": 0})
        + _event(
            "message_delta",
            {"delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}},
        )
        + _event("message_stop", {})
    )


BROKEN = _opening() + _text("partial ") * 3 + b"event: content_block_delta\ndata: {not json\n\n"
FINE = _opening() + _text("recovered") + _closing()


class BrokenStreamApi:
    """Answers `/v1/messages` with `bodies` in turn (SSE), then closes the connection; records each request."""

    def __init__(self, bodies: list[bytes]) -> None:
        self.bodies = bodies
        self.requests: list[dict[str, Any]] = []
        self.server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        assert self.server is not None
        host, port = self.server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            length = next(
                int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.lower().startswith("content-length:")
            )
            self.requests.append(json.loads(await reader.readexactly(length)))
            body = self.bodies[min(len(self.requests), len(self.bodies)) - 1]
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n" + body)
            await writer.drain()
        finally:
            writer.close()

    async def __aenter__(self) -> BrokenStreamApi:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def api() -> AsyncIterator[BrokenStreamApi]:
    async with BrokenStreamApi([BROKEN, FINE]) as server:
        yield server


async def test_garbage_in_the_stream_is_one_clear_message_and_the_streamed_text_is_kept(
    workspace: Path, data_dir: Path, api: BrokenStreamApi
) -> None:
    env = {"ANTHROPIC_BASE_URL": api.base_url, "AGENT_BRIDGE_MAX_RETRIES": "0"}
    async with running_editor({"responses": []}, workspace, data_dir, env=env) as editor:
        sid = await editor.new_session()
        with pytest.raises(Exception) as caught:
            await editor.prompt(sid, "hello")
        error = caught.value
        message, data = str(error), json.dumps(getattr(error, "data", None))
        for leak in LEAKS:
            assert leak not in message and leak not in data, (leak, message, data)
        assert "partial answer is kept" in message, message
        streamed = editor.text(sid)
        assert streamed == "partial " * 3

        assert await editor.prompt(sid, "go on") == {"stopReason": "end_turn"}
        assert editor.text(sid).endswith("recovered")
        [_, second] = api.requests
        assert request_errors(second) == []
        messages = second["messages"]
        assert messages[1] == {"role": "assistant", "content": [{"type": "text", "text": streamed}]}
