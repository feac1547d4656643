"""Every test runs as a user who trusts the folders the tests make (`AGENT_BRIDGE_TRUST_FOLDER=1`, which the
bridges the tests start inherit): the behaviour each test pins is the trusted folder's. The folder-trust
tests (tests/test_trust*.py, tests/e2e/test_trust.py) take it away where they test an untrusted folder."""

import os
import re
import shutil
import stat
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.attacks.workspace import Workspace

os.environ["AGENT_BRIDGE_TRUST_FOLDER"] = "1"


# The tests that time how fast something answers (a cancel within 50 ms, the CPU a cancelled search still
# spends, a process tree gone when a signal's escalation ends). scripts/test runs the rest on both cores
# (pytest-xdist: most tests wait on the processes they start) and these after it, on their own (`-m serial`),
# so no other test's load can make them late.
SERIAL = frozenset(
    {
        "tests/e2e/test_blocking_reads.py",
        "tests/e2e/test_cancel_glob.py",
        "tests/e2e/test_cancel.py",
        "tests/e2e/test_cancel_property.py",
        "tests/e2e/test_bridge_death.py",
        "tests/e2e/test_exit.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.partition("::")[0] in SERIAL:
            item.add_marker(pytest.mark.serial)


ARTIFACTS = Path(__file__).parent.parent / ".artifacts" / "pytest"
_MAX_FILE = 5 * 1024 * 1024


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    """A failed test keeps its temp dir (the bridge's stderr log, transcripts, the workspace) under
    .artifacts/pytest/, so a failure in CI can be read after the run; files over 5 MB are left out."""
    report = yield
    if getattr(report, "failed", False) and call.when == "call":
        tmp = getattr(item, "funcargs", {}).get("tmp_path")
        if isinstance(tmp, Path) and tmp.is_dir():
            target = ARTIFACTS / re.sub(r"[^\w.-]+", "_", item.nodeid)[:150]
            shutil.rmtree(target, ignore_errors=True)
            try:
                shutil.copytree(
                    tmp,
                    target,
                    symlinks=True,
                    dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if _left_out(Path(d) / n)],
                )
            except (OSError, shutil.Error) as error:  # keeping evidence must never break the run
                print(f"artifacts of {item.nodeid}: {error}", file=sys.stderr)
    return report


def _left_out(path: Path) -> bool:
    """Files over 5 MB, and what is neither a file, a directory nor a link (FIFOs a test made: copying one
    reads it, and the copy fails or blocks)."""
    try:
        st = path.lstat()
    except OSError:
        return True
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return False
    return not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_FILE


@pytest.fixture
def found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> "Workspace":
    """A workspace with secrets outside it and a home of its own (tests/attacks/workspace.py's `build`), the
    environment pointed at them: the permission tests' common ground (a module may define its own)."""
    from tests.attacks.workspace import build, setup_env

    made = build(tmp_path)
    setup_env(monkeypatch, made)
    return made
