"""Attack round 20: permission rules' patterns as regexes that backtrack. A cloned folder's deny and ask rules apply
before any trust question (they only narrow), and every path and every command a tool names is matched against
them: `Read(/*a*a*a*a*a*a*b)` held the bridge 78 s on one 100-character name, `Bash(* * * * * * * * * * Z)` over
30 s on a 42-word command, and Python's `re` can't be interrupted (Ctrl-C, cancel and the editor waited). The
patterns are now matched in linear time; each is held to the answers of the regex it replaced (pathspec's, for
paths) on every small input, and given the attacker's shape at sizes that took hours or years before."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bridge.permissions.specifiers import (
    RuleSyntaxError,
    _token_matches,
    command_tokens,
    compile_command_pattern,
    compile_path_specifier,
    plain_regex,
)


def old_command_regex(spec: str) -> re.Pattern[str]:
    """The regex compile_command_pattern made before: each `*` a lazy `.*?`."""
    tokens, tail = command_tokens(spec)
    parts: list[str] = []
    for token in tokens:
        if token == "*":
            parts.append(r"\S.*?" if parts else r".*?")
        elif "*" in token:
            parts.append(
                r"\S*?".join(
                    re.escape(p) if re.fullmatch(r"[\w@%+=:,./-]*", p) else r"'?" + re.escape(p) + r"'?"
                    for p in token.split("*")
                )
            )
        else:
            parts.append(re.escape(shlex.quote(token)))
    end = {"": "", "words": r"(?: .*)?", "chars": r".*"}[tail]
    return re.compile(" ".join(parts) + end + r"\Z", re.DOTALL)


WORD = st.text(alphabet="ab*'!: ", min_size=1, max_size=5)


@settings(max_examples=3000, suppress_health_check=list(HealthCheck))
@given(
    spec=st.lists(st.one_of(WORD, st.just("*")), min_size=1, max_size=5),
    argv=st.lists(st.text(alphabet="ab'! ", max_size=4), min_size=1, max_size=6),
    tail=st.sampled_from(["", " *", ":*", "*"]),
)
def test_command_patterns_answer_as_the_backtracking_regex_did(spec: list[str], argv: list[str], tail: str) -> None:
    text = " ".join(spec) + tail
    try:
        new, old = compile_command_pattern(text), old_command_regex(text)
    except (RuleSyntaxError, IndexError):
        return
    command = shlex.join(argv)
    assert bool(new.match(command)) == bool(old.match(command)), (text, command)


@settings(max_examples=2000, suppress_health_check=list(HealthCheck))
@given(
    token=st.text(alphabet="ab*", min_size=1, max_size=6), word=st.text(alphabet="ab", max_size=8), prefix=st.booleans()
)
def test_word_globs_answer_as_the_backtracking_regex_did(token: str, word: str, prefix: bool) -> None:
    if "*" not in token:
        return
    old = ".*?".join(re.escape(piece) for piece in token.split("*")) + (".*" if prefix else "")
    assert _token_matches(token, word, prefix=prefix) == (re.fullmatch(old, word, re.DOTALL) is not None)


NAME = st.text(alphabet="ab*? é!#()$'", min_size=1, max_size=5)


@settings(max_examples=3000, suppress_health_check=list(HealthCheck))
@given(
    parts=st.lists(st.one_of(NAME, st.just("**")), min_size=1, max_size=5),
    lead=st.sampled_from(["/", "**/", "", "/**/"]),
    path=st.lists(st.text(alphabet="ab. é!#()$'", min_size=1, max_size=5), min_size=1, max_size=6),
)
def test_path_patterns_answer_as_pathspecs_regex_does(parts: list[str], lead: str, path: list[str]) -> None:
    pattern = lead + "/".join(parts)
    if (lead == "" and "/" in pattern) or any(name in (".", "..") for name in path):
        return
    ours = plain_regex(pattern)
    if ours is None:
        return  # pathspec reads it
    theirs = GitIgnoreSpecPattern(pattern).regex
    if theirs is None or not theirs.pattern.startswith("^"):
        return  # (pathspec reads it; or its own odd answer for `**/*/**`, a regex that matches no relative path)
    text = "/".join(path)
    assert bool(ours.match(text)) == bool(theirs.match(text)), (pattern, text)


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ("/" + "*a" * 6 + "*b", "a" * 100_000),
        ("**/" + "*?" * 14 + "Z", "UserProfileSettingsPanel.tsx" * 1000),
        ("/" + "/".join(["**", "a"] * 6) + "/b", "/".join(["a"] * 20_000)),
        ("**/" + "*a" * 40 + "*b", "a" * 100_000),
    ],
)
def test_an_untrusted_folders_path_rule_against_a_long_name_is_answered(tmp_path: Path, spec: str, path: str) -> None:
    """Years before (n^6 and worse); linear now."""
    pattern = compile_path_specifier(spec, cwd=tmp_path, root=tmp_path)
    assert not pattern.matches(tmp_path / path)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("* * * * * * * * * * * Z", ["w"] * 5000),
        ("a*a*a*b", ["a" * 200_000]),
        ("* a*a*a*a*b *", ["x", "a" * 100_000, "y"]),
    ],
)
def test_an_untrusted_folders_command_rule_against_a_long_command_is_answered(spec: str, words: list[str]) -> None:
    assert compile_command_pattern(spec).match(shlex.join(words)) is None


def test_a_bracketed_path_rule_with_many_wildcards_is_refused_with_a_way_out(tmp_path: Path) -> None:
    """pathspec's regex is still the one for brackets and escapes: more than one `*` in a name (or `**` twice, a
    trailing `/**` aside) is refused, and the message says how to write it."""
    with pytest.raises(RuleSyntaxError, match="without brackets or escapes"):
        compile_path_specifier("**/*[Ss]ecret*", cwd=tmp_path, root=tmp_path)
    for spec in (
        "**/*.[ch]",
        "src/[Tt]est*/x.py",
        "**/secret*",
        "**/*secret*",
        "**/[Ss]ecrets/**",
        "**/[Ss]ecrets/",
        "**/*пароль*",
        "//home/me/My (old)/**/*.key*",
        "**/a\\*b*",
    ):
        compile_path_specifier(spec, cwd=tmp_path, root=tmp_path)


@pytest.mark.parametrize("spec", ["**/[.]env2", "**/.env2", "a*/**/[.]env2"])
def test_a_newline_in_a_folders_name_does_not_hide_what_is_below_it(tmp_path: Path, spec: str) -> None:
    """Attack round 22: pathspec's `.` stopped at a newline, so `Read(**/[.]env2)` did not match `c\\nd/.env2`."""
    pattern = compile_path_specifier(spec, cwd=tmp_path, root=tmp_path)
    assert pattern.matches(tmp_path / "ab\ncd" / "x" / ".env2")
