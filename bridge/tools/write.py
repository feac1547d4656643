"""Write: create a file, or replace one the session has read (keeping its encoding and line endings).

When the editor has the file, the old text is the editor's (unsaved changes included) and the new one goes
through the editor when it takes it (see fileio). Nothing the call names is read before the permission step
allowed it (or before its question, when reading it needs no permission): see `validate_target`."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from bridge import safefs
from bridge.display import Diff, Display
from bridge.permissions.facts import RuleForm
from bridge.tools import fileio
from bridge.tools.base import FileSnapshot, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import absolute_path, read_error
from bridge.tools.textdiff import changed_spans, diff_display
from bridge.tools.writes_a_file import WritesAFile


class WriteInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file to write")
    content: str = Field(description="The complete new content of the file")


@dataclass(frozen=True)
class WritePlan:
    target: fileio.Target
    old_text: str | None  # None: a new file (or a binary one being replaced)
    new_text: str
    encoding: fileio.Encoding
    payload: bytes
    snapshot: FileSnapshot | None  # the disk file as planned against; None: it does not exist on disk yet
    exists: bool = False  # on disk or in the editor: replaced, not created
    base: fileio.TextFile | None = None  # the editor's text it was planned on, when the editor had the file

    @property
    def path(self) -> Path:
        return self.target.path

    def diff(self) -> Diff:
        if self.old_text is None:
            return diff_display(self.path, None, self.new_text)
        old_span, new_span = changed_spans(self.old_text, self.new_text)
        return diff_display(self.path, self.old_text, self.new_text, old_span=old_span, new_span=new_span)


@dataclass(frozen=True)
class _OnDisk:
    """What the disk has at the path: nothing (`snapshot` None), a text file, or bytes that are not text."""

    snapshot: FileSnapshot | None
    file: fileio.TextFile | None = None


def _on_disk(target: fileio.Target) -> _OnDisk:
    path = target.path
    try:
        st = safefs.stat_exact(target.real)
    except (FileNotFoundError, NotADirectoryError):
        _check_parent(target)
        return _OnDisk(None)
    except OSError as exc:
        raise read_error(path, exc) from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path} is a directory; give the path of a file.")
    if stat.S_ISLNK(st.st_mode):  # a link where the permission check saw none
        raise read_error(path, safefs.Changed(target.real))
    try:
        raw, st = fileio.read_bytes(target.real, path)
    except OSError as exc:
        raise read_error(path, exc) from None
    snapshot = fileio.snapshot_of(st)
    try:
        text, encoding = fileio.decode(raw)
    except ToolError:  # a binary file: nothing to keep, nothing to show
        return _OnDisk(snapshot)
    return _OnDisk(
        snapshot,
        fileio.TextFile(
            path, text, encoding, fileio.detect_line_ending(text), stat.S_IMODE(st.st_mode), snapshot, real=target.real
        ),
    )


async def plan_write(data: WriteInput, ctx: ToolContext) -> WritePlan:
    """What Write would put in the file, or a `ToolError` saying why it cannot. Reads, never writes."""
    target = await fileio.target_of(absolute_path(data.file_path), ctx)
    unsaved = await fileio.editor_text(target, ctx)
    return _plan_from(data, ctx, target, unsaved, await anyio.to_thread.run_sync(_on_disk, target))


def _plan_from(
    data: WriteInput, ctx: ToolContext, target: fileio.Target, unsaved: str | None, disk: _OnDisk
) -> WritePlan:
    path = target.path
    if unsaved is not None:
        file = fileio.editor_file(path, unsaved, disk.file, target.real)
        fileio.require_fresh_read(path, ctx, file)
        new = fileio.to_line_ending(data.content, file.line_ending) if unsaved else data.content
        return WritePlan(
            target, unsaved, new, file.encoding, file.encoding.encode(new), disk.snapshot, exists=True, base=file
        )
    if disk.snapshot is None:
        return WritePlan(target, None, data.content, fileio.UTF8, fileio.UTF8.encode(data.content), None)
    if disk.file is None:  # replacing a binary file with text
        fileio.require_fresh_read(path, ctx, disk.snapshot)
        return WritePlan(
            target, None, data.content, fileio.UTF8, fileio.UTF8.encode(data.content), disk.snapshot, exists=True
        )
    fileio.require_fresh_read(path, ctx, disk.file)
    old, encoding = disk.file.text, disk.file.encoding
    new = fileio.to_line_ending(data.content, fileio.detect_line_ending(old)) if old else data.content
    return WritePlan(target, old, new, encoding, encoding.encode(new), disk.snapshot, exists=True)


_PLANS: fileio.PlanCache[WritePlan] = fileio.PlanCache()


def preview_write(data: WriteInput, ctx: ToolContext) -> Diff:
    """The diff the write would make (for the permission dialog), without writing anything: against the file
    as `validate_target` found it, else (the file was not looked at) the new content alone."""
    plan = _PLANS.get(ctx, data)
    if plan is not None:
        return plan.diff()
    return Diff(str(absolute_path(data.file_path)), None, data.content, unread=True)


def _check_parent(target: fileio.Target) -> None:
    """Why the file cannot be created: a file where a directory of its real path should be."""
    for parent in Path(target.real).parents:
        try:
            st = safefs.stat_exact(parent)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise read_error(target.path, exc) from None
        if not stat.S_ISDIR(st.st_mode):
            raise ToolError(f"Cannot create {target.path}: {parent} is a file, not a directory.")
        return


class WriteTool(WritesAFile[WriteInput]):
    name = "Write"
    input_model = WriteInput
    description = (
        "Write a file: create it (missing parent directories too) or replace all of its content. "
        "An existing file must have been read with Read in this session and not changed since; "
        "its encoding and line endings are kept. Prefer Edit for changing part of an existing file."
    )
    search_hint = "create a new file or overwrite one"
    kind = "edit"
    interrupt_behavior = "block"
    max_result_chars = 50_000
    rule_form = RuleForm("path", "write", others=True)
    """`Write(...)` rules speak about this tool's writes and a command's (`echo > f`), not the other path tools'."""

    def is_destructive(self, data: WriteInput) -> bool:
        """Overwriting loses the old content; creating a file does not."""
        try:
            return absolute_path(data.file_path).exists()
        except ToolError:
            return False

    async def validate_target(self, data: WriteInput, ctx: ToolContext) -> str | None:
        return await fileio.validated_plan(lambda: plan_write(data, ctx), _PLANS, ctx, data)

    def preview(self, data: WriteInput, ctx: ToolContext) -> list[Display]:
        """The permission dialog's diff."""
        return [preview_write(data, ctx)]

    def edited_input(self, data: WriteInput, text: str) -> tuple[str, dict[str, Any]] | None:
        return "Write", {"file_path": data.file_path, "content": text}

    async def call(self, data: WriteInput, ctx: ToolContext) -> ToolResult:
        plan = await plan_write(data, ctx)  # again: the file may have changed while the user decided
        written = await fileio.commit_text(
            plan.target, plan.new_text, plan.payload, ctx, disk_snapshot=plan.snapshot, base=plan.base
        )
        lines = plan.new_text.count("\n") + (0 if plan.new_text.endswith("\n") or not plan.new_text else 1)
        raw_output = {"path": str(plan.path), "created": not plan.exists, "lines": lines} | fileio.written_meta(written)
        if not plan.exists:
            text = f"File created successfully at: {plan.path} ({lines} lines)"
        else:
            text = f"The file {plan.path} has been overwritten ({lines} lines)."
        return ToolResult(text, display=[plan.diff()], raw_output=raw_output)
