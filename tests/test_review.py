"""Review that doesn't block (issue 23 item 4): after the agent worked (acceptEdits: nothing asked of its edits),
the user sees each turn's and the session's changes — by any tool or command — as diffs, and keeps or undoes them
per file and per hunk, on top of whatever the files are now."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.checkpoint_commands import CHANGES_USAGE
from bridge.checkpoints.log import Step
from bridge.checkpoints.review import Address, ReviewError, keep, undo, view
from bridge.display import Diff, TextContent
from bridge.loop.events import ToolCallFinished, ToolCallStarted
from tests.checkpoint_run import Run, checkpoint_run, say, step, use

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def _responses(ws: Path) -> list[dict[str, object]]:
    old = "line 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n"
    new = "line 2 changed\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8 changed\n"
    return [
        step(use("Write", file_path=str(ws / "f.txt"), content=LINES)),
        step(use("Bash", command="printf '\\0\\1\\2' > g.bin && sed -i 's/old/new/' h.txt && chmod +x run.sh")),
        say("first"),
        step(use("Read", file_path=str(ws / "f.txt"))),
        step(use("Edit", file_path=str(ws / "f.txt"), old_string=old, new_string=new)),
        say("second"),
    ]


async def _worked(run: Run) -> tuple[str, str]:
    (run.workspace / "h.txt").write_text("old text\n")
    (run.workspace / "run.sh").write_text("echo\n")
    assert await run.prompt("make things") == "end_turn"
    first = run.session.turn_id
    assert await run.prompt("change f") == "end_turn"
    second = run.session.turn_id
    assert first is not None and second is not None
    return first, second


async def test_a_turn_and_the_session_show_every_change_by_any_tool_or_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        first, second = await _worked(run)
        session = {r.path: r for r in await view(run.session.checkpoints)}
        turn_one = {r.path: r for r in await view(run.session.checkpoints, first)}
        turn_two = {r.path: r for r in await view(run.session.checkpoints, second)}
        assert await run.prompt("/changes 2") == "end_turn"
        events = list(run.events)
        answer = run.said()
    # The answer is shown as markdown (the terminal, the panel): it names the files, the card has the diffs; the
    # diff's own lines would become list items and run together
    assert answer == f"Changes in that prompt: 1 file:\n\n- `f.txt` (modified, 2 hunks)\n\n{CHANGES_USAGE}", answer

    assert set(session) == {"f.txt", "g.bin", "h.txt", "run.sh"}
    assert session["f.txt"].status == "added" and session["f.txt"].new_text == turn_two["f.txt"].new_text
    assert session["g.bin"].binary and session["g.bin"].hunks == []
    assert session["run.sh"].status == "mode" and (session["run.sh"].old.mode, session["run.sh"].new.mode) == (
        "100644",
        "100755",
    )
    assert session["h.txt"].old_text == "old text\n" and session["h.txt"].new_text == "new text\n"
    assert [s.tool for s in session["h.txt"].steps] == ["Bash"]
    assert set(turn_one) == {"f.txt", "g.bin", "h.txt", "run.sh"} and set(turn_two) == {"f.txt"}
    assert turn_two["f.txt"].old_text == LINES and [(h.old_start, h.new_start) for h in turn_two["f.txt"].hunks] == [
        (1, 1),
        (7, 7),
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted) and e.name == "Changes"]
    finished = [e for e in events if isinstance(e, ToolCallFinished) and e.tool_call_id == started[0].tool_call_id]
    assert isinstance(finished[0].display[0], Diff) and finished[0].display[0].path.endswith("/f.txt")
    assert "hunk #2" in finished[0].text and "line 8 changed" in finished[0].text


async def test_undo_a_hunk_on_top_of_the_users_edit_and_refuse_a_stale_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        _first, second = await _worked(run)
        checkpoints = run.session.checkpoints
        hunks = (await view(checkpoints, second))[0].hunks
        text = (ws / "f.txt").read_text()
        (ws / "f.txt").write_text(text.replace("line 10", "line 10 mine"))  # the user's own edit

        with pytest.raises(ReviewError, match="changed since it was shown"):
            await undo(checkpoints, second, Address("f.txt", 0, "not-its-id"))
        result = await undo(checkpoints, second, Address("f.txt", 0, hunks[0].id))

        assert result.done == [("f.txt", 0)] and result.conflicts == []
        assert (ws / "f.txt").read_text() == LINES.replace("line 8", "line 8 changed").replace(
            "line 10", "line 10 mine"
        )
        session_view = {r.path: r for r in await view(checkpoints)}
        assert "line 2 changed" not in (session_view["f.txt"].new_text or ""), "the session's view follows the undo"
        assert "line 10 mine" not in (session_view["f.txt"].new_text or ""), "the user's edit is not the agent's"
        review_steps = [s for s in checkpoints.log.entries if isinstance(s, Step) and s.kind == "review"]
        assert len(review_steps) == 1 and [c.path for c in review_steps[0].changes] == ["f.txt"]


async def test_keep_settles_a_change_and_undo_of_a_whole_file_asks_before_losing_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        await _worked(run)
        checkpoints = run.session.checkpoints

        kept = await keep(checkpoints, None, Address("h.txt"))
        assert kept.done == [("h.txt", None)] and (ws / "h.txt").read_text() == "new text\n"
        assert "h.txt" not in {r.path for r in await view(checkpoints)}

        (ws / "g.bin").write_bytes(b"\0mine")
        refused = await undo(checkpoints, None, Address("g.bin"))
        assert refused.done == [] and "changed since" in refused.conflicts[0][1]
        assert (ws / "g.bin").read_bytes() == b"\0mine"
        forced = await undo(checkpoints, None, Address("g.bin"), overwrite=True)
        assert forced.done == [("g.bin", None)] and not (ws / "g.bin").exists()

        undone = await undo(checkpoints, None, Address("run.sh"))
        assert undone.done == [("run.sh", None)] and not (ws / "run.sh").stat().st_mode & 0o100

        everything = await undo(checkpoints, None, Address())
        assert everything.done == [("f.txt", None)] and not (ws / "f.txt").exists()
        assert await view(checkpoints) == []


async def test_changes_as_a_slash_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, _responses(ws)) as run:
        await _worked(run)
        assert await run.prompt("/changes 2 undo f.txt#2") == "end_turn"
        assert "Undid: f.txt#2." in run.said()
        assert "line 8 changed" not in (ws / "f.txt").read_text() and "line 2 changed" in (ws / "f.txt").read_text()
        assert await run.prompt("/changes keep all") == "end_turn"
        assert "Kept:" in run.said()
        assert await run.prompt("/changes") == "end_turn"
        assert "No changes of the agent's" in run.said()
        assert not any(
            isinstance(d, TextContent) for e in run.events if isinstance(e, ToolCallFinished) for d in e.display
        )
