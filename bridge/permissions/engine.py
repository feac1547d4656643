"""The permission engine: one decision per tool call, from rules by source, the mode, containment, the
shell verdict and hooks. The loop calls `decide` (or `decide_async`); a front end answers the asks.

Order of a decision (the first step that decides wins):
 1. a deny rule matching the call (any part of a compound command, any path it touches; a command or path
    that can't be read matches every deny rule that could apply) -> deny
 2. a settings file that can't be read or parsed (it may hold deny rules) -> ask, whatever the mode
 3. ExitPlanMode: ask in plan mode (allow elsewhere: there is nothing to leave)
 4. a PreToolUse hook that blocked or denied -> deny
 5. an ask rule -> ask (even in bypassPermissions)
 6. plan mode and the call is not read-only -> deny
 7. a write to a protected path (`.git/`, `.agent-bridge/`, `.claude/settings*.json`, `.mcp.json`, the user
    settings, and what runs later by itself: runs_later.py — `.vscode/`, `.envrc`, the files hooks name…; a
    Bash command writing git's settings: `git config`, `git remote add`…) -> ask, whatever the mode or rules,
    with no always-option, saying why; a write to a memory file or an agent/command definition (`CLAUDE.md`,
    `AGENTS.md`, `.claude/agents/`) -> the same, but for bypass. What the user allows at this question is
    granted to the call (`Decision.grants`: the OS sandbox opens exactly those paths for it; nothing else does,
    bypassPermissions included); a command whose writes can't be known gets no grant (protected files stay
    read-only in the sandbox, and the question says so)
 8. a hook's `ask` -> ask; a hook's `allow` -> allow
 9. bypassPermissions (unless disabled by settings) -> allow
10. a Bash command that is not read-only while the OS sandbox is wanted but cannot start -> ask (the allow
    rules were written for sandboxed commands)
11. allow rules / read-only inside the workspace / acceptEdits for edits inside the workspace -> allow
12. otherwise ask, with narrow always-rules to offer.
An ask becomes a deny in dontAsk mode and when no one can answer (`interactive=False`). A path no file can
have (a NUL byte) is denied; a failure inside the engine denies the call, never escapes it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

from bridge.permissions import shell
from bridge.permissions.bash_decision import BashFacts, BashJudge, PathAccess, allow_rule_for_path, by_rule, marks
from bridge.permissions.containment import InvalidPath, Protection, Workspace
from bridge.permissions.git_held import git_directory, git_settings_written
from bridge.permissions.held import HeldPath
from bridge.permissions.hooks import HOOK_EVENTS, HookOutcome, SettingsHooks
from bridge.permissions.modes import Mode, ModeState, PermissionModeError, parse_mode
from bridge.permissions.rules import (
    EDIT_TOOLS,
    READ_TOOLS,
    CompiledRule,
    PathPattern,
    Rule,
    RuleIndex,
    RuleOrigin,
    RuleSet,
    RuleSyntaxError,
    compile_rule,
    normalize_host,
)
from bridge.permissions.runs_later import hook_named, mcp_named
from bridge.permissions.settings import SettingsStore
from bridge.permissions.shell import Part
from bridge.permissions.suggestions import Suggester
from bridge.permissions.types import (
    Behavior,
    Decision,
    Mark,
    NamedPath,
    RuleSuggestion,
    SettingsIssue,
    Shown,
    SourceName,
)
from bridge.secrets import environment_file
from bridge.visible import has_hidden

log = logging.getLogger(__name__)

EXIT_PLAN_MODE = "ExitPlanMode"
NETWORK_TOOLS = frozenset({"WebFetch"})  # read-only, but a fetch can leak: asks unless a domain rule allows
DECIDE_DEADLINE_S = shell.ANALYSIS_DEADLINE_S  # `decide_async`: past this the call is denied (the checks are
# bounded well below it)
_GENERIC_SPEC_KEYS = ("subagent_type", "skill", "name")
Paths = list[tuple[Path, Literal["read", "write"]]]


@dataclass
class _Facts:
    tool: str
    raw: dict[str, Any]
    read_only: bool
    reads: list[PathAccess] = field(default_factory=list)
    writes: list[PathAccess] = field(default_factory=list)
    bash: BashFacts | None = None
    host: str | None = None
    resolved: list[Path] = field(default_factory=list)  # each declared path's real path, in the order given


@dataclass(frozen=True)
class SandboxView:
    """What an OS sandbox needs from the permission layer, read fresh from the settings."""

    writable_roots: list[Path]  # the workspace roots (add the temp directory)
    protected_paths: list[Path]  # read-only inside the writable roots (they need not exist yet)
    read_deny: list[PathPattern]  # paths under Read deny rules: mask them


class PermissionEngine:
    def __init__(
        self,
        *,
        cwd: Path,
        settings: SettingsStore,
        mode: Mode | None = None,
        session_rules: RuleSet | None = None,
        additional_dirs: Sequence[Path] = (),
        interactive: bool = True,
    ) -> None:
        """`mode=None` takes the settings' `defaultMode` (or `default`)."""
        self.cwd = Path(os.path.realpath(cwd))
        self.settings = settings
        self.interactive = interactive
        self._extra_dirs = list(additional_dirs)
        self._own_issues: list[SettingsIssue] = []
        self._session_rules: list[CompiledRule] = []
        for behavior, text in (session_rules or RuleSet()).items():
            self._add_session_rule(behavior, text)
        initial = mode if mode is not None else (settings.default_mode or "default")
        if initial == "bypassPermissions" and settings.bypass_disabled:
            self._own_issues.append(SettingsIssue(Path("session"), "bypassPermissions is disabled by settings; "
                                                                   "starting in default mode"))
            initial = "default"
        self._modes = ModeState(initial)
        self._generation = -1
        self._index = RuleIndex()
        self._workspace = Workspace.of(self.cwd)
        self.hooks = SettingsHooks(settings, self.cwd, lambda: self.mode)
        self.unsandboxed: Callable[[], bool] = lambda: False
        """True while Bash commands run without the OS sandbox the settings want (it cannot start here)."""
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
            raise PermissionModeError("bypassPermissions mode is disabled by settings "
                                      "(permissions.disableBypassPermissionsMode)")
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

    def _add_session_rule(self, behavior: Behavior, text: str) -> None:
        try:
            rule = Rule.parse(text)
            compiled = compile_rule(rule, behavior, RuleOrigin("session", None, self.cwd), cwd=self.cwd)
        except RuleSyntaxError as exc:
            self._own_issues.append(SettingsIssue(Path("session"), f"{behavior} rule: {exc}; rule skipped"))
            return
        self._session_rules.append(compiled)
        self._generation = -1

    def allow_for_now(self, texts: Iterable[str]) -> Callable[[], None]:
        """Allow rules until the returned function is called (a skill's `allowed-tools`, for its turn). Like every
        allow rule they yield to deny and ask rules and to the mode's own limits."""
        before = len(self._session_rules)
        for text in texts:
            self._add_session_rule("allow", text)
        added = self._session_rules[before:]

        def undo() -> None:
            self._session_rules = [r for r in self._session_rules if not any(r is a for a in added)]
            self._generation = -1

        self._refresh()
        return undo

    def add_session_rule(self, behavior: Behavior, text: str) -> None:
        """A rule for this session only (e.g. a CLI flag given later); not saved anywhere."""
        self._add_session_rule(behavior, text)
        self._refresh()

    def _refresh(self) -> None:
        self.settings.refresh()
        if self._generation == self.settings.generation:
            return
        index = RuleIndex()
        index.extend(self._session_rules)
        index.extend(self.settings.rules)
        self._index = index
        user_settings = self.settings.user_config_dir / "settings.json"
        protected = [*self.settings.protected_files, user_settings]
        memory = [self.settings.user_config_dir / "AGENTS.md", self.settings.claude_home / "CLAUDE.md"]
        named: list[HeldPath] = hook_named(self.settings, HOOK_EVENTS, self.cwd)
        for file in self.settings.files:
            if not file.claude:
                named += mcp_named(file.path, self.cwd)
        self._workspace = Workspace.of(self.cwd, [*self._extra_dirs, *self.settings.additional_directories],
                                       protected, memory, named)
        self._generation = self.settings.generation

    @property
    def workspace(self) -> Workspace:
        self._refresh()
        return self._workspace

    @property
    def errors(self) -> list[SettingsIssue]:
        self._refresh()
        return [*self._own_issues, *self.settings.issues]

    def sandbox_view(self) -> SandboxView:
        """Writable roots, protected paths and Read-deny patterns, for the OS sandbox under Bash."""
        workspace = self.workspace
        deny = [r.path for r in self._index.rules_for("deny", "Read") if r.path is not None]
        return SandboxView(workspace.writable_roots(), workspace.protected_paths(), deny)

    def rules_by_source(self) -> dict[SourceName, dict[Behavior, list[str]]]:
        """The seed's ToolPermissionRulesBySource: every rule with where it came from."""
        self._refresh()
        out: dict[SourceName, dict[Behavior, list[str]]] = {}
        for compiled in [*self._session_rules, *self.settings.rules]:
            out.setdefault(compiled.origin.source, {}).setdefault(compiled.behavior, []).append(compiled.text)
        return out

    def save_rule(self, suggestion: RuleSuggestion) -> None:
        """Write the always-rule once (no duplicates); every engine of this project sees it at once."""
        self.settings.save_rule(suggestion)
        self._refresh()

    # --- what file tools may show --------------------------------------------------------------------

    def read_guard(self) -> Callable[[Path, Path | None], str | None]:
        """For the file tools' results (Grep matches, Glob names), with the rules as they are now: why
        `path` may not be shown, or None when it may. A Read deny or ask rule naming the path (as written or
        resolved) hides it — a result cannot be asked about one by one; rules without a path were judged on
        the call itself. So does a real path outside the workspace and outside `scope` (what the permission
        step allowed for this call), unless a Read allow rule names it or the mode is bypassPermissions.
        Called per result (thousands): plain strings, no pathlib."""
        self._refresh()
        rules = [(r, r.path.regex, str(r.path.base).rstrip("/") + "/")
                 for b in ("deny", "ask") for r in self._index.rules_for(b, "Read") if r.path is not None]
        roots = [str(root) for root in self._workspace.roots]
        cwd = str(self.cwd)
        bypass = self.mode == "bypassPermissions" and not self.settings.bypass_disabled
        dirs: dict[str, str] = {}  # results share a few directories: resolve each once

        def real(written: str) -> str:
            head, name = os.path.split(written)
            resolved = dirs.get(head) or dirs.setdefault(head, os.path.realpath(head))
            full = os.path.join(resolved, name)
            return os.path.realpath(full) if os.path.islink(full) else full

        def under(path: str, root: str) -> bool:
            return path == root or path.startswith(root.rstrip("/") + "/")

        def check(path: Path, scope: Path | None) -> str | None:
            written = os.path.normpath(os.path.join(cwd, os.path.expanduser(os.fspath(path))))
            resolved = real(written)
            for rule, pattern, prefix in rules:
                # PathPattern.matches on strings: the part below the rule's base, matched by its regex
                if any(p.startswith(prefix) and pattern.match(p[len(prefix):]) for p in (written, resolved)):
                    return f"{written} is named by the {rule.behavior} rule {rule.text}"
            if bypass or any(under(resolved, root) for root in roots):
                return None
            if scope is not None:
                allowed = real(os.path.normpath(os.path.join(cwd, os.fspath(scope))))
                if under(resolved, allowed):
                    return None
            if allow_rule_for_path(self._index, "Read", Path(resolved), "read") is not None:
                return None
            return f"{resolved} is outside the workspace"

        return check

    # --- hooks ---------------------------------------------------------------------------------------

    async def run_hooks(self, event: str, payload: dict[str, Any], *, tool_name: str | None = None) -> HookOutcome:
        return await self.hooks.run(event, payload, tool_name=tool_name)

    # --- decisions -----------------------------------------------------------------------------------

    def decide(
        self,
        tool_name: str,
        raw_input: dict[str, Any],
        *,
        read_only: bool,
        paths: Paths,
        hook: HookOutcome | None = None,
    ) -> Decision:
        """`hook`: the merged PreToolUse outcome, when the loop ran hooks first (as it should)."""
        try:
            self._refresh()
            rewritten = hook is not None and hook.updated_input is not None and hook.updated_input != raw_input
            if rewritten:  # what runs is the hook's rewrite: judge (and show) that, its paths read from it
                assert hook is not None and hook.updated_input is not None
                raw_input, paths = hook.updated_input, []
            facts = self._facts(tool_name, raw_input, read_only, paths)
            decision = self._decide(facts, hook)
            if decision.behavior == "ask":
                decision = dataclasses.replace(decision, shown=self._shown(facts, decision))
            if not rewritten:  # the rewrite's paths were not the call's: the tool resolves them itself
                decision = dataclasses.replace(decision, resolved=tuple(facts.resolved))
        except InvalidPath as exc:
            return Decision("deny", f"Invalid path: {exc}")
        except Exception as exc:  # a bug here must deny the call, never take the turn down
            log.exception("permission check failed for %s", tool_name)
            return Decision("deny", f"The permission check failed ({type(exc).__name__}: {exc})")
        if hook is not None and hook.updated_input is not None and decision.behavior != "deny":
            decision = dataclasses.replace(decision, updated_input=hook.updated_input)
        if decision.behavior == "ask" and (self.mode == "dontAsk" or not self.interactive):
            why = "dontAsk mode" if self.mode == "dontAsk" else "no one can answer a prompt in this run"
            return dataclasses.replace(decision, behavior="deny", reason=f"{decision.reason} (denied: {why})",
                                       suggestions=[])
        return decision

    async def decide_async(
        self,
        tool_name: str,
        raw_input: dict[str, Any],
        *,
        read_only: bool,
        paths: Paths,
        hook: HookOutcome | None = None,
    ) -> Decision:
        """`decide` in a worker thread, off the event loop, with a deadline (the checks are bounded; this
        is the bound on the bound). Past the deadline the call is denied."""
        with anyio.move_on_after(DECIDE_DEADLINE_S):
            return await anyio.to_thread.run_sync(
                lambda: self.decide(tool_name, raw_input, read_only=read_only, paths=paths, hook=hook),
                abandon_on_cancel=True)
        return Decision("deny", f"The permission check took longer than {DECIDE_DEADLINE_S:g} s (DECIDE_DEADLINE_S)")

    def _decide(self, facts: _Facts, hook: HookOutcome | None) -> Decision:
        deny = self._match(facts, "deny")
        if deny is not None:
            return by_rule("deny", deny, f"denied by rule {deny.text}{_fail_closed(facts)}")
        if self.settings.lockdown:
            issue = self.settings.lockdown[0]
            return Decision("ask", f"{issue.file} can't be read in full, so every call asks until it is fixed")
        if facts.tool == EXIT_PLAN_MODE:
            if self.mode == "plan":
                return Decision("ask", "The agent wants to leave plan mode and start working on its plan")
            return Decision("allow", "not in plan mode")
        if hook is not None and hook.denied:
            return Decision("deny", hook.reason or "blocked by a PreToolUse hook")
        ask = self._match(facts, "ask")
        if ask is not None:
            decision = by_rule("ask", ask, f"rule {ask.text} asks for this{_fail_closed(facts)}")
            hits = facts.bash.parts_matching(ask) if facts.bash is not None else []
            return dataclasses.replace(decision, shown=Shown(marks=marks(hits)))
        if self.mode == "plan" and not facts.read_only:
            return Decision("deny", "Plan mode: only read-only tools may run until the plan is accepted")
        protected = self._protected(facts)
        if protected.reason is not None:
            return Decision("ask", protected.reason, grants=protected.grants)
        if hook is not None and hook.decision == "ask":
            return Decision("ask", hook.reason or "a PreToolUse hook asks for this")
        if hook is not None and hook.decision == "allow":
            return Decision("allow", hook.reason or "allowed by a PreToolUse hook")
        if self._bypassing:
            return Decision("allow", "bypassPermissions mode")
        if facts.bash is not None and not facts.read_only and self.unsandboxed():
            writers = [(p, p.why) for p in facts.bash.verdict.parts if not p.nested and not p.read_only]
            return Decision("ask", "The OS sandbox is unavailable, so commands that are not read-only ask first",
                            shown=Shown(marks=marks(writers)))
        if facts.bash is not None:
            return BashJudge(facts.bash, self._index, self.mode, self._suggester()).decide()
        return self._decide_tool(facts)

    # --- facts ---------------------------------------------------------------------------------------

    def _facts(self, tool: str, raw: dict[str, Any], read_only: bool, paths: Paths) -> _Facts:
        facts = _Facts(tool, raw, read_only)
        declared = list(paths)
        if not declared and tool != "Bash":
            for key in ("file_path", "notebook_path", "path"):
                value = raw.get(key)
                if isinstance(value, str) and value:
                    declared.append((Path(value), "write" if tool in EDIT_TOOLS else "read"))
        for path, access in declared:
            resolved = PathAccess.of(path, self.cwd)
            (facts.writes if access == "write" else facts.reads).append(resolved)
            facts.resolved.append(resolved.real)
        if tool in NETWORK_TOOLS:
            url = raw.get("url")
            if isinstance(url, str):
                try:
                    host = urlsplit(url).hostname
                except ValueError:
                    host = None
                facts.host = normalize_host(host) if host else None
        if tool == "Bash":
            command = raw.get("command")
            verdict = shell.call_verdict(command if isinstance(command, str) else "",
                                         background=bool(raw.get("run_in_background")))
            facts.bash = BashFacts.of(verdict, self.cwd, self._workspace)
            facts.read_only = verdict.read_only
        return facts

    def _protected(self, facts: _Facts) -> _Protected:
        """Step 7: why this call must ask because it writes a protected path (None: it need not), and the
        protected paths it writes (granted when the user allows it). In bypassPermissions memory files don't
        ask (and so are not granted: the sandbox keeps them read-only for Bash; the file tools write them)."""
        memory_too = not self._bypassing
        writes: list[tuple[str, Protection, PathAccess]] = []
        if facts.bash is not None:
            unknown = self._bash_unknown(facts.bash)
            if unknown is not None:
                return _Protected(f"{unknown}: it can't be checked for writes to protected files (the sandbox keeps "
                                  "them read-only for it)")
            writes = self._bash_protected(facts.bash)
        elif facts.writes:
            later = self._workspace.runs_later()
            for access in facts.writes:
                found = self._workspace.protected_reason(access.written, later)
                if found is not None:
                    writes.append((found[0], found[1], access))
        asking = [why for why, strength, _ in writes if strength == "settings" or memory_too]
        grants = tuple(dict.fromkeys(g for _, _, access in writes for g in (access.real, access.written)))
        if not asking:
            return _Protected(None, grants)
        others = len(asking) - 1
        more = f" (and {others} more protected path{'s' if others > 1 else ''})" if others else ""
        return _Protected(f"Writing {asking[0]}{more}", grants)

    @staticmethod
    def _bash_unknown(bash: BashFacts) -> str | None:
        """Why a command's writes can't be listed (it may write anything the sandbox lets it), or None."""
        if not bash.verdict.ok:
            return f"The command {bash.verdict.error}"
        return next((f.unknown_writes for f in bash.parts if f.unknown_writes is not None), None)

    def _bash_protected(self, bash: BashFacts) -> list[tuple[str, Protection, PathAccess]]:
        """The protected paths a command writes: its redirections and known outputs, what a recursive write
        holds, and git's settings where the command is git changing them (`git config k v`)."""
        found: list[tuple[str, Protection, PathAccess]] = []
        later = self._workspace.runs_later() if any(f.writes for f in bash.parts) else []
        for facts in bash.parts:
            for access in facts.writes:
                reason = self._workspace.protected_reason(access.written, later)
                if reason is not None:
                    found.append((reason[0], reason[1], access))
            for access in facts.write_trees:
                reason = self._workspace.protected_below(access.written)
                if reason is not None:
                    found.append((reason[0], reason[1], access))
            found += self._git_settings(facts.part, bash.bases)
        return found

    def _git_settings(self, part: Part, bases: list[Path]) -> list[tuple[str, Protection, PathAccess]]:
        words = part.effective
        if part.nested or not words or not all(w.static for w in words) or os.path.basename(words[0].value) != "git":
            return []
        values = [w.value for w in words]
        out: list[tuple[str, Protection, PathAccess]] = []
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
                out.append((f"{access.written} (`{part.text}` changes {what}): settings there can make git run "
                            "programs outside the sandbox (core.fsmonitor, core.hooksPath, aliases)", "settings",
                            access))
        return out

    def _shown(self, facts: _Facts, decision: Decision) -> Shown:
        """What a question shows besides its title: the command exactly as it runs, the parts that made it ask
        (as the deciding step marked them; a protected write: the part writing; a command that can't be read:
        its hidden characters, else the whole of it), every path whose resolution differs from its name."""
        bash = facts.bash
        if bash is None:
            named = {a.named: NamedPath(a.named, str(a.real)) for a in facts.reads + facts.writes if a.differs()}
            return Shown(None, (), tuple(named.values()))
        command = str(facts.raw.get("command") or "")
        found = decision.shown.marks
        if not found and not bash.verdict.ok:
            found = _unreadable_marks(command, bash.verdict.error or "")
        elif not found:
            protected = bash.protected_part(memory_too=not self._bypassing)
            if protected is not None and protected[0] == decision.reason and protected[1] is not None:
                found = marks([(protected[1], protected[0])])
        return Shown(command, found, bash.named_paths())

    # --- rule matching -------------------------------------------------------------------------------

    def _match(self, facts: _Facts, behavior: Behavior) -> CompiledRule | None:
        """The first rule of `behavior` that speaks about any part of the call (for deny and ask)."""
        bash = facts.bash
        for rule in self._index.rules_for(behavior, facts.tool):
            if rule.rule.specifier is None:
                return rule
            if bash is not None and rule.bash is not None and bash.bash_rule_hits(rule):
                return rule
            if rule.domain is not None and facts.host is not None and rule.matches_host(facts.host):
                return rule
            if rule.path is not None and any(_path_hit(rule, a) for a in facts.reads + facts.writes):
                return rule
            if _generic_hit(rule, facts):
                return rule
        # path rules speak about every tool's paths: `Read(~/.ssh/**)` also stops `cat ~/.ssh/id_rsa`
        if facts.tool not in READ_TOOLS:
            for rule in self._index.rules_for(behavior, "Read"):
                if rule.path is None:
                    continue
                if bash.read_rule_hits(rule) if bash is not None else any(_path_hit(rule, a) for a in facts.reads):
                    return rule
        if facts.tool not in EDIT_TOOLS:
            for rule in self._index.rules_for(behavior, "Write"):
                if rule.path is None:
                    continue
                if bash.write_rule_hits(rule) if bash is not None else any(_path_hit(rule, a) for a in facts.writes):
                    return rule
        return None

    def _tool_allow_rule(self, facts: _Facts) -> CompiledRule | None:
        for rule in self._index.rules_for("allow", facts.tool):
            if rule.rule.specifier is None:
                return rule
            if rule.domain is not None and facts.host is not None and rule.matches_host(facts.host):
                return rule
            if _generic_hit(rule, facts):
                return rule
        return None

    # --- tools other than Bash -------------------------------------------------------------------------

    def _decide_tool(self, facts: _Facts) -> Decision:
        whole = self._tool_allow_rule(facts)
        if whole is not None:
            return by_rule("allow", whole, f"allowed by rule {whole.text}")
        accesses = [(a, "read") for a in facts.reads] + [(a, "write") for a in facts.writes]
        if accesses:
            hits = [allow_rule_for_path(self._index, facts.tool, a.real, kind) for a, kind in accesses]
            if all(hit is not None for hit in hits):
                first = hits[0]
                assert first is not None
                return by_rule("allow", first, f"allowed by rule {first.text}")
        outside = [a.real for a, _ in accesses if not self._workspace.contains(a.real)]
        environ = next((a.real for a in facts.reads if environment_file(str(a.real))), None)
        if environ is not None:  # the bridge's own environment holds its API key
            return Decision("ask", f"{environ} is the environment of a process, which may hold secrets")
        if facts.tool in NETWORK_TOOLS:
            return self._ask(facts, f"Fetch from {facts.host or 'this address'}")
        if facts.read_only and not facts.writes and not outside:
            return Decision("allow", "read-only, inside the workspace")
        if self.mode == "acceptEdits" and facts.tool in EDIT_TOOLS and not outside:
            return Decision("allow", "acceptEdits mode: an edit inside the workspace")
        if outside:
            return self._ask(facts, f"{outside[0]} is outside the workspace")
        return self._ask(facts, f"{facts.tool} needs permission")

    def _suggester(self) -> Suggester:
        return Suggester(self.settings.local_settings_path, self._workspace)

    def _ask(self, facts: _Facts, reason: str) -> Decision:
        outside = [a.real for a in facts.reads if not self._workspace.contains(a.real)]
        suggestions = self._suggester().tool(facts.tool, [a.real for a in facts.writes], outside, facts.host,
                                             facts.tool in NETWORK_TOOLS)
        return Decision("ask", reason, suggestions=suggestions)


def _unreadable_marks(command: str, why: str) -> tuple[Mark, ...]:
    hidden = [Mark(i, i + 1, "a character that is not shown as itself") for i, c in enumerate(command[:10_000])
              if has_hidden(c)]
    return tuple(hidden[:100]) or (Mark(0, len(command), f"the command {why}"),)


@dataclass(frozen=True)
class _Protected:
    reason: str | None = None
    grants: tuple[Path, ...] = ()


def _fail_closed(facts: _Facts) -> str:
    why = facts.bash.fail_closed() if facts.bash is not None else None
    return f" (it may: {why}, so every rule that could apply does)" if why else ""


def _path_hit(rule: CompiledRule, access: PathAccess) -> bool:
    return rule.matches_path(access.real) or rule.matches_path(access.written)


def _generic_hit(rule: CompiledRule, facts: _Facts) -> bool:
    spec = rule.rule.specifier
    if spec is None or rule.bash or rule.path or rule.domain or rule.rule.tool != facts.tool:
        return False
    return any(facts.raw.get(key) == spec for key in _GENERIC_SPEC_KEYS)
