"""A session's tool set and slash commands: the built-in tools and the Agent tool, its MCP servers' tools as of a
turn's start, tools held back behind ToolSearch, and the tools a stored history calls that this session lacks
(with why, so a call to one answers instead of poisoning the history). The session owns one; its turns ask it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bridge import commands
from bridge.commands import available_commands
from bridge.loop.query import used_tool_names
from bridge.mcp_names import server_of, server_part
from bridge.messages import Message
from bridge.plugins import PluginSet
from bridge.skills import SkillCatalog
from bridge.tools.base import AnyTool
from bridge.tools.skill import SkillTool
from bridge.tools.tool_search import DeferredTools, ToolSearchTool

if TYPE_CHECKING:
    from bridge.mcp.manager import McpSession


class SessionTools:
    def __init__(
        self, cwd: Path, tools: list[AnyTool], *, skills: SkillCatalog | None = None, plugins: PluginSet | None = None
    ) -> None:
        self.cwd = cwd
        self.skills = skills or SkillCatalog()
        self.plugins = plugins or PluginSet()
        if self.skills.for_model():  # no skills: no Skill tool (the request stays what it was)
            tools = [*tools, SkillTool(self.skills)]
        self.tools = {tool.name: tool for tool in tools}
        self.deferred = DeferredTools()
        self.unavailable: dict[str, str] = {}  # tools the stored history calls that this session lacks, and why
        self.mcp: McpSession | None = None  # set by Agent.connect_mcp; released only when the session ends
        self._mcp_tools: list[str] = []
        self.refresh_commands()

    def get(self, name: str) -> AnyTool | None:
        return self.tools.get(name)

    async def sync_mcp(self, messages: list[Message], tell: Callable[[str], None]) -> str | None:
        """At a turn's start: the MCP servers' tools as of now (bridge/mcp/manager.py), and their instructions
        for the system prompt (None: no change). They change only here, so every request of a turn has the same
        prefix; a change after the first request is said once (`tell`). Past the deferral threshold the servers'
        tools wait behind ToolSearch."""
        if self.mcp is None:
            return None
        await self.mcp.before_turn()
        self._mark_failed_servers(messages)
        snapshot = self.mcp.snapshot()
        if snapshot is None:
            return None
        for name in self._mcp_tools:
            self.tools.pop(name, None)
            self.deferred.tools.pop(name, None)
        offered = [t for t in [*snapshot.tools, *snapshot.deferrable] if t.name not in self.tools]
        self.tools.update({tool.name: tool for tool in offered})
        self._mcp_tools = [tool.name for tool in offered]
        for name in self._mcp_tools:
            self.unavailable.pop(name, None)  # its server came back
        if snapshot.defer:
            self.hold_back([t for t in snapshot.deferrable if t.name in self._mcp_tools])
        elif not self.deferred.tools:
            self.tools.pop(ToolSearchTool.name, None)
        if snapshot.notice:
            tell(snapshot.notice)
        return snapshot.instructions or ""

    def _mark_failed_servers(self, messages: list[Message]) -> None:
        """A history's MCP tools whose configured server never came up answer with the server's failure (not
        "no such tool"): the model hears why, and that it is the server, not the name."""
        assert self.mcp is not None
        failed = {
            server_part(name): c.error
            for name, c in self.mcp.connections.items()
            if c.state == "failed" and not c.ever_ready
        }
        for name in used_tool_names(messages):
            server = server_of(name)
            if name not in self.tools and server in failed:
                self.unavailable[name] = f"its MCP server could not start ({failed[server]})"

    def hold_back(self, tools: list[AnyTool]) -> None:
        """Tools the session has but does not send until the model loads them with ToolSearch (deferred)."""
        self.tools.update({tool.name: tool for tool in tools})
        self.deferred.tools.update({tool.name: tool for tool in tools})
        self.tools.setdefault(ToolSearchTool.name, ToolSearchTool(self.deferred))

    def refresh_commands(self) -> None:
        """The slash commands again (an MCP server's prompts came or went)."""
        provided = [commands.Command(c.name, c.description, c.hint) for c in self.mcp.commands()] if self.mcp else []
        self.commands = available_commands(
            self.cwd, provided, plugins=self.plugins.command_folders(), skills=self.skills.skills.values()
        )

    def missing_tools(self, messages: list[Message]) -> list[str]:
        """Tools the history calls that this session does not have (an MCP server gone, renamed or failing; a
        tool that no longer exists): one warning per server or tool. The session goes on: requests keep
        declaring them (so the history stays valid) and a call to one answers that it is not connected."""
        warnings: list[str] = []
        by_server: dict[str, list[str]] = {}
        configured = {entry.name for entry in self.mcp.entries} if self.mcp is not None else set()
        for name in used_tool_names(messages):
            if name in self.tools or name in self.unavailable:
                continue
            parts = name.split("__")
            if len(parts) >= 3 and parts[0] == "mcp" and parts[1] in configured:
                continue  # its server is configured, and joins when it has started
            if len(parts) >= 3 and parts[0] == "mcp":
                by_server.setdefault(parts[1], []).append(name)
                self.unavailable[name] = f"its MCP server {parts[1]!r} is not connected in this session"
            else:
                self.unavailable[name] = "this tool does not exist in this session"
                warnings.append(f"Tool {name} of this session's history does not exist here; calls to it will fail.")
        for server, names in by_server.items():
            warnings.insert(
                0,
                f"MCP server {server!r} of this session's history is not connected: its tools "
                f"{', '.join(names)} will answer that they are not connected.",
            )
        return warnings
