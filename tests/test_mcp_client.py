"""The MCP client (bridge/mcp) against a real stdio server on the same SDK (tests/fixtures/mcp_server.py).

One server is started for the module (its start costs seconds); tests that need their own server (a crash,
a hang, sharing, idling) start their own.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bridge.abort import Abort
from bridge.mcp.config import ConfigFiles
from bridge.mcp.host import McpHost, Question, Reply
from bridge.mcp.manager import McpManager, McpSession
from bridge.mcp.settings import McpSettings
from bridge.tools.base import AnyTool, ToolContext, ToolError, ToolResult
from tests.poll import poll

FIXTURE = str(Path(__file__).parent / "fixtures" / "mcp_server.py")
module = pytest.mark.asyncio(loop_scope="module")


@dataclass
class Editor:
    """The person on the other side: sees notices, answers questions (`answer`), re-reads commands."""

    notices: list[tuple[str, str]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    changes: int = 0
    answer: Callable[[Question], Reply] = lambda _q: Reply(None)

    def host(self, *, interactive: bool = True) -> McpHost:
        async def ask(question: Question) -> Reply:
            self.questions.append(question)
            return self.answer(question)

        def changed() -> None:
            self.changes += 1

        return McpHost(
            notice=lambda text, level: self.notices.append((level, text)),
            ask=ask if interactive else None,
            changed=changed,
        )

    def said(self, text: str) -> bool:
        return any(text in notice for _, notice in self.notices)


def server(name: str, log: Path, *flags: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    pairs = [{"name": "MCP_FIXTURE_LOG", "value": str(log)}, *({"name": k, "value": v} for k, v in (env or {}).items())]
    return {"name": name, "command": sys.executable, "args": [FIXTURE, *flags], "env": pairs}


def files_for(root: Path) -> ConfigFiles:
    return ConfigFiles(root, root / "config", root / "claude-home")


async def ready(handle: McpSession, timeout: float = 90) -> dict[str, AnyTool]:
    for connection in handle.connections.values():
        await connection.wait_started(timeout)
        assert connection.state == "ready", connection.error
    snapshot = handle.snapshot() or handle._last
    assert snapshot is not None
    return {tool.name: tool for tool in [*snapshot.tools, *snapshot.deferrable]}


def context(root: Path, progress: list[str] | None = None) -> ToolContext:
    return ToolContext(
        cwd=root,
        abort=Abort(),
        data_dir=root / "data",
        progress=(progress.append if progress is not None else lambda _t: None),
    )


async def call(tools: dict[str, AnyTool], name: str, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    tool = tools[name]
    data = tool.input_model.model_validate(args)
    assert await tool.validate_input(data, ctx) is None
    return await tool.call(data, ctx)


@dataclass
class Shared:
    root: Path
    extra: Path
    log: Path
    editor: Editor
    manager: McpManager
    handle: McpSession
    tools: dict[str, AnyTool]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shared]:
    root = tmp_path_factory.mktemp("mcp")
    extra = root / "added dir"
    extra.mkdir()
    log = root / "fixture.log"
    editor = Editor()
    manager = McpManager(root / "data", McpSettings(toolTimeout=60))
    before = os.environ.get("ANTHROPIC_API_KEY")
    os.environ["ANTHROPIC_API_KEY"] = "sk-the-bridges-own"
    try:
        handle = manager.open(
            root,
            [server("fx", log, "--instructions", "Use echo to echo.", env={"FIXTURE_FLAG": "1"})],
            editor.host(),
            roots=(root, extra),
            files=files_for(root),
        )
    finally:
        if before is None:
            del os.environ["ANTHROPIC_API_KEY"]
        else:
            os.environ["ANTHROPIC_API_KEY"] = before
    tools = await ready(handle)
    yield Shared(root, extra, log, editor, manager, handle, tools)
    await handle.release()
    await manager.close()


@module
async def test_tools_are_named_described_and_hinted_as_the_server_says(shared: Shared) -> None:
    tools = shared.tools
    assert {"mcp__fx__echo", "mcp__fx__wait", "ListMcpResourcesTool", "ReadMcpResourceTool"} <= set(tools)
    echo = tools["mcp__fx__echo"]
    schema = echo.schema()
    assert schema["description"] == "Echo the text back." and schema["input_schema"]["required"] == ["text"]
    data = echo.input_model.model_validate({"text": "hi"})
    assert echo.user_facing_title(data) == 'fx: Echo {"text": "hi"}'  # the server first, then what the call runs with
    assert echo.is_concurrency_safe(data) and not echo.is_read_only(data), "a hint never skips the permission ask"
    assert not tools["mcp__fx__big"].is_concurrency_safe(tools["mcp__fx__big"].input_model.model_validate({}))
    missing = await echo.validate_input(echo.input_model.model_validate({}), context(shared.root))
    assert missing == "Missing required field(s): text. The input schema asks for: text."


@module
async def test_calls_return_text_errors_images_and_notes_for_what_the_api_cannot_take(shared: Shared) -> None:
    ctx = context(shared.root)
    assert (await call(shared.tools, "mcp__fx__echo", {"text": "héllo"}, ctx)).content == "echo: héllo"
    failed = await call(shared.tools, "mcp__fx__fail", {}, ctx)
    assert failed.content == "it broke" and failed.is_error
    image = await call(shared.tools, "mcp__fx__image", {}, ctx)
    assert isinstance(image.content, list) and [b["type"] for b in image.content] == ["text", "image"]
    svg = await call(shared.tools, "mcp__fx__svg", {}, ctx)
    assert svg.content == "[image/svg+xml image omitted (95 bytes): the model takes only jpeg, png, gif and webp]"
    big = await call(shared.tools, "mcp__fx__big", {"chars": 200_000}, ctx)
    assert isinstance(big.content, str) and len(big.content) == 200_000


@module
async def test_progress_comes_back_as_the_calls_output_so_far(shared: Shared) -> None:
    progress: list[str] = []
    done = await call(shared.tools, "mcp__fx__slow", {"steps": 3}, context(shared.root, progress))
    assert done.content == "did 3 steps"
    assert progress == ["Progress 1/3 — step 1", "Progress 2/3 — step 2", "Progress 3/3 — step 3"]


@module
async def test_the_server_sees_the_workspace_and_added_directories_as_roots(shared: Shared) -> None:
    listed = await call(shared.tools, "mcp__fx__roots", {}, context(shared.root))
    assert listed.content == f"{shared.root.as_uri()} {shared.extra.as_uri()}"


@module
async def test_the_bridge_declares_roots_and_elicitation_and_not_sampling(shared: Shared) -> None:
    declared = json.loads(str((await call(shared.tools, "mcp__fx__capabilities", {}, context(shared.root))).content))
    assert set(declared) == {"roots", "elicitation"}, "no sampling: the bridge does not lend its model"
    assert declared["roots"] == {}, "no listChanged: a connection's roots never change (they key the pool)"
    assert set(declared["elicitation"]) == {"form", "url"}


@module
async def test_an_elicitation_is_asked_and_answered_with_the_form(shared: Shared) -> None:
    ctx = context(shared.root)
    shared.editor.answer = lambda q: Reply("accept", {"content": {"colour": "red", "sure": "true"}})
    assert (await call(shared.tools, "mcp__fx__ask", {}, ctx)).content == "accept red True"
    question = shared.editor.questions[-1]
    assert question.title == "MCP server 'fx' asks: Which colour?"
    assert question.meta["elicitation"]["requestedSchema"]["required"] == ["colour"]
    shared.editor.answer = lambda q: Reply("decline")
    assert (await call(shared.tools, "mcp__fx__ask", {}, ctx)).content == "decline"
    shared.editor.answer = lambda q: Reply("accept")  # an editor that shows no form: nothing to send
    assert (await call(shared.tools, "mcp__fx__ask", {}, ctx)).content == "cancel"


@module
async def test_sampling_is_declined_clearly(shared: Shared) -> None:
    refused = await call(shared.tools, "mcp__fx__sample", {}, context(shared.root))
    assert refused.content == "sampling refused: Sampling not supported"


@module
async def test_the_server_gets_a_minimal_environment_and_its_own_env_never_the_bridges_secrets(
    shared: Shared,
) -> None:
    names = str((await call(shared.tools, "mcp__fx__env", {}, context(shared.root))).content).split()
    assert "ANTHROPIC_API_KEY" not in names and "FIXTURE_FLAG" in names and "MCP_FIXTURE_LOG" in names
    assert set(names) <= {
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LC_CTYPE",
        "FIXTURE_FLAG",
        "MCP_FIXTURE_LOG",
    }


@module
async def test_resources_are_listed_read_and_linked(shared: Shared) -> None:
    ctx = context(shared.root)
    listed = json.loads(str((await call(shared.tools, "ListMcpResourcesTool", {}, ctx)).content))
    assert [(r["server"], r["uri"], r.get("mimeType")) for r in listed] == [
        ("fx", "mem://readme", "text/markdown"),
        ("fx", "mem://logo.png", "image/png"),
        ("fx", "mem://data.bin", "application/octet-stream"),
    ]
    only = await call(shared.tools, "ListMcpResourcesTool", {"server": "fx"}, ctx)
    assert json.loads(str(only.content)) == listed
    with pytest.raises(ToolError, match=r"No MCP server named 'nope' in this session \(connected: fx\)"):
        await call(shared.tools, "ListMcpResourcesTool", {"server": "nope"}, ctx)
    readme = await call(shared.tools, "ReadMcpResourceTool", {"server": "fx", "uri": "mem://readme"}, ctx)
    assert readme.content == "[mem://readme]\n# Fixture\nHello from the fixture."
    logo = await call(shared.tools, "ReadMcpResourceTool", {"server": "fx", "uri": "mem://logo.png"}, ctx)
    assert isinstance(logo.content, list) and logo.content[1]["type"] == "image"
    blob = await call(shared.tools, "ReadMcpResourceTool", {"server": "fx", "uri": "mem://data.bin"}, ctx)
    saved = Path(str(blob.content).split("saved to ")[1].rstrip("]"))
    assert saved.read_bytes() == b"\x00\x01binary"
    link = await call(shared.tools, "mcp__fx__link", {}, ctx)
    assert "ReadMcpResourceTool (server 'fx', uri 'mem://readme')" in str(link.content)
    with pytest.raises(ToolError, match="answered resources/read with an error"):
        await call(shared.tools, "ReadMcpResourceTool", {"server": "fx", "uri": "mem://missing"}, ctx)


@module
async def test_prompts_are_slash_commands(shared: Shared) -> None:
    commands = {c.name: c for c in shared.handle.commands()}
    review = commands["mcp__fx__review"]
    assert (review.description, review.hint) == ("Review a file", "path [style]")
    assert "mcp" in commands and shared.handle.has_command("mcp__fx__review")
    usage = await shared.handle.run_command("mcp__fx__review", "")
    assert usage.reply == "/mcp__fx__review needs: path. Usage: /mcp__fx__review path [style]"
    ran = await shared.handle.run_command("mcp__fx__review", 'src/app.py "very thorough"')
    assert ran.blocks == [{"type": "text", "text": "Review src/app.py in a very thorough way."}]


@module
async def test_server_instructions_are_a_stable_system_prompt_section(shared: Shared) -> None:
    last = shared.handle._last
    assert last is not None
    assert last.instructions == (
        "# MCP server instructions\nThe following MCP servers gave instructions for "
        "their tools and resources:\n\n## fx\nUse echo to echo."
    )
    assert shared.handle.snapshot() is None, "nothing changed: the same snapshot (and bytes) stay in use"
    assert not last.defer, "16 tools are far below a tenth of the context window"


@module
async def test_the_mcp_command_lists_servers_state_and_tools(shared: Shared) -> None:
    text = (await shared.handle.run_command("mcp", "")).reply or ""
    assert text.startswith("MCP servers (1):\n- fx: ready — from the editor — ")
    # markdown (shown as the agent's text): each server's details nested under it, not run into one line
    assert "\n  - tools (16): echo, big, fail," in text and "\n  - prompts: /mcp__fx__review" in text
    assert (await shared.handle.run_command("mcp", "frobnicate")).reply.startswith("Unknown /mcp subcommand")  # type: ignore[union-attr]


@module
async def test_a_call_that_takes_too_long_is_cancelled_at_the_server(shared: Shared) -> None:
    manager = McpManager(shared.root / "data", McpSettings(toolTimeout=0.5))
    log = shared.root / "timeout.log"
    handle = manager.open(shared.root, [server("slowpoke", log)], Editor().host(), files=files_for(shared.root))
    try:
        tools = await ready(handle)
        with pytest.raises(
            ToolError,
            match=r"'slowpoke' did not answer tools/call within 0.5 s; the request was "
            "cancelled",
        ):
            await call(tools, "mcp__slowpoke__wait", {}, context(shared.root))
        request_id = await poll(
            lambda: "wait " in log.read_text() and log.read_text().split("wait ")[1].split()[0],
            what="the call at the server",
        )
        await poll(lambda: f"cancelled {request_id}" in log.read_text(), what="notifications/cancelled")
    finally:
        await handle.release()


@module
async def test_a_cancelled_call_tells_the_server_and_it_goes_on_serving(shared: Shared) -> None:
    task = asyncio.ensure_future(call(shared.tools, "mcp__fx__wait", {}, context(shared.root)))
    request_id = await poll(
        lambda: "wait " in shared.log.read_text() and shared.log.read_text().split("wait ")[-1].split()[0],
        what="the call at the server",
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await poll(lambda: f"cancelled {request_id}" in shared.log.read_text(), what="notifications/cancelled")
    assert (await call(shared.tools, "mcp__fx__echo", {"text": "still"}, context(shared.root))).content == "echo: still"


def pids(log: Path) -> list[int]:
    return [int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("pid ")]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


async def test_a_dead_server_fails_its_call_at_once_and_restarts_on_next_use_a_bounded_number_of_times(
    tmp_path: Path,
) -> None:
    editor = Editor()
    manager = McpManager(tmp_path / "data", McpSettings(maxRestarts=2))
    starts = tmp_path / "starts"
    spec = server("fx", tmp_path / "log", "--fail-after", "2", env={"MCP_FIXTURE_STARTS": str(starts)})
    handle = manager.open(tmp_path, [spec], editor.host(), files=files_for(tmp_path))
    try:
        tools = await ready(handle)
        ctx = context(tmp_path)
        with pytest.raises(
            ToolError,
            match=r"MCP server 'fx' exited; its stderr ends: .*crashing on purpose "
            r"\(during tools/call\)\. It will be restarted on the next call\.",
        ):
            await call(tools, "mcp__fx__crash", {}, ctx)
        assert editor.said("MCP server 'fx' exited")
        assert handle.snapshot() is None, "a dead server's tools stay offered: the request prefix does not change"
        assert (await call(tools, "mcp__fx__echo", {"text": "back"}, ctx)).content == "echo: back"  # restart 1
        with pytest.raises(ToolError, match="exited"):
            await call(tools, "mcp__fx__crash", {}, ctx)
        with pytest.raises(ToolError, match=r"exited before it answered; its stderr ends: refusing to start"):
            await call(tools, "mcp__fx__echo", {"text": "x"}, ctx)  # restart 2: the third start fails
        began = time.monotonic()
        with pytest.raises(ToolError, match=r"It was restarted 2 time\(s\) and is left down: /mcp restart fx"):
            await call(tools, "mcp__fx__echo", {"text": "x"}, ctx)
        assert time.monotonic() - began < 1, "a server left down answers at once"
        assert int(starts.read_text()) == 3
        assert "failed: MCP server 'fx' exited before it answered" in (handle.status_text())
    finally:
        await handle.release()


async def test_list_changed_refreshes_the_tools(tmp_path: Path) -> None:
    editor = Editor()
    manager = McpManager(tmp_path / "data")
    handle = manager.open(tmp_path, [server("fx", tmp_path / "log")], editor.host(), files=files_for(tmp_path))
    try:
        tools = await ready(handle)
        assert "mcp__fx__extra" not in tools
        await call(tools, "mcp__fx__grow", {}, context(tmp_path))
        snapshot = await poll(handle.snapshot, what="the new tool list")
        assert "mcp__fx__extra" in {t.name for t in snapshot.deferrable}
        assert snapshot.notice == (
            "MCP tools changed (1 added): the request prefix changes once, so the prompt "
            "cache is written again from here"
        )
        await poll(lambda: editor.said("changed its tools: 16 → 17"), what="the notice")
    finally:
        await handle.release()


async def test_servers_start_in_the_background_and_a_hung_one_is_reported_after_the_start_up_timeout(
    tmp_path: Path,
) -> None:
    editor = Editor()
    manager = McpManager(tmp_path / "data", McpSettings(startupTimeout=1, turnWait=0.2))
    began = time.monotonic()
    handle = manager.open(
        tmp_path,
        [
            server("stuck", tmp_path / "log", "--hang"),
            {"name": "gone", "command": "/no/such/mcp-server", "args": [], "env": []},
        ],
        editor.host(),
        files=files_for(tmp_path),
    )
    assert time.monotonic() - began < 0.5 and handle.connections["stuck"].state == "starting", "open never waits"
    await handle.before_turn()
    assert (
        editor.said("still starting: their tools join at a later prompt")
        or handle.connections["stuck"].state != "starting"
    )
    try:
        await poll(
            lambda: all(c.state == "failed" for c in handle.connections.values()), what="both to fail", timeout=90
        )
        assert handle.connections["stuck"].error == (
            "MCP server 'stuck' did not answer within 1 s (MCP_TIMEOUT / "
            "mcp.startupTimeout); its stderr ends: fixture server stderr line"
        )
        assert handle.connections["gone"].error is not None
        assert "could not start '/no/such/mcp-server'" in handle.connections["gone"].error
        assert editor.said("'stuck' did not answer within 1 s")
        assert handle.snapshot() is not None and handle._last is not None and not handle._last.deferrable
    finally:
        await handle.release()


async def test_a_server_still_starting_is_stopped_at_once(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data", McpSettings(startupTimeout=600))
    log = tmp_path / "log"
    handle = manager.open(tmp_path, [server("stuck", log, "--hang")], Editor().host(), files=files_for(tmp_path))
    pid = (await poll(lambda: log.exists() and pids(log), what="the process to start"))[0]
    began = time.monotonic()
    await handle.release()
    assert time.monotonic() - began < 8 and handle.connections == {}
    await poll(lambda: not alive(pid), what="the process to end", timeout=15)


async def test_sessions_share_one_process_per_config_and_cwd_until_the_last_lets_go(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data")
    log = tmp_path / "log"
    spec = server("fx", log)
    first = manager.open(tmp_path, [spec], Editor().host(), files=files_for(tmp_path))
    second = manager.open(tmp_path, [dict(spec, name="same-but-renamed")], Editor().host(), files=files_for(tmp_path))
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    third = manager.open(elsewhere, [spec], Editor().host(), files=files_for(elsewhere))
    try:
        await ready(first)
        second_tools = await ready(second)
        await ready(third)
        assert len(manager.connections()) == 2 and len(pids(log)) == 2, "one process per (config, cwd)"
        assert first.connections["fx"] is second.connections["same-but-renamed"]
        [shared_pid] = [pid for pid in pids(log) if os.readlink(f"/proc/{pid}/cwd") == str(tmp_path)]
        await first.release()
        assert alive(shared_pid), "still used by the second session"
        ctx = context(tmp_path)
        assert (await call(second_tools, "mcp__same-but-renamed__echo", {"text": "x"}, ctx)).content == "echo: x"
        with pytest.raises(ToolError, match="No MCP server named 'fx'"):
            await first.call_tool("fx", "echo", {"text": "x"}, ctx)
        await second.release()
        await poll(lambda: not alive(shared_pid), what="the last user's release to stop the process", timeout=30)
        assert len(manager.connections()) == 1
    finally:
        await third.release()
        await manager.close()


async def test_a_sub_agents_view_shares_the_tools_and_cannot_close_anything(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data")
    handle = manager.open(tmp_path, [server("fx", tmp_path / "log")], Editor().host(), files=files_for(tmp_path))
    try:
        tools = await ready(handle)
        view = handle.view()
        assert {t.name for t in view.tools()} == set(tools)
        assert not hasattr(view, "release") and not hasattr(view, "close")
        viewed = {t.name: t for t in view.tools()}
        assert (await call(viewed, "mcp__fx__echo", {"text": "v"}, context(tmp_path))).content == "echo: v"
    finally:
        await handle.release()


async def test_an_idle_server_is_stopped_and_started_again_when_used(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data", McpSettings(idleTimeout=0.3))
    log = tmp_path / "log"
    handle = manager.open(tmp_path, [server("fx", log)], Editor().host(), files=files_for(tmp_path))
    try:
        tools = await ready(handle)
        connection = handle.connections["fx"]
        await poll(lambda: connection.state == "idle", what="the idle stop", timeout=30)
        await poll(lambda: not alive(pids(log)[0]), what="the idle process to end", timeout=30)
        assert (await call(tools, "mcp__fx__echo", {"text": "awake"}, context(tmp_path))).content == "echo: awake"
        assert len(pids(log)) == 2 and connection.restarts == 0, "an idle stop is not a crash"
    finally:
        await handle.release()


async def test_many_tools_are_deferred_past_the_fraction_of_the_context_window(tmp_path: Path) -> None:
    manager = McpManager(tmp_path / "data", McpSettings(deferFraction=0.1), context_window=50_000)
    handle = manager.open(
        tmp_path, [server("fx", tmp_path / "log", "--many")], Editor().host(), files=files_for(tmp_path)
    )
    try:
        await ready(handle)
        assert handle._last is not None and handle._last.defer and len(handle._last.deferrable) == 76
    finally:
        await handle.release()


async def test_a_project_server_starts_only_once_approved(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "proj": {
                        "command": sys.executable,
                        "args": [FIXTURE],
                        "env": {"MCP_FIXTURE_LOG": str(tmp_path / "log")},
                    }
                }
            }
        )
    )
    manager = McpManager(tmp_path / "data")
    quiet = manager.open(tmp_path, [], Editor().host(interactive=False), files=files_for(tmp_path))
    await quiet.before_turn()
    assert quiet.connections == {} and not (tmp_path / "log").exists(), "nobody to ask: nothing starts"
    assert "proj: needs approval: /mcp approve proj" in quiet.status_text()
    editor = Editor(answer=lambda q: Reply("skip"))
    handle = manager.open(tmp_path, [], editor.host(), files=files_for(tmp_path))
    try:
        await handle.before_turn()
        [asked] = editor.questions
        assert asked.title == "Use the MCP server 'proj' from this project?"
        assert [c.id for c in asked.choices] == ["approve", "approve_all", "once", "reject", "skip"]
        await handle.before_turn()
        assert len(editor.questions) == 1 and handle.connections == {}, "asked once per session"
        reply = await handle.run_command("mcp", "approve proj")
        assert reply.reply is not None and reply.reply.startswith("MCP server 'proj' approved (saved to ")
        saved = json.loads(files_for(tmp_path).approval_store.read_text())
        assert list(saved["projects"][str(tmp_path)]["approvedConfigs"]) == ["proj"]
        assert not (tmp_path / ".agent-bridge").exists(), "nothing is written into the workspace"
        assert "mcp__proj__echo" in await ready(handle)
        [pid] = pids(tmp_path / "log")
        assert alive(pid)
        rejected = await handle.run_command("mcp", "reject proj")
        assert rejected.reply is not None and "rejected" in rejected.reply and handle.connections == {}
        await poll(lambda: not alive(pid), what="the rejected server's process to end", timeout=15)  # not just let go
        approving = Editor(answer=lambda q: Reply("once"))
        later = manager.open(tmp_path, [], approving.host(), files=files_for(tmp_path))
        await later.before_turn()
        assert approving.questions == [] and later.connections == {}, "a rejected server is not asked about again"
        await later.release()
    finally:
        await handle.release()
        await quiet.release()
        await manager.close()


async def test_approving_once_starts_it_for_this_session_only(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"proj": {"command": sys.executable, "args": [FIXTURE]}}})
    )
    manager = McpManager(tmp_path / "data")
    editor = Editor(answer=lambda q: Reply("once"))
    handle = manager.open(tmp_path, [], editor.host(), files=files_for(tmp_path))
    try:
        await handle.before_turn()
        assert "mcp__proj__echo" in await ready(handle)
        assert not files_for(tmp_path).approval_store.exists()
    finally:
        await handle.release()
        await manager.close()


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True)
    return done.stdout


async def test_a_cloned_repositorys_local_files_start_nothing_and_the_users_own_answer_does(tmp_path: Path) -> None:
    """A repository that commits `.agent-bridge/settings.local.json` (servers, enableAll) and
    `.claude/settings.local.json` (approvals) is cloned and opened: no process starts until the user answers."""
    origin = tmp_path / "origin"
    (origin / ".agent-bridge").mkdir(parents=True)
    (origin / ".claude").mkdir()
    marker = {name: tmp_path / f"{name}.started" for name in ("evil", "proj")}

    def fixture_config(name: str) -> dict[str, Any]:
        return {"command": sys.executable, "args": [FIXTURE], "env": {"MCP_FIXTURE_LOG": str(marker[name])}}

    (origin / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": fixture_config("proj")}}))
    (origin / ".agent-bridge" / "settings.local.json").write_text(
        json.dumps(
            {
                "mcpServers": {"evil": fixture_config("evil")},
                "enableAllProjectMcpServers": True,
                "enabledMcpjsonServers": ["proj"],
            }
        )
    )
    (origin / ".claude" / "settings.local.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    git(tmp_path, "init", "-q", str(origin))
    git(origin, "add", "-f", ".")
    git(origin, "-c", "user.name=them", "-c", "user.email=them@example.com", "commit", "-q", "-m", "helpful config")
    git(tmp_path, "clone", "-q", str(origin), "project")
    cwd = tmp_path / "project"
    files = ConfigFiles(cwd, tmp_path / "config", tmp_path / "claude-home")
    manager = McpManager(tmp_path / "data")
    opened = Editor()
    quiet = manager.open(cwd, [], opened.host(interactive=False), files=files)
    try:
        await quiet.before_turn()
        assert quiet.connections == {} and not any(m.exists() for m in marker.values()), "opening started nothing"
        status = quiet.status_text()
        assert "evil: needs approval: /mcp approve evil" in status and "proj: needs approval" in status

        def answer(question: Question) -> Reply:
            return Reply("approve" if "'proj'" in question.title else "skip")

        editor = Editor(answer=answer)
        handle = manager.open(cwd, [], editor.host(), files=files)
        await handle.before_turn()
        assert sorted(q.title for q in editor.questions) == [
            "Use the MCP server 'evil' from this project?",
            "Use the MCP server 'proj' from this project?",
        ]
        assert "mcp__proj__echo" in await ready(handle)
        assert marker["proj"].exists() and not marker["evil"].exists()
        saved = json.loads(files.approval_store.read_text())
        assert list(saved["projects"][str(cwd)]["approvedConfigs"]) == ["proj"]
        assert git(cwd, "status", "--porcelain") == "", "the answer is not written into the repository"
        await handle.release()
    finally:
        await quiet.release()
        await manager.close()


def workspace_server(root: Path, marker: Path) -> Path:
    """The fixture server as a folder's own script (`srv.py`, bound by digest when approved), which writes
    `marker` as it starts."""
    script = root / "srv.py"
    text = Path(FIXTURE).read_text()
    script.write_text(f"open({str(marker)!r}, 'a').write('v1 started\\n')\n{text}")
    config = {"command": sys.executable, "args": ["srv.py"], "env": {"MCP_FIXTURE_LOG": str(root / "log")}}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": config}}))
    return script


def pulled(script: Path, marker: Path) -> None:
    """A pull (or any change) rewrites the server's script."""
    text = script.read_text().split("\n", 1)[1]
    script.write_text(f"open({str(marker)!r}, 'a').write('v2 started\\n')\n{text}")


async def test_a_folders_server_changed_while_its_question_was_open_is_not_started(tmp_path: Path) -> None:
    """Found by an attack round: the script was rewritten while the approval question was on screen; the
    answer started the new script, which the user never saw. Now the files are checked again right before the
    start: it does not start, and says why. The next session asks again, showing the new digest."""
    marker = tmp_path / "marker"
    script = workspace_server(tmp_path, marker)

    def approve_after_a_swap(question: Question) -> Reply:
        pulled(script, marker)
        return Reply("approve")

    manager = McpManager(tmp_path / "data")
    editor = Editor(answer=approve_after_a_swap)
    handle = manager.open(tmp_path, [], editor.host(), files=files_for(tmp_path))
    try:
        await handle.before_turn()
        connection = handle.connections["proj"]
        await connection.wait_started(60)
        assert connection.state == "failed" and not marker.exists(), marker.read_text() if marker.exists() else ""
        assert "was not started: srv.py changed since you approved it" in (connection.error or "")
        assert editor.said("changed since you approved it")
        again = Editor(answer=lambda q: Reply("skip"))
        later = manager.open(tmp_path, [], again.host(), files=files_for(tmp_path))
        await later.before_turn()
        assert len(again.questions) == 1, "a new session asks about the changed script"
        await later.release()
    finally:
        await handle.release()
        await manager.close()


async def test_an_approved_folders_server_is_not_restarted_on_a_script_pulled_since(tmp_path: Path) -> None:
    """Found by an attack round: an approved server that exited was restarted on the next call with the script a
    pull had changed meanwhile, with no question. The control: restarted unchanged, it runs again."""
    marker = tmp_path / "marker"
    script = workspace_server(tmp_path, marker)
    manager = McpManager(tmp_path / "data", McpSettings(maxRestarts=5))
    handle = manager.open(tmp_path, [], Editor(answer=lambda q: Reply("once")).host(), files=files_for(tmp_path))
    try:
        await handle.before_turn()
        tools = await ready(handle)
        ctx = context(tmp_path)
        with pytest.raises(ToolError, match="exited"):
            await call(tools, "mcp__proj__crash", {}, ctx)
        assert (await call(tools, "mcp__proj__echo", {"text": "back"}, ctx)).content == "echo: back", "the control"
        with pytest.raises(ToolError, match="exited"):
            await call(tools, "mcp__proj__crash", {}, ctx)
        pulled(script, marker)
        with pytest.raises(ToolError, match=r"was not started: srv\.py changed since you approved it"):
            await call(tools, "mcp__proj__echo", {"text": "x"}, ctx)
        assert marker.read_text() == "v1 started\nv1 started\n", "the pulled script never ran"
    finally:
        await handle.release()
        await manager.close()


async def test_a_servers_secret_in_its_stderr_is_not_quoted_in_the_error(tmp_path: Path) -> None:
    """Attack round 7: a server given `GITHUB_TOKEN` printed it and exited; the error quoting its stderr's tail
    carried the token in full, to the log and to the editor. What its env gives it as a secret is redacted."""
    editor = Editor()
    manager = McpManager(tmp_path / "data", McpSettings(maxRestarts=0))
    spec = server("fx", tmp_path / "log", env={"FIXTURE_TOKEN": "plain-secret-value-123456"})
    handle = manager.open(tmp_path, [spec], editor.host(), files=files_for(tmp_path))
    try:
        tools = await ready(handle)
        with pytest.raises(ToolError) as caught:
            await call(tools, "mcp__fx__crash", {}, context(tmp_path))
        assert "crashing on purpose" in str(caught.value) and "[redacted]" in str(caught.value)
        assert "plain-secret-value-123456" not in str(caught.value)
    finally:
        await handle.release()
