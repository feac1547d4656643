"""`run`'s first model request, sent while the rest of the bridge is still loading.

A new session's first request is a function of the settings, the working directory (system prompt, memory
files), the tools' schemas and the prompt. This module computes it from the same functions the loop uses, with
only light imports (no pydantic, no tools, no permission engine: those take most of a second to load), and
sends it ahead (`AnthropicModel.send_ahead`). When the loop's own first request has exactly the same bytes,
the model client answers it with the response already on its way; when not, the early one is discarded
(never used) and the loop's is sent. Whatever this module cannot be sure of, it does not send ahead: a
prompt that may be a slash command, settings files with hooks (a `UserPromptSubmit` hook may change or block
the prompt), settings it cannot read the way `BridgeConfig` does, a setup that changes the tools a session
offers (the user's or the folder's agent types, skills, plugins, MCP servers).

The tools' schemas ship with the package (`tool_schemas.json`, written by `scripts/gen_tool_schemas.py`;
tests/test_first_request.py holds it equal to what a new session sends), so the first run after install is
as fast as the tenth: nothing is cached per user.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from bridge.jsonfile import read_text
from bridge.mcp.present import configured
from bridge.memory import memory_section
from bridge.messages import EPHEMERAL, repair_pairing, user_message, with_cache_breakpoints, within_limits
from bridge.model.types import ModelRequest
from bridge.prompt import system_prompt

if TYPE_CHECKING:
    import asyncio

    from bridge.model.anthropic_client import AnthropicModel

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-sonnet-4-5"  # bridge.config.DEFAULT_MODEL (tests hold the two equal)
DEFAULT_MAX_TOKENS = 16_000  # BridgeConfig.max_tokens
DEFAULT_STALL_TIMEOUT = 90.0  # BridgeConfig.stall_timeout
_NUMBER = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6})?")


def hook_sources(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """The settings files hooks come from (SettingsStore's own files; Claude Code's never give hooks)."""
    user = Path(environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    return [
        cwd / ".agent-bridge" / "settings.local.json",
        cwd / ".agent-bridge" / "settings.json",
        user / "settings.json",
    ]


def settings_files(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """Every settings file a session in `cwd` reads (bridge/permissions/settings.py's `SettingsStore.files`; a
    test holds them equal): the folder's own, the user's, Claude Code's."""
    root = Path(os.path.realpath(cwd))
    home = Path(environ.get("HOME") or Path.home())
    claude = Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    return [
        *hook_sources(root, environ),
        root / ".claude" / "settings.local.json",
        root / ".claude" / "settings.json",
        claude / "settings.json",
    ]


SCHEMAS = Path(__file__).with_name("tool_schemas.json")


def shipped_schemas() -> list[dict[str, Any]] | None:
    """The tools a new session offers when nothing adds to them, as `tool.schema()` gives them, in order."""
    try:
        schemas = json.loads(SCHEMAS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(schemas, list) or not schemas or not all(isinstance(s, dict) for s in schemas):
        return None
    return schemas


def tool_sources(cwd: Path, environ: Mapping[str, str]) -> list[Path]:
    """Folders whose contents change a session's tools: agent types (the Agent tool lists them) and skills (the
    Skill tool): bridge/agents/loader.py's `agent_dirs` and bridge/skills.py's `skill_dirs` (a test holds them
    equal)."""
    user = Path(environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    home = Path(environ.get("HOME") or Path.home())
    claude = Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    return [
        claude / "agents",
        user / "agents",
        cwd / ".claude" / "agents",
        cwd / ".agent-bridge" / "agents",
        user / "skills",
        claude / "skills",
        home / ".agents" / "skills",
        cwd / ".claude" / "skills",
        cwd / ".agents" / "skills",
        cwd / ".agent-bridge" / "skills",
    ]


def _customized(cwd: Path, environ: Mapping[str, str]) -> bool:
    """Whether the user or the folder adds tools or changes their descriptions (then the guess is not sent): agent
    types, skills, plugins, MCP servers (their tools join the first request)."""
    if configured(cwd, environ):
        return True
    for folder in tool_sources(cwd, environ):
        try:
            if any(True for _ in folder.iterdir()):
                return True
        except OSError:
            continue
    home = Path(environ.get("HOME") or Path.home())
    claude = Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    try:
        return "enabledPlugins" in read_text(claude / "settings.json")
    except FileNotFoundError:
        return False
    except (OSError, ValueError):  # unsure: no guess
        return True


def settings_of(overrides: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The settings the first request depends on, as `BridgeConfig.load` would give them; None when unsure."""
    values: dict[str, Any] = {
        "model": DEFAULT_MODEL,
        "api_key": None,
        "base_url": None,
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stall_timeout": DEFAULT_STALL_TIMEOUT,
    }
    for field, var in (
        ("model", "AGENT_BRIDGE_MODEL"),
        ("api_key", "ANTHROPIC_API_KEY"),
        ("base_url", "ANTHROPIC_BASE_URL"),
        ("stall_timeout", "AGENT_BRIDGE_STALL_TIMEOUT"),
    ):
        if environ.get(var):
            values[field] = environ[var]
    for key, value in overrides.items():
        if key in ("allow", "ask", "deny", "folderTrust"):
            continue  # permission rules and trust: nothing to do with the request
        if key not in ("model", "api_key", "base_url") or not isinstance(value, str):
            return None
        values[key] = value
    stall = values["stall_timeout"]
    if isinstance(stall, str):
        if not _NUMBER.fullmatch(stall) or float(stall) <= 0:
            return None
        values["stall_timeout"] = float(stall)
    return values


def predict(
    text: str, cwd: Path, overrides: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> tuple[ModelRequest, dict[str, Any]] | None:
    """The first request a new session in `cwd` sends for the prompt `text`, and the settings the model client
    needs; None when it cannot be told for sure."""
    env = os.environ if environ is None else environ
    if text.strip().startswith("/") or not cwd.is_dir():
        return None
    for path in hook_sources(cwd, env):
        try:  # bounded, never waits on a FIFO (bridge/jsonfile.py); anything odd: no guess
            if "hooks" in read_text(path):
                return None
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return None
    settings = settings_of(overrides, env)
    if settings is None or _customized(cwd, env):
        return None
    schemas = shipped_schemas()
    if schemas is None:
        return None
    tools = [*schemas[:-1], {**schemas[-1], "cache_control": EPHEMERAL}]
    system = system_prompt(cwd, memory=memory_section(cwd))
    system = [*system[:-1], {**system[-1], "cache_control": EPHEMERAL}] if system else []
    messages = with_cache_breakpoints(within_limits(repair_pairing([user_message([{"type": "text", "text": text}])])))
    request = ModelRequest(
        model=settings["model"], system=system, tools=tools, messages=messages, max_tokens=settings["max_tokens"]
    )
    return request, settings


def send_ahead(text: str, cwd: Path, overrides: Mapping[str, Any]) -> tuple[AnthropicModel, asyncio.Event] | None:
    """Send the predicted first request now (in the running loop): the model client holding it, and an event
    set once it is written. The real session's client takes it over (`AnthropicModel.adopt`)."""
    predicted = None
    with contextlib.suppress(Exception):  # a guess: whatever goes wrong, the loop sends its own request
        predicted = predict(text, cwd, overrides)
    if predicted is None:
        return None
    request, settings = predicted
    from bridge.model.anthropic_client import AnthropicModel

    model = AnthropicModel(
        api_key=settings["api_key"], base_url=settings["base_url"], stall_timeout=settings["stall_timeout"]
    )
    written = model.send_ahead(request)
    return (model, written) if written is not None else None
