"""Remote MCP servers: Streamable HTTP and SSE on 127.0.0.1, with headers, and OAuth (the fixture's own
authorization server, which approves every sign-in at once). The "browser" is an HTTP client that opens the
URL the bridge shows, following the redirects back to the bridge's loopback callback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from bridge.mcp.manager import McpManager
from bridge.mcp.oauth import token_file
from bridge.mcp.settings import McpSettings
from tests.poll import poll
from tests.test_mcp_client import FIXTURE, Editor, call, context, files_for, ready


@contextlib.asynccontextmanager
async def remote(*flags: str) -> AsyncIterator[str]:
    """The fixture server as an HTTP server of its own; yields its MCP URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        FIXTURE,
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 90)
        assert line.startswith(b"listening "), line
        yield line.decode().split()[1]
    finally:
        process.terminate()
        await process.wait()


def http_server(url: str, kind: str = "http", **headers: str) -> dict[str, object]:
    pairs = [{"name": k, "value": v} for k, v in headers.items()]
    return {"type": kind, "name": "remote", "url": url, "headers": pairs}


async def test_a_streamable_http_server_gets_its_headers(tmp_path: Path) -> None:
    async with remote("--http") as url:
        manager = McpManager(tmp_path / "data")
        handle = manager.open(
            tmp_path, [http_server(url, **{"X-Test": "abc"})], Editor().host(), files=files_for(tmp_path)
        )
        try:
            tools = await ready(handle)
            assert (await call(tools, "mcp__remote__header", {}, context(tmp_path))).content == "x-test: abc"
            progress: list[str] = []
            assert (
                await call(tools, "mcp__remote__slow", {"steps": 2}, context(tmp_path, progress))
            ).content == "did 2 steps"
            assert progress[-1] == "Progress 2/2 — step 2"
        finally:
            await handle.release()


async def test_an_sse_server_works_too(tmp_path: Path) -> None:
    async with remote("--sse") as url:
        manager = McpManager(tmp_path / "data")
        handle = manager.open(tmp_path, [http_server(url, "sse")], Editor().host(), files=files_for(tmp_path))
        try:
            tools = await ready(handle)
            assert (
                await call(tools, "mcp__remote__echo", {"text": "over sse"}, context(tmp_path))
            ).content == "echo: over sse"
        finally:
            await handle.release()


async def test_oauth_shows_the_url_signs_in_through_the_browser_and_keeps_the_tokens_private(tmp_path: Path) -> None:
    async with remote("--http", "--auth") as url:
        editor = Editor()
        manager = McpManager(tmp_path / "data", McpSettings(authTimeout=60))
        handle = manager.open(tmp_path, [http_server(url)], editor.host(), files=files_for(tmp_path))
        try:
            shown = await poll(
                lambda: next((t for _, t in editor.notices if "needs you to sign in" in t), None),
                what="the sign-in URL",
                timeout=90,
            )
            assert handle.connections["remote"].state == "signing-in"
            assert "needs you to sign in: open" in handle.status_text()
            authorize = shown.split("open ", 1)[1]
            assert authorize.startswith(url.rsplit("/", 1)[0] + "/authorize?") and "code_challenge=" in authorize
            async with httpx.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(authorize)
            assert page.status_code == 200 and "Signed in" in page.text
            assert str(page.url).startswith("http://127.0.0.1:") and "/callback?code=" in str(page.url)
            await poll(lambda: handle.connections["remote"].state != "signing-in", what="the sign-in to be taken")
            tools = await ready(handle)
            assert (
                await call(tools, "mcp__remote__echo", {"text": "signed"}, context(tmp_path))
            ).content == "echo: signed"
            stored = token_file(tmp_path / "data", "remote", url)
            assert stat.S_IMODE(stored.stat().st_mode) == 0o600
            assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
        finally:
            await handle.release()
        again = Editor()
        later = McpManager(tmp_path / "data").open(
            tmp_path, [http_server(url)], again.host(), files=files_for(tmp_path)
        )
        try:
            await ready(later)
            assert not again.said("sign in"), "the stored token is used: no second sign-in"
        finally:
            await later.release()


async def test_a_sign_in_nobody_finishes_ends_with_a_clear_error(tmp_path: Path) -> None:
    async with remote("--http", "--auth") as url:
        editor = Editor()
        manager = McpManager(tmp_path / "data", McpSettings(authTimeout=0.5))
        handle = manager.open(tmp_path, [http_server(url)], editor.host(), files=files_for(tmp_path))
        try:
            connection = handle.connections["remote"]
            await poll(lambda: connection.state == "failed", what="the sign-in to time out", timeout=90)
            assert connection.error is not None
            assert connection.error == (
                "MCP server 'remote' sign-in failed: no sign-in within 0.5 s (the mcp.authTimeout setting)"
            )
            assert handle.status_text().startswith("MCP servers (1):\n- remote: failed: MCP server 'remote' sign-in")
        finally:
            await handle.release()


async def test_an_unreachable_url_is_reported(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data", McpSettings(startupTimeout=5))
    handle = manager.open(tmp_path, [http_server("http://127.0.0.1:9/mcp")], Editor().host(), files=files_for(tmp_path))
    try:
        connection = handle.connections["remote"]
        await poll(lambda: connection.state == "failed", what="the failure", timeout=60)
        assert connection.error is not None
        assert connection.error.startswith("MCP server 'remote' cannot be reached at http://127.0.0.1:9/mcp: ")
    finally:
        await handle.release()
