"""Round 27's verification of a trusted `make` hook's binding (bridge/permissions/make_reads.py): 136 makefiles
and hook forms an attacker would try — conditionals, `define`, `.RECIPEPREFIX`, line breaks make reads otherwise,
`PATH :=`, `.SHELLFLAGS`, `BASH_ENV`, `MAKEFILES`, computed names and targets, remade makefiles, built-in rules,
sub-makes with overrides, wrappers (`env`, `nice`, `eval`, `xargs`), `sh < file`, `cat x | sh`, scripts of no
known language, `npm run t`, `npm restart`… Each must leave the hook unbindable (off); the 65 the first reading
let through are each shown to be real: GNU make, run as the trust would have let it, runs the folder's
conftest.py, which a pull could have changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.permissions.named_files import UNBINDABLE, binding

CASES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "fixtures" / "make_attacks_round27.json").read_text())
CONFTEST = "import pathlib\npathlib.Path(__file__).resolve().parent.parent.joinpath('MARKER').write_text('ran')\n"


def workspace(tmp_path: Path, case: dict[str, Any]) -> Path:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "conftest.py").write_text(CONFTEST)
    (ws / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    for name, text in case["files"].items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name in case["exe"]:
            path.chmod(0o755)
    return ws


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_attack_leaves_the_hook_off(tmp_path: Path, case: dict[str, Any]) -> None:
    result = binding(case["command"], workspace(tmp_path, case))
    assert result.startswith(UNBINDABLE), result


PROOFS = [c for c in CASES if c["proof"]]


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
@pytest.mark.parametrize("case", PROOFS, ids=[c["name"] for c in PROOFS])
def test_the_attacks_the_first_reading_let_through_are_real(tmp_path: Path, case: dict[str, Any]) -> None:
    ws = workspace(tmp_path, case)
    # a login shell's environment (make 4.3 reads MAKEFLAGS' --eval before it defines SHELL), pytest on PATH;
    # pytest there loads no installed plugin (hypothesis, pytest-lsp...): the conftest.py that proves the run loads
    # all the same, and each case starts in a quarter of a second instead of two (64 cases)
    env = {
        **os.environ,
        "SHELL": "/bin/sh",
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    done = subprocess.run(
        ["sh", "-c", case["command"]],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ws / "MARKER").exists(), (done.stdout + done.stderr)[-2000:]
