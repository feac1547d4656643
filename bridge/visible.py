"""Text shown to a person, with every character that could hide or redraw something made visible.

A permission question must show what runs. A command (or a path, a rule, a reason quoting the command) can
carry characters that a terminal or an editor renders as something else: a carriage return or an escape
sequence redraws the line, bidi controls reorder it (`Trojan Source`), zero-width and other format characters
vanish, look-alike spaces join two words into one. `visible` replaces each with an escape anyone can read —
`\\x1b`, `\\u{202e}` — and is the one function every front end uses for titles, reasons, rules and commands.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

MAX_TITLE_CHARS = 4_000  # a title longer than this says how much more there is (it is never cut silently)
MAX_SHOWN_CHARS = 100_000  # a question's command or text in full (`capped`)
LINE_BREAK = " ⏎ "  # a line break in a one-line title

# Characters that render as nothing (or as a space) without being a format character (category Cf).
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180e\u3164\uffa0\u2800")


def _hidden(char: str) -> bool:
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return True  # C0 and C1 controls, DEL (ESC, CR, BS, NEL...)
    if char == " " or code < 0x7F:
        return False
    category = unicodedata.category(char)
    # Cf: bidi controls, zero-width characters, BOM, tags; Zl/Zp: line/paragraph separators; Zs but the space:
    # look-alike spaces bash does not split on; Co/Cn/Cs: private, unassigned, lone surrogates
    # variation selectors (category Mn) draw nothing of their own: 4,100 of them after a tool's title pushed the
    # name of the server that titled it past the title's cut (attack round 35)
    variation = 0xFE00 <= code <= 0xFE0F or 0x180B <= code <= 0x180F or 0xE0100 <= code <= 0xE01EF
    return category in ("Cf", "Zl", "Zp", "Zs", "Co", "Cn", "Cs") or char in _INVISIBLE or variation


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{{{code:x}}}"


def visible(text: str, *, keep_newlines: bool = False, keep_tabs: bool = False) -> str:
    """`text` with every hiding character escaped (`keep_newlines`: line breaks stay real, for a multi-line
    block; `keep_tabs`: tabs too, for prose and code shown as such; else they are escaped)."""
    if text.isascii():  # the common case, at C speed: only C0 controls and DEL can hide
        return _ASCII_HIDDEN[keep_newlines, keep_tabs].sub(lambda m: _escape(m.group()), text)
    kept = ("\n" if keep_newlines else "") + ("\t" if keep_tabs else "")
    return "".join(_escape(c) if _hidden(c) and c not in kept else c for c in text)


_ASCII_HIDDEN = {
    (newlines, tabs): re.compile(
        "["
        + "".join(
            re.escape(chr(c)) for c in [*range(0x20), 0x7F] if not (newlines and c == 10) and not (tabs and c == 9)
        )
        + "]"
    )
    for newlines in (False, True)
    for tabs in (False, True)
}


def has_hidden(text: str) -> bool:
    """Whether `visible` would change anything (line breaks aside)."""
    if text.isascii():
        return _ASCII_HIDDEN[True, False].search(text) is not None
    return any(_hidden(c) for c in text if c != "\n")


def capped(text: str, limit: int = MAX_SHOWN_CHARS) -> tuple[str, str]:
    """A command or a text as a question shows it in full: whole up to `limit` characters (far beyond what a
    person reads; a command longer than the permission check reads asks anyway), and the line that says how
    much more there is ("" when nothing is left out)."""
    if len(text) <= limit:
        return text, ""
    return text[:limit], f"\n… (+{len(text) - limit:,} more characters not shown)"


def visible_spans(text: str, spans: Sequence[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """`visible(text, keep_newlines=True)` and `spans` of `text` moved to where they fall in it (code points)."""
    if not has_hidden(text):
        return text, [(max(0, min(s, len(text))), max(0, min(e, len(text)))) for s, e in spans]
    shown: list[str] = []
    at = [0] * (len(text) + 1)  # where each character of `text` starts in the shown text
    length = 0
    for index, char in enumerate(text):
        at[index] = length
        piece = _escape(char) if _hidden(char) and char != "\n" else char
        shown.append(piece)
        length += len(piece)
    at[len(text)] = length
    moved = [(at[max(0, min(s, len(text)))], at[max(0, min(e, len(text)))]) for s, e in spans]
    return "".join(shown), moved


_TITLE_TOKEN = re.compile(r" {16,}|.", re.DOTALL)


def _title(text: str, limit: int) -> tuple[str, int]:
    """The one-line form of `text` up to `limit` characters, and how many characters of `text` it shows (read
    lazily: a title of a 10 MB command costs what its first characters cost)."""
    pieces: list[str] = []
    length = used = 0
    for token in _TITLE_TOKEN.finditer(text):
        piece = token.group()
        if len(piece) > 1:
            piece = f" ⟨{len(piece)} spaces⟩ "
        elif piece == "\n":
            piece = LINE_BREAK
        elif _hidden(piece):
            piece = _escape(piece)
        if length + len(piece) > limit:
            break
        pieces.append(piece)
        length += len(piece)
        used = token.end()
    return "".join(pieces), used


def one_line(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """A title: `text` made visible, its line breaks shown as ` ⏎ `, a long run of spaces counted (`⟨300
    spaces⟩`: a title shown on one line can't push what follows out of sight with blanks), whole up to `limit`
    characters; past it, the cut says how many characters it leaves out."""
    shown, used = _title(text, limit)
    if used >= len(text):
        return shown
    return f"{shown}… (+{len(text) - used:,} more characters)"


def fits(text: str, limit: int = MAX_TITLE_CHARS) -> bool:
    """Whether `one_line(text)` shows all of it."""
    return _title(text, limit)[1] >= len(text)


def code_span(text: str) -> str:
    """`text` as a Markdown code span that no backtick inside it can end (a client may render a title as
    Markdown, where `*x*` outside a code span would lose its asterisks)."""
    longest = max((len(run) for run in "".join(c if c == "`" else " " for c in text).split()), default=0)
    fence = "`" * (longest + 1)
    # CommonMark takes one space off each end of a span that begins and ends with one (but is not all spaces):
    # a pad for a backtick at an end, and for such spaces, which would go (attack round 23: `  x  ` showed ` x `)
    spaced = text.startswith(" ") and text.endswith(" ") and text.strip(" ") != ""
    pad = " " if text.startswith("`") or text.endswith("`") or spaced else ""
    return f"{fence}{pad}{text}{pad}{fence}"
