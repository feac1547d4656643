"""Sessions that last: compaction, prompt-cache stability, usage and cost, memory files, commands."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from bridge.loop.compact import CONTINUATION
from bridge.model.pricing import cost_usd
from bridge.model.types import Usage
from bridge.offline import RecordedRequest, Scenario
from bridge.offline.validation import history_errors
from tests.e2e.harness import poll, running_editor, text_response


def _last_text(request: RecordedRequest) -> str:
    blocks = request.body["messages"][-1]["content"]
    texts = [b["text"] for b in blocks if b.get("type") == "text"]
    return texts[-1] if texts else ""


def summarizing(request: RecordedRequest) -> dict[str, Any]:
    """Answers summary requests with a summary, everything else with a short text."""
    if _last_text(request).startswith("[compaction]"):
        return text_response("SUMMARY: the user asked about apples; decided on green ones; no files touched.")
    return text_response(f"answer to: {_last_text(request)[:40]}")


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


async def test_compact_command_then_the_conversation_goes_on(workspace: Path, data_dir: Path) -> None:
    async with running_editor(Scenario.from_responder(summarizing), workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "tell me about apples")
        await editor.prompt(sid, "which colour?")
        assert await editor.prompt(sid, "/compact keep the colour") == {"stopReason": "end_turn"}
        summary_request = editor.model.valid_requests[-1]
        assert "keep the colour" in _last_text(summary_request)
        assert "Compacted 4 messages" in editor.text(sid)
        await editor.prompt(sid, "and now?")
        messages = editor.last_request_messages()
        assert history_errors(messages) == []
        first = messages[0]["content"][0]["text"]
        assert first.startswith(CONTINUATION) and "green ones" in first
        assert "tell me about apples" not in json.dumps(messages)
        transcript = (data_dir / "sessions" / f"{sid}.jsonl").read_text()
        assert "tell me about apples" in transcript, "the transcript keeps the full history"


async def test_compaction_triggers_on_usage(workspace: Path, data_dir: Path) -> None:
    env = {"AGENT_BRIDGE_CONTEXT_WINDOW": "2000", "AGENT_BRIDGE_COMPACT_THRESHOLD": "0.5"}
    async with running_editor(Scenario.from_responder(summarizing), workspace, data_dir, env=env) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "apples " * 1000)  # ~1,750 tokens: over half of the 2,000-token window
        await editor.prompt(sid, "next question")
        bodies = [r.body for r in editor.model.valid_requests]
        assert _last_text(editor.model.valid_requests[1]).startswith("[compaction]")
        final = bodies[-1]["messages"]
        assert final[0]["content"][0]["text"].startswith(CONTINUATION)
        assert final[-1]["content"][-1]["text"] == "next question"
        assert editor.model.rejected == []


async def test_request_prefix_is_byte_stable_over_20_turns(workspace: Path, data_dir: Path) -> None:
    responses = []
    for turn in range(20):
        if turn % 3 == 1:  # some turns use a tool, so tool_use/tool_result pairs are in the prefix too
            todos = [{"content": f"step {turn}", "status": "in_progress", "activeForm": f"doing {turn}"}]
            responses.append(
                {
                    "content": [{"type": "tool_use", "name": "TodoWrite", "input": {"todos": todos}}],
                    "stop_reason": "tool_use",
                }
            )
        responses.append(text_response(f"answer {turn}"))
    async with running_editor({"responses": responses}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        for turn in range(20):
            await editor.prompt(sid, f"question {turn}")
        requests = editor.model.valid_requests
        assert len(requests) == len(responses)
        for before, after in itertools.pairwise(requests):
            a, b = json.loads(before.raw), json.loads(after.raw)
            assert json.dumps(a["system"]) == json.dumps(b["system"])
            assert json.dumps(a["tools"]) == json.dumps(b["tools"])
            prefix = json.dumps(_strip_cache(a["messages"]))[:-1]
            assert json.dumps(_strip_cache(b["messages"])).startswith(prefix)
            marks = [blk for m in b["messages"] for blk in m["content"] if "cache_control" in blk]
            assert marks == [b["messages"][-1]["content"][-1]], "one moving breakpoint: the latest block"
        assert editor.model.rejected == []


async def test_usage_and_cost_per_response(workspace: Path, data_dir: Path) -> None:
    async with running_editor(
        {"responses": [text_response("one"), text_response("two")]}, workspace, data_dir
    ) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "a")
        await editor.prompt(sid, "b")
        updates = editor.of_kind("usage_update", sid)
        assert len(updates) == 2
        total = 0.0
        for update in updates:
            meta = update["_meta"]
            usage = Usage(meta["inputTokens"], meta["outputTokens"], meta["cacheReadTokens"], meta["cacheWriteTokens"])
            assert usage.input_tokens > 0 and usage.output_tokens > 0
            total += cost_usd("claude-sonnet-4-5", usage)
            assert abs(update["_meta"]["responseCost"] - cost_usd("claude-sonnet-4-5", usage)) < 1e-6
            assert update["used"] == usage.context_tokens and update["size"] == 200_000
        assert abs(updates[-1]["cost"]["amount"] - total) < 1e-6 and updates[-1]["cost"]["currency"] == "USD"
        await editor.prompt(sid, "/cost")
        assert f"${total:.4f}" in editor.text(sid)


async def test_memory_files_and_environment_are_in_the_first_request(workspace: Path, data_dir: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / "AGENTS.md").write_text("Always answer in haiku.")
    sub = workspace / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").write_text("Tests live in tests/.")
    async with running_editor({"responses": [text_response("ok")]}, workspace, data_dir) as editor:
        sid = await editor.new_session(sub)
        await editor.prompt(sid, "hi")
        system = editor.model.valid_requests[0].body["system"][0]["text"]
        assert "Always answer in haiku." in system and "Tests live in tests/." in system
        assert system.index("haiku") < system.index("Tests live")
        assert f"Working directory: {sub}" in system and "Git repository: yes" in system


async def test_custom_command_with_arguments(workspace: Path, data_dir: Path) -> None:
    commands = workspace / ".agent-bridge" / "commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs.")
    async with running_editor({"responses": [text_response("looks fine")]}, workspace, data_dir) as editor:
        sid = await editor.new_session()
        [advert] = await poll(lambda: editor.of_kind("available_commands_update", sid), what="commands")
        names = {c["name"]: c for c in advert["availableCommands"]}
        assert {"compact", "clear", "cost", "status", "mode", "review"} <= set(names)
        assert names["review"]["description"] == "Review a file"
        await editor.prompt(sid, "/review src/app.py")
        assert _last_text(editor.model.valid_requests[0]) == "Review src/app.py for bugs."
        await editor.prompt(sid, "/mode plan")
        assert editor.of_kind("current_mode_update", sid)[-1]["currentModeId"] == "plan"


async def test_the_offline_builtin_scenarios_answer_compaction(workspace: Path, data_dir: Path) -> None:
    from bridge.loop.compact import SUMMARY_REQUEST
    from bridge.offline.builtins.common import COMPACTION_MARK

    assert SUMMARY_REQUEST.startswith(COMPACTION_MARK), "the offline model recognizes the bridge's request"
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "hello there")
        await editor.prompt(sid, "/compact")
        await editor.prompt(sid, "what now?")
        first = editor.last_request_messages()[0]["content"][0]["text"]
        assert first.startswith(CONTINUATION) and "user: hello there" in first


async def test_status_mode_and_clear_answer_without_the_model(workspace: Path, data_dir: Path) -> None:
    async with running_editor(
        {"responses": [text_response("one"), text_response("fresh")]}, workspace, data_dir
    ) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "first question")
        shown = len(editor.text(sid))
        assert await editor.prompt(sid, "/status") == {"stopReason": "end_turn"}
        status = editor.text(sid)[shown:]
        assert "Mode: default" in status and f"Working directory: {workspace}" in status and "Messages: 2" in status
        assert "\n- Mode: default\n" in status  # a list: shown as markdown, lines alone would run together
        assert "- Model: claude-" in status and "offline demo" not in status  # (the model is another process's)
        await editor.prompt(sid, "/mode")
        assert "(one of default, acceptEdits, plan, bypassPermissions, dontAsk)" in editor.text(sid)
        await editor.prompt(sid, "/mode yolo")
        assert "unknown permission mode 'yolo'" in editor.text(sid)
        await editor.prompt(sid, "/clear")
        assert editor.text(sid).endswith("Started a new, empty conversation.")
        await editor.prompt(sid, "after clearing")
        assert len(editor.model.valid_requests) == 2, "the commands never reached the model"
        assert [m["content"][0]["text"] for m in editor.last_request_messages()] == ["after clearing"]
