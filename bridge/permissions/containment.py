"""Where a path really is: resolved through `~`, `..` and symlinks, then judged against the workspace.

The workspace is the session's cwd plus `additionalDirectories`. Resolution uses `os.path.realpath`, which
follows symlinks component by component as the kernel does (so `link/..` is the parent of the link's
target) and keeps the unresolvable tail of a path that does not exist yet.

Protected paths come in two strengths. Settings, hooks and git internals (`.git/`, `.agent-bridge/`,
`.claude/settings*.json`, `.mcp.json`, the user's settings) always ask before a write, in every mode: a
model that can write them can grant itself anything. Memory files (`CLAUDE.md`, `CLAUDE.local.md`,
`AGENTS.md`) and agent/command definitions (`.claude/agents/`, `.claude/commands/`) load into the next
session's prompt: writing them asks in every mode but bypassPermissions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SETTINGS_DIRS = (".git", ".agent-bridge")
CLAUDE_SETTINGS = ("settings.json", "settings.local.json")
ROOT_SETTINGS = (".mcp.json",)
MEMORY_NAMES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md")
DEFINITION_DIRS = ((".claude", "agents"), (".claude", "commands"), (".agent-bridge", "agents"),
                   (".agent-bridge", "commands"))
_MEMORY_FOLDED = frozenset(name.casefold() for name in MEMORY_NAMES)
PathKind = Literal["file", "dir"]
# What the OS sandbox holds read-only at every root, whether it exists yet or not: the settings and
# definition directories, project MCP servers, memory files, and of `.git` only what runs code on the host
# (hooks, config) — the engine asks for any write under `.git`, but a commit must still work in the sandbox.
HELD_READ_ONLY: tuple[tuple[str, PathKind], ...] = (
    (".agent-bridge", "dir"),
    (".claude", "dir"),
    *((name, "file") for name in ROOT_SETTINGS),
    *((name, "file") for name in MEMORY_NAMES),
    (".git/hooks", "dir"),
    (".git/config", "file"),
)
SAFE_WRITE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})

Protection = Literal["settings", "memory"]


class InvalidPath(ValueError):
    """A path no file can have (a NUL byte) or that the OS refuses to resolve."""


def resolve(path: str | Path, base: Path) -> Path:
    """Absolute, `~`-expanded, symlink-free path of `path` taken relative to `base`."""
    expanded = _checked(os.path.expanduser(os.fspath(path)))
    joined = os.path.join(os.fspath(base), expanded)  # an absolute `expanded` wins
    try:
        return Path(os.path.realpath(joined))
    except (OSError, ValueError) as exc:
        raise InvalidPath(f"{path}: {exc}") from exc


def normalize(path: str | Path, base: Path) -> Path:
    """Like `resolve` but without following symlinks: the path as written, for deny rules and protection."""
    expanded = _checked(os.path.expanduser(os.fspath(path)))
    return Path(os.path.normpath(os.path.join(os.fspath(base), expanded)))


def _checked(path: str) -> str:
    if "\x00" in path:
        raise InvalidPath("the path contains a NUL byte")
    return path


@dataclass(frozen=True)
class Workspace:
    roots: tuple[Path, ...]  # resolved; the first is the session's cwd
    protected_files: frozenset[Path] = frozenset()  # settings files outside the roots (the user's)
    memory_files: frozenset[Path] = frozenset()  # memory files outside the roots (the user's)

    @classmethod
    def of(cls, cwd: Path, additional: Iterable[Path] = (), protected_files: Iterable[Path] = (),
           memory_files: Iterable[Path] = ()) -> Workspace:
        roots = [Path(os.path.realpath(cwd))]
        for extra in additional:
            real = Path(os.path.realpath(os.path.expanduser(os.fspath(extra))))
            if real not in roots:
                roots.append(real)
        files = frozenset(Path(os.path.realpath(p)) for p in protected_files)
        memory = frozenset(Path(os.path.realpath(p)) for p in memory_files)
        return cls(tuple(roots), files, memory)

    @property
    def cwd(self) -> Path:
        return self.roots[0]

    def contains(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def contains_all(self, paths: Sequence[Path]) -> bool:
        return all(self.contains(p) for p in paths)

    def writable_roots(self) -> list[Path]:
        """Where commands may write (the sandbox adds the temp directory)."""
        return list(self.roots)

    def protected_paths(self) -> list[Path]:
        """Every path writes must never reach unasked, as concrete paths (they need not exist): what the
        sandbox makes read-only. Memory files deeper than a root are protected by name by the engine, not
        here."""
        out = [root / name for root in self.roots for name, _kind in HELD_READ_ONLY]
        out += sorted(self.protected_files) + sorted(self.memory_files)
        return list(dict.fromkeys(out))

    def protected_reason(self, written: Path) -> tuple[str, Protection] | None:
        """Why writing `written` (absolute) must ask, and how strongly; None when it need not. Checked on
        the path as written and its resolved form, case-insensitively (macOS and Windows fold case)."""
        try:
            real = Path(os.path.realpath(written))
        except (OSError, ValueError):
            real = written
        memory: tuple[str, Protection] | None = None
        for candidate in dict.fromkeys((written, real)):
            if candidate in self.protected_files:
                return f"{candidate} is a settings file of the bridge", "settings"
            parts = [p.casefold() for p in candidate.parts]
            for name in SETTINGS_DIRS:
                if name in parts[:-1] or parts[-1:] == [name]:
                    return f"{candidate} is inside {name}/, which is always asked for", "settings"
            if len(parts) >= 2 and parts[-2] == ".claude" and parts[-1] in CLAUDE_SETTINGS:
                return f"{candidate} is a Claude Code settings file", "settings"
            if parts[-1:] == [".claude"]:
                return f"{candidate} holds Claude Code's settings", "settings"
            if parts and parts[-1] in ROOT_SETTINGS and candidate.parent in self.roots:
                return f"{candidate} configures MCP servers (programs the bridge starts)", "settings"
            if candidate in self.memory_files or (parts and parts[-1] in _MEMORY_FOLDED):
                memory = memory or (f"{candidate} is a memory file (it loads into the next session's prompt)", "memory")
            for outer, inner in DEFINITION_DIRS:
                if any(parts[i] == outer and parts[i + 1] == inner for i in range(len(parts) - 1)):
                    memory = memory or (f"{candidate} is an agent or command definition", "memory")
        return memory

    def protected_below(self, directory: Path) -> tuple[str, Protection] | None:
        """A recursive write of `directory` (`rm -r`, `mv`): protected when it holds a protected path."""
        try:
            real = Path(os.path.realpath(directory))
        except (OSError, ValueError):
            return f"{directory} can't be resolved", "settings"
        found = self.protected_reason(real)
        if found is not None:
            return found
        for root in self.roots:
            if root == real or root.is_relative_to(real):
                return f"{real} holds the workspace's settings", "settings"
        try:
            names = os.listdir(real) if real.is_dir() else []
        except OSError:
            names = []
        for name in names:
            found = self.protected_reason(real / name)
            if found is not None:
                return found
        return None
