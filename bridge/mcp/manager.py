"""The MCP client of the whole process (`McpManager`) and of one session (`McpSession`).

The manager keeps one connection per (server config, cwd, roots), shared by every session that uses it and
stopped when the last of them is released. A session's handle knows which servers the session has (from
bridge/mcp/config.py), asks the user to approve a project's servers, and gives the session what it needs:
`snapshot()` (tools and server instructions, changed only when a server's lists change), `before_turn()`
(approvals, then a bounded wait for servers still starting), `commands()`/`run_command()` (`/mcp` and the
servers' prompts as `/mcp__server__prompt`), and `release()` — only for the session's end: a sub-agent gets
`view()`, which has no way to close anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.mcp.config import ConfigFiles, ServerEntry, ServerSpec, default_files, discover, save_approval
from bridge.mcp.connection import CallFailed, Connection, Tracker, Unavailable
from bridge.mcp.content import blocks_of, resource_blocks, tool_result
from bridge.mcp.elicit import question_for, result_of
from bridge.mcp.host import Choice, McpHost, NoticeLevel, Question
from bridge.mcp.settings import McpSettings
from bridge.mcp.tools import ListMcpResourcesTool, McpTool, ReadMcpResourceTool, tools_of
from bridge.mcp_names import mcp_name, server_part
from bridge.tools.base import AnyTool, ToolContext, ToolError, ToolResult
from bridge.visible import visible

log = logging.getLogger(__name__)

MAX_INSTRUCTIONS = 2_048  # characters of one server's instructions in the system prompt
INSTRUCTIONS_HEADER = (
    "# MCP server instructions\nThe following MCP servers gave instructions for their tools and resources:"
)


@dataclass(frozen=True)
class McpSnapshot:
    """What the session offers the model from its servers, as of one `generation`."""

    generation: int
    tools: list[AnyTool]  # always sent (ListMcpResourcesTool, ReadMcpResourceTool)
    deferrable: list[AnyTool]  # the servers' tools
    defer: bool  # their schemas pass the deferral threshold: hold them behind ToolSearch
    instructions: str  # a system prompt section ("" when no server gave any)
    notice: str | None  # said to the user when this changes a request prefix already sent


@dataclass(frozen=True)
class McpCommand:
    name: str
    description: str
    hint: str | None


@dataclass(frozen=True)
class CommandOutcome:
    """`reply`: text to show, the turn ends; `blocks`: the prompt to run a turn with."""

    reply: str | None = None
    blocks: list[dict[str, Any]] | None = None


class McpManager:
    def __init__(
        self,
        data_dir: Path,
        settings: McpSettings | None = None,
        *,
        context_window: int = 200_000,
        track: Tracker | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.track = track
        self.settings = settings or McpSettings()
        self.context_window = context_window
        self._pool: dict[tuple[str, Path, tuple[Path, ...]], Connection] = {}

    def open(
        self,
        cwd: Path,
        editor_servers: list[Any],
        host: McpHost,
        *,
        roots: tuple[Path, ...] = (),
        files: ConfigFiles | None = None,
        environ: Mapping[str, str] | None = None,
        plugins: list[tuple[str, dict[str, Any]]] | None = None,
    ) -> McpSession:
        """A session's handle: reads the config, starts the approved servers in the background, returns at once.
        `plugins`: (plugin name, its `mcpServers`) of the plugins the session loaded."""
        files = files or default_files(cwd)
        entries, problems = discover(files, editor_servers, environ=environ, plugins=plugins or [])
        handle = McpSession(self, files, roots or (files.cwd,), host, entries)
        handle._commands = handle.commands()  # what the editor is first told; `changed` only when it differs
        for problem in problems:
            host.notice(f"MCP config skipped: {problem}", "warning")
        handle.start()
        return handle

    def connection(self, spec: ServerSpec, cwd: Path, roots: tuple[Path, ...]) -> Connection:
        key = (spec.identity, cwd, roots)
        found = self._pool.get(key)
        if found is None or (found.state == "stopped" and not found.users):
            found = self._pool[key] = Connection(spec, cwd, roots, self.settings, self.data_dir, self.track)
        return found

    async def release(self, connection: Connection, user: McpSession) -> None:
        if user in connection.users:
            connection.users.remove(user)
        if not connection.users:
            self._pool = {k: c for k, c in self._pool.items() if c is not connection}
            await connection.stop()

    def connections(self) -> list[Connection]:
        return list(self._pool.values())

    async def close(self) -> None:
        """Stop every server (the bridge is shutting down)."""
        pool, self._pool = list(self._pool.values()), {}
        await asyncio.gather(*(c.stop() for c in pool), return_exceptions=True)


@dataclass(eq=False)
class McpSession:
    manager: McpManager
    files: ConfigFiles
    roots: tuple[Path, ...]
    host: McpHost
    entries: list[ServerEntry]
    connections: dict[str, Connection] = field(default_factory=dict)
    approved_once: set[str] = field(default_factory=set)
    asked: set[str] = field(default_factory=set)
    released: bool = False
    _own_generation: int = 0
    _synced: int | None = None
    _last: McpSnapshot | None = None
    _commands: list[McpCommand] | None = None

    # --- life ---------------------------------------------------------------------------------------

    def start(self) -> None:
        for entry in self.entries:
            if entry.spec is not None and (entry.approval == "approved" or entry.name in self.approved_once):
                self._connect(entry.spec)

    def _connect(self, spec: ServerSpec) -> Connection:
        connection = self.connections.get(spec.name)
        if connection is None:
            connection = self.manager.connection(spec, self.files.cwd, self.roots)
            self.connections[spec.name] = connection
            connection.users.append(self)
            self._own_generation += 1
            if connection.state == "ready":
                self.notice(
                    f"{connection.label} connected (shared with another session): "
                    f"{len(connection.listing.tools)} tools",
                    "info",
                )
        connection.start()
        return connection

    async def before_turn(self) -> None:
        """At a turn's start: ask about the project's servers not yet approved (once per session), then wait
        (at most `turnWait` s) for servers still starting, so a first prompt right after session/new has them."""
        if self.host.ask is not None:
            for name in [e.name for e in self.entries]:
                # each as it is now: an answer to an earlier question ("every server of this project") may have
                # decided it (a stale entry was asked about again, and a "never" left it running: round 35)
                entry = next((e for e in self.entries if e.name == name), None)
                if entry and entry.approval == "pending" and entry.name not in self.asked and entry.spec is not None:
                    self.asked.add(entry.name)
                    await self._ask_approval(entry)
        starting = [c for c in self.connections.values() if c.state == "starting"]
        if not starting:
            return
        await asyncio.gather(*(c.wait_started(self.manager.settings.turn_wait) for c in starting))
        late = [c.spec.name for c in starting if c.state == "starting"]
        if late:
            self.notice(f"MCP server(s) {', '.join(late)} still starting: their tools join at a later prompt", "info")

    async def release(self) -> None:
        """The session ended (session/close, shutdown): let go of its servers. Never from a sub-agent."""
        self.released = True
        connections, self.connections = list(self.connections.values()), {}
        await asyncio.gather(*(self.manager.release(c, self) for c in connections), return_exceptions=True)

    def view(self) -> McpView:
        return McpView(self)

    # --- what the session offers --------------------------------------------------------------------

    @property
    def generation(self) -> int:
        return self._own_generation + sum(c.generation for c in self.connections.values())

    def snapshot(self) -> McpSnapshot | None:
        """The tools and instructions, when they changed since the last call (None: unchanged)."""
        generation = self.generation
        if generation == self._synced:
            return None
        taken: set[str] = set()
        deferrable: list[AnyTool] = []
        sections: list[str] = []
        resources = False
        for name in sorted(self.connections):
            listing = self.connections[name].listing
            deferrable += tools_of(self, name, list(listing.tools), taken)
            resources = resources or listing.resources
            if listing.instructions:
                text = listing.instructions
                if len(text) > MAX_INSTRUCTIONS:
                    text = text[: MAX_INSTRUCTIONS - 1] + "…"
                sections.append(f"## {name}\n{text}")
        tools: list[AnyTool] = [ListMcpResourcesTool(self), ReadMcpResourceTool(self)] if resources else []
        chars = sum(len(json.dumps(tool.schema(), ensure_ascii=False)) for tool in deferrable)
        defer = chars > self.manager.settings.defer_chars(self.manager.context_window)
        instructions = "\n\n".join([INSTRUCTIONS_HEADER, *sections]) if sections else ""
        snapshot = McpSnapshot(
            generation, tools, deferrable, defer, instructions, self._change_notice(tools + deferrable, instructions)
        )
        self._synced, self._last = generation, snapshot
        return snapshot

    def _change_notice(self, tools: list[AnyTool], instructions: str) -> str | None:
        last = self._last
        if last is None:
            return None
        before = {t.name for t in last.tools + last.deferrable}
        after = {t.name for t in tools}
        if before == after and last.instructions == instructions:
            return None
        added, removed = len(after - before), len(before - after)
        parts = [
            f"{added} added" if added else "",
            f"{removed} removed" if removed else "",
            "server instructions changed" if last.instructions != instructions else "",
        ]
        return (
            f"MCP tools changed ({', '.join(p for p in parts if p)}): the request prefix changes once, "
            "so the prompt cache is written again from here"
        )

    def commands(self) -> list[McpCommand]:
        out = [
            McpCommand(
                "mcp",
                "Show MCP servers, their state and tools (approve|reject|restart NAME)",
                "[approve|reject|restart NAME]",
            )
        ]
        for server in sorted(self.connections):
            for prompt in self.connections[server].listing.prompts:
                args = prompt.get("arguments") or []
                hint = " ".join(
                    a["name"] if a.get("required") else f"[{a['name']}]"
                    for a in args
                    if isinstance(a, dict) and isinstance(a.get("name"), str)
                )
                description = prompt.get("description") or prompt.get("title") or f"Prompt from MCP server {server}"
                out.append(McpCommand(prompt_command(server, str(prompt["name"])), str(description), hint or None))
        return out

    def has_command(self, name: str) -> bool:
        return name == "mcp" or any(c.name == name for c in self.commands())

    async def run_command(self, name: str, arguments: str) -> CommandOutcome:
        if name == "mcp":
            return CommandOutcome(reply=await self._mcp_command(arguments))
        for server in sorted(self.connections):
            for prompt in self.connections[server].listing.prompts:
                if prompt_command(server, str(prompt["name"])) == name:
                    return await self._prompt(server, prompt, arguments)
        return CommandOutcome(reply=f"Unknown MCP command /{name}.")

    # --- Caller (what connections call back) ---------------------------------------------------------

    def notice(self, text: str, level: NoticeLevel) -> None:
        if not self.released:
            self.host.notice(text, level)

    def refresh(self) -> None:
        commands = self.commands()
        if commands != self._commands:
            self._commands = commands
            if not self.released:
                self.host.changed()

    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]:
        reply = await self.host.question(question_for(server, params, f"mcp_elicit_{uuid.uuid4().hex[:12]}"))
        return result_of(reply, params)

    # --- Calls (what the tools call) -----------------------------------------------------------------

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        connection = self._connection(server)

        def progress(done: float, total: float | None, message: str | None) -> None:
            share = f"{done:g}/{total:g}" if total else f"{done:g}"
            ctx.progress(f"Progress {share}{f' — {message}' if message else ''}")

        try:
            result = await connection.request(self, "tools/call", tool, arguments, progress=progress)
        except (Unavailable, CallFailed) as error:
            raise ToolError(str(error)) from None
        return tool_result(result, server, data_dir=ctx.data_dir)

    async def list_resources(self, server: str | None, ctx: ToolContext) -> ToolResult:
        if server is not None:
            self._connection(server)
        names = [n for n in sorted(self.connections) if server in (None, n) and self.connections[n].listing.resources]
        if not names:
            return ToolResult(
                f"MCP server {server!r} offers no resources." if server else "No connected MCP server offers resources."
            )
        found: list[dict[str, Any]] = []
        for name in names:
            try:
                listed = await self.connections[name].request(self, "resources/list")
            except (Unavailable, CallFailed) as error:
                found.append({"server": name, "error": str(error)})
                continue
            found += [{**item, "server": name} for item in listed]
        return ToolResult(json.dumps(found, ensure_ascii=False, indent=1), raw_output={"resources": len(found)})

    async def read_resource(self, server: str, uri: str, ctx: ToolContext) -> ToolResult:
        connection = self._connection(server)
        try:
            result = await connection.request(self, "resources/read", uri)
        except (Unavailable, CallFailed) as error:
            raise ToolError(str(error)) from None
        blocks = resource_blocks(list(result.get("contents") or []), server, data_dir=ctx.data_dir)
        if any(b["type"] == "image" for b in blocks):
            return ToolResult(blocks)
        return ToolResult("\n".join(b["text"] for b in blocks) or f"[{uri}: empty]")

    def _connection(self, server: str) -> Connection:
        found = self.connections.get(server) or next(
            (c for n, c in self.connections.items() if server_part(n) == server), None
        )
        if found is None or self.released:
            known = ", ".join(sorted(self.connections)) or "none"
            raise ToolError(f"No MCP server named {server!r} in this session (connected: {known}).")
        return found

    # --- /mcp and prompts ----------------------------------------------------------------------------

    async def _mcp_command(self, arguments: str) -> str:
        verb, _, name = arguments.strip().partition(" ")
        name = name.strip()
        if not verb:
            return self.status_text()
        entry = next((e for e in self.entries if e.name == name), None)
        if verb not in ("approve", "reject", "restart"):
            return (
                f"Unknown /mcp subcommand {verb!r}: use /mcp, /mcp approve NAME, /mcp reject NAME, /mcp restart NAME."
            )
        if verb == "approve" and name == "--all":
            pending = [e for e in self.entries if e.approval == "pending"]
            try:
                path = save_approval(self.files, [e.spec for e in pending if e.spec is not None], True)
            except (OSError, ValueError) as error:
                return f"Could not save the answer: {error}"
            for e in pending:
                self._approve(e)
            return f"Every MCP server of this project is approved (saved to {path})."
        if entry is None:
            return f"No MCP server named {name!r}. Servers: {', '.join(e.name for e in self.entries) or 'none'}."
        if verb == "restart":
            connection = self.connections.get(name)
            if connection is None:
                return f"MCP server {name!r} is not started ({self._state_of(entry)})."
            await connection.restart()
            await connection.wait_started(self.manager.settings.startup_timeout)
            return f"MCP server {name!r}: {self._state_of(entry)}."
        if entry.scope != "project":
            return f"MCP server {name!r} comes from {entry.source}, not from the project: it needs no approval."
        if entry.spec is None:
            return f"MCP server {name!r} cannot be used: {entry.problem}."
        try:
            path = save_approval(self.files, [entry.spec], verb == "approve")
        except (OSError, ValueError) as error:
            return f"Could not save the answer: {error}"
        if verb == "approve":
            self._approve(entry)
            return f"MCP server {name!r} approved (saved to {path}); starting it."
        self._replace(entry, "rejected")
        connection = self.connections.pop(name, None)
        if connection is not None:
            await self.manager.release(connection, self)
            self._own_generation += 1
        return f"MCP server {name!r} rejected (saved to {path}): it will not be started."

    def status_text(self) -> str:
        if not self.entries:
            return (
                "No MCP servers. Add them to .mcp.json (the project), your settings' mcpServers, or the "
                "editor's MCP settings."
            )
        lines = [f"MCP servers ({len(self.entries)}):"]  # markdown: a list, each server's details nested under it
        for entry in self.entries:
            where = "from the editor" if entry.scope == "editor" else f"{entry.scope}, {entry.source}"
            line = f"- {entry.name}: {self._state_of(entry)} — {where}"
            if entry.spec is not None:
                line += f" — {entry.spec.describe()}"
            connection = self.connections.get(entry.name)
            if connection is not None and connection.listing.tools:
                names = [str(t.get("name")) for t in connection.listing.tools]
                line += f"\n  - tools ({len(names)}): {', '.join(names)}"
            if connection is not None and connection.listing.prompts:
                line += "\n  - prompts: " + ", ".join(
                    f"/{prompt_command(entry.name, str(p['name']))}" for p in connection.listing.prompts
                )
            if connection is not None and connection.listing.resources:
                line += "\n  - resources: yes (ListMcpResourcesTool, ReadMcpResourceTool)"
            lines.append(line)
        return "\n".join(lines)

    def _state_of(self, entry: ServerEntry) -> str:
        if entry.spec is None:
            return f"invalid: {entry.problem}"
        if entry.approval == "rejected":
            return "rejected (disabledMcpjsonServers)"
        connection = self.connections.get(entry.name)
        if connection is None:
            return f"needs approval: /mcp approve {entry.name}" if entry.approval == "pending" else "not started"
        if connection.state == "signing-in":
            return f"needs you to sign in: open {connection.auth_url}"
        if connection.state == "failed":
            return f"failed: {connection.error}"
        return connection.state

    async def _ask_approval(self, entry: ServerEntry) -> None:
        assert entry.spec is not None
        config = entry.spec.shown or visible(entry.spec.describe())
        # the second answer approves every server of the project still pending: each is shown, as this one is
        others = [e for e in self.entries if e.approval == "pending" and e is not entry and e.spec is not None]
        also = "".join(
            f"\n  {visible(e.name)} ({visible(e.source)}):\n" + _indented(e.spec.shown or visible(e.spec.describe()))
            for e in others
            if e.spec is not None
        )
        question = Question(
            f"mcp_approve_{uuid.uuid4().hex[:12]}",
            f"Use the MCP server {entry.name!r} from this project?",
            f"{entry.source} asks to start the MCP server {entry.name!r}:\n"
            + _indented(config)
            + "\nIt runs with your permissions. Approve it only if you trust this project."
            + (f'\n\n"Every MCP server of this project" also approves:{also}' if also else ""),
            (
                Choice("approve", "Use it (saved in your settings, not the project's)", "allow_always"),
                Choice("approve_all", "Use it and every MCP server of this project (saved)", "allow_always"),
                Choice("once", "Use it for this session only", "allow_once"),
                Choice("reject", "Never use it (saved)", "reject_always"),
                Choice("skip", "Not now", "reject_once"),
            ),
            {
                "mcpServer": {
                    "name": entry.name,
                    "source": entry.source,
                    "transport": entry.spec.transport,
                    "command": visible(entry.spec.describe()),
                    "config": config,
                }
            },
        )
        reply = await self.host.question(question)
        try:
            if reply.choice in ("approve", "approve_all"):
                chosen = (
                    [e for e in self.entries if e.approval == "pending"] if reply.choice == "approve_all" else [entry]
                )
                save_approval(self.files, [e.spec for e in chosen if e.spec is not None], True)
            elif reply.choice == "reject":
                save_approval(self.files, [entry.spec], False)
        except (OSError, ValueError) as error:
            self.notice(f"Could not save the MCP approval: {error}", "warning")
        if reply.choice in ("approve", "approve_all", "once"):
            if reply.choice == "once":
                self.approved_once.add(entry.name)
            targets = [e for e in self.entries if e.approval == "pending"] if reply.choice == "approve_all" else [entry]
            for target in targets:
                self._approve(target)
        elif reply.choice == "reject":
            self._replace(entry, "rejected")

    def _approve(self, entry: ServerEntry) -> None:
        self._replace(entry, "approved")
        if entry.spec is not None:
            self._connect(entry.spec)

    def _replace(self, entry: ServerEntry, approval: Any) -> None:
        self.entries = [
            ServerEntry(e.name, e.scope, e.source, e.spec, e.problem, approval)
            if e is entry or e.name == entry.name
            else e
            for e in self.entries
        ]
        self.refresh()

    async def _prompt(self, server: str, prompt: dict[str, Any], arguments: str) -> CommandOutcome:
        declared = [a for a in prompt.get("arguments") or [] if isinstance(a, dict) and isinstance(a.get("name"), str)]
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        values: dict[str, str] = {}
        for index, arg in enumerate(declared):
            if index >= len(words):
                break
            values[arg["name"]] = " ".join(words[index:]) if index == len(declared) - 1 else words[index]
        missing = [a["name"] for a in declared if a.get("required") and a["name"] not in values]
        command = prompt_command(server, str(prompt["name"]))
        if missing:
            usage = " ".join(a["name"] if a.get("required") else f"[{a['name']}]" for a in declared)
            return CommandOutcome(reply=f"/{command} needs: {', '.join(missing)}. Usage: /{command} {usage}")
        try:
            result = await self._connection(server).request(self, "prompts/get", str(prompt["name"]), values)
        except (Unavailable, CallFailed, ToolError) as error:
            return CommandOutcome(reply=str(error))
        messages = [m for m in result.get("messages") or [] if isinstance(m, dict)]
        blocks: list[dict[str, Any]] = []
        several = len({m.get("role") for m in messages}) > 1
        for message in messages:
            content = message.get("content")
            items = content if isinstance(content, list) else [content] if isinstance(content, dict) else []
            if several:
                blocks.append({"type": "text", "text": f"[{message.get('role', 'user')}]"})
            blocks += blocks_of(items, server, data_dir=self.manager.data_dir / "mcp-prompts")
        if not blocks:
            return CommandOutcome(reply=f"/{command}: the server returned an empty prompt.")
        return CommandOutcome(blocks=blocks)


class McpView:
    """A sub-agent's look at its session's MCP servers: the same tools and calls, and no way to close them."""

    def __init__(self, session: McpSession) -> None:
        self._session = session

    def tools(self) -> list[AnyTool]:
        snapshot = self._session._last or self._session.snapshot()
        return [] if snapshot is None else [*snapshot.tools, *snapshot.deferrable]

    @property
    def instructions(self) -> str:
        snapshot = self._session._last or self._session.snapshot()
        return "" if snapshot is None else snapshot.instructions


def prompt_command(server: str, prompt: str) -> str:
    return mcp_name(server, prompt)


__all__ = ["CommandOutcome", "McpCommand", "McpManager", "McpSession", "McpSnapshot", "McpTool", "McpView"]


def _indented(config: str) -> str:
    """A server's configuration lines under its heading: broken at its own line breaks only (each line is
    escaped already: `_shown`), so nothing in it makes a line of the question."""
    return "\n".join(f"  {line}" for line in config.split("\n"))
