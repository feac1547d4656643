"""TodoWrite: the agent's task list for the session. The whole list is sent each time; the call's effect
is the new plan, which the session keeps and shows (the editor as an ACP `plan`)."""

from __future__ import annotations

from pydantic import Field

from bridge.display import PlanEntry, PlanStatus
from bridge.tools.base import Effect, PlanChanged, Tool, ToolContext, ToolError, ToolInput, ToolResult

TodoStatus = PlanStatus


class TodoItem(ToolInput):
    content: str = Field(description="The task, imperative (e.g. 'Run the tests')")
    status: TodoStatus
    activeForm: str = Field(description="The task in present continuous form (e.g. 'Running the tests')")


class TodoWriteInput(ToolInput):
    todos: list[TodoItem] = Field(description="The whole updated todo list")


def check_todos(items: list[TodoItem]) -> list[str]:
    """Raises `ToolError` for a list the model must fix; returns warnings for advice it may ignore."""
    for n, item in enumerate(items, 1):
        if not item.content.strip():
            raise ToolError(f"Todo {n} has an empty content; describe the task.")
        if not item.activeForm.strip():
            raise ToolError(f"Todo {n} ({item.content!r}) has an empty activeForm; give its in-progress form.")
    seen: set[str] = set()
    for item in items:
        key = item.content.strip()
        if key in seen:
            raise ToolError(f"Todo {key!r} appears twice; each task should be listed once.")
        seen.add(key)
    warnings = []
    running = [i.content for i in items if i.status == "in_progress"]
    if len(running) > 1:
        warnings.append(
            f"{len(running)} tasks are in_progress ({', '.join(map(repr, running))}); "
            "keep exactly one in_progress at a time."
        )
    return warnings


class TodoWriteTool(Tool[TodoWriteInput]):
    name = "TodoWrite"
    input_model = TodoWriteInput
    description = (
        "Create and update the task list for this session; send the whole list each time. Use it for "
        "work with 3 or more steps: add tasks as pending, mark one in_progress before starting it, and "
        "mark it completed as soon as it is done. Each todo has content (imperative: 'Run tests'), "
        "activeForm ('Running tests') and status (pending, in_progress, completed). The user sees the list."
    )
    search_hint = "task list plan progress checklist"
    kind = "think"
    interrupt_behavior = "cancel"
    max_result_chars = 10_000

    def is_read_only(self, data: TodoWriteInput) -> bool:
        """Changes no file or system state, so it never needs the user's permission."""
        return True

    def is_concurrency_safe(self, data: TodoWriteInput) -> bool:
        return False  # two lists written at once: the last one would win at random

    async def validate_input(self, data: TodoWriteInput, ctx: ToolContext) -> str | None:
        try:
            check_todos(data.todos)
        except ToolError as exc:
            return str(exc)
        return None

    def user_facing_title(self, data: TodoWriteInput) -> str:
        current = next((i.activeForm for i in data.todos if i.status == "in_progress"), None)
        return f"Update todos: {current}" if current else "Update todos"

    def replayed_effects(self, data: TodoWriteInput) -> list[Effect]:
        return [_plan(data)]

    async def call(self, data: TodoWriteInput, ctx: ToolContext) -> ToolResult:
        warnings = check_todos(data.todos)
        done = sum(i.status == "completed" for i in data.todos)
        text = (
            f"Todo list updated ({done}/{len(data.todos)} completed). Keep it current as you work, "
            "and go on with the task in progress."
        )
        if warnings:
            text += " Note: " + " ".join(warnings)
        return ToolResult(text, raw_output={"todos": [i.model_dump() for i in data.todos]}, effects=[_plan(data)])


def _plan(data: TodoWriteInput) -> PlanChanged:
    return PlanChanged(tuple(PlanEntry(i.content, i.status) for i in data.todos))
