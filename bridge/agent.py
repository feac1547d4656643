"""The process-wide agent: the model client, the sessions, and services shared by them (the process
supervisor). Front ends create sessions here; nothing here knows a transport."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bridge.config import BridgeConfig
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelClient
from bridge.session import Frontend, Session, new_session_id
from bridge.tools.base import AnyTool

log = logging.getLogger(__name__)


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"Unknown sessionId {session_id!r}: no such session in this process. Create one with session/new."
        )


def default_tools() -> list[AnyTool]:
    from bridge.tools.registry import core_tools

    return core_tools()


class Agent:
    def __init__(self, config: BridgeConfig, *, model: ModelClient | None = None) -> None:
        self.config = config
        self.model: ModelClient = model or AnthropicModel(
            api_key=config.api_key,
            base_url=config.base_url,
            max_retries=config.max_retries,
            max_retry_wait=config.max_retry_wait,
        )
        self.sessions: dict[str, Session] = {}
        self._supervisor: Any = None

    @property
    def supervisor(self) -> Any:
        if self._supervisor is None:
            from bridge.tools.processes import ProcessSupervisor

            self._supervisor = ProcessSupervisor()
        return self._supervisor

    def new_session(self, cwd: Path, frontend: Frontend, *, session_id: str | None = None) -> Session:
        sid = session_id or new_session_id()
        session = Session(
            session_id=sid,
            cwd=cwd,
            config=self.config,
            model=self.model,
            tools=default_tools(),
            frontend=frontend,
            services={"processes": self.supervisor},
        )
        self.sessions[sid] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    async def shutdown(self) -> None:
        """Cancel every turn and kill every process we started."""
        for session in self.sessions.values():
            session.cancel(force=True)
        if self._supervisor is not None:
            await self._supervisor.shutdown()
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()
