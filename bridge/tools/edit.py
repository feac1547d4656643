"""Edit: replace an exact string in a file the session has read.

All work is plain `str.find`/`count`/`replace` on the decoded text, so a 10 MB file costs a few linear
passes. The plan (what the edit would write) is made by `validate_target` (and kept for the permission
dialog's preview) and again by `call`, because the file may change while the user decides. The text edited
is the editor's when it has the file open (unsaved changes included), and the result is written through the
editor when it takes it (see fileio). Nothing the call names is read before the permission step allowed it,
or before its question when reading it needs no permission (see `Tool.validate_target`).
"""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from pydantic import Field

from bridge import safefs
from bridge.display import Diff, Display
from bridge.permissions.facts import RuleForm
from bridge.tools import fileio
from bridge.tools.base import ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import absolute_path
from bridge.tools.textdiff import diff_display, line_number_at, numbered_snippet
from bridge.tools.writes_a_file import WritesAFile

MAX_EDIT_BYTES = fileio.MAX_TEXT_BYTES


class EditInput(ToolInput):
    file_path: str = Field(description="Absolute path of the file to modify")
    old_string: str = Field(description="The exact text to replace")
    new_string: str = Field(description="The text to replace it with (must differ from old_string)")
    replace_all: bool = Field(default=False, description="Replace every occurrence (default false)")


@dataclass(frozen=True)
class EditPlan:
    target: fileio.Target
    old_text: str | None  # None: the edit creates the file
    new_text: str
    encoding: fileio.Encoding
    payload: bytes  # new_text encoded as the file is
    replacements: int
    old_span: tuple[int, int]  # changed range in old_text (first match start .. last match end)
    new_span: tuple[int, int]
    base: fileio.TextFile | None  # the file as planned against (from the editor or the disk); None for a new file

    @property
    def path(self) -> Path:
        return self.target.path

    def diff(self) -> Diff:
        return diff_display(self.path, self.old_text, self.new_text, old_span=self.old_span, new_span=self.new_span)


async def plan_edit(data: EditInput, ctx: ToolContext) -> EditPlan:
    """What the edit would write, or a `ToolError` saying why it cannot. Reads, never writes."""
    target = await fileio.target_of(_edited_path(data), ctx)
    file = await fileio.load_text(target, ctx)
    return await anyio.to_thread.run_sync(_plan_from, data, ctx, target, file)


def _edited_path(data: EditInput) -> Path:
    """The input's own problems (nothing on disk is looked at)."""
    path = absolute_path(data.file_path)
    if data.old_string == data.new_string:
        raise ToolError("No changes to make: old_string and new_string are exactly the same.")
    if path.suffix == ".ipynb":
        raise ToolError("This is a Jupyter notebook; use the NotebookEdit tool to change its cells.")
    return path


def _plan_from(data: EditInput, ctx: ToolContext, target: fileio.Target, file: fileio.TextFile | None) -> EditPlan:
    path = target.path
    if file is None:
        if data.old_string == "":
            new = data.new_string
            return EditPlan(target, None, new, fileio.UTF8, fileio.UTF8.encode(new), 1, (0, 0), (0, len(new)), None)
        raise ToolError(
            f"File does not exist: {path} (cwd is {ctx.cwd}). "
            "To create a file, use Write, or Edit with an empty old_string."
        )
    if len(file.text) > MAX_EDIT_BYTES:
        raise ToolError(f"{path} is larger than {MAX_EDIT_BYTES // (1024 * 1024)} MB; too large to edit as text.")
    fileio.require_fresh_read(path, ctx, file)
    text = file.text

    if data.old_string == "":
        if text.strip():
            raise ToolError(
                "old_string is empty but the file has content; give the exact text to replace "
                "(an empty old_string only fills an empty file)."
            )
        new = fileio.to_line_ending(data.new_string, file.line_ending)
        enc = file.encoding
        return EditPlan(target, text, new, enc, enc.encode(new), 1, (0, len(text)), (0, len(new)), file)

    needle, replacement, count = _match(text, data.old_string, data.new_string, file.line_ending)
    if count == 0:
        raise ToolError(_not_found_message(text, data.old_string, path))
    if count > 1 and not data.replace_all:
        raise ToolError(
            f"Found {count} matches of old_string in {path} (at lines {_match_lines(text, needle)}), "
            "but replace_all is false. Set replace_all to true to change every one, or add surrounding "
            "lines to old_string so that it matches exactly one place."
        )
    # Deleting a whole line: take its line break too, so no blank line is left behind (as Claude Code does).
    ending = file.line_ending
    if replacement == "" and not needle.endswith("\n") and text.count(needle + ending) == count:
        needle += ending

    # The result's size, before it is made: a short old_string replaced everywhere by a long new_string turned a
    # 200 KB file into 2 GB (10 GB of memory) before anyone was asked (attack round 14).
    grown = len(text) + (count if data.replace_all else 1) * (len(replacement) - len(needle))
    if grown > MAX_EDIT_BYTES:
        raise ToolError(
            f"This edit would make {path} {grown // (1024 * 1024)} MB of text, more than the "
            f"{MAX_EDIT_BYTES // (1024 * 1024)} MB a file may be edited to; nothing was changed."
        )
    first = text.find(needle)
    if data.replace_all:
        new = text.replace(needle, replacement)
        last = text.rfind(needle)
    else:
        new = text[:first] + replacement + text[first + len(needle) :]
        last = first
    count = count if data.replace_all else 1
    old_span = (first, last + len(needle))
    new_span = (first, last + (count - 1) * (len(replacement) - len(needle)) + len(replacement))
    payload = file.encoding.encode(new)
    return EditPlan(target, text, new, file.encoding, payload, count, old_span, new_span, file)


_PLANS: fileio.PlanCache[EditPlan] = fileio.PlanCache()


def preview_edit(data: EditInput, ctx: ToolContext) -> Diff:
    """The diff the edit would make (for the permission dialog), without writing anything: the whole file's, as
    `validate_target` planned it, else (the file was not looked at) old_string and new_string alone."""
    plan = _PLANS.get(ctx, data)
    if plan is not None:
        return plan.diff()
    return Diff(str(absolute_path(data.file_path)), data.old_string or None, data.new_string, unread=True)


def _match(text: str, old: str, new: str, ending: str) -> tuple[str, str, int]:
    """The model writes `\\n`: try the file's line ending first, then the strings as sent (a mixed file),
    then the other ending. Returns the variant that matched and its count (0 when none did)."""
    variants = [(fileio.to_line_ending(old, "\r\n"), fileio.to_line_ending(new, "\r\n")), (old, new)]
    if ending == "\n":
        variants.reverse()
    for needle, replacement in variants:
        count = text.count(needle)
        if count:
            return needle, replacement, count
    return old, new, 0


def _match_lines(text: str, needle: str, shown: int = 5) -> str:
    lines: list[str] = []
    pos, line, counted = text.find(needle), 1, 0
    while pos >= 0 and len(lines) < shown:
        line += text.count("\n", counted, pos)
        counted = pos
        lines.append(str(line))
        pos = text.find(needle, pos + len(needle))
    more = text.count(needle) - len(lines)
    return ", ".join(lines) + (f" and {more} more" if more > 0 else "")


_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})
_BLANKS = re.compile(r"[ \t\u00a0\r]+")
_AROUND_NL = re.compile(r" ?\n ?")


def _normalize(text: str) -> str:
    """Quotes straightened, runs of blanks collapsed, indentation and trailing blanks dropped.
    Line breaks are kept, so a line number in the result is a line number in the original."""
    return _AROUND_NL.sub("\n", _BLANKS.sub(" ", text.translate(_QUOTES)))


def _not_found_message(text: str, old: str, path: Path) -> str:
    base = f"old_string was not found in {path}."
    wanted = _normalize(old).strip("\n ")
    if not wanted:
        return base + " It contains only whitespace; give the exact text to replace."
    normalized = _normalize(text)
    at = normalized.find(wanted)
    if at < 0:
        return base + " Read the file again and copy old_string exactly, including indentation."
    first = line_number_at(normalized, at)
    span = wanted.count("\n") + 1
    start = _offset_of_line(text, first)
    end = start
    for _ in range(span):
        nxt = text.find("\n", end)
        end = len(text) if nxt < 0 else nxt + 1
    excerpt = numbered_snippet(text, start, max(start, end - 1), context=0, max_lines=30)
    return (
        f"{base} A near match that differs only in whitespace or quote characters is at line {first}:\n"
        f"{excerpt}\nCopy old_string from the file exactly as it is (without the line-number prefix)."
    )


def _offset_of_line(text: str, line: int) -> int:
    pos = 0
    for _ in range(line - 1):
        pos = text.find("\n", pos) + 1
    return pos


class EditTool(WritesAFile[EditInput]):
    name = "Edit"
    input_model = EditInput
    description = (
        "Replace an exact string in a file. The file must have been read with Read in this session and "
        "not changed since. old_string must match the file exactly (indentation included, no line-number "
        "prefixes) and occur exactly once, unless replace_all is true; include enough surrounding lines to "
        "make it unique. Line endings and encoding of the file are kept. An empty old_string creates a new "
        "file (or fills an empty one). Use NotebookEdit for .ipynb files."
    )
    search_hint = "modify replace text in an existing file"
    kind = "edit"
    interrupt_behavior = "block"
    max_result_chars = 50_000
    rule_form = RuleForm("path", "write", family=True, aliases=("MultiEdit",))
    """`Edit(...)` rules speak about every path tool's writes (Write, NotebookEdit) and, with Write's, about a
    command's (`echo > f`)."""

    def checked_path(self, data: EditInput) -> Path:
        return _edited_path(data)

    async def validate_target(self, data: EditInput, ctx: ToolContext) -> str | None:
        return await fileio.validated_plan(lambda: plan_edit(data, ctx), _PLANS, ctx, data)

    def preview(self, data: EditInput, ctx: ToolContext) -> list[Display]:
        """The permission dialog's diff."""
        return [preview_edit(data, ctx)]

    def stored_display(self, data: EditInput, readable: Callable[[Path], bool]) -> list[Display]:
        """The replaced text and its replacement (at the line the replacement is found now, if it is and the file
        is `readable`: a forged transcript must not make the bridge read a file outside the workspace)."""
        try:
            path = absolute_path(data.file_path)
        except ToolError:
            return []
        if not data.old_string:
            return [Diff(str(path), None, data.new_string)]
        first_line = _first_line_of(path, data.new_string) if readable(path) else None
        return [Diff(str(path), data.old_string, data.new_string, first_line=first_line)]

    def edited_input(self, data: EditInput, text: str) -> tuple[str, dict[str, Any]] | None:
        """The user edited the whole proposed file: it is written as a Write of that text."""
        return "Write", {"file_path": data.file_path, "content": text}

    async def call(self, data: EditInput, ctx: ToolContext) -> ToolResult:
        plan = await plan_edit(data, ctx)  # again: the file may have changed while the user decided
        disk = plan.base.disk_snapshot if plan.base is not None else None
        written = await fileio.commit_text(
            plan.target, plan.new_text, plan.payload, ctx, disk_snapshot=disk, base=plan.base
        )
        display: list[Display] = [plan.diff()]
        raw_output = {"path": str(plan.path), "replacements": plan.replacements} | fileio.written_meta(written)
        if plan.old_text is None:
            return ToolResult(f"File created successfully at: {plan.path}", display=display, raw_output=raw_output)
        what = f"All {plan.replacements} occurrences were replaced. " if data.replace_all else ""
        snippet = numbered_snippet(plan.new_text, plan.new_span[0], plan.new_span[1])
        text = (
            f"The file {plan.path} has been updated. {what}"
            f"Here's the result of running `cat -n` on a snippet of the edited file:\n{snippet}"
        )
        return ToolResult(text, display=display, raw_output=raw_output)


def _first_line_of(path: Path, needle: str, cap: int = 4 * 1024 * 1024) -> int | None:
    """Best effort for a stored call's replay: the line of the first match in a modest regular file (opened
    without blocking and following links only to where they lead now: nothing is decided on it)."""
    if not needle:
        return None
    try:
        opened = safefs.open_beneath(path, safefs.ANYWHERE, safefs.READ_FLAGS)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(opened.stat.st_mode) or opened.stat.st_size > cap:
            return None
        text = safefs.read_all(opened.fd, cap, opened.real).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        opened.close()
    at = text.find(needle.split("\n", 1)[0])
    return line_number_at(text, at) if at >= 0 else None
