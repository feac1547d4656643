"""The three specifier kinds of permission rules that are more than a name, compiled once per rule:

- command patterns (`Bash(npm run test *)`): a prefix with a word boundary (matching the bare prefix too), the
  legacy `npm run test:*`, `*` anywhere as a wildcard, or an exact command — matched against each simple command
  of a compound one after quote removal, so `n'p'm test` is `npm test`;
- path patterns (`Edit(src/**)`): gitignore-style. `//abs` is absolute, `~/p` is from home, `/p` is from the
  project root of the settings file that holds the rule, `p` and `./p` are from the session's cwd;
- hosts (`domain:example.com`, `domain:*.example.com`): compared in IDNA form.

Which kind a rule takes is the form its tool states (bridge/permissions/facts.py's `RuleForm`).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath, PureWindowsPath
from typing import Literal

from bridge.winpaths import rule_base, rule_regex, rule_relative


class RuleSyntaxError(ValueError):
    pass


# --- command patterns --------------------------------------------------------------------------------


CommandTail = Literal["", "words", "chars"]


def command_tokens(spec: str) -> tuple[tuple[str, ...], CommandTail]:
    """A command pattern as words: `npm run test *` is (npm, run, test) + any further words."""
    spec = spec.strip()
    tail: CommandTail = ""
    if spec.endswith(":*") or spec.endswith(" *"):  # `:*` is the legacy prefix form
        spec, tail = spec[:-2].rstrip(), "words"
    elif spec.endswith("*") and len(spec) > 1:  # `ls*`: no word boundary (matches `lsof` and `ls -la`)
        spec, tail = spec[:-1], "chars"
    try:
        return tuple(shlex.split(spec)), tail
    except ValueError as exc:
        raise RuleSyntaxError(f"command pattern {spec!r}: {exc}") from exc


def compile_command_pattern(spec: str) -> re.Pattern[str]:
    """A regex over `shlex.join(argv)` of one simple command."""
    tokens, tail = command_tokens(spec)
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


def could_match_words(tokens: Sequence[str], tail: CommandTail, known: Sequence[str], next_glob: str | None) -> bool:
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


def command_leading_word(spec: str) -> str | None:
    """The literal command a pattern names first (`sudo` in `Bash(sudo apt update)`), if it names one."""
    try:
        tokens = shlex.split(spec.removesuffix(":*"))
    except ValueError:
        return None
    if not tokens or "*" in tokens[0]:
        return None
    return tokens[0]


# --- path patterns -----------------------------------------------------------------------------------


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
    regex = plain_regex(anchored)
    if regex is None:
        # pathspec loads on the first path rule it is needed for (~8 ms): most starts have none before their first
        # tool runs (the bridge's own secrets are plain paths)
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

        try:
            compiled = GitIgnoreSpecPattern(anchored)
        except Exception as exc:  # pathspec raises plain ValueError / GitIgnorePatternError
            raise RuleSyntaxError(f"invalid path pattern {spec!r}: {exc}") from exc
        if compiled.regex is None or not compiled.include:
            raise RuleSyntaxError(f"path pattern {spec!r} matches nothing (negations are not rules)")
        regex = compiled.regex
    every_drive = isinstance(base, PureWindowsPath) and str(base) == "\\"  # kept as is: realpath would pick one
    return PathPattern(Path(base) if every_drive else Path(os.path.realpath(base)), pattern, rule_regex(regex))


_PLAIN_PART = re.compile(r"[A-Za-z0-9_.@+=,:~%*-]+")


def plain_regex(anchored: str) -> re.Pattern[str] | None:
    """The regex pathspec makes of an anchored pattern of plain names and single-name wildcards, with or without a
    trailing `/**` (`/proc/12/task/*/environ`, `/data/sessions/*.jsonl`, `/src/**`), made without loading pathspec;
    None for anything else (`**` inside, escapes, classes, `!`, spaces...): pathspec reads those. A test holds the
    two equal, pattern text for pattern text."""
    if not anchored.startswith("/"):
        return None
    parts = anchored[1:].split("/")
    below = parts[-1] == "**"
    if below:
        parts.pop()
    if not parts or any(not _PLAIN_PART.fullmatch(p) or p in (".", "..") or "**" in p for p in parts):
        return None
    body = "/".join("[^/]+" if p == "*" else "[^/]*".join(re.escape(x) for x in p.split("*")) for p in parts)
    return re.compile("^" + body + ("/" if below else "(?:(?P<ps_d>/)|$)"))


# --- hosts ---------------------------------------------------------------------------------------------


def normalize_host(host: str) -> str:
    """Lower-case IDNA form, so a look-alike (Cyrillic `а`) never equals the ASCII name: IDNA 2008, as the HTTP
    client connects (Python's own codec is IDNA 2003, which maps `ß` to `ss` and `ς` to `σ`: a rule for
    `classic.example` took `claßic.example`, another domain). A name IDNA 2008 refuses stays as written (it
    equals no host a request goes to)."""
    host = host.strip().rstrip(".").lower()
    prefix = ""
    if host.startswith("*."):
        prefix, host = "*.", host[2:]
    if not host.isascii():
        try:
            import idna  # the HTTP client's own (httpx depends on it)

            host = idna.encode(host).decode("ascii")
        except (ImportError, UnicodeError, ValueError):
            pass
    return prefix + host
