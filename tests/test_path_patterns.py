"""Plain path patterns are compiled without pathspec (issue 26: the bridge's own secrets, compiled when every
session opens, loaded it before the first tool ran), and to the very regex pathspec makes of them."""

from __future__ import annotations

import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bridge.permissions.specifiers import plain_regex

PART = st.text(alphabet="ab.-_@+=,:~%*Z9 !#[]?\\", min_size=1, max_size=5)


@settings(max_examples=1000, deadline=None)
@given(parts=st.lists(PART, min_size=1, max_size=5), below=st.booleans(), name=st.text(alphabet="ab.Z9 ", min_size=1))
def test_a_plain_pattern_matches_as_pathspecs_regex_does(parts: list[str], below: bool, name: str) -> None:
    """(Not the same regex: ours matches in linear time, tests/test_rule_patterns_redos_round20.py.)"""
    anchored = "/" + "/".join([*parts, *(["**"] if below else [])])
    regex = plain_regex(anchored)
    if regex is None:
        return  # not plain: pathspec reads it
    compiled = GitIgnoreSpecPattern(anchored)
    assert compiled.include and compiled.regex is not None
    for path in ("/".join(parts).replace("*", name).replace("?", "a"), "/".join(parts), f"{name}/{name}"):
        assert bool(regex.match(path)) == bool(compiled.regex.match(path)), (anchored, path)


def test_what_is_not_plain_goes_to_pathspec() -> None:
    for anchored in ("src/x", "!x", "#x", "/a/[ab]", "/a\\*", "/a ", "/**", "/a//b", "/a/../b", "/a/**/**/b"):
        assert plain_regex(anchored) is None, anchored
    assert plain_regex("/proc/12/task/*/environ") is not None
    assert plain_regex("/data/sessions/*.jsonl") is not None
    assert plain_regex("/a/**/b") is not None and plain_regex("/a/?") is not None
    assert plain_regex("/!x") is not None and plain_regex("/é (old)/*$") is not None  # (literal there: pathspec's too)


def test_a_new_sessions_own_secrets_do_not_load_pathspec(tmp_path: object) -> None:
    program = f"""
import sys
from pathlib import Path
from bridge.permissions.own_secrets import OwnSecrets
root = Path({str(tmp_path)!r})
secrets = OwnSecrets.of(root / "data", root / "claude", root / "home", root / "ws")
assert any(s.pattern.matches(root / "data" / "sessions" / "x.jsonl") for s in secrets.secrets)
print("pathspec" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False"]
