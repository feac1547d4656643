"""The editor server: thin pygls handlers over the agent (PROTOCOL.md). Each handler takes params,
calls the domain, returns a wire shape."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

from bridge import __version__
from bridge.server import wire
from bridge.server.jsonrpc import (
    AcpProtocol,
    BridgeProtocol,
    LineWriter,
    dict_converter,
    run_until_eof,
    serve_lines,
)
from bridge.server.updates import UpdateStream
from bridge.tools.base import DocumentSource

if TYPE_CHECKING:  # the domain is imported on first use, so `initialize` is answered at once
    from bridge.agent import Agent
    from bridge.mcp.host import McpHost, Question, Reply
    from bridge.permissions.types import PermissionAnswer, PermissionRequest
    from bridge.session import Frontend, Session

MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")

log = logging.getLogger(__name__)

MODE_INFO = {
    "default": ("Default", "Ask before anything that is not read-only"),
    "acceptEdits": ("Accept edits", "Edits inside the workspace run without asking"),
    "plan": ("Plan", "Read-only: explore and propose a plan"),
    "bypassPermissions": ("Bypass permissions", "Run everything without asking"),
    "dontAsk": ("Don't ask", "Deny whatever would ask"),
}


class BridgeServer(LanguageServer):
    def __init__(self, overrides: dict[str, Any] | None = None, *, acp: bool = False) -> None:
        super().__init__(
            "agent-bridge",
            __version__,
            protocol_cls=AcpProtocol if acp else BridgeProtocol,
            converter_factory=dict_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.overrides = overrides or {}
        self.options: dict[str, Any] = {}
        self._agent: Agent | None = None
        self.streams: dict[str, UpdateStream] = {}

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            from bridge.agent import Agent
            from bridge.config import BridgeConfig

            options = self.options.get("settings", self.options)
            config, problems = BridgeConfig.load({**(options if isinstance(options, dict) else {}), **self.overrides})
            for problem in problems:
                self.show(problem, types.MessageType.Warning)
            self._agent = Agent(config)
        return self._agent

    def configure(self, options: dict[str, Any]) -> None:
        self.options = options

    def show(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        log.warning("%s", message)
        self.window_show_message(types.ShowMessageParams(type=level, message=message))

    def session(self, params: Any, model: type[wire.WireModel] = wire.SessionParams) -> tuple[Any, Session]:
        from bridge.agent import UnknownSession

        parsed = _parse(model, params)
        try:
            return parsed, self.agent.get(parsed.session_id)
        except UnknownSession as error:
            raise JsonRpcInvalidParams(str(error)) from None

    def frontend(self, session_id: str) -> Frontend:
        from bridge.loop.events import LoopEvent, Notice, TextDelta, ThinkingDelta
        from bridge.session import Frontend

        stream = UpdateStream(lambda update: self.send_update(session_id, update))
        self.streams[session_id] = stream

        def emit(event: LoopEvent) -> None:
            if isinstance(event, TextDelta):
                stream.chunk("agent_message_chunk", event.text)
            elif isinstance(event, ThinkingDelta):
                stream.chunk("agent_thought_chunk", event.text)
            elif isinstance(event, Notice):
                if event.level == "info":
                    self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=event.message))
                else:
                    level = types.MessageType.Error if event.level == "error" else types.MessageType.Warning
                    self.show(event.message, level)
            else:
                update = wire.update_for(event)
                if update is not None:
                    stream.update(update)

        async def prompter(request: PermissionRequest) -> PermissionAnswer:
            stream.flush()
            return await self.ask_permission(session_id, request)

        return Frontend(emit=emit, prompter=prompter, documents=EditorDocuments(self))

    def mcp_host(self, session: Session) -> McpHost:
        """What a session's MCP servers may do with the editor: notices, questions, a new command list."""
        from bridge.loop.events import Notice
        from bridge.mcp.host import McpHost

        def changed() -> None:
            session.refresh_commands()
            self.advertise_commands(session)

        return McpHost(notice=lambda text, level: session.frontend.emit(Notice(text, level)),
                       ask=lambda question: self.ask_question(session.id, question), changed=changed)

    async def ask_question(self, session_id: str, question: Question) -> Reply:
        stream = self.streams.get(session_id)
        if stream is not None:
            stream.flush()
        msg_id = f"mcpq_{uuid.uuid4().hex[:12]}"
        params = wire.question_params(session_id, question)
        try:
            result = await self.protocol.send_request_async("session/request_permission", params, msg_id=msg_id)
        except asyncio.CancelledError:  # the server withdrew its question (or the bridge is stopping)
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol._result_types.pop(msg_id, None)
            self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        return wire.question_reply(result, question)

    def advertise_commands(self, session: Session) -> None:
        commands = [command.wire() for command in session.commands.values()]
        self.send_update(session.id, {"sessionUpdate": "available_commands_update", "availableCommands": commands})

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.protocol.notify("session/update", {"sessionId": session_id, "update": update})

    async def ask_permission(self, session_id: str, request: PermissionRequest) -> PermissionAnswer:
        from bridge.permissions.types import PermissionAnswer

        msg_id = f"perm_{uuid.uuid4().hex[:12]}"
        params = wire.permission_params(session_id, request)
        try:
            result = await self.protocol.send_request_async("session/request_permission", params, msg_id=msg_id)
        except asyncio.CancelledError:  # the turn was cancelled: withdraw the question
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol._result_types.pop(msg_id, None)
            self.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise
        except Exception as error:  # the editor answered with an error: the tool is denied
            log.warning("permission request failed: %s", error)
            return PermissionAnswer("cancelled")
        return wire.permission_answer(result, request)


class EditorDocuments(DocumentSource):
    """The editor's unsaved text of open documents (LSP text document sync)."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server

    def get_text(self, path: Path) -> str | None:
        try:
            documents = self._server.workspace.text_documents
        except RuntimeError:
            return None
        document = documents.get(path.as_uri())
        return document.source if document is not None else None


def _warm_up() -> None:
    """After `initialize`: load the domain and the SDK (seconds, cold) before the first prompt needs them."""
    try:
        import anthropic  # noqa: F401

        import bridge.agent
        import bridge.tools.registry  # noqa: F401
    except Exception:  # reported when a prompt needs it
        log.exception("warm-up import failed")


def _parse(model: type[wire.WireModel], params: Any) -> Any:
    try:
        return wire.parse(model, params)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None


def modes_state(current: str) -> dict[str, Any]:
    return {
        "currentModeId": current,
        "availableModes": [
            {"id": mode, "name": MODE_INFO[mode][0], "description": MODE_INFO[mode][1]} for mode in MODES
        ],
    }


def build_server(overrides: dict[str, Any] | None = None, *, acp: bool = False) -> BridgeServer:
    server = BridgeServer(overrides, acp=acp)

    @server.feature("acp/initialize")
    def acp_initialize(ls: BridgeServer, params: Any) -> None:
        ls.configure({})
        threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()

    @server.feature(types.INITIALIZE)
    def initialize(ls: BridgeServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.configure(options if isinstance(options, dict) else {})
        threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()

    @server.feature("session/new")
    async def session_new(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = _parse(wire.NewSessionParams, params)
        cwd = Path(parsed.cwd)
        if not cwd.is_absolute() or not cwd.is_dir():  # noqa: ASYNC240 - one stat, as when the handler was sync
            raise JsonRpcInvalidParams(
                f"Invalid params: cwd: must be an absolute path to an existing directory, got {parsed.cwd!r}"
            )
        session_id = f"sess_{uuid.uuid4().hex[:20]}"
        session = ls.agent.new_session(cwd, ls.frontend(session_id), session_id=session_id)
        for problem in session.settings_problems():
            ls.show(f"Invalid settings (skipped): {problem}", types.MessageType.Warning)
        ls.agent.connect_mcp(session, parsed.mcp_servers, ls.mcp_host(session))  # they start in the background
        session.refresh_commands()
        asyncio.get_running_loop().call_soon(ls.advertise_commands, session)
        return {"sessionId": session.id, "modes": modes_state(session.mode)}

    @server.feature("session/load")
    async def session_load(ls: BridgeServer, params: Any) -> None:
        from bridge.agent import UnknownSession

        parsed = _parse(wire.LoadSessionParams, params)
        live = parsed.session_id in ls.agent.sessions  # already running here: its MCP servers are too
        try:
            session, problems = ls.agent.load_session(parsed.session_id, ls.frontend(parsed.session_id))
        except UnknownSession as error:
            raise JsonRpcInvalidParams(str(error)) from None
        for problem in problems:
            ls.show(f"Transcript problem (skipped): {problem}", types.MessageType.Warning)
        if not live:
            ls.agent.connect_mcp(session, parsed.mcp_servers, ls.mcp_host(session))
            session.refresh_commands()
        for update in wire.replay_updates(session.conversation.messages, session.describe_tool_use):
            ls.send_update(session.id, update)
        ls.advertise_commands(session)
        session.announce_mode()  # `session/load` answers null: the mode is told as an update
        return None

    @server.feature("session/list")
    def session_list(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = _parse(wire.ListSessionsParams, params)
        return {"sessions": ls.agent.stored_sessions(Path(parsed.cwd) if parsed.cwd else None)}

    @server.feature("session/prompt")
    async def session_prompt(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.model.types import ModelError

        parsed, session = ls.session(params, wire.PromptParams)
        try:
            blocks = wire.prompt_blocks(parsed.prompt)
        except ValueError as error:
            raise JsonRpcInvalidParams(str(error)) from None
        stream = ls.streams.get(session.id)
        try:
            stop = await session.prompt(blocks)
        except asyncio.CancelledError:  # `$/cancelRequest`: the turn was cancelled and its history repaired
            stop = "cancelled"
        except ModelError as error:
            raise JsonRpcInternalError(str(error), data={"kind": error.kind, "status": error.status}) from None
        finally:
            if stream is not None:
                stream.flush()
        return {"stopReason": stop}

    @server.feature("session/cancel")
    def session_cancel(ls: BridgeServer, params: Any) -> None:
        try:
            parsed, session = ls.session(params)
        except JsonRpcInvalidParams as error:
            log.warning("session/cancel ignored: %s", error)
            return
        session.cancel(force=bool((parsed.meta or {}).get("force")))

    @server.feature("session/set_mode")
    def session_set_mode(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.permissions.modes import PermissionModeError

        parsed, session = ls.session(params, wire.SetModeParams)
        if parsed.mode_id not in MODES:
            raise JsonRpcInvalidParams(
                f"Invalid params: modeId: unknown mode {parsed.mode_id!r}; one of {', '.join(MODES)}"
            )
        try:
            session.set_mode(parsed.mode_id, announce=False)
        except PermissionModeError as error:
            raise JsonRpcInvalidParams(f"Invalid params: modeId: {error}") from None
        asyncio.get_running_loop().call_soon(session.announce_mode)  # answered, then the update
        return {}

    @server.feature("session/close")
    async def session_close(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.agent import UnknownSession

        parsed = _parse(wire.SessionParams, params)
        try:
            await ls.agent.close_session(parsed.session_id)
        except UnknownSession as error:
            raise JsonRpcInvalidParams(str(error)) from None
        ls.streams.pop(parsed.session_id, None)
        return {}

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: BridgeServer, params: Any) -> None:
        if ls._agent is not None:
            await ls._agent.shutdown()

    return server


def serve(overrides: dict[str, Any] | None = None, *, acp: bool = False) -> None:
    """Serve on stdio until the client goes away; then kill everything we started. `acp`: ACP's own
    framing (one message per line) instead of LSP's Content-Length headers."""
    server = build_server(overrides, acp=acp)
    reader = StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
    if acp:
        server.protocol.set_writer(LineWriter(sys.stdout.buffer), include_headers=False)
    else:
        server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    stop = threading.Event()
    server._stop_event = stop

    async def main() -> None:
        try:
            if acp:
                await serve_lines(reader, server.protocol, stop)  # type: ignore[arg-type]
            else:
                await run_until_eof(reader, server.protocol, stop)  # type: ignore[arg-type]
        finally:
            if server._agent is not None:
                await server._agent.shutdown()

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
