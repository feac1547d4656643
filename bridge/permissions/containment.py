"""Where a path really is: resolved through `~`, `..` and symlinks, then judged against the workspace.

The workspace is the session's cwd plus `additionalDirectories`. Resolution uses `os.path.realpath`, which
follows symlinks component by component as the kernel does (so `link/..` is the parent of the link's
target) and keeps the unresolvable tail of a path that does not exist yet.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Files whose writing always asks, whatever the mode or rules: the bridge's and Claude Code's own settings
# (a model that can edit them can grant itself anything) and git's internals (hooks run code).
_PROTECTED_DIRS = (".git", ".agent-bridge")
_PROTECTED_CLAUDE_FILES = ("settings.json", "settings.local.json")
SAFE_WRITE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})


def resolve(path: str | Path, base: Path) -> Path:
    """Absolute, `~`-expanded, symlink-free path of `path` taken relative to `base`."""
    expanded = os.path.expanduser(os.fspath(path))
    joined = os.path.join(os.fspath(base), expanded)  # an absolute `expanded` wins
    return Path(os.path.realpath(joined))


def normalize(path: str | Path, base: Path) -> Path:
    """Like `resolve` but without following symlinks: the path as written, for deny rules and protection."""
    expanded = os.path.expanduser(os.fspath(path))
    return Path(os.path.normpath(os.path.join(os.fspath(base), expanded)))


@dataclass(frozen=True)
class Workspace:
    roots: tuple[Path, ...]  # resolved; the first is the session's cwd
    protected_files: frozenset[Path] = frozenset()

    @classmethod
    def of(cls, cwd: Path, additional: Iterable[Path] = (), protected_files: Iterable[Path] = ()) -> Workspace:
        roots = [Path(os.path.realpath(cwd))]
        for extra in additional:
            real = Path(os.path.realpath(os.path.expanduser(os.fspath(extra))))
            if real not in roots:
                roots.append(real)
        files = frozenset(Path(os.path.realpath(p)) for p in protected_files)
        return cls(tuple(roots), files)

    @property
    def cwd(self) -> Path:
        return self.roots[0]

    def contains(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def contains_all(self, paths: Sequence[Path]) -> bool:
        return all(self.contains(p) for p in paths)

    def protected_reason(self, written: Path) -> str | None:
        """Why writing `written` (absolute) must always ask, or None. Checked on both the path as written
        and its resolved form, case-insensitively (macOS and Windows file systems fold case)."""
        for candidate in {written, Path(os.path.realpath(written))}:
            if candidate in self.protected_files:
                return f"{candidate} is a settings file of the bridge"
            parts = [p.casefold() for p in candidate.parts]
            for name in _PROTECTED_DIRS:
                if name in parts[:-1] or parts[-1:] == [name]:
                    return f"{candidate} is inside {name}/, which is always asked for"
            if len(parts) >= 2 and parts[-2] == ".claude" and parts[-1] in _PROTECTED_CLAUDE_FILES:
                return f"{candidate} is a Claude Code settings file"
        return None
