"""The model's markdown as a terminal shows it: headings, lists, code with highlighting, tables (rich), and the
streamed text cut into blocks that are complete, so each block is rendered once, when nothing that follows can
change it.

Imported only when standard output is a terminal, and only once the turn's first request has left (rich and
its parser take a good part of a second to load on a busy machine: `run` sends its request first). Piped
output never loads it: the model's text goes out as it came, which is the plain text a file or a pipe wants.

Why blocks and not lines or the whole answer: a table's columns, a list's numbering and a paragraph's wrapping
depend on lines that come later, so a line can't be rendered alone; re-rendering the whole answer on every
piece would redraw what has scrolled out of reach. A block (a paragraph, a list, a table, a fenced code block,
a heading) is final once the next block starts, or once a blank line closes a paragraph or a table, or a
closing fence a code block. Until then the front end shows the block as it streams, plain.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import ClassVar

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich import box
from rich.color import ColorSystem
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Heading, Markdown, MarkdownElement, TableElement
from rich.segment import Segment
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from rich.theme import Theme

from bridge.visible import visible

CODE_THEME = "ansi_dark"  # the terminal's own 16 colours: readable on a dark and on a light background
CODE_INDENT = 2
STYLES = Theme(
    {
        # no background colours: they look wrong on a light terminal and leave blocks of colour when copied
        "markdown.code": "bold cyan",
        "markdown.code_block": "none",
        "markdown.h1": "bold underline",
        "markdown.h2": "bold",
        "markdown.h3": "bold",
        "markdown.h4": "bold italic",
        "markdown.h5": "italic",
        "markdown.h6": "dim",
        "markdown.block_quote": "italic",
        "markdown.table.border": "dim",
        "markdown.table.header": "bold",
    }
)


class _Heading(Heading):
    """Every heading on the left, as the rest of the answer (rich centres the first level)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = self.text.copy()
        text.justify = "left"
        yield text


class _Code(CodeBlock):
    """Code highlighted in the terminal's colours, indented, with no background and no padding: what is copied
    from the screen is the code."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).rstrip("\n")
        yield Syntax(
            code,
            self.lexer_name,
            theme=CODE_THEME,
            word_wrap=True,
            background_color="default",
            padding=(0, 0, 0, CODE_INDENT),
        )


class _Table(TableElement):
    """A table in a grid: its columns stay apart in any terminal, with or without colour."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = Table(box=box.SQUARE, style="markdown.table.border", header_style="markdown.table.header")
        if self.header is not None and self.header.row is not None:
            for column in self.header.row.cells:
                table.add_column(column.content.copy(), justify=column.justify)
        if self.body is not None:
            for row in self.body.rows:
                table.add_row(*[cell.content for cell in row.cells])
        yield table


class _Markdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "heading_open": _Heading,
        "fence": _Code,
        "code_block": _Code,
        "table_open": _Table,
    }


class Renderer:
    """Markdown → lines of text with SGR escapes. `color` False (NO_COLOR): bold, italic, dim and underline
    stay, no colour is added."""

    def __init__(self, *, color: bool) -> None:
        self.color = color
        self._console = Console(
            file=io.StringIO(),
            force_terminal=True,
            color_system="standard",
            theme=STYLES,
            highlight=False,
            emoji=False,
            markup=False,
            legacy_windows=False,
            width=80,
        )

    def lines(self, markdown: str, width: int) -> list[str]:
        """`markdown` rendered `width` cells wide, without the blank lines around it."""
        options = self._console.options.update(width=max(20, width), height=None)
        rendered = self._console.render_lines(
            _Markdown(markdown, hyperlinks=False, code_theme=CODE_THEME), options, pad=False
        )
        lines = [self._sgr(line) for line in rendered]
        while lines and not _plain(lines[-1]).strip():
            lines.pop()
        while lines and not _plain(lines[0]).strip():
            lines.pop(0)
        return lines

    def _sgr(self, segments: Iterable[Segment]) -> str:
        """One line of segments as text with SGR escapes, without the padding at its end."""
        kept = [segment for segment in segments if not segment.control]
        while kept and not kept[-1].text.strip():
            kept.pop()
        if kept:
            last = kept[-1]
            kept[-1] = Segment(last.text.rstrip(), last.style)
        out = []
        for segment in kept:
            style = segment.style
            # markdown's character references (`&#x202e;`, `&zwj;`) come back as the characters `shown` escaped
            text = visible(segment.text, keep_tabs=True)
            if style is None or not style:
                out.append(text)
                continue
            if not self.color:
                style = style.without_color
            out.append(style.render(text, color_system=ColorSystem.STANDARD))
        return "".join(out)


def _plain(line: str) -> str:
    return Text.from_ansi(line).plain


class Blocks:
    """Markdown as it streams in, given back block by block once each is final (see the module's docstring).
    `pending` is what is not final yet: the front end shows it as it is."""

    def __init__(self) -> None:
        self.pending = ""
        self._parser = MarkdownIt("commonmark").enable(["strikethrough", "table"])
        # `pending` is one open code fence (a top-level one, from its opening line): the line that may close it,
        # and how much of `pending` was looked at for it (whole lines)
        self._closing: re.Pattern[str] | None = None
        self._looked = 0
        self._lines = 0  # line breaks in `pending`
        self._parsed_lines = 0  # ... at its last parse

    def feed(self, text: str) -> str | None:
        """Add streamed text; the text of the blocks that became final, if any."""
        self.pending += text
        if "\n" not in text:  # a block ends only at a line's end
            return None
        self._lines += text.count("\n")
        complete = self.pending.rfind("\n") + 1
        if self._closing is not None:
            # a whole file written out in one fence: only the new lines can close it (parsing all of it again at
            # every line was O(n²): 3,000 lines took 27 s of CPU, the event loop held — attack round 17)
            closed = self._closing.search(self.pending, self._looked, complete) is not None
            self._looked = complete
            if not closed:
                return None
            self._closing = None
        elif not self._due():
            return None
        self._parsed_lines = self._lines
        cut = self._final_up_to()
        if cut:
            ready, self.pending = self.pending[:cut], self.pending[cut:]
            self._lines -= ready.count("\n")
            self._parsed_lines = self._lines
            self._follow_fence()
            return ready
        self._follow_fence()
        return None

    def finish(self) -> str:
        """The rest (the text ended: whatever is pending is final)."""
        rest, self.pending = self.pending, ""
        self._lines = self._parsed_lines = 0
        self._closing = None
        return rest

    def _due(self) -> bool:
        """Whether `pending` is parsed again now: once its complete lines grew by an eighth since the last parse (by
        one while it is short). A long table, list or paragraph parsed whole at every line (or at every blank line:
        a loose list, attack round 18) was O(n²); this way it is parsed O(log n) times, and a block that became
        final meanwhile is committed a little later (the live area shows it as it streams until then)."""
        return self._lines - self._parsed_lines >= max(1, self._parsed_lines // 8)

    def _follow_fence(self) -> None:
        """When `pending` is a top-level code fence still open from its first line, what would close it."""
        self._closing = None
        complete = self.pending[: self.pending.rfind("\n") + 1]
        match = _OPENING.match(complete)
        if match is None:
            return
        blocks = [t for t in self._parser.parse(complete) if t.level == 0 and t.nesting >= 0 and t.map]
        if len(blocks) == 1 and blocks[0].type == "fence" and blocks[0].map == [0, complete.count("\n")]:
            marker = match.group(1)
            self._closing = re.compile("^" + _closing_line(marker).pattern, re.MULTILINE)
            self._looked = len(complete)

    def _final_up_to(self) -> int:
        """How many characters of `pending` are made of final blocks."""
        complete = self.pending[: self.pending.rfind("\n") + 1]
        lines = complete.splitlines(keepends=True)
        starts = [t for t in self._parser.parse(complete) if t.level == 0 and t.nesting >= 0 and t.map]
        if not starts:
            return 0
        last = starts[-1]
        assert last.map is not None
        final_lines = len(lines) if _final(last, lines) else last.map[0]
        return sum(len(line) for line in lines[:final_lines])


def _closes(line: str, marker: str) -> bool:
    """Whether `line` closes a fence opened with `marker`, as CommonMark reads it: at most three spaces before (a
    line indented four or more, or by a tab, is the code's own: attack round 18 had such a line taken for the
    closing one, and the rest of the code rendered as markdown), the marker's character at least as many times,
    then only spaces and tabs."""
    return _closing_line(marker).match(line.rstrip("\r\n")) is not None


def _closing_line(marker: str) -> re.Pattern[str]:
    return re.compile(rf" {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")


_OPENING = re.compile(r" {0,3}(`{3,}|~{3,})")  # a code fence's opening line (as CommonMark reads it)


def _final(block: Token, lines: list[str]) -> bool:
    """Whether the last block of `lines` is final: no line that may follow can change it."""
    assert block.map is not None
    start, end = block.map
    if block.type in ("heading_open", "hr"):
        return True
    if block.type == "fence":
        return end - start >= 2 and _closes(lines[end - 1], block.markup)
    if block.type in ("paragraph_open", "table_open", "blockquote_open", "html_block"):
        after = lines[end:]
        return bool(after) and all(not line.strip() for line in after)  # a blank line closed it
    # a list, and an indented code block (the next indented line after a blank one goes on with it: it was cut in
    # two), go on after a blank line: final when the next block starts
    return False
