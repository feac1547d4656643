"""The early reader (bridge/server/fast_initialize.py, before pygls loads) reads a message only where the server's own
reader (bridge/server/jsonrpc.py) reads the same message from the same bytes (attack round 23a: a header line of
spaces ended the head for the server and not for the early reader, so the early path answered a `session/new` for
folder A while the server made that very session in folder B)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.server.fast_initialize import _parse_lsp, _request
from bridge.server.jsonrpc import BoundedReader, _read_head

BODY = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/b"}}).encode()


def server_reads(data: bytes) -> tuple[bytes, int] | None:
    """The first message the server reads from `data`: its body and where the next begins (None: none)."""
    stream = io.BytesIO(data)

    async def read() -> tuple[bytes, int] | None:
        source = BoundedReader(stream)
        while True:
            length = await _read_head(source)
            if length is None:
                return None
            if length >= 0:
                body = await source.read(length)
                return body, stream.tell()

    return asyncio.run(read())


def test_a_line_of_spaces_in_the_head_is_left_to_the_server() -> None:
    other = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/a"}}).encode()
    first = BODY + b"\r\n"
    data = b"Content-Length: %d\r\n   \r\n" % len(first) + first + b"Content-Length: %d\r\n\r\n" % len(other) + other
    assert _parse_lsp(bytearray(data), 0) is None  # it read `other` (folder A); the server reads `first` (B)
    assert server_reads(data) == (first, len(data) - len(other) - len(b"Content-Length: %d\r\n\r\n" % len(other)))


LINES = st.sampled_from(
    [
        b"Content-Length: {n}",
        b"content-length:{n}",
        b"Content-Length: {n}  ",
        b"Content-Length: {m}",
        b"Content-Length: 0{n}",
        b"Content-Length: x{n}",
        b"X-Content-Length: {m}",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8",
        b"Content-Type: a; content-length: {m}",
        b"Content-Type: x content-length:{m}",
        b"   ",
        b"\t",
        b" Content-Length: {n}",
        b"garbage",
        b"{",
        b"X-Other: 1",
        b"",
    ]
)


@given(
    lines=st.lists(LINES, max_size=6),
    ends=st.lists(st.sampled_from([b"\r\n", b"\n", b"\r\r\n"]), min_size=7, max_size=7),
    tail=st.sampled_from([b"", b"\r\n", b"Content-Length: 2\r\n\r\n{}"]),
)
def test_whatever_the_early_reader_reads_the_server_reads_the_same(
    lines: list[bytes], ends: list[bytes], tail: bytes
) -> None:
    n, m = len(BODY), len(BODY) - 7
    filled = [line.replace(b"{n}", b"%d" % n).replace(b"{m}", b"%d" % m) for line in lines]
    head = b"".join(line + end for line, end in zip(filled, ends, strict=False))
    data = head + b"\r\n" + BODY + tail
    early = _parse_lsp(bytearray(data), 0)
    if isinstance(early, tuple):
        assert server_reads(data) == early, data


@pytest.mark.parametrize(
    "body",
    [b"\xef\xbb\xbf" + BODY, BODY.decode().encode("utf-16"), BODY.decode().encode("utf-32"), BODY[:-1] + b"\xff}"],
    ids=["utf-8-bom", "utf-16", "utf-32", "not-utf-8"],
)
def test_a_body_the_server_refuses_is_not_answered_early(body: bytes) -> None:
    """The server decodes UTF-8 and refuses a byte-order mark (its parse error, -32700); the early path answered such
    an `initialize` itself, so the client's capabilities were dropped unseen and a later answer to its id held back."""
    assert json.loads(body) if not body.endswith(b"\xff}") else True  # what json.loads(bytes) reads (not the server)
    assert _request(body) is None
    assert _request(BODY) is not None
