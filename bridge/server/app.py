"""The editor server: thin pygls handlers over the agent (PROTOCOL.md). Each handler takes params,
calls the domain, returns a wire shape."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import os
import signal
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer

from bridge import __version__
from bridge.server import wire, wire_history
from bridge.server.jsonrpc import (
    AGENT_CAPABILITIES,
    API_KEY_METHOD,
    AUTH_METHODS,
    AcpProtocol,
    BridgeProtocol,
    LineWriter,
    dict_converter,
    run_until_eof,
    serve_lines,
)
from bridge.server.updates import UpdateStream, tool_meta

if TYPE_CHECKING:  # the domain is imported on first use, so `initialize` is answered at once
    from bridge.agent import Agent
    from bridge.mcp.host import McpHost, Question, Reply
    from bridge.messages import Block
    from bridge.model.types import ModelError
    from bridge.permissions.trust import TrustAnswer, TrustQuestion
    from bridge.permissions.types import PermissionAnswer, PermissionRequest
    from bridge.server.documents import SyncedDocuments
    from bridge.server.fast_initialize import FirstMessage
    from bridge.session import Frontend, Session

log = logging.getLogger(__name__)

Level = Literal["info", "warning", "error"]
AUTH_REQUIRED = -32000  # ACP's `auth_required`
RESOURCE_NOT_FOUND = -32002  # ACP's `resource_not_found`
AGENT_INFO = {"name": "agent-bridge", "title": "Agent Bridge", "version": __version__}
DEBUG_STATS_ENV = "AGENT_BRIDGE_DEBUG_STATS"  # set: `_bridge/stats` answers (the soak benchmark's view)


class BridgeStats(TypedDict):
    """`_bridge/stats`: what a soak watches for leaks, from inside the process."""

    pid: int
    tasks: int  # asyncio tasks of the server's loop, this request's included
    taskNames: dict[str, int]  # tasks by their coroutine's qualified name
    threads: int
    threadNames: list[str]
    sessions: int


def debug_stats(agent: Agent | None) -> BridgeStats:
    tasks = asyncio.all_tasks()
    names = collections.Counter(getattr(task.get_coro(), "__qualname__", "?") for task in tasks)
    return {"pid": os.getpid(), "tasks": len(tasks), "taskNames": dict(names), "threads": threading.active_count(),
            "threadNames": sorted(thread.name for thread in threading.enumerate()),
            "sessions": len(agent.sessions) if agent is not None else 0}


class BridgeServer(LanguageServer):
    def __init__(self, overrides: dict[str, Any] | None = None, *, acp: bool = False) -> None:
        super().__init__(
            "agent-bridge",
            __version__,
            protocol_cls=AcpProtocol if acp else BridgeProtocol,
            converter_factory=dict_converter,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.acp = acp
        self.overrides = overrides or {}
        self.options: dict[str, Any] = {}
        self.editor_capabilities: dict[str, Any] = {}  # ACP `clientCapabilities`
        self._agent: Agent | None = None
        self.streams: dict[str, UpdateStream] = {}
        self._unshown: list[tuple[str, Level]] = []  # ACP: notices from before any session existed

    @property
    def bridge_protocol(self) -> BridgeProtocol:
        assert isinstance(self.protocol, BridgeProtocol)
        return self.protocol

    @property
    def agent(self) -> Agent:
        if self._agent is None:
            from bridge.agent import Agent
            from bridge.config import BridgeConfig

            options = self.options.get("settings", self.options)
            config, problems = BridgeConfig.load({**(options if isinstance(options, dict) else {}), **self.overrides})
            for problem in problems:
                self.notice(None, problem, "warning")
            self._agent = Agent(config)
        return self._agent

    @property
    def offline(self) -> bool:
        """The model is the offline demo this process serves (`--offline`), not Claude."""
        server = sys.modules.get("bridge.offline.server")  # loaded only when this process serves one
        return server is not None and self.agent.config.base_url in server.OfflineServer.running

    def models(self, session: Session) -> dict[str, Any]:
        """`models` of a `session/new` or `session/load` answer: the session's, or the offline demo model."""
        return wire.offline_models_state() if self.offline else wire.models_state(session.model_name)

    def configure(self, options: dict[str, Any], client_capabilities: Any = None) -> None:
        self.options = options
        self.editor_capabilities = client_capabilities if isinstance(client_capabilities, dict) else {}

    def notice(self, session_id: str | None, message: str, level: Level = "info") -> None:
        """Something the user should see. LSP: `window/showMessage` (`logMessage` for info). ACP has no such
        message, so a notice is an `agent_message_chunk` of the session (what Zed shows), marked in `_meta`;
        one from before any session exists waits for the first session's answer."""
        log.log(logging.INFO if level == "info" else logging.WARNING, "%s", message)
        if not self.acp and level == "info":
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
        elif not self.acp:
            kind = types.MessageType.Error if level == "error" else types.MessageType.Warning
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        elif session_id is None or session_id not in self.streams:
            self._unshown.append((message, level))
        else:
            self.stream(session_id).update(wire.notice_update(message, level))

    def session_started(self, session: Session, notices: list[str], *, loaded: bool = False) -> None:
        """After the answer to `session/new` / `session/load`: now the editor knows the session id."""
        self.advertise_commands(session)
        if loaded:  # also in the answer (`modes`); the VS Code extension listens for the update
            session.announce_mode()
        unshown, self._unshown = self._unshown, []
        for message, level in [*unshown, *((notice, "warning") for notice in notices)]:
            self.notice(session.id, message, level)

    def report_server_error(self, error: Exception, source: Any) -> None:
        if self.acp:  # pygls would send `window/showMessage`, which is not ACP
            log.error("server error: %s", error)
        else:
            super().report_server_error(error, source)

    def session(self, params: Any, model: type[wire.WireModel] = wire.SessionParams) -> tuple[Any, Session]:
        from bridge.agent import UnknownSession

        parsed = _parse(model, params)
        try:
            return parsed, self.agent.get(parsed.session_id)
        except UnknownSession as error:
            raise unknown_session(error) from None

    def stream(self, session_id: str) -> UpdateStream:
        """The session's one update stream: every update of the session goes through it, in order."""
        stream = self.streams.get(session_id)
        if stream is None:
            stream = UpdateStream(lambda update: self.send_update(session_id, update),
                                  lambda event: self.notice(session_id, event.message, event.level),
                                  offline=self.offline)
            self.streams[session_id] = stream
        return stream

    def frontend(self, session_id: str) -> Frontend:
        from bridge.session import Frontend

        stream = self.stream(session_id)

        async def prompter(request: PermissionRequest) -> PermissionAnswer:
            stream.flush()
            return await self.ask_permission(session_id, request)

        async def ask_trust(question: TrustQuestion) -> TrustAnswer | None:
            stream.flush()
            try:
                result = await self.ask_client("session/request_permission", wire.trust_params(session_id, question))
            except Exception as error:  # the editor failed to answer: nothing is trusted
                log.warning("folder trust question failed: %s", error)
                return None
            return wire.trust_answer(result)

        return Frontend(emit=stream.emit, prompter=prompter, documents=self.documents(session_id),
                        ask_trust=ask_trust)

    def documents(self, session_id: str) -> SyncedDocuments:
        """Files through the client when it offers `fs/*` (ACP), else the synced documents (LSP)."""
        from bridge.server.documents import ClientFiles, SyncedDocuments

        fs = self.editor_capabilities.get("fs")
        fs = fs if isinstance(fs, dict) else {}
        read, write = fs.get("readTextFile") is True, fs.get("writeTextFile") is True
        if not (read or write):
            return SyncedDocuments(self)
        return ClientFiles(self, self.ask_client, session_id, read=read, write=write)

    def mcp_host(self, session: Session) -> McpHost:
        """What a session's MCP servers may do with the editor: notices, questions, a new command list."""
        from bridge.loop.events import Notice
        from bridge.mcp.host import McpHost

        def changed() -> None:
            session.toolset.refresh_commands()
            self.advertise_commands(session)

        return McpHost(notice=lambda text, level: session.frontend.emit(Notice(text, level)),
                       ask=lambda question: self.ask_question(session.id, question), changed=changed)

    async def ask_question(self, session_id: str, question: Question) -> Reply:
        """An MCP server's question (approve a project's server, fill a form) as `session/request_permission`;
        withdrawn when the server withdraws it (or the turn is cancelled)."""
        self.stream(session_id).flush()
        result = await self.ask_client("session/request_permission", wire.question_params(session_id, question))
        return wire.question_reply(result, question)

    def advertise_commands(self, session: Session) -> None:
        self.stream(session.id).update(wire.available_commands(list(session.toolset.commands.values())))

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.protocol.notify("session/update", {"sessionId": session_id, "update": update})

    async def ask_client(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """A request to the editor. Cancelled or unanswered in `timeout` s: withdrawn (`$/cancel_request` in
        ACP, `$/cancelRequest` in LSP), so nothing waits for an answer forever."""
        from bridge.server.documents import ClientRequestFailed

        msg_id = f"{method.split('/')[-1]}_{uuid.uuid4().hex[:12]}"
        try:
            async with asyncio.timeout(timeout):
                return await self.protocol.send_request_async(method, params, msg_id=msg_id)
        except (asyncio.CancelledError, TimeoutError) as error:
            self.bridge_protocol.withdraw(msg_id)
            if isinstance(error, TimeoutError):
                raise ClientRequestFailed(f"no answer to {method} within {timeout:g} s") from None
            raise
        except JsonRpcException as error:
            raise ClientRequestFailed(error.message or f"error {error.code}") from None

    async def ask_permission(self, session_id: str, request: PermissionRequest) -> PermissionAnswer:
        from bridge.permissions.types import PermissionAnswer

        params = wire.permission_params(session_id, request)
        session = self.agent.sessions.get(session_id)
        tool = session.toolset.get(request.tool_name) if session is not None else None
        meta = await asyncio.to_thread(tool_meta, tool, request.raw_input)
        if meta:
            params["toolCall"]["_meta"] = {**(params["toolCall"].get("_meta") or {}), **meta}
        try:  # a cancelled turn withdraws the question (CancelledError goes on)
            result = await self.ask_client("session/request_permission", params)
        except Exception as error:  # the editor answered with an error: the tool is denied
            log.warning("permission request failed: %s", error)
            return PermissionAnswer("cancelled")
        return wire.permission_answer(result, request)


def _warm_up() -> None:
    """Right after `initialize` is answered, in the event loop: load the domain (and the SDK, if requests need
    it) before the first session does. Not in a thread: two threads importing the same modules can deadlock
    (Python's import locks), and nothing can be served without the domain anyway."""
    try:
        import bridge.agent  # noqa: F401
        from bridge.model import wire
        from bridge.tools.registry import core_tools

        for tool in core_tools():  # loads what writing the schemas takes
            tool.schema()
        if wire.supported() is None:
            wire.prepare()
        else:
            import anthropic  # noqa: F401
    except Exception:  # reported when a prompt needs it
        log.exception("warm-up import failed")


def unknown_session(error: Exception) -> JsonRpcServerError:
    return JsonRpcServerError(str(error), RESOURCE_NOT_FOUND)  # type: ignore[no-untyped-call]


def auth_required(message: str, data: dict[str, Any] | None = None) -> JsonRpcServerError:
    """ACP's `auth_required`, with the method the editor can offer (how to set the key is in its `_meta`)."""
    data = {**(data or {}), "authMethods": AUTH_METHODS}
    return JsonRpcServerError(message, AUTH_REQUIRED, data)  # type: ignore[no-untyped-call]


NO_API_KEY = ("No Anthropic API key is set: set ANTHROPIC_API_KEY for agent-bridge (or apiKey in its settings; "
              "in VS Code: “Agent Bridge: Set API Key”), or try it without one on the offline model "
              "(--offline playground).")


def _slash_command(blocks: list[Block]) -> bool:
    """A prompt that starts with a slash command (most answer without the model)."""
    first = blocks[0] if blocks else {}
    return first.get("type") == "text" and str(first.get("text", "")).lstrip().startswith("/")


def model_failure(error: ModelError) -> JsonRpcException:
    data = {"kind": error.kind, "status": error.status}
    if error.kind == "authentication" and error.status != 403:  # a bad or missing key; 403: a key without access
        return auth_required(str(error), data)
    return JsonRpcInternalError(str(error), data=data)


def _parse(model: type[wire.WireModel], params: Any) -> Any:
    try:
        return wire.parse(model, params)
    except ValueError as error:
        raise JsonRpcInvalidParams(str(error)) from None


Handler = TypeVar("Handler", bound=Callable[..., Any])


async def _served(work: Any) -> Any:
    """`work` (a coroutine) awaited; a request the history or the review can't serve (no such prompt, a stale
    hunk, checkpoints off) is an invalid-params error that says why."""
    from bridge.checkpoints.review import ReviewError
    from bridge.checkpoints.rewind import RewindError
    from bridge.history import HistoryError

    try:
        return await work
    except (HistoryError, ReviewError, RewindError) as error:
        raise JsonRpcInvalidParams(str(error)) from None


async def _turn_of(session: Session, target: str | int | None) -> str | None:
    """The turn id of the prompt a request names (None: none named — the whole session)."""
    from bridge import history

    async def find() -> str:
        assert target is not None
        return history.find_prompt(session, target).turn

    return None if target is None else str(await _served(find()))


async def _fork(ls: BridgeServer, source: Session, target: str | int | None, cwd: Path | None,
                servers: list[dict[str, Any]]) -> dict[str, Any]:
    """`session/fork` and `_bridge/fork`: a new session from `source` (before prompt `target`, or all of it)."""
    before = await _turn_of(source, target)
    session = await ls.agent.fork_session(source, ls.frontend, before_turn=before, cwd=cwd)
    ls.agent.connect_mcp(session, servers, ls.mcp_host(session))
    session.toolset.refresh_commands()
    ls.bridge_protocol.after_reply(lambda: ls.session_started(session, []))
    return {"sessionId": session.id, "modes": wire.modes_state(session.mode)}


def _internal_error(error: Exception) -> JsonRpcException:
    """An unexpected failure as the editor sees it: one clear message (no group, class name or traceback,
    which go to the log). A model failure keeps its kind and status as data."""
    from bridge.errors import for_person, root_cause
    from bridge.model.types import ModelError

    cause = root_cause(error)
    if isinstance(cause, ModelError):
        return model_failure(cause)
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
    def acp_initialize(ls: BridgeServer, params: Any) -> dict[str, Any]:
        ls.configure({}, params.get("clientCapabilities") if isinstance(params, dict) else None)
        asyncio.get_running_loop().call_soon(_warm_up)
        return {"protocolVersion": 1, "agentCapabilities": AGENT_CAPABILITIES, "authMethods": AUTH_METHODS,
                "agentInfo": AGENT_INFO}

    @feature("authenticate")
    def authenticate(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = _parse(wire.AuthenticateParams, params)
        if parsed.method_id != API_KEY_METHOD:
            raise JsonRpcInvalidParams(f"Invalid params: methodId: unknown method {parsed.method_id!r}")
        if not ls.agent.config.api_key:
            raise auth_required("No Anthropic API key: set ANTHROPIC_API_KEY for agent-bridge, then restart it.")
        return {}

    @feature(types.INITIALIZE)
    def initialize(ls: BridgeServer, params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        ls.configure(options, options.get("clientCapabilities"))
        asyncio.get_running_loop().call_soon(_warm_up)

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
        notices = session.setup.startup_notices()
        ls.agent.connect_mcp(session, parsed.mcp_servers, ls.mcp_host(session))  # they start in the background
        session.toolset.refresh_commands()
        ls.bridge_protocol.after_reply(lambda: ls.session_started(session, notices))
        answer = {"sessionId": session.id, "modes": wire.modes_state(session.mode)}
        if not ls.acp:  # the VS Code extension's model picker (ACP 1's schema has no `models` yet)
            answer["models"] = ls.models(session)
        return answer

    @feature("session/load")
    async def session_load(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.agent import UnknownSession

        parsed = _parse(wire.LoadSessionParams, params)
        from bridge.server.updates import replayed

        try:
            reopened = ls.agent.reopen(parsed.session_id, ls.frontend(parsed.session_id), parsed.mcp_servers,
                                       ls.mcp_host)
        except UnknownSession as error:
            raise unknown_session(error) from None
        session = reopened.session
        stream = ls.stream(session.id)
        for update in replayed(reopened.replay, offline=ls.offline):
            stream.update(update)  # ACP: the history first, then the answer
        ls.bridge_protocol.after_reply(lambda: ls.session_started(session, reopened.notices, loaded=True))
        answer = {"modes": wire.modes_state(session.mode)}
        if not ls.acp:  # the loaded session's own model, for the picker and the header
            answer["models"] = ls.models(session)
        return answer

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
        if not ls.agent.config.api_key and not _slash_command(blocks):
            # Said at once: without a key the request would fail late and for another reason (a network
            # error after the retries, when the API is not reachable), which sends people looking elsewhere.
            raise auth_required(NO_API_KEY, {"kind": "authentication", "status": None})
        stream = ls.stream(session.id)
        turn: list[str] = []
        try:
            stop = await session.prompt(blocks, turn.append)
        except asyncio.CancelledError:  # `$/cancelRequest`: the turn was cancelled and its history repaired
            stop = "cancelled"
        except Exception as error:  # a model failure, or anything else: one clear message
            raise _internal_error(error) from None
        finally:
            stream.flush()  # what the turn streamed arrives before its answer
        # Asked for (`_meta.turnId: true`, the panel's rewind-to-here): the turn's id, what `_bridge/rewind`,
        # `_bridge/fork` and `_bridge/changes` take. Only when asked: the answer stays ACP's plain one otherwise.
        asked = bool(parsed.meta and parsed.meta.get("turnId") is True)
        return {"stopReason": stop, **({"_meta": {"turnId": turn[0]}} if asked and turn else {})}

    @feature("session/cancel")
    def session_cancel(ls: BridgeServer, params: Any) -> None:
        try:
            parsed, session = ls.session(params)
        except JsonRpcException as error:
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
        except JsonRpcException as error:
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
        ls.bridge_protocol.after_reply(session.announce_mode)  # answered, then the update
        return {}

    @feature("session/close")
    async def session_close(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.agent import UnknownSession

        parsed = _parse(wire.SessionParams, params)
        try:
            await ls.agent.close_session(parsed.session_id)
        except UnknownSession as error:
            raise unknown_session(error) from None
        ls.streams.pop(parsed.session_id, None)
        return {}

    @feature("session/set_model")
    def session_set_model(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire.SetModelParams)
        session.set_model(parsed.model_id)
        return {}

    @feature("_bridge/prompts")
    async def bridge_prompts(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """The prompts a rewind or a fork can go back to, with how many files changed since each."""
        from bridge import history

        _parsed, session = ls.session(params)

        async def listed() -> list[dict[str, Any]]:
            return [wire_history.prompt(p, history.changed_after(session, p.turn)) for p in history.prompts(session)]

        return {"prompts": await _served(listed())}

    @feature("_bridge/rewind")
    async def bridge_rewind(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """What a rewind to before a prompt will do (`confirm: false`), or doing it (`confirm: true`)."""
        from bridge import history

        parsed, session = ls.session(params, wire_history.RewindParams)
        if parsed.target is None:
            raise JsonRpcInvalidParams("Invalid params: turnId or prompt: name the prompt to rewind to")
        if session.busy:
            raise JsonRpcInternalError("A turn is running: cancel it (session/cancel) before rewinding.")
        preview = await _served(history.preview_rewind(session, parsed.target, parsed.mode))
        if not parsed.confirm:
            return wire_history.rewind_preview(preview)
        outcome = await _served(history.rewind(session, preview, parsed.resolutions))
        return wire_history.rewind_outcome(preview, outcome)

    @feature("_bridge/fork")
    async def bridge_fork(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire_history.PromptParams)
        return await _fork(ls, session, parsed.target, None, [])

    @feature("session/fork")
    async def session_fork(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """ACP's unstable `session/fork`; `_meta.turnId` / `_meta.prompt` forks from before that prompt."""
        parsed, session = ls.session(params, wire_history.ForkParams)
        cwd = Path(parsed.cwd) if parsed.cwd else None
        if cwd is not None and (not cwd.is_absolute() or not cwd.is_dir()):
            raise JsonRpcInvalidParams(f"Invalid params: cwd: must be an absolute path to an existing directory, "
                                       f"got {parsed.cwd!r}")
        meta = parsed.meta or {}
        return await _fork(ls, session, meta.get("turnId") or meta.get("prompt"), cwd, parsed.mcp_servers)

    @feature("_bridge/changes")
    async def bridge_changes(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """The session's pending changes, or a prompt's, per file with hunks."""
        from bridge.checkpoints.review import view

        parsed, session = ls.session(params, wire_history.PromptParams)
        turn = await _turn_of(session, parsed.target)
        reviews = await _served(view(session.checkpoints, turn))
        return {"scope": "session" if turn is None else "turn", "turnId": turn,
                "files": [wire_history.file_review(review) for review in reviews]}

    @feature("_bridge/undo")
    async def bridge_undo(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.checkpoints.review import Address, undo

        parsed, session = ls.session(params, wire_history.ReviewParams)
        turn = await _turn_of(session, parsed.target)
        address = Address(parsed.path, parsed.hunk, parsed.hunk_id)
        return wire_history.review_result(await _served(undo(session.checkpoints, turn, address,
                                                              overwrite=parsed.overwrite)))

    @feature("_bridge/keep")
    async def bridge_keep(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.checkpoints.review import Address, keep

        parsed, session = ls.session(params, wire_history.ReviewParams)
        turn = await _turn_of(session, parsed.target)
        address = Address(parsed.path, parsed.hunk, parsed.hunk_id)
        return wire_history.review_result(await _served(keep(session.checkpoints, turn, address)))

    if os.environ.get(DEBUG_STATS_ENV):

        @feature("_bridge/stats")
        async def bridge_stats(ls: BridgeServer, params: Any) -> BridgeStats:
            return debug_stats(ls._agent)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: BridgeServer, params: Any) -> None:
        if ls._agent is not None:
            await ls._agent.shutdown()

    return server


def serve(overrides: dict[str, Any] | None = None, *, acp: bool = False, first: FirstMessage | None = None) -> int:
    """Serve on stdio until the client goes away; then kill everything we started. `acp`: ACP's own
    framing (one message per line) instead of LSP's Content-Length headers. `first`: what was read (and maybe
    answered) before the server was loaded (bridge/server/fast_initialize.py)."""
    from bridge.server.fast_initialize import AnswerFilter, FirstMessage, Replay

    first = first or FirstMessage(b"")
    server = build_server(overrides, acp=acp)
    reader = StdinAsyncReader(Replay(first.consumed, sys.stdin.buffer), server.thread_pool)  # type: ignore[arg-type]
    stdout = AnswerFilter(sys.stdout.buffer, first)
    if acp:
        server.protocol.set_writer(LineWriter(stdout), include_headers=False)
    else:
        server.protocol.set_writer(StdoutWriter(stdout))  # type: ignore[arg-type]
    stop = threading.Event()
    server._stop_event = stop
    signalled: list[int] = []

    async def main() -> None:
        reading = asyncio.current_task()
        assert reading is not None

        def on_signal(signum: int) -> None:
            """SIGINT/SIGTERM: every turn is cancelled (as Ctrl-C: commands get their escalation), then the
            process ends; another signal meanwhile kills the commands at once."""
            signalled.append(signum)
            if len(signalled) == 1:
                reading.cancel()
            elif server._agent is not None:
                server._agent.kill_processes_now()

        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, on_signal, signum)
        try:
            if acp:
                await serve_lines(reader, server.protocol, stop)  # type: ignore[arg-type]
            else:
                await run_until_eof(reader, server.protocol, stop)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            if not signalled:
                raise
        finally:
            if server._agent is not None:
                await server._agent.shutdown(grace=bool(signalled))

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):
        pass
    finally:
        if not signalled:  # (after a signal, stdin may still be open: its reader thread is never joined)
            server.shutdown()  # type: ignore[no-untyped-call]
    return 128 + signalled[0] if signalled else 0
