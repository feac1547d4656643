"""`initialize` answered before the server is loaded (pygls and lsprotocol take most of a second to import).

The answer pygls gives depends on the code and on what the client sends (its capabilities, the options); an
editor sends the same every time it starts the bridge. So the bytes pygls wrote for an `initialize` are kept on
disk, keyed by the code (bridge/cache.py), the server's own settings (command line and environment) and the
message itself (all but the client's `processId`, which changes every start). At the next start the first
message is read here with light imports only; when it is an `initialize` with a kept answer, those exact bytes
go out at once. Then everything read is handed to the server unchanged (`Replay`): pygls handles the
`initialize` as always (its workspace, our options, the warm-up), and its answer — the same bytes — is not sent
again (`AnswerFilter`; were it different, it is logged and the kept answer dropped).

Whatever the first message is (not an `initialize`, unreadable, too big, nothing at all), the server reads
exactly the bytes the client sent, as if nothing had looked at them.
"""

from __future__ import annotations

import json
import logging
import os
import re
from typing import TYPE_CHECKING

from bridge.cache import cache_dir, code_key, key_of, write_atomically

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path
    from typing import Any, BinaryIO

log = logging.getLogger(__name__)

MAX_LINE = 8 * 1024  # as bridge.server.jsonrpc's header line limit: a longer line is left to the server
MAX_BODY = 1024 * 1024  # an `initialize` is small; anything bigger is left to the server
MAX_HEADERS = 16
LIBRARIES = ("pygls", "lsprotocol", "cattrs", "pydantic")
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]{1,9})[ \t]*$", re.IGNORECASE)


class FirstMessage:
    def __init__(self, consumed: bytes) -> None:
        self.consumed = consumed  # every byte read from stdin, to be replayed to the server
        self.answered: bytes | None = None  # the `initialize` answer already written, if any
        self.cache_file: Path | None = None  # where pygls's answer to this `initialize` is kept
        self.msg_id: int | str | None = None


def _key(message: dict[str, Any], framing: str, argv: Sequence[str], environ: Mapping[str, str]) -> str:
    params = message.get("params")
    stable = (
        {**message, "params": {k: v for k, v in params.items() if k != "processId"}}
        if isinstance(params, dict)
        else message
    )
    settings = sorted((k, v) for k, v in environ.items() if k.startswith(("AGENT_BRIDGE_", "ANTHROPIC_")))
    return key_of(
        [
            framing.encode(),
            code_key(LIBRARIES).encode(),
            json.dumps(list(argv)).encode(),
            json.dumps(settings).encode(),
            json.dumps(stable, sort_keys=True).encode(),
        ]
    )


def _read_lsp(stream: BinaryIO) -> tuple[bytes, bytes | None]:
    """The first LSP message's body, and every byte read; None when it is not a plain small message."""
    consumed = b""
    length: int | None = None
    for _ in range(MAX_HEADERS):
        line = stream.readline(MAX_LINE + 2)
        consumed += line
        if not line.endswith(b"\n"):
            return consumed, None
        stripped = line.rstrip(b"\r\n")
        if not stripped:
            break
        match = _CONTENT_LENGTH.match(stripped)
        if match is not None:
            length = int(match.group(1))
    else:
        return consumed, None
    if length is None or not 0 < length <= MAX_BODY or consumed.startswith((b"\r\n", b"\n")):
        return consumed, None
    body = stream.read(length)
    consumed += body
    return consumed, body if len(body) == length else None


def _read_acp(stream: BinaryIO) -> tuple[bytes, bytes | None]:
    line = stream.readline(MAX_BODY + 1)
    return line, line if line.endswith(b"\n") and line.strip() else None


def read_first(
    stream: BinaryIO, out: BinaryIO, *, acp: bool, argv: Sequence[str], environ: Mapping[str, str] | None = None
) -> FirstMessage:
    """Read the client's first message; answer it now if it is an `initialize` whose answer is kept."""
    env = os.environ if environ is None else environ
    consumed, body = (_read_acp if acp else _read_lsp)(stream)
    first = FirstMessage(consumed)
    if body is None:
        return first
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return first
    msg_id = message.get("id") if isinstance(message, dict) else None
    if (
        (message.get("method") if isinstance(message, dict) else None) != "initialize"
        or isinstance(msg_id, bool)
        or not isinstance(msg_id, (int, str))
        or message.get("jsonrpc") != "2.0"
    ):
        return first
    first.msg_id = msg_id
    try:
        first.cache_file = cache_dir(env) / f"initialize-{_key(message, 'acp' if acp else 'lsp', argv, env)}"
        kept = first.cache_file.read_bytes()
    except (OSError, TypeError, ValueError):
        return first
    if kept:
        out.write(kept)
        out.flush()
        first.answered = kept
    return first


class Replay:
    """stdin for the server: the bytes already read first, then the rest of the stream (readline/read as a
    binary file's)."""

    def __init__(self, prefix: bytes, stream: BinaryIO) -> None:
        self._prefix = prefix
        self._stream = stream

    def readline(self, limit: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.readline(limit)
        end = self._prefix.find(b"\n") + 1 or len(self._prefix)
        if 0 <= limit < end:
            end = limit
        line, self._prefix = self._prefix[:end], self._prefix[end:]
        if not line.endswith(b"\n") and not self._prefix and (limit < 0 or len(line) < limit):
            line += self._stream.readline(-1 if limit < 0 else limit - len(line))
        return line

    def read(self, n: int = -1) -> bytes:
        if not self._prefix:
            return self._stream.read(n)
        if n < 0:
            data, self._prefix = self._prefix, b""
            return data + self._stream.read()
        data, self._prefix = self._prefix[:n], self._prefix[n:]
        if len(data) < n:
            data += self._stream.read(n - len(data))
        return data


class AnswerFilter:
    """stdout for the server's writer (each message is one `write`): holds back pygls's answer to an
    `initialize` already answered, and keeps it, for the next start, when it was not."""

    def __init__(self, stdout: BinaryIO, first: FirstMessage) -> None:
        self._stdout = stdout
        self._first: FirstMessage | None = first if first.msg_id is not None and first.cache_file else None

    def write(self, data: bytes) -> int:
        first = self._first
        if first is not None and self._is_answer(data, first):
            self._first = None
            if first.answered is not None:
                if data != first.answered:
                    log.error("the early initialize answer differs from the server's; it is no longer kept")
                    assert first.cache_file is not None
                    first.cache_file.unlink(missing_ok=True)
                return len(data)
            if b'"result"' in data and first.cache_file is not None:
                write_atomically(first.cache_file, data)
        return self._stdout.write(data)

    @staticmethod
    def _is_answer(data: bytes, first: FirstMessage) -> bool:
        start = data.find(b"{")
        try:
            message = json.loads(data[start:])
        except (ValueError, RecursionError):
            return False
        return (
            isinstance(message, dict)
            and "method" not in message
            and message.get("id") == first.msg_id
            and ("result" in message or "error" in message)
        )

    def flush(self) -> None:
        self._stdout.flush()

    def close(self) -> None:
        self._stdout.close()
