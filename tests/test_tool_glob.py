"""Glob over a real git work tree: shell glob semantics, newest first, the 100 cap, gitignore."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.permissions.engine import PermissionEngine
from bridge.tools.base import ToolContext, ToolError, ToolResult
from bridge.tools.glob import MAX_RESULTS, GlobInput, GlobTool, SegmentMatcher, _literal_suffix, split_pattern
from tests.permission_calls import decide
from tests.test_tool_grep import engine_for, make_repo

GLOB = GlobTool()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(
        tmp_path,
        {
            "setup.py": "",
            "src/app.py": "",
            "src/pkg/mod.py": "",
            "src/web/a.ts": "",
            "src/web/b.tsx": "",
            "docs/guide.md": "",
            ".github/workflows/ci.yml": "",
            ".gitignore": "dist/\n*.log\n",
            "dist/bundle.py": "",
            "debug.log": "",
        },
    )
    return tmp_path


async def glob(root: Path, **raw: Any) -> str:
    data = GlobInput.model_validate(raw)
    ctx = ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data")
    problem = await GLOB.validate_input(data, ctx) or await GLOB.validate_target(data, ctx)  # as the loop does
    if problem:
        raise ToolError(problem)
    result: ToolResult = await GLOB.call(data, ctx)
    assert isinstance(result.content, str) and not result.is_error
    return result.content


def test_input_model() -> None:
    with pytest.raises(ValidationError):
        GlobInput.model_validate({})
    with pytest.raises(ValidationError):
        GlobInput.model_validate({"pattern": "*", "glob": "*"})
    assert "title" not in str(GLOB.schema())
    assert GLOB.interrupt_behavior == "cancel" and GLOB.is_concurrency_safe(GlobInput(pattern="*"))


async def test_star_is_one_level_and_globstar_any_depth(repo: Path) -> None:
    assert (await glob(repo, pattern="*.py")).splitlines() == ["setup.py"]
    deep = sorted((await glob(repo, pattern="**/*.py")).splitlines())
    assert deep == ["setup.py", "src/app.py", "src/pkg/mod.py"]  # dist/ is gitignored
    assert sorted((await glob(repo, pattern="src/**/*.{ts,tsx}")).splitlines()) == ["src/web/a.ts", "src/web/b.tsx"]


async def test_gitignore_respected_hidden_included(repo: Path) -> None:
    assert "No files found" in await glob(repo, pattern="*.log")  # ignored even when named exactly
    assert (await glob(repo, pattern="**/*.yml")).splitlines() == [".github/workflows/ci.yml"]
    assert not any(line.startswith(".git/") for line in (await glob(repo, pattern="**/*")).splitlines())


async def test_newest_first(repo: Path) -> None:
    for i, name in enumerate(["src/pkg/mod.py", "setup.py", "src/app.py"]):
        os.utime(repo / name, (1_000_000_000 + i * 1000, 1_000_000_000 + i * 1000))
    assert (await glob(repo, pattern="**/*.py")).splitlines() == ["src/app.py", "setup.py", "src/pkg/mod.py"]


async def test_capped_at_100_with_a_note(tmp_path: Path) -> None:
    make_repo(tmp_path, {f"gen/f{i:03}.txt": "" for i in range(130)})
    for i in range(130):
        os.utime(tmp_path / f"gen/f{i:03}.txt", (1_000_000_000 + i, 1_000_000_000 + i))
    lines = (await glob(tmp_path, pattern="gen/*.txt")).splitlines()
    assert lines[0] == "gen/f129.txt" and lines[MAX_RESULTS - 1] == "gen/f030.txt"
    assert lines[-1] == (
        "[Showing the 100 most recently modified of 130 matching files; narrow the pattern or path to see the others.]"
    )


async def test_path_argument_and_absolute_patterns(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert sorted((await glob(repo, pattern="*.py", path="src")).splitlines()) == ["src/app.py"]
    assert (await glob(repo, pattern=str(repo / "src/pkg/*.py"))).splitlines() == ["src/pkg/mod.py"]
    other = tmp_path_factory.mktemp("elsewhere")
    (other / "x.cfg").write_text("")
    assert (await glob(repo, pattern="*.cfg", path=str(other))).splitlines() == [str(other / "x.cfg")]


async def test_missing_directory_and_no_match(repo: Path) -> None:
    with pytest.raises(ToolError, match="Directory does not exist"):
        await glob(repo, pattern="*.py", path="nope")
    assert await glob(repo, pattern="**/*.rs") == "No files found"
    assert await glob(repo, pattern="nope/**/*.py") == "No files found"


def test_split_pattern() -> None:
    assert split_pattern("src/**/*.ts", Path("/r")) == (Path("/r/src"), "**/*.ts")
    assert split_pattern("./a/b/*.py", Path("/r")) == (Path("/r/a/b"), "*.py")
    assert split_pattern("/abs/x/*.md", Path("/r")) == (Path("/abs/x"), "*.md")
    assert split_pattern("**/*.py", Path("/r")) == (Path("/r"), "**/*.py")


def test_literal_suffix_prefilter_only_when_every_match_ends_with_it() -> None:
    assert _literal_suffix("**/*.py") == ".py"
    assert _literal_suffix("src/*_test.go") == "_test.go"
    for no_suffix in ("*", "**", "foo*", "*.{ts,tsx}", "*.[ch]", "*(a|b).py", "a/b.py", "*.py/"):
        assert _literal_suffix(no_suffix) == "", no_suffix


async def test_extension_patterns_match_exactly_what_the_full_matcher_matches(tmp_path: Path) -> None:
    for name in ("a.py", "b.pyc", "c.py.bak", "d/e.py", "d/.hidden.py", ".py", "f.PY", "g_test.go", "h/i_test.go"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    assert sorted((await glob(tmp_path, pattern="**/*.py")).splitlines()) == [".py", "a.py", "d/.hidden.py", "d/e.py"]
    assert sorted((await glob(tmp_path, pattern="*.py")).splitlines()) == [".py", "a.py"]
    assert sorted((await glob(tmp_path, pattern="**/*_test.go")).splitlines()) == ["g_test.go", "h/i_test.go"]


# --- every result path is checked; absolute and `..` patterns are resolved first (issue 9, layer 4) ------


async def guarded_glob(root: Path, engine: PermissionEngine, **raw: Any) -> ToolResult:
    data = GlobInput.model_validate(raw)
    ctx = ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data", read_guard=engine.read_guard())
    problem = await GLOB.validate_input(data, ctx) or await GLOB.validate_target(data, ctx)  # as the loop does
    if problem:
        raise ToolError(problem)
    return await GLOB.call(data, ctx)


async def test_read_deny_rules_hide_names(repo: Path) -> None:
    engine = engine_for(repo, deny=["Read(src/pkg/**)", "Read(setup.py)"])
    result = await guarded_glob(repo, engine, pattern="**/*.py")
    assert isinstance(result.content, str)
    assert result.content.splitlines()[0] == "src/app.py"
    assert "mod.py" not in result.content and "setup.py" not in result.content
    assert "2 files were left out" in result.content


async def test_parent_and_absolute_patterns_are_judged_as_reads_of_their_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "loot.txt").write_text("")
    root = tmp_path / "ws"
    make_repo(root, {"a.txt": ""})
    engine = engine_for(root)
    ctx = ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data")
    for pattern, listed in (
        ("../*", tmp_path),
        (f"{outside}/*", outside),
        ("../outside/*.txt", outside),
        ("sub/../../outside/*", outside),
        ("~/x/*", Path.home() / "x"),
    ):
        data = GlobInput(pattern=pattern)
        assert GLOB.permission_paths(data, ctx) == [(listed, "read")], pattern
        decision = decide(engine, "Glob", {"pattern": pattern}, read_only=True, paths=GLOB.permission_paths(data, ctx))
        assert decision.behavior == "ask" and "outside the workspace" in (decision.reason or ""), pattern
    inside = GlobInput(pattern="src/../*.txt")
    assert GLOB.permission_paths(inside, ctx) == [(root, "read")]
    assert (
        decide(
            engine, "Glob", {"pattern": "src/../*.txt"}, read_only=True, paths=GLOB.permission_paths(inside, ctx)
        ).behavior
        == "allow"
    )


async def test_an_allowed_outside_listing_still_keeps_deny_rules(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("")
    (outside / "id_rsa").write_text("")
    root = tmp_path / "ws"
    make_repo(root, {"a.txt": ""})
    engine = engine_for(root, deny=["Read(//" + str(outside).lstrip("/") + "/id_rsa)"])
    out = (await guarded_glob(root, engine, pattern="../outside/*")).content
    assert isinstance(out, str) and out.splitlines()[0] == str(outside / "notes.txt") and "id_rsa" not in out


async def test_symlinks_are_not_listed_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "loot.py").write_text("")
    root = tmp_path / "ws"
    make_repo(root, {"a.py": ""})
    (root / "dir").symlink_to(outside, target_is_directory=True)
    (root / "link.py").symlink_to(outside / "loot.py")
    assert await glob(root, pattern="**/*.py") == "a.py"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"pattern": "*.py\x00"}, "pattern contains a NUL byte"),
        ({"pattern": "\ud800/*.py"}, "lone UTF-16 surrogate"),
        ({"pattern": "~\x00/*"}, "pattern contains a NUL byte"),
        ({"pattern": "n" * 300 + "/*.py"}, "at most 255 bytes"),
        ({"pattern": "*.py", "path": "a\x00"}, "path contains a NUL byte"),
    ],
)
async def test_invalid_patterns_and_paths_are_a_clear_error(repo: Path, raw: dict[str, str], message: str) -> None:
    data = GlobInput.model_validate(raw)
    ctx = ToolContext(cwd=repo, abort=Abort(), data_dir=repo / ".data")
    problem = await GLOB.validate_input(data, ctx) or await GLOB.validate_target(data, ctx)  # as the loop does
    assert problem is not None and message in problem, problem
    assert GLOB.permission_paths(data, ctx) == []
    GLOB.locations(data)


async def test_a_pattern_cannot_backtrack_for_ever(repo: Path) -> None:
    """Attack round 14: extglob's `*(?|?|?)` groups became regex repetitions of alternatives, exponential on every
    listed name, in C code that holds the GIL (32 s of a frozen bridge for 7 groups, deaf to SIGTERM). Without
    extglob the parentheses are literal, and `*` stays linear even against a long name of the folder's."""
    (repo / "src" / ("a" * 200 + ".txt")).write_text("")
    start = time.monotonic()
    assert await glob(repo, pattern="**/" + "*(?|?|?)" * 7 + "~") == "No files found"
    assert await glob(repo, pattern="**/" + "*a" * 12 + "*b") == "No files found"
    assert time.monotonic() - start < 5
    (repo / "src" / "*(x).py").write_text("")
    assert await glob(repo, pattern="src/*(x).py") == "src/*(x).py"


async def test_brace_alternatives_are_bounded(repo: Path) -> None:
    assert "src/app.py" in await glob(repo, pattern="src/{a,b}pp.{py,ts}")
    with pytest.raises(ToolError, match="Invalid glob pattern"):
        await glob(repo, pattern="{a,b}" * 9)


_SEGMENTS = ["a", "b", ".a", "*", "?", "a*", "*b", "[ab]", "[!a]", "**", "{a,b}", "{a,b/c}", "*.py", "x.py", "c"]
_SEGMENTS += ["a\\*", "\\?", "**\\/a", "\\[ab]"]  # escapes, an escaped slash (round 16)
_NAMES = ["a", "b", ".a", "ab", "ba", "x.py", "a.py", "c", "a*", "?", "[ab]"]


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=5).map("/".join),
    st.lists(st.sampled_from(_NAMES), min_size=1, max_size=6).map("/".join),
)
def test_the_matcher_is_wcmatchs_glob(pattern: str, path: str) -> None:
    """The segment-at-a-time matching (two `**` or more) and the regex (one at most) match as wcmatch's glob does."""
    from wcmatch import glob as wcglob

    expected = wcglob.globmatch(path, pattern, flags=wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB)
    assert SegmentMatcher(pattern).match(path) == expected, (pattern, path)


async def test_chained_globstars_cannot_backtrack_for_ever(tmp_path: Path) -> None:
    """Attack round 15: each `**` was a lazy repetition of its own in wcmatch's regex, n^k for k of them: this
    pattern against 500 nested folders held the GIL for minutes, deaf to cancel and SIGTERM. Round 16: `**\\/`
    (an escaped slash, a slash to wcmatch) was counted as no `**`, and went to that regex."""
    make_repo(tmp_path, {"/".join(["a"] * 300) + "/b": ""})
    start = time.monotonic()
    assert await glob(tmp_path, pattern="**/a/**/a/**/a/**/a/z") == "No files found"
    assert await glob(tmp_path, pattern="**\\/a/**\\/a/**\\/a/**/z") == "No files found"
    assert "b" in await glob(tmp_path, pattern="**/a/**/a/**/b")
    assert time.monotonic() - start < 5
    with pytest.raises(ToolError, match="parts between slashes"):
        await glob(tmp_path, pattern="/".join(["*"] * 65))


DEEP = "/".join(["a"] * 300)
SLOW = "/".join(["**", "a"] * 31) + "/{" + ",".join(f"z{i}" for i in range(64)) + "}"
"""64 alternatives of 63 parts, two `**` or more each: ~0.5 s a name at the bottom of DEEP (each alternative's
segment-at-a-time match costs its parts x the name's 301 parts)."""


async def test_matching_gives_up_at_its_deadline_even_on_few_slow_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack round 17: the deadline was looked at every 256 names, so 60 names of half a second each went ~30 s
    past it; it is looked at before every alternative of every name now."""
    import bridge.tools.glob as glob_module

    make_repo(tmp_path, {f"{DEEP}/f{i}": "" for i in range(20)})
    monkeypatch.setattr(glob_module, "MATCH_SECONDS", 0.3)
    start = time.monotonic()
    with pytest.raises(ToolError, match="took over"):
        await glob(tmp_path, pattern=SLOW)
    assert time.monotonic() - start < 3
