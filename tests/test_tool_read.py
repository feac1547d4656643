"""Read: numbered windows of real files, bounded memory on huge files, clear refusals."""

from __future__ import annotations

import base64
import os
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.tools.base import DocumentSource, FileSnapshot, Location, ToolContext, ToolError, ToolResult
from bridge.tools.read import MAX_IMAGE_BYTES, ReadInput, ReadTool

READ = ReadTool()


def context(root: Path, documents: DocumentSource | None = None) -> ToolContext:
    return ToolContext(cwd=root, abort=Abort(), data_dir=root / "data", documents=documents or DocumentSource())


async def read(ctx: ToolContext, path: Path | str, **fields: object) -> ToolResult:
    data = ReadInput.model_validate({"file_path": str(path), **fields})
    problem = await READ.validate_input(data, ctx)
    if problem:
        raise ToolError(problem)
    return await READ.call(data, ctx)


def text_of(result: ToolResult) -> str:
    assert isinstance(result.content, str)
    return result.content


def test_input_model() -> None:
    with pytest.raises(ValidationError):
        ReadInput.model_validate({})
    with pytest.raises(ValidationError):
        ReadInput.model_validate({"file_path": "/a", "limit": 0})
    with pytest.raises(ValidationError):
        ReadInput.model_validate({"file_path": "/a", "path": "/a"})
    schema = READ.schema()["input_schema"]
    assert "title" not in str(schema) and schema["required"] == ["file_path"]
    assert READ.max_result_chars == float("inf") and READ.interrupt_behavior == "cancel"


async def test_numbered_lines_like_cat_n(tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("import os\n\n    indented\r\nlast without newline")
    result = await read(context(tmp_path), path)
    assert text_of(result) == "     1\timport os\n     2\t\n     3\t    indented\n     4\tlast without newline"
    assert not result.is_error


async def test_offset_limit_and_the_more_lines_note(tmp_path: Path) -> None:
    path = tmp_path / "n.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    text = text_of(await read(context(tmp_path), path, offset=10, limit=3))
    lines = text.splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "88 more lines; use offset=13" in text
    assert "more lines" not in text_of(await read(context(tmp_path), path, offset=98))


async def test_default_limit_is_2000_lines(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("x\n" * 2500)
    text = text_of(await read(context(tmp_path), path))
    assert text.count("\tx") == 2000
    assert "500 more lines; use offset=2001" in text


async def test_offset_past_the_end_and_empty_file(tmp_path: Path) -> None:
    short = tmp_path / "short.txt"
    short.write_text("a\nb\nc")
    assert "has 3 lines; offset 9 is past its end" in text_of(await read(context(tmp_path), short, offset=9))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert "exists but is empty" in text_of(await read(context(tmp_path), empty))


async def test_long_lines_are_cut(tmp_path: Path) -> None:
    path = tmp_path / "min.js"
    path.write_text("a" * 100_000 + "\nshort\n")
    text = text_of(await read(context(tmp_path), path))
    first, second = text.split("\n")[:2]
    assert first == "     1\t" + "a" * 2000 + " […line cut at 2000 characters]"
    assert second == "     2\tshort"
    assert "1 lines longer than 2000 characters were cut" in text


async def test_huge_sparse_file_is_streamed_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with open(path, "w") as fh:
        fh.writelines(f"entry {i}\n" for i in range(1, 300_001))
    os.truncate(path, 1 << 30)  # 1 GB: the rest is a hole of NUL bytes
    ctx = context(tmp_path)
    tracemalloc.start()
    try:
        result = await read(ctx, path, offset=250_000, limit=5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = text_of(result)
    assert text.splitlines()[:5] == [f"{n:>6}\tentry {n}" for n in range(250_000, 250_005)]
    assert "more lines follow (the file is 1.0 GB); use offset=250005" in text
    assert peak < 8 * 1024 * 1024, peak


async def test_relative_path_is_refused_with_the_absolute_one(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="absolute path") as error:
        await read(context(tmp_path), "src/app.py")
    assert str(tmp_path / "src/app.py") in str(error.value)


async def test_missing_file_suggests_similar_names(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("a: 1\n")
    with pytest.raises(ToolError, match="does not exist") as error:
        await read(context(tmp_path), tmp_path / "config.yml")
    assert f"Did you mean: {tmp_path / 'config.yaml'}" in str(error.value)
    with pytest.raises(ToolError, match=r"directory .* does not exist either"):
        await read(context(tmp_path), tmp_path / "nope" / "x.txt")


async def test_directory_is_refused_pointing_to_glob_or_ls(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match=r"is a directory.*Glob or Bash `ls`"):
        await read(context(tmp_path), tmp_path)


async def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.bin"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 10)
    with pytest.raises(ToolError, match="binary file"):
        await read(context(tmp_path), path)


async def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer exists, so open() for reading returns
    try:
        with pytest.raises(ToolError, match="not a regular file"):
            await read(context(tmp_path), fifo)
    finally:
        os.close(fd)


async def test_images_come_back_as_image_blocks(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(50)
    path = tmp_path / "shot.png"
    path.write_bytes(png)
    result = await read(context(tmp_path), path)
    assert result.content == [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
        }
    ]
    webp = tmp_path / "pic.webp"
    webp.write_bytes(b"RIFF\x10\x00\x00\x00WEBPVP8 " + bytes(20))
    blocks = (await read(context(tmp_path), webp)).content
    assert isinstance(blocks, list) and blocks[0]["source"]["media_type"] == "image/webp"


async def test_oversized_image_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.jpg"
    path.write_bytes(b"\xff\xd8\xff\xe0")
    os.truncate(path, MAX_IMAGE_BYTES + 1)
    with pytest.raises(ToolError, match=r"over the .* limit"):
        await read(context(tmp_path), path)


async def test_pdf_is_refused_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "doc.pdf"
    path.write_bytes(b"%PDF-1.7\n")
    with pytest.raises(ToolError, match="pdftotext"):
        await read(context(tmp_path), path)
    with pytest.raises(ToolError, match="pages applies to PDF"):
        await read(context(tmp_path), tmp_path / "a.txt", pages="1-2")


async def test_utf16_and_bom(tmp_path: Path) -> None:
    utf16 = tmp_path / "w.txt"
    utf16.write_bytes(b"\xff\xfe" + "héllo\r\nwörld\r\n".encode("utf-16-le"))
    assert text_of(await read(context(tmp_path), utf16)) == "     1\théllo\n     2\twörld"
    bom = tmp_path / "b.txt"
    bom.write_bytes(b"\xef\xbb\xbfone\n")
    assert text_of(await read(context(tmp_path), bom)) == "     1\tone"


async def test_records_the_snapshot_for_edit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("one\ntwo\n")
    ctx = context(tmp_path)
    await read(ctx, path, limit=1)
    st = os.stat(path)
    assert ctx.read_files[path] == FileSnapshot(st.st_mtime_ns, st.st_size)


async def test_reads_the_editors_unsaved_text(tmp_path: Path) -> None:
    path = tmp_path / "open.py"
    path.write_text("on disk\n")

    class Editor(DocumentSource):
        def get_text(self, p: Path) -> str | None:
            return "unsaved 1\nunsaved 2\n" if p == path else None

    ctx = context(tmp_path, Editor())
    text = text_of(await read(ctx, path))
    assert text.startswith("     1\tunsaved 1\n     2\tunsaved 2")
    assert "unsaved version" in text
    assert path in ctx.read_files


def test_title_locations_and_backfill(tmp_path: Path) -> None:
    data = ReadInput(file_path="/repo/src/app.py", offset=10, limit=51)
    assert READ.user_facing_title(data) == "Read /repo/src/app.py (lines 10-60)"
    assert READ.user_facing_title(ReadInput(file_path="/repo/a.py")) == "Read /repo/a.py"
    assert READ.locations(data) == [Location("/repo/src/app.py", 10)]
    assert READ.backfill_observable_input({"file_path": "/repo/x/../a.py"}) == {"file_path": "/repo/a.py"}
    assert READ.is_concurrency_safe(data) and READ.is_read_only(data)
    assert READ.permission_paths(data, context(tmp_path)) == [(Path("/repo/src/app.py"), "read")]
