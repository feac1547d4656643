"""Claude Code plugins the user installed: their skills, commands, agents, hooks and MCP servers load here too.

Claude Code keeps what is installed in `~/.claude/plugins/installed_plugins.json` (`{"plugins": {"name@market":
[{"installPath": ...}]}}`, or one object per id in older files) and what is on in `enabledPlugins`
(`{"name@market": true}`) of its settings. A plugin folder holds `.claude-plugin/plugin.json` (its `name`),
`skills/*/SKILL.md`, `commands/*.md`, `agents/*.md`, `hooks/hooks.json` and `.mcp.json`; `${CLAUDE_PLUGIN_ROOT}`
in hook commands and server configs is the plugin's folder. Its commands, skills and agents are named
`plugin:name`.

A plugin the user enabled (in `~/.claude/settings.json`) is the user's. One that only a folder's own
`.claude/settings*.json` enables is the folder's say: it waits for the user's trust like any widening item
(`plugin_items`). Nothing that can't be used is fatal: each plugin that did not load says why (`/plugins`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.jsonfile import SETTINGS_MAX_BYTES, read_json
from bridge.permissions.trust import TrustItem

PLUGIN_ROOT = "${CLAUDE_PLUGIN_ROOT}"


@dataclass(frozen=True)
class Plugin:
    id: str  # name@marketplace, as enabledPlugins names it
    name: str
    root: Path
    enabled_by: str  # the settings file that turns it on

    def folder(self, part: str) -> Path:
        return self.root / part

    def substitute(self, text: str) -> str:
        return text.replace(PLUGIN_ROOT, str(self.root))


@dataclass
class PluginSet:
    plugins: list[Plugin] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "id: why", for /plugins and the user

    def skill_folders(self) -> list[tuple[str, Path]]:
        return [(p.name, p.folder("skills")) for p in self.plugins]

    def command_folders(self) -> list[tuple[str, Path]]:
        return [(p.name, p.folder("commands")) for p in self.plugins]

    def agent_folders(self) -> list[tuple[str, Path]]:
        return [(p.name, p.folder("agents")) for p in self.plugins]

    def describe(self) -> str:
        """Markdown (shown as the agent's text): a list each, whose lines don't run together."""
        lines = [f"- {p.name} ({p.id}) — {p.root}, enabled in {p.enabled_by}" for p in self.plugins]
        text = "Plugins loaded:\n" + "\n".join(lines) if lines else "Plugins loaded: none"
        if self.skipped:
            text += "\n\nNot loaded:\n" + "\n".join(f"- {line}" for line in self.skipped)
        return text


def enabled_ids(path: Path, *, within: Path | None = None) -> dict[str, bool]:
    """`enabledPlugins` of a settings file (`within`: the folder of a folder's own file, read only inside it)."""
    data, _ = read_json(path, within=within, max_bytes=SETTINGS_MAX_BYTES)
    found = data.get("enabledPlugins") if isinstance(data, dict) else None
    return (
        {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, bool)}
        if isinstance(found, dict)
        else {}
    )


def plugin_items(cwd: Path) -> list[TrustItem]:
    """What a folder's own Claude Code settings enable: one trust item per plugin."""
    items = []
    for name in (".claude/settings.json", ".claude/settings.local.json"):
        for plugin, on in enabled_ids(cwd / name, within=cwd).items():
            if on:
                items.append(TrustItem(name, "plugin", plugin))
    return items


def load_plugins(cwd: Path, claude_home: Path, admits: Any) -> PluginSet:
    """The enabled, installed plugins. `admits(item)`: whether the user trusts a folder's own `TrustItem`."""
    result = PluginSet()
    user_settings = claude_home / "settings.json"
    enabled: dict[str, str] = {}
    for plugin, on in enabled_ids(user_settings).items():
        if on:
            enabled[plugin] = str(user_settings)
        else:
            result.skipped.append(f"{plugin}: disabled in {user_settings}")
    for item in plugin_items(cwd):
        if item.text in enabled:
            continue
        if admits(item):
            enabled[item.text] = str(cwd / item.file)
        else:
            result.skipped.append(f"{item.text}: enabled by this folder's {item.file}, which you have not trusted")
    installed = _installed(claude_home / "plugins" / "installed_plugins.json")
    for plugin_id, by in enabled.items():
        root = installed.get(plugin_id)
        if root is None:
            result.skipped.append(
                f"{plugin_id}: enabled in {by} but not installed (no entry in "
                f"{claude_home / 'plugins' / 'installed_plugins.json'})"
            )
            continue
        if not root.is_dir():
            result.skipped.append(f"{plugin_id}: its folder {root} is missing")
            continue
        manifest, problem = read_json(root / ".claude-plugin" / "plugin.json")
        name = manifest.get("name") if isinstance(manifest, dict) else None
        if problem or not isinstance(name, str) or not name.strip():
            why = problem or "it has no `name`"
            result.skipped.append(f"{plugin_id}: {root / '.claude-plugin' / 'plugin.json'}: {why}")
            continue
        result.plugins.append(Plugin(plugin_id, name.strip(), root, by))
    return result


def installed_folders(claude_home: Path) -> list[Path]:
    """Every installed plugin's folder, enabled or not."""
    return list(_installed(claude_home / "plugins" / "installed_plugins.json").values())


def _installed(path: Path) -> dict[str, Path]:
    data, _ = read_json(path)
    plugins = data.get("plugins") if isinstance(data, dict) else None
    out: dict[str, Path] = {}
    for plugin_id, entry in plugins.items() if isinstance(plugins, dict) else []:
        entries = entry if isinstance(entry, list) else [entry]
        for item in entries:
            where = item.get("installPath") if isinstance(item, dict) else None
            if isinstance(where, str) and where:
                out[plugin_id] = Path(os.path.expanduser(where))
                break
    return out


def plugin_hooks(plugin: Plugin) -> dict[str, Any]:
    """The plugin's `hooks/hooks.json` `hooks` object with `${CLAUDE_PLUGIN_ROOT}` filled in ({} when none)."""
    data, _ = read_json(plugin.folder("hooks") / "hooks.json")
    hooks = data.get("hooks") if isinstance(data, dict) else None
    return json.loads(plugin.substitute(json.dumps(hooks))) if isinstance(hooks, dict) else {}


def plugin_servers(plugin: Plugin) -> dict[str, Any]:
    """The plugin's MCP servers (`.mcp.json`, or plugin.json's `mcpServers`), `${CLAUDE_PLUGIN_ROOT}` filled in."""
    data, _ = read_json(plugin.root / ".mcp.json")
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        manifest, _ = read_json(plugin.root / ".claude-plugin" / "plugin.json")
        servers = manifest.get("mcpServers") if isinstance(manifest, dict) else None
    return json.loads(plugin.substitute(json.dumps(servers))) if isinstance(servers, dict) else {}
