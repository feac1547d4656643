"""Which rule names speak about a call: the tools' forms (`RuleForm`) as one grammar, given at composition.

A rule's text is read without any tool (`Tool(specifier)`: bridge/permissions/rules.py); what its specifier
means depends on the form its tool states — a command pattern, `domain:`, a path. The session composes the
engine with the grammar of the tools it has (bridge/tools/registry.py's `rule_grammar`), so settings files read
before any tool is imported are never parsed wrongly: nothing is compiled until the grammar is known. A name
the grammar doesn't know takes `name` rules until a call states its form (the engine then learns it).

Path rules reach past their own tool (Claude Code's rule language): the `family` tool of an access (`Edit`)
speaks for every path tool of that access, and the `others` tool (`Write`, `Read`) — with its family — for that
access by tools that take no path rules (a command's redirections and operands). An MCP tool is also named by
its server's rule (`mcp__github` covers `mcp__github__create_issue`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from bridge.mcp_names import server_rule
from bridge.permissions.facts import NAME_RULES, Access, RuleForm


@dataclass(frozen=True)
class RuleGrammar:
    forms: tuple[tuple[str, RuleForm], ...] = ()

    @classmethod
    def of(cls, forms: Mapping[str, RuleForm]) -> RuleGrammar:
        """The grammar of these tools (by name), their forms' aliases included (as plain members)."""
        out: dict[str, RuleForm] = {}
        for name, form in forms.items():
            out.setdefault(name, form)
            for alias in form.aliases:
                out.setdefault(alias, RuleForm(form.specifier, form.access))
        return cls(tuple(out.items()))

    @cached_property
    def _by_name(self) -> dict[str, RuleForm]:
        return dict(self.forms)

    def form(self, tool: str) -> RuleForm:
        return self._by_name.get(tool, NAME_RULES)

    def learn(self, tool: str, form: RuleForm) -> RuleGrammar:
        """This grammar with `tool` taking `form` (a call stated a form the composition did not know)."""
        return RuleGrammar.of({**self._by_name, tool: form})

    @cached_property
    def _names(self) -> dict[tuple[str, RuleForm], tuple[str, ...]]:
        return {}  # names_for, asked several times per decision

    def family(self, access: Access) -> str | None:
        """The tool whose rules speak for every path tool of `access` (`Edit`, `Read`)."""
        return next((name for name, form in self.forms if form.family and form.reaches(access)), None)

    def names_for(self, tool: str, form: RuleForm) -> tuple[str, ...]:
        """The rule names that speak about a call of `tool` as a whole: its own, its family's, its server's."""
        found = self._names.get((tool, form))
        if found is not None:
            return found
        names = [tool]
        family = self.family(form.access) if form.specifier == "path" and form.access is not None else None
        if family is not None and family != tool:
            names.append(family)
        server = server_rule(tool)
        if server is not None:
            names.append(server)
        return self._names.setdefault((tool, form), tuple(names))

    def others(self, access: Access) -> tuple[str, ...]:
        """The rule names that speak about `access` by a tool that takes no path rules of that access."""
        return self._others[access]

    @cached_property
    def _others(self) -> dict[Access, tuple[str, ...]]:
        out: dict[Access, tuple[str, ...]] = {}
        for access in ("read", "write"):
            judge = next((name for name, form in self.forms if form.others and form.reaches(access)), None)
            out[access] = () if judge is None else self.names_for(judge, self.form(judge))
        return out

    def path_names(self, tool: str, form: RuleForm, access: Access) -> tuple[str, ...]:
        """The rule names whose path rules judge a path `tool` reads or writes (`access`)."""
        return self.names_for(tool, form) if form.reaches(access) else self.others(access)

    def rule_name(self, tool: str, form: RuleForm, access: Access) -> str:
        """The name an always-rule about such a path is saved under: the family's for a path tool of that access
        (`Edit(src/**)` for Write), else the others' (`Write(...)`, `Read(...)`); the tool's own without one."""
        if form.reaches(access):
            return self.family(access) or tool
        judge = self.others(access)
        return judge[0] if judge else tool
