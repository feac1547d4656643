"""Permission decisions as data (the loop asks; a front end answers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bridge.display import Display, Location, SubAgentLabel

Behavior = Literal["allow", "ask", "deny"]
SourceName = Literal[
    "session",
    "localSettings",
    "projectSettings",
    "userSettings",
    "claudeLocalSettings",
    "claudeProjectSettings",
    "claudeUserSettings",
]


@dataclass(frozen=True)
class RuleSuggestion:
    """An always-rule a prompt offers, e.g. `Bash(npm test *)` saved to `.agent-bridge/settings.local.json`.

    A compound command may need several rules to run next time (one per part not yet allowed): `rule` is
    the first, `also` the rest; saving the suggestion saves all of them."""

    rule: str
    behavior: Literal["allow", "deny"]
    destination: str  # absolute path of the settings file it will be written to
    also: tuple[str, ...] = ()

    @property
    def rules(self) -> tuple[str, ...]:
        return (self.rule, *self.also)

    @property
    def label(self) -> str:
        """What an option's name shows, e.g. `Bash(npm test *)` or `Bash(make *), Bash(npm test *)`."""
        return ", ".join(self.rules)


@dataclass(frozen=True)
class Mark:
    """A span of a command (`start`/`end`: indices into its text) that made the check ask, and why."""

    start: int
    end: int
    why: str


@dataclass(frozen=True)
class NamedPath:
    """A path as the call names it, and where it really leads (a symlink, `..`, `~`): shown when they differ."""

    named: str
    resolved: str


@dataclass(frozen=True)
class Shown:
    """What the question must show besides the title, so that it is what runs: the exact command (Bash), the
    parts of it that made the check ask, and every path whose resolution differs from its name."""

    command: str | None = None
    marks: tuple[Mark, ...] = ()
    paths: tuple[NamedPath, ...] = ()


@dataclass(frozen=True)
class Decision:
    behavior: Behavior
    reason: str = ""
    rule: str | None = None  # the rule that decided, when one did
    source: str | None = None  # where that rule came from: a SourceName
    suggestions: list[RuleSuggestion] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None  # a hook may rewrite the input
    source_file: str | None = None  # the settings file holding that rule (None for session rules)
    shown: Shown = Shown()  # for a question: the command, the marked parts, the resolved paths
    resolved: tuple[Path, ...] = ()  # the real path judged for each path the call named, in the order given:
    # a file tool opens exactly these (no link followed), so what was judged is what is used
    grants: tuple[Path, ...] = ()
    """Protected paths (runs_later.py) an ask named: once the user allows the call, it may write them (the OS
    sandbox opens exactly these for it)."""


@dataclass(frozen=True)
class SettingsIssue:
    """An invalid settings file or entry: reported to the editor and the log, then skipped. `lockdown`: what
    was skipped may have held deny or ask rules, so until it is fixed every call asks (fail closed)."""

    file: Path
    message: str
    lockdown: bool = False

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass(frozen=True)
class PermissionRequest:
    """What the prompter shows: the tool call, and the always-rules it may save."""

    tool_call_id: str
    tool_name: str
    title: str
    kind: str
    raw_input: dict[str, Any]
    display: list[Display]  # e.g. an edit's diff
    locations: list[Location]
    reason: str
    suggestions: list[RuleSuggestion]
    agent: SubAgentLabel | None = None  # the sub-agent asking (None: the session's own loop)
    shown: Shown = Shown()  # the command as it runs, what in it asks, paths named and resolved


OptionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


@dataclass(frozen=True)
class AnswerOption:
    """One answer a question offers: its id (`allow_always`, `allow_always:2`…), its kind, and for an always-answer
    the rules it saves — exactly these."""

    option_id: str
    kind: OptionKind
    suggestion: RuleSuggestion | None = None


def answer_options(request: PermissionRequest) -> list[AnswerOption]:
    """Every answer a question offers, in the one order: allow once, always allow (one per allow suggestion),
    reject, always reject (one per deny suggestion). An answer naming no option here saves nothing."""

    def always(kind: OptionKind, behavior: str) -> list[AnswerOption]:
        chosen = [s for s in request.suggestions if s.behavior == behavior]
        return [AnswerOption(kind if i == 0 else f"{kind}:{i + 1}", kind, s) for i, s in enumerate(chosen)]

    return [
        AnswerOption("allow_once", "allow_once"),
        *always("allow_always", "allow"),
        AnswerOption("reject_once", "reject_once"),
        *always("reject_always", "deny"),
    ]


@dataclass(frozen=True)
class PermissionAnswer:
    outcome: OptionKind | Literal["cancelled"]
    feedback: str | None = None
    suggestion: RuleSuggestion | None = None  # the rule chosen with an always-option
    edited_text: str | None = None  # an accepted edit's file content as the user changed it in the diff

    @property
    def allowed(self) -> bool:
        return self.outcome in ("allow_once", "allow_always")
