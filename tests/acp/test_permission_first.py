"""Issue 21 item 7 over ACP: an Edit outside the workspace made the bridge ask the editor for that file's content
(`fs/read_text_file`) before asking permission. Now nothing the call names is touched — on disk or through the
editor — before the permission question; a rejected call never reads it, and its answer is the same whether
the file exists or not. The control: a call on a workspace file (which may be read unasked) is read through the
editor before its question, so the harness does see such reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import schema

from tests.acp.editor import Editor, running_agent
from tests.acp.test_conformance import FS, answer, scenario_file, text, tool_use


async def reject_once(request: schema.RequestPermissionRequest) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}


def first_index(editor: Editor, method: str) -> int:
    return next(
        (i for i, w in enumerate(editor.wire) if w.direction == "in" and w.message.get("method") == method),
        len(editor.wire),
    )


def failures(editor: Editor, sid: str) -> list[str]:
    return [
        json.dumps([c.model_dump() for c in u.content or []])
        for u in editor.of_kind("tool_call_update", sid)
        if u.status == "failed"
    ]


async def test_an_edit_outside_reads_nothing_before_or_without_permission(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "there.txt").write_text("alpha\n")
    editor.on_permission = reject_once
    responses = [
        tool_use("Edit", {"file_path": str(outside / "there.txt"), "old_string": "alpha", "new_string": "beta"}),
        tool_use("Write", {"file_path": str(outside / "there.txt"), "content": "new\n"}),
        tool_use("Write", {"file_path": str(outside / "absent.txt"), "content": "new\n"}),
        answer("Fine."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("edit it"))).stop_reason == "end_turn"
    assert len(editor.permission_requests) == 3
    assert editor.reads == [] and editor.incoming("fs/read_text_file") == []
    said = failures(editor, sid)
    assert len(said) == 3 and all("Permission denied by user" in s for s in said)
    assert said[1].replace("there.txt", "X") == said[2].replace("absent.txt", "X"), "no existence oracle"
    assert (outside / "there.txt").read_text() == "alpha\n" and not (outside / "absent.txt").exists()


async def test_an_allowed_edit_outside_is_read_only_after_the_question(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "there.txt"
    target.write_text("alpha\n")
    responses = [
        tool_use("Read", {"file_path": str(target)}),
        tool_use("Edit", {"file_path": str(target), "old_string": "alpha", "new_string": "beta"}),
        answer("Done."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("edit it"))).stop_reason == "end_turn"
    asks = [
        i
        for i, w in enumerate(editor.wire)
        if w.direction == "in" and w.message.get("method") == "session/request_permission"
    ]
    reads = [
        i for i, w in enumerate(editor.wire) if w.direction == "in" and w.message.get("method") == "fs/read_text_file"
    ]
    assert len(asks) == 2 and reads, (asks, reads)
    assert asks[0] < reads[0], "nothing was read before the first question"
    assert any(asks[0] < r < asks[1] for r in reads) and any(r > asks[1] for r in reads), (
        "each call's reads came after its own question"
    )
    assert editor.writes == [] and target.read_text() == "beta\n", "no unsaved changes: the disk, exactly"


async def test_the_control_a_workspace_edit_is_read_through_the_editor_before_its_question(
    editor: Editor, data_dir: Path, workspace: Path, tmp_path: Path
) -> None:
    source = workspace / "app.py"
    source.write_text("a = 1\n")
    responses = [
        tool_use("Read", {"file_path": str(source)}),
        tool_use("Edit", {"file_path": str(source), "old_string": "a = 1", "new_string": "a = 2"}),
        answer("Done."),
    ]
    async with running_agent(editor, scenario_file(tmp_path, responses), data_dir) as (conn, _):
        await conn.initialize(protocol_version=1, client_capabilities=FS)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        assert (await conn.prompt(session_id=sid, prompt=text("edit it"))).stop_reason == "end_turn"
    reads_before = [
        w
        for w in editor.wire[: first_index(editor, "session/request_permission")]
        if w.direction == "in" and w.message.get("method") == "fs/read_text_file"
    ]
    assert len(reads_before) == 2, "the Read's, and the Edit's own before its question"
