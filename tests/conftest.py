"""Every test runs as a user who trusts the folders the tests make (`AGENT_BRIDGE_TRUST_FOLDER=1`, which the
bridges the tests start inherit): the behaviour each test pins is the trusted folder's. The folder-trust
tests (tests/test_trust*.py, tests/e2e/test_trust.py) take it away where they test an untrusted folder."""

import os
import re
import shutil
from collections.abc import Generator
from pathlib import Path

import pytest

os.environ["AGENT_BRIDGE_TRUST_FOLDER"] = "1"


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
            shutil.copytree(tmp, target, symlinks=True, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if _too_big(Path(d) / n)])
    return report


def _too_big(path: Path) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size > _MAX_FILE
    except OSError:
        return True
