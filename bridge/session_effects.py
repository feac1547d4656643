"""What a finished tool call changes in its session: the plan, the permission mode, a skill's rules for the rest
of the turn. The loop hands each call's `Effect` here (`ToolEnvironment.apply`); the front end hears of each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import assert_never

from bridge.display import PlanEntry
from bridge.loop.events import LoopEvent, ModeChanged, Notice, PlanUpdate
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.trust import TrustItem
from bridge.skills import rule_items
from bridge.tools.base import AllowForTurn, Effect, LeavePlanMode, PlanChanged
from bridge.turns import Turns


class SessionEffects:
    def __init__(
        self,
        cwd: Path,
        engine: PermissionEngine,
        trusted: Callable[[TrustItem], bool],
        turns: Turns,
        emit: Callable[[LoopEvent], None],
    ) -> None:
        self._cwd, self._engine, self._trusted, self._turns, self._emit = cwd, engine, trusted, turns, emit
        self.plan: list[PlanEntry] = []  # the agent's todo list (cleared once every entry is completed)

    def apply(self, effect: Effect) -> None:
        match effect:
            case PlanChanged(entries):
                done = bool(entries) and all(entry.status == "completed" for entry in entries)
                self.plan = [] if done else list(entries)  # as Claude Code: the next plan starts fresh
                self._emit(PlanUpdate(list(entries)))
            case LeavePlanMode():
                self._engine.exit_plan_mode()
                self.announce_mode()
            case AllowForTurn(rules, source, project):
                self.allow_for_turn(rules, source, project)
            case _:
                assert_never(effect)

    def announce_mode(self) -> None:
        self._emit(ModeChanged(self._engine.mode))

    def allow_for_turn(self, rules: tuple[str, ...], source: Path, project: bool) -> None:
        """A skill's `allowed-tools` for the rest of the turn; a folder's own skill's only once it is trusted."""
        bindings: dict[str, str] = {}
        if project:
            # as trusted, and bound to the scripts a rule runs as they are now: a pull that changed one asks again
            items = rule_items(source, rules, self._cwd)
            inert = [item.text for item in items if not self._trusted(item)]
            if inert:
                self._emit(
                    Notice(
                        f"{items[0].file} asks to allow {', '.join(inert)} without asking; this folder's skills "
                        "are not trusted (or a script a rule runs changed since), so each call still asks.",
                        "warning",
                    )
                )
                return
            bindings = {item.text: item.binds for item in items if item.binds}
        self._turns.hold_for_turn(self._engine.allow_for_now(rules, bindings))
