"""Permission rules: `Tool` or `Tool(specifier)`, parsed without any tool, compiled by the form the tool's rules
take (bridge/permissions/grammar.py), and indexed by name for the lookups of one call.

A rule's text is Claude Code's: `Bash(npm test *)`, `Edit(src/**)`, `WebFetch(domain:example.com)`,
`mcp__server` (every tool of that server), `mcp__server__*`, `mcp__server__tool`; `Tool()` and `Tool(*)` mean
the whole tool. What a specifier means is its tool's form (bridge/permissions/specifiers.py compiles each kind):
a settings file is parsed when it is read, and compiled once the session knows its tools' forms.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from pathlib import Path

from bridge.mcp_names import PREFIX as MCP_PREFIX
from bridge.mcp_names import is_server_glob
from bridge.permissions.facts import NAME_RULES, RuleForm
from bridge.permissions.specifiers import (
    CommandTail,
    PathPattern,
    RuleSyntaxError,
    command_leading_word,
    command_tokens,
    compile_command_pattern,
    compile_path_specifier,
    could_match_words,
    normalize_host,
)
from bridge.permissions.types import Behavior, SourceName

_TOOL_NAME = re.compile(rf"^(?:[A-Za-z_][A-Za-z0-9_\-]*|{MCP_PREFIX}[A-Za-z0-9_\-]+__\*)$")

__all__ = ["RuleSyntaxError"]


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = text.strip()
        if not text:
            raise RuleSyntaxError("empty rule")
        open_at = text.find("(")
        if open_at < 0:
            if not _TOOL_NAME.match(text):
                raise RuleSyntaxError(f"invalid tool name in rule {text!r}")
            return cls(text)
        if not text.endswith(")"):
            raise RuleSyntaxError(f"rule {text!r} opens '(' but does not end with ')'")
        tool, spec = text[:open_at], text[open_at + 1 : -1]
        if not _TOOL_NAME.match(tool):
            raise RuleSyntaxError(f"invalid tool name in rule {text!r}")
        spec = spec.replace("\\(", "(").replace("\\)", ")")
        if spec.strip() in ("", "*"):
            return cls(tool)  # `Bash()` and `Bash(*)` mean the whole tool, as in Claude Code
        return cls(tool, spec)

    def __str__(self) -> str:
        if self.specifier is None:
            return self.tool
        return f"{self.tool}({self.specifier.replace('(', chr(92) + '(').replace(')', chr(92) + ')')})"

    @property
    def text(self) -> str:
        return str(self)


# --- compiled rules with their origin -----------------------------------------------------------------


@dataclass(frozen=True)
class RuleOrigin:
    source: SourceName
    file: Path | None = None  # None for session rules
    root: Path | None = None  # the project root `/path` patterns are relative to


@dataclass(frozen=True)
class PlacedRule:
    """A rule where it was written: its behavior and where it came from (not yet compiled)."""

    rule: Rule
    behavior: Behavior
    origin: RuleOrigin
    bound: bool = False  # a folder's allow rule for one script, trusted as that script was (widening.rule_binding)

    @property
    def text(self) -> str:
        return self.rule.text


@dataclass(frozen=True)
class CompiledRule:
    """A rule compiled by its tool's form: a command pattern, a path pattern, a host, or a name to compare."""

    rule: Rule
    behavior: Behavior
    origin: RuleOrigin
    form: RuleForm = NAME_RULES
    bound: bool = False  # PlacedRule.bound: it vouches for a script as it was, not for a command that may change it
    command: re.Pattern[str] | None = None
    command_word: str | None = None
    command_head: str | None = None  # command_word as it starts a canonical command (shell-quoted)
    command_tokens: tuple[str, ...] = ()
    command_tail: CommandTail = ""
    path: PathPattern | None = None
    domain: str | None = None
    name_glob: re.Pattern[str] | None = None
    # a command rule that starts with settings (`Bash(RAILS_ENV=production rails *)`): the settings, each a
    # `NAME=value` pattern (`*` any text), and the rest of the rule compiled on its own. Deny and ask rules look
    # for the settings among every setting a command gets (Part.setting_words), in any order.
    settings: tuple[Setting, ...] = ()
    rest: CompiledRule | None = None

    @property
    def text(self) -> str:
        return self.rule.text

    def matches_command(self, canonical: str) -> bool:
        return self.command is not None and self.command.match(canonical) is not None

    def could_match(self, known: Sequence[str], next_glob: str | None) -> bool:
        """For a command read only in part (see `could_match_words`); a rule without a pattern matches any."""
        if self.command is None:
            return True
        return could_match_words(self.command_tokens, self.command_tail, known, next_glob)

    def matches_path(self, path: Path) -> bool:
        return self.path is not None and self.path.matches(path)

    def matches_host(self, host: str) -> bool:
        if self.domain is None:
            return False
        if self.domain.startswith("*."):
            return host.endswith(self.domain[1:])
        return host == self.domain


def compile_rule(placed: PlacedRule, form: RuleForm, *, cwd: Path) -> CompiledRule:
    """`placed` compiled as a rule of `form` (its tool's); a specifier that can't be read raises RuleSyntaxError."""
    rule, spec = placed.rule, placed.rule.specifier
    base = CompiledRule(rule, placed.behavior, placed.origin, form, bound=placed.bound)
    if spec is None:
        if is_server_glob(rule.tool):
            return dataclass_replace(base, name_glob=re.compile(re.escape(rule.tool[:-1]) + r".+\Z"))
        return base
    if form.specifier == "command":
        word = command_leading_word(spec)
        tokens, tail = command_tokens(spec)
        settings, rest = _leading_settings(spec)
        return dataclass_replace(
            base,
            settings=settings,
            rest=compile_rule(dataclass_replace(placed, rule=Rule(rule.tool, rest)), form, cwd=cwd)
            if settings
            else None,
            command=compile_command_pattern(spec),
            command_word=word,
            command_head=shlex.quote(word) if word is not None else None,
            command_tokens=tokens,
            command_tail=tail,
        )
    if form.specifier == "path":
        root = placed.origin.root or cwd
        return dataclass_replace(base, path=compile_path_specifier(spec, cwd=cwd, root=root))
    if form.specifier == "domain":
        if not spec.startswith("domain:"):
            raise RuleSyntaxError(f"{rule.tool} rules take `domain:HOST`, got {rule.text!r}")
        return dataclass_replace(base, domain=normalize_host(spec.removeprefix("domain:")))
    return base  # a `name` specifier (`Agent(Explore)`): compared with what the call names


_SETTING = r"[A-Za-z_*][A-Za-z0-9_*]*=(?:'[^']*'|\"[^\"]*\"|[^\s'\"])*"
_SETTINGS = re.compile(rf"((?:{_SETTING}\s+)+)(\S.*)", re.S)
_ONLY_SETTINGS = re.compile(rf"(?:{_SETTING}\s+)*{_SETTING}", re.S)  # `RAILS_ENV=production*`: any command after


def _leading_settings(spec: str) -> tuple[tuple[Setting, ...], str]:
    """`RAILS_ENV=production rails *` -> (`RAILS_ENV=production`, `rails *`); no settings: ((), spec). The prefix
    forms say the same: `RAILS_ENV=production:*` and `RAILS_ENV=production*` are `RAILS_ENV=production*` and `*`."""
    text = spec.strip()
    text = text[:-2] + "*" if text.endswith(":*") else text
    found = _SETTINGS.fullmatch(text)
    if found is not None:
        head, rest = found.group(1), found.group(2)
    elif _ONLY_SETTINGS.fullmatch(text) and text.endswith("*"):
        head, rest = text, "*"
    else:
        return (), spec
    try:
        words = shlex.split(head)
    except ValueError:
        return (), spec
    return tuple(Setting.of(word) for word in words), rest


@dataclass(frozen=True)
class Setting:
    """One `NAME=value` of a rule, `*` any text in either: the whole word's pattern, and its name's."""

    word: re.Pattern[str]
    name: re.Pattern[str]

    @classmethod
    def of(cls, text: str) -> Setting:
        def glob(part: str) -> re.Pattern[str]:
            return re.compile(".*".join(re.escape(piece) for piece in part.split("*")), re.S)

        return cls(glob(text), glob(text.split("=", 1)[0]))


@dataclass
class RuleIndex:
    """Compiled rules by behavior and by rule name, for cheap lookups per call."""

    by_behavior: dict[Behavior, dict[str, list[CompiledRule]]] = field(
        default_factory=lambda: {"allow": {}, "ask": {}, "deny": {}}
    )
    mcp_globs: dict[Behavior, list[CompiledRule]] = field(default_factory=lambda: {"allow": [], "ask": [], "deny": []})
    _heads: dict[
        tuple[Behavior, tuple[str, ...]],
        tuple[dict[str, list[tuple[int, CompiledRule]]], list[tuple[int, CompiledRule]]],
    ] = field(default_factory=dict)

    def command_rules(self, behavior: Behavior, names: tuple[str, ...], heads: Iterable[str]) -> list[CompiledRule]:
        """The rules of `behavior` under `names` that may match a command starting with one of `heads` (shell-quoted
        first words), in rule order: a lookup by first word instead of a walk over every rule."""
        key = (behavior, names)
        if key not in self._heads:
            by_head: dict[str, list[tuple[int, CompiledRule]]] = {}
            headless: list[tuple[int, CompiledRule]] = []
            for position, rule in enumerate(self.rules_for(behavior, names)):
                if rule.command_head is None:
                    headless.append((position, rule))
                else:
                    by_head.setdefault(rule.command_head, []).append((position, rule))
            self._heads[key] = (by_head, headless)
        by_head, headless = self._heads[key]
        found = list(headless)
        for head in set(heads):
            found += by_head.get(head, [])
        return [rule for _, rule in sorted(found, key=lambda pair: pair[0])]

    def add(self, compiled: CompiledRule) -> None:
        self._heads.clear()
        if compiled.name_glob is not None:
            self.mcp_globs[compiled.behavior].append(compiled)
        else:
            self.by_behavior[compiled.behavior].setdefault(compiled.rule.tool, []).append(compiled)

    def extend(self, rules: Iterable[CompiledRule]) -> None:
        for compiled in rules:
            self.add(compiled)

    def rules_for(self, behavior: Behavior, names: Iterable[str], tool: str | None = None) -> list[CompiledRule]:
        """The rules of `behavior` under `names` (grammar.py says which names speak about a call), then the
        `mcp__server__*` rules matching `tool`."""
        table = self.by_behavior[behavior]
        found: list[CompiledRule] = []
        for name in names:
            found.extend(table.get(name, ()))
        if tool is not None:
            found.extend(r for r in self.mcp_globs[behavior] if r.name_glob is not None and r.name_glob.match(tool))
        return found


@dataclass
class RuleSet:
    """Rules given as strings, e.g. by the editor or CLI flags for one session."""

    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def items(self) -> Iterable[tuple[Behavior, str]]:
        groups: tuple[tuple[Behavior, list[str]], ...] = (("deny", self.deny), ("ask", self.ask), ("allow", self.allow))
        for behavior, texts in groups:
            for text in texts:
                yield behavior, text

    @classmethod
    def of(cls, *, allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = ()) -> RuleSet:
        return cls(list(allow), list(ask), list(deny))
