"""TodoWrite: the session's task list, reported as ACP plan entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError
from bridge.tools.todo_write import TodoList, TodoWriteInput, TodoWriteTool


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)


def todos(*items: tuple[str, str]) -> TodoWriteInput:
    return TodoWriteInput.model_validate(
        {"todos": [{"content": c, "status": s, "activeForm": f"Doing {c.lower()}"} for c, s in items]}
    )


async def test_list_is_kept_and_reported_as_plan_entries(ctx: ToolContext) -> None:
    data = todos(("Write parser", "completed"), ("Test parser", "in_progress"), ("Ship", "pending"))
    result = await TodoWriteTool().call(data, ctx)
    assert result.raw_output == {
        "entries": [
            {"content": "Write parser", "status": "completed", "priority": "medium"},
            {"content": "Test parser", "status": "in_progress", "priority": "medium"},
            {"content": "Ship", "status": "pending", "priority": "medium"},
        ]
    }
    assert "1/3 completed" in str(result.content) and len(str(result.content)) < 200
    service = ctx.services["todos"]
    assert isinstance(service, TodoList) and [i.content for i in service.items] == [
        "Write parser",
        "Test parser",
        "Ship",
    ]
    assert not result.is_error


async def test_each_call_replaces_the_whole_list(ctx: ToolContext) -> None:
    await TodoWriteTool().call(todos(("A", "in_progress"), ("B", "pending")), ctx)
    await TodoWriteTool().call(todos(("B", "in_progress")), ctx)
    assert [i.content for i in ctx.services["todos"].items] == ["B"]


async def test_all_completed_clears_the_stored_list_but_reports_it(ctx: ToolContext) -> None:
    result = await TodoWriteTool().call(todos(("A", "completed"), ("B", "completed")), ctx)
    assert ctx.services["todos"].items == []
    assert result.raw_output is not None and len(result.raw_output["entries"]) == 2


async def test_two_in_progress_is_a_warning_not_an_error(ctx: ToolContext) -> None:
    data = todos(("A", "in_progress"), ("B", "in_progress"))
    assert await TodoWriteTool().validate_input(data, ctx) is None
    result = await TodoWriteTool().call(data, ctx)
    assert not result.is_error and "exactly one in_progress" in str(result.content)


@pytest.mark.parametrize(
    ("todo", "expected"),
    [
        ({"content": "  ", "status": "pending", "activeForm": "x"}, "empty content"),
        ({"content": "Build", "status": "pending", "activeForm": ""}, "empty activeForm"),
    ],
)
async def test_invalid_todos_are_tool_errors(ctx: ToolContext, todo: dict[str, Any], expected: str) -> None:
    data = TodoWriteInput.model_validate({"todos": [todo]})
    assert expected in (await TodoWriteTool().validate_input(data, ctx) or "")
    with pytest.raises(ToolError, match=expected):
        await TodoWriteTool().call(data, ctx)
    assert "todos" not in ctx.services


async def test_duplicate_todos_are_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="appears twice"):
        await TodoWriteTool().call(todos(("A", "pending"), ("A", "completed")), ctx)


def test_schema_errors_are_left_to_input_validation() -> None:
    with pytest.raises(ValidationError):
        TodoWriteInput.model_validate({"todos": [{"content": "A", "status": "done", "activeForm": "Doing A"}]})
    with pytest.raises(ValidationError):
        TodoWriteInput.model_validate({"todos": [{"content": "A", "status": "pending"}]})


def test_contract_fields() -> None:
    tool = TodoWriteTool()
    data = todos(("Run tests", "in_progress"))
    assert tool.kind == "think" and tool.interrupt_behavior == "cancel"
    assert tool.is_read_only(data) and not tool.is_concurrency_safe(data)
    assert tool.user_facing_title(data) == "Update todos: Doing run tests"
    schema = tool.schema()
    assert schema["name"] == "TodoWrite" and "todos" in schema["input_schema"]["properties"]
