"""MCP servers as tools, against a real stdio server process (tests/fixtures/mcp_server.py)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError
from bridge.tools.mcp import McpConnection, McpError, McpInput, McpServerSpec, McpTool, parse_servers, tools_of

FIXTURE = str(Path(__file__).parent / "fixtures" / "mcp_server.py")


def spec(*flags: str, name: str = "fixture", env: tuple[tuple[str, str], ...] = ()) -> McpServerSpec:
    return McpServerSpec(name, sys.executable, (FIXTURE, *flags), env)


@pytest.fixture
async def tools(tmp_path: Path) -> AsyncIterator[dict[str, McpTool]]:
    connection = McpConnection(spec("--noisy", env=(("MCP_FIXTURE_LOG", str(tmp_path / "log")),)), tmp_path)
    listed = await connection.start()
    try:
        yield {t.name: t for t in tools_of(connection, listed, set())}
    finally:
        await connection.close()


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)


def test_parse_servers_takes_stdio_and_names_every_problem() -> None:
    specs, problems = parse_servers([
        {"name": "a", "command": "run-a", "args": ["--x"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "web", "url": "http://x", "headers": []},
        {"name": "", "command": "x"},
        {"name": "b"},
        {"name": "c", "command": "c", "args": [1]},
        {"name": "d", "command": "d", "env": [{"name": "K"}]},
    ])
    assert specs == [McpServerSpec("a", "run-a", ("--x",), (("K", "v"),))]
    assert problems == [
        "MCP server 'web': the http transport is not supported (only stdio: command and args)",
        "mcpServers.2: needs a non-empty name",
        "MCP server 'b': needs a command",
        "MCP server 'c': args must be a list of strings",
        "MCP server 'd': env must be a list of {name, value} strings",
    ]


async def test_tools_are_named_and_described_as_the_server_says(tools: dict[str, McpTool]) -> None:
    assert sorted(tools) == ["mcp__fixture__big", "mcp__fixture__echo", "mcp__fixture__fail", "mcp__fixture__image",
                             "mcp__fixture__wait"]
    echo = tools["mcp__fixture__echo"]
    assert echo.schema() == {"name": "mcp__fixture__echo", "description": "Echo the text back.", "input_schema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}
    data = McpInput.model_validate({"text": "hi"})
    assert echo.user_facing_title(data) == "Echo (fixture)"
    assert echo.is_concurrency_safe(data) and not echo.is_read_only(data), "a hint never skips the permission ask"
    assert not tools["mcp__fixture__big"].is_concurrency_safe(McpInput.model_validate({"chars": 1}))


async def test_calls_return_text_errors_and_images(tools: dict[str, McpTool], tmp_path: Path) -> None:
    echoed = await tools["mcp__fixture__echo"].call(McpInput.model_validate({"text": "héllo"}), ctx(tmp_path))
    assert echoed.content == "echo: héllo" and not echoed.is_error
    failed = await tools["mcp__fixture__fail"].call(McpInput.model_validate({}), ctx(tmp_path))
    assert failed.content == "it broke" and failed.is_error
    image = await tools["mcp__fixture__image"].call(McpInput.model_validate({}), ctx(tmp_path))
    assert isinstance(image.content, list)
    assert [b["type"] for b in image.content] == ["text", "image"]
    assert image.content[1]["source"]["media_type"] == "image/png"
    big = await tools["mcp__fixture__big"].call(McpInput.model_validate({"chars": 200_000}), ctx(tmp_path))
    assert isinstance(big.content, str) and len(big.content) == 200_000, "a long line over the pipe arrives whole"


async def test_bad_input_is_caught_before_the_call(tools: dict[str, McpTool], tmp_path: Path) -> None:
    echo = tools["mcp__fixture__echo"]
    missing = await echo.validate_input(McpInput.model_validate({}), ctx(tmp_path))
    assert missing == "Missing required field(s): text. The input schema asks for: text."
    wrong = await echo.validate_input(McpInput.model_validate({"text": 3}), ctx(tmp_path))
    assert wrong == "Field 'text' must be string, not int."
    assert await echo.validate_input(McpInput.model_validate({"text": "ok"}), ctx(tmp_path)) is None


async def test_a_cancelled_call_tells_the_server(tools: dict[str, McpTool], tmp_path: Path) -> None:
    call = asyncio.ensure_future(tools["mcp__fixture__wait"].call(McpInput.model_validate({}), ctx(tmp_path)))
    log = tmp_path / "log"
    deadline = asyncio.get_running_loop().time() + 10
    while not (log.exists() and "wait" in log.read_text()):
        assert asyncio.get_running_loop().time() < deadline, "the call never reached the server"
        await asyncio.sleep(0.01)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    request_id = log.read_text().split("wait ")[1].split()[0]
    while f"cancelled {request_id}" not in log.read_text():
        assert asyncio.get_running_loop().time() < deadline, log.read_text()
        await asyncio.sleep(0.01)
    echoed = await tools["mcp__fixture__echo"].call(McpInput.model_validate({"text": "still"}), ctx(tmp_path))
    assert echoed.content == "echo: still", "the server goes on serving"


async def test_a_server_that_exits_mid_call_is_a_clear_tool_error(tmp_path: Path) -> None:
    connection = McpConnection(spec("--exit-on-call"), tmp_path)
    [echo] = [t for t in tools_of(connection, await connection.start(), set()) if t.name.endswith("echo")]
    try:
        with pytest.raises(ToolError, match=r"MCP server 'fixture' exited \(code 3\).*crashing on purpose"):
            await echo.call(McpInput.model_validate({"text": "x"}), ctx(tmp_path))
        with pytest.raises(ToolError, match="exited"):
            await echo.call(McpInput.model_validate({"text": "again"}), ctx(tmp_path))
    finally:
        await connection.close()


async def test_a_server_that_never_answers_or_cannot_start_is_reported(tmp_path: Path) -> None:
    with pytest.raises(McpError, match=r"'fixture' did not answer within 1 s; its stderr ends: fixture server stderr"):
        await McpConnection(spec("--hang"), tmp_path).start(timeout=1)
    with pytest.raises(McpError, match=r"'nope' could not start '/no/such/server'"):
        await McpConnection(McpServerSpec("nope", "/no/such/server"), tmp_path).start()


async def test_names_are_api_safe_and_unique(tmp_path: Path) -> None:
    connection = McpConnection(McpServerSpec("my server.v2", "unused"), tmp_path)
    listed = [{"name": "get/item"}, {"name": "get_item"}, {"name": "x" * 100}]
    taken: set[str] = set()
    names = [t.name for t in tools_of(connection, listed, taken)]
    assert names == ["mcp__my_server_v2__get_item", "mcp__my_server_v2__" + "x" * 45]
    assert all(len(n) <= 64 for n in names) and taken == set(names)
