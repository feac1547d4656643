"""Attack round 14 on git and the settings of other programs: what a write may set up for later (git configuration
reached through `commondir`, Bazaar's and pdb's settings) asks even where writes in the workspace don't
(acceptEdits); and a junk `.git/` folder no longer hides the bare repository git takes the folder for. Each
attack is proven by its side effect too."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bridge.permissions.modes import Mode
from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide
from tests.test_permission_round11 import bare, behavior


def write(found: Workspace, path: str, mode: Mode = "acceptEdits") -> str:
    return decide(engine(found, mode), "Write", {"file_path": str(found.ws / path), "content": "x\n"}).behavior


def test_a_commondir_makes_a_config_without_head_count(found: Workspace, tmp_path: Path) -> None:
    """The helper's chain: `sub/HEAD`, `sub/commondir` naming `tools/cache`, a `config` there (no HEAD beside it,
    so not git-directory shaped) with `objects/` and `refs/`: git in `sub` ran the config's pager. The
    `commondir` is the one write git needs that nothing else explains: it asks."""
    ws = found.ws
    (ws / "tools" / "cache" / "objects").mkdir(parents=True)
    (ws / "tools" / "cache" / "refs").mkdir()
    marker = tmp_path / "PWNED"
    (ws / "tools" / "cache" / "config").write_text(f'[core]\n\tbare = true\n\tpager = "touch {marker}; cat"\n')
    (ws / "sub").mkdir()
    (ws / "sub" / "HEAD").write_text("ref: refs/heads/main\n")
    assert write(found, "sub/commondir") == "ask"
    assert write(found, "sub/commondir", "default") == "ask"
    # the side effect the question stands for: with the file, git in `sub` runs the folder's configuration
    (ws / "sub" / "commondir").write_text("../tools/cache\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"GIT_PAGER": "", "PAGER": ""}
    shown = subprocess.run(
        ["git", "config", "--show-origin", "core.pager"], cwd=ws / "sub", capture_output=True, text=True, env=env
    )
    assert "tools/cache/config" in shown.stdout, shown


@pytest.mark.parametrize("path", ["config.worktree", "a/b/config.worktree", ".bzr/branch/branch.conf", ".pdbrc"])
def test_other_later_run_settings_ask(found: Workspace, path: str) -> None:
    assert write(found, path) == "ask", path


def test_an_ordinary_config_file_is_still_written(found: Workspace) -> None:
    assert write(found, "app/config") == "allow"
    assert write(found, "docs/commondir.md") == "allow"


@pytest.mark.parametrize("command", ["git -C b log -p -1", "cd b && git status --short", "cd b && git diff HEAD"])
def test_a_junk_git_folder_does_not_hide_a_bare_repository(found: Workspace, command: str) -> None:
    """A `.git/` folder that is no git directory (no HEAD, objects, refs) beside a bare repository's files: git
    passes over it and takes the folder for the bare repository, whose config ran a program (the helper's
    `diff.evil.textconv`, through `git log -p`); the check took the junk folder for the repository and allowed."""
    bare(found.ws / "b", head="file", refs="dir")
    (found.ws / "b" / ".git").mkdir()
    (found.ws / "b" / ".git" / "README").write_text("junk\n")
    assert behavior(found, command) == "ask", command
    subprocess.run(["git", "status"], cwd=found.ws / "b", capture_output=True, timeout=30, check=False)
    assert (found.ws / "b" / "PWNED").exists() or (found.ws / "PWNED").exists()  # git does take it for one


def test_a_junk_git_folder_in_a_plain_folder_is_passed_over_as_git_does(found: Workspace) -> None:
    """Past a `.git/` that is no git directory git goes on up: here to the workspace's own repository."""
    (found.ws / "c" / ".git").mkdir(parents=True)
    assert behavior(found, "cd c && git status --short") == "allow"
