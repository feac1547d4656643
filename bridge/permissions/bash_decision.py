"""The decision on a shell command once deny and ask rules, plan mode and protection have had their say (the
engine's steps 11-12 for a call that runs a command): allow rules, read-only parts inside the workspace, or a
question with the parts that made it ask marked and narrow rules to save.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from bridge.permissions.bash_facts import BashFacts, PartFacts
from bridge.permissions.command_parts import Part, safe_device
from bridge.permissions.containment import resolve
from bridge.permissions.matching import CallRules, by_rule
from bridge.permissions.modes import Mode
from bridge.permissions.path_access import PathAccess
from bridge.permissions.rules import CompiledRule
from bridge.permissions.suggestions import Suggester
from bridge.permissions.types import Decision, Mark, RuleSuggestion, Shown
from bridge.secrets import environment_file, holds_environment_files

_WRITE_OPTIONS = frozenset({"--output", "--output-file", "--out-file", "--outfile", "--log-file", "--logfile"})


class BashJudge:
    """The last steps of the engine's decision for a call that runs a command (deny, ask, plan and protection
    came first). `rules`: those that speak about the call (its command rules, the path rules of others)."""

    def __init__(self, facts: BashFacts, rules: CallRules, mode: Mode, suggester: Suggester) -> None:
        self.facts = facts
        self.rules = rules
        self.mode = mode
        self.suggest = suggester
        self.workspace = facts.workspace

    def decide(self) -> Decision:
        """Allow, or ask with the parts that made it ask marked (`Shown.marks`: the question shows them)."""
        verdict = self.facts.verdict
        if not verdict.ok:
            return Decision("ask", f"The command {verdict.error}, so it cannot be checked")
        top = [f for f in self.facts.parts if not f.part.nested]
        for base in self.facts.bases[1:]:
            if not self.workspace.contains(base):
                why = f"The command changes directory to {base}, outside the workspace"
                return _ask(why, [(f.part, why) for f in top if f.part.cd is not None])
        for facts in top:
            if facts.unknown_writes is not None and facts.part.unknown_program is None:
                return _ask(f"{facts.unknown_writes}, so it cannot be checked", [(facts.part, facts.unknown_writes)])
            for access in facts.writes + facts.write_trees:
                if not self.workspace.contains(access.real) and self.rules.allow_for_path(access.real, "write") is None:
                    why = f"The command writes {access.real}, outside the workspace"
                    return _ask(why, [(facts.part, f"writes {access.real}, outside the workspace")])
        unallowed: list[tuple[Part, str]] = []
        needs_rule: list[Part] = []  # parts only a command rule would allow
        written: list[Path] = []  # workspace files their redirections write that no path rule allows
        first_rule: CompiledRule | None = None
        for facts in top:
            part = facts.part
            if not part.argv and part.hazard is None:
                reason = self._read_only_reason(facts)
                if reason is not None:
                    return _ask(reason, [(part, reason)])
                continue
            rule = self._allow_rule(part)
            risky = part.hazard or part.unknown_program
            if risky is not None and rule is None:
                return _ask(f"`{part.text}`: {risky}", [(part, risky)], self.suggest.bash([part], exact=True))
            if rule is not None:
                outside = self._option_writes_outside(part)
                if outside is not None:
                    return _ask(
                        f"`{part.text}` writes {outside}, outside the workspace",
                        [(part, f"writes {outside}, outside the workspace")],
                    )
                if rule.bound and any(not other.part.read_only for other in top if other is not facts):
                    # the folder's rule trusts a script as it was; another part of this command may change it first
                    unallowed.append((part, f"another part may change what {rule.text} runs: it was trusted as it was"))
                    needs_rule.append(part)
                    continue
                # the rule names the command, not the files its output goes to (`npm test > package.json`)
                pending = self._unallowed_writes(facts.redirected)
                if pending:
                    unallowed.append((part, f"`{part.text}` writes {pending[0].written}"))
                    written += [a.real for a in pending]
                    continue
                first_rule = first_rule or rule
                continue
            reason = self._read_only_reason(facts, writes=False)
            if reason is not None:
                unallowed.append((part, reason))
                needs_rule.append(part)
                written += [a.real for a in self._unallowed_writes(facts.redirected)]
                continue
            pending = self._unallowed_writes(facts.writes, facts.write_trees)
            if pending:  # read-only but for where its output goes (`ls > list.txt`)
                unallowed.append((part, f"`{part.text}` writes {pending[0].written}"))
                written += [a.real for a in pending]
        if not unallowed:
            if first_rule is not None:
                return by_rule("allow", first_rule, f"allowed by rule {first_rule.text}")
            return Decision("allow", "read-only commands inside the workspace")
        reasons = "; ".join(dict.fromkeys(reason for _, reason in unallowed))
        return _ask(reasons, unallowed, self.suggest.command(needs_rule, list(dict.fromkeys(written))))

    def _unallowed_writes(self, files: list[PathAccess], trees: list[PathAccess] | None = None) -> list[PathAccess]:
        """The workspace writes that need permission: none in acceptEdits; else each file no path rule allows
        (`Write(log.txt)`), and every tree (`rm -r`, `mv`: what a rule about the root says of the rest is not
        checked here). Writes outside the workspace were decided before."""
        if self.mode == "acceptEdits":
            return []
        pending = [a for a in files if self.rules.allow_for_path(a.real, "write") is None]
        return pending + list(trees or ())

    def _allow_rule(self, part: Part) -> CompiledRule | None:
        forms = [form for form in part.allow_forms() if all(w.static for w in form)]
        texts = [shlex.join(w.value for w in form) for form in forms]
        leading = {shlex.quote(form[0].value) for form in forms}
        bound: CompiledRule | None = None  # a folder's rule for one script: another rule that allows it says more
        for rule in self.rules.commands("allow", leading):
            # only a rule that names the risky command itself (`Bash(sudo apt update)`) lets it run
            if part.hazard is not None and (part.hazard_command is None or rule.command_word != part.hazard_command):
                continue
            if rule.rule.specifier is None or (part.settings_elsewhere and rule.rule.specifier.strip() == "*"):
                if part.unknown_program is None:
                    return rule
                continue
            if rule.command_head is not None and rule.command_head not in leading:
                continue
            if any(rule.matches_command(text) for text in texts):
                if not rule.bound:
                    return rule
                bound = bound or rule
        return bound

    def _option_writes_outside(self, part: Part) -> Path | None:
        """A rule-allowed command may still name an output file (`--output=/etc/x`): containment applies."""
        args = [w.value for w in part.effective]
        for i, arg in enumerate(args):
            name, _, value = arg.partition("=")
            if name not in _WRITE_OPTIONS:
                continue
            if not value and i + 1 < len(args):
                value = args[i + 1]
            for base in self.facts.bases:
                real = resolve(value, base) if value else base
                if not self.workspace.contains(real) and not safe_device(value):
                    return real
        return None

    def _read_only_reason(self, facts: PartFacts, *, writes: bool = True) -> str | None:
        """None when the part may run without asking; else why it needs permission. `writes=False`: but for
        the files it writes in the workspace (the caller weighs those against path rules)."""
        part = facts.part
        whole = self.facts.verdict.why_not_read_only_as_a_whole  # a background job: no part of it is read-only
        if whole is not None:
            return whole
        if not part.reads_only:
            return part.why or f"`{part.text}` needs permission"
        if facts.problems:
            return facts.problems[0]
        if facts.unknown_reads is not None:
            return facts.unknown_reads
        for access in facts.reads:
            if environment_file(str(access.real)):
                return f"`{part.text}` reads the environment of a process ({access.real}), which may hold secrets"
        for tree in facts.trees:
            if holds_environment_files(str(tree.root.real)):
                return (
                    f"`{part.text}` reads below {tree.root.real}, where processes' environments are (they "
                    "may hold secrets)"
                )
        for access in facts.reads + [t.root for t in facts.trees]:
            if not self.workspace.contains(access.real) and self.rules.allow_for_path(access.real, "read") is None:
                return f"`{part.text}` reads {access.real}, outside the workspace"
        for tree in facts.trees:
            if tree.follow:
                self.facts.walk(tree)
                if tree.too_many:
                    return f"`{part.text}` follows symbolic links below {tree.root.written}: too many files to check"
                if tree.escapes:
                    return f"`{part.text}` follows a symbolic link to {tree.escapes[0]}, outside the workspace"
        pending = self._unallowed_writes(facts.writes, facts.write_trees) if writes else []
        if pending:
            return f"`{part.text}` writes {pending[0].written}"
        return None


def marks(parts: list[tuple[Part, str]]) -> tuple[Mark, ...]:
    """The spans of these parts in the command (nested parts: the part that runs them), once each."""
    out: dict[tuple[int, int], Mark] = {}
    for part, why in parts:
        start, end = part.span
        if end > start and (start, end) not in out:
            out[(start, end)] = Mark(start, end, why)
    return tuple(sorted(out.values(), key=lambda m: m.start))


def _ask(reason: str, parts: list[tuple[Part, str]], suggestions: list[RuleSuggestion] | None = None) -> Decision:
    return Decision("ask", reason, suggestions=suggestions or [], shown=Shown(marks=marks(parts)))
