"""Where the bridge finds its own helper programs (bridge/execution/programs.py); end to end in
tests/e2e/test_helper_programs.py. Here, what a Linux run can't show: Windows' PATHEXT."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bridge.execution import programs


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    path.chmod(0o755)
    return path


def test_on_windows_a_helper_is_found_with_its_pathext_extension_and_never_in_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, tools = tmp_path / "folder", tmp_path / "tools"
    executable(folder / "git.EXE")
    git = executable(tools / "git.EXE")
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("PATHEXT", ".COM;.EXE")
    monkeypatch.setenv("PATH", f".:{folder}:{tools}")
    assert programs.helper("git") == str(git)
    monkeypatch.setenv("PATH", f".:{folder}")
    assert programs.helper("git") is None
