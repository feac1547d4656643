"""The core tool set, in the order the model sees it, and how permission rules name its tools.

Each core tool's module loads when the tool is first used, not when a session starts (issue 26: a turn that calls
only Bash does not wait for Edit's diffing, WebFetch's HTML reader or NotebookEdit's cell model). Until then a
session holds a `LazyTool`: its name, the form its rules take and its schema (the shipped copy,
bridge/tool_schemas.json) are known without the module; anything else the session asks of it loads the tool and is
the tool's own answer from then on. tests/test_tool_registry.py holds each entry equal to its class.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from bridge.permissions.facts import NAME_RULES, RuleForm
from bridge.permissions.grammar import RuleGrammar

if TYPE_CHECKING:
    from bridge.tools.base import AnyTool

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoreTool:
    """A core tool as the registry knows it before its module loads: `module:cls` is its class."""

    name: str
    module: str
    cls: str
    rule_form: RuleForm = NAME_RULES


CORE_TOOLS: tuple[CoreTool, ...] = (
    CoreTool(
        "Read",
        "bridge.tools.read",
        "ReadTool",
        RuleForm("path", "read", family=True, others=True, aliases=("LS", "NotebookRead")),
    ),
    CoreTool("Write", "bridge.tools.write", "WriteTool", RuleForm("path", "write", others=True)),
    CoreTool("Edit", "bridge.tools.edit", "EditTool", RuleForm("path", "write", family=True, aliases=("MultiEdit",))),
    CoreTool("Bash", "bridge.tools.bash", "BashTool", RuleForm("command")),
    CoreTool("TaskOutput", "bridge.tools.tasks", "TaskOutputTool"),
    CoreTool("TaskStop", "bridge.tools.tasks", "TaskStopTool"),
    CoreTool("Grep", "bridge.tools.grep", "GrepTool", RuleForm("path", "read")),
    CoreTool("Glob", "bridge.tools.glob", "GlobTool", RuleForm("path", "read")),
    CoreTool("NotebookEdit", "bridge.tools.notebook_edit", "NotebookEditTool", RuleForm("path", "write")),
    CoreTool("TodoWrite", "bridge.tools.todo_write", "TodoWriteTool"),
    CoreTool("WebFetch", "bridge.tools.web_fetch", "WebFetchTool", RuleForm("domain")),
    CoreTool("ExitPlanMode", "bridge.tools.exit_plan_mode", "ExitPlanModeTool"),
)


def tool_class(entry: CoreTool) -> type[AnyTool]:
    tool: type[AnyTool] = getattr(importlib.import_module(entry.module), entry.cls)
    return tool


SHIPPED_SCHEMAS = Path(__file__).resolve().parent.parent / "tool_schemas.json"
_schemas: dict[str, str] | None = None


def shipped_schema(name: str) -> dict[str, Any] | None:
    """The core tool `name`'s definition as `tool.schema()` gives it (bridge/tool_schemas.json, written by
    scripts/gen_tool_schemas.py), a copy of its own; None when the file has none (then the tool loads)."""
    global _schemas
    if _schemas is None:
        _schemas = {}
        try:
            listed = json.loads(SHIPPED_SCHEMAS.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            listed = []
        for schema in listed if isinstance(listed, list) else []:
            if isinstance(schema, dict) and isinstance(schema.get("name"), str):
                _schemas[schema["name"]] = json.dumps(schema, ensure_ascii=False)
    text = _schemas.get(name)
    if text is None:
        return None
    copy: dict[str, Any] = json.loads(text)
    return copy


class LazyTool:
    """A core tool whose module has not loaded yet. `name`, `rule_form` and `schema()` answer without it; any
    other attribute loads the tool (once) and is the tool's own."""

    def __init__(self, entry: CoreTool) -> None:
        self.name = entry.name
        self.rule_form = entry.rule_form
        self._entry = entry
        self._tool: AnyTool | None = None
        self._lock = threading.Lock()  # (a worker thread may ask first: one instance, whoever does)

    def loaded(self) -> AnyTool:
        if self._tool is None:
            with self._lock:
                if self._tool is None:
                    log.debug("loading the %s tool", self.name)
                    self._tool = tool_class(self._entry)()
        return self._tool

    def schema(self) -> dict[str, Any]:
        if self._tool is None:
            shipped = shipped_schema(self.name)
            if shipped is not None:
                return shipped
        return self.loaded().schema()

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute in ("_tool", "_entry", "_lock"):
            raise AttributeError(attribute)  # (copy, pickle and friends look for these on the class)
        return getattr(self.loaded(), attribute)

    def __repr__(self) -> str:
        return f"LazyTool({self.name!r}, loaded={self._tool is not None})"


def core_tools() -> list[AnyTool]:
    """A session's own instances of the core tools, each loading when first used."""
    return [cast("AnyTool", LazyTool(entry)) for entry in CORE_TOOLS]


def rule_grammar() -> RuleGrammar:
    """The form each core tool's rules take (`Tool.rule_form`): the session composes its permission engine with it,
    so `Bash(...)` in a settings file is a command pattern and `Edit(...)` a path pattern. The other tools' rules
    take names (the default); a tool that states another form teaches the engine when it is first called."""
    return RuleGrammar.of({entry.name: entry.rule_form for entry in CORE_TOOLS})
