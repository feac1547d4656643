"""What a text change looks like to the model and the editor: line numbers, a numbered snippet around it (as
`cat -n`), the changed ranges of two texts, and the change as a diff (the region around it for huge files)."""

from __future__ import annotations

from pathlib import Path

from bridge.display import Diff


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
