"""A strict ACP oracle: every message an agent sends, checked against the official SDK's schema models.

The SDK's models are lenient on purpose (unknown fields are ignored, a malformed optional field is replaced by
its default, invalid list items are dropped) so that a client survives a sloppy agent. A conformance test
needs the opposite: a message passes only if the model reproduces it exactly. So each payload is validated,
dumped back (by alias, only the fields that were set) and compared with what was sent: a field the model does
not know, a value it had to salvage, or an item it dropped shows up as a difference. Inside `_meta` anything
goes (ACP's extension point). Methods: those ACP defines for the agent -> client direction, plus the `_`
extensions listed in `EXTENSIONS` (documented in the README). This module shares no code with the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp import schema
from pydantic import BaseModel, ValidationError

# Agent -> client requests and notifications that ACP v1 defines (acp.meta.CLIENT_METHODS, plus the protocol-level
# `$/cancel_request`), with the model of their params.
REQUESTS: dict[str, type[BaseModel]] = {
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
    "terminal/create": schema.CreateTerminalRequest,
    "terminal/output": schema.TerminalOutputRequest,
    "terminal/release": schema.ReleaseTerminalRequest,
    "terminal/wait_for_exit": schema.WaitForTerminalExitRequest,
    "terminal/kill": schema.KillTerminalRequest,
}
NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "session/update": schema.SessionNotification,
    "$/cancel_request": schema.CancelRequestNotification,
}
# The agent's answers to the client's requests, by the request's method.
RESPONSES: dict[str, type[BaseModel]] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/list": schema.ListSessionsResponse,
    "session/set_mode": schema.SetSessionModeResponse,
    "session/prompt": schema.PromptResponse,
    "session/close": schema.CloseSessionResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/delete": schema.DeleteSessionResponse,
    "session/set_config_option": schema.SetSessionConfigOptionResponse,
    "logout": schema.LogoutResponse,
    "session/fork": schema.ForkSessionResponse,
}
# `_`-prefixed extension methods the bridge may send (README, "Protocol"): none today.
EXTENSIONS: dict[str, type[BaseModel] | None] = {}

_ENVELOPE = {
    "request": {"jsonrpc", "id", "method", "params"},
    "notification": {"jsonrpc", "method", "params"},
    "response": {"jsonrpc", "id", "result"},
    "error": {"jsonrpc", "id", "error"},
}


def differences(sent: Any, dumped: Any, where: str = "") -> list[str]:
    """Where `dumped` (the model's reading) is not `sent`; nothing is compared inside `_meta`."""
    if where.endswith("._meta") or where == "_meta":
        return []
    if isinstance(sent, dict) and isinstance(dumped, dict):
        problems: list[str] = []
        for key in sent:
            here = f"{where}.{key}" if where else key
            if key not in dumped:
                problems.append(f"{here}: unknown field (not in the schema)")
            else:
                problems += differences(sent[key], dumped[key], here)
        problems += [f"{where}.{key}: not sent, but the model has it" for key in dumped if key not in sent]
        return problems
    if isinstance(sent, list) and isinstance(dumped, list):
        if len(sent) != len(dumped):
            return [f"{where}: {len(sent) - len(dumped)} invalid item(s) dropped by the schema"]
        return [
            p
            for index, (a, b) in enumerate(zip(sent, dumped, strict=True))
            for p in differences(a, b, f"{where}.{index}")
        ]
    if type(sent) is bool or type(dumped) is bool:
        same = type(sent) is type(dumped) and sent == dumped
    else:
        same = sent == dumped
    return [] if same else [f"{where}: {sent!r} is not valid here (the schema reads it as {dumped!r})"]


def check_payload(model: type[BaseModel], payload: Any) -> list[str]:
    """Problems of `payload` as `model`, strictly (see the module docstring)."""
    try:
        parsed = model.model_validate(payload)
    except ValidationError as error:
        return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()]
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return differences(payload, dumped)


@dataclass
class Violation:
    message: dict[str, Any]
    problems: list[str]

    def __str__(self) -> str:
        what = self.message.get("method") or f"response to {self.message.get('id')!r}"
        return f"{what}: " + "; ".join(self.problems)


@dataclass
class StrictValidator:
    """Feed it every message in wire order (`outgoing` from the client, `incoming` from the agent)."""

    violations: list[Violation] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)
    _asked: dict[Any, str] = field(default_factory=dict)

    def outgoing(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:
            self._asked[message["id"]] = message["method"]

    def incoming(self, message: dict[str, Any]) -> None:
        self.seen.append(message)
        problems = self.problems(message)
        if problems:
            self.violations.append(Violation(message, problems))

    def problems(self, message: dict[str, Any]) -> list[str]:
        if message.get("jsonrpc") != "2.0":
            return ['"jsonrpc" must be "2.0"']
        if "method" in message:
            kind = "request" if "id" in message else "notification"
        else:
            kind = "error" if "error" in message else "response"
        extra = set(message) - _ENVELOPE[kind]
        if extra:
            return [f"unknown envelope member(s) {sorted(extra)} in a {kind}"]
        if kind == "error":
            self._asked.pop(message.get("id"), None)
            return check_payload(schema.Error, message["error"])
        if kind == "response":
            method = self._asked.pop(message.get("id"), None)
            if method is None:
                return [f"a response to {message.get('id')!r}, which the client never asked"]
            model = RESPONSES.get(method)
            if model is None:  # an answer nobody checks would pass whatever its shape: add the method above
                return [f"an answer to {method!r}, for which the oracle has no schema"]
            return check_payload(model, message.get("result"))
        method = message["method"]
        if kind == "request" and not isinstance(message.get("id"), (int, str)):
            return ['a request "id" must be a number or a string']
        table = REQUESTS if kind == "request" else NOTIFICATIONS
        if method in table:
            return check_payload(table[method], message.get("params"))
        if method.startswith("_") and method in EXTENSIONS:
            extension = EXTENSIONS[method]
            return check_payload(extension, message.get("params")) if extension else []
        return [f"{method!r} is not an ACP {kind} (nor a documented `_` extension)"]
