"""NotebookEdit: one cell replaced, inserted or deleted; the notebook stays valid and in Jupyter's style."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.tools.base import AnyTool, FileSnapshot, ToolContext, ToolError
from bridge.tools.notebook_edit import NotebookEditInput, NotebookEditTool, preview_notebook_edit
from tests.test_tool_edit import Editor, editor_ctx, read_tool


async def validated(tool: AnyTool, data: Any, ctx: ToolContext) -> str | None:
    """validate_input then validate_target, as the loop runs them (the second once the permission step allows)."""
    return await tool.validate_input(data, ctx) or await tool.validate_target(data, ctx)


def notebook(cells: list[dict[str, Any]], minor: int = 5) -> dict[str, Any]:
    return {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    }


CODE = {
    "cell_type": "code",
    "execution_count": 3,
    "id": "aaaa1111",
    "metadata": {},
    "outputs": [{"name": "stdout", "output_type": "stream", "text": ["2\n"]}],
    "source": ["x = 1\n", "print(x + 1)"],
}
MARKDOWN = {"cell_type": "markdown", "id": "bbbb2222", "metadata": {}, "source": ["# Título ☕"]}


def jupyter_json(nb: dict[str, Any]) -> str:
    """Exactly how Jupyter (nbformat) writes a notebook."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path / "data")


@pytest.fixture
def nb_path(tmp_path: Path, ctx: ToolContext) -> Path:
    path = tmp_path / "analysis.ipynb"
    path.write_text(jupyter_json(notebook([dict(CODE), dict(MARKDOWN)])), encoding="utf-8")
    mark_read(ctx, path)
    return path


def mark_read(ctx: ToolContext, path: Path) -> None:
    st = path.stat()
    ctx.read_files[path] = FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


async def run(ctx: ToolContext, path: Path, **fields: Any) -> str:
    result = await NotebookEditTool().call(NotebookEditInput(notebook_path=str(path), **fields), ctx)
    assert isinstance(result.content, str)
    return result.content


async def refused(ctx: ToolContext, path: Path | str, **fields: Any) -> str:
    before = Path(path).read_bytes() if Path(path).is_file() else None
    data = NotebookEditInput(notebook_path=str(path), **fields)
    message = await validated(NotebookEditTool(), data, ctx)
    with pytest.raises(ToolError) as info:
        await NotebookEditTool().call(data, ctx)
    assert message == str(info.value)
    assert (Path(path).read_bytes() if Path(path).is_file() else None) == before
    return str(info.value)


async def test_replace_code_cell_clears_outputs_and_keeps_jupyter_style(ctx: ToolContext, nb_path: Path) -> None:
    text = await run(ctx, nb_path, cell_id="aaaa1111", new_source="y = 2\nprint(y)")
    assert "Updated code cell aaaa1111" in text
    expected = notebook([dict(CODE, source=["y = 2\n", "print(y)"], outputs=[], execution_count=None), dict(MARKDOWN)])
    assert nb_path.read_text(encoding="utf-8") == jupyter_json(expected)


async def test_cell_n_form_addresses_by_index(ctx: ToolContext, nb_path: Path) -> None:
    await run(ctx, nb_path, cell_id="cell-1", new_source="## New heading")
    assert load(nb_path)["cells"][1]["source"] == ["## New heading"]


async def test_replace_can_change_the_cell_type(ctx: ToolContext, nb_path: Path) -> None:
    await run(ctx, nb_path, cell_id="aaaa1111", new_source="Now prose", cell_type="markdown")
    cell = load(nb_path)["cells"][0]
    assert cell == {"cell_type": "markdown", "id": "aaaa1111", "metadata": {}, "source": ["Now prose"]}
    await run(ctx, nb_path, cell_id="bbbb2222", new_source="1 + 1", cell_type="code")
    cell = load(nb_path)["cells"][1]
    assert cell["outputs"] == [] and cell["execution_count"] is None
    assert list(cell) == sorted(cell)


async def test_insert_after_a_cell_and_at_the_start(ctx: ToolContext, nb_path: Path) -> None:
    text = await run(ctx, nb_path, cell_id="aaaa1111", new_source="print('mid')", cell_type="code", edit_mode="insert")
    cells = load(nb_path)["cells"]
    assert [c["cell_type"] for c in cells] == ["code", "code", "markdown"]
    inserted = cells[1]
    assert inserted["source"] == ["print('mid')"] and inserted["outputs"] == [] and inserted["execution_count"] is None
    assert len(inserted["id"]) == 8 and inserted["id"] in text
    await run(ctx, nb_path, new_source="# Top", cell_type="markdown", edit_mode="insert")
    assert load(nb_path)["cells"][0]["source"] == ["# Top"]


async def test_insert_needs_a_cell_type(ctx: ToolContext, nb_path: Path) -> None:
    assert "cell_type is required" in await refused(ctx, nb_path, new_source="x", edit_mode="insert")


async def test_replace_one_past_the_end_appends(ctx: ToolContext, nb_path: Path) -> None:
    await run(ctx, nb_path, cell_id="cell-2", new_source="tail()")
    cells = load(nb_path)["cells"]
    assert len(cells) == 3 and cells[2]["cell_type"] == "code" and cells[2]["source"] == ["tail()"]


async def test_delete_removes_the_cell(ctx: ToolContext, nb_path: Path) -> None:
    text = await run(ctx, nb_path, cell_id="bbbb2222", new_source="", edit_mode="delete")
    assert "Deleted cell bbbb2222" in text
    assert [c["id"] for c in load(nb_path)["cells"]] == ["aaaa1111"]
    assert NotebookEditTool().is_destructive(
        NotebookEditInput(notebook_path="/x.ipynb", new_source="", edit_mode="delete")
    )


async def test_unknown_cell_id_lists_the_ids(ctx: ToolContext, nb_path: Path) -> None:
    message = await refused(ctx, nb_path, cell_id="zzz", new_source="x")
    assert "'zzz' not found" in message and "aaaa1111, bbbb2222" in message


async def test_out_of_range_index_is_refused(ctx: ToolContext, nb_path: Path) -> None:
    assert "has 2 cells" in await refused(ctx, nb_path, cell_id="cell-7", new_source="x")


async def test_replace_without_cell_id_is_refused(ctx: ToolContext, nb_path: Path) -> None:
    assert "cell_id is required" in await refused(ctx, nb_path, new_source="x")


async def test_notebook_not_read_is_refused(ctx: ToolContext, nb_path: Path) -> None:
    ctx.read_files.clear()
    assert "has not been read" in await refused(ctx, nb_path, cell_id="cell-0", new_source="x")


async def test_stale_notebook_is_refused(ctx: ToolContext, nb_path: Path) -> None:
    nb_path.write_text(jupyter_json(notebook([dict(CODE)])), encoding="utf-8")
    assert "modified since it was read" in await refused(ctx, nb_path, cell_id="cell-0", new_source="x")


async def test_not_a_notebook_is_refused(ctx: ToolContext, tmp_path: Path) -> None:
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    mark_read(ctx, path)
    assert "use Edit" in await refused(ctx, path, cell_id="cell-0", new_source="x")
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    mark_read(ctx, bad)
    assert "not valid JSON" in await refused(ctx, bad, cell_id="cell-0", new_source="x")
    assert "absolute path" in await refused(ctx, "rel.ipynb", cell_id="cell-0", new_source="x")


async def test_old_notebooks_without_ids_and_string_sources(ctx: ToolContext, tmp_path: Path) -> None:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "intro"}]
    path = tmp_path / "old.ipynb"
    path.write_text(json.dumps(notebook(cells, minor=4), indent=2) + "\n")
    mark_read(ctx, path)
    await run(ctx, path, cell_id="cell-0", new_source="intro, edited")
    await run(ctx, path, cell_id="cell-0", new_source="code()", cell_type="code", edit_mode="insert")
    text = path.read_text()
    assert text.startswith('{\n  "cells"')  # 2-space indentation kept
    saved = load(path)["cells"]
    assert saved[0] == {"cell_type": "markdown", "metadata": {}, "source": "intro, edited"}
    assert "id" not in saved[1] and saved[1]["source"] == "code()"


async def test_result_shows_a_diff_and_preview_writes_nothing(ctx: ToolContext, nb_path: Path) -> None:
    before = nb_path.read_text(encoding="utf-8")
    data = NotebookEditInput(notebook_path=str(nb_path), cell_id="bbbb2222", new_source="changed")
    assert preview_notebook_edit(data, ctx).old_text is None, "not looked at before validate_target"
    assert await NotebookEditTool().validate_target(data, ctx) is None
    diff = preview_notebook_edit(data, ctx)
    assert diff.old_text == before and '"changed"' in diff.new_text
    assert nb_path.read_text(encoding="utf-8") == before
    result = await NotebookEditTool().call(data, ctx)
    assert result.display == [diff]
    assert [p.name for p in nb_path.parent.iterdir() if p.name.endswith(".tmp")] == []


async def test_an_open_notebook_is_edited_in_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "open.ipynb"
    path.write_text(jupyter_json(notebook([dict(CODE)])), encoding="utf-8")
    unsaved = jupyter_json(notebook([dict(CODE), dict(MARKDOWN)]))
    editor = Editor({path: unsaved})
    ctx = editor_ctx(tmp_path, editor)
    await read_tool(ctx, path)
    data = NotebookEditInput(notebook_path=str(path), cell_id="bbbb2222", new_source="## From the buffer")
    assert await validated(NotebookEditTool(), data, ctx) is None, "cell bbbb2222 exists only unsaved"
    result = await NotebookEditTool().call(data, ctx)
    assert json.loads(editor.buffers[path])["cells"][1]["source"] == ["## From the buffer"]
    assert len(load(path)["cells"]) == 1, "the disk is untouched"
    assert result.raw_output is not None and result.raw_output["written"] == "editor"
