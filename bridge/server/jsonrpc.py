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
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
    lsp_method,
)

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader

log = logging.getLogger(__name__)

AGENT_CAPABILITIES: dict[str, Any] = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": False, "sse": False},
    "sessionCapabilities": {"list": {}},
}
API_KEY_METHOD = "anthropic-api-key"
AUTH_METHODS: list[dict[str, Any]] = [
    {
        "id": API_KEY_METHOD,
        "name": "Anthropic API key",
        "description": "Set ANTHROPIC_API_KEY in the environment the editor starts agent-bridge with (in Zed: "
        '"env" of the agent_servers entry), or "apiKey" in the bridge settings file, then restart the agent.',
        "_meta": {"env": "ANTHROPIC_API_KEY", "setting": "apiKey", "link": "https://console.anthropic.com/settings/keys"},
    }
]
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
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"agent": AGENT_CAPABILITIES, "protocolVersion": 1}
        return result

    def _handle_notification(self, method_name: str, params: Any) -> None:
        before = set(self._request_futures)
        super()._handle_notification(method_name, params)
        _forget_finished(self, before)

    def reply_error(self, msg_id: Any, error: JsonRpcException) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": error.to_response_error()})


_CONTENT_LENGTH = re.compile(rb"^Content-Length: *(\d+)\r?\n$", re.IGNORECASE)


async def serve_messages(reader: AsyncReader, protocol: BridgeProtocol, stop: threading.Event) -> None:
    """The read loop (pygls's, plus answers for bad input): a parse error gets -32700 with id null, a
    message that is not a JSON-RPC request/notification/response gets -32600; the loop goes on."""
    content_length = 0
    while not stop.is_set():
        header = await reader.readline()
        if not header:
            break
        if not content_length:
            match = _CONTENT_LENGTH.fullmatch(header)
            if match:
                content_length = int(match.group(1))
        if content_length and not header.strip():
            body = await reader.readexactly(content_length)
            content_length = 0
            if not body:
                break
            _dispatch(body, protocol)


def _dispatch(body: bytes, protocol: BridgeProtocol) -> None:
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        log.warning("unparseable message: %s", error)
        protocol.reply_error(None, JsonRpcParseError(f"Parse error: {error}"))
        return
    msg_id = data.get("id") if isinstance(data, dict) else None
    problem = _shape_problem(data)
    if problem:
        log.warning("invalid message: %s", problem)
        protocol.reply_error(msg_id, JsonRpcInvalidRequest(f"Invalid request: {problem}"))
        return
    try:
        message = protocol.structure_message(data)
    except JsonRpcException as error:
        if "method" in data and msg_id is not None:
            protocol.reply_error(msg_id, error)
        return
    try:
        protocol.handle_message(message)
    except Exception:
        log.exception("handling %s failed", data.get("method"))


def _shape_problem(data: Any) -> str | None:
    if isinstance(data, list):
        return "batch messages are not supported"
    if not isinstance(data, dict):
        return "a message must be a JSON object"
    if data.get("jsonrpc") != "2.0":
        return 'missing "jsonrpc": "2.0"'
    if "method" in data:
        if not isinstance(data["method"], str):
            return '"method" must be a string'
        if "id" in data and not isinstance(data["id"], (str, int)) and data["id"] is not None:
            return '"id" must be a string or a number'
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
        if msg_id is None or msg_id in self._result_types:
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


async def serve_lines(reader: AsyncReader, protocol: BridgeProtocol, stop: threading.Event) -> None:
    while not stop.is_set():
        line = await reader.readline()
        if not line:
            break
        if line.strip():
            _dispatch(line, protocol)
