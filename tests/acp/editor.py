"""An ACP editor for tests: the official SDK's client (`acp.stdio.spawn_agent_process`) driving a real
`agent-bridge acp --offline SCENARIO` subprocess, with the state an editor keeps (open buffers with unsaved
text, what it showed) and every message the bridge sends checked by the strict oracle."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from acp import RequestError, schema
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent
from acp.interfaces import Client
from acp.stdio import spawn_agent_process

from tests.acp.strict import StrictValidator
from tests.poll import poll

PermissionAnswer = Callable[[schema.RequestPermissionRequest], Awaitable[dict[str, Any]]]


async def allow_once(request: schema.RequestPermissionRequest) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


@dataclass
class WireMessage:
    direction: str  # "in": bridge -> editor; "out": editor -> bridge
    message: dict[str, Any]
    at: float


@dataclass
class Editor:
    """The client side of one connection. `buffers` are the files the editor has open: their (unsaved) text
    is what `fs/read_text_file` answers, and `fs/write_text_file` changes the buffer, not the disk."""

    buffers: dict[str, str] = field(default_factory=dict)
    on_permission: PermissionAnswer = allow_once
    fs_refuses: bool = False
    validator: StrictValidator = field(default_factory=StrictValidator)
    wire: list[WireMessage] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    permission_requests: list[schema.RequestPermissionRequest] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    withdrawn: set[Any] = field(default_factory=set)
    conn: ClientSideConnection | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    # -- acp.interfaces.Client ---------------------------------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self._changed()

    async def request_permission(
        self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any
    ) -> dict[str, Any]:
        request = schema.RequestPermissionRequest(
            options=options, session_id=session_id, tool_call=tool_call, field_meta=kwargs or None
        )
        self.permission_requests.append(request)
        self._changed()
        return await self.on_permission(request)

    async def read_text_file(
        self, path: str, session_id: str, limit: int | None = None, line: int | None = None, **kwargs: Any
    ) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return schema.ReadTextFileResponse(content=self.buffers[path])
        try:  # as Zed does: a file that is not open is read from disk (into a buffer)
            return schema.ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))
        except OSError as error:
            raise RequestError.resource_not_found(path) from error

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse:
        if self.fs_refuses:
            raise RequestError(-32603, f"the buffer of {path} is read-only")
        self.writes.append((path, content))
        self.buffers[path] = content
        self._changed()
        return schema.WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # -- helpers -----------------------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.changed.set()

    async def until(self, predicate: Callable[..., Any], *, timeout: float = 20.0, what: str = "a condition") -> Any:
        """`poll`, re-checked whenever a message arrives."""
        return await poll(predicate, timeout=timeout, what=what, changed=self.changed)

    def of_kind(self, kind: str, session_id: str | None = None) -> list[Any]:
        return [u for sid, u in self.updates if u.session_update == kind and session_id in (None, sid)]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of_kind(kind, session_id) if u.content.type == "text")

    def incoming(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            w.message
            for w in self.wire
            if w.direction == "in" and (method is None or w.message.get("method") == method)
        ]

    def request_id(self, method: str, index: int = -1) -> Any:
        """The JSON-RPC id of the editor's `index`-th request of `method` (to cancel it)."""
        ids = [
            w.message["id"]
            for w in self.wire
            if w.direction == "out" and w.message.get("method") == method and "id" in w.message
        ]
        return ids[index]

    def observe(self, event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.INCOMING:
            self.validator.incoming(message)
            self.wire.append(WireMessage("in", message, time.monotonic()))
            if message.get("method") == "$/cancel_request":
                self.withdrawn.add((message.get("params") or {}).get("requestId"))
        else:
            self.validator.outgoing(message)
            self.wire.append(WireMessage("out", message, time.monotonic()))
        self._changed()

    async def cancel_request(self, request_id: Any) -> None:
        """ACP's protocol-level cancel of one of the editor's requests."""
        assert self.conn is not None
        await self.conn._conn.send_notification("$/cancel_request", {"requestId": request_id})


def agent_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    (data_dir / "home").mkdir(parents=True, exist_ok=True)
    env.update(
        AGENT_BRIDGE_DATA_DIR=str(data_dir),
        AGENT_BRIDGE_CONFIG_DIR=str(data_dir / "config"),
        AGENT_BRIDGE_MAX_RETRY_WAIT="0.05",
        AGENT_BRIDGE_LOG="INFO",
        HOME=str(data_dir / "home"),
    )
    env.update(extra)
    return env


def agent_command(scenario: str) -> list[str]:
    return [sys.executable, "-m", "bridge.cli.main", "acp", "--offline", scenario]


@contextlib.asynccontextmanager
async def running_agent(
    editor: Editor, scenario: str, data_dir: Path, *, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """`agent-bridge acp --offline SCENARIO`, driven by the SDK's client; its stderr goes to data_dir/stderr.log."""
    command = agent_command(scenario)
    with open(data_dir / "stderr.log", "ab") as stderr:
        # The SDK routes each request to the method of that name (absent: "method not found"), so an editor that
        # offers no terminals or elicitation is a client, though not every member of the `Client` protocol.
        async with spawn_agent_process(
            cast(Client, editor),
            command[0],
            *command[1:],
            env=agent_env(data_dir, **(env or {})),
            transport_kwargs={"stderr": stderr},
            observers=[editor.observe],
        ) as (conn, process):
            editor.conn = conn
            _route_cancel_request(conn, editor)
            yield conn, process


def _route_cancel_request(conn: ClientSideConnection, editor: Editor) -> None:
    """SDK 0.12.1 has ACP's `CancelRequestNotification` model but routes no `$/cancel_request` (it would log
    "method not found" for each): the editor takes it itself (`observe` records it) and ignores it here."""
    inner = conn._conn._handler

    async def handler(method: str, params: Any, is_notification: bool) -> Any:
        if is_notification and method == "$/cancel_request":
            return None
        return await inner(method, params, is_notification)

    conn._conn._handler = handler
