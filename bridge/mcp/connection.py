"""One MCP server connection on the official SDK: its process or HTTP session, its lists, its life.

A connection runs in a task of its own (the SDK's transports and `ClientSession` are anyio context managers,
entered and left in one task); calls come from the tools' tasks. States:

  starting → ready                 initialize answered and the lists read (bounded by the start-up timeout)
  starting → signing-in → starting OAuth: the authorization URL is shown; the browser comes back to us
  ready → failed                   the server exited or closed the connection: calls in flight fail at once
                                   naming it; the next call restarts it (at most `max_restarts` times)
  ready → idle                     unused for `idle_timeout`: stopped; the next call starts it again
  any → stopped                    closed by the manager (no session uses it any more, or the bridge ends)

The lists (tools, prompts, resources capability, instructions) outlive a restart, so the tool set a session
offers the model does not change because a server died; `generation` counts real changes (a different list
after a restart, `notifications/*/list_changed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from bridge.environment import without_relative
from bridge.execution.linux import pdeathsig_prefix
from bridge.mcp.config import ServerSpec
from bridge.mcp.oauth import FileTokenStorage, SignInError, oauth_provider, token_file
from bridge.mcp.sdk import Closed, Watched, bridge_version, has_capability, innermost, load_sdk, session_class
from bridge.mcp.settings import McpSettings
from bridge.mcp.shown import Shown
from bridge.permissions.named_files import binding, bound_paths

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp.client.session import ClientRequestContext, ClientSession

    from bridge.execution.managed import ExternalProcess
    from bridge.mcp.host import NoticeLevel

log = logging.getLogger(__name__)

State = Literal["starting", "signing-in", "ready", "failed", "idle", "stopped"]
ProgressFn = Callable[[float, float | None, str | None], None]
Tracker = Callable[[str], "ExternalProcess"]  # ProcessSupervisor.track_external: dies with the bridge, kill -9 too


class ChangedSinceApproved(Exception):
    """A folder's server whose files changed since the user approved it (a pull, an edit while its question was
    open, before a restart): it is not started; the next session asks about it again."""


class Unavailable(Exception):
    """The server cannot take the call now; the message names it and says what happens next."""


class CallFailed(Exception):
    """The server answered the request with an error, or not in time."""


class Caller(Protocol):
    """A session using the connection: where its notices go and who answers a server's questions."""

    def notice(self, text: str, level: NoticeLevel) -> None: ...
    def refresh(self) -> None: ...
    async def elicit(self, server: str, params: dict[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Listing:
    tools: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()
    resources: bool = False
    instructions: str = ""
    server: str = ""  # "name version" the server gave


@dataclass
class Connection:
    spec: ServerSpec
    cwd: Path
    roots: tuple[Path, ...]
    settings: McpSettings
    data_dir: Path
    track: Tracker | None = None
    state: State = "stopped"
    error: str | None = None
    auth_url: str | None = None
    listing: Listing = field(default_factory=Listing)
    generation: int = 0
    ever_ready: bool = False
    restarts: int = 0
    users: list[Caller] = field(default_factory=list)
    last_used: float = field(default_factory=time.monotonic)
    _callers: list[Caller] = field(default_factory=list)
    _runner: asyncio.Task[None] | None = None
    _session: ClientSession | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _stop_state: State = "stopped"
    _moved: asyncio.Event = field(default_factory=asyncio.Event)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _stderr: deque[str] = field(default_factory=lambda: deque(maxlen=20))
    _stderr_done: asyncio.Event | None = None
    _idle: asyncio.TimerHandle | None = None
    _tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    _shown: Shown = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # every message about the server goes through this: its secrets never leave the bridge (shown.py)
        self._shown = Shown.of(self.spec.env, self.spec.headers, self.spec.url)
        self._shown.watch_logs()

    @property
    def label(self) -> str:
        return f"MCP server {self.spec.name!r}"

    # --- life -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server in the background (no-op while it runs)."""
        if self._runner is not None and not self._runner.done():
            return
        self._stop = asyncio.Event()
        self.error, self.auth_url = None, None
        self._stderr.clear()  # the tail told in an error is this run's
        self._set_state("starting")
        self._runner = asyncio.get_running_loop().create_task(self._run(), name=f"mcp {self.spec.name}")

    async def wait_started(self, timeout: float | None) -> bool:
        """Until the server is past `starting` (ready, failed, signing in...); False on timeout."""
        try:
            async with asyncio.timeout(timeout):
                while self.state == "starting":
                    await self._moved.wait()
        except TimeoutError:
            return False
        return True

    async def stop(self, state: State = "stopped") -> None:
        """Stop the server (its process, or its HTTP session) and wait until it is gone."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        runner = self._runner
        if runner is None or runner.done():
            if state == "stopped" or self.state in ("ready", "idle"):
                self._set_state(state)
            return
        self._stop_state = state
        self._stop.set()
        if self.state != "ready":  # still starting or signing in: nothing to finish, stop it now
            runner.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            try:
                await asyncio.wait_for(asyncio.shield(runner), 10)
            except TimeoutError:  # the SDK's shutdown is bounded; this is a last resort
                runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)

    async def restart(self) -> None:
        """`/mcp restart`: stop, forget past crashes, start again."""
        await self.stop()
        self.restarts = 0
        self.start()

    async def _run(self) -> None:
        try:
            await load_sdk()
            await self._serve()
        except BaseException as error:  # every end of the runner is recorded here
            reason = self._reason(error)
            if reason is None or self._stop.is_set():
                self._set_state(self._stop_state)
            else:
                await self._stderr_drained()
                self.error = self._shown.text(f"{self.label} {reason}{self._tail()}")
                was_ready = self.state == "ready"
                self._set_state("failed")
                log.warning("%s", self.error)
                self._tell(self.error + (". It will be restarted on the next call." if was_ready else ""), "warning")
            if isinstance(error, asyncio.CancelledError):
                raise
        else:
            self._set_state(self._stop_state)
        finally:
            self._session = None

    async def _serve(self) -> None:
        import mcp.types as types

        async with contextlib.AsyncExitStack() as stack:
            read, write = await self._open(stack)
            closed = anyio.Event()
            session = await stack.enter_async_context(
                session_class()(
                    Watched(read, closed),
                    write,
                    read_timeout_seconds=self.settings.startup_timeout,
                    list_roots_callback=self._roots,
                    elicitation_callback=self._elicit,
                    message_handler=self._on_message,
                    client_info=types.Implementation(name="agent-bridge", version=bridge_version()),
                )
            )
            init = await session.initialize()
            await self._read_lists(session, init)
            self._session = session
            self.ever_ready = True
            self._set_state("ready")
            self._arm_idle()
            count = len(self.listing.tools)
            self._tell(
                f"{self.label} connected: {count} tool{'s' * (count != 1)}"
                f"{f', {len(self.listing.prompts)} prompts' if self.listing.prompts else ''}",
                "info",
            )
            async with anyio.create_task_group() as wait:

                async def until(event: anyio.Event | asyncio.Event) -> None:
                    await event.wait()
                    wait.cancel_scope.cancel()

                wait.start_soon(until, closed)
                wait.start_soon(until, self._stop)
            if not self._stop.is_set():
                raise Closed

    async def _open(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            changed = await anyio.to_thread.run_sync(self._changed_since_approved)
            if changed is not None:
                raise ChangedSinceApproved(changed)

            command, args, env = spec.command, list(spec.args), dict(spec.env)
            env.setdefault("PATH", without_relative(os.environ.get("PATH", "")))  # an empty entry is the folder
            if self.track is not None:  # the server and all it forks die with the bridge, whatever kills it
                tracked = self.track(spec.name)
                stack.callback(tracked.close)  # runs after the stdio client below has stopped the server
                env.update(tracked.env)
                path = env.get("PATH", os.environ.get("PATH"))
                if (prefix := pdeathsig_prefix()) and shutil.which(command, path=path):
                    command, args = prefix[0], [*prefix[1:], command, *args]
            params = StdioServerParameters(command=command, args=args, env=env, cwd=str(self.cwd))
            read_fd, write_fd = os.pipe()
            errlog = os.fdopen(write_fd, "w")
            self._stderr_done = asyncio.Event()
            self._spawn(self._read_stderr(read_fd, self._stderr_done))
            try:  # the child has its own copy of the pipe; ours closes once it is spawned (or failed to be)
                streams: tuple[Any, Any] = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            finally:
                errlog.close()
            return streams
        from mcp.shared._httpx_utils import create_mcp_http_client

        storage = FileTokenStorage(token_file(self.data_dir, spec.name, spec.url))
        auth = oauth_provider(spec.url, storage, self._sign_in, self._signed_in, timeout=self.settings.auth_timeout)
        headers = dict(spec.headers)
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return await stack.enter_async_context(
                sse_client(spec.url, headers=headers, auth=auth, timeout=self.settings.startup_timeout)
            )
        from mcp.client.streamable_http import streamable_http_client

        client = await stack.enter_async_context(create_mcp_http_client(headers=headers, auth=auth))
        return await stack.enter_async_context(streamable_http_client(spec.url, http_client=client))

    async def _read_lists(self, session: ClientSession, init: mcp_types.InitializeResult) -> None:
        caps = init.capabilities
        tools = await self._list(session, "tools") if caps.tools is not None else ()
        prompts = await self._list(session, "prompts") if caps.prompts is not None else ()
        info = init.server_info
        self._update(
            Listing(
                tools,
                prompts,
                caps.resources is not None,
                (init.instructions or "").strip(),
                f"{info.name} {info.version}".strip(),
            )
        )

    async def _list(self, session: ClientSession, what: Literal["tools", "prompts"]) -> tuple[dict[str, Any], ...]:
        import mcp.types as types

        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _page in range(100):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            if what == "tools":
                page: Any = await session.list_tools(params=params)
                found = page.tools
            else:
                page = await session.list_prompts(params=params)
                found = page.prompts
            items += [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in found]
            cursor = page.next_cursor
            if not cursor:
                break
        return tuple(items)

    def _update(self, listing: Listing) -> None:
        if listing != self.listing:
            self.listing = listing
            self.generation += 1
            for user in list(self.users):
                user.refresh()

    # --- calls ------------------------------------------------------------------------------------

    async def request(self, caller: Caller, method: str, *args: Any, progress: ProgressFn | None = None) -> Any:
        """`tools/call` (name, arguments), `resources/read` (uri), `resources/list`, `prompts/get` (name,
        arguments) on a live session (started again first when it is down); the result as a dict."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = await self._live()
        self._callers.append(caller)
        self.last_used = time.monotonic()
        timeout = self.settings.tool_timeout
        try:
            if method == "tools/call":
                report = progress

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    if report is not None:
                        report(progress, total, message)

                result: Any = await session.call_tool(
                    str(args[0]), dict(args[1]), read_timeout_seconds=timeout, progress_callback=on_progress
                )
            elif method == "resources/read":
                result = await session.read_resource(args[0])
            elif method == "resources/list":
                return await self._resources(session)
            elif method == "prompts/get":
                result = await session.get_prompt(args[0], args[1])
            else:
                raise ValueError(method)
        except MCPError as error:
            if error.code == CONNECTION_CLOSED:
                await self._wait_down()
                raise Unavailable(
                    f"{self.error or self.label + ' closed the connection'} (during {method}). "
                    "It will be restarted on the next call."
                ) from None
            if error.code == REQUEST_TIMEOUT:
                raise CallFailed(
                    f"{self.label} did not answer {method} within {timeout:g} s; the request was "
                    "cancelled (the limit is the mcp.toolTimeout setting or MCP_TOOL_TIMEOUT)"
                ) from None
            raise CallFailed(
                self._shown.text(f"{self.label} answered {method} with an error: {error.message}")
            ) from None
        except RuntimeError as error:  # e.g. structured content that breaks the tool's output schema
            raise CallFailed(self._shown.text(f"{self.label}: {error}")) from None
        finally:
            self._callers.remove(caller)
            self.last_used = time.monotonic()
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _resources(self, session: ClientSession) -> list[dict[str, Any]]:
        import mcp.types as types

        out: list[dict[str, Any]] = []
        cursor: str | None = None
        for _page in range(100):
            page = await session.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            out += [r.model_dump(by_alias=True, mode="json", exclude_none=True) for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        return out

    async def _live(self) -> ClientSession:
        async with self._lock:
            if self.state == "signing-in":
                raise Unavailable(f"{self.label} is waiting for you to sign in: open {self.auth_url}")
            if self.state == "failed":
                if not self.ever_ready:
                    raise Unavailable(
                        f"{self.error or self.label + ' failed to start'}. Fix it, then /mcp restart {self.spec.name}."
                    )
                if self.restarts >= self.settings.max_restarts:
                    raise Unavailable(
                        f"{self.error}. It was restarted {self.restarts} time(s) and is left down: "
                        f"/mcp restart {self.spec.name} to try again."
                    )
                self.restarts += 1
                log.info("%s: restart %d of %d", self.label, self.restarts, self.settings.max_restarts)
                self.start()
            elif self.state in ("idle", "stopped"):
                self.start()
            await self.wait_started(None)  # bounded: the start-up timeout is the SDK's read timeout
        if self.state != "ready" or self._session is None:
            if self._signing_in():
                raise Unavailable(f"{self.label} is waiting for you to sign in: open {self.auth_url}")
            raise Unavailable(self.error or f"{self.label} is not running")
        return self._session

    async def _wait_down(self) -> None:
        runner = self._runner
        if runner is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(runner), 5)

    # --- what the server asks of us ------------------------------------------------------------------

    async def _roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        import mcp.types as types

        return types.ListRootsResult(
            roots=[
                types.Root.model_validate({"uri": root.as_uri(), "name": root.name or str(root)}) for root in self.roots
            ]
        )

    async def _elicit(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        import mcp.types as types

        asker = self._callers[-1] if self._callers else (self.users[-1] if self.users else None)
        if asker is None:
            return types.ElicitResult(action="decline")
        answer = await asker.elicit(self.spec.name, params.model_dump(by_alias=True, mode="json", exclude_none=True))
        return types.ElicitResult.model_validate(answer)

    async def _on_message(self, message: Any) -> None:
        import mcp.types as types

        if isinstance(message, Exception):
            log.debug("%s: transport problem: %s", self.label, self._shown.text(str(message)))
        elif isinstance(message, types.ToolListChangedNotification | types.PromptListChangedNotification):
            self._spawn(self._relist())

    async def _relist(self) -> None:
        session = self._session
        if session is None:
            return
        try:
            tools = await self._list(session, "tools") if self.listing.tools or has_capability(session, "tools") else ()
            prompts = await self._list(session, "prompts") if has_capability(session, "prompts") else ()
        except Exception as error:  # a dying server: its runner reports it
            log.info("%s: could not list again: %s", self.label, self._shown.text(str(error)))
            return
        before = len(self.listing.tools)
        self._update(Listing(tools, prompts, self.listing.resources, self.listing.instructions, self.listing.server))
        if len(tools) != before:
            self._tell(
                f"{self.label} changed its tools: {before} → {len(tools)} (offered from the next prompt)", "info"
            )

    async def _sign_in(self, url: str) -> None:
        self.auth_url = url
        self._set_state("signing-in")
        for user in list(self.users):  # as it is, not through `_tell`: the authorization server's URL, to open
            user.notice(f"{self.label} needs you to sign in: open {url}", "warning")

    def _signed_in(self) -> None:
        if self.state == "signing-in":
            self._set_state("starting")

    # --- small parts ------------------------------------------------------------------------------

    def _signing_in(self) -> bool:
        return self.state == "signing-in"

    def _set_state(self, state: State) -> None:
        if state == "starting" and self.state == "signing-in":
            self.auth_url = None
        self.state = state
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()
        for user in list(self.users):
            user.refresh()

    def _tell(self, text: str, level: NoticeLevel) -> None:
        shown = self._shown.text(text)
        for user in list(self.users):
            user.notice(shown, level)

    def _arm_idle(self) -> None:
        if self.settings.idle_timeout <= 0:
            return
        loop = asyncio.get_running_loop()

        def check() -> None:
            self._idle = None
            if self.state != "ready":
                return
            left = self.last_used + self.settings.idle_timeout - time.monotonic()
            if self._callers or left > 0:
                self._idle = loop.call_later(max(left, 1.0), check)
            else:
                log.info("%s: idle for %.0f s, stopped until it is used again", self.label, self.settings.idle_timeout)
                self._spawn(self.stop("idle"))

        self._idle = loop.call_later(self.settings.idle_timeout, check)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read_stderr(self, fd: int, done: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb"))
        partial = b""
        try:
            while chunk := await reader.read(65536):
                *lines, partial = (partial + chunk).split(b"\n")
                partial = partial[-4096:]
                for line in lines:
                    # redacted before it is cut: a cut through a secret would leave its start unmatched
                    text = self._shown.text(line.decode(errors="replace").rstrip())
                    if text:
                        self._stderr.append(text[:500])
                        log.debug("mcp %s: %s", self.spec.name, text)
        finally:
            transport.close()
            done.set()

    async def _stderr_drained(self) -> None:
        if self._stderr_done is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stderr_done.wait(), 1)

    def _tail(self) -> str:
        """The last lines the server printed, for an error (the log's and the editor's), redacted as they were
        read (`_read_stderr`): a server may print its own secrets, in any form, or a token it found."""
        if not self._stderr:
            return ""
        return f"; its stderr ends: {' | '.join(list(self._stderr)[-3:])}"

    def _changed_since_approved(self) -> str | None:
        """The files of a folder's server that changed since it was approved (binding as shown in its question),
        checked right before each start: the question's answer, a restart after a crash or an idle stop."""
        if self.spec.bound is None:
            return None
        workspace, approved = self.spec.bound
        now = binding(shlex.join([self.spec.command, *self.spec.args]), Path(workspace))
        if now == approved:
            return None
        before, after = bound_paths(approved), bound_paths(now)
        files = sorted(p for p in {*before, *after} if before.get(p) != after.get(p))
        return ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "") or "what it runs"

    def _reason(self, error: BaseException) -> str | None:
        """Why the runner ended, for a person; None when it was stopped on purpose."""
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        leaf = innermost(error)
        if isinstance(leaf, asyncio.CancelledError | anyio.get_cancelled_exc_class()) or leaf is None:
            return None
        if isinstance(leaf, Closed):
            return "exited" if self.spec.transport == "stdio" else "closed the connection"
        if isinstance(leaf, MCPError):
            if leaf.code == REQUEST_TIMEOUT:
                return f"did not answer within {self.settings.startup_timeout:g} s (MCP_TIMEOUT / mcp.startupTimeout)"
            if leaf.code == CONNECTION_CLOSED:
                return "exited before it answered" if self.spec.transport == "stdio" else "closed the connection"
            return f"answered with an error: {leaf.message}"
        if (
            isinstance(leaf, OSError)
            and self.spec.transport == "stdio"
            and self.state == "starting"
            and not self.ever_ready
            and not self._stderr
        ):
            return f"could not start {self.spec.command!r}: {leaf.strerror or leaf}"
        if isinstance(leaf, ChangedSinceApproved):
            return (
                f"was not started: {leaf} changed since you approved it (what you saw is not what would run); "
                "a new session asks about it again"
            )
        if isinstance(leaf, SignInError):
            return f"sign-in failed: {leaf}"
        kind = type(leaf).__name__
        if kind.startswith("OAuth"):
            return f"sign-in failed: {leaf}"
        import httpx2

        if isinstance(leaf, httpx2.HTTPStatusError):
            return f"answered HTTP {leaf.response.status_code} at {self._shown.url(self.spec.url)}"
        if isinstance(leaf, httpx2.TransportError):
            return f"cannot be reached at {self._shown.url(self.spec.url)}: {leaf or kind}"
        return f"failed: {leaf or kind}"
