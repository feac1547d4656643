"""Issue 21 item 1: the file tools can't be raced. For each tool, a separate process flips a workspace name
between a regular file (or directory) and a link to something outside while the tool runs through the real
executor and permission engine: no secret comes back, nothing outside changes or appears — and the tool still
does its job on the workspace file. The control runs the by-name way (check, then open by name) in the same
race and must leak, so the race is real.

`ReadViaEditor` is Read through an ACP editor that reads files by name (as Zed does for a file it has no buffer
for): the names on the way are watched while it answers.

`FSRACE_ITERATIONS` calls per tool (default small for CI; scripts/bench_fsrace.py runs 1,000). Every back end:
the kernel's openat2, the O_NOFOLLOW walk (`AGENT_BRIDGE_SAFEFS=walk`) and the portable check-after-open one
that Windows takes (`AGENT_BRIDGE_SAFEFS=portable`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.file_races import BACKENDS, Arena, control, race, use_backend

ITERATIONS = int(os.environ.get("FSRACE_ITERATIONS", "40"))
TOOLS = ["Read", "ReadViaEditor", "Write", "Edit", "NotebookEdit", "Grep", "Glob"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(str(request.param), monkeypatch)


@pytest.mark.parametrize("tool", TOOLS)
async def test_a_flipping_name_leaks_nothing_and_plants_nothing(tool: str, backend: str, tmp_path: Path) -> None:
    arena = Arena.build(tmp_path)
    tally = await race(arena, tool, ITERATIONS)
    # the calls waited for the name to change between them; some met the link (asked about its target, or
    # refused as changed): the race reached the tool
    assert tally.contested >= 3, f"the race hardly reached the tool: {tally}"
    assert tally.leaks == 0, f"{tool} leaked {tally.leaks} times in {tally.calls} calls"
    assert not tally.outside_changed, f"{tool} changed or created a file outside the workspace"
    assert tally.worked > 0, f"{tool} never did its job on the workspace file in {tally.calls} calls"


@pytest.mark.parametrize("tool", TOOLS)
def test_the_by_name_way_leaks_in_the_same_race(tool: str, tmp_path: Path) -> None:
    """The control: check-then-open-by-name (what the tools did) lets the secret out or plants a file."""
    assert control(Arena.build(tmp_path), tool) >= 1
