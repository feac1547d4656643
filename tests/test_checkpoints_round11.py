"""Attack round 11 on checkpoints and rewind (each found by a helper in real CLI sessions, each proven here by what
a rewind does to the files):

- an Edit or Write through a link inside the workspace changed the file the link leads to, but the step named
  only the link: `/changes` and the rewind never saw the change, and the backdoor stayed after "Restored";
- a file the store had left out (over the size limit) that a command rewrote was planned as "delete" (no tree
  held it before) and deleted by the rewind, with no word that its earlier version was never kept;
- with the data dir inside the workspace (a session in the home folder), the store snapshotted itself at every
  step, and a rewind deleted its own objects;
- a confirm applied the plan as it was at the confirm, not as shown: a step recorded after the preview was
  undone unseen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge import history
from bridge.checkpoints.store import SessionIndex, Store
from bridge.display import TextContent
from tests.checkpoint_run import checkpoint_run, say, step, use

APP = "def check(pw):\n    return pw == SECRET\n"


def shown(run_asked: list[object]) -> str:
    asked = run_asked[-1]
    return "\n".join(d.text for d in getattr(asked, "display", []) if isinstance(d, TextContent))


async def test_an_edit_through_a_link_is_the_step_of_the_file_it_leads_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    responses = [
        step(use("Read", file_path=f"{ws}/CHANGELOG")),
        step(use("Edit", file_path=f"{ws}/CHANGELOG", old_string="return pw == SECRET", new_string="return True")),
        say("edited"),
        say("rewound"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        (ws / "src").mkdir()
        (ws / "src" / "app.py").write_text(APP)
        (ws / "CHANGELOG").symlink_to("src/app.py")
        assert await run.prompt("edit the changelog") == "end_turn"
        assert (ws / "src" / "app.py").read_text() != APP  # the edit went through the link
        assert await run.prompt("/rewind 1") == "end_turn"
        assert "restore src/app.py" in shown(list(run.asked)), shown(list(run.asked))
    assert (ws / "src" / "app.py").read_text() == APP
    assert (ws / "CHANGELOG").is_symlink()


async def test_a_file_left_out_for_its_size_is_not_deleted_by_a_rewind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    responses = [step(use("Bash", command="printf 'id,value\\n' > data.csv")), say("wrote"), say("rewound")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        (ws / "data.csv").write_bytes(b"1,2\n" * (3 * 1024 * 1024))  # 12 MiB: over the store's limit
        assert await run.prompt("shrink it") == "end_turn"
        assert (ws / "data.csv").read_text() == "id,value\n"
        assert await run.prompt("/rewind 1") == "end_turn"
        text = shown(list(run.asked)) if run.asked else run.said()
        assert "delete data.csv" not in text, text
        assert "data.csv" in text and "not in the checkpoints" in text, text
    assert (ws / "data.csv").read_text() == "id,value\n"  # left as it is: what it was is in no checkpoint


@pytest.mark.parametrize("where", ["inside", "the workspace"])
def test_the_data_dir_in_the_workspace_is_not_snapshotted(tmp_path: Path, where: str) -> None:
    """Inside the workspace (a session in the home folder), or the workspace itself (attack round 12): what the
    bridge makes there is no change of anyone's."""
    ws = tmp_path / "home"
    data = ws / ".local" / "share" / "agent-bridge" if where == "inside" else ws
    data.mkdir(parents=True)
    (ws / "notes.txt").write_text("n\n")
    store = Store.for_workspace(data, ws)
    index = SessionIndex(store, "s1")
    first = index.snapshot()
    (data / "sessions").mkdir()
    (data / "sessions" / "s1.jsonl").write_text("{}\n")
    (ws / "notes.txt").write_text("m\n")
    later = index.snapshot()
    changed = [c.path for c in store.diff(first.tree, later.tree)]
    assert changed == ["notes.txt"], changed
    listed = store.run("ls-tree", "-r", "--name-only", later.tree, index=None).stdout.decode().split()
    assert listed == ["notes.txt"], listed[:5]


async def test_a_confirm_applies_the_plan_that_was_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    responses = [
        step(use("Write", file_path=f"{ws}/a.txt", content="1\n")),
        say("one"),
        step(use("Write", file_path=f"{ws}/b.txt", content="2\n")),
        say("two"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("one") == "end_turn"
        preview = await history.preview_rewind(run.session, 1, "code")
        assert preview.code is not None and [f.path for f in preview.code.files] == ["a.txt"]
        assert await run.prompt("two") == "end_turn"  # a step the preview never showed
        outcome = await history.rewind(run.session, preview)
    assert outcome.code is not None
    assert not (ws / "a.txt").exists()  # shown: done
    assert (ws / "b.txt").read_text() == "2\n"  # not shown: kept, and said
    assert any(path == "b.txt" and "since the plan was shown" in why for path, why in outcome.code.kept)


# --- attack round 12: round 11's fixes attacked again ----------------------------------------------------------


async def test_a_file_a_changed_gitignore_uncovers_is_not_deleted_by_a_rewind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    responses = [step(use("Bash", command="sed -i /env/d .gitignore && echo 'x=1' >> app.py")), say("ok"), say("back")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        (ws / ".gitignore").write_text("*.env\n")
        (ws / "secrets.env").write_text("TOKEN=user\n")  # the user's, never stored: ignored
        (ws / "app.py").write_text("x=0\n")
        assert await run.prompt("tidy") == "end_turn"
        assert await run.prompt("/rewind 1") == "end_turn"
        text = shown(list(run.asked))
        assert "delete secrets.env" not in text and "secrets.env" in text, text
    assert (ws / "secrets.env").read_text() == "TOKEN=user\n"
    assert (ws / "app.py").read_text() == "x=0\n" and (ws / ".gitignore").read_text() == "*.env\n"


async def test_a_conflict_shown_is_kept_even_when_it_is_no_conflict_at_the_confirm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    responses = [step(use("Write", file_path=f"{ws}/a.txt", content="agent\n")), say("one")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("one") == "end_turn"
        (ws / "a.txt").write_text("agent, then mine\n")  # the user's edit after the agent's: a conflict
        preview = await history.preview_rewind(run.session, 1, "code")
        assert preview.code is not None and [f.path for f in preview.code.conflicts] == ["a.txt"]
        (ws / "a.txt").write_text("agent\n")  # gone again before the confirm
        outcome = await history.rewind(run.session, preview)  # no decision: keep
    assert outcome.code is not None and (ws / "a.txt").read_text() == "agent\n"
    assert [path for path, _why in outcome.code.kept] == ["a.txt"]
