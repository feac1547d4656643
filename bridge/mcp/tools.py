"""MCP servers' tools as the session's tools, and Claude Code's two resource tools.

Each server tool becomes `mcp__<server>__<tool>` (API-safe characters, at most 64) with the server's own
description and input schema, so permission rules (`mcp__server`, `mcp__server__*`, `mcp__server__tool`)
name it as Claude Code does. A server's annotations are hints from a third party: `readOnlyHint` lets its
calls run in parallel, but never skips the permission question. `ListMcpResourcesTool` (`server?`) and
`ReadMcpResourceTool` (`server`, `uri`) are offered when a server has resources.
"""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar, Protocol

from pydantic import ConfigDict, Field

from bridge.display import Display, TextContent
from bridge.mcp_names import mcp_name
from bridge.tools.base import Tool, ToolContext, ToolInput, ToolResult
from bridge.visible import visible

log = logging.getLogger(__name__)

MAX_DESCRIPTION = 2_000
MAX_TITLE = 120  # a server's own title for its tool: what follows it (the arguments) must stay in sight


class Calls(Protocol):
    """What the tools call: a session's MCP handle (bridge/mcp/manager.py)."""

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...
    async def list_resources(self, server: str | None, ctx: ToolContext) -> ToolResult: ...
    async def read_resource(self, server: str, uri: str, ctx: ToolContext) -> ToolResult: ...


class McpInput(ToolInput):
    """Whatever the server's schema asks for: checked against it in `validate_input`, then passed as is."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpInput]):
    """One tool of one server; `tools_of` makes a subclass per tool (the name is a class attribute)."""

    input_model = McpInput
    calls: ClassVar[Calls]
    server: ClassVar[str]
    remote_name: ClassVar[str]
    input_schema: ClassVar[dict[str, Any]]
    annotations: ClassVar[dict[str, Any]]
    display_title: ClassVar[str]

    def is_concurrency_safe(self, data: McpInput) -> bool:
        return self.annotations.get("readOnlyHint") is True

    def is_destructive(self, data: McpInput) -> bool:
        return self.annotations.get("destructiveHint") is not False and self.annotations.get("readOnlyHint") is not True

    def user_facing_title(self, data: McpInput) -> str:
        """The server first, then its title for the tool, then the arguments the call runs with: a client may show
        a question's title alone, and a question that named `Delete repository (gh)` never said which repository
        (attack round 35). The server's title is capped: a long one pushed the server's name out of sight."""
        args = arguments(data)
        shown = f" {json.dumps(args, ensure_ascii=False, separators=(', ', ': '))}" if args else ""
        return f"{self.server}: {self.display_title}{shown}"

    def preview(self, data: McpInput, ctx: ToolContext) -> list[Display]:
        """The arguments the call runs with, whole and one to a line, for the question."""
        args = arguments(data)
        if not args:
            return []
        text = json.dumps(args, ensure_ascii=False, indent=2)
        return [TextContent(f"{self.server} {visible(self.remote_name)} with:\n{visible(text, keep_newlines=True)}")]

    async def validate_input(self, data: McpInput, ctx: ToolContext) -> str | None:
        return schema_problem(self.input_schema, arguments(data))

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    async def call(self, data: McpInput, ctx: ToolContext) -> ToolResult:
        return await self.calls.call_tool(self.server, self.remote_name, arguments(data), ctx)


def arguments(data: McpInput) -> dict[str, Any]:
    return dict(data.model_extra or {})


def tools_of(calls: Calls, server: str, listed: list[dict[str, Any]], taken: set[str]) -> list[McpTool]:
    """A tool per listed tool, named `mcp__<server>__<tool>` (API-safe characters, unique among `taken`)."""
    made: list[McpTool] = []
    for item in listed:
        if not isinstance(item.get("name"), str):
            continue
        name = mcp_name(server, item["name"])  # (at most the API's 64 characters, its server part whole)
        if name in taken:  # another server's tool of the same name, or one this server listed twice
            log.warning("MCP server %r: its tool %r is left out: the name %s is taken", server, item["name"], name)
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
        if len(title) > MAX_TITLE:
            title = title[: MAX_TITLE - 1] + "…"
        cls = type(
            f"McpTool_{name}",
            (McpTool,),
            {
                "name": name,
                "description": description,
                "search_hint": f"{server} {title}",
                "calls": calls,
                "server": server,
                "remote_name": item["name"],
                "input_schema": schema,
                "annotations": annotations,
                "display_title": title,
            },
        )
        made.append(cls())
    return made


class ListResourcesInput(ToolInput):
    server: str | None = Field(default=None, description="Only this server's resources (default: every server)")


class ListMcpResourcesTool(Tool[ListResourcesInput]):
    name = "ListMcpResourcesTool"
    input_model = ListResourcesInput
    description = (
        "List the resources (files, documents, records) that connected MCP servers offer: each with its server, "
        "uri, name, mimeType and description. Read one with ReadMcpResourceTool."
    )
    search_hint = "mcp resources list"
    kind = "read"
    interrupt_behavior = "cancel"

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def is_read_only(self, data: ListResourcesInput) -> bool:
        return True

    def user_facing_title(self, data: ListResourcesInput) -> str:
        return f"List MCP resources ({data.server})" if data.server else "List MCP resources"

    async def call(self, data: ListResourcesInput, ctx: ToolContext) -> ToolResult:
        return await self.calls.list_resources(data.server, ctx)


class ReadResourceInput(ToolInput):
    server: str = Field(description="The MCP server's name")
    uri: str = Field(description="The resource's URI")


class ReadMcpResourceTool(Tool[ReadResourceInput]):
    name = "ReadMcpResourceTool"
    input_model = ReadResourceInput
    description = (
        "Read a resource from an MCP server by its server name and URI (from ListMcpResourcesTool, or a "
        "resource link in a tool result)."
    )
    search_hint = "mcp resource read"
    kind = "read"
    interrupt_behavior = "cancel"

    def __init__(self, calls: Calls) -> None:
        self.calls = calls

    def is_read_only(self, data: ReadResourceInput) -> bool:
        return True

    def user_facing_title(self, data: ReadResourceInput) -> str:
        return f"Read {data.uri} ({data.server})"

    async def call(self, data: ReadResourceInput, ctx: ToolContext) -> ToolResult:
        return await self.calls.read_resource(data.server, data.uri, ctx)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
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
