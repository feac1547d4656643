"""Read: numbered windows of real files, bounded memory on huge files, clear refusals."""

from __future__ import annotations

import base64
import contextlib
import errno
import os
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.display import Location
from bridge.tools import read as read_module
from bridge.tools.base import DocumentSource, FileSnapshot, ToolContext, ToolError, ToolResult
from bridge.tools.fileio import text_digest
from bridge.tools.read import MAX_IMAGE_BYTES, ReadInput, ReadTool
from tests.poll import poll

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


def holders_of(path: Path) -> list[str]:
    """This process's open file descriptors on `path` (from /proc/self/fd)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                found.append(fd)
    return found


def write_when_opened(fifo: Path, text: str) -> threading.Thread:
    """A writer whose open() waits until a reader has the FIFO open (no sleeps: the kernel orders it)."""

    def run() -> None:
        with open(fifo, "w") as fh:
            fh.write(text)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def test_a_fifo_reads_what_its_writer_writes(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = write_when_opened(fifo, "one\ntwo\nthree\n")
    ctx = context(tmp_path)
    result = await read(ctx, fifo)
    writer.join(5)
    assert text_of(result) == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.raw_output is not None and result.raw_output["stream"] == "FIFO"
    assert fifo in ctx.read_files and holders_of(fifo) == []


async def test_a_fifo_without_a_writer_waits_and_the_abort_ends_the_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    outcome: list[object] = []

    async def reading() -> None:
        try:
            outcome.append(await read(context(tmp_path), fifo))
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise

    async with anyio.create_task_group() as group:
        group.start_soon(reading)
        await poll(lambda: bool(holders_of(fifo)), what="Read to open the FIFO and wait")
        assert outcome == [], "no writer yet: Read is still waiting, as cat does"
        group.cancel_scope.cancel()
    assert outcome == ["cancelled"]
    assert holders_of(fifo) == [], "the FIFO is closed once the wait ends"
    with pytest.raises(OSError) as no_reader:  # the kernel agrees: nobody holds the read end any more
        os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    assert no_reader.value.errno == errno.ENXIO


async def test_an_endless_fifo_stops_at_the_window(tmp_path: Path) -> None:
    fifo = tmp_path / "yes"
    os.mkfifo(fifo)
    stopped = threading.Event()

    def endless() -> None:
        try:
            with open(fifo, "w") as fh:
                while True:
                    fh.write("y\n" * 1000)
                    fh.flush()
        except BrokenPipeError:  # the reader went away
            stopped.set()

    threading.Thread(target=endless, daemon=True).start()
    text = text_of(await read(context(tmp_path), fifo, limit=5))
    assert text.splitlines()[:5] == [f"{n:>6}\ty" for n in range(1, 6)]
    assert "The stream had more after line 5" in text and "use offset" not in text
    assert await anyio.to_thread.run_sync(stopped.wait, 10), "the writer saw the read end close"


async def test_an_offset_in_a_fifo_counts_its_lines(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = write_when_opened(fifo, "".join(f"line {i}\n" for i in range(1, 11)))
    text = text_of(await read(context(tmp_path), fifo, offset=4, limit=2))
    writer.join(5)
    assert text.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]


async def test_endless_binary_devices_are_refused_at_once(tmp_path: Path) -> None:
    for device in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(ToolError, match="binary file"):
            await read(context(tmp_path), device)


async def test_dev_null_reads_as_empty(tmp_path: Path) -> None:
    assert text_of(await read(context(tmp_path), "/dev/null")) == "[The file /dev/null exists but is empty.]"


async def test_proc_and_sys_files_whose_size_says_zero_are_read_to_their_end(tmp_path: Path) -> None:
    status = Path("/proc/self/status")
    assert status.stat().st_size == 0
    text = text_of(await read(context(tmp_path), status))
    assert text.startswith("     1\tName:\t") and "Pid:\t" in text
    first = text_of(await read(context(tmp_path), status, limit=1))
    assert "more lines; use offset=2" in first and "0 bytes" not in first
    sys_file = next(
        (p for p in (Path("/sys/kernel/mm/transparent_hugepage/enabled"), Path("/sys/power/state")) if p.exists()), None
    )
    if sys_file is not None:
        assert sys_file.stat().st_size in (0, 4096)  # sysfs says 4096 (or 0) whatever the content
        assert text_of(await read(context(tmp_path), sys_file)).startswith("     1\t")


async def test_a_socket_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ToolError, match="is a socket"):
            await read(context(tmp_path), path)
    finally:
        server.close()


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


async def test_reads_through_the_editors_async_source_and_records_the_texts_digest(tmp_path: Path) -> None:
    path = tmp_path / "open.py"
    path.write_text("on disk\n")
    asked: list[Path] = []

    class Client(DocumentSource):  # stands for an ACP client answering fs/read_text_file
        async def read_text(self, p: Path) -> str | None:
            asked.append(p)
            return "from the client\n" if p == path else None

    ctx = context(tmp_path, Client())
    assert text_of(await read(ctx, path)).startswith("     1\tfrom the client")
    assert ctx.read_files[path] == FileSnapshot(-1, len("from the client\n"), text_digest("from the client\n"))
    other = tmp_path / "closed.py"
    other.write_text("disk only\n")
    assert text_of(await read(ctx, other)) == "     1\tdisk only"
    assert asked == [path, other] and ctx.read_files[other].digest is None


def test_title_locations_and_backfill(tmp_path: Path) -> None:
    data = ReadInput(file_path="/repo/src/app.py", offset=10, limit=51)
    assert READ.user_facing_title(data) == "Read /repo/src/app.py (lines 10-60)"
    assert READ.user_facing_title(ReadInput(file_path="/repo/a.py")) == "Read /repo/a.py"
    assert READ.locations(data) == [Location("/repo/src/app.py", 10)]
    assert READ.backfill_observable_input({"file_path": "/repo/x/../a.py"}) == {"file_path": "/repo/a.py"}
    assert READ.is_concurrency_safe(data) and READ.is_read_only(data)
    assert READ.permission_paths(data, context(tmp_path)) == [(Path("/repo/src/app.py"), "read")]


# --- reads that can block are bounded (issue 26 item 6) ---------------------------------------------------------


def test_the_bound_is_claude_codes() -> None:
    assert read_module.STREAM_WAIT_S == 20.0


async def test_a_fifo_nobody_writes_gives_up_after_the_bound_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_module, "STREAM_WAIT_S", 0.3)
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(ToolError) as error:
        await read(context(tmp_path), fifo)
    took = time.monotonic() - started
    assert 0.3 <= took < 5, took
    message = str(error.value)
    assert "Nothing was written to the FIFO" in message and "within 0.3 s" in message
    assert "timeout 5 cat" in message, "it says what to do instead"
    assert holders_of(fifo) == []


async def test_a_fifo_whose_writer_stalls_returns_what_came_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_module, "STREAM_WAIT_S", 0.5)
    fifo = tmp_path / "slow"
    os.mkfifo(fifo)
    done = threading.Event()

    def stalls() -> None:
        with open(fifo, "w") as fh:  # opens once Read has the read end
            fh.write("first\nsecond\n")
            fh.flush()
            done.wait(10)  # and then writes nothing more, never closing

    writer = threading.Thread(target=stalls, daemon=True)
    writer.start()
    try:
        result = await read(context(tmp_path), fifo)
    finally:
        done.set()
        writer.join(5)
    text = text_of(result)
    assert text.startswith("     1\tfirst\n     2\tsecond") and "Read stopped there" in text
    assert result.raw_output is not None and result.raw_output["gave_up_after_s"] == 0.5


async def test_a_terminal_device_that_gives_nothing_is_bounded_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_module, "STREAM_WAIT_S", 0.3)
    master, slave = os.openpty()
    try:
        with pytest.raises(ToolError, match=r"The device .* gave no data within 0.3 s"):
            await read(context(tmp_path), Path(os.ttyname(slave)))
    finally:
        os.close(master)
        os.close(slave)
