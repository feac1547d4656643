"""Memory files (bridge/memory.py): a folder's are regular files inside the project, read without following a
link out, size-capped; the user's own may be links but are still regular files. Real files, links, a FIFO."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bridge.memory import MAX_BYTES, load_memory


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("LEAKED_ON_PURPOSE", "ENVIRONMENT-SECRET")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_a_link_out_of_the_project_is_skipped_with_the_reason(project: Path, tmp_path: Path) -> None:
    (project / "CLAUDE.md").symlink_to("/proc/self/environ")
    (project / "AGENTS.md").symlink_to(tmp_path / "home" / ".ssh" / "id_rsa")
    memory = load_memory(project)
    assert memory.section == ""
    assert [s.split(": ", 1)[1] for s in memory.skipped] == ["it is a link to a file outside the project"] * 2
    assert "ENVIRONMENT-SECRET" not in memory.section and "PRIVATE KEY" not in memory.section


def test_a_link_inside_the_project_and_plain_files_are_read(project: Path) -> None:
    (project / "docs").mkdir()
    (project / "docs" / "agents.md").write_text("Run the tests with make test.")
    (project / "AGENTS.md").symlink_to("docs/agents.md")
    (project / "CLAUDE.md").write_text("Be brief.")
    memory = load_memory(project)
    assert "Run the tests with make test." in memory.section and "Be brief." in memory.section
    assert memory.skipped == []


def test_a_fifo_a_directory_and_a_huge_file_are_skipped_without_waiting(project: Path) -> None:
    os.mkfifo(project / "CLAUDE.md")  # nothing writes to it: a blocking open would hang the session's start
    (project / "AGENTS.md").mkdir()
    (project / "CLAUDE.local.md").write_bytes(b"x" * (MAX_BYTES + 1))
    memory = load_memory(project)
    reasons = sorted(s.split(": ", 1)[1] for s in memory.skipped)
    assert memory.section == "" and len(reasons) == 3, memory.skipped
    assert reasons[0] == "it is larger than 256 KiB (262,145 bytes)"
    assert reasons[1:] == ["it is not a regular file"] * 2


def test_a_directory_link_on_the_way_down_is_not_followed(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text("FROM OUTSIDE")
    (project / "sub").symlink_to(outside)
    memory = load_memory(project / "sub")
    assert "FROM OUTSIDE" not in memory.section


def test_the_users_own_memory_may_be_a_link_but_not_a_device(project: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "CLAUDE.md").write_text("My own rules.")
    (tmp_path / "home" / ".claude").mkdir()
    (tmp_path / "home" / ".claude" / "CLAUDE.md").symlink_to(dotfiles / "CLAUDE.md")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "AGENTS.md").symlink_to("/dev/zero")
    memory = load_memory(project)
    assert "My own rules." in memory.section
    assert [s.split(": ", 1)[1] for s in memory.skipped] == ["it is not a regular file"]


def test_a_memory_file_never_leads_into_gits_own_folder(project: Path) -> None:
    """Attack round 36's note: a committed `CLAUDE.md -> .git/config` put the clone's settings into the first
    request, where a checkout's token can be (`http.extraheader`)."""
    (project / ".git" / "config").write_text("[http]\n\textraheader = AUTHORIZATION: basic GIT-TOKEN-77\n")
    (project / "CLAUDE.md").symlink_to(".git/config")
    (project / "docs").mkdir()
    (project / "docs" / "rules.md").write_text("The project's rule.")
    (project / "AGENTS.md").symlink_to("docs/rules.md")
    memory = load_memory(project)
    assert "GIT-TOKEN-77" not in memory.section
    assert [s.split(": ", 1)[1] for s in memory.skipped] == [
        "it leads into git's own folder (.git), which can hold the clone's credentials"
    ]
    assert "The project's rule." in memory.section, "the control: a link elsewhere inside the folder is read"


def test_a_folder_above_the_workspace_links_no_further_out_than_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack round 36: the same unpacked folder, its subfolder opened: the folder's `CLAUDE.md`, one level above
    the workspace, linked to the repository's `.env` and was read as the repository's (inside it), into the first
    request. Each folder's memory file now stays inside the folder that holds it."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "cfg"))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".env").write_text("AWS_SECRET_ACCESS_KEY=SECRET-99")
    (repo / "AGENTS.md").write_text("The repository's own rule.")
    evil = repo / "vendor" / "evil"
    (evil / "src").mkdir(parents=True)
    (evil / "docs").mkdir()
    (evil / "docs" / "rules.md").write_text("The folder's own rule.")
    (evil / "CLAUDE.md").symlink_to("../../.env")
    (evil / "AGENTS.md").symlink_to("docs/rules.md")
    memory = load_memory(evil / "src")
    assert "SECRET-99" not in memory.section
    assert any(s.startswith(f"{evil / 'CLAUDE.md'}: it is a link") for s in memory.skipped), memory.skipped
    assert "The folder's own rule." in memory.section, "the control: a link inside its folder is read"
    assert "The repository's own rule." in memory.section


def test_a_folder_below_an_ancestor_repository_links_no_further_out_than_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unpacked folder with no `.git` of its own, below a home kept in git (dotfiles) or a monorepo: its own
    memory files stay inside the folder opened; the ancestor repository's own files are still read."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AGENT_BRIDGE_CONFIG_DIR", str(tmp_path / "cfg"))
    (home / ".git").mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- SECRET")
    (home / "CLAUDE.md").write_text("The home repository's own rule.")
    folder = home / "Downloads" / "cool-tool"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "rules.md").write_text("The folder's own rule.")
    (folder / "CLAUDE.md").symlink_to("../../.ssh/id_rsa")
    (folder / "AGENTS.md").symlink_to("docs/rules.md")
    (folder / "CLAUDE.local.md").symlink_to("../../CLAUDE.md")
    memory = load_memory(folder)
    assert "PRIVATE KEY" not in memory.section
    assert "The folder's own rule." in memory.section, "the control: a link inside the folder is read"
    assert "The home repository's own rule." in memory.section, "the ancestor's own file is read, as its own"
    assert sorted(s.rsplit("/", 1)[1] for s in memory.skipped) == [
        "CLAUDE.local.md: it is a link to a file outside the project",
        "CLAUDE.md: it is a link to a file outside the project",
    ]
