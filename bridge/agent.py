"""The process-wide agent: the model client, the sessions, and services shared by them (the process
supervisor). Front ends create sessions here; nothing here knows a transport."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.agents.runner import sidechain_messages
from bridge.config import BridgeConfig
from bridge.environment import register_secret
from bridge.loop.events import LoopEvent
from bridge.messages import Message
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelClient
from bridge.permissions.settings import SettingsStore
from bridge.replay import replay_turns, workspace_readable
from bridge.session import Frontend, Session, new_session_id
from bridge.session_setup import SessionSetup
from bridge.tools.base import AnyTool, Services
from bridge.transcript import (
    HeldElsewhere,
    StoredSession,
    Transcript,
    list_sessions,
    private_dir,
    private_opener,
    transcript_path,
    turns_of,
)
from bridge.transcript import load as load_transcript

if TYPE_CHECKING:
    from bridge.execution.background import BackgroundShells
    from bridge.execution.supervisor import ProcessSupervisor
    from bridge.mcp.manager import McpManager

log = logging.getLogger(__name__)

SHUTDOWN_UNWIND = 5.0  # seconds a graceful shutdown lets cancelled turns unwind before forcing them


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"Unknown sessionId {session_id!r}: no such session in this process. Create one with session/new."
        )


class SessionElsewhere(UnknownSession):
    """A stored session another agent-bridge process has open: one process writes a session at a time."""

    def __init__(self, session_id: str) -> None:
        LookupError.__init__(
            self,
            f"Session {session_id!r} is open in another agent-bridge process (an editor window or a terminal): "
            "close it there, or fork it, to go on with it here.",
        )


def default_tools() -> list[AnyTool]:
    from bridge.tools.registry import core_tools

    return core_tools()


@dataclass
class Reopened:
    """A stored session opened again (`session/load`): the session, what the user should hear about it, and its
    history as the events a live session emitted (bridge/replay.py)."""

    session: Session
    notices: list[str]
    replay: list[LoopEvent]


class Agent:
    def __init__(self, config: BridgeConfig, *, model: ModelClient | None = None) -> None:
        self.config = config
        register_secret(config.api_key)  # however the key came, it is never handed to a command
        self.model: ModelClient = model or AnthropicModel(
            api_key=config.api_key,
            base_url=config.base_url,
            max_retries=config.max_retries,
            max_retry_wait=config.max_retry_wait,
            stall_timeout=config.stall_timeout,
        )
        self.sessions: dict[str, Session] = {}
        from bridge.execution.registry import reap_leftovers

        reap_leftovers(config.data_dir)  # what a killed bridge on this data dir left running
        self._supervisor: ProcessSupervisor | None = None
        self._shells: list[BackgroundShells] = []  # every session's, for shutdown
        self._mcp: McpManager | None = None  # made when a session first needs it

    def start_warming(self) -> None:
        """Start, on a worker thread, what the first command would do once (the process registry's watchdog), so
        its start doesn't wait for it: a front end calls this when a session is coming. The supervisor is made
        here, on the caller's thread."""
        supervisor = self.supervisor
        threading.Thread(target=supervisor.warm_up, name="supervisor-warm-up", daemon=True).start()

    @property
    def supervisor(self) -> ProcessSupervisor:
        if self._supervisor is None:
            from bridge.execution.supervisor import ProcessSupervisor

            self._supervisor = ProcessSupervisor(data_dir=self.config.data_dir)
        return self._supervisor

    def new_session(
        self, cwd: Path, frontend: Frontend, *, session_id: str | None = None, directories: Sequence[Path] = ()
    ) -> Session:
        """`directories`: more workspace roots for this session alone (ACP's `additionalDirectories`)."""
        sid = session_id or new_session_id()
        transcript = Transcript.create(self.config.data_dir, sid, cwd)
        with contextlib.suppress(HeldElsewhere, OSError):  # new: no one else can have it
            transcript.claim()
        return self._open(sid, cwd, frontend, transcript, [], directories)

    def load_session(
        self, session_id: str, frontend: Frontend, directories: Sequence[Path] = ()
    ) -> tuple[Session, list[str]]:
        """A stored session, its history repaired; returns it with the problems found in its transcript. A session
        already open here keeps the directories it was opened with."""
        if session_id in self.sessions:
            session = self.sessions[session_id]
            return session, []
        try:
            path = transcript_path(self.config.data_dir, session_id)
            stored = path.is_file()
        except (ValueError, OSError):  # not an id of ours (or one too long to be a file name)
            raise UnknownSession(session_id) from None
        if not stored:
            raise UnknownSession(session_id)
        transcript = Transcript(path)
        try:
            transcript.claim()  # before reading it: what is read is what no one else appends to meanwhile
        except HeldElsewhere:
            raise SessionElsewhere(session_id) from None
        except OSError:
            raise UnknownSession(session_id) from None
        loaded = load_transcript(path)
        for problem in loaded.problems:
            log.warning("%s", problem)
        session = self._open(session_id, loaded.cwd, frontend, transcript, loaded.messages, directories)
        session.conversation.cost_usd, session.conversation.usage_total = loaded.cost_usd, loaded.usage_total
        return session, loaded.problems

    def reopen(
        self,
        session_id: str,
        frontend: Frontend,
        servers: list[dict[str, Any]],
        host: Callable[[Session], Any],
        *,
        directories: Sequence[Path] = (),
        replay: bool = True,
    ) -> Reopened:
        """`session/load` (and `session/resume`, without `replay`): the stored session (already running here, or
        opened from its transcript with its MCP servers — `host(session)` shows their notices and questions), and
        its replay. Raises UnknownSession."""
        live = session_id in self.sessions  # already running here: its MCP servers are too
        session, problems = self.load_session(session_id, frontend, directories)
        notices = [f"Transcript problem (skipped): {problem}" for problem in problems]
        if not live:
            self.connect_mcp(session, servers, host(session))
            session.toolset.refresh_commands()
            notices += session.toolset.missing_tools(session.conversation.messages)
            notices += [f"Invalid agent file (skipped): {problem}" for problem in session.setup.agent_types.problems]
        if not replay:
            return Reopened(session, notices, [])
        turns = turns_of(session.conversation.messages)
        if session.transcript is not None:
            try:
                turns = load_transcript(session.transcript.path).turns
            except (OSError, ValueError) as error:
                log.warning("cannot read %s for the replay: %s", session.transcript.path, error)
        events = replay_turns(
            turns,
            session.toolset.get,
            functools.partial(sidechain_messages, session.sidechains),
            context_size=self.config.context_window,
            last_running=live and session.busy,
            readable=workspace_readable(session.engine.workspace.roots, session.engine.read_guard()),
        )
        return Reopened(session, notices, events)

    async def fork_session(
        self, source: Session, frontend: Callable[[str], Frontend], *, before_turn: str | None, cwd: Path | None = None
    ) -> Session:
        """A new session with `source`'s conversation — all of it, or as it was before the prompt of `before_turn`
        — the original untouched. Its transcript is the source's lines (so it replays the same) under a header of
        its own, then a rewind line when it forks from an earlier prompt; its sub-agents' transcripts and its
        checkpoints (the same workspace's) come along. `frontend(id)`: how the new session is shown."""
        if source.transcript is None:
            raise ValueError("This session keeps no transcript, so it can't be forked.")
        sid = new_session_id()
        target = transcript_path(self.config.data_dir, sid)
        where = cwd or source.cwd
        await asyncio.to_thread(
            _copy_transcript, source.transcript.path, target, sid, where, {"sessionId": source.id, "turn": before_turn}
        )
        if before_turn is not None:
            forked = Transcript(target)
            forked.rewound(before_turn, conversation=True, code=False)
            forked.close()
        agents = source.data_dir / "agents"
        if agents.is_dir():
            await asyncio.to_thread(shutil.copytree, agents, self.config.data_dir / "sessions" / sid / "agents")
        if where == source.cwd:
            await source.checkpoints.fork_to(self.config.data_dir, sid)
        session, problems = self.load_session(sid, frontend(sid))
        for problem in problems:
            log.warning("forked %s: %s", sid, problem)
        return session

    def _open(
        self,
        sid: str,
        cwd: Path,
        frontend: Frontend,
        transcript: Transcript,
        history: list[Message],
        directories: Sequence[Path] = (),
    ) -> Session:
        settings = SettingsStore.for_project(cwd)
        if self.config.folder_trust is not None:
            settings.trust.set_policy(self.config.folder_trust)
        config = (
            self.config.model_copy(
                update={"additional_directories": [*self.config.additional_directories, *(str(d) for d in directories)]}
            )
            if directories
            else self.config
        )
        setup = SessionSetup.compose(cwd, config, settings, interactive=frontend.interactive)
        setup.sandbox.registry = self.supervisor.registry  # (what a folder's hook's sandbox makes, noted too)
        services = Services(  # the one place a session's services are built
            processes=self.supervisor,
            background=self._background(),
            settings_env=_env_of(settings),
            pass_env=lambda: settings.pass_env,
        )
        session = Session(
            session_id=sid,
            cwd=cwd,
            config=self.config,
            model=self.model,
            tools=default_tools(),
            frontend=frontend,
            services=services,
            setup=setup,
            transcript=transcript,
            history=history,
        )
        self.sessions[sid] = session
        return session

    def _background(self) -> BackgroundShells:
        """A new set of background shells: a session sees (and kills) only the shells it started."""
        from bridge.execution.background import BackgroundShells

        shells = BackgroundShells(self.supervisor)
        self._shells.append(shells)
        return shells

    def connect_mcp(self, session: Session, servers: list[dict[str, Any]], host: Any) -> None:
        """Gives the session its MCP servers (the editor's, `.mcp.json`'s, the settings'): they start in the
        background, shared with other sessions of the same cwd; `host` (bridge/mcp/host.py) shows notices
        and asks questions. Problems are told through `host`, never raised: the session works without them."""
        if self._mcp is None:
            from bridge.mcp.manager import McpManager
            from bridge.mcp.settings import McpSettings

            settings, problems = McpSettings.load(self.config.mcp)
            for problem in problems:
                host.notice(problem, "warning")
            self._mcp = McpManager(
                self.config.data_dir,
                settings,
                context_window=self.config.context_window,
                track=self.supervisor.track_external,
            )
        roots = (session.cwd, *session.engine.settings.additional_directories)
        from bridge.plugins import plugin_servers

        plugins = [(p.name, plugin_servers(p)) for p in session.setup.plugins.plugins]
        session.toolset.mcp = self._mcp.open(
            session.cwd,
            servers,
            host,
            roots=tuple(dict.fromkeys(roots)),
            plugins=[(name, found) for name, found in plugins if found],
        )

    async def close_session(self, session_id: str) -> None:
        """`session/close`: stop its turn and its background agents, close its transcript, let go of its MCP
        servers (after the agents: they share them)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            raise UnknownSession(session_id)
        session.cancel(force=True)
        await session.wait_idle()
        await session.close()
        if session.transcript is not None:
            session.transcript.close()
        if session.toolset.mcp is not None:
            await session.toolset.mcp.release()
        await session.checkpoints.close()

    async def delete_session(self, session_id: str) -> None:
        """`session/delete`: the session is closed if open here, and its transcript, its sub-agents' and what its
        tools stored are removed (it leaves `session/list`). Raises UnknownSession when nothing is stored."""
        if session_id in self.sessions:
            await self.close_session(session_id)
        try:
            path = transcript_path(self.config.data_dir, session_id)
            stored = path.is_file()
        except (ValueError, OSError):
            raise UnknownSession(session_id) from None
        if not stored:
            raise UnknownSession(session_id)
        held = Transcript(path)
        try:
            held.claim()  # not from under another process that has it open
        except HeldElsewhere:
            raise SessionElsewhere(session_id) from None
        try:
            path.unlink()
        finally:
            held.close()
        shutil.rmtree(self.config.data_dir / "sessions" / session_id, ignore_errors=True)

    def stored_sessions(self, cwd: Path | None = None) -> list[StoredSession]:
        return list_sessions(self.config.data_dir, cwd)

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    def processes_running(self) -> bool:
        return self._supervisor is not None and bool(self._supervisor.live_pids())

    def kill_processes_now(self) -> None:
        """SIGKILL every command's tree at once (a graceful shutdown's wait then ends)."""
        if self._supervisor is not None:
            self._supervisor.kill_all_now()

    def give_up_checkpoints(self) -> bool:
        """Stop waiting for the snapshots still being taken (a second Ctrl-C while closing: a slow one after the
        last call would otherwise be waited for whole); whether one was."""
        return any([session.checkpoints.give_up() for session in self.sessions.values()])

    async def shutdown(self, *, grace: bool = False) -> None:
        """Cancel every turn and kill every process we started; transcripts are synced to disk. `grace`: the
        commands still running get their SIGINT -> SIGTERM -> SIGKILL escalation first (bounded: about a second),
        as on Ctrl-C; else they are killed at once."""
        for session in self.sessions.values():
            session.cancel(force=not grace)
        if grace:
            idle = asyncio.gather(*(session.wait_idle() for session in self.sessions.values()))
            try:
                await asyncio.wait_for(idle, SHUTDOWN_UNWIND)
            except TimeoutError:
                log.warning("turns still unwinding after %s s at shutdown: forced", SHUTDOWN_UNWIND)
                for session in self.sessions.values():
                    session.cancel(force=True)
        await asyncio.gather(*(session.close() for session in self.sessions.values()), return_exceptions=True)
        for session in self.sessions.values():
            if session.transcript is not None:
                session.transcript.close()
        for shells in self._shells:
            await shells.shutdown(grace=grace)
        if self._mcp is not None:
            await self._mcp.close()
        if self._supervisor is not None:
            await self._supervisor.shutdown(grace=grace)
        # The last checkpoints once nothing runs any more (waiting for them must not hold up a kill).
        await asyncio.gather(*(s.checkpoints.close() for s in self.sessions.values()), return_exceptions=True)
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


def _copy_transcript(source: Path, target: Path, session_id: str, cwd: Path, forked_from: dict[str, Any]) -> None:
    """A fork's transcript: the source's complete lines under a header of its own (a line a writer is still
    writing, without its newline, is left out)."""
    with open(source, encoding="utf-8", errors="replace") as lines:
        header = json.loads(lines.readline())
        rest = [line for line in lines if line.endswith("\n")]
    header.update(sessionId=session_id, cwd=str(cwd), createdAt=time.time(), forkedFrom=forked_from)
    private_dir(target.parent)
    with open(target, "x", encoding="utf-8", opener=private_opener) as out:
        out.write(json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n")
        out.writelines(rest)


def _env_of(settings: SettingsStore) -> Callable[[], Mapping[str, str]]:
    """The settings files' `env` in effect (ours only: Claude Code's files give rules; a folder's own only once
    trusted), reloaded when they change."""

    def env() -> Mapping[str, str]:
        settings.refresh()
        return settings.env

    return env
