"""The sandbox shows the workspace as it is: no placeholder anyone can see, git changes exactly what it would
outside (compared against the same commands run in a copy outside the sandbox), a write the user allowed
gets made, and a refusal says it was the sandbox and what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bridge.execution.supervisor import ProcessSupervisor
from tests.execution.test_sandbox import AVAILABLE, Project, output
from tests.git_env import GIT_TEST_ENV

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")
FIXED = GIT_TEST_ENV


@pytest.fixture
def fixed_git(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Commits that depend on nothing but their content, inside the sandbox and out."""
    for key, value in FIXED.items():
        monkeypatch.setenv(key, value)
    yield


@pytest.fixture
async def supervisor(tmp_path: Path) -> AsyncIterator[ProcessSupervisor]:
    sup = ProcessSupervisor(data_dir=tmp_path / "data")
    yield sup
    await sup.shutdown()


@pytest.fixture
async def repo(tmp_path: Path, supervisor: ProcessSupervisor) -> AsyncIterator[Project]:
    proj = Project(tmp_path, supervisor)
    yield proj
    await proj.background.shutdown()
    proj.sandbox.close()


@pytest.fixture
async def fresh(tmp_path: Path, supervisor: ProcessSupervisor) -> AsyncIterator[Project]:
    proj = Project(tmp_path, supervisor, name="fresh", repository=False)
    yield proj
    await proj.background.shutdown()
    proj.sandbox.close()


def outside(cwd: Path, command: str) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=False)
    return (done.stdout + done.stderr).strip()


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry below `root` with its content (files), link target or kind: what a command changed. The index
    (it records inode numbers and times, which differ between two copies) is compared as `git ls-files -s`."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if name == ".git/index":
            found[name] = outside(root, "git ls-files -s")
        elif path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_bytes()
    return found


def twin(project: Project) -> Path:
    """A copy of the workspace outside the sandbox, to run the same command in."""
    copy = project.root / "outside-copy"
    shutil.copytree(project.ws, copy, symlinks=True)
    return copy


@pytest.mark.parametrize("repository", [False, True], ids=["fresh", "repo"])
async def test_no_placeholder_is_visible_to_ls_or_git(
    tmp_path: Path, supervisor: ProcessSupervisor, repository: bool
) -> None:
    project = Project(tmp_path, supervisor, repository=repository)
    try:
        (project.ws / "file.txt").write_text("x\n")
        await project.run("sleep 30", run_in_background=True)  # another sandbox running at the same time
        probe = "ls -A; echo ---; git status --porcelain --untracked-files=all 2>&1 | grep -v '^fatal' ; true"
        inside = await project.run(probe)
        assert output(inside) == outside(project.ws, probe)
        assert sorted(os.listdir(project.ws)) == ([".git", "file.txt"] if repository else ["file.txt"])
    finally:
        await project.background.shutdown()
        project.sandbox.close()


@pytest.mark.usefixtures("fixed_git")
async def test_git_add_and_commit_change_exactly_what_they_would_outside(repo: Project) -> None:
    (repo.ws / "src").mkdir()
    (repo.ws / "src" / "app.py").write_text("print('hi')\n")
    (repo.ws / "README.md").write_text("# r\n")
    (repo.ws / ".gitignore").write_text("build/\n")
    (repo.ws / "build").mkdir()
    (repo.ws / "build" / "out.o").write_text("x")
    copy = twin(repo)
    command = "git add -A && git commit -q -m x && git log --format=%H -1 && git status --porcelain"
    inside = await repo.run(command)
    assert not inside.is_error, output(inside)
    assert output(inside) == outside(copy, command)
    assert tree(repo.ws) == tree(copy)
    assert outside(repo.ws, "git show --stat --format= HEAD").count("|") == 3  # no phantom file in the commit


@pytest.mark.usefixtures("fixed_git")
async def test_git_init_in_a_new_folder_makes_what_it_would_outside(fresh: Project) -> None:
    (fresh.ws / "notes.txt").write_text("n\n")
    copy = twin(fresh)
    command = "git init -q && git add -A && git commit -q -m first && git log --format=%H"
    inside = await fresh.run(command)
    assert not inside.is_error, output(inside)
    assert output(inside) == outside(copy, command)
    assert tree(fresh.ws) == tree(copy)
    assert "[sandbox]" not in output(inside)


@pytest.mark.usefixtures("fixed_git")
async def test_git_config_writes_what_the_user_allowed(repo: Project) -> None:
    config = repo.ws / ".git" / "config"
    before = config.read_bytes()
    copy = twin(repo)
    refused = await repo.run("git config user.name someone")  # as if allowed without the question naming it
    assert refused.is_error and config.read_bytes() == before
    assert f"[sandbox] The sandbox keeps {config} read-only: git's settings" in output(refused)
    allowed = await repo.run("git config user.name someone", grants=(config,))  # the user said yes to it
    assert not allowed.is_error, output(allowed)
    outside(copy, "git config user.name someone")
    assert tree(repo.ws) == tree(copy)  # the same bytes, no lock file left, nothing else
    assert (repo.ws / ".git" / "hooks").is_dir() and not (repo.ws / ".git" / "config.lock").exists()


async def test_a_grant_inside_a_held_directory_opens_only_that_file(repo: Project) -> None:
    claude = repo.ws / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text("{}")
    local = claude / "settings.local.json"
    result = await repo.run(
        "echo '{\"ok\": 1}' > .claude/settings.local.json && echo '{}x' > .claude/settings.json; "
        "echo more > .claude/new.md; exit 0",
        grants=(local,),
    )
    assert local.read_text() == '{"ok": 1}\n', output(result)
    assert (claude / "settings.json").read_text() == "{}"
    assert not (claude / "new.md").exists()
    assert sorted(os.listdir(claude)) == ["settings.json", "settings.local.json"]


async def test_a_symlinked_memory_file_cannot_be_swapped_for_a_file(repo: Project) -> None:
    (repo.ws / "AGENTS.md").write_text("# agents\n")
    (repo.ws / "CLAUDE.md").symlink_to("AGENTS.md")
    result = await repo.run("echo injected >> CLAUDE.md; rm CLAUDE.md && echo injected > CLAUDE.md; exit 0")
    assert (repo.ws / "AGENTS.md").read_text() == "# agents\n"
    claude = repo.ws / "CLAUDE.md"
    assert claude.is_symlink() and os.readlink(claude) == "AGENTS.md", output(result)  # put back as it was
    assert "[sandbox] The sandbox set aside" in output(result)


async def test_a_refused_write_outside_says_which_setting_allows_it(repo: Project) -> None:
    home = Path.home() / f".agent-bridge-test-{uuid.uuid4().hex}"
    home.mkdir()
    target = home / "out.txt"
    try:
        result = await repo.run(f"echo x > {target}")
        assert result.is_error and not target.exists()
    finally:
        shutil.rmtree(home)
    assert f"[sandbox] The sandbox keeps {target} read-only: it is outside the workspace" in output(result)
    assert '"allowWrite"' in output(result)


async def test_the_hosts_tmp_is_not_the_sandboxes_and_the_result_says_so(repo: Project) -> None:
    result = await repo.run(f"cat {repo.outside}/../x.txt 2>&1; echo x > {repo.outside}/y.txt")
    assert result.is_error and not (repo.outside / "y.txt").exists()
    assert "[sandbox] Commands have their own /tmp" in output(result)


async def test_no_network_is_said_with_the_setting(repo: Project) -> None:
    result = await repo.run("python3 -c \"import socket; socket.getaddrinfo('example.com', 443)\"")
    assert result.is_error
    assert 'The sandbox has no network. To allow it, set "sandbox": {"network": {"allowedDomains": ["*"]}}' in output(
        result
    )


async def test_an_allowed_write_of_a_missing_memory_file_is_made(repo: Project) -> None:
    memory = repo.ws / "CLAUDE.md"
    refused = await repo.run("echo '# notes' > CLAUDE.md")  # not allowed by a question: set aside
    assert not memory.exists() and "[sandbox] The sandbox set aside" in output(refused)
    allowed = await repo.run("echo '# notes' > CLAUDE.md", grants=(memory,))  # "Writing CLAUDE.md…? yes"
    assert memory.read_text() == "# notes\n" and "[sandbox]" not in output(allowed)
