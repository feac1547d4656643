"""Which rules speak about one call, and the first that matches it.

The grammar (grammar.py) names the rules: the call's own and its family's, which judge it as a whole (a command
pattern against each part, a host, a path, or what the call names), and the path rules of others, which judge
any call's reads and writes (`Read(~/.ssh/**)` also stops `cat ~/.ssh/id_rsa`). Deny and ask rules fail closed:
a command that can't be read in full matches every rule that could apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.permissions.facts import NAME_RULES, Access, RuleForm
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.path_access import path_hit
from bridge.permissions.rules import CompiledRule, RuleIndex
from bridge.permissions.types import Behavior, Decision

if TYPE_CHECKING:
    from bridge.permissions.judged import Judged


@dataclass(frozen=True)
class CallRules:
    """The rules that speak about a call of `tool` (whose rules take `form`)."""

    index: RuleIndex
    grammar: RuleGrammar
    tool: str = ""
    form: RuleForm = NAME_RULES  # the default: a call that takes no path rules (others' rules judge its paths)

    @cached_property
    def names(self) -> tuple[str, ...]:
        return self.grammar.names_for(self.tool, self.form)

    def own(self, behavior: Behavior) -> list[CompiledRule]:
        return self.index.rules_for(behavior, self.names, self.tool)

    def commands(self, behavior: Behavior, heads: set[str]) -> list[CompiledRule]:
        """Its command rules that may match a command starting with one of `heads`, in rule order."""
        return self.index.command_rules(behavior, self.names, heads)

    def about(self, behavior: Behavior, access: Access) -> list[CompiledRule]:
        """The path rules of others that judge this access (none for a path tool of that access: its own do)."""
        if self.form.reaches(access):
            return []
        return [r for r in self.index.rules_for(behavior, self.grammar.others(access)) if r.path is not None]

    def allow_for_path(self, real: Path, access: Access) -> CompiledRule | None:
        """An allow rule naming this path for this access (a rule allowing writes also allows reading)."""
        names = self.grammar.path_names(self.tool, self.form, access)
        if access == "read":
            names += self.grammar.others("write")
        for rule in self.index.rules_for("allow", names):
            if rule.path is not None and rule.matches_path(real):
                return rule
        return None


def matching_rule(rules: CallRules, call: Judged, behavior: Behavior) -> CompiledRule | None:
    """The first rule of `behavior` that speaks about any part of the call (for deny and ask)."""
    bash = call.bash
    for rule in rules.own(behavior):
        if rule.rule.specifier is None:
            return rule
        if bash is not None and rule.command is not None and bash.bash_rule_hits(rule):
            return rule
        if rule.domain is not None and call.host is not None and rule.matches_host(call.host):
            return rule
        if rule.path is not None and any(path_hit(rule, a) for a in call.reads + call.writes):
            return rule
        if subject_hit(rule, call):
            return rule
    if bash is None and not call.reads and not call.writes:
        return None  # nothing for the path rules of others to speak about
    for rule in rules.about(behavior, "read"):
        if bash.read_rule_hits(rule) if bash is not None else any(path_hit(rule, a) for a in call.reads):
            return rule
    for rule in rules.about(behavior, "write"):
        if bash.write_rule_hits(rule) if bash is not None else any(path_hit(rule, a) for a in call.writes):
            return rule
    return None


def allow_rule(rules: CallRules, call: Judged) -> CompiledRule | None:
    """An allow rule for the call as a whole: the whole tool, its host, or what it names (paths: `allow_for_path`)."""
    for rule in rules.own("allow"):
        if rule.rule.specifier is None:
            return rule
        if rule.domain is not None and call.host is not None and rule.matches_host(call.host):
            return rule
        if subject_hit(rule, call):
            return rule
    return None


def subject_hit(rule: CompiledRule, call: Judged) -> bool:
    """A `name` rule of the call's own tool (`Agent(Explore)`) naming what the call names."""
    spec = rule.rule.specifier
    if spec is None or rule.command or rule.path or rule.domain or rule.rule.tool != call.tool:
        return False
    return call.facts.subject == spec


def by_rule(behavior: Behavior, rule: CompiledRule, reason: str) -> Decision:
    file = rule.origin.file
    return Decision(
        behavior, reason, rule=rule.text, source=rule.origin.source, source_file=str(file) if file is not None else None
    )
