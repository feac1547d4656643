"""Large tool results are stored to a file; the model gets a preview and the path."""

from __future__ import annotations

import math
import re
from pathlib import Path

from bridge.tools.storage import PREVIEW_CHARS, bound_result


def test_small_result_is_unchanged(tmp_path: Path) -> None:
    assert bound_result("short", limit=100, data_dir=tmp_path, tool_use_id="toolu_1") == "short"
    assert not (tmp_path / "tool-results").exists()


def test_infinite_limit_never_stores(tmp_path: Path) -> None:
    text = "x" * 1_000_000
    assert bound_result(text, limit=math.inf, data_dir=tmp_path, tool_use_id="toolu_1") is text
    assert not (tmp_path / "tool-results").exists()


def test_large_result_is_saved_in_full_with_a_preview(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(20_000))
    out = bound_result(text, limit=30_000, data_dir=tmp_path, tool_use_id="toolu_01ABC")
    saved = tmp_path / "tool-results" / "toolu_01ABC.txt"
    assert saved.read_text(encoding="utf-8") == text
    preview, note = out.rsplit("\n\n", 1)
    assert text.startswith(preview) and PREVIEW_CHARS // 2 < len(preview) <= PREVIEW_CHARS
    assert text[len(preview)] == "\n"  # cut at a line break
    assert note == (
        f"[Output too large ({len(text)} chars). Full output saved to {saved} — "
        "read it with the Read tool using offset/limit.]"
    )


def test_exactly_at_the_limit_is_kept(tmp_path: Path) -> None:
    text = "y" * 500
    assert bound_result(text, limit=500, data_dir=tmp_path, tool_use_id="t") == text
    assert bound_result(text + "y", limit=500, data_dir=tmp_path, tool_use_id="t") != text + "y"


def test_unsafe_tool_use_id_cannot_escape_the_results_directory(tmp_path: Path) -> None:
    out = bound_result("z" * 50, limit=10, data_dir=tmp_path, tool_use_id="../../etc/passwd")
    match = re.search(r"saved to (\S+) —", out)
    assert match is not None
    path = Path(match.group(1))
    assert path.parent == tmp_path / "tool-results" and path.read_text() == "z" * 50
    assert [p.name for p in (tmp_path / "tool-results").iterdir()] == [path.name]


def test_unwritable_data_dir_still_bounds_the_result(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = bound_result("w" * 5_000, limit=100, data_dir=blocker, tool_use_id="t")
    assert len(out) < 2_200 and "could not be saved" in out
