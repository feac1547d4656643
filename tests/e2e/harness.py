"""An editor for end-to-end tests: a pytest-lsp client driving `agent-bridge serve` (a real
subprocess) whose model is the embedded offline Messages API (a real HTTP server in this process)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

from bridge.offline import OfflineServer, Scenario, load_scenario
from bridge.server.jsonrpc import dict_converter
from tests.poll import poll as poll

PermissionHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Handler = TypeVar("Handler", bound=Callable[..., Any])


def feature(client: LanguageClient, method: str) -> Callable[[Handler], Handler]:
    """`@client.feature(method)`, typed: pygls leaves the type of its decorator unannotated."""
    register: Callable[[Handler], Handler] = client.feature(method)
    return register


async def allow_once(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def reject_once(params: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


@dataclass
class Answers:
    """The person answering the bridge's questions: a folder-trust question with the next of `trust` (its text
    kept in `trust_texts`), any other with `tool(params)`'s option (its title kept in `tool_questions`)."""

    trust: list[str]
    tool: Callable[[dict[str, Any]], str] = lambda _params: "reject_once"
    trust_texts: list[str] = field(default_factory=list)
    tool_questions: list[str] = field(default_factory=list)

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        if "trust" in (params.get("_meta") or {}):
            self.trust_texts.append(params["toolCall"]["content"][0]["content"]["text"])
            return {"outcome": {"outcome": "selected", "optionId": self.trust.pop(0)}}
        self.tool_questions.append(params["toolCall"]["title"])
        return {"outcome": {"outcome": "selected", "optionId": self.tool(params)}}


@dataclass
class Editor:
    client: LanguageClient
    model: OfflineServer
    workspace: Path
    updates: list[dict[str, Any]] = field(default_factory=list)
    permission_requests: list[dict[str, Any]] = field(default_factory=list)
    on_permission: PermissionHandler = allow_once

    async def new_session(self, cwd: Path | None = None, *, mcp_servers: list[dict[str, Any]] | None = None) -> str:
        params = {"cwd": str(cwd or self.workspace), "mcpServers": mcp_servers or []}
        result = await self.request("session/new", params)
        return str(result["sessionId"])

    async def request(self, method: str, params: Any) -> Any:
        return await self.client.protocol.send_request_async(method, params)

    def notify(self, method: str, params: Any) -> None:
        self.client.protocol.notify(method, params)

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        return result

    def start_prompt(self, session_id: str, text: str) -> asyncio.Future[Any]:
        """Send the prompt now (so a cancel sent after it is ordered after it on the wire)."""
        params = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        return asyncio.wrap_future(self.client.protocol.send_request("session/prompt", params))

    def cancel(self, session_id: str, *, force: bool = False) -> None:
        params: dict[str, Any] = {"sessionId": session_id}
        if force:
            params["_meta"] = {"force": True}
        self.notify("session/cancel", params)

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [u["update"]["sessionUpdate"] for u in self.updates if session_id in (None, u["sessionId"])]

    def of_kind(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            u["update"]
            for u in self.updates
            if u["update"]["sessionUpdate"] == kind and session_id in (None, u["sessionId"])
        ]

    def text(self, session_id: str | None = None, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.of_kind(kind, session_id))

    def tool_updates(self, tool_call_id: str) -> list[dict[str, Any]]:
        return [u["update"] for u in self.updates if u["update"].get("toolCallId") == tool_call_id]

    async def wait_for_output(self, session_id: str, text: str) -> dict[str, Any]:
        """The session's first tool call, once its streamed output (progress) contains `text`."""
        call: dict[str, Any] = (await poll(lambda: self.of_kind("tool_call", session_id), what="the tool call"))[0]
        await poll(
            lambda: any(text in str(u.get("content")) for u in self.tool_updates(call["toolCallId"])),
            what=f"{text!r} in the tool's streamed output",
        )
        return call

    def kill_server(self) -> None:
        """`kill -9` the bridge process."""
        assert self.client._server is not None
        self.client._server.kill()

    def last_request_messages(self) -> list[dict[str, Any]]:
        return list(self.model.valid_requests[-1].body["messages"])


AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")  # the console script, as a user runs it


async def run_agent(*args: str, cwd: Path, env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """`agent-bridge ARGS…` with stdin that is not a terminal (as in CI, cron, a script): its exit code and its
    output (stdout and stderr together, as a terminal shows them)."""
    process = await asyncio.create_subprocess_exec(
        AGENT_BRIDGE,
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode()


def server_command() -> list[str]:
    return [sys.executable, "-m", "bridge.cli.main", "serve"]


def server_env(model: OfflineServer, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        ANTHROPIC_BASE_URL=model.base_url,
        ANTHROPIC_API_KEY="test-key",
        AGENT_BRIDGE_DATA_DIR=str(data_dir),
        AGENT_BRIDGE_CONFIG_DIR=str(data_dir / "config"),
        AGENT_BRIDGE_MAX_RETRY_WAIT="0.05",
        AGENT_BRIDGE_LOG="INFO",
        HOME=str(data_dir / "home"),
    )
    (data_dir / "home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


@contextlib.asynccontextmanager
async def running_editor(
    scenario: Scenario | dict[str, Any] | str,
    workspace: Path,
    data_dir: Path,
    *,
    initialization_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Editor]:
    model = OfflineServer(load_scenario(scenario) if not isinstance(scenario, Scenario) else scenario)
    model.start()
    client = LanguageClient(converter_factory=dict_converter)
    register_lsp_features(client)
    editor = Editor(client=client, model=model, workspace=workspace)

    @feature(client, "session/update")
    def on_update(ls: LanguageClient, params: dict[str, Any]) -> None:
        editor.updates.append(params)

    @feature(client, "session/request_permission")
    async def on_permission(ls: LanguageClient, params: dict[str, Any]) -> dict[str, Any]:
        editor.permission_requests.append(params)
        return await editor.on_permission(params)

    await client.start_io(*server_command(), env=server_env(model, data_dir, **(env or {})))
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                root_uri=workspace.as_uri(),
                initialization_options=initialization_options or {},
            )
        )
        yield editor
    finally:
        try:
            if client._server is not None and client._server.returncode is None:
                await asyncio.wait_for(client.shutdown_session(), 15)
        finally:
            await client.stop()
            model.stop()


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def text_response(text: str, *, chunks: int = 4, delay_ms: int = 0) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text, "chunks": chunks}],
        "stop_reason": "end_turn",
        "delay_ms": delay_ms,
    }


def tool_response(*calls: tuple[str, dict[str, Any]], text: str = "", delay_ms: int = 0) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "name": name, "input": data} for name, data in calls]
    return {"content": content, "stop_reason": "tool_use", "delay_ms": delay_ms}
