"""Attack round 20 (ReDoS audit): the scans of the scripts a folder's hooks and allow rules run (what they pull in,
read to bind a trust item to them, before the trust question is even asked), and the log and MCP-stderr redaction,
used patterns that backtrack quadratically: a 1 MiB script held the bridge for hours, one MCP stderr line for
minutes. Each rewritten pattern is held to the old one's answers on small inputs and given the attacker's shape
at full size."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge import log_redaction
from bridge.execution import sandbox_notes
from bridge.mcp import shown
from bridge.permissions import script_reads
from bridge.permissions.command_limits import parse_amount

OLD = {
    "_PY_IMPORT": (
        r"^[^\S\n]*(?:from\s+(\.*)([\w.]*)\s+import\s+(\([^)]*\)|[^\n#;]+)|import\s+([^\n#;]+))",
        re.MULTILINE,
        "from import .a\n (x);#",
    ),
    "_JS_LITERAL": (
        r"""(?:require\s*\(|import\s*\(|\bfrom\s+|^\s*import\s+)\s*['"](\.{1,2}/[^'"]+)['"]""",
        re.MULTILINE,
        "from require import( ./a'\"\n",
    ),
    "_RB_LOAD": (
        r"""\b(require_relative|require|load)\b\s*\(?\s*(['"])([^'"#\\\n]+)\2"""
        r"""|\bautoload\s*\(?\s*:\w+\s*,\s*(['"])([^'"#\\\n]+)\4""",
        0,
        "require load autoload (:a,'\" x\n",
    ),
    "_PL_FILE": (r"""\b(?:require|do)\s*\(?\s*(['"])([^'"$@\\\n]+)\1""", 0, "require do (' \"x$\n"),
    "_PL_MODULE": (r"^\s*(?:use|require|no)\s+([A-Za-z_]\w*(?:::\w+)*)", re.MULTILINE, "use no A:b \n"),
    "_PL_PARENT": (r"^\s*use\s+(?:parent|base)\s+([^;]+);", re.MULTILINE, "use parent base a;\n "),
    "_PL_LIB": (r"^\s*use\s+lib\s+([^;]+);", re.MULTILINE, "use lib a;\n "),
    "_PL_DYNAMIC": (
        r"\beval\s*(?![\s{]|$)|\beval\s+(?!\{)\S|\b(?:require|do)\s*\(?\s*[$@]|@INC\b|\bUNIVERSAL::require\b"
        r"|\bModule::(?:Load|Runtime|Pluggable)\b|\b(?:Class::Load|load_class)\b",
        0,
        "eval require do ({$@ x\n",
    ),
}


@pytest.mark.parametrize("name", sorted(OLD))
def test_a_rewritten_pattern_finds_what_the_old_one_found(name: str) -> None:
    pattern, flags, alphabet = OLD[name]
    old, new = re.compile(pattern, flags), getattr(script_reads, name)

    @settings(max_examples=1500, suppress_health_check=list(HealthCheck), deadline=None)
    @given(st.lists(st.sampled_from([*alphabet.split(" "), " ", "\n", "\t"]), max_size=14).map("".join))
    def same(text: str) -> None:
        assert [m.groups() for m in new.finditer(text)] == [m.groups() for m in old.finditer(text)], text

    same()


@settings(max_examples=2000)
@given(st.text(alphabet="ab[]*?\n", max_size=12))
def test_globbed_is_the_old_search(word: str) -> None:
    assert script_reads._globbed(word) == (re.search(r"[*?]|\[.+\]", word) is not None)


@settings(max_examples=2000, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(["apikey", "token", ":", "=", " ", "[", "'", '"', "x", ",", "Bearer "]), max_size=12))
def test_the_redaction_field_finds_what_it_did(parts: list[str]) -> None:
    text = "".join(parts)
    old = re.compile(
        r"""(?P<name>['"]?(?:api[_-]?key|auth[_-]?token|authorization|x-api-key|access[_-]?token)['"]?\s*[:=]\s*)"""
        r"""(?P<quote>\[?\s*['"]?)(?P<value>(?:Bearer\s+)?[^'"\s,}\]]+)""",
        re.IGNORECASE,
    )
    assert [m.span() for m in log_redaction._FIELD.finditer(text)] == [m.span() for m in old.finditer(text)]


BIG = 1024 * 1024  # a script read for what it pulls in may be this big (named_files.MAX_SCRIPT_BYTES)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("_PL_DYNAMIC", "do" + " " * BIG),
        ("_PL_FILE", "do" + " " * BIG),
        ("_PY_IMPORT", "from " + "." * BIG),
        ("_PY_IMPORT", "from" + " " * BIG),
        ("_RB_LOAD", "load" + " " * BIG),
        ("_JS_LITERAL", "from" + " " * BIG),
        ("_MAKE_INCLUDE", "\n" * BIG),
        ("_PL_MODULE", "\n" * BIG),
        ("_CODE_WORD", "-" * BIG),
    ],
)
def test_a_script_of_the_attackers_shape_is_read(name: str, text: str) -> None:
    """Hours before (quadratic at 1 MiB); linear now. (A word-splitting pattern finds its words, nothing else.)"""
    assert list(getattr(script_reads, name).finditer(text)) == []


def test_the_attackers_shapes_elsewhere_are_read() -> None:
    assert not script_reads._globbed("[" * BIG)
    assert log_redaction.redact("apikey:" + " " * BIG + ",") == "apikey:" + " " * BIG + ","
    assert list(shown.urls("a." * BIG)) == []
    assert sandbox_notes._HOST_TMP.findall("/tmp/" * BIG) == []
    with pytest.raises(ValueError):
        parse_amount("1" + " " * BIG + "!", name="memory")


OLD_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`|\\]*[^\s'\"<>`|\\.,:;)]")


@settings(max_examples=3000, suppress_health_check=list(HealthCheck))
@given(st.lists(st.sampled_from(["a", "1", ".", "+", "_", ":", "//", "://", " ", ")", "é", "x"]), max_size=14))
def test_urls_are_found_as_the_pattern_found_them(parts: list[str]) -> None:
    text = "".join(parts)
    assert list(shown.urls(text)) == [m.span() for m in OLD_URL.finditer(text)], text


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        ('use FindBin qw($Bin);\ndo "$Bin/helper.pl";\n', "tools/helper.pl"),
        ('require "$RealBin/conf.pl";\n', "tools/conf.pl"),
        ('my $b = sprintf("%s/build.sh", $dir);\n', "build.sh"),
        ('system("sh scripts/x.sh");\n', "scripts/x.sh"),
    ],
)
def test_a_perl_script_still_binds_what_it_names_after_a_variable(text: str, bound: str) -> None:
    """Attack round 22: the linear `_CODE_WORD` no longer started after a `/`, so `"$Bin/helper.pl"` (the script's
    own folder) was bound no more, and a trusted hook ran on after a pull changed it."""
    from pathlib import Path

    names = set(script_reads.perl_names(text, Path("/w/tools/run.pl"), Path("/w"), "tools/run.pl"))
    assert f"/w/{bound}" in names or f"/w/tools/{bound}" in names, names


@pytest.mark.parametrize(
    ("name", "text"),
    [("_PL_LIB", "use lib a\n" * 100_000), ("_PL_PARENT", "use parent a\n" * 100_000)],
)
def test_perl_use_lines_without_a_semicolon_are_read(name: str, text: str) -> None:
    """Attack round 22: minutes at 1 MiB before (each line's scan ran to the end)."""
    assert getattr(script_reads, name).findall(script_reads._to_last_semicolon(text)) == []


def test_python_imports_of_unclosed_lists_are_read() -> None:
    assert len(script_reads._PY_IMPORT.findall("from a import (\n" * 60_000)) == 60_000


@pytest.mark.parametrize("text", ['system("perl", "$Bin/helper.pl");\n', 'system("sh $d/deploy.sh");\n'])
def test_a_perl_script_that_starts_a_command_with_a_variable_is_unbindable(text: str) -> None:
    """Round 28: a command a script starts must be one plain literal, read as a shell line (`system("sh ev" .
    "il.sh")` hid evil.sh); `$d` or a list of words is not (FindBin's `$Bin` included: a false refusal, safe)."""
    from pathlib import Path

    with pytest.raises(script_reads.Unbindable):
        list(script_reads.perl_names(text, Path("/w/tools/run.pl"), Path("/w"), "tools/run.pl"))
