"""Grep with real ripgrep over a real git work tree: every field, the caps and their notes, errors."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError, ToolResult
from bridge.tools.grep import DEFAULT_HEAD_LIMIT, MAX_CONTENT_CHARS, GrepInput, GrepTool, split_globs
from tests.test_processes import eventually

GREP = GrepTool()


def make_repo(root: Path, files: dict[str, str]) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(
        tmp_path,
        {
            "app.py": "import os\n\ndef main():\n    print('Hello')\n    return 0\n",
            "lib/util.py": "def helper():\n    return 'hello world'\n",
            "web/index.ts": "const hello = 1;\n",
            "web/view.tsx": "export const Hello = () => null;\n",
            "README.md": "# hello\n",
            ".github/ci.yml": "run: hello\n",
            ".gitignore": "build/\nsecret.py\n",
            "build/out.py": "hello = 'built'\n",
            "secret.py": "hello = 'ignored'\n",
        },
    )
    return tmp_path


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data")


async def grep(root: Path, **raw: Any) -> ToolResult:
    data = GrepInput.model_validate(raw)
    ctx = ctx_for(root)
    problem = await GREP.validate_input(data, ctx)
    if problem:
        raise ToolError(problem)
    return await GREP.call(data, ctx)


def text(result: ToolResult) -> str:
    assert isinstance(result.content, str)
    return result.content


def test_input_model_aliases_and_schema() -> None:
    data = GrepInput.model_validate({"pattern": "x", "-A": 1, "-B": 2, "-C": 3, "-n": False, "-i": True, "-o": True})
    assert (data.after, data.before, data.around, data.line_numbers, data.case_insensitive, data.only_matching) == (
        1,
        2,
        3,
        False,
        True,
        True,
    )
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"path": "."})
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"pattern": "x", "output_mode": "lines"})
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"pattern": "x", "-A": -1})
    schema = GREP.schema()["input_schema"]
    assert {"-A", "-B", "-C", "-n", "-i", "-o", "context", "head_limit", "offset", "multiline"} <= set(
        schema["properties"]
    )
    assert "title" not in str(schema) and schema["required"] == ["pattern"]


def test_split_globs() -> None:
    assert split_globs("*.ts *.tsx") == ["*.ts", "*.tsx"]
    assert split_globs("*.ts,*.tsx") == ["*.ts", "*.tsx"]
    assert split_globs("*.{ts,tsx}") == ["*.{ts,tsx}"]


async def test_files_with_matches_newest_first_respecting_gitignore(repo: Path) -> None:
    os.utime(repo / "lib/util.py", (2_000_000_000, 2_000_000_000))
    os.utime(repo / "app.py", (1_000_000_000, 1_000_000_000))
    lines = text(await grep(repo, pattern="hello", **{"-i": True})).splitlines()
    assert lines[0] == "Found 6 files"
    assert lines[1] == "lib/util.py" and lines[-1] == "app.py"
    assert ".github/ci.yml" in lines  # hidden files are searched
    assert "secret.py" not in lines and "build/out.py" not in lines  # .gitignore is respected
    assert not any(line.startswith(".git/") for line in lines)


async def test_content_mode_with_line_numbers_by_default(repo: Path) -> None:
    assert text(await grep(repo, pattern="Hello", output_mode="content", glob="*.py")) == "app.py:4:    print('Hello')"
    no_numbers = await grep(repo, pattern="Hello", output_mode="content", glob="*.py", **{"-n": False})
    assert text(no_numbers) == "app.py:    print('Hello')"


async def test_context_lines(repo: Path) -> None:
    after = text(await grep(repo, pattern="def main", output_mode="content", **{"-A": 1}))
    assert after == "app.py:3:def main():\napp.py-4-    print('Hello')"
    before = text(await grep(repo, pattern="def main", output_mode="content", **{"-B": 1}))
    assert before == "app.py-2-\napp.py:3:def main():"
    around = text(await grep(repo, pattern="print", output_mode="content", **{"-C": 1}))
    assert around.splitlines() == ["app.py-3-def main():", "app.py:4:    print('Hello')", "app.py-5-    return 0"]
    assert text(await grep(repo, pattern="print", output_mode="content", context=1)) == around


async def test_case_insensitive_and_only_matching(repo: Path) -> None:
    assert "No matches" in text(await grep(repo, pattern="HELLO WORLD"))
    found = await grep(repo, pattern="HELLO WORLD", output_mode="content", **{"-i": True, "-o": True})
    assert text(found) == "lib/util.py:2:hello world"


async def test_glob_and_type_filters(repo: Path) -> None:
    braces = text(await grep(repo, pattern="ello", glob="*.{ts,tsx}", **{"-i": True})).splitlines()[1:]
    assert sorted(braces) == ["web/index.ts", "web/view.tsx"]
    several = text(await grep(repo, pattern="ello", glob="*.md *.ts", **{"-i": True})).splitlines()[1:]
    assert sorted(several) == ["README.md", "web/index.ts"]
    typed = text(await grep(repo, pattern="ello", type="py", **{"-i": True})).splitlines()[1:]
    assert sorted(typed) == ["app.py", "lib/util.py"]


async def test_count_mode(repo: Path) -> None:
    (repo / "many.txt").write_text("x\nx\nx\n")
    result = text(await grep(repo, pattern="x", output_mode="count", glob="*.txt"))
    assert result == "many.txt:3\n\nFound 3 matching lines in 1 files"


async def test_multiline(repo: Path) -> None:
    assert "No matches" in text(await grep(repo, pattern=r"main\(\):.*print"))
    result = await grep(repo, pattern=r"main\(\):.*print", multiline=True, output_mode="content")
    assert text(result).splitlines() == ["app.py:3:def main():", "app.py:4:    print('Hello')"]


async def test_file_list_is_capped_at_250_with_a_paging_note(tmp_path: Path) -> None:
    make_repo(tmp_path, {f"f{i:03}.txt": "needle\n" for i in range(300)})
    first = text(await grep(tmp_path, pattern="needle"))
    assert first.splitlines()[0] == "Found 300 files (showing 1-250, newest first)"
    assert len(first.splitlines()) == 1 + DEFAULT_HEAD_LIMIT + 2
    assert "Pass offset=250 for more" in first
    rest = text(await grep(tmp_path, pattern="needle", offset=250))
    assert len([line for line in rest.splitlines() if line.endswith(".txt")]) == 50
    assert "truncated" not in rest
    everything = text(await grep(tmp_path, pattern="needle", head_limit=0))
    assert len([line for line in everything.splitlines() if line.endswith(".txt")]) == 300


async def test_content_paging_is_stable_and_says_what_was_cut(tmp_path: Path) -> None:
    make_repo(tmp_path, {"a.txt": "".join(f"hit {i}\n" for i in range(1, 21))})
    page = text(await grep(tmp_path, pattern="hit", output_mode="content", head_limit=5, offset=5))
    assert page.splitlines()[:5] == [f"a.txt:{i}:hit {i}" for i in range(6, 11)]
    assert "Pass offset=10 for more" in page


async def test_content_is_bounded_in_characters(tmp_path: Path) -> None:
    make_repo(tmp_path, {"wide.txt": ("match " + "y" * 300 + "\n") * 500})
    result = text(await grep(tmp_path, pattern="match", output_mode="content", head_limit=0))
    assert len(result) < MAX_CONTENT_CHARS + 500
    assert f"output capped at {MAX_CONTENT_CHARS} characters" in result


async def test_long_lines_are_shortened_by_rg(tmp_path: Path) -> None:
    make_repo(tmp_path, {"min.js": "var a='needle';" + "x" * 5000 + "\n"})
    line = text(await grep(tmp_path, pattern="needle", output_mode="content"))
    assert len(line) < 700 and "omitted" in line


async def test_paths_relative_to_cwd_or_absolute_outside(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert text(await grep(repo, pattern="helper", path="lib")).splitlines()[1:] == ["lib/util.py"]
    assert text(await grep(repo, pattern="helper", path=str(repo / "lib/util.py"))).splitlines()[1:] == ["lib/util.py"]
    other = tmp_path_factory.mktemp("other")
    (other / "o.txt").write_text("helper\n")
    assert text(await grep(repo, pattern="helper", path=str(other))).splitlines()[1:] == [str(other / "o.txt")]


async def test_errors_the_model_can_act_on(repo: Path) -> None:
    with pytest.raises(ToolError, match="Path does not exist"):
        await grep(repo, pattern="x", path="missing")
    with pytest.raises(ToolError, match=r"regex parse error(.|\n)*escape literal"):
        await grep(repo, pattern="interface{")
    with pytest.raises(ToolError, match="unrecognized file type"):
        await grep(repo, pattern="x", type="nosuchtype")
    assert text(await grep(repo, pattern="zzz_not_there")) == "No matches found"


async def test_title_and_flags(repo: Path) -> None:
    data = GrepInput(pattern="TODO", path="/repo/src", glob="*.py")
    assert GREP.user_facing_title(data) == 'Grep "TODO" in /repo/src (*.py)'
    assert GREP.is_read_only(data) and GREP.is_concurrency_safe(data)
    assert GREP.kind == "search" and GREP.interrupt_behavior == "cancel"


def rg_pids(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


async def test_cancellation_kills_rg(tmp_path: Path) -> None:
    fifo = tmp_path / "blocking-fifo"
    os.mkfifo(fifo)  # rg blocks opening it: a search that never ends
    data = GrepInput(pattern="x", path=str(fifo))
    ctx = ctx_for(tmp_path)
    async with anyio.create_task_group() as group:

        async def search() -> None:
            await GREP.call(data, ctx)

        group.start_soon(search)
        assert await eventually(lambda: bool(rg_pids("blocking-fifo")))
        group.cancel_scope.cancel()
    assert await eventually(lambda: not rg_pids("blocking-fifo"))
