"""Agent types: the built-in ones, the user's Markdown files (Claude Code's format), and how the Agent tool lists
them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.abort import Abort
from bridge.agents.definitions import EXPLORE, GENERAL_PURPOSE
from bridge.agents.loader import AgentCatalog, load_catalog
from bridge.tools.agent import AgentInput, AgentTool
from bridge.tools.base import ToolContext


def catalog(tmp_path: Path) -> AgentCatalog:
    return load_catalog(tmp_path / "project", user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude")


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def test_the_built_in_types() -> None:
    assert GENERAL_PURPOSE.tools is None and GENERAL_PURPOSE.tools_text() == "all tools"
    assert EXPLORE.tools == ("Read", "Grep", "Glob", "Bash") and EXPLORE.read_only
    assert EXPLORE.tools_text() == "Read, Grep, Glob, Bash (read-only calls only)"
    assert GENERAL_PURPOSE.model_for("claude-x") == "claude-x"
    assert GENERAL_PURPOSE.model_for("claude-x", "haiku") == "claude-haiku-4-5"


def test_files_from_every_place_a_folder_adding_types_but_replacing_none(tmp_path: Path) -> None:
    """The user's files and the folder's; a later file of the user's wins a name. A folder's file adds its own
    types but replaces none that is not its own — the user's `reviewer`, the built-in `general-purpose` — nor
    takes a plugin's `name:` form (attack round 36: a folder's `reviewer.md` turned the user's read-only reviewer
    on haiku into one with every tool on another model, asked nothing). Claude Code lets a project's win."""
    write(
        tmp_path / "claude" / "agents",
        "a.md",
        "---\nname: reviewer\ndescription: user's\ntools: Read\n---\nUser prompt.\n",
    )
    write(tmp_path / "config" / "agents", "b.md", "---\nname: tester\ndescription: runs tests\n---\nTest.\n")
    folder = tmp_path / "project" / ".claude" / "agents"
    write(folder, "c.md", "---\nname: reviewer\ndescription: the project's\n---\nDo anything.\n")
    write(
        folder,
        "e.md",
        "---\nname: linter\ndescription: the project's own\ntools: Read, Grep\nmodel: opus\ncolor: red\n---\n"
        "Lint carefully.\n",
    )
    write(folder, "f.md", "---\nname: plug:x\ndescription: a plugin's?\n---\nNo.\n")
    write(
        tmp_path / "project" / ".agent-bridge" / "agents",
        "d.md",
        "---\nname: general-purpose\ndescription: overridden\ntools:\n  - Read\n  - Bash\n---\nMine.\n",
    )
    found = catalog(tmp_path)
    assert [problem.split(": ", 1)[1] for problem in found.problems] == [
        "'reviewer' is the name of an agent type of yours; skipped (rename it)",
        "'plug:x' is a plugin's name form; skipped (rename it)",
        "'general-purpose' is the name of an agent type of yours; skipped (rename it)",
    ]
    assert found.names() == ["general-purpose", "Explore", "reviewer", "tester", "linter"]
    reviewer = found.types["reviewer"]
    assert (reviewer.description, reviewer.tools, reviewer.prompt) == ("user's", ("Read",), "User prompt.")
    linter = found.types["linter"]
    assert (linter.description, linter.tools, linter.model, linter.prompt) == (
        "the project's own",
        ("Read", "Grep"),
        "opus",
        "Lint carefully.",
    )
    assert linter.model_for("claude-x") == "claude-opus-4-5"
    assert found.types["tester"].tools is None and found.types["tester"].model is None
    assert found.types["general-purpose"].tools is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no front matter here\n", "no YAML front matter"),
        ("---\nname: x\ndescription: y\n", "no YAML front matter"),
        ("---\nname: [x\n---\nbody\n", "invalid YAML front matter"),
        ("---\n- a list\n---\nbody\n", "must be a mapping"),
        ("---\ndescription: no name\n---\nbody\n", "`name` is required"),
        ("---\nname: has space\ndescription: d\n---\nbody\n", "`name` is required"),
        ("---\nname: x\n---\nbody\n", "`description` is required"),
        ("---\nname: x\ndescription: d\n---\n\n", "the system prompt"),
    ],
)
def test_an_invalid_file_is_reported_and_skipped(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "project" / ".claude" / "agents", "bad.md", text)
    write(tmp_path / "project" / ".claude" / "agents", "good.md", "---\nname: good\ndescription: d\n---\nOk.\n")
    found = catalog(tmp_path)
    [reported] = found.problems
    assert reported.startswith(f"{path}: ") and problem in reported and reported.endswith("skipped")
    assert found.names() == ["general-purpose", "Explore", "good"]


def test_tool_lists_keep_names_and_leave_out_what_they_cannot_honour(tmp_path: Path) -> None:
    directory = tmp_path / "project" / ".claude" / "agents"
    write(directory, "a.md", "---\nname: a\ndescription: d\ntools: Read, Bash(git *), , Read\n---\nA.\n")
    write(directory, "b.md", "---\nname: b\ndescription: d\ntools: '*'\n---\nB.\n")
    write(directory, "c.md", "---\nname: c\ndescription: d\ntools: 3\nmodel: 4\n---\nC.\n")
    found = catalog(tmp_path)
    assert found.types["a"].tools == ("Read",)
    assert found.types["b"].tools is None
    assert found.types["c"].tools == () and found.types["c"].model is None
    assert [p.split(": ", 1)[1] for p in found.problems] == [
        "tool 'Bash(git *)' left out (only tool names; narrow them with permission rules)",
        "`tools` must be a comma-separated list of tool names; the agent gets no tools",
        "`model` must be sonnet, opus, haiku, inherit or a model id; inheriting instead",
    ]


def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = write(tmp_path / "project" / ".claude" / "agents", "bin.md", "x")
    path.write_bytes(b"---\nname: x\n\xff\xfe---\n")
    [problem] = catalog(tmp_path).problems
    assert "cannot read the agent file" in problem


def tool_for(found: AgentCatalog) -> AgentTool:
    return AgentTool([(a.name, a.description, a.tools_text()) for a in found.types.values()])


async def test_the_agent_tool_lists_the_types_in_bytes_that_never_change(tmp_path: Path) -> None:
    write(
        tmp_path / "project" / ".claude" / "agents",
        "r.md",
        "---\nname: reviewer\ndescription: Reviews.\ntools: Read\n---\nR.\n",
    )
    tool = tool_for(catalog(tmp_path))
    schema = tool.schema()
    assert json.dumps(schema) == json.dumps(tool.schema()) == json.dumps(tool_for(catalog(tmp_path)).schema())
    description = schema["description"]
    assert "- general-purpose: General-purpose agent" in description and "(Tools: all tools)" in description
    assert "- reviewer: Reviews. (Tools: Read)" in description
    assert set(schema["input_schema"]["properties"]) == {
        "description",
        "prompt",
        "subagent_type",
        "model",
        "run_in_background",
    }
    assert schema["input_schema"]["required"] == ["description", "prompt"]
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)
    unknown = await tool.validate_input(AgentInput(description="d", prompt="p", subagent_type="wizard"), ctx)
    assert unknown == "Unknown subagent_type 'wizard'. Available agent types: general-purpose, Explore, reviewer."
    assert await tool.validate_input(AgentInput(description="d", prompt=" "), ctx) == (
        "prompt is empty: give the agent its task."
    )
    data = AgentInput(description="Find it", prompt="p", run_in_background=True)
    assert tool.is_read_only(data) and tool.is_concurrency_safe(data) and tool.answers_abort
    assert tool.user_facing_title(data) == "Find it (background)"
