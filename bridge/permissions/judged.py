"""A call's stated facts made concrete for one decision: each path resolved (as named and as it really is), the
command's parts set against the file system, the host in the form rules compare. Resolving is the engine's
part: a tool states what it names, never where that really leads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bridge.permissions.bash_facts import BashFacts
from bridge.permissions.containment import Workspace
from bridge.permissions.facts import CallFacts
from bridge.permissions.path_access import PathAccess
from bridge.permissions.specifiers import normalize_host


@dataclass
class Judged:
    facts: CallFacts
    reads: list[PathAccess] = field(default_factory=list)
    writes: list[PathAccess] = field(default_factory=list)
    bash: BashFacts | None = None  # the command a call runs, resolved
    host: str | None = None
    resolved: list[Path] = field(default_factory=list)  # each stated path's real path, in the order given

    @classmethod
    def of(cls, facts: CallFacts, cwd: Path, workspace: Workspace) -> Judged:
        """Raises InvalidPath for a path no file can have (the call is denied)."""
        judged = cls(facts, host=normalize_host(facts.host) if facts.host else None)
        for path, access in facts.paths:
            resolved = PathAccess.of(path, cwd)
            (judged.writes if access == "write" else judged.reads).append(resolved)
            judged.resolved.append(resolved.real)
        if facts.shell is not None:
            judged.bash = BashFacts.of(facts.shell.verdict, cwd, workspace)
        return judged

    @property
    def tool(self) -> str:
        return self.facts.tool

    @property
    def read_only(self) -> bool:
        return self.facts.read_only

    def fail_closed(self) -> str:
        """What a deny or ask reason adds when the command can't be read in full: every rule that could apply
        did."""
        why = self.bash.fail_closed() if self.bash is not None else None
        return f" (it may: {why}, so every rule that could apply does)" if why else ""
