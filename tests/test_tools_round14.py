"""Attack round 14 on the file and search tools, each proven by what the model would have been given."""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError
from bridge.tools.glob import GlobInput, GlobTool
from bridge.tools.ripgrep import shown_errors
from tests.test_tool_edit import edit, make, refused
from tests.test_tool_grep import grep, make_repo, text

SECRET = "ya29.CANARY_TOKEN_SECRET_777"


def too_deep(root: Path) -> None:
    """A folder nested past PATH_MAX: rg can't search it ("File name too long") and exits with status 2, as it
    does for an unreadable file (not for root) or one removed mid-search."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(18):
            name = "d" * 250
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        with open(os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as file:
            file.write("hello\n")
    finally:
        os.close(fd)


def leaky(tmp_path: Path, where: str) -> Path:
    """A workspace with, in its folder `where`, an `.ignore` that is a link to a one-line token file outside it,
    and a folder rg can't search."""
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "token.json").write_text(f'{{"access_token":"{SECRET}","refresh_token":{{"x":"1//CANARY"}}}}\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    make_repo(ws, {"a.txt": "hello\n", f"{where}/b.txt": "hello\n"})
    (ws / where / ".ignore").symlink_to(secrets / "token.json")
    (ws / where / "vendor").mkdir()
    too_deep(ws / where / "vendor")
    return ws


# the folder's own names, made to look like rg's lines that are shown whole (attack round 15)
@pytest.mark.parametrize("where", ["src", "unrecognized file type", "x\nregex parse error:\ny"])
async def test_rg_errors_never_quote_a_file_through_a_link(tmp_path: Path, where: str) -> None:
    ws = leaky(tmp_path, where)
    with pytest.raises(ToolError) as failed:
        await grep(ws, pattern="zzznomatch")
    assert "Search failed" in str(failed.value) and SECRET not in str(failed.value)
    assert "File name too long" in str(failed.value)  # what rg could not search is still said
    found = text(await grep(ws, pattern="hello"))
    assert "a.txt" in found and "[Some files could not be searched" in found and SECRET not in found
    found = text(await grep(ws, pattern="hello", path=where))
    assert "b.txt" in found and "[Some files could not be searched" in found and SECRET not in found
    with pytest.raises(ToolError) as failed:
        await grep(ws, pattern="zzznomatch", path=where)
    assert SECRET not in str(failed.value)


def test_what_the_model_gives_and_os_errors_are_shown_whole() -> None:
    assert shown_errors("rg: regex parse error:\n    (?:foo()\n    ^\nerror: unclosed group") == [
        "regex parse error:",
        "    (?:foo()",
        "    ^",
        "error: unclosed group",
    ]
    assert shown_errors("rg: unrecognized file type: nosuch") == ["unrecognized file type: nosuch"]
    assert shown_errors("rg: ./x/y: File name too long (os error 36)") == ["./x/y: File name too long (os error 36)"]
    assert shown_errors(f"rg: ./.ignore: line 1: error parsing glob '{SECRET}': nested") == [
        "./.ignore: an error rg reported (not shown: it may quote a file's contents)"
    ]
    # round 15: the start of a line may be a path the folder named; a quoted line may hold a form feed
    assert SECRET not in "".join(shown_errors(f"rg: unrecognized file type/.ignore: line 1: glob '{SECRET}'"))
    assert SECRET not in "".join(shown_errors(f"rg: ./.ignore: line 1: glob 'a\x0c{SECRET}: b': nested"))


async def test_an_edit_that_would_grow_past_the_cap_is_refused_before_it_is_made(tmp_path: Path) -> None:
    """`replace_all` of one letter by 3,000 made 300 MB of a 200 KB file (the helper's 20,000: 2 GB written, 10 GB
    of memory) before the permission question. The result's size is known first: refused, little memory used."""
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")
    path = make(ctx, tmp_path / "big.txt", b"e\n" * 100_000)
    tracemalloc.start()
    try:
        message = await refused(ctx, path, "e", "X" * 3000, replace_all=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "would make" in message and "256 MB" in message
    assert peak < 32 * 1024 * 1024, peak
    assert "All 100000 occurrences" in await edit(ctx, path, "e", "XYZ", replace_all=True)  # growth within bounds


@pytest.fixture
def huge_ignore(tmp_path: Path) -> Path:
    """A `.gitignore` of 1.5 GB with no line break (sparse here; a clone's zeros compress to nothing in git)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    make_repo(ws, {"a.txt": "hello\n"})
    with open(ws / ".gitignore", "wb") as file:
        file.truncate(1536 * 1024 * 1024)
    return ws


async def test_a_huge_ignore_file_is_a_clear_failure_not_nothing_found(huge_ignore: Path) -> None:
    """rg read the ignore file whole (9 GB of memory for 3 GB) and died; Glob said "No files found". rg's memory is
    bounded now, and a dead rg is an error the model reads."""
    ctx = ToolContext(cwd=huge_ignore, abort=Abort(), data_dir=huge_ignore / ".data")
    with pytest.raises(ToolError, match=r"signal|memory"):
        await GlobTool().call(GlobInput(pattern="*.txt"), ctx)
    with pytest.raises(ToolError, match=r"signal|memory"):
        await grep(huge_ignore, pattern="hello")


async def test_a_notebooks_first_line_cannot_widen_every_line(tmp_path: Path) -> None:
    """Round 15: the first line's indentation (20,000 spaces) was the rewrite's, for every value of a compact body:
    50 KB became 600 MB (3 GB of memory) for a one-cell edit, before the permission question."""
    from tests.test_tool_notebook import CODE, mark_read, notebook, run

    nb = notebook([dict(CODE)])
    nb["metadata"]["pad"] = [0] * 10_000
    body = json.dumps(nb, separators=(",", ":"))
    path = tmp_path / "nb.ipynb"
    path.write_text("{\n" + " " * 20_000 + body[1:] + "\n")
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")
    mark_read(ctx, path)
    tracemalloc.start()
    try:
        await run(ctx, path, cell_id="aaaa1111", new_source="x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert json.loads(path.read_text())["cells"][0]["source"] in ("x", ["x"])
    assert path.stat().st_size < 200_000 and peak < 32 * 1024 * 1024, (path.stat().st_size, peak)


async def test_a_notebooks_closing_lines_and_escapes_count_in_its_bound(tmp_path: Path) -> None:
    """Round 16: the bound counted one line a value, not a container's closing line too: 395 nests of 400 empty
    lists, 8 wide, passed it and made 511 MB (2.6 GB of memory) before the question. Refused now, little memory."""
    from tests.test_tool_notebook import CODE, mark_read, notebook, run

    nb = notebook([dict(CODE)])
    nest: Any = []
    for _ in range(400):
        nest = [nest]
    nb["metadata"]["pad"] = [nest] * 395
    path = tmp_path / "nb.ipynb"
    path.write_text("{\n" + " " * 8 + json.dumps(nb, separators=(",", ":"))[1:])  # 8 wide by its first line
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")
    mark_read(ctx, path)
    before = path.read_bytes()
    tracemalloc.start()
    try:
        with pytest.raises(ToolError, match="over 256 MB"):
            await run(ctx, path, cell_id="aaaa1111", new_source="x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert path.read_bytes() == before and peak < 64 * 1024 * 1024, peak


async def test_a_number_python_wont_read_is_a_clear_error(tmp_path: Path) -> None:
    from tests.test_tool_notebook import CODE, mark_read, notebook, run

    nb = notebook([dict(CODE)])
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb).replace('"nbformat_minor": 5', '"nbformat_minor": 5, "huge": ' + "9" * 5001))
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")
    mark_read(ctx, path)
    with pytest.raises(ToolError):
        await run(ctx, path, cell_id="aaaa1111", new_source="x")
