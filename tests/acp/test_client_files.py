"""Which files an ACP client's `fs/*` methods carry, and what a failure of the client means for a tool. The
client here is a stand-in for the editor (the far side of the wire), answering `ask` as an editor would."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pygls.lsp.server import LanguageServer

from bridge.server.documents import CLIENT_MAX_BYTES, ClientFiles, ClientRequestFailed
from bridge.tools.base import ToolError


class FakeEditor:
    def __init__(self, *, fails: bool = False) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.fails = fails

    async def __call__(self, method: str, params: dict[str, Any], timeout: float | None) -> Any:
        self.asked.append((method, params))
        if self.fails:
            raise ClientRequestFailed("the buffer is read-only")
        return {"content": "editor text"} if method == "fs/read_text_file" else None


def files(editor: FakeEditor, *, read: bool = True, write: bool = True) -> ClientFiles:
    return ClientFiles(LanguageServer("test", "0"), editor, "sess_1", read=read, write=write)


async def test_text_files_are_read_through_the_client_with_the_session(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("disk text")
    editor = FakeEditor()
    assert await files(editor).read_text(path) == "editor text"
    assert editor.asked == [("fs/read_text_file", {"sessionId": "sess_1", "path": str(path)})]


@pytest.mark.parametrize("kind", ["binary", "huge", "fifo", "directory", "missing"])
async def test_what_a_text_api_cannot_carry_stays_on_disk(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "thing"
    if kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    elif kind == "huge":  # text, but too big to hand to an editor whole
        path.write_bytes(b"x\n" * (CLIENT_MAX_BYTES // 2 + 1))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    editor = FakeEditor()
    assert await files(editor).read_text(path) is None
    assert editor.asked == []


async def test_a_read_the_client_cannot_answer_falls_back_to_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("disk text")
    editor = FakeEditor(fails=True)
    assert await files(editor).read_text(path) is None
    assert len(editor.asked) == 1


async def test_writes_go_to_the_client_new_files_too(tmp_path: Path) -> None:
    editor = FakeEditor()
    new = tmp_path / "new.py"
    assert await files(editor).write_text(new, "print(1)\n") is True
    assert editor.asked == [("fs/write_text_file", {"sessionId": "sess_1", "path": str(new), "content": "print(1)\n"})]
    assert not new.exists()


async def test_a_refused_write_fails_the_tool_and_a_binary_file_is_not_offered(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("a = 1\n")
    with pytest.raises(ToolError, match="read-only"):
        await files(FakeEditor(fails=True)).write_text(path, "a = 2\n")
    binary = tmp_path / "b.bin"
    binary.write_bytes(b"\x00\x01")
    editor = FakeEditor()
    assert await files(editor).write_text(binary, "text now") is False
    assert editor.asked == []


async def test_only_what_the_client_advertised_is_asked(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("disk text")
    editor = FakeEditor()
    assert await files(editor, read=False).read_text(path) is None
    assert await files(editor, write=False).write_text(path, "x") is False
    assert editor.asked == []
