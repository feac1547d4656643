"""The sandbox's once-per-process checks made ahead (`warm_up`, issue 26 item 3): a front end runs them on a worker
thread while the rest of the bridge loads, and the first command then starts without them. `bwrap` here is a
wrapper that logs each start, so the test sees which starts happened when."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from bridge.execution.bwrap import BWRAP_ENV
from bridge.execution.sandbox import probe, warm_up
from tests.execution.test_sandbox import AVAILABLE

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")


def logging_bwrap(folder: Path) -> tuple[Path, Path]:
    """A bwrap that appends a line to its log at each start, then is the real one."""
    real = shutil.which("bwrap")
    assert real is not None
    log = folder / "starts.log"
    wrapper = folder / "bwrap"
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_the_trial_start_is_made_on_the_warm_up_thread_and_not_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper, log = logging_bwrap(tmp_path)
    monkeypatch.setenv(BWRAP_ENV, str(wrapper))
    thread = threading.Thread(target=warm_up)
    thread.start()
    thread.join(30)
    assert starts(log) == 1  # the trial start, on the thread
    found = probe()  # what the first command asks
    assert found.ok and found.binary == str(wrapper)
    assert starts(log) == 1  # answered from what the warm-up kept


def test_without_the_warm_up_the_first_command_makes_the_trial_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the start counted above is the one the first command would make."""
    wrapper, log = logging_bwrap(tmp_path)
    monkeypatch.setenv(BWRAP_ENV, str(wrapper))
    assert starts(log) == 0
    assert probe().ok
    assert starts(log) == 1


def test_a_sandbox_that_cannot_start_is_left_for_the_first_command_to_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BWRAP_ENV, str(tmp_path / "no-such-bwrap"))
    warm_up()  # never raises
    found = probe()
    assert not found.ok and found.reason is not None and "not installed" in found.reason
