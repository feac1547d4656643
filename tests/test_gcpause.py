"""The collector waits while the bridge loads (bridge/gcpause.py): off at `pause`, on again at `resume`, with what
was loaded kept out of later collections; `AGENT_BRIDGE_GC_PAUSE=0` leaves it alone."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from bridge import gcpause


@pytest.fixture(autouse=True)
def collector_as_it_was(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts from a collector that runs, nothing frozen, the mechanism on; the host's is put back."""
    enabled = gc.isenabled()
    monkeypatch.delenv("AGENT_BRIDGE_GC_PAUSE", raising=False)
    gc.enable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_the_collector_is_off_while_loading_and_on_after_with_the_load_frozen() -> None:
    gcpause.pause()
    assert not gc.isenabled()
    loaded = [object() for _ in range(10)]  # noqa: F841  (what loading made)
    gcpause.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    gcpause.resume()  # a second resume changes nothing
    assert gc.isenabled()


def test_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_BRIDGE_GC_PAUSE", "0")
    gcpause.pause()
    assert gc.isenabled()
    gcpause.resume()
    assert gc.get_freeze_count() == 0


def test_a_collector_the_host_turned_off_stays_off() -> None:
    gc.disable()
    gcpause.pause()
    gcpause.resume()
    assert not gc.isenabled()
