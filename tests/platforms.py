"""Marks for what only the Linux extras do (bridge/execution/host.py): the second, portable run of the process
tests (`AGENT_BRIDGE_PORTABLE=1`, scripts/test) skips them, and says so."""

from __future__ import annotations

import pytest

from bridge.execution import host

linux_extras = pytest.mark.skipif(
    not host.linux_extras(), reason="a Linux extra, switched off by AGENT_BRIDGE_PORTABLE=1 (the portable run)"
)
