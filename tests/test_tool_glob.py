"""Glob over a real git work tree: shell glob semantics, newest first, the 100 cap, gitignore."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError, ToolResult
from bridge.tools.glob import MAX_RESULTS, GlobInput, GlobTool, _literal_suffix, split_pattern
from tests.test_tool_grep import make_repo

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
    problem = await GLOB.validate_input(data, ctx)
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
