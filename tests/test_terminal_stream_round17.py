"""Attack round 17: streaming one long block to the terminal was O(n²) — `Blocks` parsed all that was pending at
every line (a whole file in one code fence: 3,000 lines took 27 s of CPU, 5,000 took 193 s, the event loop held)
and the live area wrapped all of it at every draw. Now an open fence is only looked at for its closing line, other
long blocks are parsed again as they grow by an eighth, and the live area wraps only its last rows. What is
committed is still every character once, in order, cut only where blocks end."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bridge.cli.markdown import Blocks
from bridge.cli.screen import wrap
from bridge.cli.view import _last_rows

PARSER = MarkdownIt("commonmark").enable(["strikethrough", "table"])


def counting(blocks: Blocks) -> list[int]:
    """How many times `blocks` parses, as it goes."""
    count = [0]
    parse = blocks._parser.parse

    def counted(src: str, env: Any = None) -> Any:
        count[0] += 1
        return parse(src, env)

    blocks._parser.parse = counted  # type: ignore[method-assign]
    return count


def stream(text: str, pieces: list[int]) -> list[str]:
    """`text` fed in pieces of the given sizes (then the rest): the parts committed, the rest last."""
    blocks, out, at = Blocks(), [], 0
    for size in pieces:
        ready = blocks.feed(text[at : at + size])
        at += size
        if ready:
            out.append(ready)
    if at < len(text):
        ready = blocks.feed(text[at:])
        if ready:
            out.append(ready)
    return [*out, blocks.finish()]


def top_blocks(text: str) -> list[str]:
    return [t.type for t in PARSER.parse(text) if t.level == 0 and t.nesting >= 0]


PARTS = [
    "# Title\n",
    "A paragraph\nthat goes on.\n",
    "- one\n- two\n  more\n",
    "1. first\n2. second\n",
    "```py\nx = 1\n\ny = 2\n```\n",
    "~~~\n```\nnot closed by backticks\n~~~\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "> quoted\n> more\n",
    "---\n",
    "    indented code\n",
    "\n",
    "\n\n",
    "```\n    ```\n# inside the code\n```\n",  # a content line indented 4: not the closing one (round 18)
    "```\n\t```\nmore\n```\n",
    "".join(f"word {i}\n" for i in range(70)),  # long enough that parsing waits for it to grow (`_due`)
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PARTS), min_size=1, max_size=12), st.lists(st.integers(1, 30), max_size=60))
def test_every_character_once_in_order_cut_only_where_blocks_end(parts: list[str], pieces: list[int]) -> None:
    text = "".join(parts)
    out = stream(text, pieces)
    assert "".join(out) == text
    for part in out[:-1]:
        assert part.endswith("\n")
    # rendered part by part, the blocks are the ones the whole text has
    assert [kind for part in out for kind in top_blocks(part)] == top_blocks(text)


def test_a_whole_file_in_one_fence_is_parsed_a_few_times_not_at_every_line() -> None:
    blocks = Blocks()
    parses = counting(blocks)
    lines = [f"def f{i}(x):\n" if i % 7 else "\n" for i in range(5000)]  # blank lines inside the fence too
    assert blocks.feed("Here it is:\n\n```python\n") == "Here it is:\n\n"
    for line in lines:
        assert blocks.feed(line) is None
    assert parses[0] <= 6, parses[0]
    assert blocks.feed("```\n") == "```python\n" + "".join(lines) + "```\n"
    assert blocks.finish() == ""


def test_a_long_table_or_list_is_parsed_as_it_grows_by_an_eighth() -> None:
    for head, row in (("| a | b |\n|---|---|\n", "| {i} | x |\n"), ("", "- item {i}\n")):
        blocks = Blocks()
        parses = counting(blocks)
        rows = [row.format(i=i) for i in range(5000)]
        text = head + "".join(rows)
        out = [blocks.feed(head)] if head else []
        out += [blocks.feed(r) for r in rows]
        assert parses[0] <= 100, (head, parses[0])  # at every line: 5,000
        out.append(blocks.feed("\nAfter.\n"))
        done = "".join(p for p in out if p) + blocks.finish()
        assert done == text + "\nAfter.\n"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab \t\n界", max_size=300), st.integers(4, 30), st.integers(1, 12))
def test_the_live_areas_last_rows_are_a_full_wraps_last_rows(text: str, width: int, room: int) -> None:
    full = [row for line in text.expandtabs(4).split("\n") for row in wrap(line, width)]
    if all(len(line.expandtabs(4)) <= room * width for line in text.split("\n")):
        assert _last_rows(text, width, room) == full[-room:]


def test_the_live_area_wraps_only_what_it_shows() -> None:
    rows = _last_rows("x" * 5_000_000, 80, 10)
    assert rows == ["x" * 80] * 10


def test_an_indented_fence_line_does_not_close_the_fence_however_the_parses_fall() -> None:
    """Attack round 18: after a long paragraph (parsed as it grows by an eighth), the fence's opening line and a
    content line indented four spaces were parsed together, and the content line was taken for the closing one."""
    for n in range(60, 100):
        text = "".join(f"word {i}\n" for i in range(n)) + "```\n    ```\n# inside the code\nmore code\n```\n"
        out = stream(text, [len(line) for line in text.splitlines(keepends=True)])
        assert [kind for part in out for kind in top_blocks(part)] == ["paragraph_open", "fence"], n


def test_a_loose_list_is_not_parsed_at_every_blank_line() -> None:
    """Attack round 18: a blank line between items made every item a parse of the whole list (4,000 lines: 43 s)."""
    blocks = Blocks()
    parses = counting(blocks)
    for i in range(2000):
        blocks.feed(f"- item {i}\n")
        blocks.feed("\n")
    assert parses[0] <= 120, parses[0]


def test_an_indented_code_block_is_not_cut_at_a_blank_line() -> None:
    """Hypothesis found it (turn 3, session 23): a blank line inside an indented code block was taken for its end,
    and the block was committed, and rendered, as two."""
    text = "    indented code\n\n    indented code\n"
    out = stream(text, [1, 18])
    assert "".join(out) == text
    assert [kind for part in out for kind in top_blocks(part)] == ["code_block"]
