"""A rewind writes only inside the workspace, exactly (bridge/checkpoints/files.py): a directory swapped for a link
to elsewhere after a checkpoint can't send a restored file (or a deletion) there; file names that are not UTF-8
survive the store, the log and the restore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.checkpoints import files
from bridge.checkpoints.recorder import Checkpoints, StepCall
from bridge.checkpoints.rewind import apply_rewind, plan_rewind


def test_a_restore_does_not_follow_a_link_on_the_way(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "d").symlink_to(outside)
    # The control: an ordinary write of that path lands outside the workspace.
    (root / "d" / "control.txt").write_text("x")
    assert (outside / "control.txt").exists()

    with pytest.raises(files.EscapeRefused):
        files.write(str(root), "d/x.txt", files.Entry(b"restored", "100644"))
    (outside / "victim.txt").write_text("keep me")
    files.remove(str(root), "d/victim.txt")
    assert not (outside / "x.txt").exists() and (outside / "victim.txt").read_text() == "keep me"


async def test_a_rewind_after_a_directory_became_a_link_writes_nothing_outside(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "d").mkdir()
    (root / "d" / "x.txt").write_text("original\n")
    checkpoints = Checkpoints.open(tmp_path / "data", root, "s", tell=lambda _t: None)
    checkpoints.turn_started("t1")
    async with checkpoints.step(StepCall("c1", "Bash", "rm -r d && ln -s ../outside d", "execute")):
        (root / "d" / "x.txt").unlink()
        (root / "d").rmdir()
        (root / "d").symlink_to(outside)

    plan = await plan_rewind(checkpoints, "t1")
    result = await apply_rewind(checkpoints, plan, {})
    await checkpoints.close()

    assert list(outside.iterdir()) == [], "nothing was written through the link"
    assert (root / "d" / "x.txt").read_text() == "original\n" and not (root / "d").is_symlink()
    assert "d/x.txt" in result.restored and "d" in result.restored


async def test_file_names_that_are_not_utf8_survive_a_rewind(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    name = b"caf\xe9 \xff.txt"  # Latin-1 bytes: not UTF-8
    checkpoints = Checkpoints.open(tmp_path / "data", root, "s", tell=lambda _t: None)
    checkpoints.turn_started("t1")
    async with checkpoints.step(StepCall("c1", "Bash", "make it", "execute")):
        with open(os.path.join(os.fsencode(root), name), "wb") as file:
            file.write(b"made\n")
    await checkpoints.close()
    reopened = Checkpoints.open(tmp_path / "data", root, "s", tell=lambda _t: None)  # the log read back
    [step] = reopened.log.steps
    assert [os.fsencode(c.path) for c in step.changes] == [name]

    await apply_rewind(reopened, await plan_rewind(reopened, "t1"), {})
    await reopened.close()
    assert os.listdir(os.fsencode(root)) == []
