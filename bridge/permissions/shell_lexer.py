"""How the shell parser reads its text: tokens (operators, newlines, words) and words (quoting, expansions,
substitutions), and the here-documents after a line. One pass, linear in the text; what it does not model raises
`ShellSyntaxError`. The grammar over the tokens is shellparse.py's (`Parser`, which also reads what a substitution
holds: it is a command list).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Literal

from bridge.permissions.shell_syntax import EXPANDED, MAX_DEPTH, MAX_WORDS, QUOTED, Script, ShellSyntaxError, Word

_SPECIALS = frozenset("@*#?$!-0123456789")
_NAME_START = re.compile(r"[A-Za-z_]")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_SIMPLE_BRACED = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_METACHARS = frozenset(" \t\n;&|()<>")
_OPERATORS = (
    "&>>",
    ";;&",
    "<<-",
    "<<<",
    "&&",
    "||",
    "|&",
    ";;",
    ";&",
    ">>",
    ">|",
    "<>",
    "<<",
    "<&",
    ">&",
    "&>",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
)
_BY_FIRST: dict[str, tuple[str, ...]] = {c: tuple(op for op in _OPERATORS if op[0] == c) for c in ";&|()<>"}
_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>\\'\"$`]+")
_HEREDOC_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Token:
    kind: Literal["word", "op", "newline", "eof"]
    start: int
    end: int
    op: str = ""
    word: Word | None = None
    fd: bool = False  # digits right before a redirection (`2>`)


@dataclass
class Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool
    owner: int | None = None  # the index of its command in `Script.commands`, once that is added


class Lexer:
    def __init__(
        self, source: str, script: Script, depth: int, substituted: bool, span: tuple[int, int] | None = None
    ) -> None:
        self.src = source
        self.span = span  # every command's span, when this text is a part of another (a backtick's)
        self.last_end = 0  # where the last token taken ends
        self.expanded: list[str] = []  # variables expanded since the last command was added
        self.n = len(source)
        self.pos = 0
        self.script = script
        self.depth = depth
        self.substituted = substituted
        self.peeked: Token | None = None
        self.heredocs: list[Heredoc] = []

    # --- tokens --------------------------------------------------------------------------------------

    def _skip_blanks(self) -> None:
        src, n = self.src, self.n
        while self.pos < n:
            c = src[self.pos]
            if c in " \t":
                self.pos += 1
            elif c == "\\" and self.pos + 1 < n and src[self.pos + 1] == "\n":
                self.pos += 2
            elif c == "#":
                end = src.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                return

    def peek(self) -> Token:
        if self.peeked is None:
            self.peeked = self._next()
        return self.peeked

    def take(self) -> Token:
        token = self.peek()
        self.peeked = None
        if token.kind != "eof":
            self.last_end = token.end
        return token

    def _next(self) -> Token:
        self._skip_blanks()
        start = self.pos
        if start >= self.n:
            return Token("eof", start, start)
        c = self.src[start]
        if c == "\n":
            self.pos += 1
            self._read_heredocs()
            return Token("newline", start, self.pos)
        if c in "<>" and self.src.startswith("(", start + 1):
            return self._word_token()
        ops = _BY_FIRST.get(c)
        if ops is not None:
            for op in ops:
                if self.src.startswith(op, start):
                    self.pos += len(op)
                    return Token("op", start, self.pos, op=op)
        return self._word_token()

    def _word_token(self) -> Token:
        start = self.pos
        word = self._word()
        token = Token("word", start, self.pos, word=word)
        if word.text.isdigit() and self.pos < self.n and self.src[self.pos] in "<>":
            token.fd = True
        elif word.text.startswith("{") and word.text.endswith("}") and self.pos < self.n and self.src[self.pos] in "<>":
            raise ShellSyntaxError("uses a named file descriptor ({var}>…)")
        return token

    # --- words ---------------------------------------------------------------------------------------

    def _word(self) -> Word:
        src, n = self.src, self.n
        start = self.pos
        value: list[str] = []
        shape: list[str] = []
        pattern: list[str] = []
        why: list[str] = []
        pipe_parts = 0
        self.script.words += 1
        if self.script.words > MAX_WORDS:
            raise ShellSyntaxError(f"has more than {MAX_WORDS:,} words (MAX_WORDS), too many to check")
        while self.pos < n:
            run = _PLAIN_RUN.match(src, self.pos)
            if run is not None:
                chunk = run.group()
                value.append(chunk)
                shape.append(chunk)
                pattern.append(chunk)
                self.pos = run.end()
                continue
            c = src[self.pos]
            if c in "<>" and self.pos + 1 < n and src[self.pos + 1] == "(":
                at = self.pos
                self.pos += 2
                self._substitution(")")
                value.append(src[at : self.pos])
                shape.append(EXPANDED)
                why.append("uses a process substitution")
                pipe_parts += 1
                continue
            if c in _METACHARS:
                break
            if c == "\\":
                if self.pos + 1 >= n:
                    value.append("\\")
                    shape.append("\\")
                    pattern.append("\\\\")
                    self.pos += 1
                elif src[self.pos + 1] == "\n":
                    self.pos += 2
                else:
                    ch = src[self.pos + 1]
                    value.append(ch)
                    shape.append(QUOTED)
                    pattern.append(_escape_glob(ch))
                    self.pos += 2
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end < 0:
                    raise ShellSyntaxError("has an unterminated single quote")
                body = src[self.pos + 1 : end]
                value.append(body)
                shape.append(QUOTED * len(body))
                pattern.append(_escape_glob(body))
                self.pos = end + 1
            elif c == '"':
                self.pos += 1
                self._double_quoted(value, shape, pattern, why)
            elif c == "$":
                self._dollar(value, shape, pattern, why, quoted=False)
            elif c == "`":
                self._backtick(value, shape, why)
            else:
                value.append(c)
                shape.append(c)
                pattern.append(c)
                self.pos += 1
        text = src[start : self.pos]
        joined_shape = "".join(shape)
        joined_value = "".join(value)
        reason = why[0] if why else None
        glob = None
        if reason is None:
            reason = _brace_or_tilde_problem(joined_shape, joined_value)
        if reason is None and _has_glob(joined_shape):
            glob = "".join(pattern)
        tilde = joined_shape.startswith("~") and (len(joined_shape) == 1 or joined_shape[1] == "/")
        pipe = pipe_parts == 1 and len(joined_shape) == 1
        return Word(text, joined_value, reason, glob, tilde and reason is None, pipe)

    def _double_quoted(self, value: list[str], shape: list[str], pattern: list[str], why: list[str]) -> None:
        src, n = self.src, self.n
        while True:
            if self.pos >= n:
                raise ShellSyntaxError("has an unterminated double quote")
            c = src[self.pos]
            if c == '"':
                self.pos += 1
                return
            if c == "\\" and self.pos + 1 < n and src[self.pos + 1] in '$`"\\\n':
                if src[self.pos + 1] != "\n":
                    value.append(src[self.pos + 1])
                    shape.append(QUOTED)
                    pattern.append(_escape_glob(src[self.pos + 1]))
                self.pos += 2
            elif c == "$":
                self._dollar(value, shape, pattern, why, quoted=True)
            elif c == "`":
                self._backtick(value, shape, why, quoted=True)
            else:
                value.append(c)
                shape.append(QUOTED)
                pattern.append(_escape_glob(c))
                self.pos += 1

    def _dollar(self, value: list[str], shape: list[str], pattern: list[str], why: list[str], *, quoted: bool) -> None:
        src, n = self.src, self.n
        at = self.pos
        nxt = src[at + 1] if at + 1 < n else ""
        if nxt == "(":
            if src.startswith("((", at + 1):
                raise ShellSyntaxError("uses arithmetic expansion $((…)) (it can run commands through variables)")
            self.pos = at + 2
            self._substitution(")")
            why.append("uses a command substitution $(…)")
        elif nxt == "[":
            raise ShellSyntaxError("uses arithmetic expansion $[…]")
        elif nxt == "{":
            end = src.find("}", at + 2)
            if end < 0:
                raise ShellSyntaxError("has an unterminated ${")
            inner = src[at + 2 : end]
            if not _SIMPLE_BRACED.fullmatch(inner):
                raise ShellSyntaxError(
                    "uses a parameter expansion with operators or subscripts (it can run or hide commands)"
                )
            self.pos = end + 1
            why.append(f"expands ${{{inner}}}")
            if _NAME_START.match(inner.lstrip("#")):
                self.expanded.append(inner.lstrip("#"))
        elif nxt == "'" and not quoted:
            i = at + 2
            while i < n and src[i] != "'":
                i += 2 if src[i] == "\\" else 1
            if i >= n:
                raise ShellSyntaxError("has an unterminated $'…'")
            self.pos = i + 1
            why.append("uses $'…' quoting")
        elif nxt == '"' and not quoted:
            self.pos = at + 2
            inner_why: list[str] = []
            self._double_quoted([], [], [], inner_why)
            why.append('uses $"…" quoting')
        elif nxt and (nxt in _SPECIALS or _NAME_START.match(nxt)):
            i = at + 2
            if _NAME_START.match(nxt):
                while i < n and (src[i].isalnum() or src[i] == "_") and src[i].isascii():
                    i += 1
            self.pos = i
            why.append(f"expands {src[at:i]}")
            if _NAME_START.match(nxt):
                self.expanded.append(src[at + 1 : i])
        else:
            value.append("$")
            shape.append(QUOTED if quoted else "$")
            pattern.append("$")
            self.pos = at + 1
            return
        value.append(src[at : self.pos])
        shape.append(EXPANDED)

    def _backtick(self, value: list[str], shape: list[str], why: list[str], *, quoted: bool = False) -> None:
        src = self.src
        at = self.pos
        found = backtick_text(src, at, quoted=quoted)
        if found is None:
            raise ShellSyntaxError("has an unterminated backtick")
        inner, self.pos = found
        self._nested(inner, self.span or (at, self.pos))
        value.append(src[at : self.pos])
        shape.append(EXPANDED)
        why.append("uses a command substitution `…`")

    def _substitution(self, closer: str) -> None:
        """The commands of `$(…)` / `<(…)` / `>(…)`, read up to the matching `)`: the parser's (a command list)."""
        raise NotImplementedError

    def _nested(self, text: str, span: tuple[int, int]) -> None:
        """The commands of a backtick's text (unquoted), each with `span`: the parser's."""
        raise NotImplementedError

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ShellSyntaxError(f"nests deeper than {MAX_DEPTH} levels")

    # --- here-documents --------------------------------------------------------------------------------

    def _heredoc_line(self) -> str:
        line, self.pos = next_line(self.src, self.pos)
        return line

    def _read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for doc in pending:
            while True:
                if self.pos >= self.n:
                    break  # bash accepts a here-document that runs to the end of the text
                line = self._heredoc_line()
                # in a document that expands, bash joins a line ending in an unescaped backslash with the next
                # before it looks for the delimiter or a substitution (`EO\⏎F` ends it, `$\⏎(…)` runs)
                while doc.expands and continues(line) and self.pos < self.n:
                    line = line[:-1] + self._heredoc_line()
                # `<<-`: bash matches the line as it is, then with its leading tabs stripped
                if line == doc.delimiter or (doc.strip_tabs and line.lstrip("\t") == doc.delimiter):
                    break
                stripped = line.lstrip("\t") if doc.strip_tabs else line
                rest = stripped[len(doc.delimiter) :] if stripped.startswith(doc.delimiter) else ""
                if self.substituted and rest.lstrip(" \t").startswith(")"):
                    # inside `$(…)` bash ends the document at `EOF)`, and runs the rest of that line
                    raise ShellSyntaxError("has a here-document in a substitution that ends on its closing line")
                if doc.expands and ("`" in line or "$(" in line or "${" in line or "$[" in line):
                    raise ShellSyntaxError("has a here-document that expands `$(…)`, `${…}` or backticks")
                if doc.expands and "$" in line:
                    names = _HEREDOC_VARIABLE.findall(line)
                    if doc.owner is None:  # read while its command is being finished
                        self.expanded.extend(names)
                    else:
                        owner = self.script.commands[doc.owner]
                        self.script.commands[doc.owner] = dataclasses.replace(owner, expands=(*owner.expands, *names))


def next_line(src: str, pos: int) -> tuple[str, int]:
    """The line from `pos` (without its newline) and where the next one starts: a here-document's text is read so."""
    end = src.find("\n", pos)
    end = len(src) if end < 0 else end
    return src[pos:end], min(end + 1, len(src))


def backtick_text(src: str, at: int, *, quoted: bool) -> tuple[str, int] | None:
    """The text of the backtick substitution at `at`, unescaped as bash does, and where it ends; None when it is
    not closed. A backslash quotes `$`, a backtick and itself; in double quotes `"` too (bash drops it there)."""
    n = len(src)
    i = at + 1
    inner: list[str] = []
    escaped = '$`\\"' if quoted else "$`\\"
    while i < n and src[i] != "`":
        if src[i] == "\\" and i + 1 < n:
            inner.append(src[i + 1] if src[i + 1] in escaped else src[i : i + 2])
            i += 2
        else:
            inner.append(src[i])
            i += 1
    return None if i >= n else ("".join(inner), i + 1)


def continues(line: str) -> bool:
    """Whether a line ends in a backslash that escapes its newline (an odd run of them)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _escape_glob(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _has_glob(shape: str) -> bool:
    if "*" in shape or "?" in shape:
        return True
    at = shape.find("[")
    return at >= 0 and shape.find("]", at + 1) > 0


def _brace_or_tilde_problem(shape: str, value: str) -> str | None:
    open_at = shape.find("{")
    close_at = shape.rfind("}")
    if 0 <= open_at < close_at:
        between = shape[open_at + 1 : close_at]
        if "," in between or ".." in between:
            return "uses brace expansion {…}"
    if shape.startswith("~"):
        head = shape[1:].split("/", 1)[0]
        if head:
            return "uses a tilde form bash expands (~user, ~+, ~-)"
    if ASSIGNMENT.match(shape) and ("=~" in shape or ":~" in shape):
        return "uses a tilde in an assignment"
    return None
