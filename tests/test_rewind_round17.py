"""Attack round 17: a rewind deleted files that were there before the step and that the agent never wrote. The
snapshot before the step had no record of them (inside a nested repository, ignored), so when they showed up
after it they looked made by it, and the rewind deleted them. The rule now: a rewind deletes a file only where the
snapshot before the step positively shows it absent, in a place it fully looked at; anything else is unknown, kept,
and named in the plan. Each case is a real session (the offline model's calls run for real) and a real rewind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest

from bridge.display import TextContent
from tests.checkpoint_run import Run, checkpoint_run, say, step, use


def _one_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> AbstractAsyncContextManager[Run]:
    """A session whose first prompt runs `command`; the second is the rewind."""
    return _commands(tmp_path, monkeypatch, command)


def _commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *commands: str) -> AbstractAsyncContextManager[Run]:
    """A session whose first prompt runs `commands`, one call each; the second is the rewind."""
    calls = [step(use("Bash", command=command)) for command in commands]
    return checkpoint_run(tmp_path, monkeypatch, [*calls, say("ok"), say("back")])


def _repository(path: Path) -> None:
    """A real nested repository (its own `.git`, made by git)."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


async def _rewound(run: Run) -> str:
    """Prompt 1 rewound (code and conversation); what the user was shown before confirming."""
    assert await run.prompt("/rewind 1") == "end_turn"
    if not run.asked:  # nothing to confirm: only what it can't undo, said
        return run.said()
    return "\n".join(d.text for d in run.asked[-1].display if isinstance(d, TextContent))


def _kept_unknown(text: str, path: str) -> None:
    assert f"delete {path}" not in text and f"restore {path}" not in text, text
    assert path in text and "not in the checkpoints" in text, text


async def test_a_file_of_a_nested_repository_whose_git_a_command_removed_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case A: `vendor/lib` (its own `.git`) was left out as a whole; its files appear once the `.git` goes."""
    ws = tmp_path / "ws"
    command = "rm -rf vendor/lib/.git && echo 'x=1' >> app.py"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        _repository(ws / "vendor" / "lib")
        (ws / "vendor" / "lib" / "mywork.c").write_text("user's uncommitted work\n")
        (ws / "app.py").write_text("x=0\n")
        assert await run.prompt("vendor it") == "end_turn"
        assert not (ws / "vendor" / "lib" / ".git").exists()
        _kept_unknown(await _rewound(run), "vendor/lib/mywork.c")
    assert (ws / "vendor" / "lib" / "mywork.c").read_text() == "user's uncommitted work\n"
    assert (ws / "app.py").read_text() == "x=0\n", "what the step did to a file it knew is undone"


async def test_a_file_a_self_ignoring_gitignore_stops_ignoring_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case B: the `.gitignore` ignores itself, so it is in no tree, and no step's changes name it."""
    ws = tmp_path / "ws"
    command = "printf '.gitignore\\n' > .gitignore && echo 'x=1' >> app.py"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        (ws / ".gitignore").write_text(".gitignore\nsecrets.env\n")
        (ws / "secrets.env").write_text("API_KEY=user-secret\n")
        (ws / "app.py").write_text("x=0\n")
        assert await run.prompt("tidy") == "end_turn"
        _kept_unknown(await _rewound(run), "secrets.env")
    assert (ws / "secrets.env").read_text() == "API_KEY=user-secret\n"
    assert (ws / "app.py").read_text() == "x=0\n"


async def test_a_folder_a_subfolders_gitignore_ignored_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `.gitignore` down the tree (ignoring itself) that ignores a whole folder: git never looks into the folder,
    so the snapshot before has no word of its files; the command deletes that `.gitignore`. (Round 19: a file the
    snapshots left out that a step makes go may be any of its new files, copied or moved: `web/new.txt` is kept too,
    named; deleting a file the agent made is left to the person rather than risk the only copy of one of theirs.)"""
    ws = tmp_path / "ws"
    command = "rm web/.gitignore && echo made > web/new.txt"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        (ws / "web" / "cache" / "img").mkdir(parents=True)
        (ws / "web" / ".gitignore").write_text(".gitignore\ncache/\n")
        (ws / "web" / "cache" / "img" / "logo.png").write_bytes(b"\x89PNG user's\n")
        assert await run.prompt("clean up") == "end_turn"
        text = await _rewound(run)
        _kept_unknown(text, "web/cache/img/logo.png")
        _kept_unknown(text, "web/new.txt")
    assert (ws / "web" / "cache" / "img" / "logo.png").read_bytes() == b"\x89PNG user's\n"


async def test_a_file_the_users_global_excludes_left_out_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's own excludes file (`~/.config/git/ignore`), which a command can edit as well."""
    ws = tmp_path / "ws"
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    excludes = tmp_path / "home" / ".config" / "git" / "ignore"
    command = f": > {excludes}"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        excludes.parent.mkdir(parents=True)
        excludes.write_text("notes.local\n")
        (ws / "notes.local").write_text("my notes\n")
        assert await run.prompt("reset my excludes") == "end_turn"
        _kept_unknown(await _rewound(run), "notes.local")
    assert (ws / "notes.local").read_text() == "my notes\n"


async def test_a_file_behind_a_link_a_command_made_a_folder_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`data` was a link to a folder outside: what was behind it is no file of the workspace's, in no snapshot."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    command = f"rm data && mv {outside} data"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        outside.mkdir()
        (outside / "rows.csv").write_text("1,2\n")
        (ws / "data").symlink_to(outside)
        assert await run.prompt("bring the data in") == "end_turn"
        _kept_unknown(await _rewound(run), "data/rows.csv")
    assert (ws / "data" / "rows.csv").read_text() == "1,2\n", "its only copy now"


async def test_an_edit_of_a_self_ignoring_gitignore_is_not_undone_by_deleting_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file tool's step looks only at its path: the `.gitignore` was there before, ignored (by itself); the edit
    makes git see it. What it was is in no snapshot: the rewind keeps it, never deletes it."""
    ws = tmp_path / "ws"
    gitignore = str(ws / ".gitignore")
    responses = [
        step(use("Read", file_path=gitignore)),
        step(use("Edit", file_path=gitignore, old_string=".gitignore\n", new_string="")),
        say("edited"),
        say("back"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        (ws / ".gitignore").write_text(".gitignore\nbuild/\n")
        assert await run.prompt("track the gitignore") == "end_turn"
        assert (ws / ".gitignore").read_text() == "build/\n"
        _kept_unknown(await _rewound(run), ".gitignore")
    assert (ws / ".gitignore").read_text() == "build/\n"


async def test_a_rewind_does_not_overwrite_a_file_it_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent deleted `notes.txt`; the user then ignored the name and wrote a new one: the snapshot shows no file
    there, but there is one. Recreating the old version over it silently would lose the user's."""
    ws = tmp_path / "ws"
    responses = [step(use("Bash", command="rm notes.txt")), say("deleted"), say("back")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        (ws / "notes.txt").write_text("old notes\n")
        assert await run.prompt("delete the notes") == "end_turn"
        (ws / ".gitignore").write_text("notes.txt\n")
        (ws / "notes.txt").write_text("the user's new notes\n")
        text = await _rewound(run)
        assert "notes.txt" in text and "not overwritten silently" in text, text
    assert (ws / "notes.txt").read_text() == "the user's new notes\n"


UNREADABLE = """
import asyncio, json, os, shutil, sys, tempfile
from pathlib import Path
from bridge.checkpoints.recorder import Checkpoints, StepCall
from bridge.checkpoints.rewind import apply_rewind, plan_rewind

async def main() -> None:
    name = json.loads(sys.argv[1])
    tmp = Path(tempfile.mkdtemp())
    os.environ["HOME"] = str(tmp)
    ws = tmp / "ws"
    (ws / name).mkdir(parents=True)
    (ws / name / "notes.txt").write_text("mine\\n")
    os.chmod(ws / name, 0)
    checkpoints = Checkpoints.open(tmp / "data", ws, "s1", tell=lambda _text: None)
    checkpoints.turn_started("t1")
    async with checkpoints.step(StepCall("c1", "Bash", "chmod 755 the folder", "execute")):
        os.chmod(ws / name, 0o755)
    plan = await plan_rewind(checkpoints, "t1")
    await apply_rewind(checkpoints, plan, {})
    await checkpoints.close()
    print(json.dumps({
        "files": [f.path for f in plan.files],
        "said": plan.irreversible,
        "there": (ws / name / "notes.txt").exists(),
    }))
    shutil.rmtree(tmp)

asyncio.run(main())
"""


@pytest.mark.parametrize("name", ["private", "notes': old", "notes\nold"])
def test_a_file_of_a_folder_git_could_not_open_is_not_deleted(name: str) -> None:
    """A folder the snapshot could not open (git says so and goes on): a command that opens it up makes its files
    appear. Root opens any folder, so as root this runs as `nobody` (setpriv), in a process of its own. Round 18:
    the folder's name was read from git's warning up to the first `': ` and line by line, so `notes': old` and a
    name with a line break made a hole in the wrong place, and the rewind deleted what the folder held."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root, and no setpriv to run as another user: every folder opens")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "AGENT_BRIDGE_SANDBOX": "0"}
    done = subprocess.run(
        [*prefix, sys.executable, "-c", UNREADABLE, json.dumps(name)],
        cwd="/",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["files"] == [] and result["there"], result
    assert any(said.startswith(f"{name}/notes.txt: what it was before") for said in result["said"]), result


async def test_a_file_a_rewind_un_ignores_is_no_file_the_rewind_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack round 18: a rewind's own step was recorded without the rule above. The rewind restored the `.gitignore`
    the command had extended, which un-ignored the user's `secrets.env` (made after the command: in no snapshot);
    the rewind's step took it for a file the rewind made, and a second rewind to the same prompt deleted it."""
    ws = tmp_path / "ws"
    command = "echo secrets.env >> .gitignore && echo 'x=1' >> app.py"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        (ws / ".gitignore").write_text("*.log\n")
        (ws / "app.py").write_text("x=0\n")
        assert await run.prompt("ignore the secrets") == "end_turn"
        (ws / "secrets.env").write_text("API_KEY=user-secret\n")
        assert await run.prompt("/rewind 1 code") == "end_turn"
        assert (ws / ".gitignore").read_text() == "*.log\n" and (ws / "secrets.env").exists()
        assert await run.prompt("/rewind 1 code") == "end_turn"
        shown = "\n".join(d.text for asked in run.asked for d in asked.display if isinstance(d, TextContent))
        assert "delete secrets.env" not in shown, shown
    assert (ws / "secrets.env").read_text() == "API_KEY=user-secret\n"


async def test_a_file_moved_out_of_a_place_the_snapshots_left_out_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack round 18: `mv secrets.env config/secrets.txt` of an ignored file: the new path was taken for a file the
    command made, and the rewind deleted it — the only copy of the user's key (the old path was in no snapshot, so
    nothing brought it back). A step that makes a left-out place go away has its new files kept, as unknown."""
    ws = tmp_path / "ws"
    async with _one_command(tmp_path, monkeypatch, "mv secrets.env config/secrets.txt") as run:
        (ws / "config").mkdir()
        (ws / ".gitignore").write_text("secrets.env\n")
        (ws / "secrets.env").write_text("API_KEY=user-secret\n")
        assert await run.prompt("move the config") == "end_turn"
        _kept_unknown(await _rewound(run), "config/secrets.txt")
    assert (ws / "config" / "secrets.txt").read_text() == "API_KEY=user-secret\n"


@pytest.mark.parametrize(
    "command",
    [
        "mv build/signing.key signing.key",  # out of an ignored folder (round 19: only ignored files were looked at)
        "mkdir -p pkg && mv build pkg/dist && mv pkg/dist/signing.key signing.key",  # the folder renamed first
    ],
)
async def test_a_file_moved_out_of_an_ignored_folder_is_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Attack round 19: the move rule knew only ignored files, by inode: a key moved out of an ignored `build/`
    (the usual way to ignore) was deleted by the rewind, its only copy. A new file older than its step, or any new
    file of a step that made a left-out file go, is kept and named now."""
    ws = tmp_path / "ws"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        (ws / "build").mkdir()
        (ws / ".gitignore").write_text("build/\n")
        key = ws / "build" / "signing.key"
        key.write_text("PRIVATE_KEY=only-copy\n")
        os.utime(key, (1_700_000_000, 1_700_000_000))  # made long before the step, as a user's file is
        assert await run.prompt("move the key") == "end_turn"
        text = await _rewound(run)
        assert "delete signing.key" not in text, text
    assert (ws / "signing.key").read_text() == "PRIVATE_KEY=only-copy\n"


async def test_many_ignored_files_do_not_turn_the_move_rule_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack round 19: past 500 left-out places, the rest went unchecked. (And a copy, then the original removed:
    `secrets.env` went, so every new file of the step is kept.)"""
    ws = tmp_path / "ws"
    command = "mkdir -p config && cp secrets.env config/secrets.txt && rm secrets.env"
    async with _one_command(tmp_path, monkeypatch, command) as run:
        (ws / ".gitignore").write_text("*.log\nsecrets.env\n")
        for i in range(600):
            (ws / f"a{i:03}.log").write_text("log\n")
        (ws / "secrets.env").write_text("API_KEY=user-secret\n")
        assert await run.prompt("move the config") == "end_turn"
        _kept_unknown(await _rewound(run), "config/secrets.txt")
    assert (ws / "config" / "secrets.txt").read_text() == "API_KEY=user-secret\n"


async def test_a_rewind_says_it_deleted_what_it_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rewind's result said "Restored 1 file: made.txt" of a file it deleted (the preview said `delete`)."""
    ws = tmp_path / "ws"
    async with _one_command(tmp_path, monkeypatch, "echo made > made.txt && echo x=1 >> app.py") as run:
        (ws / "app.py").write_text("x=0\n")
        assert await run.prompt("make it") == "end_turn"
        assert "delete made.txt" in await _rewound(run)
        said = run.said()
    assert "Restored 1 file: app.py." in said and "Deleted 1 file the agent had made: made.txt." in said, said
    assert not (ws / "made.txt").exists()


async def test_a_file_un_ignored_then_deleted_in_a_later_step_is_brought_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """G4 (attack round 18): one call un-ignores `secrets.env` (what it was before that call is in no snapshot), a
    later call deletes it. The later call's snapshot before it holds its bytes: the rewind undoes that deletion,
    and says that what the file was before the first call is in no checkpoint. It was left deleted."""
    ws = tmp_path / "ws"
    async with _commands(tmp_path, monkeypatch, "printf 'build/\\n' > .gitignore", "rm secrets.env") as run:
        (ws / ".gitignore").write_text("build/\nsecrets.env\n")
        (ws / "secrets.env").write_text("API_KEY=user-secret\n")
        assert await run.prompt("clean up") == "end_turn"
        assert not (ws / "secrets.env").exists()
        text = await _rewound(run)
        assert "recreate secrets.env" in text and "not in the checkpoints" in text, text
        assert "back to what this call left" in text and "leaves it as it is" not in text, text
    assert (ws / "secrets.env").read_text() == "API_KEY=user-secret\n"
    assert (ws / ".gitignore").read_text() == "build/\nsecrets.env\n"


async def test_an_edit_of_a_file_moved_in_from_an_ignored_folder_is_undone_and_the_file_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call moves `build/signing.key` out of an ignored folder (unknown before: kept by a rewind); a later call
    edits it. The rewind undoes the edit (the version after the move is in a snapshot) and keeps the file."""
    ws = tmp_path / "ws"
    commands = ("mv build/signing.key signing.key", "echo tampered >> signing.key")
    async with _commands(tmp_path, monkeypatch, *commands) as run:
        (ws / ".gitignore").write_text("build/\n")
        (ws / "build").mkdir()
        (ws / "build" / "signing.key").write_text("KEY\n")
        old = (ws / "build" / "signing.key").stat().st_mtime - 60
        os.utime(ws / "build" / "signing.key", (old, old))
        assert await run.prompt("move the key") == "end_turn"
        assert (ws / "signing.key").read_text() == "KEY\ntampered\n"
        text = await _rewound(run)
        assert "restore signing.key" in text and "back to what this call left" in text, text
    assert (ws / "signing.key").read_text() == "KEY\n"
