"""Read: a window of a text file as numbered lines (`cat -n` style), or an image as an image block.

The file is streamed in chunks: skipping to `offset` counts newlines, a long line is cut while it is read
(its rest is skipped, never held), and the "N more lines" note counts ahead only within a byte budget.
So reading lines 5,000,000-5,000,010 of a 1 GB file holds a few chunks, not the file. The output bounds
itself (lines x width and a character budget), hence `max_result_chars = inf`.

Read reads what `cat` reads. A FIFO or a device is a stream: opened without blocking, waited on (a FIFO with
no writer waits for one, as `cat` does), read until it ends or the window is full, at most `MAX_STREAM_BYTES`,
and never longer than `STREAM_WAIT_S` (Claude Code's bound): then Read gives up with what it has, or says that
nothing came and what to do. The wait ends at once on a cancel. Binary streams (`/dev/zero`, `/dev/urandom`)
are refused at their first block. `/proc` and `/sys` files, whose size says 0, are read to their end like
any file.

The file opened is the real path the permission step judged, opened following no symlink (`bridge.safefs`):
a name flipped to a link since the check is refused, never followed.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import errno
import io
import os
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import anyio
from pydantic import Field

from bridge import safefs
from bridge.permissions.facts import RuleForm
from bridge.tools.base import FileSnapshot, Location, Tool, ToolContext, ToolError, ToolInput, ToolResult, Unbounded
from bridge.tools.fileio import Target, backfill_path, editor_text, snapshot_of, target_of, text_digest
from bridge.tools.paths import absolute_path, looks_binary, path_locations, path_problem, read_error

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 100_000  # about Claude Code's 25k-token read budget
COUNT_AHEAD_BYTES = 16 * 1024 * 1024  # how far we count the lines after the window
CHUNK = 64 * 1024
MAX_IMAGE_BYTES = 3_750_000  # base64 of it stays under the API's 5 MB per image
MAX_DECODE_WHOLE = 32 * 1024 * 1024  # UTF-16 files are decoded whole, up to this size
LINE_CUT = " […line cut at 2000 characters]"
MAX_STREAM_BYTES = 16 * 1024 * 1024  # read from a FIFO or device at most (it may never end)
STREAM_WAIT_S = 20.0  # the longest Read waits on a FIFO or device (one with no writer may never answer)

_IMAGE_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
]
_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


class ReadInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file")
    offset: int | None = Field(default=None, ge=0, description="First line to read (1-based)")
    limit: int | None = Field(default=None, ge=1, description=f"Number of lines (default {DEFAULT_LIMIT})")
    pages: str | None = Field(default=None, description="PDF page range (PDFs are not supported here)")


@dataclass
class Window:
    """Lines `first`.. of a file, and what the model needs to know about the rest."""

    first: int
    lines: list[str] = field(default_factory=list)
    total: int | None = None  # lines in the file, when counted to the end
    remaining: int | None = None  # lines after the window; None when not counted (too far to count)
    capped: bool = False  # stopped by the character budget before `limit`
    cut_lines: int = 0
    stream: bool = False  # read from a FIFO or device that had not ended

    def render(self, path: Path, size: int) -> str:
        body = "\n".join(f"{self.first + i:>6}\t{line}" for i, line in enumerate(self.lines))
        after = self.first + len(self.lines)
        notes: list[str] = []
        if self.capped:
            notes.append(f"[Output capped at {MAX_OUTPUT_CHARS} characters; continue with offset={after}.]")
        elif self.stream:
            notes.append(
                f"[The stream had more after line {after - 1}; Read stopped there. What a FIFO gave is "
                "gone once read: another Read gets what is written next.]"
            )
        elif self.remaining:
            notes.append(f"[… {self.remaining} more lines; use offset={after} to read on.]")
        elif self.remaining is None:
            what = f"the file is {_size(size)}" if size else "the file's size is not known"
            notes.append(f"[… more lines follow ({what}); use offset={after} to read on.]")
        if self.cut_lines:
            notes.append(f"[{self.cut_lines} lines longer than {MAX_LINE_CHARS} characters were cut.]")
        return body + ("\n\n" + "\n".join(notes) if notes else "")


def _decode_line(raw: bytes, cut: bool) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\r")
    if cut or len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + LINE_CUT
    return text


def read_window(fh: IO[bytes], offset: int, limit: int) -> Window:
    """Stream `fh` once: skip to line `offset`, keep `limit` lines, count what follows within a budget."""
    window = Window(first=offset)
    line_no = 1
    current = bytearray()
    cut = False
    keep_bytes = MAX_LINE_CHARS * 4 + 4  # enough for 2000 characters of UTF-8
    chars = 0
    ahead = 0  # bytes scanned after the window
    counting = False
    extra = 0  # lines counted after the window
    pending_tail = False  # the file's last line has no newline yet
    skipped_partial = False  # while skipping, the data read so far ends inside a line
    while True:
        chunk = fh.read(CHUNK)
        if not chunk:
            break
        pos = 0
        n = len(chunk)
        if counting:
            extra += chunk.count(b"\n")
            pending_tail = not chunk.endswith(b"\n")
            ahead += n
            if ahead > COUNT_AHEAD_BYTES:
                window.remaining = None
                return window
            continue
        while pos < n:
            if line_no < offset:  # skipping: count newlines only, a whole chunk at a time when possible
                needed = offset - line_no
                here = chunk.count(b"\n", pos)
                if here < needed:
                    line_no += here
                    skipped_partial = not chunk.endswith(b"\n")
                    pos = n
                    break
                for _ in range(needed):
                    pos = chunk.find(b"\n", pos) + 1
                line_no = offset
                skipped_partial = False
                continue
            nl = chunk.find(b"\n", pos)
            end = n if nl < 0 else nl
            if not cut:
                room = keep_bytes - len(current)
                current += chunk[pos : min(end, pos + room)]
                cut = end - pos > room
            if nl < 0:
                pos = n
                break
            line = _decode_line(bytes(current), cut)
            window.cut_lines += cut
            current.clear()
            cut = False
            pos = nl + 1
            line_no += 1
            window.lines.append(line)
            chars += len(line) + 8
            if len(window.lines) >= limit or chars > MAX_OUTPUT_CHARS:
                window.capped = chars > MAX_OUTPUT_CHARS and len(window.lines) < limit
                counting = True
                rest = chunk[pos:]
                extra = rest.count(b"\n")
                pending_tail = bool(rest) and not rest.endswith(b"\n")
                ahead = len(rest)
                break
    if counting:
        window.remaining = extra + pending_tail
        window.total = window.first + len(window.lines) - 1 + window.remaining
        return window
    if line_no >= offset and (current or cut):  # a last line without a newline
        window.lines.append(_decode_line(bytes(current), cut))
        window.cut_lines += cut
        line_no += 1
    if line_no < offset and skipped_partial:
        line_no += 1  # the skipped part ended with a line without a newline
    window.total = line_no - 1
    window.remaining = 0
    return window


def text_window(text: str, offset: int, limit: int) -> Window:
    """The same window over text already in memory (the editor's buffer, a UTF-16 file)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    window = Window(first=offset, total=len(lines))
    chars = 0
    for raw in lines[offset - 1 :]:
        if len(window.lines) >= limit or chars > MAX_OUTPUT_CHARS:
            break
        line = raw.rstrip("\r")
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + LINE_CUT
            window.cut_lines += 1
        window.lines.append(line)
        chars += len(line) + 8
    window.capped = chars > MAX_OUTPUT_CHARS and len(window.lines) < limit
    window.remaining = max(0, len(lines) - (offset - 1) - len(window.lines))
    return window


def image_type(head: bytes) -> str | None:
    for magic, media in _IMAGE_MAGIC:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            break
    return f"{value:.1f} {unit}"


def missing_file_message(path: Path, real: str, cwd: Path) -> str:
    """Why there is no file, with the names in its directory that come close. The directory listed is the real
    one of the path opened (exactly: a name flipped to a link would list somewhere else)."""
    message = f"File does not exist: {path}."
    parent = path.parent
    try:
        held = safefs.Held(os.path.dirname(real))
    except (FileNotFoundError, NotADirectoryError):
        return f"{message} Its directory {parent} does not exist either (cwd is {cwd})."
    except OSError:
        return message
    try:
        names = held.listdir(limit=5000)  # a huge directory: not worth more
    except OSError:
        return message
    finally:
        held.close()
    lowered = {name.lower(): name for name in names}
    close = [lowered[path.name.lower()]] if path.name.lower() in lowered else []
    close += [n for n in difflib.get_close_matches(path.name, names, n=3, cutoff=0.7) if n not in close]
    close += [n for n in names if Path(n).stem == path.stem and n not in close][:2]
    if close:
        return message + " Did you mean: " + ", ".join(str(parent / n) for n in close[:3]) + "?"
    return f"{message} (cwd is {cwd})"


@dataclass
class _Loaded:
    content: str | list[dict[str, Any]]
    snapshot: FileSnapshot
    raw: dict[str, Any]


class ReadTool(Tool[ReadInput]):
    name = "Read"
    input_model = ReadInput
    description = (
        "Read a file by absolute path. Text comes back as numbered lines (`cat -n` style: number, tab, line; "
        f"the prefix is not part of the file). Reads up to {DEFAULT_LIMIT} lines from the start; for long "
        "files pass offset (1-based line) and limit. Lines over 2000 characters are cut. Images (png, jpg, "
        "gif, webp) are returned as images. Binary files and directories are refused (list directories with "
        "Glob or Bash ls). Read a file before editing it. Read several files in parallel when useful."
    )
    search_hint = "view open file contents lines image"
    kind = "read"
    interrupt_behavior = "cancel"
    max_result_chars = Unbounded
    rule_form = RuleForm("path", "read", family=True, others=True, aliases=("LS", "NotebookRead"))
    """`Read(...)` rules speak about every read: Grep's, Glob's, a command's (`cat f`)."""

    def is_read_only(self, data: ReadInput) -> bool:
        return True

    async def validate_input(self, data: ReadInput, ctx: ToolContext) -> str | None:
        if (problem := path_problem(data.file_path)) is not None:
            return problem
        try:
            path = absolute_path(data.file_path)
        except ToolError as error:
            return f"{error}. Did you mean {_under(ctx.cwd, data.file_path)}?"
        if data.pages is not None and path.suffix.lower() != ".pdf":
            return "pages applies to PDF files only; use offset and limit for text files."
        return None

    def permission_paths(self, data: ReadInput, ctx: ToolContext) -> list[tuple[Path, Literal["read", "write"]]]:
        try:
            return [(absolute_path(data.file_path), "read")]
        except ToolError:
            return []

    def backfill_observable_input(self, raw: dict[str, Any]) -> dict[str, Any]:
        return backfill_path(raw, "file_path")

    def locations(self, data: ReadInput) -> list[Location]:
        return path_locations(data.file_path, line=max(1, data.offset or 1))

    def user_facing_title(self, data: ReadInput) -> str:
        if data.offset is None and data.limit is None:
            return f"Read {data.file_path}"
        first = max(1, data.offset or 1)
        last = first + (data.limit or DEFAULT_LIMIT) - 1
        return f"Read {data.file_path} (lines {first}-{last})"

    async def call(self, data: ReadInput, ctx: ToolContext) -> ToolResult:
        path = absolute_path(data.file_path)
        offset, limit = max(1, data.offset or 1), data.limit or DEFAULT_LIMIT
        target = await target_of(path, ctx)
        unsaved = await editor_text(target, ctx)
        if unsaved is not None:
            return self._from_editor(path, unsaved, offset, limit, ctx)
        with anyio.CancelScope(shield=True):  # a non-blocking open: quick, and its fd must not be lost
            fd, st = await anyio.to_thread.run_sync(_open, target, ctx.cwd)
        if stat.S_ISREG(st.st_mode):
            loaded = await _load_file(fd, st, path, offset, limit)
        else:  # a FIFO or a device: read on the event loop, where waiting ends on abort
            try:
                loaded = await _load_stream(fd, st, path, offset, limit)
            finally:
                os.close(fd)
        ctx.read_files[path] = loaded.snapshot
        return ToolResult(loaded.content, raw_output=loaded.raw)

    def _from_editor(self, path: Path, text: str, offset: int, limit: int, ctx: ToolContext) -> ToolResult:
        window = text_window(text, offset, limit)
        # The editor's text has no mtime: "changed since read" compares the text itself (see fileio).
        ctx.read_files[path] = FileSnapshot(mtime_ns=-1, size=len(text), digest=text_digest(text))
        note = "[This is the editor's unsaved version of the file; the file on disk may differ.]"
        raw = {"path": str(path), "lines": len(window.lines), "source": "editor"}
        return ToolResult(_render(window, path, len(text.encode()), offset) + "\n" + note, raw_output=raw)


def _render(window: Window, path: Path, size: int, offset: int) -> str:
    if window.total == 0:
        return f"[The file {path} exists but is empty.]"
    if not window.lines:
        return f"[The file has {window.total} lines; offset {offset} is past its end.]"
    return window.render(path, size)


def _open(target: Target, cwd: Path) -> tuple[int, os.stat_result]:
    """Open the judged real path exactly (no link followed), without blocking (a FIFO's plain open waits for
    a writer) and without becoming a controlling tty."""
    path = target.path
    try:
        fd = safefs.open_exact(target.real, safefs.READ_FLAGS)
    except FileNotFoundError as error:
        raise read_error(path, error, missing=missing_file_message(path, target.real, cwd)) from None
    except OSError as error:
        if error.errno == errno.ENXIO and _is_socket(target.real):
            raise ToolError(f"{path} is a socket; it cannot be read as a file (connect to it with Bash).") from None
        raise read_error(path, error) from None
    try:
        st = os.fstat(fd)
    except OSError as error:
        os.close(fd)
        raise read_error(path, error) from None
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise read_error(path, IsADirectoryError())
    return fd, st


def _is_socket(real: str) -> bool:
    try:
        return stat.S_ISSOCK(safefs.stat_exact(real).st_mode)
    except OSError:
        return False


async def _load_file(fd: int, st: os.stat_result, path: Path, offset: int, limit: int) -> _Loaded:
    """A regular file, read in a worker thread that is abandoned on cancel (a huge file's counting need not
    be waited for). Whoever comes first owns `fd`: the thread (which closes it) or, when the thread never
    started, this coroutine."""
    lock = threading.Lock()
    owner: list[str] = []

    def work() -> _Loaded | None:
        with lock:
            if owner:
                return None
            owner.append("thread")
        return _load(fd, st, path, offset, limit)

    try:
        loaded = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        with lock:
            if not owner:
                owner.append("coroutine")
                os.close(fd)
    assert loaded is not None
    return loaded


def _load(fd: int, st: os.stat_result, path: Path, offset: int, limit: int) -> _Loaded:
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(8192)
        special = _special(
            path, st.st_size, head, lambda: head + fh.read(), sized=st.st_size > 0, offset=offset, limit=limit
        )
        if special is not None:
            return _Loaded(special[0], snapshot_of(st), {"path": str(path), "size": st.st_size} | special[1])
        fh.seek(3 if head.startswith(b"\xef\xbb\xbf") else 0)
        window = read_window(fh, offset, limit)
        text = _render(window, path, st.st_size, offset)
        raw = {"path": str(path), "size": st.st_size, "lines": len(window.lines), "total_lines": window.total}
        return _Loaded(text, snapshot_of(st), raw)


def _special(
    path: Path, size: int, head: bytes, whole: Callable[[], bytes], *, sized: bool, offset: int, limit: int
) -> tuple[str | list[dict[str, Any]], dict[str, Any]] | None:
    """An image block, a UTF-16 text window, or a refusal (PDF, binary) for content starting with `head`;
    None for plain text (read as a window by the caller). `whole()` gives all of it (images, UTF-16);
    `size` is 0 when not known in advance (a stream, a /proc file)."""
    media = image_type(head)
    if media is not None:
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"The image {path} is {_size(size)}, over the {_size(MAX_IMAGE_BYTES)} limit. "
                "Make a smaller copy first (e.g. Bash: `convert in.png -resize 50% /tmp/small.png`)."
            )
        data = whole()
        if len(data) > MAX_IMAGE_BYTES:
            raise ToolError(f"The image {path} is over the {_size(MAX_IMAGE_BYTES)} limit.")
        block = {"type": "image", "source": {"type": "base64", "media_type": media, "data": _b64(data)}}
        return [block], {"media_type": media}
    if head.startswith(b"%PDF") or path.suffix.lower() == ".pdf":
        raise ToolError(
            f"{path} is a PDF; Read does not extract PDF text here. Try Bash: `pdftotext {path} - | head -200`."
        )
    encoding = _UTF16_BOMS.get(head[:2])
    if encoding is not None:
        if size > MAX_DECODE_WHOLE:
            raise ToolError(f"{path} is a UTF-16 file of {_size(size)}; too large to read as text.")
        text = whole()[2:].decode(encoding, errors="replace")
        window = text_window(text, offset, limit)
        return _render(window, path, size, offset), {"lines": len(window.lines)}
    if looks_binary(head):
        what = f" ({_size(size)})" if sized else ""
        raise ToolError(
            f"{path} is a binary file{what}; Read shows text files and images (png, jpg, gif, webp). "
            "Inspect it with Bash, e.g. `file` or `xxd | head`."
        )
    return None


async def _load_stream(fd: int, st: os.stat_result, path: Path, offset: int, limit: int) -> _Loaded:
    """A FIFO or a device, read as `cat` would: until it ends or the window is full, at most
    `MAX_STREAM_BYTES`. A FIFO waits on the event loop (cancellable); other devices read in a thread, in
    case a driver blocks despite O_NONBLOCK. The caller closes `fd`."""
    kind = "FIFO" if stat.S_ISFIFO(st.st_mode) else "device"
    data, ended = b"", False
    with anyio.move_on_after(STREAM_WAIT_S) as waited:
        data, ended = await _collect(fd, offset - 1 + limit, fifo=kind == "FIFO", into=(got := bytearray()))
    if waited.cancelled_caught:
        data = bytes(got)
        if not data:
            raise ToolError(_nothing_came(path, kind))
    raw: dict[str, Any] = {"path": str(path), "size": len(data), "stream": kind}
    if waited.cancelled_caught:
        raw["gave_up_after_s"] = STREAM_WAIT_S
    head = data[:8192]
    special = _special(path, 0, head, lambda: data, sized=False, offset=offset, limit=limit)
    if special is not None:
        if isinstance(special[0], list) and not ended:
            raise ToolError(f"The image from {path} did not end within {_size(MAX_IMAGE_BYTES)}.")
        return _Loaded(special[0], snapshot_of(st), raw | special[1])
    buffer = io.BytesIO(data)
    buffer.seek(3 if head.startswith(b"\xef\xbb\xbf") else 0)
    window = read_window(buffer, offset, limit)
    # What was read past the window is gone (a FIFO) or not known (a device): no "use offset" note.
    window.stream = not ended or bool(window.remaining)
    if window.lines or ended:
        text = _render(window, path, 0, offset)
    else:
        text = (
            f"[The {kind} {path} gave {window.total} lines ({_size(len(data))}) before Read stopped; "
            f"offset {offset} was not reached.]"
        )
    return _Loaded(text, snapshot_of(st), raw | {"lines": len(window.lines), "ended": ended})


def _nothing_came(path: Path, kind: str) -> str:
    if kind == "FIFO":
        return (
            f"Nothing was written to the FIFO {path} within {STREAM_WAIT_S:g} s, so Read gave up (a FIFO "
            "gives data only while a process writes to it). Start the writer first (e.g. in the background "
            f"with Bash), then Read again; or read it with Bash and a timeout: `timeout 5 cat {path}`."
        )
    return (
        f"The device {path} gave no data within {STREAM_WAIT_S:g} s, so Read gave up. Read it with Bash and "
        f"a timeout instead, e.g. `timeout 5 head -c 4096 {path} | xxd | head`."
    )


async def _collect(fd: int, lines_wanted: int, *, fifo: bool, into: bytearray) -> tuple[bytes, bool]:
    """Bytes from a stream until it ends (True) or enough is read (False): `lines_wanted` lines (plain text),
    the whole of an image up to its limit, at most `MAX_STREAM_BYTES`. A binary stream stops at its first
    block (it is refused). What is read so far is in `into` (the caller's, for when its time bound ends this)."""
    buf = into
    newlines = 0
    wait = fifo  # a FIFO without a writer reads as ended: wait until one writes (or comes and goes)
    cap = MAX_STREAM_BYTES
    while len(buf) < cap:
        if wait:
            await _readable(fd)
        try:
            chunk = os.read(fd, CHUNK) if fifo else await anyio.to_thread.run_sync(os.read, fd, CHUNK)
        except BlockingIOError:
            wait = True
            continue
        except OSError as error:
            raise ToolError(f"Reading failed: {error.strerror or error}") from None
        wait = False
        if not chunk:
            return bytes(buf), True
        buf += chunk
        newlines += chunk.count(b"\n")
        head = bytes(buf[:8192])
        if image_type(head) is not None:
            cap = MAX_IMAGE_BYTES + 1
        elif head[:2] in _UTF16_BOMS:
            if newlines >= lines_wanted:  # counts 0x0A bytes: at least the line breaks there are
                return bytes(buf), fifo and _ended_now(fd)
        elif looks_binary(head):
            return bytes(buf), False
        elif newlines >= lines_wanted:
            return bytes(buf), fifo and _ended_now(fd)
        await anyio.lowlevel.checkpoint()
    return bytes(buf), False


async def _readable(fd: int) -> None:
    try:
        await anyio.wait_readable(fd)
    except OSError:  # a device that cannot be polled (epoll says EPERM) is always readable
        await anyio.lowlevel.checkpoint()


def _ended_now(fd: int) -> bool:
    """After the window is full: True when the FIFO has ended already (nothing would follow). Not asked of
    devices: a read on the event loop must never wait."""
    with contextlib.suppress(OSError):
        return os.read(fd, 1) == b""
    return False


def _under(cwd: Path, relative: str) -> str:
    return os.path.normpath(cwd / relative)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
