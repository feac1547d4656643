"""JSON-RPC plumbing on top of pygls: params kept as plain dicts (validated by pydantic in the
handlers), real errors for malformed messages (pygls only logs them), and the bridge's capabilities
advertised under `capabilities.experimental.agent`."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Generator
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
    "mcpCapabilities": {"http": True, "sse": True},
    "sessionCapabilities": {"close": {}},
}


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
    """ACP's own stdio transport: one JSON-RPC message per line, and ACP's `initialize`
    (`{protocolVersion, clientCapabilities}` -> `{protocolVersion, agentCapabilities, authMethods}`)."""

    def get_message_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None  # every params object stays a dict

    def get_result_type(self, method: str) -> type[Any] | None:  # type: ignore[override]
        return None

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: Any) -> Generator[Any, Any, Any]:
        if (handler := self.fm.features.get("acp/initialize")) is not None:
            yield handler, (params,), None
        return {"protocolVersion": 1, "agentCapabilities": AGENT_CAPABILITIES, "authMethods": []}


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
