"""The system prompt: short, exact, and stable from one request to the next (prompt caching)."""

from __future__ import annotations

import datetime
import platform
from pathlib import Path

from bridge.messages import Block

INSTRUCTIONS = """\
You are a coding agent working in the user's project through tools. Be brief and exact.
- Read before you edit; prefer Edit over Write for existing files; keep changes minimal and in the project's style.
- Use absolute paths. Use Grep/Glob to find things instead of guessing.
- Run commands with Bash when it helps (tests, builds); never run destructive commands the user did not ask for.
- If a tool result says permission was denied, do not retry the same call; adapt or ask.
- When the work is done, say what you changed in a few lines."""


def environment_section(cwd: Path, today: datetime.date | None = None) -> str:
    is_git = _is_git_repo(cwd)
    day = (today or datetime.date.today()).isoformat()
    return (
        "# Environment\n"
        f"Working directory: {cwd}\n"
        f"Git repository: {'yes' if is_git else 'no'}\n"
        f"Platform: {platform.system().lower()} {platform.release()}\n"
        f"Date: {day}"
    )


def system_prompt(cwd: Path, *, memory: str = "") -> list[Block]:
    text = INSTRUCTIONS + "\n\n" + environment_section(cwd)
    if memory:
        text += "\n\n" + memory
    return [{"type": "text", "text": text}]


def _is_git_repo(cwd: Path) -> bool:
    return any((directory / ".git").exists() for directory in (cwd, *cwd.parents))
