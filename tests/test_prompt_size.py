"""The first request's system prompt and tool definitions stay lean (Claude Code sends ~78,000 chars)."""

from __future__ import annotations

import json
from pathlib import Path

from bridge.prompt import system_prompt
from bridge.tools.registry import core_tools

BUDGET = 20_000


def test_system_and_tools_fit_the_budget(tmp_path: Path) -> None:
    tools = [tool.schema() for tool in core_tools()]
    size = len(json.dumps(system_prompt(tmp_path))) + len(json.dumps(tools))
    names = {t["name"] for t in tools}
    assert {"Read", "Write", "Edit", "Bash", "Grep", "Glob", "TodoWrite", "NotebookEdit", "WebFetch"} <= names
    assert size <= BUDGET, f"system + tools = {size:,} chars"


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        found = set(value)
        for key, inner in value.items():
            if key != "properties":  # property names are the tool's own fields
                found |= _keys(inner)
            else:
                for schema in inner.values():
                    found |= _keys(schema)
        return found
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value)) if value else set()
    return set()


def test_every_tool_schema_has_a_description_and_no_pydantic_titles() -> None:
    for tool in core_tools():
        schema = tool.schema()
        assert schema["description"].strip(), tool.name
        assert schema["input_schema"]["type"] == "object", tool.name
        assert "title" not in _keys(schema["input_schema"]), tool.name


def test_each_request_gets_its_own_copy_of_the_schemas_worked_out_once() -> None:
    """Every request sends every tool's schema: pydantic works each out once per process (issue 26: it was a
    tenth of each tool round trip), and whoever changes the copy it got changes no other request's."""
    from bridge.tools.base import lean_schema

    for tool in core_tools():
        first = tool.schema()
        first["input_schema"]["properties"].clear()
        first["input_schema"]["required"] = ["changed"]
        again = tool.schema()
        assert again["input_schema"] == lean_schema(tool.input_model.model_json_schema()), tool.name
        assert again["input_schema"] is not tool.schema()["input_schema"]
