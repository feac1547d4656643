"""A bash parser for the permission checks: one pass over the text, closed world, bounded.

It reads what `bash -c` would run and returns every simple command in it — including those inside
`$(…)`, backticks, `<(…)`, subshells, groups, `if`/`for`/`while` bodies — each with its words and
redirections. A word knows whether its value is fixed before the command runs (`static`), and if not,
why (`$x`, `$(…)`, `$'…'`, a brace or tilde form bash would expand). Globs are kept as patterns.

Anything it does not model (functions, `case`, `[[`, `((`, arithmetic, parameter operators, array
subscripts, expanding here-documents) raises `ShellSyntaxError`: the caller then knows nothing, and
fails closed. Time is linear in the length of the text; nesting is bounded by `MAX_DEPTH`. This module is the
grammar; shell_lexer.py reads the tokens and words, shell_syntax.py holds what comes out.
"""

from __future__ import annotations

import dataclasses
import re

from bridge.permissions.shell_lexer import ASSIGNMENT, Heredoc, Lexer, Token
from bridge.permissions.shell_syntax import MAX_DEPTH, Command, Redirect, Script, ShellSyntaxError, Word

_ARRAY_ELEMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^=]*\]\+?=")
_REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<<", "<<-", "<<<", "<&", ">&", "&>", "&>>"})
_WRITES = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
_UNSUPPORTED_WORDS = {
    "case": "uses `case` (not modelled by the checker)",
    "select": "uses `select`",
    "coproc": "uses `coproc`",
    "function": "defines a shell function (it could shadow any command)",
    "[[": "uses `[[ … ]]` (not modelled by the checker)",
}
_STRAY_WORDS = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "in", "]]"})


class Parser(Lexer):
    """The grammar over the lexer's tokens: lists, and-or lists, pipelines, compound and simple commands."""

    def _substitution(self, closer: str) -> None:
        """The commands of `$(…)` / `<(…)` / `>(…)`, read from here up to the matching `)`."""
        self._enter()
        saved, expanded = self.substituted, self.expanded
        # bash keeps here-documents apart inside a substitution: a newline in it reads only its own documents
        # (the outer line's wait for the outer line's end), as its lines are commands
        outer_docs, self.heredocs = self.heredocs, []
        self.substituted, self.expanded = True, []
        self._list(stop_ops={closer}, stop_words=frozenset())
        token = self.take()
        if token.kind != "op" or token.op != closer:
            raise ShellSyntaxError(f"has an unterminated substitution (expected `{closer}`)")
        if self.heredocs:  # bash reads its text after the line, before the outer line's documents
            raise ShellSyntaxError("has a here-document in a substitution whose text comes after the line")
        self.heredocs = outer_docs
        self.substituted, self.expanded = saved, expanded
        self.depth -= 1

    def _nested(self, text: str, span: tuple[int, int]) -> None:
        parse_into(text, self.script, self.depth + 1, substituted=True, span=span)

    # --- grammar ---------------------------------------------------------------------------------------

    def parse(self) -> None:
        self._list(stop_ops=frozenset(), stop_words=frozenset())
        token = self.peek()
        if token.kind != "eof":
            raise ShellSyntaxError(f"has an unexpected `{self.src[token.start : token.end]}`")
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
                raise ShellSyntaxError(f"has an unexpected `{self.src[token.start : token.end]}`")

    @staticmethod
    def _stops(token: Token, stop_ops: set[str] | frozenset[str], stop_words: frozenset[str]) -> bool:
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
    def _reserved(token: Token) -> str | None:
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
        # the loop sets its variable as `NAME=…` would, and it stays set after the loop (`for PATH in bin`)
        value = f"{name.word.text}=…"
        assignment = Word(value, value, why="the loop's values")
        self._add(Command((), (assignment,), text=f"for {name.word.text}"), name.start)
        self._skip_newlines()
        if self._reserved(self.peek()) == "in":
            self.take()
            words: list[Word] = []
            while self.peek().kind == "word":
                token = self.take()
                assert token.word is not None
                words.append(token.word)
            # the list's words are expanded like a command's arguments: an `echo` stands for that
            self._add(Command((Word("echo", "echo"), *words), text=self.src[name.start : self.last_end]), name.start)
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
            self._add(Command((), redirects=tuple(redirects), text=self.src[start : self.last_end]), start)

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
            raise ShellSyntaxError(f"has an unexpected `{self.src[token.start : token.end] or 'end of input'}`")
        self._add(Command(tuple(words), tuple(assignments), tuple(redirects), self.src[start : self.last_end]), start)

    def _redirect(self, token: Token) -> Redirect:
        op = token.op
        if token.kind != "op" or op not in _REDIRECTS:
            raise ShellSyntaxError("has a file descriptor without a redirection")
        target_token = self.take()
        if target_token.kind != "word" or target_token.word is None:
            raise ShellSyntaxError(f"has `{op}` without a target")
        target = target_token.word
        if op in ("<<", "<<-"):
            # bash takes the delimiter by quote removal alone: `$'EOF'` and `$"EOF"` end the document at `EOF`, and
            # `<<$X` at a line `$X`. Rather than read those forms as bash does, the checker won't read them.
            if "$" in target.text or "`" in target.text:
                raise ShellSyntaxError("has a here-document delimiter with `$` or a backtick in it")
            # a backslash-newline is no quoting (`<<E\⏎OF` is `<<EOF`: the document expands)
            quoted = any(c in target.text.replace("\\\n", "") for c in "'\"\\")
            self.heredocs.append(Heredoc(target.value, op == "<<-", expands=not quoted))
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
        self.script.commands.append(
            dataclasses.replace(command, text=text, substituted=self.substituted, span=span, expands=expands)
        )


def _is_assignment(word: Word) -> bool:
    match = ASSIGNMENT.match(word.text)
    return match is not None and word.text[: match.end()] == word.value[: match.end()]


def parse_into(
    source: str, script: Script, depth: int = 0, *, substituted: bool = False, span: tuple[int, int] | None = None
) -> None:
    """`span`: the text is a part of another (a backtick's), every command of it gets this span of that one."""
    if depth > MAX_DEPTH:
        raise ShellSyntaxError(f"nests deeper than {MAX_DEPTH} levels")
    Parser(source, script, depth, substituted, span).parse()


def parse(source: str) -> Script:
    """Every simple command of `source`. Raises ShellSyntaxError."""
    script = Script()
    parse_into(source, script)
    return script
