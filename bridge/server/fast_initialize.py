"""`initialize` answered before the server is loaded (pygls and lsprotocol take most of a second to import).

The answer depends on one thing the editor sends: the position encodings it takes (LSP; ACP's answer takes nothing
from the request). bridge/server/handshake.py reads that as pygls does and builds the answer, by the very
functions the server answers with. So the first message is read here with light imports only; when it is an
`initialize` plain enough to be sure of (a JSON object, not nested too deep, capabilities `position_encoding` can
read), its answer goes out at once — from the first start on, nothing kept. Then everything read is handed to
the server unchanged (`Replay`): pygls handles the `initialize` as always (its workspace, our options, the
warm-up), and its answer — the same bytes — is not sent again (`AnswerFilter`; were it different, that is
logged). Params pygls's types cannot read whole are read as `readable_initialize` has them, in both places.

Whatever the first message is (not an `initialize`, unreadable, too big, nothing at all), the server reads
exactly the bytes the client sent, as if nothing had looked at them.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.server.lsp_head import OTHER_HEADER, UNSURE, plain_length
from bridge.server.nesting import too_deep

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, BinaryIO

log = logging.getLogger(__name__)

MAX_LINE = 8 * 1024  # as bridge.server.jsonrpc's header line limit: a longer line is left to the server
MAX_BODY = 1024 * 1024  # an `initialize` is small; anything bigger is left to the server
MAX_HEADERS = 16


class FirstMessage:
    """What the client sent before the server was loaded, and what of it was answered already."""

    def __init__(self, consumed: bytes) -> None:
        self.consumed = consumed  # every byte read from stdin, to be replayed to the server
        self.answered: bytes | None = None  # the `initialize` answer already written, if any
        self.msg_id: int | str | None = None
        self.early: dict[int | str, bytes] = {}  # `session/new` answers written early (early_session.py), by id
        self.session_ids: dict[int | str, str] = {}  # the session ids they minted, by the request's id
        self.prompt: tuple[str, Path] | None = None  # the first prompt's text and folder, when sent ahead is wise
        self.overrides: dict[str, Any] = {}  # the settings the early answers were given with (options included)


HELD_SIGNALS: list[int] = []
"""SIGINT/SIGTERM that came while the server loaded, before its own handlers were in place (bridge/server/stdio.py
acts on them then): an editor that has its `initialize` and `session/new` answered early may stop the bridge at
once."""
_holding = False


def _on_signal(signum: int, _frame: Any) -> None:
    if _holding:
        HELD_SIGNALS.append(signum)
    elif signum == signal.SIGINT:
        raise KeyboardInterrupt
    else:
        raise SystemExit(128 + signum)


def catch_signals(*, hold: bool = False) -> None:
    """SIGINT and SIGTERM, from the start of `serve`/`acp` until the server's own handlers take them over
    (whatever the bridge inherited: a shell starts background jobs with SIGINT ignored). While the first messages
    are read nothing has started: they end the bridge at once (130, 143). From `hold` on — the server loading —
    they are noted and acted on once it can (acted on mid-import, a KeyboardInterrupt ended the bridge with 0 or
    left stdin's reader waiting)."""
    global _holding
    _holding = hold
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            signal.signal(signum, _on_signal)
        except (ValueError, OSError):  # not the main thread
            return


_INCOMPLETE = -1


def _parse_lsp(data: bytearray, pos: int) -> tuple[bytes, int] | int | None:
    """The LSP message at `pos`: its body and where the next begins; `_INCOMPLETE` when more bytes are needed;
    None when it is not a plain small message."""
    length: int | None = None
    start = pos
    for _ in range(MAX_HEADERS):
        end = data.find(b"\n", pos, pos + MAX_LINE + 2)
        if end < 0:
            return _INCOMPLETE if len(data) - pos < MAX_LINE + 2 else None
        stripped = bytes(data[pos:end]).rstrip(b"\r")
        pos = end + 1
        if not stripped:
            break
        read = plain_length(stripped)
        if read == UNSURE:  # the server may read this head otherwise: it reads it
            return None
        if read != OTHER_HEADER:
            length = read
    else:
        return None
    if length is None or not 0 < length <= MAX_BODY or pos - start <= 2:
        return None
    if len(data) < pos + length:
        return _INCOMPLETE
    return bytes(data[pos : pos + length]), pos + length


def _parse_acp(data: bytearray, pos: int) -> tuple[bytes, int] | int | None:
    end = data.find(b"\n", pos)
    if end < 0:
        return _INCOMPLETE if len(data) - pos <= MAX_BODY else None
    line = bytes(data[pos : end + 1])
    return (line, end + 1) if line.strip() and len(line) <= MAX_BODY + 1 else None


class Inbox:
    """stdin read straight from its file descriptor, so that no byte sits in a buffer the server's reader would
    not see: every byte read is kept (`data`) and handed to the server (`Replay`); `next` gives the next whole
    message, waiting for it at most `timeout` s (select: where that fails, e.g. a pipe on Windows, the early
    phase ends and the server reads on)."""

    def __init__(self, fd: int, *, acp: bool) -> None:
        self.fd = fd
        self.acp = acp
        self.data = bytearray()
        self.pos = 0
        self.eof = False

    def next(self, timeout: float | None) -> bytes | None:
        """The next message's body; None when none comes in time, at EOF, or when it is not a plain small
        message (left to the server)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            parsed = (_parse_acp if self.acp else _parse_lsp)(self.data, self.pos)
            if isinstance(parsed, tuple):
                body, self.pos = parsed
                return body
            if parsed is None or not self._fill(None if deadline is None else deadline - time.monotonic()):
                return None

    def _fill(self, timeout: float | None) -> bool:
        if self.eof or len(self.data) > 2 * MAX_BODY:
            return False
        if timeout is not None:
            try:
                ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
            except (OSError, ValueError):
                return False
            if not ready:
                return False
        try:
            chunk = os.read(self.fd, 64 * 1024)
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.data += chunk
        return True


def _request(body: bytes | None) -> dict[str, Any] | None:
    """`body` as a JSON-RPC request or notification of the plain kind (else None: left to the server)."""
    if body is None:
        return None
    try:  # as the server reads it (bridge/server/jsonrpc.py): UTF-8 text, no byte-order mark (attack round 23a:
        # json.loads takes bytes with a BOM, or in UTF-16: the early answer went out, the server refused the message)
        message = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(message, dict)
        or message.get("jsonrpc") != "2.0"
        or not isinstance(message.get("method"), str)
        or not set(message) <= {"jsonrpc", "id", "method", "params"}
    ):
        return None
    msg_id = message.get("id", 0)
    return None if isinstance(msg_id, bool) or not isinstance(msg_id, (int, str)) else message


def read_first(
    fd: int,
    out: BinaryIO,
    *,
    acp: bool,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> FirstMessage:
    """Read the client's first message; answer it now if it is an `initialize` whose answer is sure. Then, when
    `overrides` are given (None: the settings are not known yet, e.g. an offline model), the messages an editor
    sends next as soon as the protocol lets it, answered early when that is sure (`_early_session`)."""
    env = os.environ if environ is None else environ
    inbox = Inbox(fd, acp=acp)
    first = FirstMessage(b"")
    try:
        log.debug("waiting for the editor's first message")
        message = _request(inbox.next(None))
        if message is None or message["method"] != "initialize" or "id" not in message or too_deep(message):
            return first
        params = message.get("params")
        if not isinstance(params, dict):
            return first
        from bridge.server.handshake import initialize_result, lsp_initialize_result, position_encoding

        if acp:
            result = initialize_result()
        else:
            encoding = position_encoding(params.get("capabilities"))
            if encoding is None:
                return first
            result = lsp_initialize_result(encoding)
        first.msg_id = message["id"]
        body = json.dumps({"id": first.msg_id, "jsonrpc": "2.0", "result": result})
        first.answered = (body + "\n" if acp else LSP_HEAD.format(len(body)) + body).encode()
        out.write(first.answered)
        out.flush()
        log.info("initialize answered ahead of the server")
        if overrides is None:
            return first
        settings = dict(overrides) if acp else with_editor_options(params.get("initializationOptions"), overrides)
        if settings is not None:
            _early_session(inbox, out, first, settings, env)
        return first
    finally:
        first.consumed = bytes(inbox.data)


EDITOR_OPTIONS = {"apiKey": "api_key", "baseUrl": "base_url", "model": "model", "folderTrust": "folderTrust"}
"""The LSP `initializationOptions` the early phase understands (the VS Code extension's usual ones), as the
settings they are (BridgeConfig's aliases); `clientCapabilities` changes no answer. Any other option (a permission
mode, a settings object...) leaves everything to the server."""


def with_editor_options(options: Any, overrides: Mapping[str, Any]) -> dict[str, Any] | None:
    """The command line's settings over the editor's options, as `BridgeServer.agent` merges them; None when an
    option could change what is answered in a way only the server can tell."""
    if options is None:
        options = {}
    if not isinstance(options, dict) or not set(options) <= {*EDITOR_OPTIONS, "clientCapabilities"}:
        return None
    return {**{EDITOR_OPTIONS[k]: v for k, v in options.items() if k in EDITOR_OPTIONS}, **overrides}


WAIT = 0.25
"""How long (s) the early phase waits for the editor's next message: one that prompts at once sends it within
milliseconds; one that waits for its user gets the server loaded meanwhile."""


def _early_session(
    inbox: Inbox, out: BinaryIO, first: FirstMessage, overrides: Mapping[str, Any], environ: Mapping[str, str]
) -> None:
    """`session/new` answered now when its answer is sure (bridge/server/early_session.py), and the first
    `session/prompt` of such a session noted, for its model request to go out ahead; the first message of any
    other kind (an unknown method, a malformed one, a cancel, nothing in time, EOF) ends this, and the server
    reads it, and answers it, as always."""
    from bridge.first_request import settings_of
    from bridge.server.early_session import answer_new_session

    first.overrides = dict(overrides)
    minted: dict[str, Path] = {}
    while True:
        message = _request(inbox.next(WAIT))
        if message is None:
            return
        method, msg_id, params = message["method"], message.get("id"), message.get("params")
        if method == "initialized" and msg_id is None and not inbox.acp:
            continue
        if method == "session/new" and msg_id is not None and msg_id not in first.early:
            early = answer_new_session(params, overrides, environ, lsp=not inbox.acp)
            if early is None:
                return
            result, cwd = early
            body = json.dumps({"id": msg_id, "jsonrpc": "2.0", "result": result})
            data = (body + "\n" if inbox.acp else LSP_HEAD.format(len(body)) + body).encode()
            out.write(data)
            out.flush()
            first.early[msg_id] = data
            first.session_ids[msg_id] = result["sessionId"]
            log.info("session/new %r answered before the server loaded", msg_id)
            minted[result["sessionId"]] = cwd
            continue
        if method == "session/prompt" and msg_id is not None and isinstance(params, dict):
            prompt = params.get("prompt")
            settings = settings_of(overrides, environ)
            if (
                set(params) == {"sessionId", "prompt"}
                and params["sessionId"] in minted
                and isinstance(prompt, list)
                and len(prompt) == 1
                and isinstance(prompt[0], dict)
                and set(prompt[0]) == {"type", "text"}
                and prompt[0]["type"] == "text"
                and isinstance(prompt[0]["text"], str)
                and settings is not None
                and settings["api_key"]
            ):
                first.prompt = (prompt[0]["text"], minted[params["sessionId"]])
        return


LSP_HEAD = "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"  # as pygls's


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


# Sessions answered early whose making failed after all (the folder removed meanwhile...): by id, what the server
# said. The answer was sent and can't be taken back; a later request naming the session is told why it is unknown.
FAILED_EARLY: dict[str, str] = {}


def _remember_failure(sent: bytes, data: bytes) -> None:
    try:
        early = json.loads(sent[sent.find(b"{") :])
        server = json.loads(data[data.find(b"{") :])
    except (ValueError, RecursionError):
        return
    session_id = (early.get("result") or {}).get("sessionId") if isinstance(early, dict) else None
    error = server.get("error") if isinstance(server, dict) else None
    if isinstance(session_id, str) and isinstance(error, dict):
        FAILED_EARLY[session_id] = str(error.get("message", "an error"))[:2000]


class AnswerFilter:
    """stdout for the server's writer (each message is one `write`): holds back the server's answers to requests
    answered already — the `initialize` and `session/new`s (early_session.py) — each checked against what was
    sent."""

    def __init__(self, stdout: BinaryIO, first: FirstMessage) -> None:
        self._stdout = stdout
        self.on_closed: Callable[[], None] | None = None  # stdout is gone (the client closed its end): once
        self.closed = False
        # in the order they were answered (and are answered by the server): an id may be used again once answered
        self._early = list(first.early.items())
        if first.msg_id is not None and first.answered is not None:
            self._early.insert(0, (first.msg_id, first.answered))

    def write(self, data: bytes) -> int:
        for index, (msg_id, sent) in enumerate(self._early):
            if self._is_answer(data, msg_id):
                del self._early[index]
                if data != sent:
                    log.error("the early answer to %r differs from the server's: %r, then %r", msg_id, sent, data)
                    _remember_failure(sent, data)
                return len(data)
        if self.closed:
            return len(data)  # (nobody reads it any more)
        try:
            return self._stdout.write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError):
            self._gone()
            return len(data)

    def _gone(self) -> None:
        """The client closed its end of stdout: a disconnect, as its closing stdin is (the turns are cancelled,
        what they started is stopped); not a traceback per message written meanwhile."""
        if self.closed:
            return
        self.closed = True
        if self.on_closed is not None:
            self.on_closed()

    @staticmethod
    def _is_answer(data: bytes, msg_id: int | str | None) -> bool:
        start = data.find(b"{")
        try:
            message = json.loads(data[start:])
        except (ValueError, RecursionError):
            return False
        return (
            isinstance(message, dict)
            and "method" not in message
            and message.get("id") == msg_id
            and ("result" in message or "error" in message)
        )

    def flush(self) -> None:
        if self.closed:
            return
        try:
            self._stdout.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError):
            self._gone()

    def close(self) -> None:
        self._stdout.close()
