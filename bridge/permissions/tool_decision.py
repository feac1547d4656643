"""The decision on a call that runs no command, once deny and ask rules, plan mode and protection have had their
say (the engine's step 11-12): an allow rule for the call or for each of its paths, read-only inside the
workspace, an edit inside it in acceptEdits mode — or a question with a narrow always-rule to save.
"""

from __future__ import annotations

from bridge.permissions.containment import Workspace
from bridge.permissions.facts import Access
from bridge.permissions.judged import Judged
from bridge.permissions.matching import CallRules, allow_rule, by_rule
from bridge.permissions.modes import Mode
from bridge.permissions.path_access import PathAccess
from bridge.permissions.suggestions import Suggester
from bridge.permissions.types import Decision
from bridge.secrets import environment_file


class ToolJudge:
    def __init__(self, call: Judged, rules: CallRules, workspace: Workspace, mode: Mode, suggester: Suggester) -> None:
        self.call = call
        self.rules = rules
        self.workspace = workspace
        self.mode = mode
        self.suggest = suggester

    def decide(self) -> Decision:
        call, form = self.call, self.call.facts.form
        whole = allow_rule(self.rules, call)
        if whole is not None:
            return by_rule("allow", whole, f"allowed by rule {whole.text}")
        accesses: list[tuple[PathAccess, Access]] = [(a, "read") for a in call.reads] + [
            (a, "write") for a in call.writes
        ]
        if accesses:
            hits = [self.rules.allow_for_path(a.real, access) for a, access in accesses]
            if all(hit is not None for hit in hits):
                first = hits[0]
                assert first is not None
                return by_rule("allow", first, f"allowed by rule {first.text}")
        outside = [a.real for a, _ in accesses if not self.workspace.contains(a.real)]
        environ = next((a.real for a in call.reads if environment_file(str(a.real))), None)
        if environ is not None:  # the bridge's own environment holds its API key
            return Decision("ask", f"{environ} is the environment of a process, which may hold secrets")
        if form.specifier == "domain":  # read-only, but a fetch can leak: asks unless a domain rule allows
            return self._ask(f"Fetch from {call.host or 'this address'}")
        if call.read_only and not call.writes and not outside:
            return Decision("allow", "read-only, inside the workspace")
        if self.mode == "acceptEdits" and form.reaches("write") and not outside:
            return Decision("allow", "acceptEdits mode: an edit inside the workspace")
        if outside:
            return self._ask(f"{outside[0]} is outside the workspace")
        return self._ask(f"{call.tool} needs permission")

    def _ask(self, reason: str) -> Decision:
        call = self.call
        outside = [a.real for a in call.reads if not self.workspace.contains(a.real)]
        suggestions = self.suggest.tool(call.tool, call.facts.form, [a.real for a in call.writes], outside, call.host)
        return Decision("ask", reason, suggestions=suggestions)
