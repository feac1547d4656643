"""Permission rules: `Tool` or `Tool(specifier)`, parsed once and matched against one call's facts.

Specifier kinds follow Claude Code:
- Bash: `npm run test *` (prefix with a word boundary; matches the bare prefix too), the legacy
  `npm run test:*`, `*` anywhere as a wildcard, or an exact command. Matched against each simple command of
  a compound one, after quote removal, so `n'p'm test` is `npm test`.
- Read / Edit / Write / NotebookEdit / Glob / Grep: gitignore-style path patterns. `//abs` is absolute,
  `~/p` is from home, `/p` is from the project root of the settings file that holds the rule, `p` and `./p`
  are from the session's cwd. An `Edit` rule covers every tool that edits files; a `Read` rule every tool
  that reads them.
- WebFetch: `domain:example.com` (exact host) or `domain:*.example.com` (subdomains).
- MCP: `mcp__server` (every tool of that server), `mcp__server__*`, `mcp__server__tool`.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PureWindowsPath
from typing import Literal

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bridge.permissions.types import Behavior, SourceName
from bridge.winpaths import rule_base, rule_regex, rule_relative

READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
PATH_RULE_TOOLS = READ_TOOLS | EDIT_TOOLS

_TOOL_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_\-]*|mcp__[A-Za-z0-9_\-]+__\*)$")


class RuleSyntaxError(ValueError):
    pass


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None = None

    @classmethod
    def parse(cls, text: str) -> Rule:
        text = text.strip()
        if not text:
            raise RuleSyntaxError("empty rule")
        open_at = text.find("(")
        if open_at < 0:
            if not _TOOL_NAME.match(text):
                raise RuleSyntaxError(f"invalid tool name in rule {text!r}")
            return cls(text)
        if not text.endswith(")"):
            raise RuleSyntaxError(f"rule {text!r} opens '(' but does not end with ')'")
        tool, spec = text[:open_at], text[open_at + 1 : -1]
        if not _TOOL_NAME.match(tool):
            raise RuleSyntaxError(f"invalid tool name in rule {text!r}")
        spec = spec.replace("\\(", "(").replace("\\)", ")")
        if spec.strip() in ("", "*"):
            return cls(tool)  # `Bash()` and `Bash(*)` mean the whole tool, as in Claude Code
        if tool in ("WebFetch",) and not spec.startswith("domain:"):
            raise RuleSyntaxError(f"WebFetch rules take `domain:HOST`, got {text!r}")
        return cls(tool, spec)

    def __str__(self) -> str:
        if self.specifier is None:
            return self.tool
        return f"{self.tool}({self.specifier.replace('(', chr(92) + '(').replace(')', chr(92) + ')')})"

    @property
    def text(self) -> str:
        return str(self)


def rule_tools_for(tool_name: str) -> tuple[str, ...]:
    """The rule tool names that can speak about `tool_name` (an Edit rule covers Write, ...)."""
    if tool_name in EDIT_TOOLS:
        return (tool_name, "Edit") if tool_name != "Edit" else ("Edit",)
    if tool_name in READ_TOOLS:
        return (tool_name, "Read") if tool_name != "Read" else ("Read",)
    if tool_name.startswith("mcp__"):
        parts = tool_name.split("__")
        if len(parts) >= 3:
            return (tool_name, f"mcp__{parts[1]}")
    return (tool_name,)


# --- Bash specifiers ---------------------------------------------------------------------------------


def _quote_piece(piece: str) -> str:
    return re.escape(shlex.quote(piece)) if piece else ""


BashTail = Literal["", "words", "chars"]


def bash_tokens(spec: str) -> tuple[tuple[str, ...], BashTail]:
    """A Bash specifier as words: `npm run test *` is (npm, run, test) + any further words."""
    spec = spec.strip()
    tail: BashTail = ""
    if spec.endswith(":*") or spec.endswith(" *"):  # `:*` is the legacy prefix form
        spec, tail = spec[:-2].rstrip(), "words"
    elif spec.endswith("*") and len(spec) > 1:  # `ls*`: no word boundary (matches `lsof` and `ls -la`)
        spec, tail = spec[:-1], "chars"
    try:
        return tuple(shlex.split(spec)), tail
    except ValueError as exc:
        raise RuleSyntaxError(f"Bash specifier {spec!r}: {exc}") from exc


def compile_bash_specifier(spec: str) -> re.Pattern[str]:
    """A regex over `shlex.join(argv)` of one simple command."""
    tokens, tail = bash_tokens(spec)
    parts: list[str] = []
    for token in tokens:
        if token == "*":
            parts.append(r"\S.*?" if parts else r".*?")
        elif "*" in token:
            # a wildcard inside a word may not cross into the next word
            parts.append(r"\S*?".join(_word_piece(piece) for piece in token.split("*")))
        else:
            parts.append(re.escape(shlex.quote(token)))
    end = {"": "", "words": r"(?: .*)?", "chars": r".*"}[tail]
    return re.compile(" ".join(parts) + end + r"\Z", re.DOTALL)


def could_match_words(tokens: Sequence[str], tail: BashTail, known: Sequence[str], next_glob: str | None) -> bool:
    """Whether a command whose first words are `known` — the rest computed at run time, the next one a glob
    when `next_glob` is set — could be a command the rule matches. Deny and ask rules use this: a command
    that can't be read in full matches every rule it could match."""
    for index, word in enumerate(known):
        if index >= len(tokens):
            return tail != ""
        token = tokens[index]
        if token == "*":
            return True
        last_chars = tail == "chars" and index == len(tokens) - 1
        if not _token_matches(token, word, prefix=last_chars):
            return False
        if last_chars:
            return True
    index = len(known)
    if index >= len(tokens):
        return True  # a computed word may be empty; extra words need a tail, but may not exist
    token = tokens[index]
    if next_glob is None or token == "*" or "*" in token:
        return True
    return fnmatch.fnmatchcase(token, next_glob) or (tail == "chars" and index == len(tokens) - 1)


def _token_matches(token: str, word: str, *, prefix: bool) -> bool:
    if "*" not in token:
        return word.startswith(token) if prefix else word == token
    regex = ".*?".join(re.escape(piece) for piece in token.split("*")) + (".*" if prefix else "")
    return re.fullmatch(regex, word, re.DOTALL) is not None


def _word_piece(piece: str) -> str:
    # inside a partially-wildcarded word, match the piece unquoted or quoted
    return re.escape(piece) if re.fullmatch(r"[\w@%+=:,./-]*", piece) else r"'?" + re.escape(piece) + r"'?"


def bash_leading_word(spec: str) -> str | None:
    """The literal command a Bash rule names (`sudo` in `Bash(sudo apt update)`), if it names one."""
    try:
        tokens = shlex.split(spec.removesuffix(":*"))
    except ValueError:
        return None
    if not tokens or "*" in tokens[0]:
        return None
    return tokens[0]


# --- path specifiers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathPattern:
    base: Path  # resolved directory the pattern is relative to
    pattern: str
    regex: re.Pattern[str]

    def matches(self, path: Path) -> bool:
        """`path` must be absolute and normalized (the caller resolves symlinks where it should)."""
        rel_text = rule_relative(path, self.base)  # Windows: without case, every drive for `//**` (winpaths.py)
        return rel_text is not None and self.regex.match(rel_text) is not None


def compile_path_specifier(spec: str, *, cwd: Path, root: Path) -> PathPattern:
    base: PurePath
    if spec.startswith("//"):
        base, pattern = rule_base(spec[2:])  # Windows: `//c/...` is drive C (Claude Code's syntax)
    elif spec == "~" or spec.startswith("~/"):
        base, pattern = Path.home(), spec[2:] or "**"
    elif spec.startswith("/"):
        base, pattern = root, spec[1:]
    else:
        base, pattern = cwd, spec.removeprefix("./")
    pattern = pattern or "**"
    if pattern.endswith("/"):
        pattern += "**"
    # every pattern is anchored at its base; a slash-free name like `*.env` still matches at any depth below
    anchored = pattern if "/" not in pattern or pattern.startswith("**/") else "/" + pattern
    try:
        compiled = GitIgnoreSpecPattern(anchored)
    except Exception as exc:  # pathspec raises plain ValueError / GitIgnorePatternError
        raise RuleSyntaxError(f"invalid path pattern {spec!r}: {exc}") from exc
    if compiled.regex is None or not compiled.include:
        raise RuleSyntaxError(f"path pattern {spec!r} matches nothing (negations are not rules)")
    every_drive = isinstance(base, PureWindowsPath) and str(base) == "\\"  # kept as is: realpath would pick one
    return PathPattern(Path(base) if every_drive else Path(os.path.realpath(base)), pattern, rule_regex(compiled.regex))


# --- compiled rules with their origin -----------------------------------------------------------------


@dataclass(frozen=True)
class RuleOrigin:
    source: SourceName
    file: Path | None = None  # None for session rules
    root: Path | None = None  # the project root `/path` patterns are relative to


@dataclass(frozen=True)
class CompiledRule:
    rule: Rule
    behavior: Behavior
    origin: RuleOrigin
    bash: re.Pattern[str] | None = None
    bash_word: str | None = None
    bash_head: str | None = None  # bash_word as it starts a canonical command (shell-quoted)
    bash_tokens: tuple[str, ...] = ()
    bash_tail: BashTail = ""
    path: PathPattern | None = None
    domain: str | None = None
    name_glob: re.Pattern[str] | None = None

    @property
    def text(self) -> str:
        return self.rule.text

    def matches_command(self, canonical: str) -> bool:
        return self.bash is not None and self.bash.match(canonical) is not None

    def could_match(self, known: Sequence[str], next_glob: str | None) -> bool:
        """For a command read only in part (see `could_match_words`); a bare `Bash` rule matches any."""
        if self.bash is None:
            return True
        return could_match_words(self.bash_tokens, self.bash_tail, known, next_glob)

    def matches_path(self, path: Path) -> bool:
        return self.path is not None and self.path.matches(path)

    def matches_host(self, host: str) -> bool:
        if self.domain is None:
            return False
        if self.domain.startswith("*."):
            return host.endswith(self.domain[1:])
        return host == self.domain


def compile_rule(rule: Rule, behavior: Behavior, origin: RuleOrigin, *, cwd: Path) -> CompiledRule:
    spec = rule.specifier
    if spec is None:
        if rule.tool.startswith("mcp__") and rule.tool.endswith("__*"):
            glob = re.compile(re.escape(rule.tool[:-1]) + r".+\Z")
            return CompiledRule(rule, behavior, origin, name_glob=glob)
        return CompiledRule(rule, behavior, origin)
    if rule.tool == "Bash":
        bash = compile_bash_specifier(spec)
        word = bash_leading_word(spec)
        head = shlex.quote(word) if word is not None else None
        tokens, tail = bash_tokens(spec)
        return CompiledRule(rule, behavior, origin, bash=bash, bash_word=word, bash_head=head, bash_tokens=tokens,
                            bash_tail=tail)
    if rule.tool in PATH_RULE_TOOLS:
        root = origin.root or cwd
        return CompiledRule(rule, behavior, origin, path=compile_path_specifier(spec, cwd=cwd, root=root))
    if rule.tool == "WebFetch":
        return CompiledRule(rule, behavior, origin, domain=normalize_host(spec.removeprefix("domain:")))
    # other specifiers (e.g. `Task(Explore)`) are kept but only matched by name-equality in the engine
    return CompiledRule(rule, behavior, origin)


def normalize_host(host: str) -> str:
    """Lower-case IDNA form, so a look-alike (Cyrillic `а`) never equals the ASCII name."""
    host = host.strip().rstrip(".").lower()
    prefix = ""
    if host.startswith("*."):
        prefix, host = "*.", host[2:]
    with contextlib.suppress(UnicodeError):
        host = host.encode("idna").decode("ascii")
    return prefix + host


@dataclass
class RuleIndex:
    """Compiled rules by behavior and by rule tool name, for cheap lookups per call."""

    by_behavior: dict[Behavior, dict[str, list[CompiledRule]]] = field(
        default_factory=lambda: {"allow": {}, "ask": {}, "deny": {}}
    )
    mcp_globs: dict[Behavior, list[CompiledRule]] = field(default_factory=lambda: {"allow": [], "ask": [], "deny": []})
    _heads: dict[Behavior, tuple[dict[str, list[tuple[int, CompiledRule]]], list[tuple[int, CompiledRule]]]] = field(
        default_factory=dict)

    def bash_rules(self, behavior: Behavior, heads: Iterable[str]) -> list[CompiledRule]:
        """The Bash rules of `behavior` that may match a command starting with one of `heads` (shell-quoted
        first words), in rule order: a lookup by first word instead of a walk over every rule."""
        if behavior not in self._heads:
            by_head: dict[str, list[tuple[int, CompiledRule]]] = {}
            headless: list[tuple[int, CompiledRule]] = []
            for position, rule in enumerate(self.rules_for(behavior, "Bash")):
                if rule.bash_head is None:
                    headless.append((position, rule))
                else:
                    by_head.setdefault(rule.bash_head, []).append((position, rule))
            self._heads[behavior] = (by_head, headless)
        by_head, headless = self._heads[behavior]
        found = list(headless)
        for head in set(heads):
            found += by_head.get(head, [])
        return [rule for _, rule in sorted(found, key=lambda pair: pair[0])]

    def add(self, compiled: CompiledRule) -> None:
        self._heads.clear()
        if compiled.name_glob is not None:
            self.mcp_globs[compiled.behavior].append(compiled)
        else:
            self.by_behavior[compiled.behavior].setdefault(compiled.rule.tool, []).append(compiled)

    def extend(self, rules: Iterable[CompiledRule]) -> None:
        for compiled in rules:
            self.add(compiled)

    def rules_for(self, behavior: Behavior, tool_name: str) -> list[CompiledRule]:
        table = self.by_behavior[behavior]
        found: list[CompiledRule] = []
        for name in rule_tools_for(tool_name):
            found.extend(table.get(name, ()))
        found.extend(r for r in self.mcp_globs[behavior] if r.name_glob is not None and r.name_glob.match(tool_name))
        return found

    def all(self) -> list[CompiledRule]:
        out = [r for table in self.by_behavior.values() for rules in table.values() for r in rules]
        return out + [r for rules in self.mcp_globs.values() for r in rules]


@dataclass
class RuleSet:
    """Rules given as strings, e.g. by the editor or CLI flags for one session."""

    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)

    def items(self) -> Iterable[tuple[Behavior, str]]:
        groups: tuple[tuple[Behavior, list[str]], ...] = (("deny", self.deny), ("ask", self.ask), ("allow", self.allow))
        for behavior, texts in groups:
            for text in texts:
                yield behavior, text

    @classmethod
    def of(cls, *, allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = ()) -> RuleSet:
        return cls(list(allow), list(ask), list(deny))
