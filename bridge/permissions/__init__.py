"""The permission engine: modes, rules by source, settings files, bash checking, containment, hooks.

Names are loaded on first use: importing `bridge.permissions.types` (as the wire layer does) must not
pull in the shell parser — the editor's `initialize` waits for every import on its path."""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "PermissionEngine": "engine",
    "HookOutcome": "hooks",
    "MODES": "modes",
    "Mode": "modes",
    "PermissionModeError": "modes",
    "Rule": "rules",
    "RuleSet": "rules",
    "SettingsStore": "settings",
    "SettingsWriteError": "settings",
    "Decision": "types",
    "PermissionAnswer": "types",
    "PermissionRequest": "types",
    "RuleSuggestion": "types",
    "SettingsIssue": "types",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    return getattr(importlib.import_module(f"bridge.permissions.{_WHERE[name]}"), name)
