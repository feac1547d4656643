"""A tool call's effects are applied by the session: the plan it keeps and shows, leaving plan mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.agent import Agent
from bridge.config import BridgeConfig
from bridge.display import PlanEntry
from bridge.loop.events import LoopEvent, ModeChanged, PlanUpdate
from bridge.loop.permission import deny_all
from bridge.session import Frontend
from bridge.tools.base import LeavePlanMode, PlanChanged


async def test_plan_and_mode_effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "config"))
    (tmp_path / "ws").mkdir()
    events: list[LoopEvent] = []
    agent = Agent(BridgeConfig(data_dir=tmp_path / "data", api_key="k"))
    try:
        session = agent.new_session(tmp_path / "ws", Frontend(emit=events.append, prompter=deny_all))
        working = (PlanEntry("Read", "completed"), PlanEntry("Fix", "in_progress"))
        session.effects.apply(PlanChanged(working))
        assert session.plan == list(working) and events[-1] == PlanUpdate(list(working))
        done = (PlanEntry("Read", "completed"), PlanEntry("Fix", "completed"))
        session.effects.apply(PlanChanged(done))
        assert session.plan == [], "a finished plan is cleared, so the next one starts fresh"
        assert events[-1] == PlanUpdate(list(done)), "but it is still shown"
        session.set_mode("acceptEdits")
        session.set_mode("plan")
        session.effects.apply(LeavePlanMode())
        # mypy keeps `events[-1]` narrowed to PlanUpdate by the assert above, though the calls since appended to it
        assert session.mode == "acceptEdits" and events[-1] == ModeChanged("acceptEdits")  # type: ignore[comparison-overlap]
    finally:
        await agent.shutdown()
