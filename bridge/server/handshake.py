"""The answers to `initialize`, light on purpose (no pydantic, no pygls), so that they can be given before the
server is loaded (bridge/server/fast_initialize.py) by the very functions the server answers with: ACP's is the
same for every client (it takes nothing from the request); LSP's takes one thing, the position encoding, which
`position_encoding` reads from the editor's capabilities as pygls does. `readable_initialize` is what the server
goes on with when pygls cannot read an editor's `initialize` whole, so that its answer is the same either way."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bridge import __version__

if TYPE_CHECKING:
    from collections.abc import Sequence

AGENT_INFO = {"name": "agent-bridge", "title": "Agent Bridge", "version": __version__}
PROTOCOL_VERSION = 1
AGENT_CAPABILITIES: dict[str, Any] = {
    "loadSession": True,
    "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
    "mcpCapabilities": {"http": True, "sse": True},
    # session/fork works, but it is not in ACP v1's stable schema (strict clients refuse an unknown field there):
    # it is named in the capabilities' _meta, which every client may ignore.
    "sessionCapabilities": {
        "list": {},
        "close": {},
        "resume": {},
        "delete": {},
        "additionalDirectories": {},
        "_meta": {"fork": {}},
    },
    "auth": {"logout": {}},
}
API_KEY_METHOD = "anthropic-api-key"
AUTH_METHODS: list[dict[str, Any]] = [
    {
        "id": API_KEY_METHOD,
        "name": "Anthropic API key",
        "description": "Set ANTHROPIC_API_KEY in the environment the editor starts agent-bridge with (in Zed: "
        '"env" of the agent_servers entry), or "apiKey" in the editor\'s initialization options, then restart the '
        "agent. (No settings file holds it: those are readable by tools you allow.)",
        "_meta": {
            "env": "ANTHROPIC_API_KEY",
            "initializationOption": "apiKey",
            "link": "https://console.anthropic.com/settings/keys",
        },
    }
]


def initialize_result(agent_info: dict[str, Any] = AGENT_INFO) -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": AGENT_CAPABILITIES,
        "authMethods": AUTH_METHODS,
        "agentInfo": agent_info,
    }


ENCODINGS = ("utf-8", "utf-16", "utf-32")  # the position encodings pygls supports
DEFAULT_ENCODING = "utf-16"  # LSP's, where the editor names none that the server supports


def position_encoding(capabilities: Any) -> str | None:
    """The position encoding pygls picks for an editor's `capabilities` (raw JSON): the first of its
    `general.positionEncodings` that pygls supports, else UTF-16. None where they are not plain enough to be sure
    of how pygls's own types would read them (a `general` that is not an object, encodings that are not a list
    of strings)."""
    if not isinstance(capabilities, dict):
        return None
    general = capabilities.get("general")
    if general is None:
        return DEFAULT_ENCODING
    if not isinstance(general, dict):
        return None
    encodings = general.get("positionEncodings")
    if encodings is None:
        return DEFAULT_ENCODING
    if not isinstance(encodings, list) or not all(isinstance(encoding, str) for encoding in encodings):
        return None
    return next((encoding for encoding in encodings if encoding in ENCODINGS), DEFAULT_ENCODING)


def lsp_initialize_result(encoding: str, commands: Sequence[str] = ()) -> dict[str, Any]:
    """`serve`'s answer to LSP's `initialize`: documents synced incrementally (bridge/server/documents.py), the
    workspace's folders followed, and ACP's capabilities as the experimental ones."""
    return {
        "capabilities": {
            "positionEncoding": encoding,
            "textDocumentSync": {"openClose": True, "change": 2, "save": False},
            "executeCommandProvider": {"commands": list(commands)},
            "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True}, "fileOperations": {}},
            "experimental": {"agent": AGENT_CAPABILITIES, "protocolVersion": PROTOCOL_VERSION},
        },
        "serverInfo": {"name": AGENT_INFO["name"], "version": __version__},
    }


TRACE_VALUES = ("off", "messages", "verbose")


def readable_initialize(params: dict[str, Any]) -> dict[str, Any]:
    """The parts of LSP `initialize` params that pygls's types can always read, for when they cannot read the
    whole (a capability of the wrong shape, say): the capabilities reduced to the position encodings (when
    `position_encoding` can read them, else none), every other field kept only when it has its type."""

    def text(value: Any) -> bool:
        return isinstance(value, str)

    def folder(value: Any) -> bool:
        return isinstance(value, dict) and text(value.get("uri")) and text(value.get("name"))

    process_id = params.get("processId")
    encodings = None
    if position_encoding(params.get("capabilities")) is not None:
        general = params["capabilities"].get("general")
        encodings = general.get("positionEncodings") if isinstance(general, dict) else None
    readable: dict[str, Any] = {
        "processId": process_id if isinstance(process_id, int) and not isinstance(process_id, bool) else None,
        "rootUri": params.get("rootUri") if text(params.get("rootUri")) else None,
        "capabilities": {} if encodings is None else {"general": {"positionEncodings": encodings}},
    }
    checks: dict[str, Any] = {
        "rootPath": text,
        "initializationOptions": lambda value: True,
        "locale": text,
        "trace": lambda value: value in TRACE_VALUES,
        "clientInfo": lambda value: (
            isinstance(value, dict) and text(value.get("name")) and text(value.get("version", ""))
        ),
        "workspaceFolders": lambda value: isinstance(value, list) and all(folder(item) for item in value),
    }
    for name, check in checks.items():
        if name in params and params[name] is not None and check(params[name]):
            readable[name] = params[name]
    return readable
