"""The editor server: thin pygls handlers over the agent (PROTOCOL.md). Each handler takes params,
calls the domain, returns a wire shape."""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams
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
    from bridge.loop.events import Notice
    from bridge.permissions.types import PermissionAnswer, PermissionRequest
    from bridge.session import Frontend, Session

log = logging.getLogger(__name__)


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

    def stream(self, session_id: str) -> UpdateStream:
        """The session's one update stream: every update of the session goes through it, in order."""
        stream = self.streams.get(session_id)
        if stream is None:
            stream = UpdateStream(lambda update: self.send_update(session_id, update), self.notice)
            self.streams[session_id] = stream
        return stream

    def frontend(self, session_id: str) -> Frontend:
        from bridge.session import Frontend

        stream = self.stream(session_id)

        async def prompter(request: PermissionRequest) -> PermissionAnswer:
            stream.flush()
            return await self.ask_permission(session_id, request)

        return Frontend(emit=stream.emit, prompter=prompter, documents=EditorDocuments(self))

    def notice(self, event: Notice) -> None:
        if event.level == "info":
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=event.message))
        else:
            self.show(event.message, types.MessageType.Error if event.level == "error" else types.MessageType.Warning)

    def advertise_commands(self, session: Session) -> None:
        self.stream(session.id).update(wire.available_commands(list(session.commands.values())))

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


Handler = TypeVar("Handler", bound=Callable[..., Any])


def _internal_error(error: Exception) -> JsonRpcInternalError:
    """An unexpected failure as the editor sees it: one clear message (no group, class name or traceback,
    which go to the log). A model failure keeps its kind and status as data."""
    from bridge.errors import for_person, root_cause
    from bridge.model.types import ModelError

    cause = root_cause(error)
    if isinstance(cause, ModelError):
        return JsonRpcInternalError(str(cause), data={"kind": cause.kind, "status": cause.status})
    log.error("request failed", exc_info=error)
    return JsonRpcInternalError(for_person(error))


def _answering_errors(handler: Handler) -> Handler:
    """`handler`, with any exception that is not already a JSON-RPC error answered as `_internal_error`
    (pygls would send its class name and traceback)."""
    if asyncio.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(*args: Any) -> Any:
            try:
                return await handler(*args)
            except JsonRpcException:
                raise
            except Exception as error:
                raise _internal_error(error) from None

        return run_async  # type: ignore[return-value]

    @functools.wraps(handler)
    def run(*args: Any) -> Any:
        try:
            return handler(*args)
        except JsonRpcException:
            raise
        except Exception as error:
            raise _internal_error(error) from None

    return run  # type: ignore[return-value]


def build_server(overrides: dict[str, Any] | None = None, *, acp: bool = False) -> BridgeServer:
    server = BridgeServer(overrides, acp=acp)

    def feature(method: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            server.feature(method)(_answering_errors(handler))
            return handler

        return register

    @feature("acp/initialize")
    def acp_initialize(ls: BridgeServer, params: Any) -> None:
        ls.configure({})
        threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()

    @feature(types.INITIALIZE)
    def initialize(ls: BridgeServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.configure(options if isinstance(options, dict) else {})
        threading.Thread(target=_warm_up, name="warm-up", daemon=True).start()

    @feature("session/new")
    async def session_new(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = _parse(wire.NewSessionParams, params)
        cwd = Path(parsed.cwd)
        if not cwd.is_absolute() or not cwd.is_dir():  # noqa: ASYNC240 - one stat, as when the handler was sync
            raise JsonRpcInvalidParams(
                f"Invalid params: cwd: must be an absolute path to an existing directory, got {parsed.cwd!r}"
            )
        from bridge.session import new_session_id

        session_id = new_session_id()
        session = ls.agent.new_session(cwd, ls.frontend(session_id), session_id=session_id)
        for problem in session.settings_problems():
            ls.show(f"Invalid settings (skipped): {problem}", types.MessageType.Warning)
        for problem in session.agent_problems():
            ls.show(f"Invalid agent file (skipped): {problem}", types.MessageType.Warning)
        for problem in await ls.agent.connect_mcp(session, parsed.mcp_servers):
            ls.show(f"MCP server skipped: {problem}", types.MessageType.Warning)
        asyncio.get_running_loop().call_soon(ls.advertise_commands, session)
        return {"sessionId": session.id, "modes": wire.modes_state(session.mode),
                "models": wire.models_state(session.model_name)}

    @feature("session/load")
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
        for problem in [] if live else await ls.agent.connect_mcp(session, parsed.mcp_servers):
            ls.show(f"MCP server skipped: {problem}", types.MessageType.Warning)
        for problem in [] if live else session.missing_tools():
            ls.show(problem, types.MessageType.Warning)
        for problem in [] if live else session.agent_problems():
            ls.show(f"Invalid agent file (skipped): {problem}", types.MessageType.Warning)
        stream = ls.stream(session.id)
        for update in wire.replay_updates(session.conversation.messages, session.describe_tool_use,
                                          session.sidechain):
            stream.update(update)
        ls.advertise_commands(session)
        session.announce_mode()  # `session/load` answers null: the mode is told as an update
        return None

    @feature("session/list")
    def session_list(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = _parse(wire.ListSessionsParams, params)
        stored = ls.agent.stored_sessions(Path(parsed.cwd) if parsed.cwd else None)
        return {"sessions": [wire.stored_session(item) for item in stored]}

    @feature("session/prompt")
    async def session_prompt(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire.PromptParams)
        try:
            blocks = wire.prompt_blocks(parsed.prompt)
        except ValueError as error:
            raise JsonRpcInvalidParams(str(error)) from None
        stream = ls.stream(session.id)
        try:
            stop = await session.prompt(blocks)
        except asyncio.CancelledError:  # `$/cancelRequest`: the turn was cancelled and its history repaired
            stop = "cancelled"
        except Exception as error:  # a model failure, or anything else: one clear message
            raise _internal_error(error) from None
        finally:
            stream.flush()  # what the turn streamed arrives before its answer
        return {"stopReason": stop}

    @feature("session/cancel")
    def session_cancel(ls: BridgeServer, params: Any) -> None:
        try:
            parsed, session = ls.session(params)
        except JsonRpcInvalidParams as error:
            log.warning("session/cancel ignored: %s", error)
            return
        meta = parsed.meta or {}
        call = meta.get("toolCallId")
        if isinstance(call, str):  # one call alone (a sub-agent and all it runs): the turn goes on
            if not session.cancel_tool_call(call):
                log.info("session/cancel: tool call %s is not running", call)
            return
        session.cancel(force=bool(meta.get("force")))

    @feature("_bridge/cancel_tool_call")
    def cancel_tool_call(ls: BridgeServer, params: Any) -> None:
        """Our extension: stop one running tool call alone — e.g. a sub-agent, from its card."""
        try:
            parsed, session = ls.session(params, wire.ToolCallParams)
        except JsonRpcInvalidParams as error:
            log.warning("_bridge/cancel_tool_call ignored: %s", error)
            return
        if not session.cancel_tool_call(parsed.tool_call_id):
            log.info("_bridge/cancel_tool_call: tool call %s is not running", parsed.tool_call_id)

    @feature("session/set_mode")
    def session_set_mode(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.permissions.modes import MODES, PermissionModeError

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

    @feature("session/set_model")
    def session_set_model(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire.SetModelParams)
        session.set_model(parsed.model_id)
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
