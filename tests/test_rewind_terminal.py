"""`/rewind` and `/changes` in the terminal (issue 23 item 3): `agent-bridge run --continue` goes on with the
latest session of the folder, so the commands have a history to work on. Real `agent-bridge` processes, the
offline `playground` model, real commands."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.test_checkpoint_store import named_pipes

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def _run(tmp_path: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "AGENT_BRIDGE_SANDBOX": "0",
    }
    return subprocess.run(
        [AGENT_BRIDGE, "run", "--offline", "playground", "--dangerously-approve-all", "--cwd", str(workspace), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_rewind_in_the_terminal_on_the_continued_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    first = _run(tmp_path, workspace, "run: echo one > a.txt")
    assert first.returncode == 0, first.stderr
    assert "go on with `agent-bridge run --continue`" in first.stdout
    assert _run(tmp_path, workspace, "--continue", "run: echo two > a.txt && echo b > b.txt").returncode == 0
    assert (workspace / "a.txt").read_text() == "two\n"

    changes = _run(tmp_path, workspace, "--continue", "/changes 2")
    assert "a.txt (modified, by `echo two > a.txt && echo b > b.txt`)" in changes.stdout, changes.stdout

    listing = _run(tmp_path, workspace, "--continue", "/rewind")
    assert "1. run: echo one > a.txt — 2 files changed since" in listing.stdout, listing.stdout
    assert "changed since\n\nUsage: /rewind N" in listing.stdout, "the usage is not a part of the list's last item"
    rewound = _run(tmp_path, workspace, "--continue", "/rewind 2 code")
    assert rewound.returncode == 0, rewound.stderr
    assert "Rewind code to before prompt 2" in rewound.stdout and "delete b.txt" in rewound.stdout
    assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "b.txt").exists()

    missing = _run(tmp_path, workspace, "--resume", "sess_nope", "/rewind")
    assert missing.returncode == 2 and "sess_nope" in missing.stdout


def test_named_pipes_where_git_reads_hold_neither_the_turn_nor_rewind(tmp_path: Path) -> None:
    """Before: the session's first snapshot waited 300 s for git (blocked opening the pipe), every step behind
    it, and a later snapshot for ever."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    named_pipes(workspace)

    first = _run(tmp_path, workspace, "run: echo one > a.txt")
    assert first.returncode == 0, first.stderr
    assert "Checkpoints are off" not in first.stdout + first.stderr
    assert _run(tmp_path, workspace, "--continue", "run: echo two > a.txt").returncode == 0
    rewound = _run(tmp_path, workspace, "--continue", "/rewind 2 code")
    assert rewound.returncode == 0, rewound.stdout + rewound.stderr
    assert (workspace / "a.txt").read_text() == "one\n"
    assert stat.S_ISFIFO(os.lstat(workspace / "vendor" / ".git" / "HEAD").st_mode)  # left as it was


def test_a_pipe_outside_the_workspace_turns_checkpoints_off_at_once_and_says_where(tmp_path: Path) -> None:
    """A nested `.git` file may point git anywhere: a pipe there is not the bridge's to open. Checkpoints go off
    with its name, and the turn goes on (before: it waited 300 s)."""
    workspace = tmp_path / "ws"
    away = tmp_path / "away"
    (workspace / "sub").mkdir(parents=True)
    away.mkdir()
    (tmp_path / "home").mkdir()
    os.mkfifo(away / "HEAD")
    (workspace / "sub" / ".git").write_text(f"gitdir: {away}\n")

    done = _run(tmp_path, workspace, "run: echo one > a.txt")

    assert done.returncode == 0, done.stderr
    assert f"named pipe (FIFO) {away / 'HEAD'}" in done.stdout + done.stderr
    assert (workspace / "a.txt").read_text() == "one\n"


def test_a_line_break_in_a_file_name_adds_no_line_to_what_rewind_and_changes_show(tmp_path: Path) -> None:
    """A command made a file whose name holds a line break and a line of its own (`restore nothing-else`): the
    rewind's preview, which the user confirms, showed it as a line of the plan (attack round 26)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    made = _run(tmp_path, workspace, """run: printf x > "$(printf 'zz\\n      restore nothing-else (harmless)')" """)
    assert made.returncode == 0, made.stderr
    assert any("\n" in p.name for p in workspace.iterdir()), "the control: the file was made"
    for args in (("/changes",), ("/rewind 1 code",)):
        shown = _run(tmp_path, workspace, "--continue", *args)
        assert shown.returncode == 0, shown.stderr
        assert "zz\\x0a      restore nothing-else" in shown.stdout, shown.stdout
        assert not any(line.strip().startswith("restore nothing-else") for line in shown.stdout.splitlines())
