"""What the VS Code panel reads off the wire (issues 24 and 25): each a real turn through `serve`."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient
from pytest_lsp.client import register_lsp_features

from bridge.offline import builtin_scenario
from bridge.server.jsonrpc import dict_converter
from tests.e2e.harness import feature, reject_once, running_editor, text_response, tool_response


async def test_a_permission_question_carries_the_tools_word_on_destructive(workspace: Path, data_dir: Path) -> None:
    """`toolCall._meta.destructive` is `Tool.is_destructive` of the call, so the panel needs no guess of its own:
    `rm -rf` and an overwrite say yes, a new file and a harmless command say no."""
    existing = workspace / "notes.txt"
    existing.write_text("keep me\n")
    calls = [
        ("Bash", {"command": "rm -rf build"}),
        ("Bash", {"command": "npm test"}),
        ("Write", {"file_path": str(existing), "content": "overwritten\n"}),  # read first: an overwrite may ask
        ("Write", {"file_path": str(workspace / "new.txt"), "content": "new\n"}),
    ]
    responses = [r for call in calls for r in (tool_response(call), text_response("ok"))]
    responses[4:4] = [tool_response(("Read", {"file_path": str(existing)}))]
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        editor.on_permission = reject_once
        sid = await editor.new_session()
        for _ in calls:
            await editor.prompt(sid, "go")
        said: list[Any] = [r["toolCall"].get("_meta", {}).get("destructive") for r in editor.permission_requests]
        assert said == [True, False, True, False]
        assert existing.read_text() == "keep me\n"


async def test_no_api_key_is_said_at_once_not_as_a_network_error(workspace: Path, data_dir: Path) -> None:
    """Without a key the bridge answers `auth_required` before it tries the API: the model (here unreachable)
    is never asked, and the message names the key. A slash command still runs without one."""
    async with running_editor(
        {"responses": [text_response("never")]},
        workspace,
        data_dir,
        env={"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    ) as editor:
        sid = await editor.new_session()
        started = time.monotonic()
        with pytest.raises(JsonRpcException) as raised:
            await editor.prompt(sid, "hello")
        assert time.monotonic() - started < 2
        assert raised.value.code == -32000  # ACP's auth_required
        assert "No Anthropic API key" in str(raised.value.message) and "Set API Key" in str(raised.value.message)
        assert editor.model.valid_requests == []
        assert await editor.prompt(sid, "/status") == {"stopReason": "end_turn"}


async def test_a_loaded_session_answers_its_model(workspace: Path, data_dir: Path) -> None:
    """`session/load`'s answer has `models` (VS Code's header and picker show the loaded session's model)."""
    async with running_editor({"responses": [text_response("hi")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "hello")
    async with running_editor({"responses": [text_response("again")]}, workspace, data_dir) as editor:
        answer = await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert answer["models"]["currentModelId"]
        assert any(m["modelId"] == answer["models"]["currentModelId"] for m in answer["models"]["availableModels"])


async def test_the_offline_demo_model_says_so_and_costs_nothing(workspace: Path, data_dir: Path) -> None:
    """`serve --offline`: the session's model is the offline demo model by name, and usage has no cost."""
    client = LanguageClient(converter_factory=dict_converter)
    register_lsp_features(client)
    updates: list[dict[str, Any]] = []

    @feature(client, "session/update")
    def on_update(ls: LanguageClient, params: dict[str, Any]) -> None:
        updates.append(params["update"])

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        AGENT_BRIDGE_DATA_DIR=str(data_dir), AGENT_BRIDGE_CONFIG_DIR=str(data_dir / "config"), HOME=str(data_dir)
    )
    await client.start_io(sys.executable, "-m", "bridge.cli.main", "serve", "--offline", "playground", env=env)
    try:
        await client.initialize_session(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri())
        )
        answer = await client.protocol.send_request_async("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert answer["models"]["currentModelId"] == "offline-demo"
        assert [m["name"] for m in answer["models"]["availableModels"]] == ["Offline demo model"]
        await client.protocol.send_request_async(
            "session/prompt", {"sessionId": answer["sessionId"], "prompt": [{"type": "text", "text": "hello"}]}
        )
        usage = [u for u in updates if u["sessionUpdate"] == "usage_update"]
        assert usage and all("cost" not in u and u["_meta"]["offline"] is True for u in usage)
    finally:
        await asyncio.wait_for(client.shutdown_session(), 15)
        await client.stop()


async def test_the_offline_bridge_takes_no_other_model_and_a_claude_bridge_not_the_offline_one(
    workspace: Path, data_dir: Path
) -> None:
    """A restart between the offline demo model and Claude (“Try it offline”, then a key) reloads the session and
    puts its model back: the offline bridge refuses a Claude model (the panel showed `claude-sonnet-4-5` on the
    demo model) and a Claude bridge refuses `offline-demo` (every request would have asked the API for a model
    named so). Each refusal is Invalid params saying why; the session keeps the model it had."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        AGENT_BRIDGE_DATA_DIR=str(data_dir), AGENT_BRIDGE_CONFIG_DIR=str(data_dir / "config"), HOME=str(data_dir)
    )
    client = LanguageClient(converter_factory=dict_converter)
    register_lsp_features(client)
    await client.start_io(sys.executable, "-m", "bridge.cli.main", "serve", "--offline", "playground", env=env)
    try:
        await client.initialize_session(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri())
        )
        sid = (await client.protocol.send_request_async("session/new", {"cwd": str(workspace), "mcpServers": []}))[
            "sessionId"
        ]
        with pytest.raises(JsonRpcException) as refused:
            await client.protocol.send_request_async(
                "session/set_model", {"sessionId": sid, "modelId": "claude-sonnet-4-5"}
            )
        assert refused.value.code == -32602
        assert "offline demo model" in str(refused.value.message) and "offline-demo" in str(refused.value.message)
        assert (
            await client.protocol.send_request_async("session/set_model", {"sessionId": sid, "modelId": "offline-demo"})
            == {}
        )
        loaded = await client.protocol.send_request_async(
            "session/load", {"sessionId": sid, "cwd": str(workspace), "mcpServers": []}
        )
        assert loaded["models"]["currentModelId"] == "offline-demo"
    finally:
        await asyncio.wait_for(client.shutdown_session(), 15)
        await client.stop()
    async with running_editor({"responses": [text_response("on claude")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        with pytest.raises(JsonRpcException) as refused:
            await editor.request("session/set_model", {"sessionId": sid, "modelId": "offline-demo"})
        assert refused.value.code == -32602 and "--offline" in str(refused.value.message)
        await editor.prompt(sid, "hello")
        assert editor.model.valid_requests[-1].body["model"] == "claude-sonnet-4-5"


async def test_the_offline_tour_shows_a_whole_task(workspace: Path, data_dir: Path) -> None:
    """`tour` on the playground: a plan, a look around, a new file and an edit that ask with their diffs, a
    command that asks, the plan ticked off and a summary — real tools on real files."""
    async with running_editor(builtin_scenario("playground", delay_ms=0), workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "tour") == {"stopReason": "end_turn"}
        asked = [
            (r["toolCall"]["kind"], [c["type"] for c in r["toolCall"].get("content") or []])
            for r in editor.permission_requests
        ]
        # each question says what it is about in words first (the question helper's wire shape), then the diff
        assert asked == [("edit", ["content", "diff"]), ("edit", ["content", "diff"]), ("execute", ["content"])], asked
        assert (workspace / "tour_demo.py").read_text().count('f"Hello, {name}!"') == 1
        plans = editor.of_kind("plan", sid)
        assert len(plans) >= 4 and all(e["status"] == "completed" for e in plans[-1]["entries"])
        said = editor.text(sid)
        assert "offline demo model" in said and "Hello, tour!" in said and "That was the tour" in said


async def test_the_offline_tour_says_what_was_rejected_and_goes_on(workspace: Path, data_dir: Path) -> None:
    async with running_editor(builtin_scenario("playground", delay_ms=0), workspace, data_dir) as editor:

        async def reject_the_edit(params: dict[str, Any]) -> dict[str, Any]:
            is_edit = params["toolCall"]["rawInput"].get("old_string") is not None
            return {"outcome": {"outcome": "selected", "optionId": "reject_once" if is_edit else "allow_once"}}

        editor.on_permission = reject_the_edit
        sid = await editor.new_session()
        assert await editor.prompt(sid, "tour") == {"stopReason": "end_turn"}
        assert (workspace / "tour_demo.py").read_text().count('"Hello, " + name') == 1
        assert "You rejected the edit" in editor.text(sid)


async def test_the_playground_says_it_sees_a_pasted_image(workspace: Path, data_dir: Path) -> None:
    """An image prompt reaches the model as an image block: the playground names what it got."""
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    async with running_editor(builtin_scenario("playground", delay_ms=0), workspace, data_dir) as editor:
        sid = await editor.new_session()
        prompt = [{"type": "text", "text": "what is this?"}, {"type": "image", "mimeType": "image/png", "data": png}]
        answer = await editor.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert answer == {"stopReason": "end_turn"}
        assert "I see 1 image (image/png)" in editor.text(sid)
        body = editor.model.valid_requests[-1].body
        assert any(b.get("type") == "image" for b in body["messages"][-1]["content"])
