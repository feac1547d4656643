"""The columns `run`'s terminal output takes, as a terminal counts them: a tab goes to the next tab stop (it was one
column, so a live line with a tab near the margin wrapped and each redraw left a row behind), combining marks and
format characters take none, and East Asian Ambiguous characters (the bridge's own ●, · and …) take two in a
terminal set up for Chinese, Japanese or Korean."""

from __future__ import annotations

import itertools

import pyte
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge.cli import screen
from bridge.cli.screen import ambiguous_width, cells, clip, wrap

# One of each kind with widths wcwidth (pyte's) and unicodedata agree on, and none pyte draws unlike a terminal (it
# drops what follows a zero-width joiner or a variation selector: those are checked by `cells` alone below).
UNITS = ["a", " ", "\t", "界", "ｶ", "e\u0301", "x"]
WHOLE = [unit for unit in UNITS if unit not in ("e\u0301", "\t")]  # (pyte wraps before a mark at the margin; tabs
# are expanded before `wrap`)


def terminal(width: int, text: str) -> pyte.Screen:
    shown = pyte.Screen(width, 8)
    pyte.Stream(shown).feed(text)
    return shown


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(screen, "_AMBIGUOUS", 1)  # as pyte counts them (wcwidth)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(UNITS), max_size=60).map("".join), st.integers(4, 40))
def test_a_clipped_line_stays_on_its_row_and_cells_is_where_the_cursor_ends(text: str, width: int) -> None:
    screen._AMBIGUOUS = 1
    if cells(text) < width:  # (at the width the cursor waits at the margin: no column to compare)
        assert terminal(width, text).cursor.x == cells(text)
    cut = clip(text, width)
    assert cells(cut) <= width
    if cells(cut) < width:  # (pyte, unlike terminals, wraps before a combining mark at the margin)
        assert terminal(width, cut).cursor.y == 0, repr(cut)
    if cut != text:
        assert cut.endswith("…") and text.startswith(cut[:-1])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(WHOLE), max_size=80).map("".join), st.integers(4, 30))
def test_wrapped_rows_each_fit_a_row(text: str, width: int) -> None:
    screen._AMBIGUOUS = 1
    rows = wrap(text, width)
    assert "".join(rows) == text
    for row in rows:
        assert terminal(width, row).cursor.y == 0, (row, rows)
    for row, after in itertools.pairwise(rows):
        if cells(after[0]) == 1:  # (pyte draws a wide character over the margin; terminals wrap it: cells > 1 below)
            assert terminal(width, row + after[0]).cursor.y == 1, (row, rows)  # full: what came next did not fit
        else:
            assert cells(row) + 2 > width


def test_a_tab_near_the_margin_is_counted_to_its_stop(narrow: None) -> None:
    assert cells("ab\tc") == 9
    assert clip("status\twith a tab", 10) == "status\tw…"  # 6, the tab to 8, w, …
    assert clip("status:\twith a tab", 9) == "status:\t…"
    for width in range(4, 20):
        assert terminal(width, clip("a\tb\tc\td", width)).cursor.y == 0
    line = "1234567\tend"  # 11 columns as shown, 11 characters
    assert terminal(10, clip(line, 10)).cursor.y == 0


def test_ambiguous_characters_take_two_columns_in_a_cjk_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cells("👍\ufe0f a\u200db e\u0301") == 7  # format characters and marks take no column
    assert ambiguous_width({"LANG": "zh_CN.UTF-8"}) == 2
    assert ambiguous_width({"LANG": "en_US.UTF-8", "LC_CTYPE": "ja_JP.UTF-8"}) == 2
    assert ambiguous_width({"LC_ALL": "C.UTF-8", "LANG": "ko_KR.UTF-8"}) == 1  # LC_ALL first
    assert ambiguous_width({"LANG": "de_DE.UTF-8"}) == 1
    assert ambiguous_width({}) == 1
    assert ambiguous_width({"LANG": "en_US.UTF-8", "AGENT_BRIDGE_AMBIGUOUS_WIDTH": "2"}) == 2
    assert ambiguous_width({"LANG": "zh_TW.UTF-8", "AGENT_BRIDGE_AMBIGUOUS_WIDTH": "1"}) == 1
    monkeypatch.setattr(screen, "_AMBIGUOUS", 2)
    assert cells("● done · 3 s…") == 16
    title = "● " + "·" * 20
    assert cells(clip(title, 12)) <= 12
    assert [cells(row) for row in wrap("·" * 7, 6)] == [6, 6, 2]
    monkeypatch.setattr(screen, "_AMBIGUOUS", 1)
    assert cells("● done · 3 s…") == 13


def test_an_emoji_made_by_its_variation_selector_takes_two_columns(narrow: None) -> None:
    """`❤` + VS16, `✔` + VS16, a keycap `1` + VS16 + U+20E3 are drawn as emoji, two columns wide: counted one, a live
    line holding one wrapped and each redraw left a row behind. A wide emoji's VS16 adds nothing; VS15 (text) none."""
    assert cells("\u2764\ufe0f") == 2
    assert cells("ok \u2714\ufe0f done") == 10
    assert cells("1\ufe0f\u20e3") == 2
    assert cells("\U0001f44d\ufe0f") == 2
    assert cells("\u2764\ufe0e") == 1
    assert cells("\t\ufe0f") == 8
    assert clip("abc\u2764\ufe0fdef", 5) == "abc\u2764…"  # (the heart without its selector: one column, as text)
    assert clip("abc\u2764\ufe0fdef", 6) == "abc\u2764\ufe0f…"
    assert wrap("x" * 9 + "\u2764\ufe0f" + "y", 10) == ["x" * 9, "\u2764\ufe0fy"]  # together on the next row
    for width in range(2, 12):
        for row in wrap("ab\u2764\ufe0fc\u2714\ufe0f" * 3, width):
            assert cells(row) <= width, (row, width)
