"""What a tool call states about itself for the permission decision, and how the engine asks for it.

The permission layer names no tool and imports none (DESIGN.md's layers). Each tool states its facts through
the Tool contract (bridge/tools/base.py): the paths it reads and writes, the host it fetches from, the shell
command it runs, what a `Tool(name)` rule names of it, whether it leaves plan mode, and the `RuleForm` its rules
take. The executor binds a tool to its call (a `PermissionCall`) and hands that to the engine, which asks for
the facts in its worker thread, under its deadline — of the call's own input, or of a hook's rewrite of it.
A new tool states its facts and needs no edit here or in the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:  # the shell analysis is loaded by the tool that runs commands, not by whoever states facts
    from bridge.permissions.shell import ShellVerdict

Access = Literal["read", "write"]
SpecifierKind = Literal["name", "command", "domain", "path"]


@dataclass(frozen=True)
class RuleForm:
    """How a rule naming the tool reads (`Tool(specifier)`, Claude Code's rule language):

    - `name` (the default): the specifier equals what the call names (`Agent(Explore)`: its agent type);
    - `command`: a command pattern matched against each simple command the call runs (`Bash(npm test *)`);
    - `domain`: `domain:HOST` or `domain:*.HOST`; a tool whose rules take it fetches from the network, which can
      leak what it sends, so it asks unless a domain rule allows the host;
    - `path`: a gitignore-style path pattern (`Edit(src/**)`) about the call's reads or its writes (`access`).

    `family`: a rule naming this tool speaks about every path tool of the same access (an `Edit` rule covers
    Write and NotebookEdit, a `Read` rule Grep and Glob). `others`: it speaks about that access by tools that
    take no path rules (a `Write` rule covers `echo > f`, a `Read` rule `cat f`). `aliases`: older tool names
    whose rules mean the same kind of tool (Claude Code's `LS`, `MultiEdit`)."""

    specifier: SpecifierKind = "name"
    access: Access | None = None
    family: bool = False
    others: bool = False
    aliases: tuple[str, ...] = ()

    def reaches(self, access: Access) -> bool:
        """Whether this is a path tool of `access`: its own rules, not the others' rules, judge those paths."""
        return self.specifier == "path" and self.access == access


NAME_RULES = RuleForm()
"""The form of a tool that states none: its rules' specifiers are compared with what the call names."""


@dataclass(frozen=True)
class ShellCall:
    """A shell command a call runs: its text exactly as it will run (the question shows it), and the one
    verdict on it (bridge/permissions/shell.py)."""

    text: str
    verdict: ShellVerdict


@dataclass(frozen=True)
class CallFacts:
    """What one call states about itself; the engine judges it by these and by nothing else."""

    tool: str  # its name, as rules name it
    form: RuleForm = NAME_RULES
    read_only: bool = False  # changes nothing: it may run in plan mode, and inside the workspace without asking
    paths: tuple[tuple[Path, Access], ...] = ()  # as the call names them, in its order (the decision resolves
    # each: `Decision.resolved`)
    host: str | None = None  # the host a `domain` tool fetches from (None: it can't be known)
    shell: ShellCall | None = None  # the command it runs, read
    subject: str | None = None  # what a `name` rule's specifier is compared with
    leaves_plan: bool = False  # asks in plan mode (the user approves the plan); elsewhere there is nothing to leave
    starts: tuple[str, str] | None = None  # another tool it runs as, and its subject (a forking Skill starts an
    # `Agent` of type general-purpose): that tool's rules about every call of it or of that subject deny or ask too


class PermissionCall(Protocol):
    """A tool call as the engine asks about it. The executor binds the tool to its call (bridge/tools/base.py's
    `BoundCall`); `facts` may do real work (reading a long command), so the engine asks in its worker thread."""

    @property
    def tool_name(self) -> str: ...

    @property
    def raw_input(self) -> dict[str, Any]: ...

    @property
    def read_only(self) -> bool:
        """As the executor found it before asking (a read-only sub-agent's policy refuses the rest)."""
        ...

    def facts(self, rewritten: dict[str, Any] | None = None) -> CallFacts:
        """The facts of the call's input, or of `rewritten` (a hook's rewrite of it: what will run)."""
        ...
