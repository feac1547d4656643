"""The core tool set, in the order the model sees it, and how permission rules name its tools."""

from __future__ import annotations

from bridge.permissions.grammar import RuleGrammar
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


def rule_grammar() -> RuleGrammar:
    """The form each core tool's rules take (`Tool.rule_form`): the session composes its permission engine with it,
    so `Bash(...)` in a settings file is a command pattern and `Edit(...)` a path pattern. The other tools' rules
    take names (the default); a tool that states another form teaches the engine when it is first called."""
    return RuleGrammar.of({tool.name: tool.rule_form for tool in core_tools()})
