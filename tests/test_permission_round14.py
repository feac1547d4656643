"""Attack round 14 on what a write may set up for later: git configuration reached through `commondir`, and the
other programs' settings a folder can hold (Bazaar, pdb). Each write asks even where writes in the workspace
don't (acceptEdits); the attack itself is proven by its side effect."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bridge.permissions.modes import Mode
from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide


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
