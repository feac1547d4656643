"""A folder that brings its own `.git` (an unpacked archive, a copied project, a container's /workspace) must not
run code or read outside the workspace through the read-only git commands the bridge allows with no question
(`git status`, `git diff`, `git show`). Each hostile repository is proven hostile by running the same command
directly afterwards: the marker appears, or the secret is printed. Through the bridge, with the OS sandbox
unavailable (as where user namespaces are blocked, or on Windows) and no one to answer a question, nothing ran."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.e2e.harness import text_response, tool_response
from tests.e2e.test_trust import git, run_cli, scenario_file

SECRET = "OUTSIDE-SECRET-5150"


def repository(where: Path, files: dict[str, str] | None = None) -> Path:
    where.mkdir(parents=True)
    git(where, "init", "-q")
    for name, text in (files or {"a.txt": "one\n"}).items():
        (where / name).write_text(text)
    git(where, "add", ".")
    git(where, "commit", "-q", "-m", "first")
    return where


def add_config(repo: Path, text: str) -> None:
    with open(repo / ".git" / "config", "a") as handle:
        handle.write(text)


def fsmonitor(ws: Path, marker: Path, outside: Path) -> str:
    add_config(repository(ws / "fsmonitor"), f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    return "git -C fsmonitor status"


def textconv(ws: Path, marker: Path, outside: Path) -> str:
    repo = repository(ws / "textconv", {"a.txt": "one\n", ".gitattributes": "*.txt diff=pretty\n"})
    add_config(repo, f'[diff "pretty"]\n\ttextconv = "touch {marker}; cat"\n')
    (repo / "a.txt").write_text("two\n")
    return "git -C textconv diff"


def clean_filter(ws: Path, marker: Path, outside: Path) -> str:
    repo = repository(ws / "filter", {"a.txt": "one\n", ".gitattributes": "*.txt filter=tidy\n"})
    add_config(repo, f'[filter "tidy"]\n\tclean = "touch {marker}; cat"\n')
    (repo / "a.txt").write_text("two\n")
    return "git -C filter diff"


def index_hook(ws: Path, marker: Path, outside: Path) -> str:
    repo = repository(ws / "hook")
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    os.utime(repo / "a.txt", (1, 1))  # stale stat data: `git status` refreshes the index and writes it
    return "git -C hook status"


def hooks_path(ws: Path, marker: Path, outside: Path) -> str:
    repo = repository(ws / "hookspath")
    hooks = repo / "githooks"
    hooks.mkdir()
    (hooks / "post-index-change").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "post-index-change").chmod(0o755)
    add_config(repo, "[core]\n\thooksPath = githooks\n")
    os.utime(repo / "a.txt", (1, 1))
    return "git -C hookspath status"


def husky_like(ws: Path) -> str:
    """A repository as people's are: hooks for commits (husky sets core.hooksPath), and what GitHub's CLI and
    VS Code write to the config. A read runs none of it, so it asks nothing."""
    repo = repository(ws / "husky")
    hooks = repo / ".husky" / "_"
    hooks.mkdir(parents=True)
    (hooks / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (hooks / "pre-commit").chmod(0o755)
    add_config(
        repo,
        '[core]\n\thooksPath = .husky/_\n[remote "origin"]\n\turl = https://example.com/x.git\n'
        '\tgh-resolved = base\n[branch "main"]\n\tvscode-merge-base = origin/main\n',
    )
    return "git -C husky status"


def included(ws: Path, marker: Path, outside: Path) -> str:
    tools = f'[core]\n\tfsmonitor = "touch {marker}; false"\n'
    repo = repository(ws / "include", {"a.txt": "one\n", "tools.cfg": tools})
    add_config(repo, "[include]\n\tpath = ../tools.cfg\n")
    return "git -C include status"


def submodule(ws: Path, marker: Path, outside: Path) -> str:
    repo = repository(ws / "outer")
    inner = repository(repo / "vendor" / "lib")
    git(repo, "add", "vendor/lib")  # tracked as a submodule (a gitlink): `git status` runs status inside it
    git(repo, "commit", "-q", "-m", "vendor")
    add_config(inner, f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    return "git -C outer status"


def worktree_outside(ws: Path, marker: Path, outside: Path) -> str:
    (outside / "notes.txt").write_text("nothing yet\n")
    repo = repository(ws / "worktree")
    git(repo, f"--work-tree={outside}", "add", "notes.txt")
    git(repo, f"--work-tree={outside}", "commit", "-q", "-m", "notes")
    add_config(repo, f"[core]\n\tworktree = {outside}\n")
    (outside / "notes.txt").write_text(f"{SECRET}\n")
    return "git -C worktree diff"


def alternates(ws: Path, marker: Path, outside: Path) -> str:
    private = repository(outside / "private", {"key.txt": f"{SECRET}\n"})
    blob = git(private, "rev-parse", "HEAD:key.txt").strip()
    repo = repository(ws / "alternates")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{private}/.git/objects\n")
    return f"git -C alternates show {blob}"


def commondir(ws: Path, marker: Path, outside: Path) -> str:
    private = repository(outside / "private2", {"key.txt": f"{SECRET}\n"})
    repo = ws / "common"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    (repo / ".git" / "commondir").write_text(f"{private}/.git\n")
    return "git -C common log -p"


def symlinked_gitdir(ws: Path, marker: Path, outside: Path) -> str:
    private = repository(outside / "private3", {"key.txt": f"{SECRET}\n"})
    (ws / "linked").mkdir()
    (ws / "linked" / ".git").symlink_to(private / ".git")
    return "git -C linked log -p"


HOSTILE: list[Callable[[Path, Path, Path], str]] = [
    fsmonitor,
    textconv,
    clean_filter,
    index_hook,
    hooks_path,
    included,
    submodule,
    worktree_outside,
    alternates,
    commondir,
    symlinked_gitdir,
]


async def test_a_folders_own_git_runs_nothing_and_reads_nothing_outside_through_read_only_git(tmp_path: Path) -> None:
    ws, markers, outside = tmp_path / "ws", tmp_path / "markers", tmp_path / "outside"
    for made in (ws, markers, outside):
        made.mkdir()
    repository(ws / "plain")
    benign = ["git -C plain status", husky_like(ws)]
    commands = {build.__name__: build(ws, markers / build.__name__, outside) for build in HOSTILE}
    calls = [tool_response(("Bash", {"command": c})) for c in [*benign, *commands.values()]]
    scenario = scenario_file(tmp_path, [*calls, text_response("done")])
    out = await run_cli(
        tmp_path, ws, "look", "--non-interactive", scenario=scenario, env={"AGENT_BRIDGE_BWRAP": "/bin/false"}
    )
    lines = out.splitlines()
    for command in benign:
        shown = lines.index(f"● `{command}`")
        assert "On branch" in lines[shown + 1], f"the control: `{command}` runs with no question\n{out}"
    assert sorted(p.name for p in markers.iterdir()) == [], out
    assert SECRET not in out
    for stored in (tmp_path / "data").rglob("*"):
        assert not stored.is_file() or SECRET not in stored.read_text(errors="replace"), stored
    for name, command in commands.items():
        shown = lines.index(f"● `{command}`")
        assert "Permission denied" in lines[shown + 1] and "no one can answer" in lines[shown + 1], (name, out)
    for name, command in commands.items():
        printed = run_directly(command, ws, tmp_path / "home")
        assert (markers / name).exists() or SECRET in printed, f"{name} is hostile: run directly, it acts\n{printed}"


def run_directly(command: str, cwd: Path, home: Path) -> str:
    env = {**os.environ, "HOME": str(home)}
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return done.stdout + done.stderr


async def test_a_fifo_in_gits_place_is_answered_at_once_not_waited_on(tmp_path: Path) -> None:
    """A FIFO where git keeps its index, its object stores' list or its common directory: the check reads none
    of them blocking (it would hold the permission check until its deadline, and a thread forever)."""
    ws = tmp_path / "ws"
    commands = []
    for name in ("objects/info/alternates", "index", "commondir"):
        repo = repository(ws / name.replace("/", "-"))
        target = repo / ".git" / name
        target.unlink(missing_ok=True)
        os.mkfifo(target)
        commands.append(f"git -C {repo.name} status")
    calls = [tool_response(("Bash", {"command": c})) for c in commands]
    out = await run_cli(
        tmp_path, ws, "look", "--non-interactive", scenario=scenario_file(tmp_path, [*calls, text_response("ok")])
    )
    lines = out.splitlines()
    for command in commands:
        answer = lines[lines.index(f"● `{command}`") + 1]
        assert "can't be read" in answer and "took longer" not in answer, out
