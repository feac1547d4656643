"""`todo-demo`: "find all TODO/FIXME comments in this project", reacting to the real tool results.

Grep → Read the top files (several calls in one message) → one Bash call (a permission prompt in the demo)
→ a streamed markdown summary whose numbers come from the Grep output.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field

from bridge.offline.builtins.common import (
    Turn,
    compaction_summary,
    current_turn,
    text_response,
    tool_names,
    working_directory,
)
from bridge.offline.scenario import Json, RecordedRequest

GREP_INPUT: Json = {"pattern": "TODO|FIXME", "output_mode": "content", "-n": True}
BASH_INPUT: Json = {
    "command": "git log -1 --format=%cd 2>/dev/null || date",
    "description": "Show when the project last changed",
}
MAX_READS = 3
TOP_FILES = 10
SUMMARY_DELAY_MS = 15

_HIT = re.compile(r"^(.+?):(\d+):(.*)$")
_MARKER = re.compile(r"\b(TODO|FIXME)\b")


@dataclass
class Hit:
    path: str
    line: int
    text: str


@dataclass
class GrepReport:
    hits: list[Hit] = field(default_factory=list)
    todo: int = 0
    fixme: int = 0
    per_file: Counter[str] = field(default_factory=Counter)

    @property
    def files(self) -> list[str]:
        """Hit files, most markers first (ties in order of first appearance)."""
        order = {h.path: i for i, h in reversed(list(enumerate(self.hits)))}
        return sorted(self.per_file, key=lambda p: (-self.per_file[p], order[p]))


def parse_grep(output: str) -> GrepReport:
    """Count markers in ripgrep `path:line:text` output; other lines (notes, "No matches found") are skipped."""
    report = GrepReport()
    for line in output.splitlines():
        match = _HIT.match(line)
        if not match:
            continue
        path, number, text = match.group(1), int(match.group(2)), match.group(3)
        markers = _MARKER.findall(text) or re.findall(r"TODO|FIXME", text)
        if not markers:
            continue
        report.hits.append(Hit(path, number, text.strip()))
        report.todo += markers.count("TODO")
        report.fixme += markers.count("FIXME")
        report.per_file[path] += len(markers)
    return report


def absolute(path: str, cwd: str | None) -> str:
    if os.path.isabs(path) or cwd is None:
        return path
    return os.path.normpath(os.path.join(cwd, path))


def _summary(report: GrepReport, cwd: str | None, last_change: str) -> str:
    def shown(path: str) -> str:
        if cwd and os.path.isabs(path):
            with_cwd = os.path.relpath(path, cwd)
            return path if with_cwd.startswith("..") else with_cwd
        return path

    total = report.todo + report.fixme
    lines = [
        "## TODO / FIXME summary",
        "",
        f"Found **{total}** markers in **{len(report.per_file)}** "
        f"file{'s' if len(report.per_file) != 1 else ''}: **{report.todo}** TODO and **{report.fixme}** FIXME.",
        "",
        "### By file",
        "",
    ]
    for path in report.files[:TOP_FILES]:
        lines.append(f"- `{shown(path)}`: {report.per_file[path]}")
    if len(report.per_file) > TOP_FILES:
        lines.append(f"- …and {len(report.per_file) - TOP_FILES} more files")
    lines += ["", "### Examples", ""]
    for hit in _examples(report):
        lines.append(f"> `{shown(hit.path)}:{hit.line}` — {hit.text}")
        lines.append("")
    lines.append(last_change)
    return "\n".join(lines).rstrip()


def _examples(report: GrepReport) -> list[Hit]:
    """Up to 3 example lines, preferring one FIXME and different files."""
    chosen: list[Hit] = []
    fixme = next((h for h in report.hits if "FIXME" in h.text), None)
    if fixme:
        chosen.append(fixme)
    for hit in report.hits:
        if len(chosen) == 3:
            break
        if hit not in chosen and all(hit.path != c.path for c in chosen):
            chosen.append(hit)
    for hit in report.hits:
        if len(chosen) == 3:
            break
        if hit not in chosen:
            chosen.append(hit)
    return sorted(chosen, key=report.hits.index)


def respond(request: RecordedRequest, *, delay_ms: int = SUMMARY_DELAY_MS) -> Json:
    body = request.body
    if (summary := compaction_summary(body)) is not None:
        return summary
    turn: Turn = current_turn(body)
    tools = tool_names(body)
    greps = turn.of("Grep")
    if not greps:
        if "Grep" not in tools:
            return text_response("I can't search this project: the Grep tool is not available.")
        return {
            "content": [
                {"type": "text", "text": "I'll search the project for TODO and FIXME comments."},
                {"type": "tool_use", "name": "Grep", "input": dict(GREP_INPUT)},
            ],
            "stop_reason": "tool_use",
        }
    grep = greps[-1]
    if grep.is_error:
        return text_response(f"The search failed, so I can't count the markers:\n\n```\n{grep.result}\n```")
    report = parse_grep(grep.result or "")
    if not report.hits:
        return text_response("I searched the whole project: there are no TODO or FIXME comments.")
    cwd = working_directory(body)
    if not turn.of("Read") and "Read" in tools:
        paths = [absolute(p, cwd) for p in report.files[:MAX_READS]]
        reads: list[Json] = [{"type": "tool_use", "name": "Read", "input": {"file_path": p}} for p in paths]
        plural = "s" if len(paths) > 1 else ""
        intro = f"Found {report.todo + report.fixme} markers. Let me read the file{plural} with the most of them."
        return {"content": [{"type": "text", "text": intro}, *reads], "stop_reason": "tool_use"}
    if not turn.of("Bash") and "Bash" in tools:
        return {
            "content": [
                {"type": "text", "text": "Now let me check when the project last changed."},
                {"type": "tool_use", "name": "Bash", "input": dict(BASH_INPUT)},
            ],
            "stop_reason": "tool_use",
        }
    bash = turn.of("Bash")
    if not bash:
        last_change = ""
    elif bash[-1].is_error or not (bash[-1].result or "").strip():
        last_change = "_I couldn't check when the project last changed (the command was not run)._"
    else:
        last_change = f"Last change: {(bash[-1].result or '').strip().splitlines()[0]}."
    return text_response(_summary(report, cwd, last_change), delay_ms=delay_ms, per_delta=1)
