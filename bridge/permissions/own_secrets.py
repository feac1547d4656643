"""The bridge's own secrets: the one list of the files the model must never see or change, whatever the rules,
the mode or the workspace (the user may open their home folder, or `~/.claude` to edit agents and skills).

- `<data dir>/mcp-auth/`: the MCP servers' sign-in tokens (bridge/mcp/oauth.py);
- `<data dir>/sessions/*.jsonl` and `sessions/*/agents/`: every session's transcript and its sub-agents', which
  hold what earlier tool calls returned, in any project;
- `<data dir>/checkpoints/`: the checkpoint store, copies of the files of every workspace the bridge edited;
- `<Claude home>/.credentials.json`: Claude Code's sign-in.

A session's own stored results (`sessions/<id>/tool-results/`, `bash-output/`) are not on it: the model is told to
page through them with Read.

Who asks it: the OS sandbox masks these paths for commands (bridge/execution/sandbox.py); the permission engine
denies any call that names one, reading or writing, in every mode (engine step 1), and asks before a command reads
a directory that holds one when no sandbox masks them (step 10); Grep and Glob leave them out of their results
(read_guard.py). Paths are compared as resolved, so a link in the workspace that leads to one is one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from bridge.permissions.path_access import PathAccess
from bridge.permissions.specifiers import PathPattern, compile_path_specifier

_GLOB = re.compile(r"([*?\[\\])")


@dataclass(frozen=True)
class Secret:
    fixed: Path  # the directory (or file) all its paths lie under
    pattern: PathPattern
    what: str  # for the reason a call is denied


@dataclass(frozen=True)
class OwnSecrets:
    secrets: tuple[Secret, ...] = ()

    @classmethod
    def of(cls, data_dir: Path, claude_home: Path) -> OwnSecrets:
        data, claude = Path(os.path.realpath(data_dir)), Path(os.path.realpath(claude_home))
        entries = (
            (data, "mcp-auth", "its MCP servers' sign-in tokens"),
            (data, "sessions/*.jsonl", "a session transcript"),
            (data, "sessions/*/agents", "a sub-agent's transcript"),
            (data, "checkpoints", "its checkpoint store"),
            (claude, ".credentials.json", "Claude Code's sign-in"),
        )
        return cls(tuple(_secret(base, below, what) for base, below, what in entries))

    @property
    def patterns(self) -> tuple[PathPattern, ...]:
        """For the sandbox's masks."""
        return tuple(s.pattern for s in self.secrets)

    def of_path(self, path: Path) -> Secret | None:
        """The secret `path` (absolute, normalized) is or lies in."""
        return next((s for s in self.secrets if s.pattern.matches(path)), None)

    def named(self, accesses: Iterable[PathAccess]) -> tuple[PathAccess, Secret] | None:
        """The first access that reaches a secret, as named or as resolved (through links and `..`)."""
        for access in accesses:
            for path in (access.real, access.written):
                secret = self.of_path(path)
                if secret is not None:
                    return access, secret
        return None

    def held_in(self, roots: Iterable[PathAccess]) -> tuple[PathAccess, Secret] | None:
        """The first directory read as a whole (`grep -r`) that holds a secret."""
        for root in roots:
            for path in (root.real, root.written):
                secret = next((s for s in self.secrets if s.fixed.is_relative_to(path)), None)
                if secret is not None:
                    return root, secret
        return None


def _secret(base: Path, below: str, what: str) -> Secret:
    literal = below.split("/")
    stop = next((i for i, p in enumerate(literal) if _GLOB.search(p)), len(literal))
    fixed = base.joinpath(*literal[:stop])
    spec = _absolute(base) + "/" + below
    return Secret(fixed, compile_path_specifier(spec, cwd=base, root=base), what)


def _absolute(path: Path) -> str:
    """`path` as the start of an absolute rule pattern (`//…`), its glob characters escaped."""
    if isinstance(path, PureWindowsPath):  # `//c/Users/…`: drive C (bridge/winpaths.py)
        rest = PurePosixPath(*path.parts[1:]).as_posix() if len(path.parts) > 1 else ""
        return f"//{path.drive[:1].lower()}/" + _GLOB.sub(r"\\\1", rest).rstrip("/")
    return "/" + _GLOB.sub(r"\\\1", path.as_posix()).rstrip("/")
