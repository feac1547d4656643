"""TodoWrite: the session's task list; the call's effect is the new plan (the session shows and keeps it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.display import PlanEntry
from bridge.tools.base import PlanChanged, ToolContext, ToolError
from bridge.tools.todo_write import TodoWriteInput, TodoWriteTool


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)


def todos(*items: tuple[str, str]) -> TodoWriteInput:
    return TodoWriteInput.model_validate(
        {"todos": [{"content": c, "status": s, "activeForm": f"Doing {c.lower()}"} for c, s in items]}
    )


async def test_the_effect_is_the_whole_new_plan(ctx: ToolContext) -> None:
    data = todos(("Write parser", "completed"), ("Test parser", "in_progress"), ("Ship", "pending"))
    result = await TodoWriteTool().call(data, ctx)
    assert result.effects == [
        PlanChanged(
            (
                PlanEntry("Write parser", "completed"),
                PlanEntry("Test parser", "in_progress"),
                PlanEntry("Ship", "pending"),
            )
        )
    ]
    assert result.raw_output is not None and [t["content"] for t in result.raw_output["todos"]] == [
        "Write parser",
        "Test parser",
        "Ship",
    ]
    assert "1/3 completed" in str(result.content) and len(str(result.content)) < 200
    assert not result.is_error


async def test_each_call_replaces_the_whole_list(ctx: ToolContext) -> None:
    await TodoWriteTool().call(todos(("A", "in_progress"), ("B", "pending")), ctx)
    result = await TodoWriteTool().call(todos(("B", "in_progress")), ctx)
    assert result.effects == [PlanChanged((PlanEntry("B", "in_progress"),))]


async def test_all_completed_is_still_reported(ctx: ToolContext) -> None:
    result = await TodoWriteTool().call(todos(("A", "completed"), ("B", "completed")), ctx)
    [plan] = result.effects
    assert isinstance(plan, PlanChanged) and len(plan.entries) == 2


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
