"""How the tools and prompts of MCP servers are named: `mcp__<server>__<name>`, API-safe, as Claude Code names
them, so permission rules (`mcp__server`, `mcp__server__*`, `mcp__server__tool`) read the same in both. The MCP
client makes the names and the permission layer, below it, reads them: the one format lives in the ground."""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def name_part(name: str) -> str:
    """`name` with every character a tool name may not hold (the Messages API's) made `_`."""
    return _UNSAFE.sub("_", name)


_RUNS = re.compile(r"__+")


def server_part(server: str) -> str:
    """A server's part of its tools' names: `name_part`, with no `__` in it (a run of `_` is one) and no `_` at
    either end, so the part after `mcp__` up to the next `__` is always the whole server: a server named
    `github__x` (or `github::x`) is `github_x`, `github_` is `github`, and a rule about server `github` says
    nothing of `github_x`'s tools (attack rounds 14, 15). Two servers whose names come to the same part can't
    both be: bridge/mcp/config.py's `discover` keeps the first. A name of nothing but such characters is `unnamed`."""
    part = _RUNS.sub("_", name_part(server)).strip("_") or "unnamed"
    if len(part) > MAX_SERVER_PART:  # shortened, told apart by a digest of the whole (round 16: cut at the name's
        # 64 characters, a long server's tools had no server part left, and its deny rules did not apply)
        part = f"{part[: MAX_SERVER_PART - 9].rstrip('_')}_{_digest(part)}"
    return part


MAX_NAME = 64  # the Messages API's limit on a tool name
MAX_SERVER_PART = 40  # `mcp__` + 40 + `__` leaves a tool 17 characters at least


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def mcp_name(server: str, name: str) -> str:
    """The name of a server's tool or prompt (`mcp__github__create_issue`), at most MAX_NAME characters: a tool
    part that doesn't fit is shortened and told apart by a digest of the whole, the server part kept whole."""
    head = f"{PREFIX}{server_part(server)}__"
    tool = name_part(name)
    if len(head) + len(tool) > MAX_NAME:
        tool = f"{tool[: MAX_NAME - len(head) - 9]}_{_digest(tool)}"
    return head + tool


def server_of(name: str) -> str | None:
    """The server part of an MCP tool's name (as `name_part` made it); None for any other name."""
    parts = name.split("__")
    return parts[1] if len(parts) >= 3 and parts[0] == "mcp" else None


def server_rule(name: str) -> str | None:
    """The rule naming every tool of the server an MCP tool belongs to (`mcp__github`); None for other tools."""
    server = server_of(name)
    return None if server is None else f"{PREFIX}{server}"


def is_server_glob(rule_tool: str) -> bool:
    """`mcp__server__*`: a rule naming every tool of one server."""
    return rule_tool.startswith(PREFIX) and rule_tool.endswith("__*")
