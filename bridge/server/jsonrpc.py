"""JSON-RPC plumbing on top of pygls: params kept as plain dicts (validated by pydantic in the
handlers), real errors for malformed messages (pygls only logs them), the bridge's capabilities
advertised under `capabilities.experimental.agent`, and what differs between the two framings (the
handshake, how a request is withdrawn): `BridgeProtocol` for `serve` (LSP), `AcpProtocol` for `acp`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

from bridge.server import lsp_head
from bridge.server.nesting import MAX_DEPTH, too_deep

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader

log = logging.getLogger(__name__)

CANCEL_REQUEST_ACP = "$/cancel_request"


def dict_converter() -> cattrs.Converter:
    """pygls's converter, but custom methods' params/results stay plain dicts (default None), so
    `_meta` keys survive and a request without `params` still gets a response."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]

    def keep(obj: dict[str, Any], cls: type[Any]) -> Any:
        fields = {k: v for k, v in obj.items() if k in ("id", "method", "params", "result", "jsonrpc")}
        if cls is JsonRPCResponseMessage:
            fields.setdefault("result", None)
        elif "params" not in fields:
            fields["params"] = None
        return cls(**fields)

    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, keep)
    return converter


class BridgeProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._after_reply: dict[Any, list[Callable[[], None]]] = {}

    def after_reply(self, action: Callable[[], None]) -> None:
        """Run `action` right after the answer to the request being handled is written (only if it succeeded):
        e.g. `available_commands_update` after `session/new`'s answer, so the editor knows the session id.
        Outside a request it runs at once."""
        msg_id = self.msg_id
        if msg_id is None:
            action()
        else:
            self._after_reply.setdefault(msg_id, []).append(action)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        error = None if future.cancelled() else future.exception()
        if isinstance(error, JsonRpcException):  # the handler's own answer: whatever is worth a log line, it wrote
            self._request_futures.pop(msg_id, None)
            self._send_response(msg_id, error=error.to_response_error())
        else:  # a result, a cancel, or a bug (pygls logs that with its traceback)
            super()._send_handler_result(future, msg_id=msg_id)
        actions = self._after_reply.pop(msg_id, [])
        if future.cancelled() or future.exception() is not None:
            return
        for action in actions:
            try:
                action()
            except Exception:
                log.exception("after the answer to %r", msg_id)

    def withdraw(self, msg_id: Any) -> None:
        """Forget a request we sent that is no longer wanted (its answer, if any, is ignored) and tell the
        client so (LSP: `$/cancelRequest`)."""
        self._request_futures.pop(msg_id, None)
        self._result_types.pop(msg_id, None)
        self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(  # type: ignore[override]  # our answer is JSON, as every handler's
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, dict[str, Any]]:
        """pygls's `initialize` (the workspace, our handler), answered by the function that answers it before the
        server is loaded (bridge/server/fast_initialize.py), with the position encoding pygls chose."""
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        from bridge.server.handshake import lsp_initialize_result

        encoding = result.capabilities.position_encoding
        return lsp_initialize_result(getattr(encoding, "value", str(encoding)), list(self.fm.commands))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls's reading of a message; an `initialize` whose params its types cannot read whole is read as
        `readable_initialize` has it (a log line says so), as the answer given before the server loaded assumed."""
        params = data.get("params")
        lsp_initialize = data.get("method") == types.INITIALIZE and self.get_message_type(types.INITIALIZE) is not None
        if not lsp_initialize or "id" not in data or not isinstance(params, dict):  # (ACP's params stay a dict)
            return super().structure_message(data)
        try:
            return self._converter.structure(data, types.InitializeRequest)
        except Exception as error:
            from bridge.server.handshake import readable_initialize

            where = cattrs.transform_error(error) if isinstance(error, cattrs.BaseValidationError) else [str(error)]
            log.warning(
                "the editor's initialize could not be read whole (%s): going on with what could", "; ".join(where)
            )
            return super().structure_message({**data, "params": readable_initialize(params)})

    def _handle_notification(self, method_name: str, params: Any) -> None:
        before = set(self._request_futures)
        super()._handle_notification(method_name, params)
        _forget_finished(self, before)

    def reply_error(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer a message that can't be handled with `error`; but a message with the id of a request of ours
        still waiting is the client's answer to it, unreadable (nested too deep, too big, no result): the request
        fails with the error, so what waits for it goes on (a permission question is denied), and the client is
        not sent a response to a request it never made (attack round 14)."""
        if _is_ours(self, msg_id):
            future = self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            log.warning("the answer to our request %r could not be read: %s", msg_id, error.message)
            if future is not None and not future.done():
                future.set_exception(JsonRpcInternalError(f"the editor's answer could not be read ({error.message})"))
            return
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": bounded_error(error.to_response_error())})

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        super()._send_response(msg_id, result, bounded_error(error) if error is not None else None)


MAX_ERROR_TEXT = 1000
"""The longest error message sent (characters): a message echoes what it refuses (a path, an id), and a client
that sends megabytes must not get them back."""


def bounded_text(text: str, limit: int = MAX_ERROR_TEXT) -> str:
    """`text`, cut to `limit` characters with a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def bounded_error(error: Any) -> Any:
    """A JSON-RPC error object (lsprotocol's `ResponseError`) with its message bounded."""
    message = getattr(error, "message", None)
    if isinstance(message, str) and len(message) > MAX_ERROR_TEXT:
        error.message = bounded_text(message)
    return error


# ---- reading hostile input --------------------------------------------------------------------------
#
# Whatever arrives on stdin, the read loop goes on: a message it cannot read is answered with a JSON-RPC error
# when its `id` can be read (a log line when not), and no message is ever held in memory beyond the limit.

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""The largest message read (32 MiB, the Messages API's own request limit: a bigger prompt could never reach the
model). A bigger one is skipped in pieces — never held — and answered with an error."""
MAX_HEADER_LINE = 8 * 1024  # one LSP header line; a longer one is discarded in pieces
_PIECE = 1024 * 1024
_ID_SCAN_BYTES = 64 * 1024  # how much of a refused message is looked at for its `id`

MsgId = int | str


class BoundedReader:
    """stdin read in bounded pieces on the thread pool: a line or a body is never read past what is asked."""

    def __init__(self, stream: Any, executor: Any = None) -> None:
        self._stream = stream
        self._executor = executor

    async def readline(self, limit: int) -> bytes:
        """The next line, or its first `limit` bytes (no newline at the end then)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._stream.readline, limit)

    async def read(self, n: int) -> bytes:
        """`n` bytes (fewer only at EOF)."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._stream.read, n)

    async def discard_line(self) -> int:
        """Skip to the end of the current line; the number of bytes skipped."""
        skipped = 0
        while True:
            piece = await self.readline(_PIECE)
            skipped += len(piece)
            if not piece or piece.endswith(b"\n"):
                return skipped

    async def discard(self, n: int) -> int:
        """Skip `n` bytes without holding them; the number actually skipped (less at EOF)."""
        skipped = 0
        while skipped < n:
            piece = await self.read(min(_PIECE, n - skipped))
            if not piece:
                break
            skipped += len(piece)
        return skipped


def bounded(reader: Any) -> BoundedReader:
    """A `BoundedReader` over pygls's `StdinAsyncReader` (or over any binary stream)."""
    if isinstance(reader, BoundedReader):
        return reader
    stream = getattr(reader, "stdin", reader)
    return BoundedReader(stream, getattr(reader, "executor", None))


_CONTENT_LENGTH = lsp_head.CONTENT_LENGTH
_HEADER = lsp_head.HEADER


async def serve_messages(reader: AsyncReader, protocol: BridgeProtocol, stop: threading.Event) -> None:
    """LSP framing (`Content-Length: N`, a blank line, N bytes of JSON). A parse error gets -32700 with id null,
    a message that is not a JSON-RPC request/notification/response -32600; bad framing is logged and skipped
    to the next header; a body over `MAX_MESSAGE_BYTES` is skipped in pieces and answered. The loop goes on."""
    source = bounded(reader)
    while not stop.is_set():
        length = await _read_head(source)
        if length is None:
            return
        if length < 0:
            continue
        if length > MAX_MESSAGE_BYTES:
            head = await source.read(min(length, _ID_SCAN_BYTES))
            skipped = len(head) + await source.discard(length - len(head))
            _too_large(protocol, head, length)
            if skipped < length:
                log.info("client closed the connection mid-message")
                return
            continue
        body = await source.read(length)
        if len(body) < length:
            log.info("client closed the connection mid-message")
            return
        _dispatch(body, protocol)


async def _read_head(source: BoundedReader) -> int | None:
    """The next message's Content-Length; -1 when its head is unusable (logged); None at EOF."""
    length: int | None = None
    problem: str | None = None
    seen = False  # a header line of this message was read
    garbage = 0  # bytes of input that are no header line, skipped
    while True:
        line = await source.readline(MAX_HEADER_LINE + 2)
        if not line:
            if seen or garbage:
                log.info("client closed the connection mid-message")
            return None
        if not line.endswith(b"\n") and len(line) > MAX_HEADER_LINE:
            skipped = len(line) + await source.discard_line()
            if not seen and not _HEADER.match(line[:256]):  # no header's start, before any: noise between messages
                garbage += skipped
                length, problem = None, None
                continue
            problem = f"a header line of {skipped} bytes (the limit is {MAX_HEADER_LINE})"
            seen = True
            continue
        stripped = line.rstrip(b"\r\n")
        if not stripped.strip():
            if not seen:
                continue  # blank lines between messages
            break
        match = _CONTENT_LENGTH.search(stripped)
        if match is None and not _HEADER.match(stripped):
            garbage += len(line)  # not a header: noise between messages (e.g. the rest of a short body)
            length, problem, seen = None, None, False
            continue
        if garbage:
            log.warning("skipped %d bytes of input that are not a message header", garbage)
            garbage = 0
        seen = True
        if match is None:
            continue  # Content-Type and unknown headers are ignored
        value = match.group(1)
        if value.isdigit() and len(value) <= 18:
            length = int(value)
        else:
            problem = f"a bad Content-Length {value[:40].decode('latin-1')!r} (not a non-negative integer)"
    if problem is not None or length is None:
        log.warning("message skipped: %s", problem or "a header without Content-Length")
        return -1
    if length == 0:
        log.warning("message skipped: Content-Length 0 (a header without a body)")
        return -1
    return length


async def serve_lines(reader: AsyncReader, protocol: BridgeProtocol, stop: threading.Event) -> None:
    """ACP's ndjson framing: one message per line. A line over `MAX_MESSAGE_BYTES` is discarded up to its
    newline without being held, and answered."""
    source = bounded(reader)
    while not stop.is_set():
        line = await source.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            break
        if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
            head = line[:_ID_SCAN_BYTES]
            del line
            size = MAX_MESSAGE_BYTES + 1 + await source.discard_line()
            _too_large(protocol, head, size)
            continue
        if line.strip():
            _dispatch(line, protocol)


def _too_large(protocol: BridgeProtocol, head: bytes, size: int) -> None:
    msg_id = top_level_id(head)
    message = (
        f"Invalid request: the message is {size:,} bytes, over the {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB "
        "limit; it was skipped unread"
    )
    log.warning("%s (id %r)", message, msg_id)
    if msg_id is not None:
        protocol.reply_error(msg_id, JsonRpcInvalidRequest(message))


def _dispatch(body: bytes, protocol: BridgeProtocol) -> None:
    """Handle one framed message; nothing it holds ends the read loop."""
    try:
        _handle(body, protocol)
    except Exception:
        log.exception("handling a message failed")


def _handle(body: bytes, protocol: BridgeProtocol) -> None:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        where = f"byte {body[error.start]:#04x} at offset {error.start}"
        _parse_error(
            protocol, f"the message is not valid UTF-8 ({where})", _id_of_text(body.decode("utf-8", "replace"))
        )
        return
    if not text.strip():
        _parse_error(protocol, "the message is empty", None)
        return
    try:
        data = json.loads(text)
    except RecursionError:
        _parse_error(protocol, f"the message nests deeper than {MAX_DEPTH} levels", top_level_id(body[:_PIECE]))
        return
    except json.JSONDecodeError as error:  # not JSON: no id can be trusted (JSON-RPC: null)
        _parse_error(protocol, str(error), None)
        return
    except ValueError as error:  # valid JSON Python refuses, e.g. an integer of more than 4300 digits
        _parse_error(protocol, str(error), top_level_id(body[:_PIECE]))
        return
    if too_deep(data, MAX_DEPTH):
        _parse_error(protocol, f"the message nests deeper than {MAX_DEPTH} levels", _valid_id(data))
        return
    if isinstance(data, list):
        _batch(data, protocol)
        return
    msg_id = _valid_id(data)
    problem = _shape_problem(data)
    if problem:
        log.warning("invalid message: %s", problem)
        if not _is_response(data):
            protocol.reply_error(msg_id, JsonRpcInvalidRequest(f"Invalid request: {problem}"))
        return
    if _is_response(data) and not _is_ours(protocol, msg_id):
        # pygls pops the id from the futures it keeps, ours and the client's running requests alike: a "response"
        # naming the client's own running `session/prompt` left it uncancellable by id (attack round 23a)
        log.warning("a response to %r, which is no request of ours waiting for an answer: ignored", msg_id)
        return
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as error:
        if "method" in data and msg_id is not None:
            protocol.reply_error(msg_id, error)
        return
    owed = "method" in data and msg_id is not None  # a request is owed an answer, whatever happens
    if owed and msg_id in protocol._request_futures and msg_id not in protocol._result_types:  # (ours: the latter)
        # ids must be unique among the requests in flight: a second one took the first's place (its cancel then
        # named the wrong one, and the first could no longer be cancelled by id)
        protocol.reply_error(
            msg_id, JsonRpcInvalidRequest(f"Invalid request: id {msg_id!r} is in use by a request still running")
        )
        return
    try:
        protocol.handle_message(message)
    except Exception:
        log.exception("handling %s failed", data.get("method"))
        if owed:
            protocol.reply_error(
                msg_id,
                JsonRpcInvalidRequest(f"Invalid request: {data['method']} could not be handled with these params"),
            )
        return
    if owed and not hasattr(message, "id"):  # pygls structured it as a notification (`initialized`, ...)
        protocol.reply_error(
            msg_id, JsonRpcInvalidRequest(f"Invalid request: {data['method']} is a notification; send it without an id")
        )


def _is_ours(protocol: BridgeProtocol, msg_id: Any) -> bool:
    """`msg_id` names a request we sent that still waits for its answer."""
    try:
        return msg_id is not None and msg_id in protocol._result_types and msg_id in protocol._request_futures
    except TypeError:  # (unhashable)
        return False


def _parse_error(protocol: BridgeProtocol, reason: str, msg_id: MsgId | None) -> None:
    """-32700, with the message's id when it could be read in spite of the error (else null)."""
    log.warning("unparseable message (id %r): %s", msg_id, reason)
    protocol.reply_error(msg_id, JsonRpcParseError(f"Parse error: {reason}"))


def _batch(data: list[Any], protocol: BridgeProtocol) -> None:
    """Batches are not supported: each request in it with a readable id gets its own error, so nothing waits."""
    reason = "Invalid request: batch messages are not supported; send each message on its own"
    log.warning("batch of %d messages refused", len(data))
    ids: list[MsgId | None] = [
        i for i in (_valid_id(m) for m in data[:1000] if isinstance(m, dict) and "method" in m) if i is not None
    ]
    for msg_id in ids or [None]:
        protocol.reply_error(msg_id, JsonRpcInvalidRequest(reason))


def _valid_id(data: Any) -> MsgId | None:
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    return value


def _is_response(data: Any) -> bool:
    return isinstance(data, dict) and "method" not in data and ("result" in data or "error" in data)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NUMBER_ID = re.compile(rb"-?\d{1,18}(?=[\s,}])")
_SPACE = re.compile(rb"[ \t\r\n]*")


def top_level_id(data: bytes) -> MsgId | None:
    """The `id` member of the JSON object `data` begins with, read from its first bytes alone (a message too
    big or too deep to parse); None when it cannot be told for sure."""
    pos = _SPACE.match(data).end()  # type: ignore[union-attr]
    if data[pos : pos + 1] != b"{":
        return None
    pos, depth, expect_key = pos + 1, 1, True
    while pos < len(data) and depth <= MAX_DEPTH:
        char = data[pos : pos + 1]
        if char == b'"':
            string = _STRING.match(data, pos)
            if string is None:
                return None
            pos = string.end()
            if depth == 1 and expect_key:
                pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]
                if data[pos : pos + 1] != b":":
                    return None
                pos = _SPACE.match(data, pos + 1).end()  # type: ignore[union-attr]
                if string.group() == b'"id"':
                    return _id_at(data, pos)
                expect_key = False
            continue
        if char in (b"{", b"["):
            depth += 1
        elif char in (b"}", b"]"):
            depth -= 1
        elif char == b"," and depth == 1:
            expect_key = True
        pos += 1
    return None


def _id_at(data: bytes, pos: int) -> MsgId | None:
    number = _NUMBER_ID.match(data, pos)
    if number is not None:
        return int(number.group())
    string = _STRING.match(data, pos)
    if string is not None:
        try:
            value = json.loads(string.group())
        except ValueError:
            return None
        return value if isinstance(value, str) else None
    return None


def _id_of_text(text: str) -> MsgId | None:
    """The id of a message whose bytes are not UTF-8 but whose structure is JSON (the bad bytes replaced)."""
    try:
        return _valid_id(json.loads(text))
    except (ValueError, RecursionError):
        return None


def _shape_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "a message must be a JSON object"
    if data.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"'
    if "method" in data:
        if not isinstance(data["method"], str):
            return '"method" must be a string'
        if "result" in data or "error" in data:
            return 'a message is a request/notification ("method") or a response ("result"/"error"), not both'
        if "id" in data and data["id"] is not None and _valid_id(data) is None:
            return '"id" must be a string or an integer'
        if "params" in data and not isinstance(data["params"], (dict, list)):
            return '"params" must be an object or an array'
        return None
    if "id" in data and ("result" in data or "error" in data):
        return None
    return 'a message needs a "method" (request/notification) or an "id" with "result"/"error" (response)'


async def run_until_eof(reader: AsyncReader, protocol: BridgeProtocol, stop: threading.Event) -> None:
    try:
        await serve_messages(reader, protocol, stop)
    except asyncio.IncompleteReadError:
        log.info("client closed the connection mid-message")


def _forget_finished(protocol: LanguageServerProtocol, before: set[Any]) -> None:
    """pygls keeps a future per handled notification forever (generator/async handlers): drop ours."""
    futures = protocol._request_futures
    for key in [k for k in futures if k not in before and futures[k].done()]:
        futures.pop(key, None)


class AcpProtocol(BridgeProtocol):
    """ACP's own stdio transport: one JSON-RPC message per line, ACP's `initialize` (answered by the
    `acp/initialize` feature), and ACP's `$/cancel_request {requestId}` both ways instead of LSP's
    `$/cancelRequest {id}`. Nothing LSP-only is sent."""

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None  # every params object stays a dict

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: Any) -> Generator[Any, Any, Any]:
        result = yield self.fm.features["acp/initialize"], (params,), None
        return result

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name in (CANCEL_REQUEST_ACP, types.CANCEL_REQUEST):  # LSP's too, leniently
            self._cancel_incoming(params)
            return
        super()._handle_notification(method_name, params)

    def _cancel_incoming(self, params: Any) -> None:
        """The client cancels one of its requests: its handler is cancelled (a `session/prompt` then answers
        `cancelled`, anything else -32800). An id of a request we sent is not the client's to cancel."""
        msg_id = params.get("requestId", params.get("id")) if isinstance(params, dict) else None
        if not isinstance(msg_id, (str, int)) or isinstance(msg_id, bool) or msg_id in self._result_types:
            log.warning("%s ignored: %r names no request of the client's", CANCEL_REQUEST_ACP, params)
            return
        self._handle_cancel_notification(msg_id)

    def withdraw(self, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        self._result_types.pop(msg_id, None)
        self.notify(CANCEL_REQUEST_ACP, {"requestId": msg_id})


class LineWriter:
    """pygls writes a bare JSON body when headers are off; ACP needs a newline after each message."""

    def __init__(self, stdout: Any) -> None:
        self._stdout = stdout

    def write(self, data: bytes) -> None:
        self._stdout.write(data + b"\n")
        self._stdout.flush()

    def close(self) -> None:
        self._stdout.close()
