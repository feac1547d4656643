"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook (nbformat 4).

The notebook is rewritten as Jupyter writes it, in the style found in the file: its indentation
(1 space by default), key order (sorted when the file's keys were sorted), escaping of non-ASCII text,
trailing newline and line endings. Same read-before-write rule as Edit, and the same editor buffers: the
editor's text when it has the notebook, written through it when it takes it (see fileio).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import Field

from bridge.display import Diff, Display
from bridge.permissions.facts import RuleForm
from bridge.tools import fileio
from bridge.tools.base import ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import absolute_path
from bridge.tools.textdiff import changed_spans, diff_display
from bridge.tools.writes_a_file import WritesAFile

CellType = Literal["code", "markdown"]
EditMode = Literal["replace", "insert", "delete"]


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(description="Absolute path of the .ipynb file")
    new_source: str = Field(description="The new source of the cell (ignored for delete)")
    cell_id: str | None = Field(
        default=None, description="The cell's id, or cell-N for the N-th cell (0-based); insert goes after it"
    )
    cell_type: CellType | None = Field(default=None, description="Required for insert; for replace, changes the type")
    edit_mode: EditMode = Field(default="replace", description="replace (default), insert or delete")


@dataclass(frozen=True)
class NotebookPlan:
    target: fileio.Target
    old_text: str
    new_text: str
    encoding: fileio.Encoding
    payload: bytes
    base: fileio.TextFile  # the notebook as planned against (from the editor or the disk)
    summary: str  # for the model
    cell_id: str  # the cell changed, inserted or deleted

    @property
    def path(self) -> Path:
        return self.target.path

    def diff(self) -> Diff:
        old_span, new_span = changed_spans(self.old_text, self.new_text)
        return diff_display(self.path, self.old_text, self.new_text, old_span=old_span, new_span=new_span)


async def plan_notebook_edit(data: NotebookEditInput, ctx: ToolContext) -> NotebookPlan:
    """What the edit would write, or a `ToolError` saying why it cannot. Reads, never writes."""
    target = await fileio.target_of(_notebook_path(data), ctx)
    file = await fileio.load_text(target, ctx)
    return await anyio.to_thread.run_sync(_plan_from, data, ctx, target, file)


def _notebook_path(data: NotebookEditInput) -> Path:
    path = absolute_path(data.notebook_path, field="notebook_path")
    if path.suffix != ".ipynb":
        raise ToolError(f"{path} is not a Jupyter notebook (.ipynb); use Edit for other files.")
    return path


def _plan_from(
    data: NotebookEditInput, ctx: ToolContext, target: fileio.Target, file: fileio.TextFile | None
) -> NotebookPlan:
    path = target.path
    if file is None:
        raise ToolError(f"Notebook does not exist: {path}. Create it with Write first.")
    fileio.require_fresh_read(path, ctx, file)
    try:
        notebook = json.loads(file.text)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); fix it with Write first."
        ) from None
    except (ValueError, RecursionError) as exc:  # JSON Python won't read: an integer of over 4,300 digits, nesting
        raise ToolError(f"{path} can't be read as a notebook ({str(exc)[:200]}); fix it with Write first.") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ToolError(f"{path} is not a Jupyter notebook: it has no `cells` list.")
    version = notebook.get("nbformat", 4)
    if not isinstance(version, int) or isinstance(version, bool) or version < 4:
        raise ToolError(f"{path} is nbformat {version!r}; only nbformat 4 notebooks can be edited.")
    cells: list[dict[str, Any]] = notebook["cells"]
    sort_keys = _keys_sorted(notebook)  # before any change: new keys would make sorted cells look unsorted
    mode = data.edit_mode

    if mode == "insert":
        index = 0 if data.cell_id is None else _cell_index(cells, data.cell_id, allow_end=False) + 1
    elif data.cell_id is None:
        raise ToolError(f"cell_id is required to {mode} a cell (use the cell's id, or cell-N for the N-th cell).")
    else:
        index = _cell_index(cells, data.cell_id, allow_end=mode == "replace")
        if index == len(cells):  # replace one past the end = append, as Claude Code does
            mode = "insert"

    if mode == "insert":
        if data.cell_type is None and data.edit_mode == "insert":
            raise ToolError("cell_type is required when inserting a cell: 'code' or 'markdown'.")
        cell = _new_cell(data.cell_type or "code", data.new_source, notebook, cells)
        cells.insert(index, cell)
        cell_id = str(cell.get("id", f"cell-{index}"))
        summary = f"Inserted {cell['cell_type']} cell {cell_id} at position {index}."
    elif mode == "delete":
        cell_id = _id_of(cells[index], index)
        del cells[index]
        summary = f"Deleted cell {cell_id}."
    else:
        cell = cells[index]
        _replace(cell, data.new_source, data.cell_type)
        cell_id = _id_of(cell, index)
        summary = f"Updated {cell['cell_type']} cell {cell_id}."

    new_text = fileio.to_line_ending(_dump(notebook, file.text, sort_keys=sort_keys), file.line_ending)
    payload = file.encoding.encode(new_text)
    return NotebookPlan(target, file.text, new_text, file.encoding, payload, file, summary, cell_id)


_PLANS: fileio.PlanCache[NotebookPlan] = fileio.PlanCache()


def preview_notebook_edit(data: NotebookEditInput, ctx: ToolContext) -> Diff:
    """The diff (of the notebook's JSON) the edit would make, without writing anything, as `validate_target`
    planned it; else (the notebook was not looked at) the new cell source alone."""
    plan = _PLANS.get(ctx, data)
    if plan is not None:
        return plan.diff()
    return Diff(str(_notebook_path(data)), None, "" if data.edit_mode == "delete" else data.new_source)


_INDEX_FORM = re.compile(r"cell-(\d+)")


def _cell_index(cells: list[dict[str, Any]], cell_id: str, *, allow_end: bool) -> int:
    for i, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return i
    match = _INDEX_FORM.fullmatch(cell_id.strip())
    if match:
        index = int(match.group(1))
        if index < len(cells) or (allow_end and index == len(cells)):
            return index
        raise ToolError(f"Cell {cell_id} does not exist: the notebook has {len(cells)} cells (cell-0 … cell-N-1).")
    known = [str(c["id"]) for c in cells if "id" in c][:20]
    listing = f"Cell ids in this notebook: {', '.join(known)}." if known else "Its cells have no ids."
    raise ToolError(f"Cell {cell_id!r} not found. {listing} The cell-N form (0-based) works too.")


def _id_of(cell: dict[str, Any], index: int) -> str:
    return str(cell.get("id", f"cell-{index}"))


def _source(text: str, like: Any) -> str | list[str]:
    """Jupyter stores source as a list of lines; keep a string when the file used one."""
    return text if isinstance(like, str) else text.splitlines(keepends=True)


def _replace(cell: dict[str, Any], source: str, cell_type: CellType | None) -> None:
    cell["source"] = _source(source, cell.get("source", []))
    if cell_type is not None and cell_type != cell.get("cell_type"):
        cell["cell_type"] = cell_type
        if cell_type == "markdown":
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
    if cell.get("cell_type") == "code":
        # The old outputs describe the old source; Jupyter shows a never-run cell this way.
        cell["execution_count"] = None
        cell["outputs"] = []


def _new_cell(
    cell_type: CellType, source: str, notebook: dict[str, Any], cells: list[dict[str, Any]]
) -> dict[str, Any]:
    strings = sum(isinstance(c.get("source"), str) for c in cells)
    like: Any = "" if cells and strings * 2 > len(cells) else []
    cell: dict[str, Any] = {"cell_type": cell_type}
    if cell_type == "code":
        cell["execution_count"] = None
    wants_id = notebook.get("nbformat", 4) > 4 or notebook.get("nbformat_minor", 0) >= 5
    if wants_id or any("id" in c for c in cells):
        taken = {c.get("id") for c in cells}
        new_id = uuid.uuid4().hex[:8]
        while new_id in taken:
            new_id = uuid.uuid4().hex[:8]
        cell["id"] = new_id
    cell["metadata"] = {}
    if cell_type == "code":
        cell["outputs"] = []
    cell["source"] = _source(source, like)
    return cell  # keys in sorted order, as nbformat writes them


def _dump(notebook: dict[str, Any], original: str, *, sort_keys: bool) -> str:
    indent = _indent_of(original)
    width = len(indent) if isinstance(indent, str) else indent or 0
    ascii_only = original.isascii() and "\\u" in original
    try:
        if _dumped_size_bound(notebook, width, ascii_only=ascii_only) > fileio.MAX_TEXT_BYTES:
            raise ToolError(
                f"Rewritten with its indentation, this notebook would be over {fileio.MAX_TEXT_BYTES // (1024 * 1024)} "
                "MB; nothing was changed."
            )
        text = json.dumps(notebook, indent=indent, ensure_ascii=ascii_only, sort_keys=sort_keys)
    except ValueError as error:  # (a value JSON can't write back)
        raise ToolError(f"This notebook can't be written back as JSON: {str(error)[:200]}") from None
    return text + "\n" if original.endswith("\n") else text


MAX_INDENT = 8
"""The widest indentation a notebook is rewritten with: the file's first line sets it, and a notebook whose first
line was indented 20,000 wide and the rest compact became 600 MB (3 GB of memory) for a one-cell edit, before
the permission question (attack round 15). Wider than this, Jupyter's own 1."""


def _indent_of(original: str) -> int | str | None:
    match = re.match(r"\s*\{\r?\n([ \t]*)\S", original)
    if match is None:
        return None if original.lstrip().startswith("{") and original.strip() else 1
    indent = match.group(1)
    if len(indent) > MAX_INDENT:
        return 1
    return indent if "\t" in indent else len(indent)


def _dumped_size_bound(value: Any, width: int, *, ascii_only: bool) -> int:
    """At least as many characters as `json.dumps(value, indent=width, ensure_ascii=ascii_only)` writes, worked
    out without writing them: a non-empty list or object's own line and its closing line, each value's line with
    its indentation, key and comma, a string's escapes (up to 12 characters for one outside ASCII when ASCII
    only), a number as JSON writes it (round 16: the bound counted one line a container and no escapes, and
    511 MB were made before the question)."""
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        line = width * depth + 3  # its indentation, a line break, a comma
        if isinstance(item, dict):
            total += line + (width * depth + 2 if item else 2)
            for key, inner in item.items():
                total += _string_bound(str(key), ascii_only) + 2
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            total += line + (width * depth + 2 if item else 2)
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, str):
            total += line + _string_bound(item, ascii_only)
        else:
            total += line + len(json.dumps(item))
    return total


def _string_bound(text: str, ascii_only: bool) -> int:
    escaped = sum(1 for char in text if char < " " or char in '"\\')
    wide = sum(1 for char in text if ord(char) > 127) if ascii_only else 0
    return len(text) + 2 + 5 * escaped + 11 * wide


def _keys_sorted(notebook: dict[str, Any]) -> bool:
    dicts = [notebook, *[c for c in notebook["cells"] if isinstance(c, dict)]]
    return all(list(d) == sorted(d) for d in dicts)


class NotebookEditTool(WritesAFile[NotebookEditInput]):
    name = "NotebookEdit"
    input_model = NotebookEditInput
    description = (
        "Replace, insert or delete one cell of a Jupyter notebook (.ipynb). The notebook must have been "
        "read with Read in this session and not changed since. cell_id is the cell's id or cell-N "
        "(0-based index). replace (default) sets the cell's source (a code cell's outputs are cleared); "
        "insert adds a new cell after cell_id, or at the start without one, and needs cell_type; "
        "delete removes the cell."
    )
    search_hint = "jupyter notebook ipynb cell"
    kind = "edit"
    interrupt_behavior = "block"
    max_result_chars = 50_000
    rule_form = RuleForm("path", "write")
    path_field = "notebook_path"

    def checked_path(self, data: NotebookEditInput) -> Path:
        return _notebook_path(data)

    def is_destructive(self, data: NotebookEditInput) -> bool:
        return data.edit_mode == "delete"

    async def validate_target(self, data: NotebookEditInput, ctx: ToolContext) -> str | None:
        return await fileio.validated_plan(lambda: plan_notebook_edit(data, ctx), _PLANS, ctx, data)

    def preview(self, data: NotebookEditInput, ctx: ToolContext) -> list[Display]:
        """The permission dialog's diff."""
        return [preview_notebook_edit(data, ctx)]

    def user_facing_title(self, data: NotebookEditInput) -> str:
        where = f" cell {data.cell_id}" if data.cell_id else ""
        verb = {"replace": "Edit", "insert": "Insert into", "delete": "Delete from"}[data.edit_mode]
        return f"{verb} notebook {data.notebook_path}{where}"

    async def call(self, data: NotebookEditInput, ctx: ToolContext) -> ToolResult:
        plan = await plan_notebook_edit(data, ctx)  # again: the file may have changed while the user decided
        disk = plan.base.disk_snapshot
        written = await fileio.commit_text(
            plan.target, plan.new_text, plan.payload, ctx, disk_snapshot=disk, base=plan.base
        )
        raw_output = {"path": str(plan.path), "cell_id": plan.cell_id, "edit_mode": data.edit_mode}
        raw_output |= fileio.written_meta(written)
        return ToolResult(plan.summary, display=[plan.diff()], raw_output=raw_output)
