"""A shell command as the permission checks read it: words, redirections, simple commands, the script.

A word knows whether its value is fixed before the command runs (`static`), and if not, why (`$x`, `$(…)`,
`$'…'`, a brace or tilde form bash would expand). Globs are kept as patterns. shellparse.py makes these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

MAX_DEPTH = 64
MAX_WORDS = 10_000  # words of every command together: past this the text is too complex to check in time
QUOTED = "\x01"  # placeholders in a word's shape: a quoted character, an expansion
EXPANDED = "\x02"


class ShellSyntaxError(Exception):
    """The text could not be read, or uses something the checker does not model."""


@dataclass(frozen=True)
class Word:
    text: str  # as written
    value: str  # quotes removed; expansions kept as written (`$x`): what rules match
    why: str | None = None  # why the value is not known before the command runs; None: static
    pattern: str | None = None  # a glob pattern (quoted specials escaped) when bash would glob the word
    tilde: bool = False  # starts with an unquoted `~` or `~/`: the value's `~` is the home directory
    pipe: bool = False  # the whole word is `<(…)` or `>(…)`: a pipe path, no file

    @property
    def static(self) -> bool:
        return self.why is None

    @property
    def plain(self) -> bool:
        """Fully literal and unquoted (how reserved words and assignments are recognised)."""
        return self.why is None and self.pattern is None and self.text == self.value


@dataclass(frozen=True)
class Redirect:
    op: str
    kind: Literal["read", "write", "none"]  # none: a here-document, a here-string, an fd duplication
    target: Word | None = None


@dataclass(frozen=True)
class Command:
    """One simple command. `words` may be empty (only assignments, or a group's redirections)."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    text: str = ""
    substituted: bool = False  # runs inside `$(…)`, backticks or `<(…)`: its output becomes data
    span: tuple[int, int] = (0, 0)  # where it is in the text given to `parse` (a backtick's: the whole `…`)
    expands: tuple[str, ...] = ()  # variables it expands ($NAME, ${NAME}, ${#NAME}; its here-documents' too)


@dataclass
class Script:
    commands: list[Command] = field(default_factory=list)
    background: bool = False  # some part runs with `&`
    assigned: set[str] = field(default_factory=set)  # variables the script sets (`x=…`, `for x`, `read x`)
    words: int = 0
