"""The permission engine: modes, rules by source, settings files, bash checking, containment, hooks."""

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.hooks import HookOutcome
from bridge.permissions.modes import MODES, Mode, PermissionModeError
from bridge.permissions.rules import Rule, RuleSet
from bridge.permissions.settings import SettingsStore, SettingsWriteError
from bridge.permissions.types import Decision, PermissionAnswer, PermissionRequest, RuleSuggestion, SettingsIssue

__all__ = [
    "MODES",
    "Decision",
    "HookOutcome",
    "Mode",
    "PermissionAnswer",
    "PermissionEngine",
    "PermissionModeError",
    "PermissionRequest",
    "Rule",
    "RuleSet",
    "RuleSuggestion",
    "SettingsIssue",
    "SettingsStore",
    "SettingsWriteError",
]
