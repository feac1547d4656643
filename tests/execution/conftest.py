"""The sandbox tests' `project`: a git workspace with its own settings, a bypassPermissions engine and the session's
sandbox (tests/execution/test_sandbox.py's `Project`), shut down after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bridge.execution.supervisor import ProcessSupervisor
from tests.execution.test_sandbox import Project


@pytest.fixture
async def project(tmp_path: Path) -> AsyncIterator[Project]:
    supervisor = ProcessSupervisor(data_dir=tmp_path / "data")
    proj = Project(tmp_path, supervisor)
    yield proj
    await proj.background.shutdown()
    await supervisor.shutdown()
    proj.sandbox.close()
