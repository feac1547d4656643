from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acp.editor import Editor


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    return root


@pytest.fixture
def editor(data_dir: Path) -> Iterator[Editor]:
    """The SDK-driven editor; whatever a test does, every message the bridge sent must be valid ACP."""
    client = Editor()
    yield client
    for violation in client.validator.violations:
        print("VIOLATION", violation)
    log = data_dir / "stderr.log"
    assert [str(v) for v in client.validator.violations] == [], log.read_text()[-3000:] if log.exists() else ""
