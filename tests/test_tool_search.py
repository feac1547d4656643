"""ToolSearch: the catalog of deferred tools, selection by name and by keywords, loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError
from bridge.tools.grep import GrepTool
from bridge.tools.read import ReadTool
from bridge.tools.tool_search import DeferredTools, ToolSearchInput, ToolSearchTool
from bridge.tools.web_fetch import WebFetchTool


def catalog() -> DeferredTools:
    return DeferredTools({tool.name: tool for tool in (ReadTool(), GrepTool(), WebFetchTool())})


def test_select_takes_exact_names_in_order_and_skips_unknown_ones() -> None:
    found = catalog().search("select: WebFetch, Nope ,Read", 5)
    assert [t.name for t in found] == ["WebFetch", "Read"]


def test_keywords_rank_name_over_hint_over_description() -> None:
    deferred = catalog()
    assert deferred.search("grep", 5)[0].name == "Grep"
    assert deferred.search("url fetch", 1)[0].name == "WebFetch"
    assert deferred.search("zebra", 5) == []
    assert len(deferred.search("file", 1)) == 1, "max_results bounds keyword matches"


async def test_loading_moves_tools_out_of_the_held_back_set(tmp_path: Path) -> None:
    deferred = catalog()
    tool = ToolSearchTool(deferred)
    assert "Deferred tools: Grep, Read, WebFetch" in tool.schema()["description"]
    assert deferred.held_back() == {"Grep", "Read", "WebFetch"}
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)
    result = await tool.call(ToolSearchInput(query="select:Grep"), ctx)
    assert result.raw_output == {"loaded": ["Grep"]} and "- Grep: " in str(result.content)
    assert deferred.held_back() == {"Read", "WebFetch"}
    assert "Grep" in tool.schema()["description"], "the catalog never shrinks (a stable request prefix)"
    with pytest.raises(ToolError, match="No deferred tool matches 'select:Nope'"):
        await tool.call(ToolSearchInput(query="select:Nope"), ctx)
