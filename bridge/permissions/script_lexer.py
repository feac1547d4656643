"""A shell script's simple commands, split where bash splits them, for the trust binding's reading (script_reads.py).

The reading is tolerant of the grammar — functions, `case`, `[[`, arrays, any script a hook may be — but exact about
where words, quotes, comments, continued lines, substitutions and here-documents begin and end, across lines: a
line-by-line reading took `echo "⏎"; pytest; echo "⏎"` for two quoted words, `# note \\⏎pytest` for a comment, a
`<<EOF` inside quotes for the start of a here-document whose "text" hid the commands after it, and ran none of a
here-document's `$(…)` (round 28, each proven by bash running a file the binding did not pin).

What it can't place as bash does raises `ScriptSyntax` (the caller leaves the command unbindable): an unterminated
quote or substitution, `$((`/`((` that are not arithmetic, a `#` inside `[[ … ]]`, a here-document delimiter
written with `$'…'`, a line continued inside an operator (`<\\⏎<`), NUL bytes; in `posix` mode (dash) what dash
splits otherwise. One pass, linear in the text; nesting, here-documents and commands bounded.

Words come back with their quotes removed and their expansions as written (`"$HOME/x"` -> `$HOME/x`,
`$(cat f)` -> `$(cat f)`); the commands inside substitutions (`$(…)`, backticks, `<(…)`, an expanding
here-document's) come back as commands of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bridge.permissions.shell_lexer import backtick_text, continues, next_line

MAX_DEPTH = 24
MAX_COMMANDS = 100_000  # (a binding reads no more: script_reads.MAX_COMMANDS)
MAX_DOCUMENTS = 16  # here-documents one line may start (bash's own bound since 5.1)
# Reserved words: where a command starts, they start it (`then pytest`); elsewhere they are arguments (`echo }`).
RESERVED = frozenset({"{", "}", "!", "then", "do", "else", "elif", "if", "while", "until"})
_OPERATORS = (";;&", "&&", "||", ";;", ";&", "|&", ";", "&", "|", "(", ")")
_BREAKS = frozenset(" \t\n;&|()")
_OPERATOR_CHARS = frozenset(";&|()")
# a backslash-newline that bash removes before it reads an operator or a quote (`$\⏎'…'`, `<\⏎<`, `<<\⏎-`)
_CONTINUED_OPERATOR = re.compile(r"[$<>]\\\n")  # (`&&\⏎`, `|\⏎` split the same commands either way)
_REDIRECTS = (">>", ">&", ">|", "<&", "<>", ">", "<")
_ASSIGNS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")


class ScriptSyntax(ValueError):
    """What the reading can't place exactly as bash does (the script's commands are then unknown)."""


@dataclass
class _Doc:
    delimiter: str
    strip_tabs: bool
    expands: bool


def script_commands(text: str) -> list[list[str]]:
    """Every simple command of `text` (a script, a `-c` string, a package script), as words."""
    return read(text).commands


@dataclass
class Read:
    commands: list[list[str]]
    # `$(…)` or a backtick kept as text (in single quotes, escaped, in a quoted here-document): bash may still run it
    # (eval, arithmetic on a subscript, PS4 and prompt expansion, `${!x}`, `test -v`)
    held_substitution: bool = False


def read(text: str, *, posix: bool = False) -> Read:
    """`text`'s commands and what else the reading saw. `posix`: the text may be run by `sh` where that is dash
    (Debian's, Ubuntu's), which splits `$'…'`, `$"…"`, `((…))`, `$[…]` and a quote inside `"${…}"` otherwise than
    bash does: those are refused (round 28's verification ran evil.sh through each)."""
    if "\x00" in text:
        raise ScriptSyntax("holds NUL bytes (bash drops them, a reading would not)")
    if found := _CONTINUED_OPERATOR.search(text):
        raise ScriptSyntax(f"continues a line inside an operator or quoting (`{found.group(0)!r}`)")
    commands = _Commands()
    commands.posix = posix
    _Reader(text, commands, 0).read_list(closer=False)
    return Read(list(commands), commands.held)


class _Commands(list[list[str]]):
    """The commands found, shared by the readers of what the text nests; `held`: see `Read`."""

    held = False
    posix = False


class _Reader:
    def __init__(self, src: str, commands: _Commands, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ScriptSyntax(f"nests deeper than {MAX_DEPTH} levels")
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.commands = commands  # shared with the readers of what it nests
        self.depth = depth
        self.level = 0  # quotes and `${…}` open inside one another in this text

    # --- commands --------------------------------------------------------------------------------------

    def read_list(self, *, closer: bool) -> None:
        """Commands from here to the end, or (`closer`: inside `$(…)`) to the `)` that closes it."""
        src = self.src
        words: list[str] = []
        docs: list[_Doc] = []  # here-documents whose text follows this level's next newline
        parens = 0
        cond = False  # inside `[[ … ]]`: a pattern's `(…)` and `#` are bash's own there
        case: list[str] = []  # each open `case`: reading its "subject", its "in", a "pattern" or an arm's "body"

        def flush() -> None:
            if words:
                if len(self.commands) >= MAX_COMMANDS:
                    raise ScriptSyntax(f"has more than {MAX_COMMANDS:,} commands")
                self.commands.append(list(words))
                words.clear()

        while True:
            self._blanks(comments=not cond)
            if self.pos >= self.n:
                if closer:
                    raise ScriptSyntax("has an unterminated `$(`")
                flush()
                return
            c = src[self.pos]
            if c == "\n":
                self.pos += 1
                flush()
                self._documents(docs, closer=closer)
                docs = []
                continue
            if src.startswith("&>", self.pos) or (c in "<>" and not src.startswith("<<", self.pos)):
                words.append(self._word())  # a redirection (`&>log`, `2>&1`, `<in`), a word here as before
                continue
            if cond and words and words[-1] == "=~":  # `[[ $x =~ (a|#) ]]`: the pattern is one word
                words.append(self._word(pattern=True))
                continue
            if src.startswith("<<", self.pos) and not src.startswith("<<<", self.pos):
                if cond:
                    raise ScriptSyntax("has `<<` inside `[[ … ]]`")
                self._heredoc(words, docs)
                continue
            op = next((op for op in _OPERATORS if src.startswith(op, self.pos)), None) if c in _OPERATOR_CHARS else None
            if op is not None and case and case[-1] != "body":
                if case[-1] != "pattern" or op not in ("(", "|", ")"):
                    raise ScriptSyntax(f"has `{op}` where a `case` pattern belongs")
                self.pos += len(op)
                if op == ")":  # the pattern's end: its arm's commands follow
                    case[-1] = "body"
                continue
            if op in (";;", ";&", ";;&") and case:
                self.pos += len(op)
                flush()
                case[-1] = "pattern"
                continue
            if op == "(" and words and src[self.pos - 1 : self.pos] == "=" and _ASSIGNS.fullmatch(words[-1]):
                self.pos += 1
                self._array()  # `files=("$@" x)`: the elements are words, not a command
                continue
            if op is not None:
                if op == "(" and src.startswith("((", self.pos):
                    self._not_posix("`((`")
                    self._arithmetic(self.pos + 2, "`((`")  # an arithmetic command: its `<<` is a shift
                    continue
                self.pos += len(op)
                flush()
                if op == "(":
                    parens += 1
                elif op == ")":
                    if closer and parens == 0:
                        if docs:
                            raise ScriptSyntax("has a here-document in `$(…)` whose text comes after the `)`")
                        return
                    parens -= 1
                continue
            start = self.pos
            word = self._word()
            plain = src[start : self.pos] == word  # unquoted: a reserved word (`"case"` is a command's name)
            if case and case[-1] == "subject":
                case[-1] = "in"
            elif case and case[-1] == "in":
                if not (plain and word == "in"):
                    raise ScriptSyntax("has a `case` without its `in`")
                case[-1] = "pattern"
            elif case and case[-1] == "pattern":
                if plain and word == "esac":
                    case.pop()
            elif plain and not words and word == "case":
                case.append("subject")
            elif plain and not words and word == "esac" and case:
                case.pop()
            elif plain and not words and word == "[[":
                cond = True
                words.append(word)
            elif plain and word == "]]":
                cond = False
                words.append(word)
            elif plain and not words and word in RESERVED:
                pass  # (where a command starts: elsewhere `echo }` or `echo then` is an argument)
            else:
                words.append(word)

    def _array(self) -> None:
        """After `name=(`: its elements (their substitutions read), to past the `)`."""
        while True:
            self._blanks()
            if self.pos >= self.n:
                raise ScriptSyntax("has an unterminated array `(`")
            c = self.src[self.pos]
            if c == "\n":
                self.pos += 1
            elif c == ")":
                self.pos += 1
                return
            else:
                at = self.pos
                self._word()
                if self.pos == at:
                    raise ScriptSyntax(f"has `{c}` inside an array's `( … )`")

    def _blanks(self, *, comments: bool = True) -> None:
        """Spaces, tabs, continued lines and a comment (to its line's end: a backslash there continues nothing).
        Not `comments` (inside `[[ … ]]`, where bash reads some `#` as a pattern's): a `#` there is refused."""
        src, n = self.src, self.n
        while self.pos < n:
            c = src[self.pos]
            if c in " \t":
                self.pos += 1
            elif c == "\\" and src.startswith("\n", self.pos + 1):
                self.pos += 2
            elif c == "#":
                if not comments:
                    raise ScriptSyntax("has a `#` inside `[[ … ]]` (a comment, or a pattern's character)")
                end = src.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                return

    # --- words -----------------------------------------------------------------------------------------

    def _word(self, *, pattern: bool = False) -> str:
        """One word. A group `(…)` after `@ ! + * ?` (an extended glob: with `extglob`, and always in `[[ … ]]`) or
        anywhere in a `=~` pattern (`pattern`) is part of the word, its `#` and blanks too, as bash reads it."""
        src, n = self.src, self.n
        value: list[str] = []
        while self.pos < n:
            c = src[self.pos]
            if c == "(" and (pattern or (value and value[-1][-1:] in ("@", "!", "+", "*", "?") and value != ["!"])):
                at = self.pos
                self.pos += 1
                self._matched("(", ")")
                value.append(src[at : self.pos])
                continue
            if c in "<>":
                if value and not "".join(value).isdigit():
                    break  # `sh<x`, `cat<<EOF`: a redirection is a word of its own (`2>x` keeps its descriptor)
                if src.startswith("(", self.pos + 1):  # `<(…)`, `>(…)`: a command of its own
                    at = self.pos
                    self.pos += 2
                    self._nested_list()
                    value.append(src[at : self.pos])
                    continue
                if src.startswith("<<<", self.pos):  # a here-string: its word follows
                    value.append("<<<")
                    self.pos += 3
                    continue
                if value and src.startswith("<<", self.pos):
                    break  # `2<<EOF`: the here-document's operator starts
                op = next(op for op in _REDIRECTS if src.startswith(op, self.pos))  # `>>`, `2>&1`, `>|`, `<>`
                value.append(op)
                self.pos += len(op)
                continue
            if c == "&" and not value and src.startswith("&>", self.pos):
                op = "&>>" if src.startswith("&>>", self.pos) else "&>"
                value.append(op)
                self.pos += len(op)
                continue
            if c in _BREAKS:
                break
            if c == "\\":
                if src.startswith("\n", self.pos + 1):
                    self.pos += 2  # a continued line: the word goes on
                elif self.pos + 1 < n:
                    value.append(src[self.pos + 1])
                    self._held(src[self.pos + 1 : self.pos + 3])
                    self.pos += 2
                else:
                    value.append("\\")
                    self.pos += 1
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end < 0:
                    raise ScriptSyntax("has an unterminated single quote")
                value.append(src[self.pos + 1 : end])
                self._held(src[self.pos + 1 : end])
                self.pos = end + 1
            elif c == '"':
                self.pos += 1
                value.append(self._double_quoted())
            elif c == "$":
                value.append(self._dollar(quoted=False))
            elif c == "`":
                value.append(self._backtick(quoted=False))
            else:
                value.append(c)
                self.pos += 1
        return "".join(value)

    def _held(self, text: str) -> None:
        if "$(" in text or "`" in text:
            self.commands.held = True

    def _double_quoted(self) -> str:
        """From after the opening `"` to after the closing one: the text, its expansions as written."""
        src, n = self.src, self.n
        self._deeper()
        value: list[str] = []
        while True:
            if self.pos >= n:
                raise ScriptSyntax("has an unterminated double quote")
            c = src[self.pos]
            if c == '"':
                self.pos += 1
                self.level -= 1
                return "".join(value)
            if c == "\\" and self.pos + 1 < n and src[self.pos + 1] in '$`"\\\n':
                if src[self.pos + 1] != "\n":
                    value.append(src[self.pos + 1])
                self._held(src[self.pos + 1 : self.pos + 3])
                self.pos += 2
            elif c == "$":
                value.append(self._dollar(quoted=True))
            elif c == "`":
                value.append(self._backtick(quoted=True))
            else:
                value.append(c)
                self.pos += 1

    def _not_posix(self, what: str) -> None:
        if self.commands.posix:
            raise ScriptSyntax(f"uses {what}, which `sh` (dash) reads otherwise than bash")

    def _dollar(self, *, quoted: bool) -> str:
        src = self.src
        at = self.pos
        nxt = src[at + 1 : at + 2]
        if (nxt in ("'", '"') and not quoted) or nxt == "[":
            self._not_posix(f"`${nxt}`")
        if src.startswith("$((", at):
            self._arithmetic(at + 3, "`$((`")
        elif nxt == "(":
            self.pos = at + 2
            self._nested_list()
        elif nxt == "{":
            self.pos = at + 2
            self._matched("{", "}", quoted=quoted)
        elif nxt == "[":
            self.pos = at + 2
            self._matched("[", "]")
        elif nxt == "'" and not quoted:
            i = at + 2
            while i < self.n and src[i] != "'":
                i += 2 if src[i] == "\\" else 1
            if i >= self.n:
                raise ScriptSyntax("has an unterminated $'…'")
            self.pos = i + 1
        elif nxt == '"' and not quoted:
            self.pos = at + 2
            self._double_quoted()
        else:
            self.pos = at + 1
            return "$"
        return src[at : self.pos]

    def _backtick(self, *, quoted: bool) -> str:
        """`` `…` ``: its text unescaped as bash does, read as commands of its own."""
        src = self.src
        at = self.pos
        found = backtick_text(src, at, quoted=quoted)
        if found is None:
            raise ScriptSyntax("has an unterminated backtick")
        inner, self.pos = found
        _Reader(inner, self.commands, self.depth + self.level + 1).read_list(closer=False)
        return src[at : self.pos]

    def _nested_list(self) -> None:
        """After `$(` (or `<(`): its commands, up to and past the `)` that closes it."""
        inner = _Reader(self.src, self.commands, self.depth + self.level + 1)
        inner.pos = self.pos
        inner.read_list(closer=True)
        self.pos = inner.pos

    def _matched(self, opener: str, closer: str, *, quoted: bool = False) -> None:
        """After `${` (or `$[`): to past the `}` that closes it, counting nested braces, skipping quotes (bash
        matches them inside, in double quotes too: `"${x:+'}'}"`), reading the substitutions in it."""
        src, n = self.src, self.n
        self._deeper()
        level = 1
        while self.pos < n:
            c = src[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == "'":
                if quoted:
                    self._not_posix("a single quote inside a double-quoted `${…}`")
                end = src.find("'", self.pos + 1)
                if end < 0:
                    raise ScriptSyntax("has an unterminated single quote")
                # in a double-quoted `${…}` bash keeps them as text and runs a `$(…)` between them: read it
                inner = _Reader(src[self.pos + 1 : end], self.commands, self.depth + self.level + 1)
                inner.expanding_text()
                self.pos = end + 1
            elif c == '"':
                self.pos += 1
                self._double_quoted()
            elif c == "`":
                self._backtick(quoted=False)
            elif c == "$" and src[self.pos + 1 : self.pos + 2] in ("(", "{", "[", "'"):
                self._dollar(quoted=False)
            else:
                level += (c == opener) - (c == closer)
                self.pos += 1
                if not level:
                    self.level -= 1
                    return
        raise ScriptSyntax(f"has an unterminated `{opener}`")

    def _deeper(self) -> None:
        self.level += 1
        if self.depth + self.level > MAX_DEPTH:
            raise ScriptSyntax(f"nests deeper than {MAX_DEPTH} levels")

    def _arithmetic(self, start: int, what: str) -> None:
        """`$((…))` / `((…))` from `start` (after both parentheses): to past the `))`; what it runs is only what
        its substitutions do. bash reads `$((…) )` (no `))`) as a subshell instead: not followed here."""
        self.pos = start
        self._matched("(", ")")
        if not self.src.startswith(")", self.pos):
            raise ScriptSyntax(f"has a {what} that is not arithmetic (a subshell bash would read otherwise)")
        self.pos += 1

    # --- here-documents ----------------------------------------------------------------------------------

    def _heredoc(self, words: list[str], docs: list[_Doc]) -> None:
        src = self.src
        strip = src.startswith("<<-", self.pos)
        self.pos += 3 if strip else 2
        while self.pos < self.n and src[self.pos] in " \t":
            self.pos += 1
        start = self.pos
        if self.pos >= self.n or src[self.pos] in _BREAKS or src[self.pos] in "<>":
            raise ScriptSyntax("has a here-document without a delimiter")
        delimiter = self._word()
        raw = src[start : self.pos].replace("\\\n", "")  # (a continued line is not quoting: `<<\⏎EOF` expands)
        if "$'" in raw or '$"' in raw:
            raise ScriptSyntax("has a here-document delimiter written with $'…' or $\"…\"")
        if len(docs) >= MAX_DOCUMENTS:
            raise ScriptSyntax(f"starts more than {MAX_DOCUMENTS} here-documents on one line")
        words += ["<<-" if strip else "<<", delimiter]
        docs.append(_Doc(delimiter, strip, expands=not any(q in raw for q in "'\"\\")))

    def _documents(self, docs: list[_Doc], *, closer: bool) -> None:
        """The here-documents' text, right after the newline that ends their command's line: each to its
        delimiter line exactly as bash matches it (no blanks stripped; `<<-` strips leading tabs; in one that
        expands, a line ending in a backslash joins the next first). An expanding one's substitutions run."""
        for doc in docs:
            body: list[str] = []
            while self.pos < self.n:
                parts = [self._line()]
                while doc.expands and continues(parts[-1]) and self.pos < self.n:
                    parts[-1] = parts[-1][:-1]  # (joined once: a line of 1 MiB of `a\⏎` stays linear)
                    parts.append(self._line())
                line = "".join(parts)
                if line == doc.delimiter or (doc.strip_tabs and line.lstrip("\t") == doc.delimiter):
                    break
                stripped = line.lstrip("\t") if doc.strip_tabs else line
                if (
                    closer
                    and stripped.startswith(doc.delimiter)
                    and stripped[len(doc.delimiter) :].lstrip(" \t")[:1] == ")"
                ):
                    raise ScriptSyntax("has a here-document in `$(…)` that ends on its closing line")
                body.append(line)
            if not doc.expands:
                self._held("\n".join(body))
            if doc.expands:
                _Reader("\n".join(body), self.commands, self.depth + self.level + 1).expanding_text()

    def _line(self) -> str:
        line, self.pos = next_line(self.src, self.pos)
        return line

    def expanding_text(self) -> None:
        """A text bash expands without splitting it into commands (a here-document's): its substitutions."""
        src, n = self.src, self.n
        while self.pos < n:
            c = src[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == "$":
                self._dollar(quoted=True)
            elif c == "`":
                self._backtick(quoted=False)  # (a here-document's backslash quotes no `"`: bash keeps `\"` there)
            else:
                self.pos += 1
