"""Edit: exact replacement in files the session has read, encoding/line endings kept, atomic."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.display import Diff, Location
from bridge.tools.base import AnyTool, DocumentSource, FileSnapshot, ToolContext, ToolError, ToolResult
from bridge.tools.edit import EditInput, EditTool, preview_edit
from bridge.tools.read import ReadInput, ReadTool


async def validated(tool: AnyTool, data: Any, ctx: ToolContext) -> str | None:
    """validate_input then validate_target, as the loop runs them (the second once the permission step allows)."""
    return await tool.validate_input(data, ctx) or await tool.validate_target(data, ctx)


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")


def mark_read(ctx: ToolContext, path: Path) -> None:
    """What the Read tool records after reading a file."""
    st = path.stat()
    ctx.read_files[path] = FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


def make(ctx: ToolContext, path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    mark_read(ctx, path)
    return path


async def edit(ctx: ToolContext, path: Path | str, old: str, new: str, replace_all: bool = False) -> str:
    result = await EditTool().call(
        EditInput(file_path=str(path), old_string=old, new_string=new, replace_all=replace_all), ctx
    )
    assert isinstance(result.content, str)
    return result.content


async def refused(ctx: ToolContext, path: Path | str, old: str, new: str, replace_all: bool = False) -> str:
    """The edit fails with a ToolError, and the file (if any) is byte-identical afterwards."""
    before = bytes_of(Path(path))
    data = EditInput(file_path=str(path), old_string=old, new_string=new, replace_all=replace_all)
    message = await validated(EditTool(), data, ctx)
    with pytest.raises(ToolError) as info:
        await EditTool().call(data, ctx)
    assert message == str(info.value)
    assert bytes_of(Path(path)) == before
    assert_no_temp_files(Path(path).parent)
    return str(info.value)


def bytes_of(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def assert_no_temp_files(directory: Path) -> None:
    if not directory.is_absolute():
        return
    assert [p.name for p in directory.iterdir() if p.name.endswith(".tmp")] == []


async def test_replaces_the_single_occurrence_and_shows_a_numbered_snippet(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.py", b"".join(b"line %d\n" % i for i in range(1, 21)))
    text = await edit(ctx, path, "line 10\n", "ten\nmore\n")
    assert path.read_bytes().count(b"ten\nmore\n") == 1
    assert "has been updated" in text
    assert "    10\tten" in text and "    11\tmore" in text and "     6\tline 6" in text
    assert "line 2\n" not in text
    assert_no_temp_files(tmp_path)


async def test_result_carries_a_diff_for_the_editor(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"alpha\nbeta\n")
    result = await EditTool().call(EditInput(file_path=str(path), old_string="beta", new_string="gamma"), ctx)
    assert result.display == [Diff(str(path), "alpha\nbeta\n", "alpha\ngamma\n")]
    assert result.raw_output == {"path": str(path), "replacements": 1}


async def test_preview_shows_the_diff_without_writing(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"alpha\nbeta\n")
    data = EditInput(file_path=str(path), old_string="alpha", new_string="omega")
    unlooked = Diff(str(path), "alpha", "omega", unread=True)
    assert preview_edit(data, ctx) == unlooked, "the file is not looked at before validate_target"
    assert await EditTool().validate_target(data, ctx) is None
    diff = preview_edit(data, ctx)
    assert diff.old_text == "alpha\nbeta\n" and diff.new_text == "omega\nbeta\n"
    assert EditTool().preview(EditInput(file_path=str(path), old_string="alpha", new_string="omega"), ctx) == [diff]
    assert path.read_bytes() == b"alpha\nbeta\n"


async def test_relative_path_is_refused(ctx: ToolContext) -> None:
    message = await refused(ctx, "src/a.py", "x", "y")
    assert "absolute path" in message


async def test_absent_old_string_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"hello world\n")
    message = await refused(ctx, path, "goodbye", "hi")
    assert "not found" in message and "Read the file again" in message


async def test_near_match_hint_shows_the_exact_lines(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.py", b"x = 1\ndef f():\n\treturn \xe2\x80\x9cquoted\xe2\x80\x9d  \ny = 2\n")
    message = await refused(ctx, path, 'def f():\n    return "quoted"', "pass")
    assert "near match" in message and "line 2" in message
    assert "     2\tdef f():" in message and "     3\t\treturn “quoted”" in message


async def test_ambiguous_old_string_names_the_count_and_lines(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"x\nfoo\ny\nfoo\nfoo\n")
    message = await refused(ctx, path, "foo", "bar")
    assert "Found 3 matches" in message and "lines 2, 4, 5" in message and "replace_all" in message


async def test_replace_all_changes_every_occurrence(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"foo foo\nfoo\n")
    text = await edit(ctx, path, "foo", "bar", replace_all=True)
    assert path.read_bytes() == b"bar bar\nbar\n"
    assert "All 3 occurrences" in text


async def test_same_old_and_new_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"abc\n")
    assert "No changes to make" in await refused(ctx, path, "abc", "abc")


async def test_edit_without_read_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"abc\n")
    message = await refused(ctx, path, "abc", "xyz")
    assert "has not been read" in message and "Read" in message


async def test_file_changed_since_read_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"abc\n")
    path.write_bytes(b"abc and more\n")
    message = await refused(ctx, path, "abc", "xyz")
    assert "modified since it was read" in message and "Read it again" in message


async def test_same_size_rewrite_with_new_mtime_is_stale(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"abc\n")
    st = path.stat()
    path.write_bytes(b"abd\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "modified since" in await refused(ctx, path, "abc", "xyz")


async def test_binary_file_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.bin", b"abc\x00\x01\x02def")
    assert "binary" in await refused(ctx, path, "abc", "xyz")


async def test_missing_file_is_refused_with_a_hint(ctx: ToolContext, tmp_path: Path) -> None:
    message = await refused(ctx, tmp_path / "nope.txt", "abc", "xyz")
    assert "does not exist" in message and "Write" in message


async def test_notebook_is_sent_to_notebook_edit(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "n.ipynb", b"{}")
    assert "NotebookEdit" in await refused(ctx, path, "{}", "[]")


async def test_empty_old_string_creates_a_new_file(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "new.txt"
    result = await EditTool().call(EditInput(file_path=str(path), old_string="", new_string="hi\n"), ctx)
    assert path.read_bytes() == b"hi\n"
    assert result.display == [Diff(str(path), None, "hi\n")]
    assert "created" in str(result.content)
    assert ctx.read_files[path].size == 3


async def test_empty_old_string_on_a_file_with_content_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"abc\n")
    assert "empty" in await refused(ctx, path, "", "xyz")


async def test_consecutive_edits_need_no_new_read(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"one two three\n")
    await edit(ctx, path, "one", "1")
    await edit(ctx, path, "two", "2")
    await edit(ctx, path, "three", "3")
    assert path.read_bytes() == b"1 2 3\n"


async def test_deleting_a_line_takes_its_line_break(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"keep\ndrop me\nkeep too\n")
    await edit(ctx, path, "drop me", "")
    assert path.read_bytes() == b"keep\nkeep too\n"


async def test_crlf_line_endings_are_kept(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"one\r\ntwo\r\nthree\r\n")
    await edit(ctx, path, "one\ntwo\n", "uno\ndos\nmas\n")
    assert path.read_bytes() == b"uno\r\ndos\r\nmas\r\nthree\r\n"


async def test_lf_region_of_a_mixed_file_stays_lf(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", b"a\r\nb\r\nc\r\nx\ny\n")
    await edit(ctx, path, "x\ny", "x\nz")
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nx\nz\n"


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"), ("latin-1", b"")],
)
async def test_encoding_and_bom_are_kept(ctx: ToolContext, tmp_path: Path, encoding: str, bom: bytes) -> None:
    path = make(ctx, tmp_path / "a.txt", bom + "café\r\nnaïve\r\n".encode(encoding))
    await edit(ctx, path, "naïve", "señor")
    assert path.read_bytes() == bom + "café\r\nseñor\r\n".encode(encoding)


async def test_character_the_encoding_cannot_hold_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "a.txt", "café\n".encode("latin-1"))
    message = await refused(ctx, path, "café", "café ☕")
    assert "latin-1" in message and "U+2615" in message


async def test_mode_is_kept(ctx: ToolContext, tmp_path: Path) -> None:
    path = make(ctx, tmp_path / "run.sh", b"echo hi\n")
    path.chmod(0o751)
    mark_read(ctx, path)
    await edit(ctx, path, "hi", "there")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751


async def test_symlink_is_kept_and_its_target_edited(ctx: ToolContext, tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_bytes(b"abc\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    mark_read(ctx, link)
    await edit(ctx, link, "abc", "xyz")
    assert link.is_symlink() and target.read_bytes() == b"xyz\n"


async def test_ten_megabyte_file_edits_fast(ctx: ToolContext, tmp_path: Path) -> None:
    line = b"some ordinary line of source code, about sixty characters\n"
    body = line * (10 * 1024 * 1024 // len(line))
    path = make(ctx, tmp_path / "big.txt", body[: len(body) // 2] + b"UNIQUE MARKER\n" + body[len(body) // 2 :])
    started = time.perf_counter()
    result = await EditTool().call(EditInput(file_path=str(path), old_string="UNIQUE MARKER", new_string="done"), ctx)
    await EditTool().call(
        EditInput(file_path=str(path), old_string="ordinary", new_string="plain", replace_all=True), ctx
    )
    elapsed = time.perf_counter() - started
    assert elapsed < 3.0, elapsed
    assert path.stat().st_size > 9 * 1024 * 1024
    assert b"UNIQUE" not in path.read_bytes() and b"ordinary" not in path.read_bytes()
    [diff] = result.display
    assert isinstance(diff, Diff) and diff.partial and diff.old_text is not None
    assert "UNIQUE MARKER" in diff.old_text and len(diff.old_text) < 1000 and "done" in diff.new_text
    assert "\tdone" in str(result.content)


async def test_locations_name_the_file_without_reading_it(ctx: ToolContext, tmp_path: Path) -> None:
    """The location is sent before the permission step: the file is not read for it (issue 21 item 7; it was
    read for old_string's line, and a FIFO named there blocked the whole bridge in that read)."""
    path = make(ctx, tmp_path / "a.txt", b"a\nb\nneedle\n")
    locations = EditTool().locations(EditInput(file_path=str(path), old_string="needle", new_string="x"))
    assert locations == [Location(str(path))]
    os.mkfifo(tmp_path / "pipe")
    fifo = str(tmp_path / "pipe")
    assert EditTool().locations(EditInput(file_path=fifo, old_string="x", new_string="y")) == [Location(fifo)]
    assert EditTool().permission_paths(EditInput(file_path=str(path), old_string="a", new_string="b"), ctx) == [
        (path, "write")
    ]


async def test_the_change_tools_refuse_a_fifo_without_waiting_for_a_writer(ctx: ToolContext, tmp_path: Path) -> None:
    """Read now reads FIFOs; the tools that change files refuse them, and never block on their open()."""
    from bridge.tools.notebook_edit import NotebookEditInput, NotebookEditTool
    from bridge.tools.write import WriteInput, WriteTool

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    notebook = tmp_path / "pipe.ipynb"
    os.mkfifo(notebook)
    mark_read(ctx, fifo)
    mark_read(ctx, notebook)
    checks: list[tuple[AnyTool, Any]] = [
        (EditTool(), EditInput(file_path=str(fifo), old_string="a", new_string="b")),
        (WriteTool(), WriteInput(file_path=str(fifo), content="x")),
        (NotebookEditTool(), NotebookEditInput(notebook_path=str(notebook), new_source="x", cell_id="cell-0")),
    ]
    for tool, data in checks:
        problem = await validated(tool, data, ctx)
        assert problem is not None and "not a regular file" in problem, (tool.name, problem)
    assert stat.S_ISFIFO(fifo.stat().st_mode), "left as it was"


# --- editor buffers (issue 13): the unsaved text is what is edited, and the edit goes through the editor ---


class Editor(DocumentSource):
    """Stands for the editor (an ACP client with fs.readTextFile / fs.writeTextFile): it holds unsaved
    text for the files it has open and takes writes into those buffers."""

    def __init__(self, buffers: dict[Path, str], *, takes_writes: bool = True) -> None:
        self.buffers = buffers
        self.takes_writes = takes_writes
        self.writes: list[tuple[Path, str]] = []

    async def read_text(self, path: Path) -> str | None:
        return self.buffers.get(path)

    async def write_text(self, path: Path, text: str) -> bool:
        if not self.takes_writes or path not in self.buffers:  # writes only what it has open
            return False
        self.buffers[path] = text
        self.writes.append((path, text))
        return True


def editor_ctx(tmp_path: Path, editor: Editor) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data", documents=editor)


async def read_tool(ctx: ToolContext, path: Path) -> str:
    result = await ReadTool().call(ReadInput(file_path=str(path)), ctx)
    assert isinstance(result.content, str)
    return result.content


async def checked_edit(ctx: ToolContext, path: Path, old: str, new: str) -> ToolResult:
    """validate_input then call, as the loop runs them; a problem raises."""
    data = EditInput(file_path=str(path), old_string=old, new_string=new)
    problem = await validated(EditTool(), data, ctx)
    if problem:
        raise ToolError(problem)
    return await EditTool().call(data, ctx)


async def test_an_edit_acts_on_the_unsaved_text_and_goes_through_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("alpha\n")
    editor = Editor({path: "alpha\nunsaved beta\n"})
    ctx = editor_ctx(tmp_path, editor)
    assert "unsaved beta" in await read_tool(ctx, path)
    result = await checked_edit(ctx, path, "unsaved beta", "gamma")
    assert editor.buffers[path] == "alpha\ngamma\n" and editor.writes == [(path, "alpha\ngamma\n")]
    assert path.read_text() == "alpha\n", "the disk is the editor's business now"
    assert result.raw_output == {"path": str(path), "replacements": 1, "written": "editor"}
    assert result.display == [Diff(str(path), "alpha\nunsaved beta\n", "alpha\ngamma\n")]
    await checked_edit(ctx, path, "gamma", "delta")  # our own write counts as read
    assert editor.buffers[path] == "alpha\ndelta\n"


async def test_the_permission_dialog_previews_the_unsaved_text(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("on disk\n")
    ctx = editor_ctx(tmp_path, Editor({path: "in the editor\n"}))
    await read_tool(ctx, path)
    data = EditInput(file_path=str(path), old_string="editor", new_string="buffer")
    assert await validated(EditTool(), data, ctx) is None
    assert EditTool().preview(data, ctx) == [Diff(str(path), "in the editor\n", "in the buffer\n")]


async def test_unsaved_text_typed_after_the_read_stops_the_edit(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("alpha\n")
    editor = Editor({path: "alpha\n"})
    ctx = editor_ctx(tmp_path, editor)
    await read_tool(ctx, path)
    editor.buffers[path] = "alpha\ntyped by the user\n"
    with pytest.raises(ToolError, match="modified since it was read"):
        await checked_edit(ctx, path, "alpha", "omega")
    assert editor.writes == []


async def test_a_disk_read_does_not_cover_unsaved_changes_made_since(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("alpha\n")
    editor = Editor({})
    ctx = editor_ctx(tmp_path, editor)
    await read_tool(ctx, path)  # not open in the editor: read from disk
    editor.buffers[path] = "alpha\n"  # opened, unchanged: the disk read still holds
    await checked_edit(ctx, path, "alpha", "beta")
    assert editor.buffers[path] == "beta\n"
    ctx2 = editor_ctx(tmp_path, editor := Editor({}))
    await read_tool(ctx2, path)
    editor.buffers[path] = "alpha\nunsaved\n"  # opened and changed: the model has not seen that
    with pytest.raises(ToolError, match=r"unsaved changes .* that were not read"):
        await checked_edit(ctx2, path, "alpha", "beta")


async def test_an_editor_that_does_not_take_writes_gets_the_disk_written(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_bytes(b"alpha\r\n")
    editor = Editor({path: "alpha\r\nunsaved\r\n"}, takes_writes=False)
    ctx = editor_ctx(tmp_path, editor)
    await read_tool(ctx, path)
    result = await checked_edit(ctx, path, "unsaved", "saved")
    assert path.read_bytes() == b"alpha\r\nsaved\r\n", "the unsaved text, edited, in the file's line endings"
    assert result.raw_output == {"path": str(path), "replacements": 1}
    st = path.stat()
    assert ctx.read_files[path] == FileSnapshot(st.st_mtime_ns, st.st_size)


async def test_after_the_editor_saves_and_closes_the_file_the_next_edit_reads_the_disk(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text("alpha\n")
    editor = Editor({path: "alpha\n"})
    ctx = editor_ctx(tmp_path, editor)
    await read_tool(ctx, path)
    await checked_edit(ctx, path, "alpha", "beta")
    path.write_text(editor.buffers.pop(path))  # the user saves and closes it
    await checked_edit(ctx, path, "beta", "gamma")  # the text is what was written: still counts as read
    assert path.read_text() == "gamma\n"
