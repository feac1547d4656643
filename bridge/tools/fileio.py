"""File IO shared by Write, Edit and NotebookEdit: decode with the file's own encoding and line endings,
write back atomically, and enforce the read-before-write rule.

Text is handled as decoded `str` with the file's original line endings intact: edits translate the
model's `\\n` to the file's ending instead of normalizing the whole file, so the bytes outside the edited
region (including mixed endings) stay exactly as they were.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bridge.display import Diff
from bridge.tools.base import FileSnapshot, ToolContext, ToolError
from bridge.tools.paths import absolute_path, looks_binary, read_error

LineEnding = Literal["\n", "\r\n"]

_BOMS: list[tuple[bytes, str]] = [
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
]

# The process umask, read once: new files get 0o666 & ~umask like `open(path, "w")` would give them.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@dataclass(frozen=True)
class Encoding:
    codec: str  # a Python codec without BOM handling: "utf-8", "utf-16-le", "utf-16-be", "latin-1"
    bom: bytes = b""

    @property
    def label(self) -> str:
        return self.codec + (" with BOM" if self.bom else "")

    def encode(self, text: str) -> bytes:
        try:
            return self.bom + text.encode(self.codec)
        except UnicodeEncodeError as exc:
            bad = text[exc.start : exc.end]
            raise ToolError(
                f"The file is {self.label}-encoded and cannot hold {bad!r} (U+{ord(bad[0]):04X}); "
                "use characters the encoding has, or an escape the file format understands"
            ) from None


UTF8 = Encoding("utf-8")


@dataclass(frozen=True)
class TextFile:
    """A decoded text file: `text` keeps the file's own line endings."""

    path: Path
    text: str
    encoding: Encoding
    line_ending: LineEnding
    mode: int
    snapshot: FileSnapshot


def decode(data: bytes) -> tuple[str, Encoding]:
    """Decode by BOM, then as UTF-8, then latin-1 (which never fails). Binary data is refused."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom) :].decode(codec), Encoding(codec, bom)
            except UnicodeDecodeError:
                raise ToolError(f"The file starts with a {codec} byte-order mark but is not valid {codec}") from None
    if looks_binary(data):
        raise ToolError("This is a binary file; it cannot be edited as text")
    try:
        return data.decode("utf-8"), UTF8
    except UnicodeDecodeError:
        return data.decode("latin-1"), Encoding("latin-1")


def detect_line_ending(text: str) -> LineEnding:
    """The majority ending; LF on a tie or when there are no line breaks."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    return "\r\n" if crlf > lf else "\n"


def to_line_ending(text: str, ending: LineEnding) -> str:
    """The model writes `\\n`; a CRLF file gets `\\r\\n`. Text that already carries CR is left as sent."""
    if ending == "\n" or "\r" in text:
        return text
    return text.replace("\n", "\r\n")


def snapshot_of(st: os.stat_result) -> FileSnapshot:
    return FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


def current_snapshot(path: Path) -> FileSnapshot | None:
    """The file as it is now; None when it is gone."""
    try:
        return snapshot_of(os.stat(path))
    except OSError:
        return None


def read_text_file(path: Path) -> TextFile:
    """Read and decode `path`. Errors are `ToolError`s the model can act on."""
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError
            data = fh.read()
    except OSError as exc:
        raise read_error(path, exc) from None
    text, encoding = decode(data)
    return TextFile(
        path=path,
        text=text,
        encoding=encoding,
        line_ending=detect_line_ending(text),
        mode=stat.S_IMODE(st.st_mode),
        snapshot=snapshot_of(st),
    )


def require_fresh_read(path: Path, ctx: ToolContext, current: FileSnapshot) -> None:
    """An existing file may be changed only if this session read it and it has not changed since."""
    seen = ctx.read_files.get(path)
    if seen is None:
        resolved = path.resolve()
        seen = next((snap for p, snap in ctx.read_files.items() if p.resolve() == resolved), None)
    if seen is None:
        raise ToolError(f"File has not been read yet: {path}. Read it with the Read tool first, then retry.")
    if seen != current:
        raise ToolError(
            f"File has been modified since it was read (by the user or another process): {path}. "
            "Read it again with the Read tool, then retry."
        )


def record_write(path: Path, ctx: ToolContext) -> FileSnapshot:
    """After our own write, the session knows the file as written (so consecutive edits work)."""
    snap = snapshot_of(os.stat(path))
    ctx.read_files[path] = snap
    return snap


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to `path` all-or-nothing: a temp file in the same directory, fsync, `os.replace`,
    fsync the directory. A symlink is kept and its target replaced. `mode` None = the existing file's mode,
    or 0o666 & ~umask for a new file. On any error the original is untouched and the temp file removed."""
    target = Path(os.path.realpath(path))
    existing: os.stat_result | None
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if mode is None:
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_UMASK
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except FileNotFoundError:
        raise ToolError(f"Directory does not exist: {target.parent}") from None
    except PermissionError:
        raise ToolError(f"Permission denied writing in {target.parent}") from None
    except OSError as exc:
        raise ToolError(f"Cannot write in {target.parent}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            if existing is not None and (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
                with contextlib.suppress(OSError):  # only root may give a file away; keep what we can
                    os.fchown(fh.fileno(), existing.st_uid, existing.st_gid)
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened or synced
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def line_number_at(text: str, index: int) -> int:
    """1-based line of the character at `index` (counts `\\n`, so CRLF and LF files agree)."""
    return text.count("\n", 0, index) + 1


def numbered_snippet(text: str, start: int, end: int, *, context: int = 4, max_lines: int = 40) -> str:
    """Lines covering text[start:end] plus `context` lines each side, numbered like `cat -n`.
    Linear in the snippet, not the file: it walks outwards from the edit with find/rfind."""
    lo = _line_start(text, start, context=context)
    hi = _line_end(text, end, context=context)
    first = line_number_at(text, lo)
    lines = text[lo:hi].split("\n")
    if len(lines) > 1 and lines[-1] == "" and hi == len(text):
        lines.pop()
    shown = lines[:max_lines]
    out = [f"{first + i:>6}\t{line.rstrip(chr(13))}" for i, line in enumerate(shown)]
    if len(lines) > max_lines:
        out.append(f"     …\t({len(lines) - max_lines} more lines)")
    return "\n".join(out)


FULL_DIFF_CHARS = 1_000_000
"""Beyond this (old + new), the editor gets the changed region only, not two copies of a huge file."""


def diff_display(
    path: Path,
    old: str | None,
    new: str,
    *,
    old_span: tuple[int, int] | None = None,
    new_span: tuple[int, int] | None = None,
) -> Diff:
    """The edit as a diff. Whole texts normally; for huge files the lines around the change
    (`old_span`/`new_span`: the changed character ranges), with the line they start at."""
    full = Diff(str(path), old, new)
    if old is None or old_span is None or new_span is None or len(old) + len(new) <= FULL_DIFF_CHARS:
        return full
    lo = _line_start(old, old_span[0], context=3)
    old_hi = _line_end(old, old_span[1], context=3)
    # The prefix before the change is shared, so the same `lo` starts the region in both texts;
    # the suffix after the change is shared too, so both regions end the same distance from their ends.
    new_hi = len(new) - (len(old) - old_hi)
    if new_hi < new_span[1]:
        new_hi = _line_end(new, new_span[1], context=3)
    return Diff(str(path), old[lo:old_hi], new[lo:new_hi], first_line=line_number_at(old, lo))


def _line_start(text: str, index: int, *, context: int) -> int:
    lo = text.rfind("\n", 0, index) + 1
    for _ in range(context):
        if lo == 0:
            break
        lo = text.rfind("\n", 0, lo - 1) + 1
    return lo


def _line_end(text: str, index: int, *, context: int) -> int:
    hi = text.find("\n", index)
    hi = len(text) if hi < 0 else hi
    for _ in range(context):
        if hi >= len(text):
            break
        nxt = text.find("\n", hi + 1)
        hi = len(text) if nxt < 0 else nxt
    return hi


def changed_spans(old: str, new: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The differing ranges of `old` and `new` after their common prefix and suffix, found by binary
    search over slice comparisons (C-speed, O(n log n)) rather than a per-character Python loop."""
    limit = min(len(old), len(new))
    lo, hi = 0, limit
    while lo < hi:  # longest k with old[:k] == new[:k]
        mid = (lo + hi + 1) // 2
        if old[:mid] == new[:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, limit - prefix
    while lo < hi:  # longest k with the same last k characters, not overlapping the prefix
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid :] == new[len(new) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    suffix = lo
    return (prefix, len(old) - suffix), (prefix, len(new) - suffix)


def backfill_path(raw: dict[str, Any], field: str) -> dict[str, Any]:
    """Observers' copy gets the path with `~` expanded and `..` folded (idempotent; the model's input is
    never changed)."""
    value = raw.get(field)
    if not isinstance(value, str):
        return raw
    expanded = os.path.expanduser(value)
    if not os.path.isabs(expanded):
        return raw
    return {**raw, field: os.path.normpath(expanded)}


def plan_problem(plan: Callable[[], object]) -> str | None:
    """The message for the model when a planned file change cannot work (None when it can): shared by
    the file tools' `validate_input`, so the model hears of it before anyone is asked to allow it."""
    try:
        plan()
    except ToolError as exc:
        return str(exc)
    except OSError as exc:
        return f"Cannot access the file: {exc.strerror or exc}"
    return None


def written_path(raw: str, *, field: str = "file_path") -> list[tuple[Path, Literal["read", "write"]]]:
    """`permission_paths` of a tool that writes the one file named by `raw`."""
    try:
        return [(absolute_path(raw, field=field), "write")]
    except ToolError:
        return []
