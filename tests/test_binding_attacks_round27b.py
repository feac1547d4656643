"""Round 27's second verification of trusted commands' bindings (named_files.py, script_reads.py, make_reads.py):
each of these commands ran, as a hook would, code from a workspace file its binding did not pin (a marker written
by the folder's conftest.py or an unbound script: the helper's proof), through settings (`PATH=`, `PYTHONPATH=`,
an `.npmrc`'s `script-shell`), wrappers (`timeout --signal KILL 60`, `prlimit`, `uv run --with`), what a strict
reading did not model (`alias`, `trap`, `find -exec`, `<(…)`, `<<<`, a sourced descriptor, `sh -ec`, `env -S`),
make (`override`, target-specific exports, `.ONESHELL`, multi-line defines, implicit rules remaking a makefile),
just (`mod`, `import`, `set dotenv-load`, `[working-directory]`, `[script]`), npm (`npm rum`, `npm pack`,
`npm start` without a script), uv (`.python-version` naming a path, inline metadata with a path source) and
Python scripts that start a computed command. Each must leave the command unbindable now."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.permissions.named_files import UNBINDABLE, binding

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "fixtures" / "binding_attacks_round27b.json").read_text()
)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_attack_leaves_the_command_off(tmp_path: Path, case: dict[str, Any]) -> None:
    ws = tmp_path / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "tests" / "conftest.py").write_text("open('MARKER', 'w').close()\n")
    for name, text in case["files"].items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if name in case["exe"] or text.startswith("#!"):
            path.chmod(0o755)
    result = binding(case["command"], ws)
    assert result.startswith(UNBINDABLE), result


def test_a_module_beside_a_bound_script_is_bound_by_its_content(tmp_path: Path) -> None:
    """`tools/selectors.py` shadows the standard library's for a script in `tools/` (subprocess imports it): its
    name was bound, not its content, so a pull that changed it ran the new code unasked (round 27's verification)."""
    import subprocess

    ws = tmp_path / "ws"
    (ws / "tools").mkdir(parents=True)
    (ws / "tools" / "x.py").write_text("import subprocess\nsubprocess.run(['true'])\n")
    import selectors

    stdlib = Path(str(selectors.__file__)).read_text()
    (ws / "tools" / "selectors.py").write_text(stdlib)
    before = binding("python3 tools/x.py", ws)
    marker = tmp_path / "marker"
    (ws / "tools" / "selectors.py").write_text(f"open({str(marker)!r}, 'w').close()\n{stdlib}")
    assert binding("python3 tools/x.py", ws) != before
    subprocess.run([sys.executable, "tools/x.py"], cwd=ws, env={**os.environ}, check=True, timeout=60)
    assert marker.exists(), "the control: the module beside the script is what runs"
