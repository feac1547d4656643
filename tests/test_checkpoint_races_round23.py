"""Attack round 23b on the checkpoints, each proven by its side effect:

- a file a command swapped for a FIFO between the snapshot's lstat and its look at the file's first bytes held the
  snapshot in `open` for good (past every timeout, and SIGTERM: the thread held the index's lock);
- the snapshot's git opens by name what it adds: a folder swapped for a link in between made it store a file from
  outside the workspace (one the sandbox hides from commands), which a rewind then restored into it;
- /changes, an undo and a rewind's merge read the file on disk whole (a command's `truncate -s 4G`: 4 GB of memory);
- the workspace repository's `.git/info/exclude` was read whole, then cut to 64 KiB, at every start.
"""

from __future__ import annotations

import os
import shutil
import threading
import tracemalloc
from pathlib import Path

import pytest

from bridge.checkpoints.review import view
from bridge.checkpoints.store import SessionIndex, Store
from tests.checkpoint_run import checkpoint_run, say, step, use

MIB = 1024 * 1024


def _store(tmp_path: Path) -> tuple[Store, SessionIndex, Path]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("a\n")
    store = Store.for_workspace(tmp_path / "data", ws)
    index = SessionIndex(store, "s1")
    index.snapshot()
    return store, index, ws


def test_a_file_swapped_for_a_fifo_after_it_was_listed_does_not_hold_the_snapshot(tmp_path: Path) -> None:
    _, index, ws = _store(tmp_path)
    big = ws / "big.bin"
    big.write_bytes(b"x" * (3 * MIB))  # over the size at which its first bytes are looked at (binary or not)
    listed = os.lstat(big)
    big.unlink()
    os.mkfifo(big)  # what a command's renameat2(RENAME_EXCHANGE) does between the lstat and the look
    answer: list[str | None] = []
    looking = threading.Thread(target=lambda: answer.append(index._unstorable(b"big.bin", listed)), daemon=True)
    looking.start()
    looking.join(10)
    if looking.is_alive():  # (the old code: blocked in open() until a writer came; let it go)
        with open(big, "wb"):
            pass
        pytest.fail("the snapshot waited in open() on the FIFO")
    assert answer and answer[0] is not None and "changed while it was stored" in answer[0]


def test_a_blob_git_stored_from_elsewhere_is_replaced_by_the_workspaces_file(tmp_path: Path) -> None:
    """What the race makes git do (store another file's bytes under a workspace name), made to happen: the check
    after `update-index` reads the name exactly and stores what is there instead."""
    store, index, ws = _store(tmp_path)
    (ws / "build").mkdir()
    (ws / "build" / "token.json").write_text("decoy\n")
    secret = store.run("hash-object", "-w", "--stdin", index=None, data=b"sk-ant-SECRET\n").stdout.decode().strip()
    store.run("update-index", "-z", "--add", "--stdin", index=index.path, data=b"build/token.json\0")
    store.run(
        "update-index",
        "-z",
        "--index-info",
        index=index.path,
        data=f"100644 {secret}\t".encode() + b"build/token.json\0",
    )
    assert index._verify([b"build/token.json"], None) == {}
    tree = store.run("write-tree", index=index.path).stdout.decode().strip()
    blob = store.entries(tree, ["build/token.json"])["build/token.json"][1]
    assert store.read_blobs([blob])[blob] == b"decoy\n"


def test_a_snapshot_stores_no_file_from_beyond_a_link_while_a_command_swaps_a_folder(tmp_path: Path) -> None:
    """The race itself, for a bounded time: a folder and a link to a secret's folder exchanged as fast as a process
    can (renameat2). Whatever git reads, no snapshot's tree holds the secret."""
    ctypes = pytest.importorskip("ctypes")
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("no renameat2 here")
    store, index, ws = _store(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "token.json").write_text("sk-ant-SECRET\n")
    base = ws / "build"
    (base / "d").mkdir(parents=True)
    (base / "d" / "token.json").write_text("D" * 14)
    os.symlink(outside, base / "L")
    stop = threading.Event()

    def swap() -> None:
        d, link = os.fsencode(base / "d"), os.fsencode(base / "L")
        while not stop.is_set():
            libc.renameat2(-100, d, -100, link, 2)

    racer = threading.Thread(target=swap, daemon=True)
    racer.start()
    trees = []
    try:
        for n in range(60):
            (ws / "a.txt").write_text(f"{n}\n")
            try:
                trees.append(index.snapshot().tree)
            except Exception:  # a snapshot may fail on the race (git refuses a path beyond a link)
                continue
    finally:
        stop.set()
        racer.join()
    for tree in trees:
        listing = store.run("ls-tree", "-r", tree, index=None).stdout.decode()
        blobs = [line.split()[2] for line in listing.splitlines() if line.endswith("token.json")]
        assert all(b"SECRET" not in data for data in store.read_blobs(blobs).values())


async def test_changes_does_not_read_a_huge_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    responses = [step(use("Bash", command="echo one > a.txt")), say("done")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("write") == "end_turn"
        os.truncate(ws / "a.txt", 200 * MIB)  # a command's `truncate -s`: sparse, no disk used
        tracemalloc.start()
        try:
            reviews = await view(run.session.checkpoints)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert [(r.path, r.edited) for r in reviews] == [("a.txt", True)]
    assert peak < 30 * MIB, f"{peak / MIB:.0f} MiB to review a 200 MiB file"


def test_the_repositorys_exclude_file_is_read_to_its_first_64_kib_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git" / "info").mkdir(parents=True)
    exclude = ws / ".git" / "info" / "exclude"
    exclude.write_bytes(b"secrets/\n")
    os.truncate(exclude, 300 * MIB)
    store = Store.for_workspace(tmp_path / "data", ws)
    tracemalloc.start()
    try:
        read = store._repository_excludes()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.startswith(b"secrets/\n") and len(read) == 65536
    assert peak < 10 * MIB, f"{peak / MIB:.0f} MiB to read 64 KiB"
    exclude.unlink()
    os.mkfifo(exclude)  # and a FIFO there is no file: nothing waits on it
    assert store._repository_excludes() == b""


async def test_a_session_closed_before_any_prompt_stops_its_first_snapshot(tmp_path: Path) -> None:
    """The first snapshot starts when a session opens (issue 26); one closed before any prompt does not wait for it
    (round 23's verification: closing a session opened in a 20,000-file folder took 6.6 s, and git ran on)."""
    from bridge.checkpoints.recorder import Checkpoints

    ws = tmp_path / "ws"
    ws.mkdir()
    for n in range(200):
        (ws / f"f{n}.txt").write_text(f"{n}\n")
    checkpoints = Checkpoints.open(tmp_path / "data", ws, "s1", tell=lambda _text: None)
    checkpoints.warm()
    await checkpoints.close()
    assert checkpoints.index is not None and not checkpoints.index.path.exists(), "no snapshot taken for no one"

    # a turn began but no call changed anything (a question, or a Ctrl-C before the first call: attack round 26,
    # a `run` cancelled in a folder whose snapshot takes half a minute exited only when it was done): no one's either
    prompted = Checkpoints.open(tmp_path / "data", ws, "s2", tell=lambda _text: None)
    prompted.warm()
    prompted.turn_started("t1")
    await prompted.close()
    assert prompted.index is not None and not prompted.index.path.exists()


def test_a_name_git_refuses_to_store_is_a_hole_not_silence(tmp_path: Path) -> None:
    """Git adds `GIT~1/notes.txt` by saying "Ignoring path" and exiting 0 (core.protectNTFS): it was in no snapshot and
    in no hole, so a step that deleted it recorded nothing and no rewind could say so."""
    _, index, ws = _store(tmp_path)
    (ws / "GIT~1").mkdir()
    (ws / "GIT~1" / "notes.txt").write_text("mine\n")
    (ws / "ok.txt").write_text("ok\n")
    shot = index.snapshot()
    assert "GIT~1/notes.txt" in index.unrecorded()
    assert [s.path for s in shot.skipped] == ["GIT~1/notes.txt"]
    assert "ok.txt" in index.store.run("ls-tree", "-r", "--name-only", shot.tree, index=None).stdout.decode()


async def test_nothing_of_a_closed_session_writes_to_the_store_after_it_closed(tmp_path: Path) -> None:
    """A session opened and closed at once (a script's, a test's): its first snapshot's thread went on writing in the
    data dir after the agent's shutdown, so removing that dir then failed ("Directory not empty")."""
    from bridge.agent import Agent
    from bridge.config import BridgeConfig
    from bridge.loop.permission import deny_all
    from bridge.session import Frontend

    for n in range(15):
        root = tmp_path / f"r{n}"
        (root / "ws").mkdir(parents=True)
        (root / "ws" / "a.txt").write_text("a\n")
        agent = Agent(BridgeConfig(api_key="unused", dataDir=root / "data"))
        agent.new_session(root / "ws", Frontend(emit=lambda _event: None, prompter=deny_all))
        await agent.shutdown()
        shutil.rmtree(root / "data")  # raises if something still writes there
