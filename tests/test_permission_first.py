"""Issue 21 item 7: the permission step runs before anything touches the paths a call names. A call on a path
the model may not use (outside the workspace: it asks) answers the same whether the file exists or not — no
existence oracle — and a path whose reading needs no permission is still checked before the question (a call
bound to fail is not asked about, and the question shows the real diff). Through the real executor and engine."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from bridge.abort import Abort
from bridge.display import Diff
from bridge.loop.executor import ToolEnvironment, ToolExecutor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.tools.base import AnyTool, FileSnapshot, ToolContext
from bridge.tools.registry import core_tools
from tests.permission_calls import GRAMMAR

NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


class Setup:
    def __init__(self, tmp: Path, mode: Mode) -> None:
        tmp = Path(os.path.realpath(tmp))
        self.ws, self.outside = tmp / "ws", tmp / "outside"
        self.ws.mkdir()
        (self.outside / "there").mkdir(parents=True)
        (self.outside / "absent").mkdir()
        for name, text in (("f.txt", "alpha\n"), ("n.ipynb", NOTEBOOK)):
            (self.outside / "there" / name).write_text(text)
        (self.outside / "there" / "dir").mkdir()
        store = SettingsStore(self.ws, user_config_dir=tmp / "cfg", claude_home=tmp / "home" / ".claude")
        self.engine = PermissionEngine(cwd=self.ws, settings=store, grammar=GRAMMAR, mode=mode, session_rules=RuleSet())
        self.asked: list[PermissionRequest] = []
        self.tools: dict[str, AnyTool] = {t.name: t for t in core_tools()}
        self.read_files: dict[Path, FileSnapshot] = {}  # the session's, across calls

    async def call(self, name: str, raw: dict[str, Any]) -> str:
        async def refuse(request: PermissionRequest) -> PermissionAnswer:
            self.asked.append(request)
            return PermissionAnswer("reject_once")

        env = ToolEnvironment(
            tools=self.tools,
            policy=self.engine,
            prompter=refuse,
            emit=lambda _event: None,
            context=lambda _id: ToolContext(
                cwd=self.ws,
                abort=Abort(),
                data_dir=self.ws.parent / "data",
                read_files=self.read_files,
                read_guard=self.engine.read_guard(),
            ),
        )
        async with anyio.create_task_group() as group:
            executor = ToolExecutor(env, Abort(), group)
            executor.add({"type": "tool_use", "id": "toolu_1", "name": name, "input": raw})
            [result] = await executor.results()
        return str(result["content"])


def calls(where: Path) -> list[tuple[str, dict[str, Any]]]:
    """A call of each file tool on things in `where` (which exist in one directory, not in the other)."""
    return [
        ("Write", {"file_path": str(where / "f.txt"), "content": "new\n"}),
        ("Edit", {"file_path": str(where / "f.txt"), "old_string": "alpha", "new_string": "beta"}),
        ("NotebookEdit", {"notebook_path": str(where / "n.ipynb"), "new_source": "x", "cell_id": "cell-0"}),
        ("Read", {"file_path": str(where / "f.txt")}),
        ("Grep", {"pattern": "alpha", "path": str(where / "dir")}),
        ("Glob", {"pattern": "*.txt", "path": str(where / "dir")}),
    ]


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk"])
@pytest.mark.parametrize("index", range(6), ids=[name for name, _ in calls(Path("/x"))])
async def test_a_path_outside_answers_the_same_whether_it_exists_or_not(tmp_path: Path, mode: Mode, index: int) -> None:
    setup = Setup(tmp_path, mode)
    there, absent = setup.outside / "there", setup.outside / "absent"
    name, raw_there = calls(there)[index]
    _, raw_absent = calls(absent)[index]
    said_there = (await setup.call(name, raw_there)).replace(str(there), "<D>")
    said_absent = (await setup.call(name, raw_absent)).replace(str(absent), "<D>")
    assert said_there == said_absent, (said_there, said_absent)
    if mode != "dontAsk":
        assert len(setup.asked) == 2 and "Permission denied by user" in said_there
        # the question showed only what the input says: nothing of the file was read for it
        shown = [d for request in setup.asked for d in request.display if isinstance(d, Diff)]
        assert all(d.old_text in (None, "alpha") and "cells" not in (d.old_text or "") for d in shown), shown
    assert (there / "f.txt").read_text() == "alpha\n"


@pytest.mark.parametrize("index", range(3), ids=["Write", "Edit", "NotebookEdit"])
async def test_the_oracle_the_old_order_had_is_real(tmp_path: Path, index: int) -> None:
    """The control: the checks that read the target, run before the permission step (the old order), tell an
    existing file from a missing one."""
    setup = Setup(tmp_path, "default")
    there, absent = setup.outside / "there", setup.outside / "absent"
    name, raw_there = calls(there)[index]
    _, raw_absent = calls(absent)[index]
    tool = setup.tools[name]
    ctx = ToolContext(cwd=setup.ws, abort=Abort(), data_dir=tmp_path / "data")
    first = await tool.validate_target(tool.input_model.model_validate(raw_there), ctx)
    second = await tool.validate_target(tool.input_model.model_validate(raw_absent), ctx)
    assert (first or "").replace(str(there), "<D>") != (second or "").replace(str(absent), "<D>")


async def test_a_call_inside_the_workspace_bound_to_fail_is_not_asked_about(tmp_path: Path) -> None:
    setup = Setup(tmp_path, "default")
    (setup.ws / "a.txt").write_text("alpha\n")
    said = await setup.call("Edit", {"file_path": str(setup.ws / "a.txt"), "old_string": "a", "new_string": "b"})
    assert "has not been read" in said and setup.asked == []


async def test_the_question_about_a_workspace_file_shows_its_real_diff(tmp_path: Path) -> None:
    setup = Setup(tmp_path, "default")
    path = setup.ws / "a.txt"
    path.write_text("alpha\nbeta\n")
    assert "alpha" in await setup.call("Read", {"file_path": str(path)})  # allowed: inside, read-only
    await setup.call("Edit", {"file_path": str(path), "old_string": "beta", "new_string": "gamma"})
    [asked] = setup.asked
    [diff] = [d for d in asked.display if isinstance(d, Diff)]
    assert (diff.old_text, diff.new_text) == ("alpha\nbeta\n", "alpha\ngamma\n")
