"""Path handling shared by the file tools."""

from __future__ import annotations

import os
from pathlib import Path

from bridge.tools.base import ToolError


def absolute_path(raw: str, *, field: str = "file_path") -> Path:
    """The model must send absolute paths (as Claude Code's tools require); `~` is expanded.
    The result is normalized (`..` folded) but symlinks are not resolved: containment checks do that."""
    expanded = os.path.expanduser(raw)
    if not os.path.isabs(expanded):
        raise ToolError(f"{field} must be an absolute path, got {raw!r}")
    return Path(os.path.normpath(expanded))


def read_error(path: Path, error: OSError, *, missing: str | None = None) -> ToolError:
    """An OS error from opening or reading `path`, as a message the model can act on (Read, Write, Edit)."""
    if isinstance(error, FileNotFoundError):
        return ToolError(missing or f"File does not exist: {path}")
    if isinstance(error, IsADirectoryError):
        return ToolError(f"{path} is a directory, not a file. List it with Glob or Bash `ls`.")
    if isinstance(error, PermissionError):
        return ToolError(f"Permission denied reading {path}.")
    return ToolError(f"Cannot read {path}: {error.strerror or error}")


def looks_binary(sample: bytes) -> bool:
    """A NUL byte in the first block, as git and ripgrep decide."""
    return b"\x00" in sample[:8192]
