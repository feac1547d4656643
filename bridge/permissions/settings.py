"""Settings sources: where rules, modes and hooks come from, loaded, validated and remembered by source.

Files, highest precedence first (precedence only matters for single values such as `defaultMode`; rules
from every source are pooled, and deny beats ask beats allow whatever their source):
  `.agent-bridge/settings.local.json` > `.agent-bridge/settings.json` > user `settings.json` (config dir)
  > Claude Code's `.claude/settings.local.json` > `.claude/settings.json` > `~/.claude/settings.json`.
Claude Code's files contribute permission rules, `additionalDirectories` and
`disableBypassPermissionsMode` only; their hooks and modes stay Claude Code's.

The folder's own files (the four in the workspace) are a stranger's until the user trusts them
(bridge/permissions/trust.py): what in them widens what runs or what is allowed — allow rules, hooks, `env`,
`passEnv`, a permissive `defaultMode`, `additionalDirectories` — is a `TrustItem`, inert until admitted; their
deny and ask rules apply at once. The user's own files (config dir, `~/.claude`) are taken as they are.
Settings `env` never sets variables that change how programs load or start (bridge/environment.py).

Every file is validated field by field with pydantic: a bad field is reported (`SettingsIssue`) and
skipped, the rest of the file still applies, so one typo never drops a file's deny rules. What can't be
read may have held restrictions: a file that exists but can't be read or parsed, an invalid `deny`/`ask`
list or rule, invalid `PreToolUse` hooks or `disableBypassPermissionsMode` put the store in lockdown
(`lockdown`): every call asks until it is fixed — never fewer denies than the user wrote. A file whose
mtime/size/inode changes is reloaded on the next `refresh()` (one `stat` per file).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from bridge import safefs
from bridge.config import default_data_dir
from bridge.environment import refused_reason
from bridge.errors import validation_problems
from bridge.jsonfile import loads, read_text, stat_key, write_json_atomic
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.hooks import DEFAULT_TIMEOUT_S, HookCommand, HookMatcher
from bridge.permissions.modes import Mode, narrower
from bridge.permissions.named_files import bound_paths
from bridge.permissions.rules import CompiledRule, PlacedRule, Rule, RuleOrigin, RuleSyntaxError, compile_rule
from bridge.permissions.trust import FolderTrust, TrustItem, TrustKind, TrustPolicy
from bridge.permissions.types import Behavior, RuleSuggestion, SettingsIssue, SourceName
from bridge.permissions.widening import (
    WIDENING_MODES,
    folder_directories,
    hook_item,
    own_hook_item,
    relative_text,
    rule_binding,
    sandbox_widening,
    trust_item,
    widening_items,
)

log = logging.getLogger(__name__)

LOCAL_SETTINGS = Path(".agent-bridge") / "settings.local.json"
PROJECT_SETTINGS = Path(".agent-bridge") / "settings.json"


class SettingsWriteError(Exception):
    """A rule could not be saved (the file is not ours to write, or it is invalid JSON we won't clobber)."""


class _HookCommandModel(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0)


class _HookMatcherModel(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    matcher: str = ""
    hooks: list[_HookCommandModel]


_LATER = ConfigDict(defer_build=True)  # built when a settings file first needs it: most starts have none to read
_FIELDS: dict[str, TypeAdapter[Any]] = {
    "allow": TypeAdapter(list[str], config=_LATER),
    "ask": TypeAdapter(list[str], config=_LATER),
    "deny": TypeAdapter(list[str], config=_LATER),
    "defaultMode": TypeAdapter(Mode, config=_LATER),
    "additionalDirectories": TypeAdapter(list[str], config=_LATER),
    "disableBypassPermissionsMode": TypeAdapter(Literal["disable"], config=_LATER),
}
_HOOKS = TypeAdapter(list[_HookMatcherModel], config=_LATER)
_RESTRICTIONS = frozenset({"deny", "ask", "disableBypassPermissionsMode"})
LOCKDOWN_NOTE = "; until it is fixed every tool call asks (it may hold deny rules)"
_ENV = TypeAdapter(dict[str, str], config=_LATER)
_PASS_ENV = TypeAdapter(list[str], config=_LATER)
# Modes that allow more than `default` does: from a folder's own file, they wait for trust.


@dataclass(frozen=True)
class SettingsFile:
    source: SourceName
    path: Path
    root: Path | None  # project root for `/path` rules; None: the session's cwd
    claude: bool = False  # a Claude Code file: rules only
    writable: bool = True
    project: bool = False  # the folder's own file: what widens waits for the user's trust


@dataclass
class LoadedSettings:
    file: SettingsFile
    rules: list[tuple[Behavior, Rule]] = field(default_factory=list)
    default_mode: Mode | None = None
    additional_directories: list[tuple[str, Path]] = field(default_factory=list)  # as written, joined to the base
    disable_bypass: bool = False
    hooks: dict[str, list[HookMatcher]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    pass_env: list[str] = field(default_factory=list)  # secret-looking variables commands may see
    sandbox: Any = None  # the `sandbox` object as read (bridge/permissions/sandbox_policy.py validates it)
    sandbox_widening: list[str] = field(default_factory=list)  # `sandbox` settings that loosen it (as texts)
    issues: list[SettingsIssue] = field(default_factory=list)
    exists: bool = False


def load_settings_file(file: SettingsFile) -> LoadedSettings:
    loaded = LoadedSettings(file)
    try:  # a folder's own file: never through a link out of the folder; any: a regular file, size-capped
        text = read_text(file.path, within=file.root if file.project else None)
    except FileNotFoundError:
        return loaded
    except OSError as exc:
        loaded.issues.append(
            SettingsIssue(file.path, f"is not read: {exc}; the file is skipped{LOCKDOWN_NOTE}", lockdown=True)
        )
        return loaded
    except ValueError as exc:  # not UTF-8
        loaded.issues.append(SettingsIssue(file.path, f"cannot be decoded: {exc}{LOCKDOWN_NOTE}", lockdown=True))
        return loaded
    loaded.exists = True
    if not text.strip():
        return loaded
    try:
        data = loads(text)
    except json.JSONDecodeError as exc:
        loaded.issues.append(
            SettingsIssue(
                file.path,
                f"is not valid JSON (line {exc.lineno}, column {exc.colno}): "
                f"{exc.msg}; the file is skipped{LOCKDOWN_NOTE}",
                lockdown=True,
            )
        )
        return loaded
    except ValueError as exc:  # NaN, Infinity, 1e999, an int of too many digits
        loaded.issues.append(
            SettingsIssue(file.path, f"is not valid JSON: {exc}; the file is skipped{LOCKDOWN_NOTE}", lockdown=True)
        )
        return loaded
    if not isinstance(data, dict):
        loaded.issues.append(
            SettingsIssue(file.path, f"must hold a JSON object; the file is skipped{LOCKDOWN_NOTE}", lockdown=True)
        )
        return loaded
    _load_permissions(loaded, data.get("permissions"))
    if not file.claude:
        _load_hooks(loaded, data.get("hooks"))
        if "env" in data:
            env = _validated(loaded, "env", _ENV, data["env"])
            for name, value in (env or {}).items():
                why = refused_reason(name, project=file.project)
                if why is None:
                    loaded.env[name] = value
                else:
                    loaded.issues.append(SettingsIssue(file.path, f"env.{name} is refused: {why}"))
        if "passEnv" in data:
            loaded.pass_env = _validated(loaded, "passEnv", _PASS_ENV, data["passEnv"]) or []
        loaded.sandbox = data.get("sandbox")
        loaded.sandbox_widening = sandbox_widening(loaded.sandbox)
    return loaded


def _validated(
    loaded: LoadedSettings, where: str, adapter: TypeAdapter[Any], value: Any, *, restricts: bool = False
) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        problems = "; ".join(validation_problems(exc, whole="value", limit=3))
        note = LOCKDOWN_NOTE if restricts else ""
        loaded.issues.append(
            SettingsIssue(loaded.file.path, f"{where} is invalid ({problems}); it is skipped{note}", lockdown=restricts)
        )
        return None


def _load_permissions(loaded: LoadedSettings, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        loaded.issues.append(
            SettingsIssue(
                loaded.file.path, f"permissions must be an object; it is skipped{LOCKDOWN_NOTE}", lockdown=True
            )
        )
        return
    for name, adapter in _FIELDS.items():
        if name not in value:
            continue
        checked = _validated(loaded, f"permissions.{name}", adapter, value[name], restricts=name in _RESTRICTIONS)
        if checked is None:
            continue
        if name in ("allow", "ask", "deny"):
            for text in checked:
                try:
                    loaded.rules.append((name, Rule.parse(text)))  # type: ignore[arg-type]
                except RuleSyntaxError as exc:
                    restricts = name in _RESTRICTIONS
                    note = LOCKDOWN_NOTE if restricts else ""
                    loaded.issues.append(
                        SettingsIssue(
                            loaded.file.path, f"permissions.{name}: {exc}; rule skipped{note}", lockdown=restricts
                        )
                    )
        elif name == "defaultMode" and not loaded.file.claude:
            loaded.default_mode = checked
        elif name == "additionalDirectories":
            base = loaded.file.root or Path.home()
            loaded.additional_directories = [(d, base / os.path.expanduser(d)) for d in checked]
        elif name == "disableBypassPermissionsMode":
            loaded.disable_bypass = True


def _load_hooks(loaded: LoadedSettings, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        loaded.issues.append(
            SettingsIssue(loaded.file.path, f"hooks must be an object of events; skipped{LOCKDOWN_NOTE}", lockdown=True)
        )
        return
    for event, matchers in value.items():
        checked = _validated(loaded, f"hooks.{event}", _HOOKS, matchers, restricts=event == "PreToolUse")
        if checked is None:
            continue
        loaded.hooks[str(event)] = [
            HookMatcher(
                m.matcher,
                tuple(
                    HookCommand(h.command, h.timeout or DEFAULT_TIMEOUT_S, loaded.file.path, folder=loaded.file.project)
                    for h in m.hooks
                ),
            )
            for m in checked
        ]


def default_user_config_dir() -> Path:
    override = os.environ.get("AGENT_BRIDGE_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("agent-bridge"))


def default_claude_home() -> Path:
    override = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(override) if override else Path.home() / ".claude"


class SettingsStore:
    """Every settings source of one project. One per project root, shared by all its sessions, so a
    saved rule applies to all of them at once."""

    _cache: ClassVar[dict[tuple[Path, Path, Path], SettingsStore]] = {}
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        cwd: Path,
        *,
        user_config_dir: Path | None = None,
        claude_home: Path | None = None,
        trust: TrustPolicy | None = None,
    ) -> None:
        self.cwd = Path(os.path.realpath(cwd))
        self.user_config_dir = user_config_dir or default_user_config_dir()
        self.claude_home = claude_home or default_claude_home()
        root = self.cwd
        user_files = {self.user_config_dir / "settings.json", self.claude_home / "settings.json"}

        def project(path: Path) -> bool:  # the user's own file stays the user's, even opened as a folder
            return path not in user_files

        self.files: tuple[SettingsFile, ...] = (
            SettingsFile("localSettings", root / LOCAL_SETTINGS, root, project=project(root / LOCAL_SETTINGS)),
            SettingsFile("projectSettings", root / PROJECT_SETTINGS, root, project=project(root / PROJECT_SETTINGS)),
            SettingsFile("userSettings", self.user_config_dir / "settings.json", None),
            SettingsFile(
                "claudeLocalSettings",
                root / ".claude" / "settings.local.json",
                root,
                True,
                False,
                project=project(root / ".claude" / "settings.local.json"),
            ),
            SettingsFile(
                "claudeProjectSettings",
                root / ".claude" / "settings.json",
                root,
                True,
                False,
                project=project(root / ".claude" / "settings.json"),
            ),
            SettingsFile("claudeUserSettings", self.claude_home / "settings.json", None, True, False),
        )
        self.trust = FolderTrust(self.cwd, self.user_config_dir, trust)
        # what a folder's additional directory may not hold (bridge/permissions/widening.py `too_wide`)
        self._kept = [
            (Path(os.path.realpath(path)), what)
            for path, what in (
                (Path.home(), "your home directory"),
                (self.user_config_dir, "the bridge's settings"),
                (default_data_dir(), "the bridge's data"),
                (self.claude_home, "Claude Code's settings"),
            )
        ]
        self._trust_version = -1
        self._lock = threading.RLock()
        self._stats: dict[Path, tuple[int, int, int] | None] = {}
        self._loaded: dict[Path, LoadedSettings] = {}
        self._placed: list[PlacedRule] = []
        # the folder's admitted allow rules for one script, with the binding they were admitted with
        self._bound: list[tuple[Rule, str]] = []
        # and those trusted for a script that changed since: off now, with the files that changed
        self._changed_rules: list[tuple[Rule, list[str]]] = []
        self._compiled: tuple[int, RuleGrammar, list[CompiledRule], list[SettingsIssue]] | None = None
        self._plugin_hooks: list[LoadedSettings] = []
        self._logged: set[SettingsIssue] = set()
        self.generation = 0
        self.refresh()

    @classmethod
    def for_project(
        cls, cwd: Path, *, user_config_dir: Path | None = None, claude_home: Path | None = None
    ) -> SettingsStore:
        ucd = user_config_dir or default_user_config_dir()
        home = claude_home or default_claude_home()
        key = (Path(os.path.realpath(cwd)), ucd, home)
        with cls._cache_lock:
            store = cls._cache.get(key)
            if store is None:
                store = cls._cache[key] = cls(cwd, user_config_dir=ucd, claude_home=home)
            return store

    # --- loading -----------------------------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> bool:
        """Reload the files that changed since the last look; True when anything did."""
        with self._lock:
            self.trust.refresh()
            changed = self.trust.version != self._trust_version
            self._trust_version = self.trust.version
            for file in self.files:
                key = stat_key(file.path)
                if not force and file.path in self._loaded and self._stats.get(file.path) == key:
                    continue
                self._stats[file.path] = key
                self._loaded[file.path] = load_settings_file(file)
                changed = True
            # a script a trusted rule runs that changed since (an edit, a pull mid-session): the rule is out now
            changed = changed or any(rule_binding(rule, self.cwd) != binds for rule, binds in self._bound)
            if changed:
                self._recompile()
                self.generation += 1
                for issue in self.issues:
                    if issue not in self._logged:
                        self._logged.add(issue)
                        log.warning("invalid settings: %s", issue)
            return changed

    def _recompile(self) -> None:
        """The rules in effect, placed (the allow rules of the folder's own files once admitted); compiled per
        grammar by `compiled`."""
        placed: list[PlacedRule] = []
        bound: list[tuple[Rule, str]] = []
        changed: list[tuple[Rule, list[str]]] = []
        for file in self.files:
            loaded = self._loaded[file.path]
            origin = RuleOrigin(file.source, file.path, file.root)
            for behavior, rule in loaded.rules:
                binds = ""
                if behavior == "allow" and file.project:
                    binds = rule_binding(rule, self.cwd)
                    if not self._admits(loaded, "allow", rule.text, binds):
                        if files := self.trust.changed_files(trust_item(loaded, self.cwd, "allow", rule.text, binds)):
                            changed.append((rule, files))
                        continue
                    if binds:
                        bound.append((rule, binds))
                placed.append(PlacedRule(rule, behavior, origin, bound=bool(binds)))
        self._placed, self._bound, self._changed_rules = placed, bound, changed

    def compiled(self, grammar: RuleGrammar) -> tuple[list[CompiledRule], list[SettingsIssue]]:
        """The rules in effect compiled by `grammar` (the forms the session's tools state), and the rules that
        could not be: a deny or ask rule among them puts the engine in lockdown. Compiled once per change, shared
        by every engine of the project."""
        with self._lock:
            rules = self.rules
            cached = self._compiled
            if cached is not None and cached[0] == self.generation and cached[1] == grammar:
                return cached[2], cached[3]
            compiled: list[CompiledRule] = []
            issues: list[SettingsIssue] = []
            for placed in rules:
                try:
                    compiled.append(compile_rule(placed, grammar.form(placed.rule.tool), cwd=self.cwd))
                except RuleSyntaxError as exc:
                    restricts = placed.behavior != "allow"
                    issues.append(
                        SettingsIssue(
                            placed.origin.file or Path("session"),
                            f"permissions.{placed.behavior}: {exc}; rule skipped{LOCKDOWN_NOTE if restricts else ''}",
                            lockdown=restricts,
                        )
                    )
            for issue in issues:
                if issue not in self._logged:
                    self._logged.add(issue)
                    log.warning("invalid settings: %s", issue)
            self._compiled = (self.generation, grammar, compiled, issues)
            return compiled, issues

    def changed_rules(self) -> list[tuple[Rule, list[str]]]:
        """The folder's allow rules for one script that are off because the script (or what it pulls in) changed
        since the user trusted them, each with the files that changed: a question about that command says so."""
        with self._lock:
            return list(self._changed_rules)

    def bound_files(self) -> list[tuple[Path, str]]:
        """The workspace files the folder's trusted rules for one script run, each with its rule: held as what
        runs without a question (a write asks; the sandbox keeps them read-only), as a hook's script is."""
        root = Path(os.path.realpath(self.cwd))
        with self._lock:
            return [
                (root / path, rule.text)
                for rule, binds in self._bound
                for path in bound_paths(binds)
                if "*" not in path
            ]

    def loaded(self) -> list[LoadedSettings]:
        return [self._loaded[f.path] for f in self.files]

    @property
    def issues(self) -> list[SettingsIssue]:
        """What is wrong with the files as read, and the folder's additional directories refused as they
        resolve now (a link swapped in after loading counts)."""
        refused = [
            SettingsIssue(
                loaded.file.path, f"permissions.additionalDirectories: {text} is refused: {why}; it is skipped"
            )
            for loaded in self.loaded()
            for text, _real, why in folder_directories(loaded, self._kept)
            if why is not None
        ]
        return [*(issue for loaded in self.loaded() for issue in loaded.issues), *refused]

    @property
    def rules(self) -> list[PlacedRule]:
        """The rules in effect as written (`compiled` reads them by the tools' forms)."""
        if self.trust.version != self._trust_version:  # an answer just now: the allow rules it admitted
            self.refresh()
        return self._placed

    @property
    def lockdown(self) -> list[SettingsIssue]:
        """Problems that may have dropped deny or ask rules: while any is present, every call asks (with those
        of `compiled`, which the engine adds)."""
        return [issue for issue in self.issues if issue.lockdown]

    # --- trust ---------------------------------------------------------------------------------------

    def _admits(self, loaded: LoadedSettings, kind: TrustKind, text: str, binds: str = "") -> bool:
        return not loaded.file.project or self.trust.admits(trust_item(loaded, self.cwd, kind, text, binds))

    @property
    def trust_items(self) -> list[TrustItem]:
        """Everything the folder's own files say that widens what runs or is allowed (admitted or not), as it
        resolves now (an additional directory is bound to where it leads)."""
        self.refresh()
        every = [*self.loaded(), *self._plugin_hooks]  # (an installed plugin's hooks: its items are its hooks')
        return [item for loaded in every for item in widening_items(loaded, self.cwd, self._kept)]

    def pending_trust(self) -> list[TrustItem]:
        """The folder's widening items the user has not answered: inert until they are admitted."""
        return [i for i in self.trust_items if not self.trust.admits(i) and not self.trust.declined(i)]

    def inert_trust(self) -> list[TrustItem]:
        """The folder's widening items not in effect now (pending, declined, or the policy is restricted)."""
        return [i for i in self.trust_items if not self.trust.admits(i)]

    # --- effective settings --------------------------------------------------------------------------

    @property
    def default_mode(self) -> Mode | None:
        """The first mode by precedence among the folder's files (a widening one once trusted) and among the
        user's own; the user's wins unless the folder's is strictly narrower: a folder's file never widens it."""
        folder = user = None
        for loaded in self.loaded():
            mode = loaded.default_mode
            if mode is None or (mode in WIDENING_MODES and not self._admits(loaded, "defaultMode", mode)):
                continue
            if loaded.file.project:
                folder = folder or mode
            else:
                user = user or mode
        if user is None or (folder is not None and narrower(folder, user)):
            return folder
        return user

    @property
    def bypass_disabled(self) -> bool:
        return any(s.disable_bypass for s in self.loaded())

    @property
    def additional_directories(self) -> list[Path]:
        """The real paths of the additional directories in effect, resolved now: a folder's only once the item
        naming where it leads is trusted, never one `too_wide`."""
        return [
            real
            for s in self.loaded()
            for text, real, why in folder_directories(s, self._kept)
            if why is None and self._admits(s, "additionalDirectories", text)
        ]

    @property
    def env(self) -> dict[str, str]:
        """The settings' `env` in effect: applied to commands (inside the sandbox) and trusted hooks only."""
        merged: dict[str, str] = {}
        for loaded in reversed(self.loaded()):  # higher precedence overwrites
            merged.update({k: v for k, v in loaded.env.items() if self._admits(loaded, "env", f"{k}={v}")})
        return merged

    @property
    def pass_env(self) -> list[str]:
        """Names (or `NAME_*` patterns) of secret-looking variables of ours that commands may see."""
        return [n for s in self.loaded() for n in s.pass_env if self._admits(s, "passEnv", n)]

    def set_plugin_hooks(self, hooks: dict[str, Any]) -> list[SettingsIssue]:
        """The hooks of the plugins a session loaded (`{plugin name: hooks object}`): the user enabled them, so
        they run like the user's own hooks (a folder's plugin only once trusted: bridge/plugins.py)."""
        loaded = []
        for name, raw in hooks.items():
            plugin = LoadedSettings(SettingsFile("userSettings", Path(f"plugin {name}") / "hooks" / "hooks.json", None))
            _load_hooks(plugin, raw)
            loaded.append(plugin)
        with self._lock:
            self._plugin_hooks = loaded
        return [issue for plugin in loaded for issue in plugin.issues]

    def hooks(self, event: str) -> list[HookMatcher]:
        """The hooks in effect for `event`: the plugins', the user's and the folder's; the folder's only once
        trusted, and the user's own that run the folder's files too (`own_hook_item`)."""
        out: list[HookMatcher] = []
        for loaded in [*self._plugin_hooks, *self.loaded()]:
            for matcher in loaded.hooks.get(event, []):
                hooks = tuple(h for h in matcher.hooks if self._hook_admitted(loaded, event, matcher.matcher, h))
                if hooks:
                    out.append(HookMatcher(matcher.matcher, hooks))
        return out

    def _hook_admitted(self, loaded: LoadedSettings, event: str, matcher: str, hook: HookCommand) -> bool:
        if loaded.file.project:
            return self.trust.admits(hook_item(loaded, self.cwd, event, matcher, hook.command))
        own = own_hook_item(loaded, self.cwd, event, matcher, hook.command)
        return own is None or self.trust.admits(own)

    def admits_sandbox(self, file: SettingsFile, text: str) -> bool:
        """Whether a widening `sandbox` setting of `file` is in effect (the folder's own: once trusted)."""
        return not file.project or self.trust.admits(TrustItem(relative_text(file.path, self.cwd), "sandbox", text))

    @property
    def local_settings_path(self) -> Path:
        return self.files[0].path

    @property
    def protected_files(self) -> list[Path]:
        return [f.path for f in self.files]

    def source_of(self, path: Path) -> SettingsFile | None:
        return next((f for f in self.files if f.path == path), None)

    # --- saving ------------------------------------------------------------------------------------

    def save_rule(self, suggestion: RuleSuggestion) -> bool:
        """Add the suggestion's rules to its destination file, each once. True when the file changed."""
        dest = Path(suggestion.destination)
        target = self.source_of(dest)
        if target is None or not target.writable:
            raise SettingsWriteError(f"{dest} is not a settings file this project may write")
        rules = [Rule.parse(text) for text in suggestion.rules]
        with self._lock:
            data = self._read_for_update(target)
            permissions = data.setdefault("permissions", {})
            if not isinstance(permissions, dict):
                raise SettingsWriteError(f"{dest}: permissions is not an object; fix the file first")
            existing = permissions.setdefault(suggestion.behavior, [])
            if not isinstance(existing, list):
                raise SettingsWriteError(f"{dest}: permissions.{suggestion.behavior} is not a list; fix it first")
            known = set()
            for text in existing:
                try:
                    known.add(Rule.parse(str(text)))
                except RuleSyntaxError:
                    continue
            added = [rule for rule in dict.fromkeys(rules) if rule not in known]
            if not added:
                return False
            existing.extend(rule.text for rule in added)
            if target.project and suggestion.behavior == "allow":
                # the user chose these rules: they are the user's, not the folder's, wherever they are kept
                # bound as the engine checks them (widening.rule_binding): the workspace files an exact command names,
                # as they are now; unbound, such a rule was off as soon as it was saved
                file = relative_text(dest, self.cwd)
                self.trust.approve(TrustItem(file, "allow", r.text, rule_binding(r, self.cwd)) for r in added)
            if target.project:
                self._write_folder_file(target, data)
            else:
                # the user's own file: a link there is the user's (dotfiles), so the file it leads to is written
                write_json_atomic(Path(os.path.realpath(dest)), data)
            self.refresh(force=True)
            return True

    @staticmethod
    def _read_for_update(target: SettingsFile) -> dict[str, Any]:
        """The file's object to add to. A folder's file is never read (nor then written) through a symlink: what
        it leads to could be anything of the user's (a credentials JSON), which the write would copy into the
        folder."""
        dest = target.path
        if target.project:
            try:
                st = os.lstat(dest)
            except FileNotFoundError:
                st = None
            except OSError as exc:
                raise SettingsWriteError(f"{dest} cannot be looked at ({exc}); the rule is not saved") from exc
            if st is not None and not stat.S_ISREG(st.st_mode):
                raise SettingsWriteError(
                    f"{dest} is {safefs.describe_mode(st.st_mode)}, not a regular file: the bridge does not write "
                    "a folder's settings through it; the rule is not saved (this call goes ahead, the next ones "
                    "ask again)"
                )
        try:
            text = read_text(dest, within=target.root if target.project else None)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise SettingsWriteError(f"{dest} is not read ({exc}); the rule is not saved") from exc
        if not text.strip():
            return {}
        try:
            data = loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsWriteError(f"{dest} is not valid JSON ({exc.msg}); not overwriting it") from exc
        except ValueError as exc:
            raise SettingsWriteError(f"{dest} is not valid JSON ({exc}); not overwriting it") from exc
        if not isinstance(data, dict):
            raise SettingsWriteError(f"{dest} does not hold a JSON object; not overwriting it")
        return data

    @staticmethod
    def _write_folder_file(target: SettingsFile, data: dict[str, Any]) -> None:
        """Replace a folder's settings file in its exactly opened directory (bridge/safefs/): a symlink on the way
        (`.agent-bridge` a link out, or one flipped in since the read) is refused, never written through."""
        text = json.dumps(data, indent=2) + "\n"
        try:
            safefs.make_dirs_exact(target.path.parent)
            safefs.write_exact(target.path, text.encode("utf-8"), new_mode=0o600)
        except OSError as exc:
            raise SettingsWriteError(f"{target.path} is not written ({exc}); the rule is not saved") from exc
