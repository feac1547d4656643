"""Write: create a file, or replace one the session has read (keeping its encoding and line endings)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field

from bridge.display import Diff, Display
from bridge.tools.base import FileSnapshot, Location, Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.fileio import (
    UTF8,
    Encoding,
    atomic_write,
    backfill_path,
    changed_spans,
    current_snapshot,
    decode,
    detect_line_ending,
    diff_display,
    plan_problem,
    record_write,
    require_fresh_read,
    snapshot_of,
    to_line_ending,
    written_path,
)
from bridge.tools.paths import absolute_path


class WriteInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file to write")
    content: str = Field(description="The complete new content of the file")


@dataclass(frozen=True)
class WritePlan:
    path: Path
    old_text: str | None  # None: a new file (or a binary one being replaced)
    new_text: str
    encoding: Encoding
    payload: bytes
    snapshot: FileSnapshot | None  # None: the file does not exist yet

    def diff(self) -> Diff:
        if self.old_text is None:
            return diff_display(self.path, None, self.new_text)
        old_span, new_span = changed_spans(self.old_text, self.new_text)
        return diff_display(self.path, self.old_text, self.new_text, old_span=old_span, new_span=new_span)


def plan_write(data: WriteInput, ctx: ToolContext) -> WritePlan:
    """What Write would put on disk, or a `ToolError` saying why it cannot. Reads, never writes."""
    path = absolute_path(data.file_path)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        _check_parent(path)
        return WritePlan(path, None, data.content, UTF8, UTF8.encode(data.content), None)
    except OSError as exc:
        raise ToolError(f"Cannot access {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path} is a directory; give the path of a file.")
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            raw = fh.read()
    except OSError as exc:
        raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None
    snapshot = snapshot_of(st)
    require_fresh_read(path, ctx, snapshot)
    try:
        old, encoding = decode(raw)
    except ToolError:  # replacing a binary file with text: nothing to keep, nothing to show
        return WritePlan(path, None, data.content, UTF8, UTF8.encode(data.content), snapshot)
    new = to_line_ending(data.content, detect_line_ending(old)) if old else data.content
    return WritePlan(path, old, new, encoding, encoding.encode(new), snapshot)


def preview_write(data: WriteInput, ctx: ToolContext) -> Diff:
    """The diff the write would make (for the permission dialog), without writing anything."""
    return plan_write(data, ctx).diff()


def _check_parent(path: Path) -> None:
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ToolError(f"Cannot create {path}: {parent} is a file, not a directory.")
            return


class WriteTool(Tool[WriteInput]):
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

    def is_destructive(self, data: WriteInput) -> bool:
        """Overwriting loses the old content; creating a file does not."""
        try:
            return absolute_path(data.file_path).exists()
        except ToolError:
            return False

    async def validate_input(self, data: WriteInput, ctx: ToolContext) -> str | None:
        return await anyio.to_thread.run_sync(plan_problem, lambda: plan_write(data, ctx))

    def preview(self, data: WriteInput, ctx: ToolContext) -> list[Display]:
        """The permission dialog's diff."""
        return [preview_write(data, ctx)]

    def permission_paths(self, data: WriteInput, ctx: ToolContext) -> list[tuple[Path, Literal["read", "write"]]]:
        return written_path(data.file_path, field="file_path")

    def backfill_observable_input(self, raw: dict[str, Any]) -> dict[str, Any]:
        return backfill_path(raw, "file_path")

    def locations(self, data: WriteInput) -> list[Location]:
        try:
            return [Location(str(absolute_path(data.file_path)))]
        except ToolError:
            return []

    def user_facing_title(self, data: WriteInput) -> str:
        return f"Write {data.file_path}"

    async def call(self, data: WriteInput, ctx: ToolContext) -> ToolResult:
        # File IO runs off the event loop, and is not abandoned on cancel: a write is whole or not at all,
        # and the session's snapshot of the file is recorded either way.
        return await anyio.to_thread.run_sync(self._apply, data, ctx)

    def _apply(self, data: WriteInput, ctx: ToolContext) -> ToolResult:
        plan = plan_write(data, ctx)
        if plan.snapshot is None:
            try:
                plan.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ToolError(f"Cannot create {plan.path.parent}: {exc.strerror or exc}") from None
            if plan.path.exists():
                raise ToolError(f"{plan.path} was created by someone else meanwhile. Read it, then retry.")
        elif current_snapshot(plan.path) != plan.snapshot:
            raise ToolError(f"File changed on disk while the write was prepared: {plan.path}. Read it again.")
        atomic_write(plan.path, plan.payload)
        record_write(plan.path, ctx)
        lines = plan.new_text.count("\n") + (0 if plan.new_text.endswith("\n") or not plan.new_text else 1)
        raw_output = {"path": str(plan.path), "created": plan.snapshot is None, "lines": lines}
        if plan.snapshot is None:
            text = f"File created successfully at: {plan.path} ({lines} lines)"
        else:
            text = f"The file {plan.path} has been overwritten ({lines} lines)."
        return ToolResult(text, display=[plan.diff()], raw_output=raw_output)
