"""Whether a session in a folder would have MCP servers at all, told cheaply (a few bounded reads, no parsing but
Claude Code's state file, none of the MCP client's modules).

`agent-bridge run` connects its session's servers only when there are any (the client's modules and the reads of
`discover` cost its first tool call ~10 ms otherwise), and sends its first request ahead of the load only when there
are none (their tools join that request: a guess without them would be sent for nothing). The files are
bridge/mcp/config.py's `discover`'s (a test holds them equal); the editor's servers and plugins' are the caller's.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

import platformdirs

from bridge.jsonfile import STATE_MAX_BYTES, read_text

KEY = "mcpServers"
_SOME_SERVERS = re.compile(r'"mcpServers"\s*:\s*(?!\{\s*\})')


def claude_json(environ: Mapping[str, str]) -> Path:
    """Claude Code's state file (`ConfigFiles.claude_json`)."""
    override = environ.get("CLAUDE_CONFIG_DIR")
    return Path(override) / ".claude.json" if override else Path(environ.get("HOME") or Path.home()) / ".claude.json"


def server_files(cwd: Path, environ: Mapping[str, str]) -> list[tuple[Path, Path | None]]:
    """The files besides Claude Code's state file that may name servers, in `discover`'s order, each with the
    folder it is read within (the folder's own files: never through a link out of it, as `discover` reads them)."""
    root = Path(os.path.realpath(cwd))
    user = Path(environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    return [
        (root / ".agent-bridge" / "settings.local.json", root),
        (root / ".mcp.json", root),
        (root / ".agent-bridge" / "settings.json", root),
        (user / "settings.json", None),
    ]


def configured(cwd: Path, environ: Mapping[str, str] | None = None) -> bool:
    """True when a file names MCP servers for `cwd`, or one can't be read (unsure: `discover` will say why)."""
    env = os.environ if environ is None else environ
    for path, within in server_files(cwd, env):
        try:
            if KEY in read_text(path, within=within):
                return True
        except FileNotFoundError:
            continue
        except (OSError, ValueError):
            return True
    # Claude Code writes `"mcpServers": {}` for every project it opened: only servers count. The file grows with its
    # history (megabytes): it is parsed only when some `mcpServers` in it is not an empty object.
    try:
        text = read_text(claude_json(env), max_bytes=STATE_MAX_BYTES)
        if not _SOME_SERVERS.search(text):
            return False
        state = json.loads(text)
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    if not isinstance(state, dict):
        return True
    projects = state.get("projects")
    project = projects.get(os.path.realpath(cwd)) if isinstance(projects, dict) else None
    return any(_named(found) for found in (state.get(KEY), project.get(KEY) if isinstance(project, dict) else None))


def _named(servers: object) -> bool:
    return servers is not None and servers != {}
