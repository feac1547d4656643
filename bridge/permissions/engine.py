"""The permission engine: one decision per tool call, from rules by source, the mode, containment, the
shell verdict and hooks. The loop calls `decide` (or `decide_async`); a front end answers the asks.

Order of a decision (the first step that decides wins):
 1. a deny rule matching the call (any part of a compound command, any path it touches; a command or path
    that can't be read matches every deny rule that could apply) -> deny; so does a path the call names that is
    one of the bridge's own secrets (own_secrets.py: its sign-in tokens, transcripts), as named, resolved or by
    another name of its file (a hard link), and a command that would read one through a tree it reads while
    nothing masks it (secret_trees.py: no OS sandbox and the tree holds one or follows a link to one; a hard link
    in it, sandbox or not) — a question would be skipped by bypassPermissions (a walk that can't be finished to
    tell asks at step 5)
 2. a settings file that can't be read or parsed (it may hold deny rules) -> ask, whatever the mode
 3. a call that leaves plan mode (it says so: `CallFacts.leaves_plan`): ask in plan mode (allow elsewhere:
    there is nothing to leave)
 4. a PreToolUse hook that blocked or denied -> deny
 5. an ask rule -> ask (even in bypassPermissions); so does a command whose tree walk for step 1 was cut short
 6. plan mode and the call is not read-only -> deny
 7. a write to a protected path (`.git/`, `.agent-bridge/`, `.claude/settings*.json`, `.mcp.json`, the user
    settings and answers (trusted folders, approved MCP servers), and what runs later by itself: runs_later.py —
    `.vscode/`, `.envrc`, the files hooks name…; a command writing git's settings: `git config`, `git remote
    add`…) -> ask, whatever the mode or rules,
    with no always-option, saying why; a write to a memory file or an agent/command definition (`CLAUDE.md`,
    `AGENTS.md`, `.claude/agents/`) -> the same, but for bypass. What the user allows at this question is
    granted to the call (`Decision.grants`: the OS sandbox opens exactly those paths for it; nothing else does,
    bypassPermissions included); a command whose writes can't be known gets no grant (protected files stay
    read-only in the sandbox, and the question says so)
 8. a hook's `ask` -> ask; a hook's `allow` -> allow (never a folder's hook's, nor for a folder's hook's rewrite)
 9. bypassPermissions (unless disabled by settings) -> allow
10. a command that is not read-only while the OS sandbox is wanted but cannot start -> ask (the allow
    rules were written for sandboxed commands)
11. allow rules / read-only inside the workspace / acceptEdits for edits inside the workspace -> allow
12. otherwise ask, with narrow always-rules to offer.
An ask becomes a deny in dontAsk mode and when no one can answer (`interactive=False`). A path no file can
have (a NUL byte) is denied; a failure inside the engine denies the call, never escapes it.

The engine names no tool: a call states its facts (bridge/permissions/facts.py) and the grammar the session
composes the engine with says which rules speak about it (grammar.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from bridge.permissions import shell
from bridge.permissions.bash_decision import BashJudge, marks
from bridge.permissions.bash_facts import BashFacts
from bridge.permissions.containment import InvalidPath, Workspace
from bridge.permissions.facts import CallFacts, PermissionCall
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.held import HeldPath
from bridge.permissions.hooks import HOOK_EVENTS, FolderView, HookOutcome, SettingsHooks
from bridge.permissions.judged import Judged
from bridge.permissions.matching import CallRules, by_rule, matching_rule
from bridge.permissions.modes import Mode, ModeState, PermissionModeError, parse_mode
from bridge.permissions.named_files import bound_paths
from bridge.permissions.own_secrets import OwnSecrets
from bridge.permissions.path_access import PathAccess
from bridge.permissions.protection import protected
from bridge.permissions.question import shown
from bridge.permissions.read_guard import ReadGuard, read_guard
from bridge.permissions.rules import (
    CompiledRule,
    PlacedRule,
    Rule,
    RuleIndex,
    RuleOrigin,
    RuleSet,
    RuleSyntaxError,
    compile_rule,
)
from bridge.permissions.runs_later import home_held, hook_named, mcp_named
from bridge.permissions.secret_trees import tree_secret
from bridge.permissions.settings import SettingsStore
from bridge.permissions.suggestions import Suggester
from bridge.permissions.tool_decision import ToolJudge
from bridge.permissions.trust import MCP_APPROVAL_STORE, STORE_NAME
from bridge.permissions.types import Behavior, Decision, RuleSuggestion, SettingsIssue, Shown, SourceName
from bridge.permissions.widening import rule_binding

log = logging.getLogger(__name__)

DECIDE_DEADLINE_S = shell.ANALYSIS_DEADLINE_S  # `decide_async`: past this the call is denied (the checks are
# bounded well below it)


class PermissionEngine:
    def __init__(
        self,
        *,
        cwd: Path,
        settings: SettingsStore,
        grammar: RuleGrammar,
        mode: Mode | None = None,
        session_rules: RuleSet | None = None,
        additional_dirs: Sequence[Path] = (),
        interactive: bool = True,
        secrets: OwnSecrets | None = None,
    ) -> None:
        """`grammar`: the forms the session's tools' rules take (bridge/tools/registry.py's `rule_grammar`).
        `mode=None` takes the settings' `defaultMode` (or `default`). `secrets`: the bridge's own (own_secrets.py)."""
        self.secrets = secrets or OwnSecrets()
        self.cwd = Path(os.path.realpath(cwd))
        self.settings = settings
        self.interactive = interactive
        self._grammar = grammar
        self._extra_dirs = list(additional_dirs)
        self._own_issues: list[SettingsIssue] = []
        self._session_rules: list[PlacedRule] = []
        self._pinned: list[tuple[PlacedRule, str]] = []  # session rules bound to the scripts they run, and how
        self._rules: list[CompiledRule] = []
        self._compile_issues: list[SettingsIssue] = []
        for behavior, text in (session_rules or RuleSet()).items():
            self._add_session_rule(behavior, text)
        initial = mode if mode is not None else (settings.default_mode or "default")
        if initial == "bypassPermissions" and settings.bypass_disabled:
            self._own_issues.append(
                SettingsIssue(Path("session"), "bypassPermissions is disabled by settings; starting in default mode")
            )
            initial = "default"
        self._modes = ModeState(initial)
        self._generation = -1
        self._index = RuleIndex()
        self._workspace = Workspace.of(self.cwd)
        self.hooks = SettingsHooks(settings, self.cwd, lambda: self.mode)
        self.unsandboxed: Callable[[], bool] = lambda: False
        """True while commands run without the OS sandbox the settings want (it cannot start here)."""
        self.sandboxed: Callable[[], bool] = lambda: False
        """True while commands run in the OS sandbox, which masks the bridge's own secrets."""
        self._refresh()

    # --- mode ----------------------------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._modes.mode

    @mode.setter
    def mode(self, value: Mode) -> None:
        self.set_mode(value)

    def set_mode(self, mode: Mode | str) -> None:
        """Switch modes; entering `plan` remembers the mode to return to. Raises PermissionModeError for
        an unknown mode or a disabled bypassPermissions."""
        checked = parse_mode(mode)
        if checked == "bypassPermissions" and not self.bypass_available:
            raise PermissionModeError(
                "bypassPermissions mode is disabled by settings (permissions.disableBypassPermissionsMode)"
            )
        self._modes.set(checked)

    def exit_plan_mode(self, to: Mode | None = None) -> Mode:
        """After the user accepted ExitPlanMode: back to the mode before plan (or `to`)."""
        if to == "bypassPermissions" and not self.bypass_available:
            to = None
        return self._modes.exit_plan(to)

    @property
    def pre_plan_mode(self) -> Mode | None:
        return self._modes.pre_plan

    @property
    def bypass_available(self) -> bool:
        self.settings.refresh()
        return not self.settings.bypass_disabled

    @property
    def _bypassing(self) -> bool:
        return self.mode == "bypassPermissions" and not self.settings.bypass_disabled

    # --- rules and sources -----------------------------------------------------------------------------

    def _add_session_rule(self, behavior: Behavior, text: str, *, bound: bool = False) -> PlacedRule | None:
        try:
            rule = Rule.parse(text)
        except RuleSyntaxError as exc:
            self._own_issues.append(SettingsIssue(Path("session"), f"{behavior} rule: {exc}; rule skipped"))
            return None
        placed = PlacedRule(rule, behavior, RuleOrigin("session", None, self.cwd), bound=bound)
        self._session_rules.append(placed)
        self._generation = -1
        return placed

    def allow_for_now(self, texts: Iterable[str], bindings: Mapping[str, str] | None = None) -> Callable[[], None]:
        """Allow rules until the returned function is called (a skill's `allowed-tools`, for its turn). Like every
        allow rule they yield to deny and ask rules and to the mode's own limits. `bindings`: a rule's text → the
        workspace files it runs as they were trusted (a folder's own skill, widening.rule_binding): as a folder's
        settings rule, such a rule is off once one of them changes, and its files are held meanwhile."""
        added: list[PlacedRule] = []
        for text in texts:
            binds = (bindings or {}).get(text, "")
            placed = self._add_session_rule("allow", text, bound=bool(binds))
            if placed is not None:
                added.append(placed)
                if binds:
                    self._pinned.append((placed, binds))

        def undo() -> None:
            self._session_rules = [r for r in self._session_rules if not any(r is a for a in added)]
            self._pinned = [(r, b) for r, b in self._pinned if not any(r is a for a in added)]
            self._generation = -1

        self._refresh()
        return undo

    def add_session_rule(self, behavior: Behavior, text: str) -> None:
        """A rule for this session only (e.g. a CLI flag given later); not saved anywhere."""
        self._add_session_rule(behavior, text)
        self._refresh()

    def _refresh(self) -> None:
        self.settings.refresh()
        changed = [r for r, binds in self._pinned if rule_binding(r.rule, self.cwd) != binds]
        if changed:  # a script a skill's rule runs changed since it was trusted (an edit this turn): the rule is off
            self._session_rules = [r for r in self._session_rules if not any(r is c for c in changed)]
            self._pinned = [(r, b) for r, b in self._pinned if not any(r is c for c in changed)]
            self._generation = -1
        if self._generation == self.settings.generation:
            return
        stored, stored_issues = self.settings.compiled(self._grammar)
        session, session_issues = self._compile_session()
        self._rules, self._compile_issues = [*session, *stored], [*session_issues, *stored_issues]
        self._index = RuleIndex()
        self._index.extend(self._rules)
        config = self.settings.user_config_dir
        answers = [config / "settings.json", config / STORE_NAME, config / MCP_APPROVAL_STORE]  # what runs later
        protected_files = [*self.settings.protected_files, *answers]
        memory = [self.settings.user_config_dir / "AGENTS.md", self.settings.claude_home / "CLAUDE.md"]
        named: list[HeldPath] = hook_named(self.settings, HOOK_EVENTS, self.cwd)
        named += [
            HeldPath(path, "file", f"a trusted rule of the folder runs it without a question ({rule}), as it is now")
            for path, rule in self.settings.bound_files()
        ]
        root = Path(os.path.realpath(self.cwd))
        named += [
            HeldPath(root / path, "file", f"a trusted skill rule runs it unasked ({r.rule.text}), as it is now")
            for r, binds in self._pinned
            for path in bound_paths(binds)
            if "*" not in path
        ]
        for file in self.settings.files:
            if not file.claude:
                named += mcp_named(file.path, self.cwd)
        roots = [
            Path(os.path.realpath(r)) for r in (self.cwd, *self._extra_dirs, *self.settings.additional_directories)
        ]
        named += home_held(
            Path(os.path.realpath(Path.home())),
            Path(os.path.realpath(self.settings.claude_home)),
            roots,
            Path(os.path.realpath(config)),
        )
        self._workspace = Workspace.of(
            self.cwd, [*self._extra_dirs, *self.settings.additional_directories], protected_files, memory, named
        )
        self._generation = self.settings.generation

    def _compile_session(self) -> tuple[list[CompiledRule], list[SettingsIssue]]:
        compiled, issues = [], []
        for placed in self._session_rules:
            try:
                compiled.append(compile_rule(placed, self._grammar.form(placed.rule.tool), cwd=self.cwd))
            except RuleSyntaxError as exc:
                issues.append(SettingsIssue(Path("session"), f"{placed.behavior} rule: {exc}; rule skipped"))
        return compiled, issues

    def _know(self, facts: CallFacts) -> None:
        """A call stated a form the grammar did not have (a tool the composition did not list): learn it, so the
        rules naming that tool are read as it says."""
        if self._grammar.form(facts.tool) != facts.form:
            self._grammar = self._grammar.learn(facts.tool, facts.form)
            self._generation = -1
            self._refresh()

    @property
    def workspace(self) -> Workspace:
        self._refresh()
        return self._workspace

    @property
    def errors(self) -> list[SettingsIssue]:
        self._refresh()
        return [*self._own_issues, *self.settings.issues, *self._compile_issues]

    def _lockdown(self) -> list[SettingsIssue]:
        return [*self.settings.lockdown, *(issue for issue in self._compile_issues if issue.lockdown)]

    def rules(self) -> list[CompiledRule]:
        """Every rule in effect, compiled (the session's, then the settings files'): what the OS sandbox reads."""
        self._refresh()
        return list(self._rules)

    def rules_by_source(self) -> dict[SourceName, dict[Behavior, list[str]]]:
        """The seed's ToolPermissionRulesBySource: every rule with where it came from."""
        self._refresh()
        out: dict[SourceName, dict[Behavior, list[str]]] = {}
        for compiled in self._rules:
            out.setdefault(compiled.origin.source, {}).setdefault(compiled.behavior, []).append(compiled.text)
        return out

    def save_rule(self, suggestion: RuleSuggestion) -> None:
        """Write the always-rule once (no duplicates); every engine of this project sees it at once."""
        self.settings.save_rule(suggestion)
        self._refresh()

    # --- what file tools may show --------------------------------------------------------------------

    def read_guard(self) -> ReadGuard:
        """For the file tools' results (Grep matches, Glob names), with the rules as they are now (read_guard.py)."""
        self._refresh()
        return read_guard(
            CallRules(self._index, self._grammar),
            self._workspace.roots,
            self.cwd,
            bypass=self._bypassing,
            secrets=self.secrets,
        )

    # --- hooks ---------------------------------------------------------------------------------------

    async def run_hooks(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        tool_name: str | None = None,
        folder_view: FolderView = None,
    ) -> HookOutcome:
        return await self.hooks.run(event, payload, tool_name=tool_name, folder_view=folder_view)

    # --- decisions -----------------------------------------------------------------------------------

    def decide(self, call: PermissionCall, *, hook: HookOutcome | None = None) -> Decision:
        """`hook`: the merged PreToolUse outcome, when the loop ran hooks first (as it should)."""
        try:
            self._refresh()
            rewritten = hook is not None and hook.updated_input is not None and hook.updated_input != call.raw_input
            # what runs is the hook's rewrite: judge (and show) that, as its tool states it
            facts = call.facts(hook.updated_input if rewritten and hook is not None else None)
            self._know(facts)
            judged = Judged.of(facts, self.cwd, self._workspace)
            decision = self._decide(judged, hook)
            if decision.behavior == "ask" and judged.bash is not None:
                decision = self._say_changed_rule(judged.bash, decision)
            if decision.behavior == "ask":
                decision = dataclasses.replace(decision, shown=shown(judged, decision, memory_too=not self._bypassing))
            if not rewritten:  # the rewrite's paths were not the call's: the tool resolves them itself
                decision = dataclasses.replace(decision, resolved=tuple(judged.resolved))
        except InvalidPath as exc:
            return Decision("deny", f"Invalid path: {exc}")
        except Exception as exc:  # a bug here must deny the call, never take the turn down
            log.exception("permission check failed for %s", call.tool_name)
            return Decision("deny", f"The permission check failed ({type(exc).__name__}: {exc})")
        if hook is not None and hook.updated_input is not None and decision.behavior != "deny":
            decision = dataclasses.replace(decision, updated_input=hook.updated_input)
        if decision.behavior == "ask" and (self.mode == "dontAsk" or not self.interactive):
            why = "dontAsk mode" if self.mode == "dontAsk" else "no one can answer a prompt in this run"
            # the rule the question would have offered, for whoever reads this to allow it ahead next time
            allow = next((s.rules for s in decision.suggestions if s.behavior == "allow"), ())
            said = "rules" if len(allow) > 1 else "the rule"
            rules = f"; {said} that would allow it: {', '.join(allow)}" if allow else ""
            return dataclasses.replace(
                decision, behavior="deny", reason=f"{decision.reason} (denied: {why}{rules})", suggestions=[]
            )
        return decision

    def _say_changed_rule(self, bash: BashFacts, decision: Decision) -> Decision:
        """A question about a command the folder's trusted rule would have allowed, had its script not changed
        since: the reason says so (else the user sees a question with no word of the rule they trusted), and it
        offers no always-option (one would allow the changed script for good, unbound, or wider than the rule:
        `Bash(python3 *)`); trusting the rule again, at the folder's question, binds it to the script as it is."""
        texts = {facts.part.text for facts in bash.parts}
        for rule, files in self.settings.changed_rules():
            if rule.specifier in texts:
                shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
                why = f"the folder's rule {rule.text} is off: {shown} changed since it was trusted"
                return dataclasses.replace(decision, reason=f"{decision.reason} ({why})", suggestions=[])
        return decision

    async def decide_async(self, call: PermissionCall, *, hook: HookOutcome | None = None) -> Decision:
        """`decide` in a worker thread, off the event loop, with a deadline (the checks are bounded; this
        is the bound on the bound). Past the deadline the call is denied."""
        with anyio.move_on_after(DECIDE_DEADLINE_S):
            return await anyio.to_thread.run_sync(lambda: self.decide(call, hook=hook), abandon_on_cancel=True)
        return Decision("deny", f"The permission check took longer than {DECIDE_DEADLINE_S:g} s (DECIDE_DEADLINE_S)")

    def _started_rule(self, call: Judged, behavior: Behavior) -> CompiledRule | None:
        """A rule of `behavior` about every call of the tool this call starts (`CallFacts.starts`)."""
        if call.facts.starts is None:
            return None
        tool, subject = call.facts.starts
        started = CallRules(self._index, self._grammar, tool)
        about = (None, "*", subject)
        return next(
            (r for r in started.own(behavior) if (r.rule.specifier or "").strip() in about or r.rule.specifier is None),
            None,
        )

    def _decide(self, call: Judged, hook: HookOutcome | None) -> Decision:
        rules = CallRules(self._index, self._grammar, call.tool, call.facts.form)
        deny = matching_rule(rules, call, "deny")
        if deny is not None:
            return by_rule("deny", deny, f"denied by rule {deny.text}{call.fail_closed()}")
        started = self._started_rule(call, "deny")
        if started is not None:  # (attack round 24: a forking skill ran a sub-agent under `--deny Agent`)
            return by_rule("deny", started, f"denied by rule {started.text}: it runs as {started.rule.tool}")
        secret = self.secrets.named(_accesses(call))
        if secret is not None:
            access, what = secret
            return Decision("deny", f"{access.real} is the bridge's own secret ({what}): no tool may read or change it")
        unmasked = tree_secret(self.secrets, call.bash, sandboxed=self.sandboxed()) if call.bash else None
        if unmasked is not None and unmasked.behavior == "deny":
            return unmasked
        lockdown = self._lockdown()
        if lockdown:
            return Decision("ask", f"{lockdown[0].file} can't be read in full, so every call asks until it is fixed")
        if call.facts.leaves_plan:
            if self.mode == "plan":
                return Decision("ask", "The agent wants to leave plan mode and start working on its plan")
            return Decision("allow", "not in plan mode")
        if hook is not None and hook.denied:
            return Decision("deny", hook.reason or "blocked by a PreToolUse hook")
        if unmasked is not None:  # a walk cut short: it can't be told
            return unmasked
        ask = matching_rule(rules, call, "ask") or self._started_rule(call, "ask")
        if ask is not None:
            decision = by_rule("ask", ask, f"rule {ask.text} asks for this{call.fail_closed()}")
            hits = call.bash.parts_matching(ask) if call.bash is not None else []
            return dataclasses.replace(decision, shown=Shown(marks=marks(hits)))
        if self.mode == "plan" and not call.read_only:
            return Decision("deny", "Plan mode: only read-only tools may run until the plan is accepted")
        writes = protected(call, self._workspace, memory_too=not self._bypassing)
        if writes.reason is not None:
            return Decision("ask", writes.reason, grants=writes.grants)
        if hook is not None and hook.decision == "ask":
            return Decision("ask", hook.reason or "a PreToolUse hook asks for this")
        if hook is not None and hook.allows:
            return Decision("allow", hook.reason or "allowed by a PreToolUse hook")
        if self._bypassing:
            return Decision("allow", "bypassPermissions mode")
        if call.bash is not None and not call.read_only and self.unsandboxed():
            writers = [(p, p.why) for p in call.bash.verdict.parts if not p.nested and not p.read_only]
            return Decision(
                "ask",
                "The OS sandbox is unavailable, so commands that are not read-only ask first",
                shown=Shown(marks=marks(writers)),
            )
        suggester = Suggester(self.settings.local_settings_path, self._workspace, self._grammar, call.tool)
        if call.bash is not None:
            return BashJudge(call.bash, rules, self.mode, suggester).decide()
        return ToolJudge(call, rules, self._workspace, self.mode, suggester).decide()


def _accesses(call: Judged) -> list[PathAccess]:
    """Every path the call names: its reads and writes, and each command part's (a tree's root too)."""
    found = [*call.reads, *call.writes]
    for facts in call.bash.parts if call.bash is not None else ():
        found += [*facts.reads, *facts.maybe_reads, *facts.writes, *facts.write_trees, *(t.root for t in facts.trees)]
    return found
