"""Invalid paths (a NUL byte, a lone surrogate, a name or path too long for the OS) are a clear error from
every file tool's validate_input — never an exception from deeper down (the engine, the OS, a preview)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.loop.executor import started_event
from bridge.tools.base import AnyTool, ToolContext
from bridge.tools.edit import EditTool
from bridge.tools.glob import GlobTool
from bridge.tools.grep import GrepTool
from bridge.tools.notebook_edit import NotebookEditTool
from bridge.tools.paths import path_problem
from bridge.tools.read import ReadTool
from bridge.tools.write import WriteTool

INVALID = [
    ("/tmp/a\x00b", "NUL byte (at character 6)"),
    ("~\x00root/x", "NUL byte"),
    ("/tmp/\ud800.txt", "lone UTF-16 surrogate"),
    ("~\udfff/x", "lone UTF-16 surrogate"),
    ("/tmp/" + "é" * 130, "a name of 260 bytes"),
    ("/tmp" + "/abc" * 1100, "at most 4095"),
]

TOOLS: list[tuple[AnyTool, str, dict[str, Any]]] = [
    (ReadTool(), "file_path", {}),
    (EditTool(), "file_path", {"old_string": "a", "new_string": "b"}),
    (WriteTool(), "file_path", {"content": "x"}),
    (NotebookEditTool(), "notebook_path", {"new_source": "x", "cell_id": "cell-0"}),
    (GrepTool(), "path", {"pattern": "x"}),
    (GlobTool(), "path", {"pattern": "*"}),
]


@pytest.mark.parametrize(("raw", "message"), INVALID)
@pytest.mark.parametrize(("tool", "field", "rest"), TOOLS, ids=[t[0].name for t in TOOLS])
async def test_every_file_tool_answers_an_invalid_path_with_a_message(
    tmp_path: Path, tool: AnyTool, field: str, rest: dict[str, Any], raw: str, message: str
) -> None:
    block: dict[str, Any] = {"id": "toolu_1", "name": tool.name, "input": {field: raw, **rest}}
    data = tool.input_model.model_validate(block["input"])
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")
    problem = await tool.validate_input(data, ctx)
    assert problem is not None and message in problem and field in problem, problem
    # Nothing else that looks at the input before the call raises either.
    assert tool.permission_paths(data, ctx) == []
    started_event(block, tool, data)
    tool.backfill_observable_input(dict(block["input"]))


def test_valid_paths_pass() -> None:
    for raw in ("/tmp/x.txt", "~/x", "relative/x", "/tmp/" + "é" * 127, "/tmp/\udcff-undecodable-byte"):
        assert path_problem(raw) is None, raw
