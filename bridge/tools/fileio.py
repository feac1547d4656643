"""File IO shared by Write, Edit and NotebookEdit: decode with the file's own encoding and line endings,
write back atomically, and enforce the read-before-write rule.

The text a change applies to is the editor's when it has the file (`DocumentSource.read_text`: unsaved
changes included), else the disk's; the change is written through the editor when it takes it
(`DocumentSource.write_text`), else to disk. Text from the editor has no mtime, so "changed since read" then
compares a hash of the text (`FileSnapshot.digest`); disk reads compare mtime and size as before.

Text is handled as decoded `str` with the file's original line endings intact: edits translate the
model's `\\n` to the file's ending instead of normalizing the whole file, so the bytes outside the edited
region (including mixed endings) stay exactly as they were.

Every disk access goes to the file's `Target.real` — the real path the permission step judged — through
`bridge.safefs`: opened following no symlink, written through a temp file renamed in the exactly opened
parent. A name that a command flips to a link after the check is refused, never followed. The editor is
asked about a file only while its name still leads to that real path (checked before and after it answers).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import anyio

from bridge import safefs
from bridge.tools.base import FileSnapshot, ToolContext, ToolError
from bridge.tools.paths import absolute_path, looks_binary, opened_path, path_problem, read_error

log = logging.getLogger(__name__)

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
class Target:
    """A file a tool works on: `path` as the model named it (shown to it, and the key of `read_files`) and
    `real`, where it is opened (the permission step's real path; see `paths.opened_path`)."""

    path: Path
    real: str

    @classmethod
    def of(cls, path: Path, ctx: ToolContext) -> Target:
        return cls(path, opened_path(path, ctx))


@dataclass(frozen=True)
class TextFile:
    """A decoded text file: `text` keeps the file's own line endings. From the editor (`source`), `snapshot`
    is the text's digest and `on_disk` the file as the disk has it (None: not on disk, or not text)."""

    path: Path
    text: str
    encoding: Encoding
    line_ending: LineEnding
    mode: int
    snapshot: FileSnapshot
    source: Literal["disk", "editor"] = "disk"
    on_disk: TextFile | None = None
    real: str = ""  # where it was read (empty: `path` itself)

    @property
    def disk_snapshot(self) -> FileSnapshot | None:
        """The disk file this text was planned against (None: there was none): what a disk write checks."""
        if self.source == "disk":
            return self.snapshot
        return self.on_disk.snapshot if self.on_disk is not None else current_snapshot(self.real or str(self.path))


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


def text_digest(text: str) -> str:
    """What "changed since read" compares for text read from the editor (which has no mtime)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def snapshot_of(st: os.stat_result) -> FileSnapshot:
    return FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


def current_snapshot(real: str) -> FileSnapshot | None:
    """The file at the real path `real` as it is now (reached following no link); None when it is gone. A link
    that took its place is reported as what it is (its own times), so it never matches a file's snapshot."""
    try:
        return snapshot_of(safefs.stat_exact(real))
    except (FileNotFoundError, NotADirectoryError):
        return None


def open_regular(real: str, shown: Path) -> tuple[int, os.stat_result]:
    """Open the real path `real` exactly (no link followed), without blocking (a FIFO's open would wait for
    a writer), and refuse anything but a regular file: the file tools change files, not streams or devices."""
    fd = safefs.open_exact(real, safefs.READ_FLAGS)
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, "Is a directory")
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file (a FIFO, device or socket); it cannot be edited as text.")
    return fd, st


MAX_TEXT_BYTES = 256 * 1024 * 1024
"""The largest file the editing tools read whole (a plan holds its text two or three times)."""


def read_bytes(real: str, shown: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `real` and the stat of what was read. OSError when it cannot be read;
    a file over `MAX_TEXT_BYTES` is refused before it is read."""
    fd, st = open_regular(real, shown)
    with os.fdopen(fd, "rb") as fh:
        if st.st_size > MAX_TEXT_BYTES:
            raise ToolError(f"{shown} is larger than {MAX_TEXT_BYTES // (1024 * 1024)} MB; too large to edit as text.")
        return fh.read(), st


def read_text_file(target: Target) -> TextFile:
    """Read and decode the file. Errors are `ToolError`s the model can act on."""
    try:
        data, st = read_bytes(target.real, target.path)
    except OSError as exc:
        raise read_error(target.path, exc) from None
    text, encoding = decode(data)
    return TextFile(
        path=target.path,
        text=text,
        encoding=encoding,
        line_ending=detect_line_ending(text),
        mode=stat.S_IMODE(st.st_mode),
        snapshot=snapshot_of(st),
        real=target.real,
    )


def editor_file(path: Path, text: str, on_disk: TextFile | None, real: str = "") -> TextFile:
    """The editor's text of `path` as a TextFile; encoding and mode are the disk file's (for a disk write)."""
    return TextFile(
        path=path,
        text=text,
        encoding=on_disk.encoding if on_disk is not None else UTF8,
        line_ending=detect_line_ending(text),
        mode=on_disk.mode if on_disk is not None else 0o666 & ~_UMASK,
        snapshot=FileSnapshot(mtime_ns=-1, size=len(text), digest=text_digest(text)),
        source="editor",
        on_disk=on_disk,
        real=real,
    )


def disk_file_or_none(target: Target) -> TextFile | None:
    """`read_text_file`, None when there is no file (the tool may create it). The real path of a dangling
    symlink is its target's, which does not exist: it is created."""
    try:
        st = safefs.stat_exact(target.real)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise read_error(target.path, exc) from None
    if stat.S_ISLNK(st.st_mode):  # a link where the check saw none
        raise read_error(target.path, safefs.Changed(target.real))
    return read_text_file(target)


def _disk_beside_editor(target: Target) -> TextFile | None:
    try:
        return disk_file_or_none(target)
    except ToolError:  # not text on disk (or unreadable): the editor's text is what counts
        return None


def still_leads_there(target: Target) -> bool:
    """The name still leads to the real path that was judged."""
    try:
        return safefs.resolve(target.path, safefs.ANYWHERE) == target.real
    except OSError:
        return False


class _Unwatched:
    """Where names cannot be watched (no inotify): the checks before and after the editor's step are all."""

    def changed(self) -> bool:
        return False

    def close(self) -> None:
        return None


def watch_names(target: Target) -> safefs.NameWatch | _Unwatched | None:
    """A watch on every name the path goes through (links included), set while the name leads to the judged
    real path — checked again once the watch is set, so nothing changed unseen between the check and the
    watch. None: it does not lead there now. The editor resolves the name itself: this is how the bridge knows
    that what the editor read or wrote was the judged file."""
    trail: list[tuple[str, str]] = []
    try:
        if safefs.resolve(target.path, safefs.ANYWHERE, trail=trail) != target.real:
            return None
        if not safefs.NameWatch.available():
            return _Unwatched()
        watch = safefs.NameWatch(trail)
    except OSError:
        return None
    again: list[tuple[str, str]] = []
    try:
        steady = safefs.resolve(target.path, safefs.ANYWHERE, trail=again) == target.real and again == trail
    except OSError:
        steady = False
    if not steady:
        watch.close()
        return None
    return watch


async def editor_text(target: Target, ctx: ToolContext) -> str | None:
    """The editor's text of the file (unsaved changes included), or None: it does not have it, or — when asking
    means the editor reads the file by its name — the name did not lead to the judged file, or a name on its
    way changed while the editor answered (its answer may be of another file: the disk's is used instead)."""
    documents = ctx.documents
    if not documents.asks_editor or documents.get_text(target.path) is not None:
        return await documents.read_text(target.path)  # what it holds already: nothing is read by name
    watch = await anyio.to_thread.run_sync(watch_names, target)
    if watch is None:
        return None
    try:
        text = await documents.read_text(target.path)
        if text is not None and (watch.changed() or not await anyio.to_thread.run_sync(still_leads_there, target)):
            log.warning("the path of %s changed while the editor read it: its answer is not used", target.path)
            return None
        return text
    finally:
        watch.close()


def unsaved_in_editor(file: TextFile | None) -> bool:
    """The text came from the editor and differs from the disk's: the editor holds unsaved changes, so the change
    must go into its buffer. Otherwise the disk is written (exactly), and the editor reloads the file."""
    if file is None or file.source != "editor":
        return False
    return file.on_disk is None or file.on_disk.text != file.text


async def target_of(path: Path, ctx: ToolContext) -> Target:
    """`Target.of`, resolving off the event loop when no permission step judged the path."""
    if ctx.granted is not None and path in ctx.granted:
        return Target(path, str(ctx.granted[path]))
    return await anyio.to_thread.run_sync(Target.of, path, ctx)


async def load_text(target: Target, ctx: ToolContext) -> TextFile | None:
    """The text a change of the file applies to: the editor's (unsaved changes included) when it has the
    file, else the disk's. None: neither has it."""
    unsaved = await editor_text(target, ctx)
    if unsaved is not None:
        return editor_file(
            target.path, unsaved, await anyio.to_thread.run_sync(_disk_beside_editor, target), target.real
        )
    return await anyio.to_thread.run_sync(disk_file_or_none, target)


def _seen(path: Path, ctx: ToolContext) -> FileSnapshot:
    seen = ctx.read_files.get(path)
    if seen is None:
        resolved = path.resolve()
        seen = next((snap for p, snap in ctx.read_files.items() if p.resolve() == resolved), None)
    if seen is None:
        raise ToolError(f"File has not been read yet: {path}. Read it with the Read tool first, then retry.")
    return seen


def require_fresh_read(path: Path, ctx: ToolContext, current: FileSnapshot | TextFile) -> None:
    """An existing file may be changed only if this session read it and it has not changed since: the same
    text when it was read from the editor, else the same mtime and size on disk. A disk read does not cover
    unsaved changes the editor holds."""
    seen = _seen(path, ctx)
    if isinstance(current, TextFile) and seen.digest is not None:
        fresh = text_digest(current.text) == seen.digest
    elif isinstance(current, TextFile) and current.source == "editor":
        on_disk = current.on_disk
        fresh = on_disk is not None and on_disk.snapshot == seen
        if fresh and on_disk is not None and on_disk.text != current.text:
            raise ToolError(
                f"The editor has unsaved changes to {path} that were not read: Read it again (Read shows the "
                "editor's text), then retry."
            )
    else:
        fresh = (current.snapshot if isinstance(current, TextFile) else current) == seen
    if not fresh:
        raise ToolError(
            f"File has been modified since it was read (by the user or another process): {path}. "
            "Read it again with the Read tool, then retry."
        )


def record_write(target: Target, ctx: ToolContext) -> FileSnapshot:
    """After our own write, the session knows the file as written (so consecutive edits work)."""
    snap = snapshot_of(safefs.stat_exact(target.real))
    ctx.read_files[target.path] = snap
    return snap


EDITOR_WRITE_TIMEOUT_S = 30.0


async def commit_text(
    target: Target,
    text: str,
    payload: bytes,
    ctx: ToolContext,
    *,
    disk_snapshot: FileSnapshot | None,
    base: TextFile | None = None,
) -> Literal["editor", "disk"]:
    """Make `text` the file's content: through the editor when it takes it, else `payload` (the text encoded
    as the file is) to disk, atomically, refusing when the disk changed since `disk_snapshot` (None: the
    file must still not exist). Not cancelled half-way: a write is whole or not at all, and the session's
    snapshot of the file is recorded either way.

    An editor that writes by name (ACP `fs/write_text_file`) is asked only when its buffer of the file holds
    unsaved changes (`base`, the text the change was planned on: `unsaved_in_editor`) — that is what it is for;
    any other write goes to the disk exactly, where no link flipped in can redirect it. It is asked while the
    names on the way are watched, and a change among them while it wrote is reported."""
    path = target.path
    with anyio.CancelScope(shield=True):
        if disk_snapshot is None:
            await anyio.to_thread.run_sync(_make_parents, target)
        written = False
        if not ctx.documents.asks_editor:
            written = await _editor_write(ctx, path, text)
        elif unsaved_in_editor(base):
            watch = await anyio.to_thread.run_sync(watch_names, target)
            if watch is not None:
                try:
                    written = await _editor_write(ctx, path, text)
                    if written and watch.changed():
                        raise ToolError(
                            f"A name on the way to {path} changed while the editor wrote the file "
                            "(something in the workspace is swapping files or links): the editor may "
                            "have written somewhere else. Look at what changed before going on."
                        )
                finally:
                    watch.close()
        if written:
            ctx.read_files[path] = FileSnapshot(mtime_ns=-1, size=len(text), digest=text_digest(text))
        else:
            await anyio.to_thread.run_sync(_disk_commit, target, payload, ctx, disk_snapshot)
    return "editor" if written else "disk"


async def _editor_write(ctx: ToolContext, path: Path, text: str) -> bool:
    with anyio.move_on_after(EDITOR_WRITE_TIMEOUT_S) as waited:
        return await ctx.documents.write_text(path, text)
    if waited.cancelled_caught:
        raise ToolError(
            f"The editor did not confirm writing {path} within {EDITOR_WRITE_TIMEOUT_S:.0f} s; "
            "Read the file again to see whether the change was made."
        )
    return False


def written_meta(written: Literal["editor", "disk"]) -> dict[str, Any]:
    """What a tool's raw output says of where its change went (nothing for the disk, the usual case)."""
    return {"written": "editor"} if written == "editor" else {}


def _make_parents(target: Target) -> None:
    parent = os.path.dirname(target.real)
    try:
        safefs.make_dirs_exact(parent)
    except safefs.Changed as exc:
        raise read_error(target.path, exc) from None
    except OSError as exc:
        raise ToolError(f"Cannot create {target.path.parent}: {exc.strerror or exc}") from None


def _disk_commit(target: Target, payload: bytes, ctx: ToolContext, disk_snapshot: FileSnapshot | None) -> None:
    path = target.path
    current = current_snapshot(target.real)
    if disk_snapshot is None:
        if current is not None:
            raise ToolError(f"{path} was created by someone else meanwhile. Read it, then retry.")
    elif current != disk_snapshot:
        raise ToolError(f"File changed on disk while the change was prepared: {path}. Read it again, then retry.")
    write_file(target, payload, create_only=disk_snapshot is None)
    record_write(target, ctx)


Plan = TypeVar("Plan")


class PlanCache(Generic[Plan]):
    """The plan `validate_target` made, kept for the permission dialog's `preview` of the same call: `preview`
    is synchronous, and the editor's text comes asynchronously. Held while the call's context lives."""

    def __init__(self) -> None:
        self._plans: dict[int, tuple[weakref.ref[ToolContext], object, Plan]] = {}

    def put(self, ctx: ToolContext, data: object, plan: Plan) -> None:
        key = id(ctx)
        ref = weakref.ref(ctx, lambda _ref: self._plans.pop(key, None))
        self._plans[key] = (ref, data, plan)

    def get(self, ctx: ToolContext, data: object) -> Plan | None:
        entry = self._plans.get(id(ctx))
        if entry is None or entry[0]() is not ctx or entry[1] != data:
            return None
        return entry[2]


def write_file(target: Target, data: bytes, *, create_only: bool = False) -> None:
    """Write `data` to the file all-or-nothing (`safefs.write_exact` at its real path: a temp file in the
    exactly opened directory, fsync, rename there). The replaced file's mode and owner are kept; a new file
    gets 0o666 & ~umask. On any error the original is untouched and the temp file removed."""
    try:
        safefs.write_exact(target.real, data, create_only=create_only, new_mode=0o666 & ~_UMASK)
    except FileExistsError:
        raise ToolError(f"{target.path} was created by someone else meanwhile. Read it, then retry.") from None
    except FileNotFoundError:
        raise ToolError(f"Directory does not exist: {target.path.parent}") from None
    except PermissionError:
        raise ToolError(f"Permission denied writing {target.path}") from None
    except safefs.UnsafePath as exc:
        raise read_error(target.path, exc) from None
    except OSError as exc:
        raise ToolError(f"Cannot write {target.path}: {exc.strerror or exc}") from None


def atomic_write(path: Path, data: bytes) -> None:
    """`write_file` for a path the bridge chose itself (its data dir): resolved now, then written exactly."""
    try:
        real = safefs.resolve(path, safefs.ANYWHERE)
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None
    write_file(Target(path, real), data)


def backfill_path(raw: dict[str, Any], field: str) -> dict[str, Any]:
    """Observers' copy gets the path with `~` expanded and `..` folded (idempotent; the model's input is
    never changed). An invalid path is left as sent."""
    value = raw.get(field)
    if not isinstance(value, str) or path_problem(value) is not None:
        return raw
    expanded = os.path.expanduser(value)
    if not os.path.isabs(expanded):
        return raw
    return {**raw, field: os.path.normpath(expanded)}


async def validated_plan(
    plan: Callable[[], Awaitable[Plan]], cache: PlanCache[Plan], ctx: ToolContext, data: object
) -> str | None:
    """`validate_target` of a file change: the problem for the model, or None after keeping the plan for the
    permission dialog. `plan()` is awaitable (it may ask the editor for its text)."""
    try:
        made = await plan()
    except ToolError as exc:
        return str(exc)
    except OSError as exc:
        return f"Cannot access the file: {exc.strerror or exc}"
    cache.put(ctx, data, made)
    return None


def written_path(raw: str, *, field: str = "file_path") -> list[tuple[Path, Literal["read", "write"]]]:
    """`permission_paths` of a tool that writes the one file named by `raw`."""
    try:
        return [(absolute_path(raw, field=field), "write")]
    except ToolError:
        return []
