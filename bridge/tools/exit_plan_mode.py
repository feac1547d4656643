"""ExitPlanMode: the agent presents its plan and asks to leave plan mode.

It leaves plan mode (`leaves_plan_mode`), so the permission engine always asks for it in plan mode; when the user
accepts, the call's effect (`LeavePlanMode`) makes the session restore the mode that was active before plan mode.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from bridge.display import TextContent
from bridge.tools.base import (
    InterruptBehavior,
    LeavePlanMode,
    Tool,
    ToolContext,
    ToolInput,
    ToolKind,
    ToolResult,
)


class ExitPlanModeInput(ToolInput):
    plan: str = Field(description="The plan to carry out, in Markdown; concise but complete.")


class ExitPlanModeTool(Tool[ExitPlanModeInput]):
    name: ClassVar[str] = "ExitPlanMode"
    input_model = ExitPlanModeInput
    description: ClassVar[str] = (
        "Use this tool when you are in plan mode and have finished planning: it presents the plan to the user "
        "and asks to leave plan mode and start working. Only use it for tasks that need writing code, not for "
        "research or questions."
    )
    search_hint: ClassVar[str] = "leave plan mode present plan"
    kind: ClassVar[ToolKind] = "think"
    interrupt_behavior: ClassVar[InterruptBehavior] = "cancel"
    max_result_chars: ClassVar[float] = 10_000
    leaves_plan_mode: ClassVar[bool] = True

    def is_read_only(self, data: ExitPlanModeInput) -> bool:
        return True

    def user_facing_title(self, data: ExitPlanModeInput) -> str:
        return "Ready to code?"

    async def validate_input(self, data: ExitPlanModeInput, ctx: ToolContext) -> str | None:
        return "The plan must not be empty." if not data.plan.strip() else None

    async def call(self, data: ExitPlanModeInput, ctx: ToolContext) -> ToolResult:
        return ToolResult(
            "The user approved the plan. You can now start coding; update your todo list if you keep one.",
            display=[TextContent(data.plan)],
            raw_output={"plan": data.plan},
            effects=[LeavePlanMode()],
        )
