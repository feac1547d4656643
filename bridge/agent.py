"""The process-wide agent: the model client, the sessions, and services shared by them (the process
supervisor). Front ends create sessions here; nothing here knows a transport."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.config import BridgeConfig
from bridge.messages import Message
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelClient
from bridge.permissions.settings import SettingsStore
from bridge.session import Frontend, Session, new_session_id
from bridge.tools.base import AnyTool, Services
from bridge.transcript import StoredSession, Transcript, list_sessions, transcript_path
from bridge.transcript import load as load_transcript

if TYPE_CHECKING:
    from bridge.tools.background import BackgroundShells
    from bridge.tools.processes import ProcessSupervisor

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
            stall_timeout=config.stall_timeout,
        )
        self.sessions: dict[str, Session] = {}
        self._supervisor: ProcessSupervisor | None = None
        self._shells: list[BackgroundShells] = []  # every session's, for shutdown
        self._mcp: list[Any] = []  # every MCP server connection, for shutdown

    @property
    def supervisor(self) -> ProcessSupervisor:
        if self._supervisor is None:
            from bridge.tools.processes import ProcessSupervisor

            self._supervisor = ProcessSupervisor()
        return self._supervisor

    def new_session(self, cwd: Path, frontend: Frontend, *, session_id: str | None = None) -> Session:
        sid = session_id or new_session_id()
        transcript = Transcript.create(self.config.data_dir, sid, cwd)
        return self._open(sid, cwd, frontend, transcript, [])

    def load_session(self, session_id: str, frontend: Frontend) -> tuple[Session, list[str]]:
        """A stored session, its history repaired; returns it with the problems found in its transcript."""
        if session_id in self.sessions:
            session = self.sessions[session_id]
            return session, []
        try:
            path = transcript_path(self.config.data_dir, session_id)
        except ValueError:
            raise UnknownSession(session_id) from None
        if not path.is_file():
            raise UnknownSession(session_id)
        loaded = load_transcript(path)
        for problem in loaded.problems:
            log.warning("%s", problem)
        session = self._open(session_id, loaded.cwd, frontend, Transcript(path), loaded.messages)
        return session, loaded.problems

    def _open(
        self, sid: str, cwd: Path, frontend: Frontend, transcript: Transcript, history: list[Message]
    ) -> Session:
        settings = SettingsStore.for_project(cwd)
        services = Services(  # the one place a session's services are built
            processes=self.supervisor,
            background=self._background(),
            settings_env=_env_of(settings),
        )
        session = Session(
            session_id=sid,
            cwd=cwd,
            config=self.config,
            model=self.model,
            tools=default_tools(),
            frontend=frontend,
            services=services,
            settings=settings,
            transcript=transcript,
            history=history,
        )
        self.sessions[sid] = session
        return session

    def _background(self) -> BackgroundShells:
        """A new set of background shells: a session sees (and kills) only the shells it started."""
        from bridge.tools.background import BackgroundShells

        shells = BackgroundShells(self.supervisor)
        self._shells.append(shells)
        return shells

    async def connect_mcp(self, session: Session, servers: list[dict[str, Any]]) -> list[str]:
        """Starts the session's MCP servers (concurrently) and adds their tools; the problems, for the user.

        A server that cannot be used is named and skipped: the session works without it."""
        if not servers:
            return []
        from bridge.tools.mcp import McpConnection, McpError, parse_servers, tools_of

        specs, problems = parse_servers(servers)
        connections = [McpConnection(spec, session.cwd) for spec in specs]
        outcomes = await asyncio.gather(*(c.start() for c in connections), return_exceptions=True)
        for connection, outcome in zip(connections, outcomes, strict=True):
            if isinstance(outcome, McpError):
                problems.append(str(outcome))
            elif isinstance(outcome, BaseException):
                problems.append(f"MCP server {connection.spec.name!r} failed to start: {outcome!r}")
            else:
                self._mcp.append(connection)
                added = session.add_tools(list(tools_of(connection, outcome, set(session.tools))), deferrable=True)
                log.info("MCP server %s: %d tools (%s)", connection.spec.name, len(added), ", ".join(added))
        return problems

    def stored_sessions(self, cwd: Path | None = None) -> list[StoredSession]:
        return list_sessions(self.config.data_dir, cwd)

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    async def shutdown(self) -> None:
        """Cancel every turn and kill every process we started."""
        for session in self.sessions.values():
            session.cancel(force=True)
        await asyncio.gather(*(session.close() for session in self.sessions.values()), return_exceptions=True)
        for session in self.sessions.values():
            if session.transcript is not None:
                session.transcript.close()
        for shells in self._shells:
            await shells.shutdown()
        await asyncio.gather(*(connection.close() for connection in self._mcp), return_exceptions=True)
        if self._supervisor is not None:
            await self._supervisor.shutdown()
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


def _env_of(settings: SettingsStore) -> Callable[[], Mapping[str, str]]:
    """The settings files' `env` (ours only: Claude Code's files give rules), reloaded when they change."""

    def env() -> Mapping[str, str]:
        settings.refresh()
        return settings.env

    return env
