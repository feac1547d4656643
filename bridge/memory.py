"""Memory files: `AGENTS.md` and `CLAUDE.md` (+ `CLAUDE.local.md`) from the project root down to the
cwd, and the user's own. They go into the system prompt, read once per session (stable for caching)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

NAMES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md")
MAX_CHARS = 40_000


def project_root(cwd: Path) -> Path:
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


def user_memory_files() -> list[Path]:
    config = Path(os.environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    return [config / "AGENTS.md", Path.home() / ".claude" / "CLAUDE.md"]


def memory_files(cwd: Path) -> list[Path]:
    root = project_root(cwd)
    chain = [cwd, *cwd.parents]
    directories = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [cwd]
    found = [path for path in user_memory_files() if path.is_file()]
    for directory in directories:
        found += [directory / name for name in NAMES if (directory / name).is_file()]
    return found


def memory_section(cwd: Path) -> str:
    parts: list[str] = []
    budget = MAX_CHARS
    for path in memory_files(cwd):
        try:
            text = path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            continue
        if not text or budget <= 0:
            continue
        text = text[:budget]
        budget -= len(text)
        parts.append(f"## {path}\n{text}")
    if not parts:
        return ""
    return "# Memory (instructions from the user's files; follow them)\n\n" + "\n\n".join(parts)
