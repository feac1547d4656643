"""The permission engine: one decision per tool call, from rules by source, the mode, containment, the
shell checker and hooks. The loop calls `decide` (and `run_hooks`); a front end answers the asks.

Order of a decision (the first step that decides wins):
 1. a deny rule matching the call (any part of a compound command, any path it touches) -> deny
 2. ExitPlanMode: ask in plan mode (allow elsewhere: there is nothing to leave)
 3. a PreToolUse hook that blocked or denied -> deny
 4. an ask rule -> ask (even in bypassPermissions)
 5. plan mode and the call is not read-only -> deny
 6. a write to a protected path (`.git/`, `.agent-bridge/`, `.claude/settings*.json`, the user settings)
    -> ask, whatever the mode or rules, with no always-option
 7. a hook's `ask` -> ask; a hook's `allow` -> allow
 8. bypassPermissions (unless disabled by settings) -> allow
 9. allow rules / read-only inside the workspace / acceptEdits for edits inside the workspace -> allow
10. otherwise ask, with narrow always-rules to offer.
An ask becomes a deny in dontAsk mode and when no one can answer (`interactive=False`).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from bridge.permissions import shell
from bridge.permissions.containment import SAFE_WRITE_DEVICES, Workspace, normalize, resolve
from bridge.permissions.hooks import HookOutcome, matching_hooks, run_hooks
from bridge.permissions.modes import Mode, ModeState, PermissionModeError, parse_mode
from bridge.permissions.rules import (
    EDIT_TOOLS,
    READ_TOOLS,
    CompiledRule,
    Rule,
    RuleIndex,
    RuleOrigin,
    RuleSet,
    RuleSyntaxError,
    compile_rule,
    normalize_host,
)
from bridge.permissions.settings import SettingsStore
from bridge.permissions.types import Behavior, Decision, RuleSuggestion, SettingsIssue, SourceName

log = logging.getLogger(__name__)

PathAccess = Literal["read", "write"]
EXIT_PLAN_MODE = "ExitPlanMode"
NETWORK_TOOLS = frozenset({"WebFetch"})  # read-only, but a fetch can leak: asks unless a domain rule allows
_SUBCOMMAND_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9:_.-]*$")
_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun", "uv", "poetry", "pdm", "hatch"})
# commands whose second word is a subcommand or target worth keeping in a suggested prefix
_SUBCOMMAND_TOOLS = _RUNNERS | frozenset({
    "git", "cargo", "go", "make", "docker", "kubectl", "pip", "pip3", "gh", "dotnet", "mvn", "gradle", "just",
    "terraform", "helm", "brew", "apt", "conda", "rustup", "deno", "swift", "python", "python3", "pytest", "tox",
    "nox", "ruff", "mypy",
})
_EXACT_SUGGESTION = frozenset({
    "rm", "rmdir", "dd", "shred", "truncate", "chmod", "chown", "chgrp", "kill", "pkill", "killall", "mkfs",
})
_WRITE_OPTIONS = frozenset({"--output", "--output-file", "--out-file", "--outfile", "--log-file", "--logfile"})
_GENERIC_SPEC_KEYS = ("subagent_type", "skill", "name")


@dataclass
class _Access:
    written: Path  # normalized, symlinks not followed
    real: Path  # resolved


@dataclass
class _Facts:
    tool: str
    raw: dict[str, Any]
    read_only: bool
    reads: list[_Access] = field(default_factory=list)
    writes: list[_Access] = field(default_factory=list)
    analysis: shell.ShellAnalysis | None = None
    bases: list[Path] = field(default_factory=list)  # cwd, then directories a command cd's into
    host: str | None = None


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
        protected = [*self.settings.protected_files, self.settings.user_config_dir / "settings.json"]
        self._workspace = Workspace.of(self.cwd, [*self._extra_dirs, *self.settings.additional_directories], protected)
        self._generation = self.settings.generation

    @property
    def workspace(self) -> Workspace:
        self._refresh()
        return self._workspace

    @property
    def errors(self) -> list[SettingsIssue]:
        self._refresh()
        return [*self._own_issues, *self.settings.issues]

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
            if self._allow_rule_for_path("Read", _Access(Path(written), Path(resolved)), "read") is not None:
                return None
            return f"{resolved} is outside the workspace"

        return check

    # --- hooks ---------------------------------------------------------------------------------------

    async def run_hooks(self, event: str, payload: dict[str, Any], *, tool_name: str | None = None) -> HookOutcome:
        self._refresh()
        hooks = matching_hooks(self.settings.hooks(event), event, tool_name)
        full = {"cwd": str(self.cwd), "hook_event_name": event, "permission_mode": self.mode, **payload}
        if tool_name is not None:
            full.setdefault("tool_name", tool_name)
        return await run_hooks(hooks, event, full, cwd=self.cwd, env=self.settings.env)

    # --- decisions -----------------------------------------------------------------------------------

    def decide(
        self,
        tool_name: str,
        raw_input: dict[str, Any],
        *,
        read_only: bool,
        paths: list[tuple[Path, Literal["read", "write"]]],
        hook: HookOutcome | None = None,
    ) -> Decision:
        """`hook`: the merged PreToolUse outcome, when the loop ran hooks first (as it should)."""
        self._refresh()
        decision = self._decide(self._facts(tool_name, raw_input, read_only, paths), hook)
        if hook is not None and hook.updated_input is not None and decision.behavior != "deny":
            decision = dataclasses.replace(decision, updated_input=hook.updated_input)
        if decision.behavior == "ask" and (self.mode == "dontAsk" or not self.interactive):
            why = "dontAsk mode" if self.mode == "dontAsk" else "no one can answer a prompt in this run"
            return dataclasses.replace(decision, behavior="deny", reason=f"{decision.reason} (denied: {why})",
                                       suggestions=[])
        return decision

    def _decide(self, facts: _Facts, hook: HookOutcome | None) -> Decision:
        deny = self._match(facts, "deny")
        if deny is not None:
            return _by_rule("deny", deny, f"denied by rule {deny.text}")
        if facts.tool == EXIT_PLAN_MODE:
            if self.mode == "plan":
                return Decision("ask", "The agent wants to leave plan mode and start working on its plan")
            return Decision("allow", "not in plan mode")
        if hook is not None and hook.denied:
            return Decision("deny", hook.reason or "blocked by a PreToolUse hook")
        ask = self._match(facts, "ask")
        if ask is not None:
            return _by_rule("ask", ask, f"rule {ask.text} asks for this")
        if self.mode == "plan" and not facts.read_only:
            return Decision("deny", "Plan mode: only read-only tools may run until the plan is accepted")
        for access in facts.writes:
            protected = self._workspace.protected_reason(access.written)
            if protected is not None:
                return Decision("ask", f"Writing {protected}")
        if hook is not None and hook.decision == "ask":
            return Decision("ask", hook.reason or "a PreToolUse hook asks for this")
        if hook is not None and hook.decision == "allow":
            return Decision("allow", hook.reason or "allowed by a PreToolUse hook")
        if self.mode == "bypassPermissions" and not self.settings.bypass_disabled:
            return Decision("allow", "bypassPermissions mode")
        if facts.tool == "Bash":
            return self._decide_bash(facts)
        return self._decide_tool(facts)

    # --- facts ---------------------------------------------------------------------------------------

    def _facts(self, tool: str, raw: dict[str, Any], read_only: bool,
               paths: list[tuple[Path, Literal["read", "write"]]]) -> _Facts:
        facts = _Facts(tool, raw, read_only, bases=[self.cwd])
        declared = list(paths)
        if not declared and tool != "Bash":
            for key in ("file_path", "notebook_path", "path"):
                value = raw.get(key)
                if isinstance(value, str) and value:
                    declared.append((Path(value), "write" if tool in EDIT_TOOLS else "read"))
        for path, access in declared:
            (facts.writes if access == "write" else facts.reads).append(self._access(path, self.cwd))
        if tool in NETWORK_TOOLS:
            url = raw.get("url")
            if isinstance(url, str):
                try:
                    host = urlsplit(url).hostname
                except ValueError:
                    host = None
                facts.host = normalize_host(host) if host else None
        if tool == "Bash":
            self._bash_facts(facts)
        return facts

    @staticmethod
    def _access(path: str | Path, base: Path) -> _Access:
        return _Access(normalize(path, base), resolve(path, base))

    def _bash_facts(self, facts: _Facts) -> None:
        command = facts.raw.get("command")
        analysis = shell.analyze(command if isinstance(command, str) else "")
        facts.analysis = analysis
        for target in analysis.cd_targets:
            for base in list(facts.bases):
                resolved = resolve(target, base)
                if resolved not in facts.bases:
                    facts.bases.append(resolved)
        read_only = analysis.ok
        for part in analysis.commands:
            if part.nested:
                continue
            for written in part.writes:
                if written is None:
                    read_only = False
                    continue
                if _safe_device(written):
                    continue
                read_only = False
                facts.writes.extend(self._access(written, base) for base in facts.bases)
            for read in part.reads:
                if read is None:
                    read_only = False
                    continue
                facts.reads.extend(self._access(read, base) for base in facts.bases)
            words = shell.read_only_paths(part)
            if words is None:
                read_only = False
            else:
                facts.reads.extend(self._access(w, base) for w in words for base in facts.bases)
        facts.read_only = read_only

    # --- rule matching -------------------------------------------------------------------------------

    def _match(self, facts: _Facts, behavior: Behavior) -> CompiledRule | None:
        """The first rule of `behavior` that speaks about any part of the call (for deny and ask)."""
        for rule in self._index.rules_for(behavior, facts.tool):
            if rule.rule.specifier is None:
                return rule
            if facts.tool == "Bash" and rule.bash is not None and self._bash_rule_hits(facts, rule):
                return rule
            if rule.domain is not None and facts.host is not None and rule.matches_host(facts.host):
                return rule
            if rule.path is not None and any(self._path_hit(rule, a) for a in facts.reads + facts.writes):
                return rule
            if _generic_hit(rule, facts):
                return rule
        # path rules speak about every tool's paths: `Read(~/.ssh/**)` also stops `cat ~/.ssh/id_rsa`
        if facts.tool not in READ_TOOLS:
            for rule in self._index.rules_for(behavior, "Read"):
                if rule.path is not None and any(self._path_hit(rule, a) for a in facts.reads):
                    return rule
        if facts.tool not in EDIT_TOOLS:
            for rule in self._index.rules_for(behavior, "Write"):
                if rule.path is not None and any(self._path_hit(rule, a) for a in facts.writes):
                    return rule
        return None

    @staticmethod
    def _path_hit(rule: CompiledRule, access: _Access) -> bool:
        return rule.matches_path(access.real) or rule.matches_path(access.written)

    @staticmethod
    def _bash_rule_hits(facts: _Facts, rule: CompiledRule) -> bool:
        analysis = facts.analysis
        assert analysis is not None
        for part in analysis.commands:
            forms = part.match_forms(for_deny=True)
            if rule.bash_head is not None and rule.bash_head not in part.leading_words(for_deny=True):
                continue
            if any(rule.matches_command(form) for form in forms):
                return True
        if not analysis.ok:
            # what could not be parsed is still matched piece by piece, so a deny rule is hard to dodge
            for piece in re.split(r"[;&|\n`()]+|\$\(", analysis.source):
                try:
                    words = shlex.split(piece)
                except ValueError:
                    words = piece.split()
                if words and rule.matches_command(shlex.join(words)):
                    return True
        return False

    def _allow_rule_for_path(self, tool: str, access: _Access, kind: PathAccess) -> CompiledRule | None:
        """An allow rule naming this path for this kind of access (an Edit rule also grants reading)."""
        lookups = [tool if tool in EDIT_TOOLS else "Write"] if kind == "write" else [
            tool if tool in READ_TOOLS else "Read", "Write"]
        for name in lookups:
            for rule in self._index.rules_for("allow", name):
                if rule.path is not None and rule.matches_path(access.real):
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
            return _by_rule("allow", whole, f"allowed by rule {whole.text}")
        accesses: list[tuple[_Access, PathAccess]] = [(a, "read") for a in facts.reads]
        accesses += [(a, "write") for a in facts.writes]
        if accesses:
            hits = [self._allow_rule_for_path(facts.tool, a, kind) for a, kind in accesses]
            if all(hit is not None for hit in hits):
                first = hits[0]
                assert first is not None
                return _by_rule("allow", first, f"allowed by rule {first.text}")
        outside = [a.real for a, _ in accesses if not self._workspace.contains(a.real)]
        if facts.tool in NETWORK_TOOLS:
            host = facts.host or "this address"
            return self._ask(facts, f"Fetch from {host}")
        if facts.read_only and not facts.writes and not outside:
            return Decision("allow", "read-only, inside the workspace")
        if self.mode == "acceptEdits" and facts.tool in EDIT_TOOLS and not outside:
            return Decision("allow", "acceptEdits mode: an edit inside the workspace")
        if outside:
            return self._ask(facts, f"{outside[0]} is outside the workspace")
        return self._ask(facts, f"{facts.tool} needs permission")

    # --- Bash ----------------------------------------------------------------------------------------

    def _decide_bash(self, facts: _Facts) -> Decision:
        analysis = facts.analysis
        assert analysis is not None
        if not analysis.ok:
            return Decision("ask", f"The command {analysis.error}, so it cannot be checked")
        for base in facts.bases[1:]:
            if not self._workspace.contains(base):
                return Decision("ask", f"The command changes directory to {base}, outside the workspace")
        for part in analysis.commands:
            if part.nested:
                continue
            for target in part.writes:
                if target is None:
                    return Decision("ask", "The command redirects output to a path computed at run time")
        for access in facts.writes:
            contained = self._workspace.contains(access.real)
            if not contained and self._allow_rule_for_path("Write", access, "write") is None:
                return Decision("ask", f"The command writes {access.real}, outside the workspace")
        unallowed: list[shell.SimpleCommand] = []
        first_rule: CompiledRule | None = None
        reasons: list[str] = []
        for part in analysis.commands:
            if part.nested or (not part.argv and part.hazard is None):
                continue
            rule = self._bash_allow_rule(part) if part.argv else None
            if part.hazard is not None and rule is None:
                return Decision("ask", f"`{part.text}`: {part.hazard}",
                                suggestions=self._suggest_bash([part], exact=True))
            if rule is not None:
                outside = self._option_writes_outside(part, facts)
                if outside is not None:
                    return Decision("ask", f"`{part.text}` writes {outside}, outside the workspace")
                first_rule = first_rule or rule
                continue
            verdict = self._read_only_part(part, facts)
            if verdict is None:
                continue
            reasons.append(verdict)
            unallowed.append(part)
        if not unallowed:
            if first_rule is not None:
                return _by_rule("allow", first_rule, f"allowed by rule {first_rule.text}")
            return Decision("allow", "read-only commands inside the workspace")
        return Decision("ask", "; ".join(dict.fromkeys(reasons)), suggestions=self._suggest_bash(unallowed))

    def _bash_allow_rule(self, part: shell.SimpleCommand) -> CompiledRule | None:
        forms = part.match_forms(for_deny=False)
        leading = part.leading_words(for_deny=False)
        for rule in self._index.rules_for("allow", "Bash"):
            if rule.bash_head is not None and rule.bash_head not in leading:
                continue
            # only a rule that names the risky command itself (`Bash(sudo apt update)`) lets it run
            if part.hazard is not None and (part.hazard_command is None or rule.bash_word != part.hazard_command):
                continue
            if rule.rule.specifier is None or any(rule.matches_command(form) for form in forms):
                return rule
        return None

    def _option_writes_outside(self, part: shell.SimpleCommand, facts: _Facts) -> Path | None:
        """A rule-allowed command may still name an output file (`--output=/etc/x`): containment applies."""
        args = part.effective
        for i, arg in enumerate(args):
            name, _, value = arg.partition("=")
            if name not in _WRITE_OPTIONS:
                continue
            if not value and i + 1 < len(args):
                value = args[i + 1]
            for base in facts.bases:
                real = resolve(value, base) if value else base
                if not self._workspace.contains(real) and not _safe_device(value):
                    return real
        return None

    def _read_only_part(self, part: shell.SimpleCommand, facts: _Facts) -> str | None:
        """None when the part may run as a read-only command; else why it needs permission."""
        words = shell.read_only_paths(part)
        if words is None:
            return f"`{part.text}` needs permission"
        for word in words:
            for base in facts.bases:
                access = self._access(word, base)
                if not self._workspace.contains(access.real) and self._allow_rule_for_path(
                        "Read", access, "read") is None:
                    return f"`{part.text}` reads {access.real}, outside the workspace"
        for target in part.reads:
            if target is not None:
                access = self._access(target, self.cwd)
                if not self._workspace.contains(access.real) and not _safe_device(target):
                    return f"`{part.text}` reads {access.real}, outside the workspace"
        writes = [t for t in part.writes if t is not None and not _safe_device(t)]
        if writes and self.mode != "acceptEdits":
            return f"`{part.text}` writes {writes[0]}"
        return None

    # --- suggestions ---------------------------------------------------------------------------------

    def _ask(self, facts: _Facts, reason: str) -> Decision:
        return Decision("ask", reason, suggestions=self._suggest_tool(facts))

    def _destination(self) -> str:
        return str(self.settings.local_settings_path)

    def _suggestions(self, rules: Iterable[str], *, deny_too: bool) -> list[RuleSuggestion]:
        unique = list(dict.fromkeys(rules))
        if not unique:
            return []
        out = [RuleSuggestion(unique[0], "allow", self._destination(), tuple(unique[1:]))]
        if deny_too and len(unique) == 1:
            out.append(RuleSuggestion(unique[0], "deny", self._destination()))
        return out

    def _suggest_bash(self, parts: Sequence[shell.SimpleCommand], *, exact: bool = False) -> list[RuleSuggestion]:
        return self._suggestions((_bash_suggestion(p, exact=exact) for p in parts), deny_too=True)

    def _suggest_tool(self, facts: _Facts) -> list[RuleSuggestion]:
        if facts.tool in NETWORK_TOOLS:
            return self._suggestions([f"WebFetch(domain:{facts.host})"] if facts.host else [], deny_too=True)
        rules: list[str] = []
        for access in facts.writes:
            rules.append(f"{'Edit' if facts.tool in EDIT_TOOLS else 'Write'}({self._path_spec(access.real)})")
        for access in facts.reads:
            if not self._workspace.contains(access.real):
                rules.append(f"Read({self._path_spec(access.real)})")
        if not rules:
            rules.append(facts.tool)
        return self._suggestions(rules, deny_too=True)

    def _path_spec(self, path: Path) -> str:
        """The narrow place to allow: the file's directory (`src/**`), or the file itself at the root."""
        directory = path.parent
        if self._workspace.contains(path):
            root = next(r for r in self._workspace.roots if path == r or path.is_relative_to(r))
            if root == self.cwd:
                if directory == self.cwd:
                    return _escape_glob(path.name)
                return _escape_glob(directory.relative_to(self.cwd).as_posix()) + "/**"
        return "/" + _escape_glob(directory.as_posix()) + "/**"


def _by_rule(behavior: Behavior, rule: CompiledRule, reason: str) -> Decision:
    file = rule.origin.file
    return Decision(behavior, reason, rule=rule.text, source=rule.origin.source,
                    source_file=str(file) if file is not None else None)


def _generic_hit(rule: CompiledRule, facts: _Facts) -> bool:
    spec = rule.rule.specifier
    if spec is None or rule.bash or rule.path or rule.domain or rule.rule.tool != facts.tool:
        return False
    return any(facts.raw.get(key) == spec for key in _GENERIC_SPEC_KEYS)


def _safe_device(target: str) -> bool:
    return target in SAFE_WRITE_DEVICES or re.fullmatch(r"/dev/fd/[0-9]+", target) is not None


def _escape_glob(text: str) -> str:
    return re.sub(r"([*?\[\]!#\\])", r"\\\1", text)


def _bash_suggestion(part: shell.SimpleCommand, *, exact: bool) -> str:
    words = part.effective
    if exact or not words or words[0] in _EXACT_SUGGESTION or part.hazard is not None:
        return f"Bash({part.canonical})"
    depth = 1
    if words[0] in _SUBCOMMAND_TOOLS:
        depth = 3 if words[0] in _RUNNERS and len(words) > 1 and words[1] in ("run", "exec", "x") else 2
    prefix = [words[0]]
    for word in words[1:depth]:
        if not _SUBCOMMAND_WORD.match(word):
            break
        prefix.append(word)
    return f"Bash({shlex.join(prefix)} *)"
