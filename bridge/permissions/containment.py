"""Where a path really is: resolved through `~`, `..` and symlinks, then judged against the workspace.

The workspace is the session's cwd plus `additionalDirectories`. Resolution uses `os.path.realpath`, which
follows symlinks component by component as the kernel does (so `link/..` is the parent of the link's
target) and keeps the unresolvable tail of a path that does not exist yet.

Protected paths come in two strengths. Settings, hooks and git internals (`.git/`, `.agent-bridge/`,
`.claude/settings*.json`, `.mcp.json`, the user's settings) and every file something runs later by itself
(bridge/permissions/runs_later.py: editor and IDE folders, environment loaders, hook managers, the files the
configured hooks and MCP servers name) always ask before a write, in every mode: a model that can write them
can grant itself anything, or run code outside the sandbox. Memory files (`CLAUDE.md`, `CLAUDE.local.md`,
`AGENTS.md`) and agent/command definitions (`.claude/agents/`, `.claude/commands/`) load into the next
session's prompt: writing them asks in every mode but bypassPermissions.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bridge.permissions.git_held import git_held, nested_git_held
from bridge.permissions.git_reading import tracked_links
from bridge.permissions.held import HeldPath, PathKind, Protection
from bridge.permissions.runs_later import held_at, mcp_named, name_reason
from bridge.winpaths import native_form

SETTINGS_DIRS = (".git", ".agent-bridge")
CLAUDE_SETTINGS = ("settings.json", "settings.local.json")
ROOT_SETTINGS = (".mcp.json",)
MEMORY_NAMES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md")
_INSTALLED = ("site-packages", "dist-packages", "node_modules")
DEFINITION_DIRS = (
    (".claude", "agents"),
    (".claude", "commands"),
    (".agent-bridge", "agents"),
    (".agent-bridge", "commands"),
    (".claude", "skills"),  # skills load into the next session's prompt too (bridge/skills.py's project folders)
    (".agents", "skills"),
    (".agent-bridge", "skills"),
)
_MEMORY_FOLDED = frozenset(name.casefold() for name in MEMORY_NAMES)

__all__ = ["HeldPath", "PathKind", "Protection"]


class InvalidPath(ValueError):
    """A path no file can have (a NUL byte) or that the OS refuses to resolve."""


def resolve(path: str | Path, base: Path) -> Path:
    """Absolute, `~`-expanded, symlink-free path of `path` taken relative to `base` (on Windows Git Bash's `/c/x`
    is `C:\\x`: bridge/winpaths.py)."""
    expanded = _checked(os.path.expanduser(native_form(os.fspath(path))))
    joined = os.path.join(os.fspath(base), expanded)  # an absolute `expanded` wins
    try:
        return Path(os.path.realpath(joined))
    except (OSError, ValueError) as exc:
        raise InvalidPath(f"{path}: {exc}") from exc


def normalize(path: str | Path, base: Path) -> Path:
    """Like `resolve` but without following symlinks: the path as written, for deny rules and protection."""
    expanded = _checked(os.path.expanduser(native_form(os.fspath(path))))
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
    named: tuple[HeldPath, ...] = ()  # files the configured hooks and MCP servers name (they run later)

    @classmethod
    def of(
        cls,
        cwd: Path,
        additional: Iterable[Path] = (),
        protected_files: Iterable[Path] = (),
        memory_files: Iterable[Path] = (),
        named: Iterable[HeldPath] = (),
    ) -> Workspace:
        roots = [Path(os.path.realpath(cwd))]
        for extra in additional:
            real = Path(os.path.realpath(os.path.expanduser(os.fspath(extra))))
            if real not in roots:
                roots.append(real)
        files = frozenset(Path(os.path.realpath(p)) for p in protected_files)
        memory = frozenset(Path(os.path.realpath(p)) for p in memory_files)
        return cls(tuple(roots), files, memory, tuple(named))

    @property
    def cwd(self) -> Path:
        return self.roots[0]

    def contains(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self.roots)

    def held(self) -> list[HeldPath]:
        """Every concrete path the sandbox holds read-only (they need not exist): at each root, runs_later's
        names and git's; the user's settings and memory files; the files hooks and MCP servers name."""
        out = [held for root in self.roots for held in held_at(root)]
        out += [HeldPath(p, "file", "it is a settings file of the bridge") for p in sorted(self.protected_files)]
        out += [
            HeldPath(p, "file", "it is a memory file (it loads into the next session's prompt)", "memory")
            for p in sorted(self.memory_files)
        ]
        out += self.named
        return list({h.path: h for h in reversed(out)}.values())[::-1]  # the first reason for a path wins

    def runs_later(self) -> list[HeldPath]:
        """The held paths found by what names them rather than by their own name: the files hooks and MCP
        servers name, and git's (the roots' repositories and those one level below: config, hooks, what the
        config names)."""
        out = list(self.named)
        for root in self.roots:
            out += [h for h in (*git_held(root), *nested_git_held(root)) if not h.new_repository]
            out += mcp_named(root / ".mcp.json", root)
        return out + self.aliases()

    def aliases(self) -> list[HeldPath]:
        """Where a link makes another name for a held path: a repository can ship `.husky -> hk`, `.claude -> cfg`
        or `.mcp.json -> mcp.real.json` (git keeps links), and writing `hk/pre-commit` is writing the hook git
        runs. The held path's target is held as the held path is (the sandbox holds it so too: bwrap follows the
        link). Only links on the way to a held path count, not every link in the workspace."""
        out: list[HeldPath] = []
        for held in self.held():
            try:
                real = Path(os.path.realpath(held.path))
            except (OSError, ValueError):
                continue
            if real != held.path:
                why = f"it is {held.path} under another name (a link leads there): {held.why}"
                out.append(HeldPath(real, held.kind, why, held.strength))
        for root in self.roots:
            for link, real in _links_below(root):
                # a link below the root held by its name (`frontend/.husky -> ../hk`, `pkg/.envrc -> x.sh`: the
                # names held at any depth): its target is held as the link is (attack round 9)
                if not self.contains(real):
                    continue  # outside: asked for as outside the workspace
                found = self.protected_reason(link, later=[])
                if found is not None:
                    why = f"a link held by its name leads there ({link}): {found[0]}"
                    kind: PathKind = "dir" if os.path.isdir(real) else "file"
                    out.append(HeldPath(real, kind, why, found[1]))
        return out

    @staticmethod
    def _runs_later(candidate: Path, later: list[HeldPath]) -> tuple[str, Protection] | None:
        for held in later:
            if candidate == held.path or (held.kind == "dir" and candidate.is_relative_to(held.path)):
                return f"{candidate}: {held.why}", held.strength
        return None

    def protected_reason(
        self, written: Path, later: list[HeldPath] | None = None, *, resolved: bool = False
    ) -> tuple[str, Protection] | None:
        """Why writing `written` (absolute) must ask, and how strongly; None when it need not. Checked on
        the path as written and its resolved form, case-insensitively (macOS and Windows fold case). `later`:
        `runs_later()`, when the caller asks about many paths; `resolved`: `written` is its own real path (the
        caller knows: a name that is no link in a resolved folder)."""
        try:
            real = written if resolved else Path(os.path.realpath(written))
        except (OSError, ValueError):
            real = written
        if later is None:
            later = self.runs_later()
        memory: tuple[str, Protection] | None = None
        for candidate in dict.fromkeys((written, real)):
            if candidate in self.protected_files:
                return f"{candidate} is a settings file of the bridge", "settings"
            found = self._runs_later(candidate, later)
            if found is not None and found[1] == "settings":
                return found
            if found is not None:
                memory = memory or found
            runs = name_reason(candidate)
            if runs is not None:
                return runs, "settings"
            parts = [p.casefold() for p in candidate.parts]
            for name in SETTINGS_DIRS:
                if name in parts[:-1] or parts[-1:] == [name]:
                    return f"{candidate} is inside {name}/, which is always asked for", "settings"
            if len(parts) >= 2 and parts[-2] == ".claude" and parts[-1] in CLAUDE_SETTINGS:
                return f"{candidate} is a Claude Code settings file", "settings"
            if parts[-1:] == [".claude"]:
                return f"{candidate} holds Claude Code's settings", "settings"
            if parts[-1:] in (["config"], ["head"]) and _git_directory_shaped(candidate):
                return (
                    f"{candidate}: its folder looks like a git directory (HEAD and config): git runs what it names",
                    "settings",
                )
            if parts and parts[-1] in ROOT_SETTINGS and candidate.parent in self.roots:
                return f"{candidate} configures MCP servers (programs the bridge starts)", "settings"
            if candidate in self.memory_files or (parts and parts[-1] in _MEMORY_FOLDED):
                memory = memory or (f"{candidate} is a memory file (it loads into the next session's prompt)", "memory")
            for outer, inner in DEFINITION_DIRS:
                if any(parts[i] == outer and parts[i + 1] == inner for i in range(len(parts) - 1)):
                    memory = memory or (f"{candidate} is an agent, command or skill definition", "memory")
            if memory is None and any(name in parts[:-1] for name in _INSTALLED):
                # a tool the hooks run imports it (`fmtool .` from the virtualenv): what pip and npm write, not ours
                memory = (f"{candidate} is installed code (a trusted hook or tool may run it)", "memory")
            if memory is None and ".claude" in parts[:-1]:
                # its hooks and status line scripts: Claude Code runs them, outside any sandbox
                return f"{candidate} is inside .claude/, whose scripts Claude Code runs", "settings"
        return memory

    def protected_below(self, directory: Path) -> tuple[str, Protection] | None:
        """A recursive write of `directory` (`rm -r`, `mv`): protected when it holds a protected path."""
        try:
            real = Path(os.path.realpath(directory))
        except (OSError, ValueError):
            return f"{directory} can't be resolved", "settings"
        later = self.runs_later()
        found = self.protected_reason(real, later)
        if found is not None:
            return found
        for root in self.roots:
            if root == real or root.is_relative_to(real):
                return f"{real} holds the workspace's settings", "settings"
        for held in later:
            if held.path.is_relative_to(real):
                return f"{real} holds {held.path}: {held.why}", "settings"
        try:
            with os.scandir(real) as listing:
                entries = [(entry.name, entry.is_symlink()) for entry in listing]
        except OSError:  # (not a folder, or gone)
            entries = []
        for name, link in entries:
            found = self.protected_reason(real / name, later, resolved=not link)
            if found is not None:
                return found
        return None


LINK_SCAN_ENTRIES = 50_000  # entries one look for links in a root may visit
LINK_SCAN_SECONDS = 0.25
LINK_SCAN_AGE = 30.0  # how long a look's links are reused (a link a command makes at a held name asks for itself)
_SKIPPED_DIRS = frozenset({".git", "node_modules", ".hg", ".jj", ".venv", "__pycache__"})
_link_scans: dict[Path, tuple[float, tuple[Path, ...]]] = {}


def _links_below(root: Path) -> list[tuple[Path, Path]]:
    """The symbolic links below `root` and where each leads now: those the index of its repository tracks (what a
    clone made, however big the tree: attack round 10 hid one behind 60,000 files), and those a look finds,
    breadth-first, bounded in entries and time, not into links or the folders no one keeps held names in. The
    links are kept LINK_SCAN_AGE seconds; where they lead is read at every call (a link on the way re-pointed
    meanwhile, attack round 10, is followed as it is now)."""
    now = time.monotonic()
    kept = _link_scans.get(root)
    if kept is None or now - kept[0] >= LINK_SCAN_AGE:
        found: list[Path] = [root / name for name in tracked_links(root)]
        budget, deadline = LINK_SCAN_ENTRIES, now + LINK_SCAN_SECONDS
        queue = deque([os.fspath(root)])
        while queue and budget > 0 and time.monotonic() < deadline:
            try:
                with os.scandir(queue.popleft()) as entries:
                    for entry in entries:
                        budget -= 1
                        if entry.is_symlink():
                            found.append(Path(entry.path))
                        elif entry.is_dir(follow_symlinks=False) and entry.name not in _SKIPPED_DIRS:
                            queue.append(entry.path)
            except OSError:
                continue
        kept = _link_scans[root] = (now, tuple(dict.fromkeys(found)))
    out = []
    for link in kept[1]:
        with contextlib.suppress(OSError, ValueError):
            if os.path.islink(link):
                out.append((link, Path(os.path.realpath(link))))
    return out


def _git_directory_shaped(path: Path) -> bool:
    """A `config` beside a `HEAD` (or the other way round): git takes such a folder for a git directory (given
    `objects/` and `refs/`, which cost nothing to add), and runs what its config names (`core.fsmonitor`) for
    whoever runs git there, or a prompt that does on `cd`."""
    other = "HEAD" if path.name.casefold() == "config" else "config"
    return os.path.isfile(path.parent / other)
