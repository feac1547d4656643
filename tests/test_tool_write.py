"""Write: create or replace a file atomically; existing files must have been read and be unchanged."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.display import Diff
from bridge.tools.base import AnyTool, FileSnapshot, ToolContext, ToolError
from bridge.tools.fileio import atomic_write
from bridge.tools.write import WriteInput, WriteTool, preview_write
from tests.test_tool_edit import Editor, editor_ctx, read_tool


async def validated(tool: AnyTool, data: Any, ctx: ToolContext) -> str | None:
    """validate_input then validate_target, as the loop runs them (the second once the permission step allows)."""
    return await tool.validate_input(data, ctx) or await tool.validate_target(data, ctx)


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")


def mark_read(ctx: ToolContext, path: Path) -> None:
    st = path.stat()
    ctx.read_files[path] = FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


def bytes_of(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def temp_files(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith(".tmp")]


async def write(ctx: ToolContext, path: Path | str, content: str) -> str:
    result = await WriteTool().call(WriteInput(file_path=str(path), content=content), ctx)
    assert isinstance(result.content, str)
    return result.content


async def refused(ctx: ToolContext, path: Path | str, content: str) -> str:
    before = bytes_of(Path(path))
    data = WriteInput(file_path=str(path), content=content)
    message = await validated(WriteTool(), data, ctx)
    with pytest.raises(ToolError) as info:
        await WriteTool().call(data, ctx)
    assert message == str(info.value)
    assert bytes_of(Path(path)) == before
    return str(info.value)


async def test_creates_a_file_and_its_parent_directories(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "new.py"
    result = await WriteTool().call(WriteInput(file_path=str(path), content="print('hi')\n"), ctx)
    assert path.read_bytes() == b"print('hi')\n"
    assert "created successfully" in str(result.content)
    assert result.display == [Diff(str(path), None, "print('hi')\n")]
    assert ctx.read_files[path] == FileSnapshot(path.stat().st_mtime_ns, 12)
    assert temp_files(path.parent) == []


async def test_new_file_gets_the_umask_mode(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    await write(ctx, path, "x")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


async def test_overwrites_a_file_that_was_read(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"old\n")
    mark_read(ctx, path)
    result = await WriteTool().call(WriteInput(file_path=str(path), content="new\ncontent\n"), ctx)
    assert path.read_bytes() == b"new\ncontent\n"
    assert "overwritten (2 lines)" in str(result.content)
    assert result.display == [Diff(str(path), "old\n", "new\ncontent\n")]
    await write(ctx, path, "again\n")  # the write recorded the new snapshot
    assert path.read_bytes() == b"again\n"


async def test_preview_shows_the_diff_without_writing(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"old\n")
    mark_read(ctx, path)
    data = WriteInput(file_path=str(path), content="new\n")
    assert preview_write(data, ctx) == Diff(str(path), None, "new\n", unread=True), (
        "not looked at before validate_target"
    )
    assert await WriteTool().validate_target(data, ctx) is None
    diff = preview_write(data, ctx)
    assert (diff.old_text, diff.new_text) == ("old\n", "new\n")
    assert path.read_bytes() == b"old\n"
    fresh = tmp_path / "fresh.txt"
    assert WriteTool().preview(WriteInput(file_path=str(fresh), content="hi"), ctx) == [
        Diff(str(fresh), None, "hi", unread=True)
    ]
    assert not fresh.exists()


async def test_relative_path_is_refused(ctx: ToolContext) -> None:
    assert "absolute path" in await refused(ctx, "notes.txt", "x")


async def test_existing_file_not_read_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"precious\n")
    message = await refused(ctx, path, "clobbered")
    assert "has not been read" in message and "Read" in message


async def test_file_changed_since_read_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"v1\n")
    mark_read(ctx, path)
    path.write_bytes(b"v2 by the user\n")
    assert "modified since it was read" in await refused(ctx, path, "model's version")


async def test_directory_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    assert "is a directory" in await refused(ctx, tmp_path, "x")


async def test_parent_that_is_a_file_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    (tmp_path / "plain").write_bytes(b"")
    assert "is a file, not a directory" in await refused(ctx, tmp_path / "plain" / "x.txt", "x")


async def test_crlf_and_bom_of_the_old_file_are_kept(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    mark_read(ctx, path)
    await write(ctx, path, "uno\ndos\ntres\n")
    assert path.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\ntres\r\n"


async def test_utf16_file_stays_utf16(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"\xff\xfe" + "old\n".encode("utf-16-le"))
    mark_read(ctx, path)
    await write(ctx, path, "naïve\n")
    assert path.read_bytes() == b"\xff\xfe" + "naïve\n".encode("utf-16-le")


async def test_mode_is_kept(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "tool.sh"
    path.write_bytes(b"#!/bin/sh\n")
    path.chmod(0o700)
    mark_read(ctx, path)
    await write(ctx, path, "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o700


async def test_binary_file_can_be_replaced_by_text(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "blob"
    path.write_bytes(b"\x00\x01\x02")
    mark_read(ctx, path)
    result = await WriteTool().call(WriteInput(file_path=str(path), content="text\n"), ctx)
    assert path.read_bytes() == b"text\n" and result.display == [Diff(str(path), None, "text\n")]


async def test_is_destructive_only_when_overwriting(tmp_path: Path) -> None:
    (tmp_path / "exists").write_bytes(b"")
    tool = WriteTool()
    assert tool.is_destructive(WriteInput(file_path=str(tmp_path / "exists"), content=""))
    assert not tool.is_destructive(WriteInput(file_path=str(tmp_path / "new"), content=""))


async def test_observers_see_the_expanded_path(tmp_path: Path) -> None:
    raw = {"file_path": "~/x/../y.txt", "content": "c"}
    seen = WriteTool().backfill_observable_input(raw)
    assert seen["file_path"] == str(Path.home() / "y.txt")
    assert raw["file_path"] == "~/x/../y.txt"
    assert WriteTool().backfill_observable_input(seen) == seen


def test_failed_atomic_write_leaves_the_original_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"original\n")

    with pytest.raises(TypeError):
        atomic_write(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"original\n"
    assert temp_files(tmp_path) == []


def test_atomic_write_into_a_missing_directory_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="Directory does not exist"):
        atomic_write(tmp_path / "missing" / "a.txt", b"x")


async def test_overwriting_an_open_file_replaces_the_unsaved_text_through_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "open.txt"
    path.write_text("on disk\n")
    editor = Editor({path: "unsaved\r\ntext\r\n"})
    ctx = editor_ctx(tmp_path, editor)
    data = WriteInput(file_path=str(path), content="new\ncontent\n")
    assert "has not been read" in (await validated(WriteTool(), data, ctx) or "")
    await read_tool(ctx, path)
    assert await validated(WriteTool(), data, ctx) is None
    assert WriteTool().preview(data, ctx) == [Diff(str(path), "unsaved\r\ntext\r\n", "new\r\ncontent\r\n")]
    result = await WriteTool().call(data, ctx)
    assert editor.buffers[path] == "new\r\ncontent\r\n" and path.read_text() == "on disk\n"
    assert result.raw_output == {"path": str(path), "created": False, "lines": 2, "written": "editor"}
    editor.buffers[path] += "typed\r\n"
    assert "modified since it was read" in (await validated(WriteTool(), data, ctx) or "")
