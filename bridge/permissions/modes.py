"""Permission modes, and the one piece of state they carry: the mode to go back to after plan mode."""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"]
MODES: tuple[Mode, ...] = get_args(Mode)

MODE_NAMES: dict[Mode, str] = {
    "default": "Default",
    "acceptEdits": "Accept edits",
    "plan": "Plan",
    "bypassPermissions": "Bypass permissions",
    "dontAsk": "Don't ask",
}

MODE_DESCRIPTIONS: dict[Mode, str] = {
    "default": "Ask before anything that is not read-only or allowed by a rule",
    "acceptEdits": "File edits inside the workspace run without asking",
    "plan": "Read-only tools only; the agent presents a plan and asks to leave plan mode",
    "bypassPermissions": "Run everything except denied tools and protected paths without asking",
    "dontAsk": "Deny whatever would ask",
}


# How much runs without the user's say, for comparing modes: plan (read-only) and dontAsk (whatever would ask is
# denied) are both narrower than default, and neither is narrower than the other.
_WIDTH: dict[Mode, int] = {"plan": 0, "dontAsk": 0, "default": 1, "acceptEdits": 2, "bypassPermissions": 3}


def narrower(mode: Mode, than: Mode) -> bool:
    """Whether `mode` lets strictly less run without the user's say than `than`."""
    return _WIDTH[mode] < _WIDTH[than]


class PermissionModeError(ValueError):
    """An unknown mode, or one that settings have disabled (bypassPermissions)."""


def parse_mode(value: str) -> Mode:
    for mode in MODES:
        if mode == value:
            return mode
    raise PermissionModeError(f"unknown permission mode {value!r}; expected one of {', '.join(MODES)}")


class ModeState:
    """The current mode and the seed's `prePlanMode`: entering plan remembers where to return."""

    def __init__(self, mode: Mode = "default") -> None:
        self._mode: Mode = mode
        self._pre_plan: Mode | None = None

    @property
    def mode(self) -> Mode:
        return self._mode

    @property
    def pre_plan(self) -> Mode | None:
        return self._pre_plan

    def set(self, mode: Mode) -> None:
        if mode == "plan" and self._mode != "plan":
            self._pre_plan = self._mode
        elif mode != "plan":
            self._pre_plan = None
        self._mode = mode

    def exit_plan(self, to: Mode | None = None) -> Mode:
        """Leave plan mode for `to`, or for the mode before plan (default when there was none)."""
        target: Mode = to if to is not None else (self._pre_plan or "default")
        if target == "plan":
            target = "default"
        self._pre_plan = None
        self._mode = target
        return target
