"""A rewind writes only inside the workspace, exactly (bridge/checkpoints/files.py): a directory swapped for a link
to elsewhere after a checkpoint can't send a restored file (or a deletion) there; file names that are not UTF-8
survive the store, the log and the restore."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import pytest

from bridge.checkpoints import files
from bridge.checkpoints.recorder import Checkpoints, StepCall
from bridge.checkpoints.rewind import apply_rewind, plan_rewind
from tests.file_races import BACKENDS, Flipper, use_backend


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every safefs back end (the portable one is what Windows runs, where `dir_fd` is missing)."""
    return use_backend(str(request.param), monkeypatch)


def test_a_restore_does_not_follow_a_link_on_the_way(backend: str, tmp_path: Path) -> None:
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


async def test_a_rewind_after_a_directory_became_a_link_writes_nothing_outside(backend: str, tmp_path: Path) -> None:
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


def test_restores_under_a_flipping_directory_change_nothing_outside(backend: str, tmp_path: Path) -> None:
    """`ws/d` swaps with a link to a directory outside holding same-named files, while restores write, link and
    remove files in `d`: nothing outside changes, appears or goes. The control (the same steps by name, the
    directory looked at just before) does the damage in the same race."""
    root = Path(os.path.realpath(tmp_path))
    ws, outside = root / "ws", root / "outside"
    (ws / "d").mkdir(parents=True)
    (outside / "dir").mkdir(parents=True)
    for name in ("f.txt", "gone.txt", "l"):
        (outside / "dir" / name).write_bytes(b"outside " + name.encode())
    before = {p.name: p.read_bytes() for p in (outside / "dir").iterdir()}
    n: Counter[str] = Counter()
    with Flipper("dir", ws / "d", outside / "dir"):
        end = time.monotonic() + 20
        i = 0
        while i < 1500 or (n["done"] == 0 and time.monotonic() < end):
            i += 1
            try:
                files.write(str(ws), "d/f.txt", files.Entry(b"restored %d" % i, "100644"))
                files.write(str(ws), "d/l", files.Entry(b"target", "120000"))
                files.remove(str(ws), "d/gone.txt")
                n["done"] += 1
            except OSError:
                n["refused"] += 1
        assert {p.name: p.read_bytes() for p in (outside / "dir").iterdir()} == before, n

        def by_name() -> bool:
            try:
                if not (ws / "d").is_symlink():
                    (ws / "d" / "f.txt").write_bytes(b"restored by name")
            except OSError:
                pass
            return (outside / "dir" / "f.txt").read_bytes() != before["f.txt"]

        end = time.monotonic() + 30
        while not by_name() and time.monotonic() < end:
            pass
    assert (outside / "dir" / "f.txt").read_bytes() != before["f.txt"], "the control never wrote outside"
    assert n["done"] > 0 and n["refused"] + n["done"] >= 1500, n


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


async def test_a_rewind_blocked_by_a_link_the_checkpoints_do_not_see_keeps_that_file_and_goes_on(
    backend: str, tmp_path: Path
) -> None:
    """Found by an attack round: a link planted where a directory was, hidden from the checkpoints by .gitignore,
    made the restore refuse (as it must: nothing is written through it), but the refusal escaped as a crash ("The
    turn failed") with the rewind half done and no step recorded. Now that file is kept, said with its reason,
    and the rest of the rewind goes on and is recorded."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "a" / "b" / "c").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "b" / "c" / "f.txt").write_text("v1\n")
    (root / "other.txt").write_text("before\n")
    checkpoints = Checkpoints.open(tmp_path / "data", root, "s", tell=lambda _t: None)
    checkpoints.turn_started("t1")
    async with checkpoints.step(StepCall("c1", "Edit", "a/b/c/f.txt", "edit")):
        (root / "a" / "b" / "c" / "f.txt").write_text("v2\n")
        (root / "other.txt").write_text("after\n")
    checkpoints.turn_started("t2")
    async with checkpoints.step(StepCall("c2", "Bash", "hide and link", "execute")):
        (root / ".gitignore").write_text("/a/b/c\n")
        (root / "a" / "b" / "c").rename(root / "a" / "b" / "c3")
        (root / "a" / "b" / "c").symlink_to(outside)

    plan = await plan_rewind(checkpoints, "t1")
    result = await apply_rewind(checkpoints, plan, {})
    await checkpoints.close()

    assert list(outside.iterdir()) == [], "nothing was written through the link"
    [why] = [w for p, w in result.kept if p == "a/b/c/f.txt"]
    assert why.startswith("not restored: ") and "link" in why, why
    assert (root / "other.txt").read_text() == "before\n", "the rest of the rewind went on"
    assert result.step is not None, "and it is recorded"


def test_a_restore_keeps_a_files_own_permissions_and_a_recreated_file_follows_the_umask(
    backend: str, tmp_path: Path
) -> None:
    """A rewind (or a review's undo) made every file it wrote 0644 or 0755: a `.env` or a private key at 0600 came
    back readable by every local user (attack round 26). A file that is there keeps its own bits (git's executable
    bit applied), one made again gets what the umask gives, as `git checkout` does."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("secret.env", "tool"):
        (ws / name).write_text("old\n")
        (ws / name).chmod(0o600)
    files.write(str(ws), "secret.env", files.Entry(b"new\n", "100644"))
    files.write(str(ws), "tool", files.Entry(b"#!/bin/sh\n", "100755"))
    before = os.umask(0o077)
    try:
        files.write(str(ws), "id_key", files.Entry(b"key\n", "100644"))
        files.write(str(ws), "run.sh", files.Entry(b"#!/bin/sh\n", "100755"))
    finally:
        os.umask(before)
    modes = {p.name: p.stat().st_mode & 0o777 for p in ws.iterdir()}
    assert modes == {"secret.env": 0o600, "tool": 0o700, "id_key": 0o600, "run.sh": 0o700}
    assert (ws / "secret.env").read_text() == "new\n"
