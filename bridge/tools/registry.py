"""The core tool set, in the order the model sees it."""

from __future__ import annotations

from bridge.tools.base import AnyTool
from bridge.tools.bash import BashTool
from bridge.tools.edit import EditTool
from bridge.tools.exit_plan_mode import ExitPlanModeTool
from bridge.tools.glob import GlobTool
from bridge.tools.grep import GrepTool
from bridge.tools.notebook_edit import NotebookEditTool
from bridge.tools.read import ReadTool
from bridge.tools.tasks import TaskOutputTool, TaskStopTool
from bridge.tools.todo_write import TodoWriteTool
from bridge.tools.web_fetch import WebFetchTool
from bridge.tools.write import WriteTool


def core_tools() -> list[AnyTool]:
    return [
        ReadTool(),
        WriteTool(),
        EditTool(),
        BashTool(),
        TaskOutputTool(),
        TaskStopTool(),
        GrepTool(),
        GlobTool(),
        NotebookEditTool(),
        TodoWriteTool(),
        WebFetchTool(),
        ExitPlanModeTool(),
    ]


def tool_by_name(name: str) -> AnyTool | None:
    return next((tool for tool in core_tools() if tool.name == name), None)
