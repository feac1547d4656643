"""A hook of the user's own settings that runs the folder's files runs the folder's code: until the user trusts the
folder, it stays off, as the folder's own hooks do. A cloned repository had only to ship the script a user's hook
names — `"$CLAUDE_PROJECT_DIR"/.claude/hooks/format.sh` is Claude Code's documented pattern — or the `Makefile`,
the `json.py`, the `conftest.py` that the user's `make lint`, `python3 -c …`, `pytest` picks up, to run code
outside the sandbox with the user's permissions at the first prompt, with no question asked.

Every case is proven by its side effect: the clone's code leaves a file in the home folder, where nothing sandboxed
can write. The control of each: the same hook in a trusted folder does run (as the user's own: outside the sandbox),
and a hook that runs none of the folder's files runs untrusted as before."""

from __future__ import annotations

import json
import py_compile
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import running_editor, text_response
from tests.e2e.test_trust import UNTRUSTED, answering, clone, git, hook, run_cli

PYTHON = shlex.quote(sys.executable)


def evil_script(name: str) -> str:
    return f'#!/bin/sh\ntouch "$HOME/{name}"\n'


# (the user's hook command, the clone's files it picks up, the file the clone's code leaves in the home folder)
CLASSES: dict[str, tuple[str, dict[str, str], str]] = {
    "project dir script": (
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/format.sh',
        {".claude/hooks/format.sh": evil_script("pwned-script")},
        "pwned-script",
    ),
    "relative script": ("sh .claude/hooks/format.sh", {".claude/hooks/format.sh": evil_script("pwned-sh")}, "pwned-sh"),
    "bash -c": (
        'bash -c "$CLAUDE_PROJECT_DIR/tools/lint"',
        {"tools/lint": evil_script("pwned-bash-c")},
        "pwned-bash-c",
    ),
    "a glob": (
        'for f in .claude/hooks/*.sh; do sh "$f"; done',
        {".claude/hooks/fmt.sh": evil_script("pwned-glob")},
        "pwned-glob",
    ),
    "a path computed from the working folder": (
        'X=$(pwd) && sh "$X/tools/fmt.sh"',
        {"tools/fmt.sh": evil_script("pwned-computed")},
        "pwned-computed",
    ),
    "make": ("make -s lint", {"Makefile": 'lint:\n\ttouch "$(HOME)/pwned-make"\n'}, "pwned-make"),
    "a module that shadows the library's": (
        f"{PYTHON} -c 'import json'",
        {"json.py": "import os\nopen(os.path.expanduser('~/pwned-json'), 'w').close()\n"},
        "pwned-json",
    ),
    "a tool that finds the folder's code itself": (
        f"{PYTHON} -m pytest -q --collect-only -p no:cacheprovider",
        {"conftest.py": "import os\nopen(os.path.expanduser('~/pwned-pytest'), 'w').close()\n", "test_x.py": ""},
        "pwned-pytest",
    ),
}


def users_hook(tmp_path: Path, command: str) -> None:
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": hook(command)}}))


def executable(project: Path) -> None:
    for script in project.rglob("*"):
        if script.is_file() and script.read_text(errors="replace").startswith("#!"):
            script.chmod(0o755)


@pytest.mark.parametrize("case", list(CLASSES))
async def test_run_a_users_hook_that_runs_the_clones_files_waits_for_trust(tmp_path: Path, case: str) -> None:
    command, files, left = CLASSES[case]
    users_hook(tmp_path, command)
    project = clone(tmp_path, files)
    executable(project)
    home = tmp_path / "home"
    env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    out = await run_cli(tmp_path, project, "hello", env=env)
    assert not (home / left).exists(), out
    assert "stay off until you trust them" in out and "your hook runs this folder's files" in out, out
    assert str(tmp_path / "cfg" / "settings.json") in out, out  # the user's file is named: it is theirs
    out = await run_cli(tmp_path, project, "hello", "--trust-folder", env=env)
    assert (home / left).exists(), f"the control: trusted, the hook runs as the user's own (outside the sandbox)\n{out}"


async def test_run_a_users_hook_that_runs_nothing_of_the_folders_runs_untrusted(tmp_path: Path) -> None:
    """The control for the class: `python3 -c` where the folder has no module, a script of the user's own."""
    mine = tmp_path / "mine.sh"
    mine.write_text(evil_script("mine-ran"))
    mine.chmod(0o755)
    (tmp_path / "cfg").mkdir()
    hooks = hook(f"{PYTHON} -c 'import json'") + hook(shlex.quote(str(mine)))
    (tmp_path / "cfg" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": hooks}}))
    project = clone(tmp_path, {"README.md": "hi\n"})
    out = await run_cli(tmp_path, project, "hello")
    assert (tmp_path / "home" / "mine-ran").exists(), out
    assert "stay off" not in out, out


async def test_serve_the_question_names_the_users_hook_and_a_pulled_change_asks_again(
    tmp_path: Path, data_dir: Path
) -> None:
    command = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/format.sh'
    (data_dir / "config").mkdir(parents=True, exist_ok=True)
    user_file = data_dir / "config" / "settings.json"
    user_file.write_text(json.dumps({"hooks": {"UserPromptSubmit": hook(command)}}))
    project = clone(tmp_path, {".claude/hooks/format.sh": evil_script("formatted")})
    origin = tmp_path / "origin"
    executable(origin)  # (published executable, as a script is)
    git(origin, "commit", "-qam", "executable")
    git(project, "pull", "-q")
    home = data_dir / "home"

    async def session(answer: str) -> list[dict[str, Any]]:
        async with running_editor({"responses": [text_response("done")]}, project, data_dir, env=UNTRUSTED) as ed:
            ed.on_permission = answering(answer)
            sid = await ed.new_session()
            assert await ed.prompt(sid, "hello") == {"stopReason": "end_turn"}
            return [r for r in ed.permission_requests if "trust" in (r.get("_meta") or {})]

    [question] = await session("not_now")
    assert not (home / "formatted").exists(), "not trusted: the clone's script did not run"
    shown = question["toolCall"]["content"][0]["content"]["text"]
    assert f"{user_file}: your hook runs this folder's files: UserPromptSubmit: {command}" in shown, shown
    assert ".claude/hooks/format.sh sha256:" in shown and "outside the sandbox" in shown, shown
    assert "Its hooks run in the OS sandbox" not in shown, "it will not: the line is for the folder's own hooks"
    assert shown.startswith(f"{project.resolve()} has files your own hooks would run."), shown
    [item] = question["_meta"]["trust"]["items"]
    assert item["own"] == "yes" and item["file"] == str(user_file), item

    [_] = await session("trust")
    assert (home / "formatted").exists(), "the control: trusted, it runs"
    (home / "formatted").unlink()
    assert await session("not_now") == [], "trusted and unchanged: nothing to ask"
    assert (home / "formatted").exists()
    (home / "formatted").unlink()

    (origin / ".claude/hooks/format.sh").write_text(evil_script("pulled"))
    git(origin, "commit", "-qam", "faster formatting")
    git(project, "pull", "-q")
    [question] = await session("not_now")
    assert not (home / "pulled").exists() and not (home / "formatted").exists(), "the changed script did not run"
    shown = question["toolCall"]["content"][0]["content"]["text"]
    assert ".claude/hooks/format.sh changed since you trusted" in shown, shown


async def test_run_what_a_second_look_found_waits_for_trust_too(tmp_path: Path) -> None:
    """Attack round 36 on the above, each proven by its side effect, then the control (trusted, it runs): a command
    computed inside a log line, a shell script of the user's own that runs `make` in the folder, and a package of
    bytecode alone that shadows the library's `json`."""
    home = tmp_path / "home"
    script = home / ".claude" / "hooks" / "stop.sh"
    script.parent.mkdir(parents=True)
    script.write_text('#!/bin/sh\ncd "$CLAUDE_PROJECT_DIR" || exit 0\n[ -f Makefile ] && make -s note\n')
    script.chmod(0o755)
    commands = [
        'echo "done: $(make -s status 2>&1 | tail -1)" >> ~/hook.log',
        f"{PYTHON} -c 'import json, sys' >> ~/hook.log",
        "sh ~/.claude/hooks/stop.sh",
    ]
    makefile = 'status:\n\t@touch "$(HOME)/pwned-computed"\nnote:\n\t@touch "$(HOME)/pwned-own-script"\n'
    project = clone(tmp_path, {"Makefile": makefile})
    evil = tmp_path / "evil.py"
    evil.write_text("import os\nopen(os.path.expanduser('~/pwned-bytecode'), 'w').close()\n")
    (project / "json").mkdir()
    py_compile.compile(str(evil), cfile=str(project / "json" / "__init__.pyc"), doraise=True)
    await held_until_trusted(tmp_path, project, commands, ["pwned-bytecode", "pwned-computed", "pwned-own-script"])


async def held_until_trusted(tmp_path: Path, project: Path, commands: list[str], left: list[str]) -> None:
    """`commands` as the user's own prompt hooks: untrusted, none leaves its file in the home folder and each is
    named as the folder's; trusted (the control), each does."""
    home = tmp_path / "home"
    hooks = {"UserPromptSubmit": [entry for command in commands for entry in hook(command)]}
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    out = await run_cli(tmp_path, project, "hello")
    assert [name for name in left if (home / name).exists()] == [], out
    assert out.count("your hook runs this folder's files") == len(commands), out
    out = await run_cli(tmp_path, project, "hello", "--trust-folder")
    assert [name for name in left if (home / name).exists()] == left, f"the control: trusted, they run\n{out}"


async def test_run_what_its_verification_found_waits_for_trust_too(tmp_path: Path) -> None:
    """Attack round 36's verification, each by its side effect, then the control: a command held in a variable, a
    Python script of the user's that starts `make`, and a wrapper script of the user's that runs its arguments."""
    home = tmp_path / "home"
    hooks_folder = home / ".claude" / "hooks"
    hooks_folder.mkdir(parents=True)
    (hooks_folder / "stop.py").write_text("import subprocess\nsubprocess.run(['make', '-s', 'python'])\n")
    (hooks_folder / "with-timeout.sh").write_text('#!/bin/sh\nexec timeout 60 "$@"\n')
    (hooks_folder / "with-timeout.sh").chmod(0o755)
    commands = [
        'CMD="make -s variable"; $CMD >> ~/hook.log 2>&1',
        f"{PYTHON} ~/.claude/hooks/stop.py",
        "~/.claude/hooks/with-timeout.sh make -s wrapped",
    ]
    left = ["pwned-python", "pwned-variable", "pwned-wrapped"]
    makefile = "".join(f'{name.split("-")[1]}:\n\t@touch "$(HOME)/{name}"\n' for name in left)
    await held_until_trusted(tmp_path, clone(tmp_path, {"Makefile": makefile}), commands, left)
