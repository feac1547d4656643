"""Step 7 of a decision: a write to a protected path asks, in every mode, whatever the rules say.

Protected are the settings, hooks and git internals, and what runs later by itself (containment.py,
runs_later.py); a command changing git's settings (`git config k v`, `git remote add`) writes them too
(git_held.py). What the user allows at this question is granted to the call alone (`Decision.grants`: the OS
sandbox opens exactly those paths for it); a command whose writes can't be listed gets no grant, so protected
files stay read-only for it in the sandbox, and the question says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bridge.permissions.bash_facts import BashFacts
from bridge.permissions.command_parts import Part
from bridge.permissions.containment import Protection, Workspace
from bridge.permissions.git_held import git_directory, git_settings_written
from bridge.permissions.judged import Judged
from bridge.permissions.path_access import PathAccess

Found = list[tuple[str, Protection, PathAccess]]  # why, how strongly, the write


@dataclass(frozen=True)
class Protected:
    reason: str | None = None  # why the call must ask (None: it need not)
    grants: tuple[Path, ...] = ()  # the protected paths it writes, granted when the user allows it


def protected(call: Judged, workspace: Workspace, *, memory_too: bool) -> Protected:
    """Why this call must ask because it writes a protected path, and what it writes. `memory_too`: memory
    files ask too (all modes but bypassPermissions, where they are not granted either: the sandbox keeps them
    read-only for commands; the file tools write them)."""
    writes: Found = []
    if call.bash is not None:
        unknown = _unknown_writes(call.bash)
        if unknown is not None:
            return Protected(
                f"{unknown}: it can't be checked for writes to protected files (the sandbox keeps "
                "them read-only for it)"
            )
        writes = _command_writes(call.bash, workspace)
    elif call.writes:
        later = workspace.runs_later()
        for access in call.writes:
            found = workspace.protected_reason(access.written, later)
            if found is not None:
                writes.append((found[0], found[1], access))
    asking = [why for why, strength, _ in writes if strength == "settings" or memory_too]
    grants = tuple(dict.fromkeys(g for _, _, access in writes for g in (access.real, access.written)))
    if not asking:
        return Protected(None, grants)
    others = len(asking) - 1
    more = f" (and {others} more protected path{'s' if others > 1 else ''})" if others else ""
    return Protected(f"Writing {asking[0]}{more}", grants)


def _unknown_writes(bash: BashFacts) -> str | None:
    """Why a command's writes can't be listed (it may write anything the sandbox lets it), or None."""
    if not bash.verdict.ok:
        return f"The command {bash.verdict.error}"
    return next((f.unknown_writes for f in bash.parts if f.unknown_writes is not None), None)


def _command_writes(bash: BashFacts, workspace: Workspace) -> Found:
    """The protected paths a command writes: its redirections and known outputs, what a recursive write
    holds, and git's settings where the command is git changing them (`git config k v`)."""
    found: Found = []
    later = workspace.runs_later() if any(f.writes for f in bash.parts) else []
    for facts in bash.parts:
        for access in facts.writes:
            reason = workspace.protected_reason(access.written, later)
            if reason is not None:
                found.append((reason[0], reason[1], access))
        for access in facts.write_trees:
            reason = workspace.protected_below(access.written)
            if reason is not None:
                found.append((reason[0], reason[1], access))
        found += _git_settings(facts.part, bash.bases)
    return found


def _git_settings(part: Part, bases: list[Path]) -> Found:
    words = part.effective
    if part.nested or not words or not all(w.static for w in words) or os.path.basename(words[0].value) != "git":
        return []
    values = [w.value for w in words]
    out: Found = []
    for base in bases:
        where = base
        for i, value in enumerate(values[:-1]):
            if value == "-C":
                where = Path(os.path.normpath(where / os.path.expanduser(values[i + 1])))
        gitdir = git_directory(where)
        written = git_settings_written(values, repository_exists=gitdir.exists())
        for name in written:
            access = PathAccess.of(gitdir / name, where)
            what = "git's hooks" if name == "hooks" else "git's settings"
            out.append(
                (
                    f"{access.written} (`{part.text}` changes {what}): settings there can make git run "
                    "programs outside the sandbox (core.fsmonitor, core.hooksPath, aliases)",
                    "settings",
                    access,
                )
            )
    return out
