"""Settings sources: where rules, modes and hooks come from, loaded, validated and remembered by source.

Files, highest precedence first (precedence only matters for single values such as `defaultMode`; rules
from every source are pooled, and deny beats ask beats allow whatever their source):
  `.agent-bridge/settings.local.json` > `.agent-bridge/settings.json` > user `settings.json` (config dir)
  > Claude Code's `.claude/settings.local.json` > `.claude/settings.json` > `~/.claude/settings.json`.
Claude Code's files contribute permission rules, `additionalDirectories` and
`disableBypassPermissionsMode` only; their hooks and modes stay Claude Code's.

Every file is validated field by field with pydantic: a bad field is reported (`SettingsIssue`) and
skipped, the rest of the file still applies, so one typo never drops a file's deny rules. What can't be
read may have held restrictions: a file that exists but can't be read or parsed, an invalid `deny`/`ask`
list or rule, invalid `PreToolUse` hooks or `disableBypassPermissionsMode` put the store in lockdown
(`lockdown`): every call asks until it is fixed — never fewer denies than the user wrote. A file whose
mtime/size/inode changes is reloaded on the next `refresh()` (one `stat` per file).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from bridge.permissions.hooks import DEFAULT_TIMEOUT_S, HookCommand, HookMatcher
from bridge.permissions.modes import Mode
from bridge.permissions.rules import CompiledRule, Rule, RuleOrigin, RuleSyntaxError, compile_rule
from bridge.permissions.types import Behavior, RuleSuggestion, SettingsIssue, SourceName

log = logging.getLogger(__name__)

LOCAL_SETTINGS = Path(".agent-bridge") / "settings.local.json"
PROJECT_SETTINGS = Path(".agent-bridge") / "settings.json"


class SettingsWriteError(Exception):
    """A rule could not be saved (the file is not ours to write, or it is invalid JSON we won't clobber)."""


class _HookCommandModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float | None = Field(default=None, gt=0)


class _HookMatcherModel(BaseModel):
    model_config = ConfigDict(extra="allow")
    matcher: str = ""
    hooks: list[_HookCommandModel]


_FIELDS: dict[str, TypeAdapter[Any]] = {
    "allow": TypeAdapter(list[str]),
    "ask": TypeAdapter(list[str]),
    "deny": TypeAdapter(list[str]),
    "defaultMode": TypeAdapter(Mode),
    "additionalDirectories": TypeAdapter(list[str]),
    "disableBypassPermissionsMode": TypeAdapter(Literal["disable"]),
}
_HOOKS = TypeAdapter(list[_HookMatcherModel])
_RESTRICTIONS = frozenset({"deny", "ask", "disableBypassPermissionsMode"})
LOCKDOWN_NOTE = "; until it is fixed every tool call asks (it may hold deny rules)"
_ENV = TypeAdapter(dict[str, str])


@dataclass(frozen=True)
class SettingsFile:
    source: SourceName
    path: Path
    root: Path | None  # project root for `/path` rules; None: the session's cwd
    claude: bool = False  # a Claude Code file: rules only
    writable: bool = True


@dataclass
class LoadedSettings:
    file: SettingsFile
    rules: list[tuple[Behavior, Rule]] = field(default_factory=list)
    default_mode: Mode | None = None
    additional_directories: list[Path] = field(default_factory=list)
    disable_bypass: bool = False
    hooks: dict[str, list[HookMatcher]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    issues: list[SettingsIssue] = field(default_factory=list)
    exists: bool = False


def load_settings_file(file: SettingsFile) -> LoadedSettings:
    loaded = LoadedSettings(file)
    try:
        text = file.path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return loaded
    except OSError as exc:
        loaded.issues.append(SettingsIssue(file.path, f"cannot be read: {exc}{LOCKDOWN_NOTE}", lockdown=True))
        return loaded
    except ValueError as exc:  # not UTF-8
        loaded.issues.append(SettingsIssue(file.path, f"cannot be decoded: {exc}{LOCKDOWN_NOTE}", lockdown=True))
        return loaded
    loaded.exists = True
    if not text.strip():
        return loaded
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        loaded.issues.append(SettingsIssue(file.path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}): "
                                                      f"{exc.msg}; the file is skipped{LOCKDOWN_NOTE}", lockdown=True))
        return loaded
    if not isinstance(data, dict):
        loaded.issues.append(SettingsIssue(file.path, f"must hold a JSON object; the file is skipped{LOCKDOWN_NOTE}",
                                           lockdown=True))
        return loaded
    _load_permissions(loaded, data.get("permissions"))
    if not file.claude:
        _load_hooks(loaded, data.get("hooks"))
        if "env" in data:
            env = _validated(loaded, "env", _ENV, data["env"])
            if env is not None:
                loaded.env = env
    return loaded


def _validated(loaded: LoadedSettings, where: str, adapter: TypeAdapter[Any], value: Any, *,
               restricts: bool = False) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'value'}: {err['msg']}" for err in exc.errors()[:3]
        )
        note = LOCKDOWN_NOTE if restricts else ""
        loaded.issues.append(SettingsIssue(loaded.file.path, f"{where} is invalid ({problems}); it is skipped{note}",
                                           lockdown=restricts))
        return None


def _load_permissions(loaded: LoadedSettings, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        loaded.issues.append(SettingsIssue(loaded.file.path, f"permissions must be an object; it is skipped"
                                                             f"{LOCKDOWN_NOTE}", lockdown=True))
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
                    loaded.issues.append(SettingsIssue(loaded.file.path, f"permissions.{name}: {exc}; rule skipped"
                                                                         f"{note}", lockdown=restricts))
        elif name == "defaultMode" and not loaded.file.claude:
            loaded.default_mode = checked
        elif name == "additionalDirectories":
            base = loaded.file.root or Path.home()
            loaded.additional_directories = [base / os.path.expanduser(d) for d in checked]
        elif name == "disableBypassPermissionsMode":
            loaded.disable_bypass = True


def _load_hooks(loaded: LoadedSettings, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        loaded.issues.append(SettingsIssue(loaded.file.path, f"hooks must be an object of events; skipped"
                                                             f"{LOCKDOWN_NOTE}", lockdown=True))
        return
    for event, matchers in value.items():
        checked = _validated(loaded, f"hooks.{event}", _HOOKS, matchers, restricts=event == "PreToolUse")
        if checked is None:
            continue
        loaded.hooks[str(event)] = [
            HookMatcher(m.matcher, tuple(
                HookCommand(h.command, h.timeout or DEFAULT_TIMEOUT_S, loaded.file.path) for h in m.hooks
            ))
            for m in checked
        ]


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


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

    def __init__(self, cwd: Path, *, user_config_dir: Path | None = None, claude_home: Path | None = None) -> None:
        self.cwd = Path(os.path.realpath(cwd))
        self.user_config_dir = user_config_dir or default_user_config_dir()
        self.claude_home = claude_home or default_claude_home()
        root = self.cwd
        self.files: tuple[SettingsFile, ...] = (
            SettingsFile("localSettings", root / LOCAL_SETTINGS, root),
            SettingsFile("projectSettings", root / PROJECT_SETTINGS, root),
            SettingsFile("userSettings", self.user_config_dir / "settings.json", None),
            SettingsFile("claudeLocalSettings", root / ".claude" / "settings.local.json", root, True, False),
            SettingsFile("claudeProjectSettings", root / ".claude" / "settings.json", root, True, False),
            SettingsFile("claudeUserSettings", self.claude_home / "settings.json", None, True, False),
        )
        self._lock = threading.RLock()
        self._stats: dict[Path, tuple[int, int, int] | None] = {}
        self._loaded: dict[Path, LoadedSettings] = {}
        self._compiled: list[CompiledRule] = []
        self._compile_issues: list[SettingsIssue] = []
        self._logged: set[SettingsIssue] = set()
        self.generation = 0
        self.refresh()

    @classmethod
    def for_project(cls, cwd: Path, *, user_config_dir: Path | None = None,
                    claude_home: Path | None = None) -> SettingsStore:
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
            changed = False
            for file in self.files:
                key = _stat_key(file.path)
                if not force and file.path in self._loaded and self._stats.get(file.path) == key:
                    continue
                self._stats[file.path] = key
                self._loaded[file.path] = load_settings_file(file)
                changed = True
            if changed:
                self._recompile()
                self.generation += 1
                for issue in self.issues:
                    if issue not in self._logged:
                        self._logged.add(issue)
                        log.warning("invalid settings: %s", issue)
            return changed

    def _recompile(self) -> None:
        compiled: list[CompiledRule] = []
        issues: list[SettingsIssue] = []
        for file in self.files:
            loaded = self._loaded[file.path]
            origin = RuleOrigin(file.source, file.path, file.root)
            for behavior, rule in loaded.rules:
                try:
                    compiled.append(compile_rule(rule, behavior, origin, cwd=self.cwd))
                except RuleSyntaxError as exc:
                    restricts = behavior != "allow"
                    issues.append(SettingsIssue(file.path, f"permissions.{behavior}: {exc}; rule skipped"
                                                           f"{LOCKDOWN_NOTE if restricts else ''}", lockdown=restricts))
        self._compiled, self._compile_issues = compiled, issues

    def loaded(self) -> list[LoadedSettings]:
        return [self._loaded[f.path] for f in self.files]

    @property
    def issues(self) -> list[SettingsIssue]:
        out = [issue for loaded in self.loaded() for issue in loaded.issues]
        return out + list(self._compile_issues)

    @property
    def rules(self) -> list[CompiledRule]:
        return self._compiled

    @property
    def lockdown(self) -> list[SettingsIssue]:
        """Problems that may have dropped deny or ask rules: while any is present, every call asks."""
        return [issue for issue in self.issues if issue.lockdown]

    @property
    def default_mode(self) -> Mode | None:
        return next((s.default_mode for s in self.loaded() if s.default_mode is not None), None)

    @property
    def bypass_disabled(self) -> bool:
        return any(s.disable_bypass for s in self.loaded())

    @property
    def additional_directories(self) -> list[Path]:
        return [d for s in self.loaded() for d in s.additional_directories]

    @property
    def env(self) -> dict[str, str]:
        merged: dict[str, str] = {}
        for loaded in reversed(self.loaded()):  # higher precedence overwrites
            merged.update(loaded.env)
        return merged

    def hooks(self, event: str) -> list[HookMatcher]:
        return [m for s in self.loaded() for m in s.hooks.get(event, [])]

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
            data = self._read_for_update(dest)
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
            _write_json_atomic(dest, data)
            self.refresh(force=True)
            return True

    @staticmethod
    def _read_for_update(dest: Path) -> dict[str, Any]:
        try:
            text = dest.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsWriteError(f"{dest} is not valid JSON ({exc.msg}); not overwriting it") from exc
        if not isinstance(data, dict):
            raise SettingsWriteError(f"{dest} does not hold a JSON object; not overwriting it")
        return data


def _write_json_atomic(dest: Path, data: dict[str, Any]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=dest.name, suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
