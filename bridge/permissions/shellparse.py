"""A bash parser for the permission checks: one pass over the text, closed world, bounded.

It reads what `bash -c` would run and returns every simple command in it — including those inside
`$(…)`, backticks, `<(…)`, subshells, groups, `if`/`for`/`while` bodies — each with its words and
redirections. A word knows whether its value is fixed before the command runs (`static`), and if not,
why (`$x`, `$(…)`, `$'…'`, a brace or tilde form bash would expand). Globs are kept as patterns.

Anything it does not model (functions, `case`, `[[`, `((`, arithmetic, parameter operators, array
subscripts, expanding here-documents) raises `ShellSyntaxError`: the caller then knows nothing, and
fails closed. Time is linear in the length of the text; nesting is bounded by `MAX_DEPTH`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Literal

MAX_DEPTH = 64
_SPECIALS = frozenset("@*#?$!-0123456789")
_NAME_START = re.compile(r"[A-Za-z_]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_ARRAY_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^=]*\]\+?=")
_SIMPLE_BRACED = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_METACHARS = frozenset(" \t\n;&|()<>")
_OPERATORS = ("&>>", ";;&", "<<-", "<<<", "&&", "||", "|&", ";;", ";&", ">>", ">|", "<>", "<<", "<&", ">&", "&>",
              ";", "&", "|", "(", ")", "<", ">")
_BY_FIRST: dict[str, tuple[str, ...]] = {c: tuple(op for op in _OPERATORS if op[0] == c) for c in ";&|()<>"}
_PLAIN_RUN = re.compile(r"[^ \t\n;&|()<>\\'\"$`]+")
MAX_WORDS = 10_000  # words of every command together: past this the text is too complex to check in time
_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<<", "<<-", "<<<", "<&", ">&", "&>", "&>>"})
_WRITES = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
_UNSUPPORTED_WORDS = {
    "case": "uses `case` (not modelled by the checker)",
    "select": "uses `select`",
    "coproc": "uses `coproc`",
    "function": "defines a shell function (it could shadow any command)",
    "[[": "uses `[[ … ]]` (not modelled by the checker)",
}
_HEREDOC_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_STRAY_WORDS = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "in", "]]"})
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


@dataclass
class _Token:
    kind: Literal["word", "op", "newline", "eof"]
    start: int
    end: int
    op: str = ""
    word: Word | None = None
    fd: bool = False  # digits right before a redirection (`2>`)


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    expands: bool
    owner: int | None = None  # the index of its command in `Script.commands`, once that is added


class _Parser:
    def __init__(self, source: str, script: Script, depth: int, substituted: bool,
                 span: tuple[int, int] | None = None) -> None:
        self.src = source
        self.span = span  # every command's span, when this text is a part of another (a backtick's)
        self.last_end = 0  # where the last token taken ends
        self.expanded: list[str] = []  # variables expanded since the last command was added
        self.n = len(source)
        self.pos = 0
        self.script = script
        self.depth = depth
        self.substituted = substituted
        self.peeked: _Token | None = None
        self.heredocs: list[_Heredoc] = []

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

    def peek(self) -> _Token:
        if self.peeked is None:
            self.peeked = self._next()
        return self.peeked

    def take(self) -> _Token:
        token = self.peek()
        self.peeked = None
        if token.kind != "eof":
            self.last_end = token.end
        return token

    def _next(self) -> _Token:
        self._skip_blanks()
        start = self.pos
        if start >= self.n:
            return _Token("eof", start, start)
        c = self.src[start]
        if c == "\n":
            self.pos += 1
            self._read_heredocs()
            return _Token("newline", start, self.pos)
        if c in "<>" and self.src.startswith("(", start + 1):
            return self._word_token()
        ops = _BY_FIRST.get(c)
        if ops is not None:
            for op in ops:
                if self.src.startswith(op, start):
                    self.pos += len(op)
                    return _Token("op", start, self.pos, op=op)
        return self._word_token()

    def _word_token(self) -> _Token:
        start = self.pos
        word = self._word()
        token = _Token("word", start, self.pos, word=word)
        if word.text.isdigit() and self.pos < self.n and self.src[self.pos] in "<>":
            token.fd = True
        elif (word.text.startswith("{") and word.text.endswith("}") and self.pos < self.n
              and self.src[self.pos] in "<>"):
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
                value.append(src[at:self.pos])
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
                body = src[self.pos + 1:end]
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
        text = src[start:self.pos]
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
                self._backtick(value, shape, why)
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
            inner = src[at + 2:end]
            if not _SIMPLE_BRACED.fullmatch(inner):
                raise ShellSyntaxError("uses a parameter expansion with operators or subscripts "
                                       "(it can run or hide commands)")
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
            why.append("uses $\"…\" quoting")
        elif nxt and (nxt in _SPECIALS or _NAME_START.match(nxt)):
            i = at + 2
            if _NAME_START.match(nxt):
                while i < n and (src[i].isalnum() or src[i] == "_") and src[i].isascii():
                    i += 1
            self.pos = i
            why.append(f"expands {src[at:i]}")
            if _NAME_START.match(nxt):
                self.expanded.append(src[at + 1:i])
        else:
            value.append("$")
            shape.append(QUOTED if quoted else "$")
            pattern.append("$")
            self.pos = at + 1
            return
        value.append(src[at:self.pos])
        shape.append(EXPANDED)

    def _backtick(self, value: list[str], shape: list[str], why: list[str]) -> None:
        src, n = self.src, self.n
        at = self.pos
        i = at + 1
        inner: list[str] = []
        while i < n and src[i] != "`":
            if src[i] == "\\" and i + 1 < n:
                inner.append(src[i + 1] if src[i + 1] in "$`\\" else src[i:i + 2])
                i += 2
            else:
                inner.append(src[i])
                i += 1
        if i >= n:
            raise ShellSyntaxError("has an unterminated backtick")
        self.pos = i + 1
        parse_into("".join(inner), self.script, self.depth + 1, substituted=True, span=self.span or (at, self.pos))
        value.append(src[at:self.pos])
        shape.append(EXPANDED)
        why.append("uses a command substitution `…`")

    def _substitution(self, closer: str) -> None:
        """The commands of `$(…)` / `<(…)` / `>(…)`, read from here up to the matching `)`."""
        self._enter()
        saved, expanded = self.substituted, self.expanded
        self.substituted, self.expanded = True, []
        self._list(stop_ops={closer}, stop_words=frozenset())
        token = self.take()
        if token.kind != "op" or token.op != closer:
            raise ShellSyntaxError(f"has an unterminated substitution (expected `{closer}`)")
        self.substituted, self.expanded = saved, expanded
        self.depth -= 1

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ShellSyntaxError(f"nests deeper than {MAX_DEPTH} levels")

    # --- here-documents --------------------------------------------------------------------------------

    def _read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for doc in pending:
            while True:
                if self.pos >= self.n:
                    break  # bash accepts a here-document that runs to the end of the text
                end = self.src.find("\n", self.pos)
                end = self.n if end < 0 else end
                line = self.src[self.pos:end]
                self.pos = min(end + 1, self.n)
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    break
                if doc.expands and ("`" in line or "$(" in line or "${" in line or "$[" in line):
                    raise ShellSyntaxError("has a here-document that expands `$(…)`, `${…}` or backticks")
                if doc.expands and "$" in line:
                    names = _HEREDOC_VARIABLE.findall(line)
                    if doc.owner is None:  # read while its command is being finished
                        self.expanded.extend(names)
                    else:
                        owner = self.script.commands[doc.owner]
                        self.script.commands[doc.owner] = dataclasses.replace(owner,
                                                                              expands=(*owner.expands, *names))

    # --- grammar ---------------------------------------------------------------------------------------

    def parse(self) -> None:
        self._list(stop_ops=frozenset(), stop_words=frozenset())
        token = self.peek()
        if token.kind != "eof":
            raise ShellSyntaxError(f"has an unexpected `{self.src[token.start:token.end]}`")
        if self.heredocs:
            self._read_heredocs()

    def _list(self, *, stop_ops: set[str] | frozenset[str], stop_words: frozenset[str]) -> None:
        while True:
            token = self.peek()
            while token.kind == "newline":
                self.take()
                token = self.peek()
            if token.kind == "eof" or self._stops(token, stop_ops, stop_words):
                return
            self._and_or()
            token = self.peek()
            if token.kind == "op" and token.op in (";", "&"):
                self.take()
                if token.op == "&":
                    self.script.background = True
            elif token.kind == "newline":
                self.take()
            elif token.kind == "eof" or self._stops(token, stop_ops, stop_words):
                return
            else:
                raise ShellSyntaxError(f"has an unexpected `{self.src[token.start:token.end]}`")

    @staticmethod
    def _stops(token: _Token, stop_ops: set[str] | frozenset[str], stop_words: frozenset[str]) -> bool:
        if token.kind == "op":
            return token.op in stop_ops
        return token.kind == "word" and token.word is not None and token.word.plain and token.word.text in stop_words

    def _and_or(self) -> None:
        self._pipeline()
        while True:
            token = self.peek()
            if token.kind == "op" and token.op in ("&&", "||"):
                self.take()
                self._skip_newlines()
                self._pipeline()
            else:
                return

    def _skip_newlines(self) -> None:
        while self.peek().kind == "newline":
            self.take()

    def _pipeline(self) -> None:
        while self._reserved(self.peek()) in ("!", "time"):
            word = self.take().word
            if word is not None and word.text == "time":
                while self._reserved(self.peek()) in ("-p", "--"):
                    self.take()
        self._command()
        while True:
            token = self.peek()
            if token.kind == "op" and token.op in ("|", "|&"):
                self.take()
                self._skip_newlines()
                self._command()
            else:
                return

    @staticmethod
    def _reserved(token: _Token) -> str | None:
        if token.kind == "word" and token.word is not None and token.word.plain:
            return token.word.text
        return None

    def _expect_word(self, word: str) -> None:
        token = self.take()
        if self._reserved(token) != word:
            raise ShellSyntaxError(f"expected `{word}`")

    def _command(self) -> None:
        token = self.peek()
        if token.kind == "op" and token.op == "(":
            if self.src.startswith("((", token.start):
                raise ShellSyntaxError("uses an arithmetic command ((…))")
            self.take()
            self._enter()
            self._list(stop_ops={")"}, stop_words=frozenset())
            if self.take().op != ")":
                raise ShellSyntaxError("has an unterminated subshell")
            self.depth -= 1
            self._compound_redirects(token.start)
            return
        word = self._reserved(token)
        if word in _UNSUPPORTED_WORDS:
            raise ShellSyntaxError(_UNSUPPORTED_WORDS[word])
        if word in _STRAY_WORDS:
            raise ShellSyntaxError(f"has an unexpected `{word}`")
        if word == "{":
            self.take()
            self._block(frozenset({"}"}))
            self._expect_word("}")
        elif word == "if":
            self.take()
            self._block(frozenset({"then"}))
            self._expect_word("then")
            self._block(frozenset({"elif", "else", "fi"}))
            while (self._reserved(self.peek())) == "elif":
                self.take()
                self._block(frozenset({"then"}))
                self._expect_word("then")
                self._block(frozenset({"elif", "else", "fi"}))
            if self._reserved(self.peek()) == "else":
                self.take()
                self._block(frozenset({"fi"}))
            self._expect_word("fi")
        elif word in ("while", "until"):
            self.take()
            self._block(frozenset({"do"}))
            self._do_done()
        elif word == "for":
            self.take()
            self._for()
        else:
            self._simple()
            return
        self._compound_redirects(token.start)

    def _block(self, stop_words: frozenset[str]) -> None:
        self._enter()
        self._list(stop_ops=frozenset({")"}), stop_words=stop_words)
        self.depth -= 1

    def _do_done(self) -> None:
        self._skip_newlines()
        self._expect_word("do")
        self._block(frozenset({"done"}))
        self._expect_word("done")

    def _for(self) -> None:
        name = self.take()
        if name.kind == "op" and name.op == "(":
            raise ShellSyntaxError("uses an arithmetic for loop")
        if name.word is None or not name.word.plain or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.word.text):
            raise ShellSyntaxError("has a for loop without a variable name")
        self.script.assigned.add(name.word.text)
        self._skip_newlines()
        if self._reserved(self.peek()) == "in":
            self.take()
            words: list[Word] = []
            while self.peek().kind == "word":
                token = self.take()
                assert token.word is not None
                words.append(token.word)
            # the list's words are expanded like a command's arguments: an `echo` stands for that
            self._add(Command((Word("echo", "echo"), *words), text=self.src[name.start:self.last_end]), name.start)
            token = self.peek()
            if token.kind == "op" and token.op == ";":
                self.take()
        elif self.peek().kind == "op" and self.peek().op == ";":
            self.take()
        self._do_done()

    def _compound_redirects(self, start: int) -> None:
        redirects: list[Redirect] = []
        while True:
            token = self.peek()
            if token.kind == "op" and token.op in _REDIRECTS:
                redirects.append(self._redirect(self.take()))
            elif token.kind == "word" and token.fd:
                self.take()
                redirects.append(self._redirect(self.take()))
            else:
                break
        if redirects:  # a group's redirection applies to everything inside: judged as a command of its own
            self._add(Command((), redirects=tuple(redirects), text=self.src[start:self.last_end]), start)

    def _simple(self) -> None:
        start = self.peek().start
        words: list[Word] = []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            token = self.peek()
            if token.kind == "word":
                assert token.word is not None
                self.take()
                if token.fd:
                    redirects.append(self._redirect(self.take()))
                    continue
                word = token.word
                if not words and _ARRAY_ELEMENT.match(word.text):
                    raise ShellSyntaxError("assigns an array element (its subscript can run commands)")
                if not words and _is_assignment(word):
                    if self.pos < self.n and self.src[self.pos] == "(" and word.text.endswith("="):
                        raise ShellSyntaxError("assigns an array")
                    if "[" in word.text.split("=", 1)[0]:
                        raise ShellSyntaxError("assigns an array element (its subscript can run commands)")
                    assignments.append(word)
                    self.script.assigned.add(re.split(r"\+?=", word.text, maxsplit=1)[0])
                    continue
                words.append(word)
                continue
            if token.kind == "op" and token.op in _REDIRECTS:
                redirects.append(self._redirect(self.take()))
                continue
            if token.kind == "op" and token.op == "(" and len(words) == 1 and not assignments:
                raise ShellSyntaxError("defines a shell function (it could shadow any command)")
            break
        if not words and not assignments and not redirects:
            token = self.peek()
            raise ShellSyntaxError(f"has an unexpected `{self.src[token.start:token.end] or 'end of input'}`")
        self._add(Command(tuple(words), tuple(assignments), tuple(redirects), self.src[start:self.last_end]), start)

    def _redirect(self, token: _Token) -> Redirect:
        op = token.op
        if token.kind != "op" or op not in _REDIRECTS:
            raise ShellSyntaxError("has a file descriptor without a redirection")
        target_token = self.take()
        if target_token.kind != "word" or target_token.word is None:
            raise ShellSyntaxError(f"has `{op}` without a target")
        target = target_token.word
        if op in ("<<", "<<-"):
            delimiter = target.value
            self.heredocs.append(_Heredoc(delimiter, op == "<<-", expands=target.text == target.value))
            return Redirect(op, "none")
        if op == "<<<":
            return Redirect(op, "none", target)
        if op in ("<&", ">&"):
            if target.static and re.fullmatch(r"[0-9]*-?", target.value) and target.value:
                return Redirect(op, "none", target)
            if op == "<&":
                raise ShellSyntaxError("duplicates a file descriptor computed at run time")
            return Redirect(op, "write", target)
        return Redirect(op, "write" if op in _WRITES else "read", target)

    def _add(self, command: Command, start: int) -> None:
        """Add a command that starts at `start` and ends with the last token taken; it owns the variables
        expanded since the last one and the here-documents declared and not yet owned."""
        text = command.text if len(command.text) <= 300 else command.text[:299] + "…"
        span = self.span or (start, max(start, self.last_end))
        expands, self.expanded = tuple(self.expanded), []
        for doc in self.heredocs:
            if doc.owner is None:
                doc.owner = len(self.script.commands)
        self.script.commands.append(dataclasses.replace(command, text=text, substituted=self.substituted,
                                                        span=span, expands=expands))


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
        between = shape[open_at + 1:close_at]
        if "," in between or ".." in between:
            return "uses brace expansion {…}"
    if shape.startswith("~"):
        head = shape[1:].split("/", 1)[0]
        if head:
            return "uses a tilde form bash expands (~user, ~+, ~-)"
    if _ASSIGNMENT.match(shape) and ("=~" in shape or ":~" in shape):
        return "uses a tilde in an assignment"
    return None


def _is_assignment(word: Word) -> bool:
    match = _ASSIGNMENT.match(word.text)
    return match is not None and word.text[:match.end()] == word.value[:match.end()]


def parse_into(source: str, script: Script, depth: int = 0, *, substituted: bool = False,
               span: tuple[int, int] | None = None) -> None:
    """`span`: the text is a part of another (a backtick's), every command of it gets this span of that one."""
    if depth > MAX_DEPTH:
        raise ShellSyntaxError(f"nests deeper than {MAX_DEPTH} levels")
    _Parser(source, script, depth, substituted, span).parse()


def parse(source: str) -> Script:
    """Every simple command of `source`. Raises ShellSyntaxError."""
    script = Script()
    parse_into(source, script)
    return script
