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
    """A regex over `shlex.join(argv)` of one simple command, matched in linear time.

    A `*` word is any run of words, a `*` inside a word any run of its characters. The obvious regex (each `*` a lazy
    `.*?`) tries every split of the command among them, O(n^k) for k wildcards (attack round 20: a cloned folder's
    deny rule `Bash(* * * * * * * * * * Z)`, which applies untrusted, made a 42-word command take over 30 s, and
    `Bash(a*a*a*b)` a long word cubic time). Here what follows each wildcard, up to the next one, is found at its
    leftmost place and kept (an atomic group): the wildcard after it takes whatever is left over, so no other split
    can succeed where that one fails. A test holds the two regexes to the same answers."""
    tokens, tail = command_tokens(spec)
    words: list[str] = []
    for token in tokens:
        if token == "*":
            words.append(r"\S.*?" if words else r".*?")
        elif "*" in token:
            # a wildcard inside a word may not cross into the next word
            pieces = [_word_piece(piece) for piece in token.split("*")]
            words.append(pieces[0] + "".join(rf"(?>\S*?{piece})" for piece in pieces[1:-1]) + r"\S*?" + pieces[-1])
        else:
            words.append(re.escape(shlex.quote(token)))
    stars = [index for index, token in enumerate(tokens) if token == "*"]
    regex = " ".join(words[: stars[0]]) + " " if stars and stars[0] else "" if stars else " ".join(words)
    for n, start in enumerate(stars):
        if n + 1 < len(stars):  # the wildcard, the words after it, the space before the next one: kept
            regex += "(?>" + " ".join(words[start : stars[n + 1]]) + r" (?=\S))"  # (the next starts with one)
        else:  # the last run must reach the end: not kept
            regex += " ".join(words[start:])
    end = {"": "", "words": r"(?: .*)?", "chars": r".*"}[tail]
    return re.compile(regex + end + r"\Z", re.DOTALL)


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
    pieces = [re.escape(piece) for piece in token.split("*")]
    # each piece but the last at its leftmost place, kept (compile_command_pattern says why): linear
    regex = pieces[0] + "".join(f"(?>.*?{piece})" for piece in pieces[1:-1]) + ".*?" + pieces[-1]
    return re.fullmatch(regex + (".*" if prefix else ""), word, re.DOTALL) is not None


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

        _within_wildcard_budget(spec, anchored)
        try:
            compiled = GitIgnoreSpecPattern(anchored)
        except Exception as exc:  # pathspec raises plain ValueError / GitIgnorePatternError
            raise RuleSyntaxError(f"invalid path pattern {spec!r}: {exc}") from exc
        if compiled.regex is None or not compiled.include:
            raise RuleSyntaxError(f"path pattern {spec!r} matches nothing (negations are not rules)")
        # `.` across a newline too: a folder whose name holds one hid what is below it from `**` (attack round 22)
        regex = re.compile(compiled.regex.pattern, compiled.regex.flags | re.DOTALL)
    every_drive = isinstance(base, PureWindowsPath) and str(base) == "\\"  # kept as is: realpath would pick one
    return PathPattern(Path(base) if every_drive else Path(os.path.realpath(base)), pattern, rule_regex(regex))


_PLAIN_PART = re.compile(r"[^\[\]\\/\n]+")  # (brackets and escapes are pathspec's to read)
_SEGMENT_END = r"(?=/|\Z)"


def plain_regex(anchored: str) -> re.Pattern[str] | None:
    """A gitignore pattern (as compile_path_specifier anchors it) of names, `*`, `?` and whole `**` segments, as a
    regex that matches what pathspec's does (a test holds the two to the same answers) in linear time, made without
    loading pathspec; None for anything else (brackets, escapes, a leading `!` or `#`, trailing spaces): pathspec
    reads those.

    pathspec's own regex backtracks: `[^/]*a[^/]*a…b` for `*a*a…b` and `(?:.+/)?…(?:/.+)?` for the `**`s try every
    split, O(n^k) for k wildcards (attack round 20: a cloned folder's deny rule `Read(/*a*a*a*a*a*a*b)`, which
    applies untrusted, held the bridge 78 s on one 100-character name). Here each piece between two `*` of a name,
    and each run of names between two `**`, is matched at its leftmost place and kept (an atomic group): a piece of
    fixed length found leftmost leaves the most room for what follows, so no other split can succeed where that
    one fails. A name's last piece, and what the pattern ends with, are matched as before (one scan)."""
    if anchored.endswith(" ") or anchored.startswith((" ", "!", "#")):
        return None  # (gitignore drops trailing spaces, `!` negates, `#` comments: pathspec's)
    if anchored.startswith("/**/"):
        parts, lead = anchored[4:].split("/"), True
    elif anchored.startswith("/"):
        parts, lead = anchored[1:].split("/"), False
    elif anchored.startswith("**/"):
        parts, lead = anchored[3:].split("/"), True
    elif "/" not in anchored:
        parts, lead = [anchored], True  # slash-free: at any depth
    else:
        return None
    below = parts[-1] == "**"
    if below:
        parts.pop()
    if not parts or parts[0] == "**" or parts[-1] == "**":
        return None
    for index, part in enumerate(parts):
        if part == "**":
            if parts[index - 1] == "**":
                return None
        elif not _PLAIN_PART.fullmatch(part) or part in (".", ".."):
            return None
    chunks: list[list[str]] = [[]]
    for part in parts:
        if part == "**":
            chunks.append([])
        else:
            chunks[-1].append(_segment(part))
    body = ""
    for index, chunk in enumerate(chunks):
        names = "/".join(chunk)
        if index == 0 and not lead:
            body += names
        else:  # after `**` (or the start of a slash-free pattern): whole names skipped, the leftmost place kept
            body += ("/" if index else "") + "(?>(?:[^/]+/)*?" + names + _SEGMENT_END + ")"
    return re.compile("^" + body + ("/" if below else "(?:(?P<ps_d>/)|\\Z)"))


MAX_STARS_PER_NAME = 1  # in a pattern pathspec reads (brackets, escapes): its regex backtracks, O(n^k)
MAX_DOUBLE_STARS = 1


def _within_wildcard_budget(spec: str, anchored: str) -> None:
    """A pattern left to pathspec (brackets, escapes) may have one `*` in a name and one `**`: its regex tries every
    split of a name among its wildcards (see `plain_regex`), and a name the model makes up may be as long as it likes.
    More is refused as a syntax error, reported, the rule skipped (`**/*[Ss]ecret*` can be written as two rules
    without brackets, which have no such limit)."""
    parts = anchored.strip("/").split("/")
    if parts[-1] == "**":
        parts.pop()  # (a trailing `/**` is a plain `/` in pathspec's regex: nothing to try)
    doubles = sum(1 for part in parts if part == "**")
    stars = max((len(re.findall(r"(?<!\\)\*", part)) for part in parts if part != "**"), default=0)
    if stars > MAX_STARS_PER_NAME or doubles > MAX_DOUBLE_STARS:
        raise RuleSyntaxError(
            f"path pattern {spec!r} has too many wildcards for one with brackets or escapes (at most "
            f"{MAX_STARS_PER_NAME} `*` in a name and {MAX_DOUBLE_STARS} `**`: matching it could take hours); "
            "write it without brackets or escapes (as several rules if need be)"
        )


def _segment(part: str) -> str:
    """One name's glob: its pieces between `*`s, each but the last found leftmost and kept."""
    pieces = [re.escape(piece).replace("\\?", "[^/]").replace("?", "[^/]") for piece in part.split("*")]
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>[^/]*?{piece})" for piece in pieces[1:-1])
    return pieces[0] + middle + "[^/]*" + pieces[-1] + _SEGMENT_END


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
