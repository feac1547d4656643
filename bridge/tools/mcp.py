"""MCP servers as tools: the editor's `mcpServers` (ACP `session/new`), each a stdio process speaking MCP.

A server is started when its session opens (initialize, then `tools/list`, bounded by a timeout); each of its
tools becomes `mcp__<server>__<tool>` with the server's own description and input schema, so permission rules
(`mcp__server`, `mcp__server__*`, `mcp__server__tool`) name it as Claude Code does. A call is `tools/call`;
a cancelled call sends `notifications/cancelled`. A server that fails to start is reported and skipped: the
session goes on without it. Only stdio is spoken (the bridge advertises `mcpCapabilities: {http: false,
sse: false}`). A server's annotations are hints from a third party: `readOnlyHint` lets its calls run in
parallel, but never skips the permission question.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict

from bridge.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolResult

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "2025-06-18"
START_TIMEOUT = 15.0
MAX_LINE = 32 * 1024 * 1024  # one JSON-RPC message per line; a big tool result is one long line
MAX_DESCRIPTION = 2_000
_NAME_PART = re.compile(r"[^A-Za-z0-9_-]")
_MAX_TOOL_NAME = 64  # the Messages API's limit on a tool name


class McpError(Exception):
    """A server that cannot be started, answered an error, or went away."""


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def parse_servers(raw: list[dict[str, Any]]) -> tuple[list[McpServerSpec], list[str]]:
    """ACP `McpServer` entries as specs, and a problem for each entry that cannot be used (it is skipped)."""
    specs: list[McpServerSpec] = []
    problems: list[str] = []
    for index, item in enumerate(raw):
        name = item.get("name") if isinstance(item, dict) else None
        label = f"MCP server {name!r}" if isinstance(name, str) and name else f"mcpServers.{index}"
        if not isinstance(item, dict) or not isinstance(name, str) or not name.strip():
            problems.append(f"{label}: needs a non-empty name")
            continue
        kind = item.get("type", "stdio")
        if kind != "stdio":
            problems.append(f"{label}: the {kind} transport is not supported (only stdio: command and args)")
            continue
        command, args, env = item.get("command"), item.get("args", []), item.get("env", [])
        if not isinstance(command, str) or not command:
            problems.append(f"{label}: needs a command")
            continue
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            problems.append(f"{label}: args must be a list of strings")
            continue
        pairs: list[tuple[str, str]] = []
        entries = [{"name": k, "value": v} for k, v in env.items()] if isinstance(env, dict) else env
        if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("value"), str) for e in entries
        ):
            problems.append(f"{label}: env must be a list of {{name, value}} strings")
            continue
        pairs = [(e["name"], e["value"]) for e in entries]
        specs.append(McpServerSpec(name.strip(), command, tuple(args), tuple(pairs)))
    return specs, problems


@dataclass
class McpConnection:
    """One running MCP server: JSON-RPC 2.0, a message per line, over the process's stdin/stdout."""

    spec: McpServerSpec
    cwd: Path
    server_info: dict[str, Any] = field(default_factory=dict)
    _process: asyncio.subprocess.Process | None = None
    _pending: dict[int, asyncio.Future[Any]] = field(default_factory=dict)
    _next_id: int = 1
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stderr: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    _gone: str | None = None

    async def start(self, timeout: float = START_TIMEOUT) -> list[dict[str, Any]]:
        """Spawn, handshake and list the tools; raises McpError (the process is stopped) on any failure."""
        env = {**os.environ, **dict(self.spec.env)}
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.spec.command, *self.spec.args, cwd=str(self.cwd), env=env, limit=MAX_LINE,
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group: close() stops whatever it started
            )
        except OSError as error:
            raise McpError(f"MCP server {self.spec.name!r} could not start {self.spec.command!r}: {error}") from None
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._read()), loop.create_task(self._read_stderr())]
        try:
            async with asyncio.timeout(timeout):
                init = await self.request("initialize", {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "agent-bridge", "version": _version()},
                })
                self.server_info = init.get("serverInfo", {}) if isinstance(init, dict) else {}
                await self.notify("notifications/initialized", {})
                tools = await self._list_tools()
        except TimeoutError:
            await self.close()
            late = f"MCP server {self.spec.name!r} did not answer within {timeout:.0f} s{self._tail()}"
            raise McpError(late) from None
        except McpError:
            await self.close()
            raise
        return tools

    async def _list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await self.request("tools/list", {"cursor": cursor} if cursor else {}) or {}
            tools += [t for t in page.get("tools", []) if isinstance(t, dict) and isinstance(t.get("name"), str)]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if not isinstance(result, dict):
            raise McpError(f"MCP server {self.spec.name!r} answered tools/call with {result!r}")
        return result

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        if self._gone is not None:
            raise McpError(self._gone)
        request_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await future
        except asyncio.CancelledError:
            if self._gone is None:  # tell the server to stop working on it
                with contextlib.suppress(Exception):
                    await self.notify("notifications/cancelled", {"requestId": request_id, "reason": "cancelled"})
            raise
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None or self._gone is not None:
            raise McpError(self._gone or f"MCP server {self.spec.name!r} is not running")
        try:
            process.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise McpError(f"MCP server {self.spec.name!r} closed its input: {error}") from None

    async def _read(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            while line := await process.stdout.readline():
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("MCP server %s printed a non-JSON line: %.200r", self.spec.name, line)
                    continue
                if isinstance(message, dict):
                    await self._dispatch(message)
        except (ValueError, asyncio.LimitOverrunError) as error:  # a line over MAX_LINE
            log.warning("MCP server %s: %s", self.spec.name, error)
        code = await process.wait()
        self._fail(f"MCP server {self.spec.name!r} exited (code {code}){self._tail()}")

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:  # a request from the server: we offer nothing but ping
                if message["method"] == "ping":
                    await self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
                else:
                    await self._send({"jsonrpc": "2.0", "id": message["id"],
                                      "error": {"code": -32601, "message": f"Method not found: {message['method']}"}})
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            future.set_exception(McpError(f"MCP server {self.spec.name!r}: {error.get('message', 'error')}"))
        else:
            future.set_result(message.get("result"))

    async def _read_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        with contextlib.suppress(ValueError, asyncio.LimitOverrunError):
            while line := await process.stderr.readline():
                text = line.decode(errors="replace").rstrip()
                self._stderr.append(text)
                log.debug("mcp %s: %s", self.spec.name, text)

    def _tail(self) -> str:
        return f"; its stderr ends: {' | '.join(list(self._stderr)[-3:])}" if self._stderr else ""

    def _fail(self, reason: str) -> None:
        self._gone = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(McpError(reason))

    async def close(self) -> None:
        """Stop the server's process group: TERM, then KILL after a second."""
        process = self._process
        if self._gone is None:
            self._gone = f"MCP server {self.spec.name!r} was stopped"
        if process is not None and process.returncode is None:
            for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 2.0)):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(process.wait(), wait)
                    break
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._fail(self._gone)


class McpInput(ToolInput):
    """Whatever the server's schema asks for: checked against it in `validate_input`, then passed as is."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpInput]):
    """One tool of one server; `tools_of` makes a subclass per tool (the name is a class attribute)."""

    input_model = McpInput
    connection: ClassVar[McpConnection]
    remote_name: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    annotations: ClassVar[dict[str, Any]]
    display_title: ClassVar[str]

    def is_concurrency_safe(self, data: McpInput) -> bool:
        return self.annotations.get("readOnlyHint") is True

    def is_destructive(self, data: McpInput) -> bool:
        return self.annotations.get("destructiveHint") is not False and self.annotations.get("readOnlyHint") is not True

    def user_facing_title(self, data: McpInput) -> str:
        return f"{self.display_title} ({self.connection.spec.name})"

    async def validate_input(self, data: McpInput, ctx: ToolContext) -> str | None:
        return schema_problem(self.input_schema, arguments(data))

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    async def call(self, data: McpInput, ctx: ToolContext) -> ToolResult:
        try:
            result = await self.connection.call_tool(self.remote_name, arguments(data))
        except McpError as error:
            raise ToolError(str(error)) from None
        return to_tool_result(result)


def arguments(data: McpInput) -> dict[str, Any]:
    return dict(data.model_extra or {})


def tools_of(connection: McpConnection, listed: list[dict[str, Any]], taken: set[str]) -> list[McpTool]:
    """A tool per listed tool, named `mcp__<server>__<tool>` (API-safe characters, unique among `taken`)."""
    server = _NAME_PART.sub("_", connection.spec.name)
    made: list[McpTool] = []
    for item in listed:
        name = f"mcp__{server}__{_NAME_PART.sub('_', item['name'])}"[:_MAX_TOOL_NAME]
        if name in taken:
            log.warning("MCP tool %s of %s skipped: the name is taken", item["name"], connection.spec.name)
            continue
        taken.add(name)
        schema = item.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
        annotations = item.get("annotations") if isinstance(item.get("annotations"), dict) else {}
        description = str(item.get("description") or item.get("title") or item["name"])
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1] + "…"
        title = str(item.get("title") or (annotations or {}).get("title") or item["name"])
        cls = type(f"McpTool_{name}", (McpTool,), {
            "name": name,
            "description": description,
            "search_hint": f"{connection.spec.name} {title}",
            "connection": connection,
            "remote_name": item["name"],
            "input_schema": schema,
            "annotations": annotations,
            "display_title": title,
        })
        made.append(cls())
    return made


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def schema_problem(schema: dict[str, Any], args: dict[str, Any]) -> str | None:
    """The first way `args` breaks the schema's top level (required fields, simple types), else None.

    The server validates fully; this catches the common mistakes before a permission question is asked.
    """
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    missing = [name for name in schema.get("required", []) if isinstance(name, str) and name not in args]
    if missing:
        return f"Missing required field(s): {', '.join(missing)}. The input schema asks for: {_fields(properties)}."
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                return f"Unknown field {name!r}. The input schema has: {_fields(properties)}."
            continue
        kinds = spec.get("type") if isinstance(spec, dict) else None
        names = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
        allowed = tuple(t for n in names if isinstance(n, str) for t in _JSON_TYPES.get(n, (object,)))
        if not allowed:
            continue
        if isinstance(value, bool) and bool not in allowed:
            return f"Field {name!r} must be {' or '.join(names)}, not a boolean."
        if not isinstance(value, allowed):
            return f"Field {name!r} must be {' or '.join(names)}, not {type(value).__name__}."
    return None


def _fields(properties: dict[str, Any]) -> str:
    return ", ".join(properties) or "(no fields)"


def to_tool_result(result: dict[str, Any]) -> ToolResult:
    """MCP content as the model's tool_result: text joined (bounded by the executor), images kept as images."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "text":
            texts.append(str(item.get("text", "")))
        elif kind == "image" and isinstance(item.get("data"), str):
            images.append({"type": "image", "source": {
                "type": "base64", "media_type": item.get("mimeType", "image/png"), "data": item["data"]}})
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            resource = item["resource"]
            body = resource.get("text") if isinstance(resource.get("text"), str) else "(binary content)"
            texts.append(f"[{resource.get('uri', 'resource')}]\n{body}")
        elif kind == "resource_link":
            texts.append(f"[resource: {item.get('name') or ''} {item.get('uri', '')}]".replace("  ", " "))
        else:
            texts.append(f"[{kind} content omitted]")
    if not texts and not images and result.get("structuredContent") is not None:
        texts.append(json.dumps(result["structuredContent"], ensure_ascii=False, indent=2))
    text = "\n".join(texts) if texts else ("" if images else "(no output)")
    is_error = result.get("isError") is True
    raw = {"content_items": len(result.get("content") or [])}
    if images:
        blocks: list[dict[str, Any]] = ([{"type": "text", "text": text}] if text else []) + images
        return ToolResult(blocks, is_error=is_error, raw_output=raw)
    return ToolResult(text, is_error=is_error, raw_output=raw)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-bridge")
    except PackageNotFoundError:
        return "0"
