"""The terminal as `run` writes to it: above, lines written once (`commit`); below, on a terminal only, a live
area redrawn in place (`draw`), erased before anything is written above it and while a question is asked
(`pause`), so the two never mix. Every line of the live area fits the width (`clip`): its height is known, and
erasing it is moving up that many rows. To a pipe or a file: no live area, no escape sequence."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import unicodedata
from collections.abc import Callable
from typing import TextIO

from bridge.visible import visible

DIM, BOLD, RED, GREEN, RESET = "\033[2m", "\033[1m", "\033[31m", "\033[32m", "\033[0m"
COLOURS = (RED, GREEN)  # what NO_COLOR leaves out (bold and dim are not colours)


TAB_STOP = 8  # where a terminal's tab stops are (every 8 columns unless set otherwise)
AMBIGUOUS_ENV = "AGENT_BRIDGE_AMBIGUOUS_WIDTH"  # 1 or 2: the columns an East Asian Ambiguous character takes


def ambiguous_width(environ: dict[str, str] | os._Environ[str] = os.environ) -> int:
    """The columns an East Asian Ambiguous character (●, ·, …, ①, Greek and Cyrillic letters, box drawing) takes:
    two in terminals set up for Chinese, Japanese or Korean (their locale), one elsewhere; AGENT_BRIDGE_AMBIGUOUS_WIDTH
    says it outright. Counting two where the terminal shows one only cuts a line sooner; counting one where it
    shows two made a live line wrap, and each redraw left a row behind (the area's height was counted short)."""
    setting = environ.get(AMBIGUOUS_ENV, "").strip()
    if setting in ("1", "2"):
        return int(setting)
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(name)
        if value:
            return 2 if value.split(".")[0].split("_")[0].lower() in ("zh", "ja", "ko") else 1
    return 1


_AMBIGUOUS = ambiguous_width()
_ZERO = frozenset(("Mn", "Me", "Cf"))  # combining marks, enclosing marks, format characters (ZWJ, variation selectors)


def char_cells(char: str) -> int:
    """The columns one character takes (a tab: see `advance`)."""
    code = ord(char)
    if 0x20 <= code < 0x7F or code == 0xAD:  # (a soft hyphen shows as one)
        return 1
    if unicodedata.category(char) in _ZERO or 0x1160 <= code <= 0x11FF:  # (Hangul vowels and finals join a syllable)
        return 0
    kind = unicodedata.east_asian_width(char)
    if kind in "WF":
        return 2
    return _AMBIGUOUS if kind == "A" else 1


EMOJI_PRESENTATION = "\ufe0f"  # VS16: the character before it is drawn as an emoji, two columns wide


def advance(column: int, char: str, previous: str = "") -> int:
    """The column after `char` written at `column` (after `previous`): a tab goes to the next tab stop; VS16 after a
    one-column character (`❤` + VS16, a keycap `1` + VS16) makes it two, as terminals draw emoji. (Counting two
    where a terminal draws one only cuts a line sooner; counting one where it draws two wrapped the live area.)"""
    if char == "\t":
        return (column // TAB_STOP + 1) * TAB_STOP
    if char == EMOJI_PRESENTATION:
        return column + (previous != "" and previous != "\t" and char_cells(previous) == 1)
    return column + char_cells(char)


def cells(text: str) -> int:
    """How many terminal columns `text` takes from a line's start (wide characters two, combining marks and format
    characters none, a tab to the next tab stop)."""
    if text.isascii() and "\t" not in text:
        return len(text)
    column, previous = 0, ""
    for char in text:
        column, previous = advance(column, char, previous), char
    return column


def clip(text: str, width: int | None) -> str:
    """`text` (from a line's start) cut to `width` columns, an ellipsis marking the cut (None: as it is)."""
    if width is None or cells(text) <= width:
        return text
    out, column, room, previous = [], 0, width - char_cells("…"), ""
    for char in text:
        column, previous = advance(column, char, previous), char
        if column > room:
            break
        out.append(char)
    return "".join(out) + "…"


def wrap(text: str, width: int) -> list[str]:
    """`text` cut into rows of at most `width` columns (as a terminal wraps it, but known here). Tabs are the
    caller's to expand first (a terminal's tab at the margin does not wrap: what follows it overwrites the last
    column)."""
    rows: list[str] = []
    row: list[str] = []
    column, previous = 0, ""
    for char in text:
        after = advance(column, char, previous)
        if after > width and row:
            if char == EMOJI_PRESENTATION and len(row) > 1:  # an emoji and its VS16 go to the next row together
                base = row.pop()
                rows.append("".join(row))
                row, after = [base], advance(advance(0, base), char, base)
            else:
                rows.append("".join(row))
                row, after = [], advance(0, char)
        row.append(char)
        column, previous = after, char
    rows.append("".join(row))
    return rows


_SGR = re.compile(r"\x1b\[([0-9;]{0,32})m")


def _plain_sgr(parameters: str) -> bool:
    """Whether an SGR sequence only colours or weighs text as the bridge does (rich's standard colours, bold, dim,
    italic, underline): not conceal (8, however written: `08`), no 256-colour or RGB colours (38/48: the bridge
    never writes them), and no foreground equal to the background (text shown as nothing) — attack round 18."""
    try:
        values = [int(value or "0") for value in parameters.split(";")]
    except ValueError:
        return False
    if any(value in (8, 38, 48) or value > 107 for value in values):
        return False
    foreground = {v % 10 for v in values if 30 <= v <= 37 or 90 <= v <= 97}
    background = {v % 10 for v in values if 40 <= v <= 47 or 100 <= v <= 107}
    return not foreground & background


def guarded(text: str, *, sgr: bool) -> str:
    """`text` as it may reach the terminal: line breaks, tabs and (`sgr`: on a terminal) colour and weight
    escapes as they are; every other control, escape, bidi or invisible character made visible. The last guard
    under every content path, whatever forgot `visible` (attack round 17: a cloned folder's agent file names, a
    sub-agent's report and an API error wrote the clipboard (OSC 52), the window title and moved the cursor up
    over lines already shown)."""
    if not sgr or "\x1b" not in text:
        return visible(text, keep_newlines=True, keep_tabs=True)
    out, pos = [], 0
    for match in _SGR.finditer(text):
        if not _plain_sgr(match.group(1)):
            continue
        out += [visible(text[pos : match.start()], keep_newlines=True, keep_tabs=True), match.group()]
        pos = match.end()
    out.append(visible(text[pos:], keep_newlines=True, keep_tabs=True))
    return "".join(out)


class Screen:
    """`color`: escape sequences at all, and the live area (a terminal); `no_color` (NO_COLOR): no colour, bold
    and dim kept."""

    def __init__(self, out: TextIO, *, color: bool, no_color: bool) -> None:
        self.out = out
        self.color = color
        self.no_color = no_color
        self.closed = False  # whoever read the output went away (`run … | head`): nothing more is written
        self.on_closed: Callable[[], None] = lambda: None
        self.paused = False  # a question is on the screen
        self._held: list[str] = []  # committed while paused: written after it
        self._tail = "\n"  # the last characters written above (where the next line starts, blank lines)
        self._wrote = False
        self._live_rows = 0

    def paint(self, code: str, text: str) -> str:
        if not self.color or (self.no_color and code in COLOURS):
            return text
        return f"{code}{text}{RESET}"

    def width(self) -> int | None:
        """The terminal's width (None when writing to a pipe: lines are not cut)."""
        return self.size()[0] if self.color else None

    @staticmethod
    def size() -> tuple[int, int]:
        columns, rows = shutil.get_terminal_size((80, 24))
        return columns, rows

    # --- above ---------------------------------------------------------------------------------------------

    def commit(self, lines: list[str], *, gap: bool) -> None:
        """Write `lines` above the live area, after a blank line when `gap` (a new part of the turn); while a
        question is on the screen, after it."""
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        if self.paused:
            self._held.append(text)
            return
        self.end_line()
        self.erase()
        if gap and self._wrote and not self._tail.endswith("\n\n"):
            text = "\n" + text
        self.write(text)

    def stream(self, text: str, *, starts: bool) -> None:
        """Plain text as it comes (to a pipe), after a blank line when it `starts` a new part of the turn."""
        if starts and self._wrote and not self._tail.endswith("\n\n"):
            self.write("\n" if self._tail.endswith("\n") else "\n\n")
        self.write(text)

    def end_line(self) -> None:
        """Text that streamed without a line break ends its line before anything else is written."""
        if not self._tail.endswith("\n"):
            self.write("\n")

    def write(self, text: str) -> None:
        if not text:
            return
        self._out(guarded(text, sgr=self.color))
        self._tail = (self._tail + text)[-2:]
        self._wrote = True

    def _out(self, text: str) -> None:
        """`text` written and flushed — unless the reader is gone (a closed pipe: `run … | head -2`), which is said
        once (`on_closed`: the turn is cancelled, as SIGPIPE would end a program that writes) and is no error: the
        broken pipe went up through the turn's tool calls as a traceback before."""
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError) as error:  # (ValueError: the stream was closed here)
            self.closed = True
            with contextlib.suppress(OSError):  # what is still buffered would fail again at exit
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())
            logging.getLogger(__name__).info("the output was closed (%s): the turn stops", type(error).__name__)
            self.on_closed()

    # --- a question ----------------------------------------------------------------------------------------

    def pause(self) -> None:
        self.erase()
        self.paused = True

    def resume(self) -> None:
        """The question is answered (its Enter, echoed by the terminal, ended the line); what was held comes."""
        self.paused = False
        self._tail = "\n"
        held, self._held = self._held, []
        self.write("".join(held))

    # --- below ---------------------------------------------------------------------------------------------

    @property
    def drawn(self) -> bool:
        """The live area is on the screen (nothing erased it since it was drawn)."""
        return self._live_rows > 0

    def erase(self) -> None:
        if self._live_rows:
            self._out(self._back())
            self._live_rows = 0

    def draw(self, lines: list[str]) -> None:
        """The live area, replaced by `lines` (each within the width) in one write."""
        if not self.color or self.paused:
            return
        self._out(self._back() + guarded("\n".join(lines), sgr=True))
        self._live_rows = len(lines)

    def _back(self) -> str:
        """Back to where the live area starts, and clear from there down."""
        if not self._live_rows:
            return ""
        up = f"\033[{self._live_rows - 1}A" if self._live_rows > 1 else ""
        return f"\r{up}\033[J"


def is_terminal(out: TextIO) -> bool:
    """A terminal that takes escape sequences (not `TERM=dumb`)."""
    try:
        return out.isatty() and os.environ.get("TERM") != "dumb"
    except (ValueError, OSError):
        return False
