"""MCP settings: fully defaulted; from Claude Code's environment names and the editor's `mcp` options.

Environment (Claude Code's names, milliseconds): `MCP_TIMEOUT` (a server's start-up), `MCP_TOOL_TIMEOUT` (one
call). Editor options (`initializationOptions.mcp`, seconds): `startupTimeout`, `toolTimeout`, `idleTimeout`,
`maxRestarts`, `turnWait`, `deferFraction`, `authTimeout`. The editor's options win. A bad value is reported
and its default used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bridge.config import defaulted

CHARS_PER_TOKEN = 4  # the estimate used for the deferral threshold (as bridge/offline counts tokens)


class McpSettings(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    startup_timeout: float = Field(default=30.0, gt=0, alias="startupTimeout")
    """Seconds a server has to answer `initialize` and its lists (the clock stops while a person signs in)."""
    tool_timeout: float = Field(default=600.0, gt=0, alias="toolTimeout")
    """Seconds one call (tools/call, resources/read, prompts/get) may take; then it is cancelled at the server."""
    idle_timeout: float = Field(default=1800.0, ge=0, alias="idleTimeout")
    """A server unused this long is stopped (its tools stay listed; the next use starts it again). 0: never."""
    max_restarts: int = Field(default=3, ge=0, le=100, alias="maxRestarts")
    """Restarts after a server dies, before its tools answer an error at once (`/mcp restart` resets)."""
    turn_wait: float = Field(default=5.0, ge=0, alias="turnWait")
    """Seconds a prompt waits for servers still starting; later ones join at a later prompt."""
    defer_fraction: float = Field(default=0.10, ge=0, le=1, alias="deferFraction")
    """MCP tool schemas past this fraction of the context window wait behind ToolSearch."""
    auth_timeout: float = Field(default=300.0, gt=0, alias="authTimeout")
    """Seconds the bridge waits for a person to finish an OAuth sign-in in the browser."""

    @classmethod
    def load(
        cls, options: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None
    ) -> tuple[McpSettings, list[str]]:
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        problems: list[str] = []
        for var, name in (("MCP_TIMEOUT", "startup_timeout"), ("MCP_TOOL_TIMEOUT", "tool_timeout")):
            raw = env.get(var, "").strip()
            if not raw:
                continue
            try:
                values[name] = float(raw) / 1000
            except ValueError:
                problems.append(f"{var}={raw!r} is not a number of milliseconds (using the default)")
        for key, value in (options or {}).items():
            field = next((n for n, f in cls.model_fields.items() if key in (n, f.alias)), None)
            if field is not None:
                values[field] = value
        settings, invalid = defaulted(cls, values, prefix="mcp.")
        return settings, problems + invalid

    def defer_chars(self, context_window: int) -> int:
        """Characters of MCP tool schemas past which they are deferred (Claude Code: ~10 % of the window)."""
        return int(self.defer_fraction * context_window * CHARS_PER_TOKEN)
