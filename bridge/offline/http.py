"""Just enough HTTP/1.1 over asyncio streams: read a request, write a response or a chunked stream."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from http import HTTPStatus

from bridge.offline.scenario import Json

MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024


class BadRequest(Exception):
    """The bytes on the wire are not an HTTP request we can read."""


@dataclass
class HttpRequest:
    method: str
    target: str
    version: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    head: bytes = b""  # the request line and headers exactly as received (names' case and order kept)

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    @property
    def keep_alive(self) -> bool:
        connection = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return connection == "keep-alive"
        return connection != "close"


async def read_request(reader: asyncio.StreamReader) -> HttpRequest | None:
    """The next request on the connection, or None when the client closed it between requests."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadRequest("connection closed in the middle of the request head") from exc
    except asyncio.LimitOverrunError as exc:
        raise BadRequest("request head too large") from exc
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest(f"malformed request line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest(f"malformed header line: {line[:80]!r}")
        headers[name.strip().lower()] = value.strip()
    body = await _read_body(reader, headers)
    return HttpRequest(parts[0].upper(), parts[1], parts[2], headers, body, head)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length = int(headers.get("content-length", "0") or "0")
    except ValueError as exc:
        raise BadRequest("bad body framing") from exc
    except asyncio.IncompleteReadError as exc:
        raise BadRequest("connection closed in the middle of the request body") from exc
    if length < 0 or length > MAX_BODY_BYTES:
        raise BadRequest("bad content-length")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise BadRequest("connection closed in the middle of the request body") from exc


def _head(status: int, headers: dict[str, str]) -> bytes:
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Overloaded" if status == 529 else "Status"
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode("latin-1")


def response_bytes(status: int, body: Json, headers: dict[str, str], *, keep_alive: bool) -> bytes:
    payload = json.dumps(body).encode()
    all_headers = {
        "content-type": "application/json",
        "content-length": str(len(payload)),
        "connection": "keep-alive" if keep_alive else "close",
        **headers,
    }
    return _head(status, all_headers) + payload


def stream_head(headers: dict[str, str]) -> bytes:
    return _head(
        200,
        {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-cache",
            "transfer-encoding": "chunked",
            "connection": "keep-alive",
            **headers,
        },
    )


def chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


LAST_CHUNK = b"0\r\n\r\n"
