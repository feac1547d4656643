"""A session for the checkpoint tests: a real Agent and Session whose model is the offline Messages API (a real
HTTP server) answering with scripted tool calls; real temp dirs, real commands."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bridge.agent import Agent
from bridge.config import BridgeConfig
from bridge.loop.events import LoopEvent, TextDelta
from bridge.offline import OfflineServer
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.session import Frontend, Session


def use(name: str, **data: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": name, "input": data}


def step(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {
        "content": list(blocks),
        "stop_reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn",
    }


def say(text: str) -> dict[str, Any]:
    return step({"type": "text", "text": text})


@dataclass
class Run:
    agent: Agent
    session: Session
    model: OfflineServer
    workspace: Path
    events: list[LoopEvent] = field(default_factory=list)
    asked: list[PermissionRequest] = field(default_factory=list)
    answers: list[PermissionAnswer] = field(default_factory=list)  # given in order; then allow_once

    async def prompt(self, text: str) -> str:
        self.events.clear()
        return await self.session.prompt([{"type": "text", "text": text}])

    def said(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))


@contextlib.asynccontextmanager
async def checkpoint_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, responses: list[dict[str, Any]] | dict[str, Any]
) -> AsyncIterator[Run]:
    """`responses`: the model's scripted answers, or a whole scenario (with sub-agents' `agents`)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "config"))
    # main's sandbox makes empty placeholder files (CLAUDE.md, .mcp.json...) to mount on while a command runs: a
    # checkpoint sees them come and go. The sandbox work in flight drops placeholders; until then these tests run
    # commands unsandboxed, so a step's changes are exactly the command's.
    monkeypatch.setenv("AGENT_BRIDGE_SANDBOX", "0")
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    model = OfflineServer(responses if isinstance(responses, dict) else {"responses": responses})
    model.start()
    agent = Agent(
        BridgeConfig(
            data_dir=tmp_path / "data",
            base_url=model.base_url,
            api_key="k",
            max_retries=0,
            permission_mode="acceptEdits",
        )
    )
    run: Run | None = None

    async def answer(request: PermissionRequest) -> PermissionAnswer:
        assert run is not None
        run.asked.append(request)
        return run.answers.pop(0) if run.answers else PermissionAnswer("allow_once")

    events: list[LoopEvent] = []
    session = agent.new_session(workspace, Frontend(emit=events.append, prompter=answer))
    run = Run(agent, session, model, workspace, events)
    try:
        yield run
    finally:
        await agent.shutdown()
        model.stop()
