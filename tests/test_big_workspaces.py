"""Workspaces of many files (found by a helper looking into a reported hang with 60,000 untracked files):

- the checkpoints' git is given its input whole, however slowly it reads: a session in a workspace of 15,000+ new
  files ended 10 s late, and a command that writes waited 300 s, for a snapshot whose `git update-index --stdin`
  waited for the rest of its paths while we waited for it;
- `rm -rf` of a folder of 60,000 files is decided, not denied for the time its check took."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from bridge.checkpoints.git_process import run_git
from bridge.checkpoints.store import SessionIndex, Store

SLOW_READER = "import sys, time; time.sleep(0.3); data = sys.stdin.buffer.read(); print(len(data))"


def test_more_input_than_a_pipe_holds_reaches_a_slow_reader_whole(tmp_path: Path) -> None:
    data = b"path/to/a/file\0" * 40_000  # 600 kB: ten pipes' worth
    done = run_git([sys.executable, "-c", SLOW_READER], env={}, cwd=tmp_path, data=data, timeout=30, ours=[])
    assert done.returncode == 0 and done.stdout.strip() == str(len(data)).encode()


def test_a_reader_that_stops_early_ends_the_run(tmp_path: Path) -> None:
    done = run_git(
        [sys.executable, "-c", "import sys; sys.stdin.buffer.read(10); print('enough')"],
        env={},
        cwd=tmp_path,
        data=b"x" * 1_000_000,
        timeout=30,
        ours=[],
    )
    assert done.stdout.strip() == b"enough"


def test_the_first_snapshot_of_a_workspace_of_many_new_files_completes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "big").mkdir(parents=True)
    for i in range(20_000):
        (ws / "big" / f"f{i}").write_bytes(b"")
    store = Store.for_workspace(tmp_path / "data", ws)
    index = SessionIndex(store, "s1")
    finished = threading.Event()
    trees: list[str] = []

    def snapshot() -> None:
        trees.append(index.snapshot().tree)
        finished.set()

    threading.Thread(target=snapshot, daemon=True).start()
    assert finished.wait(120), "the snapshot waits on git, and git on the rest of its input"
    listed = store.run("ls-tree", "-r", "--name-only", trees[0], index=None).stdout.split(b"\n")
    assert len([name for name in listed if name]) == 20_000


async def test_a_recursive_delete_of_a_folder_of_60000_files_is_decided_not_timed_out(tmp_path: Path) -> None:
    """The same workspace's other cost (the helper's second finding): `rm -rf big` looked at each of the folder's
    names for a held one at ~0.1 ms each, and at 60,000 the permission check ran out of its 5 s and denied."""
    from tests.attacks.workspace import build, engine
    from tests.permission_calls import decide_async

    found = build(tmp_path)
    big = found.ws / "big"
    big.mkdir()
    for i in range(60_000):
        (big / f"f{i}").write_bytes(b"")
    decision = await decide_async(engine(found, "acceptEdits"), "Bash", {"command": "rm -rf big"})
    assert "took longer" not in (decision.reason or ""), decision.reason
    (big / "f7").unlink()
    (big / ".envrc").write_text("")  # one held name among them still counts
    decision = await decide_async(engine(found, "acceptEdits"), "Bash", {"command": "rm -rf big"})
    assert decision.behavior == "ask" and ".envrc" in (decision.reason or ""), decision.reason


def _name_reason_before(path: Path) -> str | None:
    """name_reason as it was (every name at every depth): the reference the faster look must equal."""
    from bridge.permissions.runs_later import _CODE_WORKSPACE, RUNS_ON_OPEN

    if path.name.casefold().endswith(".code-workspace"):
        return f"{path}: {_CODE_WORKSPACE}"
    parts = [p.casefold() for p in path.parts]
    for held in RUNS_ON_OPEN:
        want = [p.casefold() for p in held.parts]
        n = len(want)
        for i in range(len(parts) - n + 1):
            if parts[i : i + n] == want and (held.kind == "dir" or i + n == len(parts)):
                if i + n == len(parts):
                    return f"{path}: {held.why}"
                return f"{path} (in {'/'.join(path.parts[i : i + n])}/): {held.why}"
    return None


def test_the_names_held_anywhere_are_found_as_before() -> None:
    from bridge.permissions.runs_later import RUNS_ON_OPEN, name_reason

    paths = [Path("/w/src/app.py"), Path("/w/notes.code-workspace"), Path("/w/a/b/c")]
    for held in RUNS_ON_OPEN:
        for name in (held.name, held.name.upper(), held.name.swapcase()):
            paths += [Path("/w") / name, Path("/w/pkg/deep") / name, Path("/w") / name / "inner.txt"]
            paths += [Path("/w") / name / ".vscode" / "tasks.json", Path("/w/.vscode") / name]
    for path in paths:
        assert name_reason(path) == _name_reason_before(path), path
    assert sum(name_reason(p) is not None for p in paths) > len(RUNS_ON_OPEN) * 3
