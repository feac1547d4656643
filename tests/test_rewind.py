"""`/rewind` (issue 23 item 3) through a real session: the offline model's calls run for real, then the user rewinds
the code, the conversation, or both, to before an earlier prompt — confirming a plan that names the conflicts and
what can't be undone. The transcript records the rewind as a line of its own; a reload shows the rewound
conversation; the next request starts with a prefix the model has seen (the prompt cache holds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridge.display import TextContent
from bridge.loop.events import LoopEvent, UserText
from bridge.loop.permission import deny_all
from bridge.permissions.types import PermissionAnswer
from bridge.session import Frontend
from tests.checkpoint_run import Run, checkpoint_run, say, step, use

TWO_PROMPTS = [
    step(use("Write", file_path="{ws}/a.txt", content="one\n")),
    say("wrote a"),
    step(use("Edit", file_path="{ws}/a.txt", old_string="one", new_string="two")),
    step(use("Bash", command="echo b > b.txt && rm keep.txt && curl -s http://127.0.0.1:9 || true")),
    say("changed a and b"),
    say("third answer"),
]


def _responses(ws: Path) -> list[dict[str, Any]]:
    responses: list[dict[str, Any]] = json.loads(json.dumps(TWO_PROMPTS).replace("{ws}", str(ws)))
    return responses


async def _two_prompts(run: Run) -> None:
    (run.workspace / "keep.txt").write_text("precious\n")
    assert await run.prompt("write a") == "end_turn"
    assert await run.prompt("change a and make b") == "end_turn"


def _prompts(messages: list[dict[str, Any]]) -> list[str]:
    return [b["text"] for m in messages if m["role"] == "user" for b in m["content"] if b["type"] == "text"]


def _strip_cache(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_cache(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache(v) for v in value]
    return value


async def test_rewind_both_restores_the_files_and_the_conversation_and_keeps_the_cache_prefix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        await _two_prompts(run)
        before_rewind = json.loads(json.dumps(run.session.conversation.messages))
        assert await run.prompt("/rewind") == "end_turn"
        assert "1. write a" in run.said() and "2. change a and make b — 3 files changed since" in run.said()

        assert await run.prompt("/rewind 2") == "end_turn"

        asked = run.asked[-1]
        assert asked.tool_name == "Rewind"
        shown = "\n".join(d.text for d in asked.display if isinstance(d, TextContent))
        assert "restore a.txt" in shown and "delete b.txt" in shown and "recreate keep.txt" in shown
        assert "curl" in shown and "not undone" in shown, "the command's effects outside are named before"
        assert (ws / "a.txt").read_text() == "one\n" and not (ws / "b.txt").exists()
        assert (ws / "keep.txt").read_text() == "precious\n"
        cut = next(i for i, m in enumerate(before_rewind) if m["content"][0].get("text") == "change a and make b")
        assert run.session.conversation.messages == before_rewind[:cut]
        assert "back to before prompt 2" in run.said()

        assert await run.prompt("third") == "end_turn"
        earlier, latest = run.model.valid_requests[2].body, run.model.valid_requests[-1].body
        assert _strip_cache(latest["messages"][:cut]) == _strip_cache(earlier["messages"][:cut]), "a seen prefix"
        assert latest["system"] == earlier["system"] and latest["tools"] == earlier["tools"]
        assert _prompts(latest["messages"]) == ["write a", "third"]
        transcript = run.session.transcript
        assert transcript is not None
        records = [json.loads(line) for line in transcript.path.read_text().splitlines()]

    rewinds = [r for r in records if r["type"] == "rewind"]
    assert len(rewinds) == 1 and rewinds[0]["conversation"] and rewinds[0]["code"]
    starts = [r for r in records if r.get("event") == "start"]
    assert rewinds[0]["turn"] == starts[1]["id"], "the rewind names the turn of prompt 2"
    messages_written = [r for r in records if r["type"] == "message"]
    assert len(messages_written) >= len(before_rewind) + 2, "the transcript only grew: what came before stays"


async def test_a_reloaded_session_shows_the_rewound_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        await _two_prompts(run)
        assert await run.prompt("/rewind 2 conversation") == "end_turn"
        assert (ws / "b.txt").read_text() == "b\n", "conversation only: the code stays"
        assert await run.prompt("third") == "end_turn"
        session_id = run.session.id
        await run.agent.close_session(session_id)
        events: list[LoopEvent] = []
        reopened = run.agent.reopen(session_id, Frontend(emit=events.append, prompter=deny_all), [], lambda _s: None)

    said = [e.text for e in reopened.replay if isinstance(e, UserText)]
    assert said == ["write a", "third"]
    assert _prompts(reopened.session.conversation.messages) == ["write a", "third"]


async def test_a_file_the_user_changed_since_is_a_conflict_kept_unless_they_choose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        await _two_prompts(run)
        (ws / "a.txt").write_text("two\nmine\n")  # the user's edit after the agent's
        assert await run.prompt("/rewind 1 code") == "end_turn"
        shown = "\n".join(d.text for d in run.asked[-1].display if isinstance(d, TextContent))
        assert "a.txt: changed outside the agent's steps" in shown
        assert (ws / "a.txt").read_text() == "two\nmine\n", "kept: never silently overwritten"
        assert not (ws / "b.txt").exists()
        assert "Kept a.txt" in run.said()

        assert await run.prompt("/rewind 1 code merge") == "end_turn"
        assert (ws / "a.txt").read_text() == "two\nmine\n" and "overlap" in run.said(), "no clean merge: kept"
        assert await run.prompt("/rewind 1 code overwrite") == "end_turn"
        assert not (ws / "a.txt").exists(), "the user chose: back to before prompt 1 (no a.txt)"

        run.answers.append(PermissionAnswer("reject_once"))
        (ws / "b.txt").write_text("untouched\n")
        assert await run.prompt("/rewind 1 code") == "end_turn"
        assert "Not rewound" in run.said() and (ws / "b.txt").read_text() == "untouched\n"


async def test_merge_takes_the_agents_changes_out_of_the_users_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "code.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
    responses = [
        step(use("Read", file_path=str(ws / "code.py"))),
        step(use("Edit", file_path=str(ws / "code.py"), old_string="b = 2", new_string="b = 20")),
        say("edited"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("change b") == "end_turn"
        assert (ws / "code.py").read_text() == "a = 1\nb = 20\nc = 3\nd = 4\ne = 5\n"
        (ws / "code.py").write_text("a = 1\nb = 20\nc = 3\nd = 4\ne = 50\n")  # the user changes e
        assert await run.prompt("/rewind 1 code merge") == "end_turn"

        said = run.said()
    assert (ws / "code.py").read_text() == "a = 1\nb = 2\nc = 3\nd = 4\ne = 50\n", said
