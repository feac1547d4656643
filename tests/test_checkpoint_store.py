"""The shadow store (bridge/checkpoints/store.py): real git, real files. A snapshot is the workspace's exact bytes
and modes, honours .gitignore and the size limits, and nothing of the repository's or the user's git can run or
change what is stored; the user's own `.git` is never touched."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from bridge.checkpoints.recorder import Checkpoints
from bridge.checkpoints.store import SessionIndex, Snapshot, Store, StoreError, stoppable, store_dir
from tests.poll import poll


def _store(tmp_path: Path, workspace: Path, **limits: int) -> SessionIndex:
    return SessionIndex(Store.for_workspace(tmp_path / "data", workspace, **limits), "s1")


def _tree_files(index: SessionIndex, tree: str) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, bytes) of a tree, read with plain git (not the store's own reading)."""
    env = {"GIT_DIR": str(index.store.git_dir), "PATH": os.environ["PATH"], "GIT_CONFIG_GLOBAL": os.devnull}
    out = subprocess.run(["git", "ls-tree", "-r", "-z", tree], env=env, capture_output=True, check=True).stdout
    files = {}
    for entry in filter(None, out.split(b"\0")):
        meta, path = entry.split(b"\t", 1)
        mode, _kind, sha = meta.decode().split()
        data = subprocess.run(["git", "cat-file", "blob", sha], env=env, capture_output=True, check=True).stdout
        files[os.fsdecode(path)] = (mode, data)
    return files


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_a_snapshot_is_the_exact_bytes_and_modes_and_honours_gitignore(tmp_path: Path, workspace: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_bytes(b"print('a')\r\nmixed\n")
    (workspace / "run.sh").write_text("#!/bin/sh\n")
    (workspace / "run.sh").chmod(0o755)
    (workspace / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (workspace / "link").symlink_to("src/a.py")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_bytes(b"ignored")
    (workspace / "debug.log").write_text("ignored")
    # The workspace asks for conversions a normal `git add` would apply: the store keeps the bytes as they are.
    (workspace / ".gitattributes").write_text("* text eol=crlf ident\n")
    index = _store(tmp_path, workspace)

    files = _tree_files(index, index.snapshot().tree)

    assert set(files) == {".gitignore", ".gitattributes", "src/a.py", "run.sh", "blob.bin", "link"}
    assert files["src/a.py"] == ("100644", b"print('a')\r\nmixed\n")
    assert files["run.sh"][0] == "100755"
    assert files["blob.bin"][1] == bytes(range(256)) * 4
    assert files["link"] == ("120000", b"src/a.py")


def test_changes_between_snapshots_are_each_path_with_its_blobs_and_modes(tmp_path: Path, workspace: Path) -> None:
    (workspace / "keep.txt").write_text("same\n")
    (workspace / "edit.txt").write_text("one\n")
    (workspace / "gone.txt").write_text("bye\n")
    (workspace / "mode.sh").write_text("echo\n")
    index = _store(tmp_path, workspace)
    first = index.snapshot().tree
    assert index.snapshot().tree == first  # nothing changed: the same tree

    (workspace / "edit.txt").write_text("two\n")
    (workspace / "gone.txt").unlink()
    (workspace / "mode.sh").chmod(0o755)
    (workspace / "new" / "deep").mkdir(parents=True)
    (workspace / "new" / "deep" / "n.txt").write_text("new\n")
    second = index.snapshot().tree

    changes = {c.path: c for c in index.store.diff(first, second)}
    assert set(changes) == {"edit.txt", "gone.txt", "mode.sh", "new/deep/n.txt"}
    assert changes["gone.txt"].new is None and changes["gone.txt"].old is not None
    assert changes["new/deep/n.txt"].old is None and changes["new/deep/n.txt"].new_mode == "100644"
    assert (changes["mode.sh"].old_mode, changes["mode.sh"].new_mode) == ("100644", "100755")
    assert changes["mode.sh"].old == changes["mode.sh"].new
    blobs = index.store.read_blobs([changes["edit.txt"].old or "", changes["edit.txt"].new or ""])
    assert list(blobs.values()) == [b"one\n", b"two\n"]


def test_a_file_over_the_limit_is_left_out_and_named_once(tmp_path: Path, workspace: Path) -> None:
    (workspace / "small.txt").write_text("x" * 100)
    (workspace / "huge.txt").write_text("x" * 5000)
    (workspace / "pic.bin").write_bytes(b"\0" * 3000)
    (workspace / "text.txt").write_text("y" * 3000)  # over the binary limit, but text: kept
    index = _store(tmp_path, workspace, max_file_bytes=4000, max_binary_bytes=2000)

    shot = index.snapshot()

    assert set(_tree_files(index, shot.tree)) == {"small.txt", "text.txt"}
    assert {s.path for s in shot.skipped} == {"huge.txt", "pic.bin"}
    assert "over the" in next(s.why for s in shot.skipped if s.path == "huge.txt")
    assert index.snapshot().skipped == []  # named once per version
    (workspace / "small.txt").write_text("x" * 5000)  # a stored file that grows too big leaves the tree
    shot = index.snapshot()
    assert set(_tree_files(index, shot.tree)) == {"text.txt"}
    assert [s.path for s in shot.skipped] == ["small.txt"]


def test_a_nested_repository_and_a_fifo_are_left_out(tmp_path: Path, workspace: Path) -> None:
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(nested)], check=True)
    (nested / "x.c").write_text("int x;\n")
    os.mkfifo(workspace / "pipe")
    (workspace / "a.txt").write_text("a\n")
    index = _store(tmp_path, workspace)

    shot = index.snapshot()

    assert set(_tree_files(index, shot.tree)) == {"a.txt"}
    assert [s.path for s in shot.skipped] == ["vendor/lib"]


def test_a_snapshot_of_named_paths_looks_at_those_alone(tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a\n")
    (workspace / "b.txt").write_text("b\n")
    index = _store(tmp_path, workspace)
    first = index.snapshot().tree
    (workspace / "a.txt").write_text("A\n")
    (workspace / "b.txt").write_text("B\n")

    only_a = index.snapshot(["a.txt"]).tree

    assert [c.path for c in index.store.diff(first, only_a)] == ["a.txt"]
    assert [c.path for c in index.store.diff(only_a, index.snapshot().tree)] == ["b.txt"]


def _digest_tree(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
        found.setdefault(str(path.relative_to(root)), "dir")
    return found


def test_the_users_own_git_repository_is_never_touched(tmp_path: Path, workspace: Path) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }
    subprocess.run(["git", "init", "-q"], cwd=workspace, env=env, check=True)
    (workspace / "tracked.txt").write_text("v1\n")
    subprocess.run(["git", "add", "tracked.txt"], cwd=workspace, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "one"], cwd=workspace, env=env, check=True)
    (workspace / "tracked.txt").write_text("v2\n")
    (workspace / "untracked.txt").write_text("u\n")
    (workspace / ".git" / "info" / "exclude").write_text("secret.env\n")
    (workspace / "secret.env").write_text("TOKEN=1\n")
    before = _digest_tree(workspace / ".git")
    index = _store(tmp_path, workspace)

    files = _tree_files(index, index.snapshot().tree)
    (workspace / "more.txt").write_text("m\n")
    index.snapshot()

    assert _digest_tree(workspace / ".git") == before
    assert ".git/HEAD" not in files and not any(p.startswith(".git/") for p in files)
    assert "secret.env" not in files  # the repository's own excludes are honoured (read, not written)
    assert store_dir(tmp_path / "data", workspace).is_relative_to(tmp_path / "data")


def test_no_filter_hook_or_fsmonitor_of_the_user_or_the_repository_runs(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's global config may define filter drivers (git-lfs does) and an fsmonitor hook; the workspace's
    .gitattributes names the filter. A normal `git add` runs them (the control); the store runs neither, and
    stores the file's own bytes."""
    home = tmp_path / "home"
    home.mkdir()
    marker = tmp_path / "ran"
    (home / ".gitconfig").write_text(
        f'[filter "evil"]\n\tclean = "sh -c \'echo filter >> {marker}; tr a-z A-Z\'"\n\trequired = true\n'
        f'[core]\n\tfsmonitor = "{tmp_path}/fsmonitor.sh"\n'
    )
    (tmp_path / "fsmonitor.sh").write_text(f"#!/bin/sh\necho fsmonitor >> {marker}\nexit 1\n")
    (tmp_path / "fsmonitor.sh").chmod(0o755)
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "a.txt").write_text("lower case\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"):
        monkeypatch.delenv(name, raising=False)

    control = tmp_path / "control"
    control.mkdir()
    (control / ".gitattributes").write_text("* filter=evil\n")
    (control / "a.txt").write_text("lower case\n")
    subprocess.run(["git", "init", "-q"], cwd=control, check=True)
    subprocess.run(["git", "add", "-A"], cwd=control, check=True)
    subprocess.run(["git", "status", "--porcelain"], cwd=control, check=True, capture_output=True)
    assert "filter" in marker.read_text() and "fsmonitor" in marker.read_text()  # the control: both are real
    marker.unlink()

    # The bridge's own environment may carry GIT_* (run from a git hook, say): the store ignores them.
    monkeypatch.setenv("GIT_DIR", str(control / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(control / ".git" / "index"))
    index = _store(tmp_path, workspace)
    files = _tree_files(index, index.snapshot().tree)

    assert not marker.exists()
    assert files["a.txt"] == ("100644", b"lower case\n")
    assert index.store.git_dir.is_relative_to(tmp_path / "data")


async def test_a_workspace_too_big_turns_checkpoints_off_with_one_notice(tmp_path: Path, workspace: Path) -> None:
    from bridge.checkpoints.recorder import Checkpoints, StepCall

    for n in range(12):
        (workspace / f"f{n}.txt").write_text("x\n")
    told: list[str] = []
    checkpoints = Checkpoints.open(tmp_path / "data", workspace, "big", tell=told.append, max_files=10)
    checkpoints.turn_started("t1")
    await checkpoints.settle()
    async with checkpoints.step(StepCall("c1", "Bash", "cmd", "execute")):
        (workspace / "new.txt").write_text("n\n")
    await checkpoints.close()

    assert not checkpoints.enabled and checkpoints.log.steps == []
    assert len(told) == 1 and "more than 10 files" in told[0]


def test_sessions_that_start_together_on_a_new_workspace_share_one_store(tmp_path: Path, workspace: Path) -> None:
    import threading

    (workspace / "a.txt").write_text("a\n")
    trees: list[str] = []
    errors: list[BaseException] = []

    def first_snapshot(name: str) -> None:
        try:
            trees.append(SessionIndex(Store.for_workspace(tmp_path / "data", workspace), name).snapshot().tree)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=first_snapshot, args=(f"s{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(trees)) == 1 and len(trees) == 4


def _snapshot_within(index: SessionIndex, seconds: float) -> Snapshot:
    """`index.snapshot()` in a thread, failed (not waited for) when it takes longer than `seconds`."""
    done: list[Snapshot | BaseException] = []

    def take() -> None:
        try:
            done.append(index.snapshot())
        except BaseException as error:  # the test reports it
            done.append(error)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    thread.join(seconds)
    assert done, f"the snapshot took more than {seconds} s"
    if isinstance(done[0], BaseException):
        raise done[0]
    return done[0]


def test_a_fifo_where_git_reads_does_not_hold_a_snapshot(tmp_path: Path, workspace: Path) -> None:
    """Git opens `.gitignore` in every folder it lists, and a nested repository's `HEAD` and `commondir` to tell
    it is one: a named pipe there (an unpacked archive's, a command's) held every snapshot until its timeout
    (the first: 300 s; the later ones: for ever), and a cancel waited for it."""
    (workspace / "a.txt").write_text("a\n")
    named_pipes(workspace)
    (workspace / "docs" / "b.txt").write_text("b\n")
    index = _store(tmp_path, workspace)

    first = _snapshot_within(index, 20)
    assert {"a.txt", "docs/b.txt"} <= set(_tree_files(index, first.tree))
    (workspace / "a.txt").write_text("changed\n")
    second = _snapshot_within(index, 20)
    assert _tree_files(index, second.tree)["a.txt"] == ("100644", b"changed\n")
    for fifo in (".gitignore", "docs/.gitignore", "vendor/.git/HEAD", "tools/.git/commondir"):
        assert stat.S_ISFIFO(os.lstat(workspace / fifo).st_mode), fifo  # left as they were


def named_pipes(workspace: Path) -> None:
    """Where git opens files as it lists a workspace: a folder's `.gitignore`, a nested repository's `HEAD` and
    `commondir`. An unpacked archive (or a command) can leave a named pipe in any of them."""
    os.mkfifo(workspace / ".gitignore")
    (workspace / "docs").mkdir()
    os.mkfifo(workspace / "docs" / ".gitignore")
    for name, pipe in (("vendor", "HEAD"), ("tools", "commondir")):
        gitdir = workspace / name / ".git"
        (gitdir / "objects").mkdir(parents=True)
        (gitdir / "refs").mkdir()
        if pipe != "HEAD":
            (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
        os.mkfifo(gitdir / pipe)


def test_a_fifo_outside_the_workspace_ends_the_snapshot_with_its_name(tmp_path: Path, workspace: Path) -> None:
    """A nested repository's `.git` file may send git anywhere: a pipe out there is not the bridge's to open, so
    the snapshot fails at once and says where (checkpoints go off), instead of waiting."""
    away = tmp_path / "away"
    away.mkdir()
    os.mkfifo(away / "HEAD")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".git").write_text(f"gitdir: {away}\n")
    (workspace / "a.txt").write_text("a\n")
    index = _store(tmp_path, workspace)

    with pytest.raises(StoreError, match=r"named pipe .*away/HEAD"):
        _snapshot_within(index, 20)


async def test_a_snapshot_asked_to_stop_stops_its_git_at_once(tmp_path: Path, workspace: Path) -> None:
    """A cancel stops the git a snapshot is waiting for (here one that never ends, as on a hung network disk)."""
    (workspace / "a.txt").write_text("a\n")
    index = _store(tmp_path, workspace)
    index.snapshot()
    slow = tmp_path / "slow-git"
    slow.write_text(f'#!/bin/sh\ncase " $* " in *" ls-files "*) exec sleep 600;; esac\nexec {index.store.git} "$@"\n')
    slow.chmod(0o755)
    index.store.git = str(slow)
    stop = threading.Event()
    failed: list[BaseException] = []

    def take() -> None:
        try:
            with stoppable(stop):
                index.snapshot()
        except StoreError as error:
            failed.append(error)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    await poll(lambda: any("sleep 600" in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()), what="git")
    stop.set()
    await asyncio.to_thread(thread.join, 5)
    assert not thread.is_alive(), "the snapshot went on after it was asked to stop"
    assert failed and "stopped" in str(failed[0])
    assert not any("sleep 600" in _cmdline(p) for p in os.listdir("/proc") if p.isdigit())


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def test_a_cancelled_snapshot_answers_at_once_and_stops_its_git(tmp_path: Path, workspace: Path) -> None:
    """The session's side: a step cancelled while its snapshot waits on git answers the cancel at once (before,
    the worker thread could not be left: the cancel waited for git), and that git does not go on."""
    (workspace / "a.txt").write_text("a\n")
    checkpoints = Checkpoints.open(tmp_path / "data", workspace, "s1", tell=lambda _text: None)
    await checkpoints.now()
    assert checkpoints.store is not None
    slow = tmp_path / "slow-git"
    slow.write_text(
        f'#!/bin/sh\ncase " $* " in *" ls-files "*) exec sleep 601;; esac\nexec {checkpoints.store.git} "$@"\n'
    )
    slow.chmod(0o755)
    checkpoints.store.git = str(slow)

    task = asyncio.create_task(checkpoints.now())
    await poll(lambda: any("sleep 601" in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()), what="git")
    task.cancel()
    async with asyncio.timeout(1):
        with pytest.raises(asyncio.CancelledError):
            await task
    await poll(lambda: not any("sleep 601" in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()), what="stop")


def test_a_link_to_a_device_where_git_reads_ends_the_snapshot_and_says_so(tmp_path: Path, workspace: Path) -> None:
    """A nested repository's `commondir -> /dev/zero`: git read it into memory for ever (3 GB in 5 s here) during
    the session's first snapshot. Now the snapshot stops at once, and checkpoints go off naming it."""
    (workspace / "a.txt").write_text("a\n")
    gitdir = workspace / "vendor" / ".git"
    (gitdir / "objects").mkdir(parents=True)
    (gitdir / "refs").mkdir()
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    (gitdir / "commondir").symlink_to("/dev/zero")
    index = _store(tmp_path, workspace)

    with pytest.raises(StoreError, match="reading the device /dev/zero"):
        _snapshot_within(index, 20)
