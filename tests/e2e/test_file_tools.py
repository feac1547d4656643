"""The file tools through the real protocol: Read reads what `cat` reads (a FIFO, /proc), a FIFO read is
abortable, an invalid path is an error result the session survives, and Grep keeps Read deny rules."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types

from tests.e2e.harness import Editor, poll, running_editor, text_response, tool_response


def _tool_results(editor: Editor) -> list[dict[str, Any]]:
    return [block for block in editor.last_request_messages()[-1]["content"] if block.get("type") == "tool_result"]


def _writer(fifo: Path, text: str) -> threading.Thread:
    """Opens the FIFO for writing, which the kernel holds until the bridge opens it for reading."""

    def run() -> None:
        with open(fifo, "w") as fh:
            fh.write(text)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as error:
        assert error.errno == errno.ENXIO, error
        return False
    return True


async def test_read_of_a_fifo_gives_what_its_writer_wrote(workspace: Path, data_dir: Path) -> None:
    fifo = workspace / "events"
    os.mkfifo(fifo)
    writer = _writer(fifo, "first event\nsecond event\n")
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, f"read: {fifo}") == {"stopReason": "end_turn"}
        writer.join(10)
        assert "first event" in editor.text(sid) and "second event" in editor.text(sid)
        finished = editor.of_kind("tool_call_update", sid)[-1]
        assert finished["status"] == "completed"
        assert editor.permission_requests == [], "a FIFO in the workspace is read like a file"


async def test_a_fifo_read_waits_for_a_writer_and_a_cancel_ends_it(workspace: Path, data_dir: Path) -> None:
    fifo = workspace / "silent"
    os.mkfifo(fifo)
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        turn = editor.start_prompt(sid, f"read: {fifo}")
        await poll(
            lambda: [u for u in editor.of_kind("tool_call_update", sid) if u.get("status") == "in_progress"],
            what="the Read running",
        )
        await poll(lambda: _has_reader(fifo), what="the bridge holding the FIFO open, waiting")
        editor.cancel(sid)
        assert await asyncio.wait_for(turn, 10) == {"stopReason": "cancelled"}
        await poll(lambda: not _has_reader(fifo), what="the bridge closing the FIFO")
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}


async def test_proc_files_whose_size_says_zero_are_read(workspace: Path, data_dir: Path) -> None:
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "read: /proc/self/status")
        assert len(editor.permission_requests) == 1, "outside the workspace: asked, as before"
        assert "Name:" in editor.text(sid) and "Pid:" in editor.text(sid)


async def test_a_nul_byte_in_a_path_is_an_error_result_and_the_session_goes_on(workspace: Path, data_dir: Path) -> None:
    async with running_editor("playground", workspace, data_dir) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, f"read: {workspace}/a\x00b") == {"stopReason": "end_turn"}
        result = _tool_results(editor)[0]
        assert result["is_error"] and "NUL byte" in str(result["content"])
        assert "ValueError" not in str(result["content"])
        assert await editor.prompt(sid, "hello") == {"stopReason": "end_turn"}


async def test_grep_over_a_directory_keeps_a_read_deny_rule(workspace: Path, data_dir: Path) -> None:
    (workspace / "app.py").write_text("password = os.environ['PW']\n")
    (workspace / "secret.txt").write_text("password = hunter2\n")
    settings = workspace / ".agent-bridge" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(secret.txt)"]}}))
    calls = (("Grep", {"pattern": "password", "output_mode": "content"}), ("Glob", {"pattern": "*.txt"}))
    scenario = {"responses": [tool_response(*calls), text_response("searched")]}
    async with running_editor(scenario, workspace, data_dir) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, "find passwords")
        grep, glob = (str(r["content"]) for r in _tool_results(editor))
        assert "app.py:1:password" in grep and "hunter2" not in grep and "secret" not in grep
        assert "secret" not in glob and "1 file was left out" in glob


async def test_an_edit_applies_to_the_unsaved_text_that_read_showed(workspace: Path, data_dir: Path) -> None:
    """Over LSP document sync (the VS Code extension's), which cannot take writes: the edit is made on the
    editor's text, as Read showed it, and written to disk."""
    target = workspace / "draft.py"
    target.write_text("on disk\n")
    calls = [
        tool_response(("Read", {"file_path": str(target)})),
        tool_response(("Edit", {"file_path": str(target), "old_string": "unsaved", "new_string": "edited"})),
        text_response("done"),
    ]
    async with running_editor({"responses": calls}, workspace, data_dir) as editor:
        editor.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=target.as_uri(), language_id="python", version=1, text="unsaved in the editor\n"
                )
            )
        )
        sid = await editor.new_session()
        await editor.prompt(sid, "fix the draft")
        result = _tool_results(editor)[0]
        assert not result.get("is_error"), result
        assert target.read_text() == "edited in the editor\n"
