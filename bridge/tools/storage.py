"""Large tool results (the seed's maxResultSizeChars): beyond a tool's limit the full text goes to a file
and the model gets a preview plus the path, which it can page through with Read (offset/limit)."""

from __future__ import annotations

import logging
import math
import os
import uuid
from pathlib import Path

from bridge.messages import valid_tool_use_id
from bridge.tools.base import ToolError
from bridge.tools.fileio import atomic_write

log = logging.getLogger(__name__)

PREVIEW_CHARS = 2_000


def result_path(data_dir: Path, tool_use_id: str) -> Path:
    """Where a result is stored: named by its tool_use id when that is a valid id (the stream parser refuses
    others; asked again here because the id becomes a file name), else by a fresh random name."""
    name = tool_use_id if valid_tool_use_id(tool_use_id) else f"result_{uuid.uuid4().hex}"
    return data_dir / "tool-results" / f"{name}.txt"


def bound_result(text: str, *, limit: float, data_dir: Path, tool_use_id: str) -> str:
    """`text` itself when it fits in `limit` characters (`inf` = always); otherwise the full text is saved
    and a preview (about the first 2,000 characters, cut at a line break) with the file's path returned."""
    if math.isinf(limit) or len(text) <= limit:
        return text
    preview = _preview(text)
    path = result_path(data_dir, tool_use_id)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data dir's: its owner's alone
        atomic_write(path, text.encode("utf-8", errors="surrogateescape"))  # exact: no link in its way followed
        if os.name != "nt":
            os.chmod(path, 0o600)
    except (OSError, ToolError) as exc:
        log.warning("could not store a large tool result at %s: %s", path, exc)
        return f"{preview}\n\n[Output too large ({len(text)} chars) and could not be saved; this is the start of it.]"
    return (
        f"{preview}\n\n[Output too large ({len(text)} chars). Full output saved to {path} — "
        "read it with the Read tool using offset/limit.]"
    )


def _preview(text: str) -> str:
    head = text[:PREVIEW_CHARS]
    cut = head.rfind("\n")
    return head[:cut] if cut > PREVIEW_CHARS // 2 else head
