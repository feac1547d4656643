"""ToolSearch: deferred tools, whose schemas are sent only once the model asks for them.

A session whose MCP servers bring more schema text than a fraction of the context window (the `mcp.deferFraction`
setting, bridge/mcp/settings.py; Claude Code's ~10 %) holds those tools back: the
request carries ToolSearch instead, whose description lists the held-back names (a fixed list, so the request
prefix stays byte-stable for caching). The model loads tools by exact name (`select:a,b`) or by keywords
matched against each tool's name, `search_hint` and description; from the next request on, the loaded tools'
schemas are sent like any other. The catalog never shrinks: a loaded tool stays listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from bridge.tools.base import AnyTool, Tool, ToolContext, ToolError, ToolInput, ToolResult

MAX_LISTED_NAMES = 300


@dataclass
class DeferredTools:
    """The session's held-back tools (`Session.deferred`, shared with ToolSearch) and which of them are loaded."""

    tools: dict[str, AnyTool] = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)

    def held_back(self) -> set[str]:
        return set(self.tools) - self.loaded

    def search(self, query: str, limit: int) -> list[AnyTool]:
        query = query.strip()
        if query.lower().startswith("select:"):
            names = [n.strip() for n in query[len("select:") :].split(",") if n.strip()]
            return [self.tools[n] for n in names if n in self.tools]
        terms = [t for t in re.split(r"[\s,]+", query.lower()) if t]
        scored: list[tuple[int, str]] = []
        for name, tool in self.tools.items():
            words = set(re.split(r"[_\W]+", name.lower()))
            hint, described = tool.search_hint.lower(), tool.description.lower()
            score = sum(3 * (term in words) + 2 * (term in hint) + (term in described) for term in terms)
            if score:
                scored.append((-score, name))
        return [self.tools[name] for _, name in sorted(scored)[:limit]]


class ToolSearchInput(ToolInput):
    query: str = Field(description='"select:name1,name2" to load by exact name, or keywords to search')
    max_results: int = Field(default=5, ge=1, le=20, description="How many keyword matches to load (default 5)")


class ToolSearchTool(Tool[ToolSearchInput]):
    name = "ToolSearch"
    input_model = ToolSearchInput
    description = (
        "Load deferred tools so they can be called: their schemas are sent from the next step on. Use "
        '"select:<name>[,<name>...]" when you know the names, or keywords to find tools by what they do.'
    )
    search_hint = "find load deferred tools mcp"
    kind = "search"
    interrupt_behavior = "cancel"

    def __init__(self, deferred: DeferredTools) -> None:
        self.deferred = deferred

    def is_read_only(self, data: ToolSearchInput) -> bool:
        return True

    def user_facing_title(self, data: ToolSearchInput) -> str:
        return f"ToolSearch {data.query}"

    def schema(self) -> dict[str, Any]:
        names = sorted(self.deferred.tools)
        shown = names[:MAX_LISTED_NAMES]
        more = f" (and {len(names) - len(shown)} more: search by keyword)" if len(names) > len(shown) else ""
        return {**super().schema(), "description": f"{self.description}\n\nDeferred tools: {', '.join(shown)}{more}"}

    async def call(self, data: ToolSearchInput, ctx: ToolContext) -> ToolResult:
        found = self.deferred.search(data.query, data.max_results)
        if not found:
            raise ToolError(
                f"No deferred tool matches {data.query!r}. Deferred tools: {', '.join(sorted(self.deferred.tools))}."
            )
        self.deferred.loaded.update(tool.name for tool in found)
        lines = [f"Loaded {len(found)} tool(s); call them from the next step on:"]
        lines += [f"- {tool.name}: {tool.description.splitlines()[0][:200]}" for tool in found]
        return ToolResult("\n".join(lines), raw_output={"loaded": [tool.name for tool in found]})


def schema_chars(tools: list[AnyTool]) -> int:
    import json

    return sum(len(json.dumps(tool.schema(), ensure_ascii=False)) for tool in tools)
