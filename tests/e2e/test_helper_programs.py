"""The bridge's own helper programs (checkpoint `git`, the sandbox's `bwrap`, `rg`, `env`) are never the
folder's, whatever the user's PATH says, end to end: `agent-bridge run` in a folder that ships executable `git`,
`bwrap`, `rg`, `env` and `ls` scripts, each of which leaves a marker outside the workspace and then runs the real
program. A PATH with an empty entry (`export PATH="$EXTRA:$PATH"`, EXTRA unset), `.` or the folder itself must
start none of the helpers; an empty or relative entry not the folder's `ls` for the model's auto-allowed `ls`
either (commands get PATH without those entries). The control puts the same scripts early on PATH from a folder
outside the workspace: every one leaves its marker, so this turn does start each helper (and `ls`) by its name."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.e2e.harness import text_response, tool_response
from tests.e2e.test_trust import run_cli, scenario_file

HELPERS = ("git", "bwrap", "rg", "env", "ls")  # `ls`: the model's command, not a helper


def real(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)  # rg: the ripgrep wheel's
    assert os.access(found, os.X_OK), f"this test needs {name}"
    return found


def plant(folder: Path, markers: Path) -> None:
    """`folder/NAME` for each helper: note the call in `markers/NAME`, then run the real one."""
    folder.mkdir(exist_ok=True)
    for name in HELPERS:
        script = folder / name
        script.write_text(f'#!/bin/sh\necho "$0 $*" >> {markers / name}\nexec {real(name)} "$@"\n')
        script.chmod(0o755)


async def started(tmp_path: Path, path_entry: str, *, sandbox: bool) -> set[str]:
    """One turn (Bash `ls`, which runs under bwrap or, with the sandbox off, under `env` setting the settings'
    `env`; Grep, which runs rg) in a fresh folder planted with the scripts, `path_entry` first on PATH; the
    helpers whose script ran. (Under bwrap, `env` runs in the sandbox, where the markers are read-only.)"""
    base = tmp_path / f"{path_entry or 'empty'}-{sandbox}".replace("/", "_")
    markers, project = base / "markers", base / "project"
    markers.mkdir(parents=True)
    plant(project, markers)
    (project / "README.md").write_text("hello\n")
    plant(base / "tools", markers)  # outside the workspace: the control's absolute PATH entry
    (base / "cfg").mkdir()
    settings = {"env": {"FROM_SETTINGS": "1"}, "sandbox": {"enabled": sandbox}}
    (base / "cfg" / "settings.json").write_text(json.dumps(settings))
    scenario = scenario_file(
        base,
        [
            tool_response(("Bash", {"command": "ls"}), ("Grep", {"pattern": "hello"})),
            text_response("done"),
        ],
    )
    entry = {"TOOLS": str(base / "tools"), "PROJECT": str(project)}.get(path_entry, path_entry)
    out = await run_cli(base, project, "hello", scenario=scenario, env={"PATH": f"{entry}:{os.environ['PATH']}"})
    assert "README.md" in out and "done" in out, f"the turn ran its tools\n{out}"
    return {name for name in HELPERS if (markers / name).exists()}


SANDBOXED = {"git", "bwrap", "rg"}  # and `env`, `ls` inside the sandbox
UNSANDBOXED = {"git", "env", "rg", "ls"}  # (and bwrap when the sandbox is probed at start-up all the same)


@pytest.mark.parametrize("sandbox", [True, False])
async def test_the_control_an_absolute_entry_outside_the_folder_starts_each_helper_from_path(
    tmp_path: Path, sandbox: bool
) -> None:
    assert await started(tmp_path, "TOOLS", sandbox=sandbox) >= (SANDBOXED if sandbox else UNSANDBOXED)


@pytest.mark.parametrize("entry", ["", "."], ids=["empty", "relative"])
@pytest.mark.parametrize("sandbox", [True, False])
async def test_an_empty_or_relative_path_entry_starts_none_of_the_folders_programs(
    tmp_path: Path, entry: str, sandbox: bool
) -> None:
    assert await started(tmp_path, entry, sandbox=sandbox) == set()


@pytest.mark.parametrize("sandbox", [True, False])
async def test_the_folder_on_path_by_its_absolute_name_starts_none_of_its_helpers(
    tmp_path: Path, sandbox: bool
) -> None:
    """A command may still run the folder's `ls`: the user named the folder on PATH (`$PWD/node_modules/.bin`)."""
    assert await started(tmp_path, "PROJECT", sandbox=sandbox) <= {"ls"}
