"""The answer to ACP's `initialize`: the same for every client (it takes nothing from the request), light on
purpose (no pydantic, no pygls), so that it can be given before the server is loaded
(bridge/server/fast_initialize.py) by the very function the server answers with."""

from __future__ import annotations

from typing import Any

from bridge import __version__

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
        '"env" of the agent_servers entry), or "apiKey" in the bridge settings file, then restart the agent.',
        "_meta": {
            "env": "ANTHROPIC_API_KEY",
            "setting": "apiKey",
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
