"""Attack round 8: the bridge's data dir is private. Transcripts, stored command output and the checkpoint store
(command output, file contents) were made with the umask's modes (folders 0755, files 0644): any local user
could read them wherever the home folder can be walked through. Now every folder the bridge makes there is 0700
and every file it writes is its owner's alone (git's read-only objects: 0400), whatever the umask; a data dir the
bridge used before the fix is tightened when a session opens it — never a folder of the user's around it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.scripted_run import scripted_run

pytestmark = pytest.mark.skipif(os.name == "nt", reason="Windows has no POSIX modes: the ACLs of the profile rule")


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask (what a bridge started from a login shell has): the bridge's processes inherit it."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def modes(root: Path) -> dict[str, int]:
    """Every folder and file under `root` (itself included) by relative path, with its permission bits."""
    found = {".": stat.S_IMODE(root.lstat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def session(tmp_path: Path, data: Path, calls: list[tuple[str, dict[str, object]]]) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "big.txt").write_text("".join(f"line {i} {'x' * 80}\n" for i in range(600)))
    env = {"AGENT_BRIDGE_DATA_DIR": str(data), "HOME": str(tmp_path), "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg")}
    scripted_run(ws, calls, "--dangerously-approve-all", env=env, scenario=tmp_path / "scenario.json")
    return ws


def assert_private(data: Path, *, but: tuple[str, ...] = ()) -> None:
    loose = {
        path: oct(mode)
        for path, mode in modes(data).items()
        if (mode != 0o700 if (data / path).is_dir() else mode & 0o077)
        and not any(part in but for part in Path(path).parts)
    }
    assert not loose, loose


def test_a_sessions_transcripts_output_and_checkpoints_are_the_owners_alone(tmp_path: Path, umask_022: None) -> None:
    data = tmp_path / "home" / "data"
    calls: list[tuple[str, dict[str, object]]] = [
        ("Bash", {"command": "cat big.txt"}),  # long: its whole output is stored (bash-output)
        ("Write", {"file_path": str(tmp_path / "ws" / "new.txt"), "content": "FILE-CONTENT\n"}),  # a checkpoint
        ("Edit", {"file_path": str(tmp_path / "ws" / "new.txt"), "old_string": "FILE", "new_string": "EDITED"}),
    ]
    ws = session(tmp_path, data, calls)
    assert (ws / "new.txt").read_text() == "EDITED-CONTENT\n"
    stored = {path for path in modes(data) if "/" in path}
    assert any(path.startswith("sessions/") and path.endswith(".jsonl") for path in stored), stored
    assert any("/bash-output/" in path for path in stored), stored
    assert any(path.startswith("checkpoints/") and "/objects/" in path for path in stored), stored
    assert_private(data)
    assert stat.S_IMODE((tmp_path / "home").stat().st_mode) == 0o755, "the folder around the data dir is the user's"
    assert stat.S_IMODE((ws / "new.txt").stat().st_mode) == 0o644, "the workspace keeps the umask's modes"


def test_the_process_registrys_folder_is_the_owners_alone(tmp_path: Path, umask_022: None) -> None:
    data = tmp_path / "data"
    session(tmp_path, data, [("Bash", {"command": "echo hi"})])
    assert (data / "running").is_dir()
    assert_private(data)


def test_a_large_stored_tool_result_is_the_owners_alone(tmp_path: Path, umask_022: None) -> None:
    from bridge.tools.storage import bound_result

    session = tmp_path / "data" / "sessions" / "sess_a"  # (made private by Transcript.create in a session)
    bound_result("z" * 500, limit=100, data_dir=session, tool_use_id="toolu_1")
    assert (session / "tool-results" / "toolu_1.txt").is_file()
    assert_private(session / "tool-results")


def test_a_data_dir_from_before_is_tightened_and_a_folder_holding_the_workspace_is_not(
    tmp_path: Path, umask_022: None
) -> None:
    old = tmp_path / "old"
    (old / "sessions").mkdir(parents=True)
    (old / "checkpoints").mkdir()
    (old / "sessions").chmod(0o755)
    old.chmod(0o755)
    session(tmp_path, old, [("Bash", {"command": "echo hi"})])
    assert stat.S_IMODE(old.stat().st_mode) == 0o700
    assert stat.S_IMODE((old / "sessions").stat().st_mode) == 0o700

    around = tmp_path  # a data dir set to a folder the workspace is in: the user's folder, left as it is
    tmp_path.chmod(0o755)
    (tmp_path / "sessions").mkdir()
    session(tmp_path, around, [("Bash", {"command": "echo hi"})])
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "ws").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "sessions").stat().st_mode) == 0o700, "its own folder in it is still private"
