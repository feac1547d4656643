"""The editor server: thin pygls handlers over the agent (PROTOCOL.md). Each handler takes params,
calls the domain, returns a wire shape."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from bridge import __version__
from bridge.server import history_handlers, questions, session_state, wire
from bridge.server.handshake import AGENT_INFO, API_KEY_METHOD, initialize_result
from bridge.server.jsonrpc import (
    AcpProtocol,
    BridgeProtocol,
    dict_converter,
)
from bridge.server.rpc_errors import (
    NO_API_KEY,
    Handler,
    answering_errors,
    auth_required,
    directories,
    directory,
    internal_error,
    parse_params,
    unknown_session,
)
from bridge.server.stats import DEBUG_STATS_ENV, BridgeStats, debug_stats
from bridge.server.updates import UpdateStream, tool_meta
from bridge.server.warmup import sdk_loaded, sdk_loading, warm_up

if TYPE_CHECKING:  # the domain is imported on first use, so `initialize` is answered at once
    from bridge.agent import Agent
    from bridge.mcp.host import McpHost, Question, Reply
    from bridge.messages import Block
    from bridge.model.anthropic_client import AnthropicModel
    from bridge.permissions.trust import TrustAnswer, TrustQuestion
    from bridge.permissions.types import PermissionAnswer, PermissionRequest
    from bridge.server.documents import SyncedDocuments
    from bridge.session import Frontend, Session

log = logging.getLogger(__name__)

Level = wire.Level


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
        self.features = wire.client_features({}, lsp=not acp)
        self._agent: Agent | None = None
        self.streams: dict[str, UpdateStream] = {}
        self._titles: dict[str, str] = {}  # each session's title, once it has one (`session_info_update`)
        self.signed_out = False  # `logout`: no request goes to the model until `authenticate`
        self.starting: dict[str, set[asyncio.Future[None]]] = {}  # prompts waiting for the SDK's import
        self._unshown: list[tuple[str, Level]] = []  # ACP: notices from before any session existed
        # answered before the server was loaded (bridge/server/early_session.py): `session/new` id -> session id
        self.early_ids: dict[Any, str] = {}
        self.ahead: AnthropicModel | None = None  # the first prompt's model request, sent before the server loaded
        self.reader: Any = None  # stdin, as the serving loop reads it (bridge/server/stdio.py)
        self.stdout_filter: Any = None  # stdout, as the server writes it (fast_initialize.AnswerFilter)
        self.stop = threading.Event()  # the serving loop ends when set

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
            ahead, self.ahead = self.ahead, None
            if ahead is not None:
                from bridge.model.anthropic_client import AnthropicModel

                if isinstance(self._agent.model, AnthropicModel):
                    self._agent.model.adopt(ahead)
            self._agent.start_warming()
        return self._agent

    @property
    def offline(self) -> bool:
        """The model is the offline demo this process serves (`--offline`), not Claude."""
        return self.agent.config.offline

    def models(self, session: Session) -> dict[str, Any]:
        """`models` of a `session/new` or `session/load` answer: the session's, or the offline demo model."""
        return session_state.offline_models_state() if self.offline else session_state.models_state(session.model_name)

    def configure(self, options: dict[str, Any], client_capabilities: Any = None) -> None:
        self.options = options
        self.editor_capabilities = client_capabilities if isinstance(client_capabilities, dict) else {}
        self.features = wire.client_features(self.editor_capabilities, lsp=not self.acp)

    def notice(self, session_id: str | None, message: str, level: Level = "info") -> None:
        """Something the user should see. LSP: `window/showMessage` (`logMessage` for info). ACP: the session's
        `notice` update, or a quoted message for a client without notices (bridge/server/updates.py); one from
        before any session exists waits for the first session's answer."""
        log.log(logging.INFO if level == "info" else logging.WARNING, "%s", message)
        if not self.acp and level == "info":
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
        elif not self.acp:
            kind = types.MessageType.Error if level == "error" else types.MessageType.Warning
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))
        elif session_id is None or session_id not in self.streams:
            self._unshown.append((message, level))
        else:
            self.stream(session_id).notice(message, level)

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

        parsed = parse_params(model, params)
        try:
            return parsed, self.agent.get(parsed.session_id)
        except UnknownSession as error:
            raise unknown_session(error) from None

    def stream(self, session_id: str) -> UpdateStream:
        """The session's one update stream: every update of the session goes through it, in order."""
        stream = self.streams.get(session_id)
        if stream is None:
            lsp = None if self.acp else lambda event: self.notice(session_id, event.message, event.level)
            stream = UpdateStream(
                lambda update: self.send_update(session_id, update),
                lsp,
                features=self.features,
                config=lambda: self.config_options(self.agent.get(session_id)),
                offline=self.offline,
            )
            self.streams[session_id] = stream
        return stream

    def config_options(self, session: Session) -> list[dict[str, Any]]:
        """The session's config options; on the offline demo model its model option offers that model alone."""
        return session_state.config_options(session.mode, self.models(session), session.thought_level)

    def session_answer(self, session: Session) -> dict[str, Any]:
        """What `session/new`, `session/load` and `session/resume` answer about the session: its modes (for
        older clients) and its config options."""
        return session_state.session_answer(session.mode, self.models(session), session.thought_level, lsp=not self.acp)

    def turn_ended(self, session: Session) -> None:
        """After a turn: the session's title (once it has one) and its last activity (`session_info_update`)."""
        from bridge.transcript import title_of

        if not self.features.session_metadata:
            return
        known = self._titles.get(session.id)
        title = known or next((t for m in session.conversation.messages if (t := title_of(m))), None)
        if title is not None:
            self._titles[session.id] = title
        self.stream(session.id).update(wire.session_info(title if title != known else None, time.time()), closes=False)

    async def sdk_ready(self, session_id: str) -> bool:
        """Waits for the SDK's import if one is under way (start-up, off the loop); False when the session's
        `session/cancel` came meanwhile (the prompt is then cancelled before it began)."""
        if not sdk_loading():
            return True
        waiting = asyncio.ensure_future(sdk_loaded())
        self.starting.setdefault(session_id, set()).add(waiting)
        try:
            await asyncio.wait([waiting])
        finally:
            self.starting[session_id].discard(waiting)
        return not waiting.cancelled()

    def config_changed(self, session: Session) -> None:
        if self.features.session_metadata:
            self.stream(session.id).update(wire.config_update(self.config_options(session)), closes=False)

    def frontend(self, session_id: str) -> Frontend:
        from bridge.session import Frontend

        stream = self.stream(session_id)

        async def prompter(request: PermissionRequest) -> PermissionAnswer:
            stream.flush()
            return await self.ask_permission(session_id, request)

        async def ask_trust(question: TrustQuestion) -> TrustAnswer | None:
            stream.flush()
            try:
                params = questions.trust_params(session_id, question)
                result = await self.ask_client("session/request_permission", params)
            except Exception as error:  # the editor failed to answer: nothing is trusted
                log.warning("folder trust question failed: %s", error)
                return None
            return questions.trust_answer(result)

        return Frontend(emit=stream.emit, prompter=prompter, documents=self.documents(session_id), ask_trust=ask_trust)

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

        return McpHost(
            notice=lambda text, level: session.frontend.emit(Notice(text, level)),
            ask=lambda question: self.ask_question(session.id, question),
            changed=changed,
        )

    async def ask_question(self, session_id: str, question: Question) -> Reply:
        """An MCP server's question (approve a project's server, fill a form) as `session/request_permission`;
        withdrawn when the server withdraws it (or the turn is cancelled)."""
        self.stream(session_id).flush()
        result = await self.ask_client("session/request_permission", questions.question_params(session_id, question))
        return questions.question_reply(result, question)

    def advertise_commands(self, session: Session) -> None:
        self.stream(session.id).update(wire.available_commands(list(session.toolset.commands.values())), closes=False)

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
        except JsonRpcException as error:  # the editor's words, bounded: they go to the log and to the model
            raise ClientRequestFailed(_bounded(error.message or f"error {error.code}")) from None

    async def ask_permission(self, session_id: str, request: PermissionRequest) -> PermissionAnswer:
        from bridge.permissions.types import PermissionAnswer

        params = questions.permission_params(session_id, request)
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
        return questions.permission_answer(result, request)


CLIENT_ERROR_CHARS = 500


def _bounded(text: str) -> str:
    text = str(text)
    return text if len(text) <= CLIENT_ERROR_CHARS else text[:CLIENT_ERROR_CHARS] + f"… ({len(text):,} characters)"


def _slash_command(blocks: list[Block]) -> bool:
    """A prompt that starts with a slash command (most answer without the model)."""
    first = blocks[0] if blocks else {}
    return first.get("type") == "text" and str(first.get("text", "")).lstrip().startswith("/")


def build_server(overrides: dict[str, Any] | None = None, *, acp: bool = False) -> BridgeServer:
    server = BridgeServer(overrides, acp=acp)

    def feature(method: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            server.feature(method)(answering_errors(handler))
            return handler

        return register

    @feature("acp/initialize")
    def acp_initialize(ls: BridgeServer, params: Any) -> dict[str, Any]:
        ls.configure({}, params.get("clientCapabilities") if isinstance(params, dict) else None)
        warm_up()
        return initialize_result(AGENT_INFO)

    @feature("authenticate")
    def authenticate(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = parse_params(wire.AuthenticateParams, params)
        if parsed.method_id != API_KEY_METHOD:
            raise JsonRpcInvalidParams(f"Invalid params: methodId: unknown method {parsed.method_id!r}")
        if not ls.agent.config.api_key:
            raise auth_required("No Anthropic API key: set ANTHROPIC_API_KEY for agent-bridge, then restart it.")
        ls.signed_out = False
        return {}

    @feature("logout")
    def logout(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """The authenticated session ends: running turns are cancelled and no prompt reaches the model (each is
        answered auth_required) until `authenticate` again. (The key itself is the environment's or the settings
        file's: the bridge cannot remove it, only stop using it.)"""
        ls.signed_out = True
        if ls._agent is not None:
            for session in ls._agent.sessions.values():
                session.cancel()
        return {}

    @feature(types.INITIALIZE)
    def initialize(ls: BridgeServer, params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        ls.configure(options, options.get("clientCapabilities"))
        warm_up()

    @feature("session/new")
    async def session_new(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = parse_params(wire.NewSessionParams, params)
        cwd = directory(parsed.cwd, "cwd")
        added = directories(parsed.additional_directories)
        from bridge.session import new_session_id

        # minted already when `session/new` was answered before the server was loaded (early_session.py)
        session_id = ls.early_ids.pop(ls.bridge_protocol.msg_id, None) or new_session_id()
        session = ls.agent.new_session(cwd, ls.frontend(session_id), session_id=session_id, directories=added)
        notices = session.setup.startup_notices()
        ls.agent.connect_mcp(session, parsed.mcp_servers, ls.mcp_host(session))  # they start in the background
        session.toolset.refresh_commands()
        ls.bridge_protocol.after_reply(lambda: ls.session_started(session, notices))
        return {"sessionId": session.id, **ls.session_answer(session)}

    async def reopen(ls: BridgeServer, params: Any, *, replay: bool) -> dict[str, Any]:
        """`session/load` (the history replayed first, then the answer) and `session/resume` (no history)."""
        from bridge.agent import UnknownSession
        from bridge.server.updates import replayed

        parsed = parse_params(wire.LoadSessionParams, params)
        added = directories(parsed.additional_directories)
        try:
            reopened = ls.agent.reopen(
                parsed.session_id,
                ls.frontend(parsed.session_id),
                parsed.mcp_servers,
                ls.mcp_host,
                directories=added,
                replay=replay,
            )
        except UnknownSession as error:
            raise unknown_session(error) from None
        session = reopened.session
        stream = ls.stream(session.id)
        for update in replayed(reopened.replay, ls.features, offline=ls.offline):
            stream.update(update, closes=False)  # ACP: the history first, then the answer
        ls.bridge_protocol.after_reply(lambda: ls.session_started(session, reopened.notices, loaded=True))
        return ls.session_answer(session)

    @feature("session/load")
    async def session_load(ls: BridgeServer, params: Any) -> dict[str, Any]:
        return await reopen(ls, params, replay=True)

    @feature("session/resume")
    async def session_resume(ls: BridgeServer, params: Any) -> dict[str, Any]:
        return await reopen(ls, params, replay=False)

    @feature("session/delete")
    async def session_delete(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.agent import UnknownSession

        parsed = parse_params(wire.SessionParams, params)
        try:
            await ls.agent.delete_session(parsed.session_id)
        except UnknownSession as error:
            raise unknown_session(error) from None
        stream = ls.streams.pop(parsed.session_id, None)
        if stream is not None:
            stream.close()
        ls._titles.pop(parsed.session_id, None)
        return {}

    @feature("session/list")
    def session_list(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed = parse_params(wire.ListSessionsParams, params)
        stored = ls.agent.stored_sessions(Path(parsed.cwd) if parsed.cwd else None)
        return {"sessions": [wire.stored_session(item) for item in stored]}

    @feature("session/prompt")
    async def session_prompt(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire.PromptParams)
        if ls.signed_out:
            raise auth_required("Signed out (logout): authenticate again to use the model.")
        try:
            blocks = wire.prompt_blocks(parsed.prompt)
        except ValueError as error:
            raise JsonRpcInvalidParams(str(error)) from None
        if not blocks:  # nothing to ask the model (the API refuses an empty message): the turn is over at once
            return {"stopReason": "end_turn"}
        if not ls.agent.config.api_key and not _slash_command(blocks):
            # Said at once: without a key the request would fail late and for another reason (a network
            # error after the retries, when the API is not reachable), which sends people looking elsewhere.
            raise auth_required(NO_API_KEY, {"kind": "authentication", "status": None})
        stream = ls.stream(session.id)
        turn: list[str] = []
        try:
            stop = await session.prompt(blocks, turn.append) if await ls.sdk_ready(session.id) else "cancelled"
        except asyncio.CancelledError:  # `$/cancelRequest`: the turn was cancelled and its history repaired
            stop = "cancelled"
        except Exception as error:  # a model failure, or anything else: one clear message
            raise internal_error(error) from None
        finally:
            stream.end_turn()  # what the turn streamed (and held notices) arrive before its answer
            ls.turn_ended(session)
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
        for waiting in ls.starting.get(session.id, set()):  # a prompt still waiting for the SDK: it ends unbegun
            waiting.cancel()
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

    @feature("session/set_config_option")
    def session_set_config_option(ls: BridgeServer, params: Any) -> dict[str, Any]:
        """Mode, model or thinking; answered with every option as it now is (a change of mode is also announced
        after the answer, as `session/set_mode`'s, for clients that follow `modes`)."""
        from bridge.permissions.modes import PermissionModeError

        parsed, session = ls.session(params, wire.SetConfigOptionParams)
        options = ls.config_options(session)
        allowed = wire.option_values(options, parsed.config_id)
        if not allowed:
            ids = ", ".join(option["id"] for option in options)
            raise JsonRpcInvalidParams(f"Invalid params: configId: unknown option {parsed.config_id!r}; one of {ids}")
        if parsed.value not in allowed:
            raise JsonRpcInvalidParams(
                f"Invalid params: value: {parsed.config_id} takes one of {', '.join(allowed)}, not {parsed.value!r}"
            )
        value = str(parsed.value)
        if parsed.config_id == session_state.MODE_OPTION:
            try:
                session.set_mode(value, announce=False)
            except PermissionModeError as error:
                raise JsonRpcInvalidParams(f"Invalid params: value: {error}") from None
            ls.bridge_protocol.after_reply(session.announce_mode)
        elif parsed.config_id == session_state.MODEL_OPTION:
            session.set_model(value)
        else:
            session.set_thought_level(value)
        return {"configOptions": ls.config_options(session)}

    @feature("session/close")
    async def session_close(ls: BridgeServer, params: Any) -> dict[str, Any]:
        from bridge.agent import UnknownSession

        parsed = parse_params(wire.SessionParams, params)
        try:
            await ls.agent.close_session(parsed.session_id)
        except UnknownSession as error:
            raise unknown_session(error) from None
        ls.streams.pop(parsed.session_id, None)
        ls._titles.pop(parsed.session_id, None)
        history_handlers.SHOWN.pop(parsed.session_id, None)
        return {}

    @feature("session/set_model")
    def session_set_model(ls: BridgeServer, params: Any) -> dict[str, Any]:
        parsed, session = ls.session(params, wire.SetModelParams)
        offline_id = session_state.OFFLINE_MODEL["modelId"]
        if ls.offline and parsed.model_id != offline_id:
            raise JsonRpcInvalidParams(
                f"Invalid params: modelId: this bridge answers with the offline demo model only ({offline_id}), "
                f"not {parsed.model_id!r}"
            )
        if ls.offline:
            return {}  # the one model it has: nothing changes
        if parsed.model_id == offline_id:
            raise JsonRpcInvalidParams(
                f"Invalid params: modelId: {offline_id} is the offline demo model, which only a bridge started with "
                "--offline answers with"
            )
        session.set_model(parsed.model_id)
        ls.bridge_protocol.after_reply(lambda: ls.config_changed(session))
        return {}

    history_handlers.register(feature)

    if os.environ.get(DEBUG_STATS_ENV):

        @feature("_bridge/stats")
        async def bridge_stats(ls: BridgeServer, params: Any) -> BridgeStats:
            return debug_stats(ls._agent)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: BridgeServer, params: Any) -> None:
        if ls._agent is not None:
            await ls._agent.shutdown()

    return server
