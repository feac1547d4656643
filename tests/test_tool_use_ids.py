"""Issue 21 item 6: ids from the API are checked where they enter. A gateway at ANTHROPIC_BASE_URL chooses the
tool_use ids; one with `../` made Bash's spill file land outside the data dir. The stream parser (one state
machine for both transports) refuses such an id with a clear ModelError, and everything that makes a file name
of an id checks it again (defence in depth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bridge.execution.output import OutputBuffer, spill_path
from bridge.messages import valid_tool_use_id
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import BlockComplete, ModelError, ModelRequest
from bridge.offline import OfflineServer
from bridge.tools.storage import bound_result, result_path

BAD_IDS = ["../../../../tmp/planted", "toolu_01/../../x", "toolu_ok\n", "", "x" * 129, "toolu_é", "a b", "a.b"]


@pytest.mark.parametrize("value", ["toolu_01A09q90qw90lq917835lq9", "call_abc-123", "srvtoolu_X", "x" * 128])
def test_ids_the_api_gives_are_valid(value: str) -> None:
    assert valid_tool_use_id(value)


@pytest.mark.parametrize("value", [*BAD_IDS, None, 7])
def test_anything_else_is_not(value: Any) -> None:
    assert not valid_tool_use_id(value)


def _tool_response(block_id: str) -> dict[str, Any]:
    return {
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": block_id, "name": "Bash", "input": {"command": "ls"}},
        ],
        "stop_reason": "tool_use",
    }


async def _stream(block_id: str, transport: str) -> tuple[list[Any], ModelError | None]:
    with OfflineServer({"responses": [_tool_response(block_id)]}) as server:
        model = AnthropicModel(api_key="k", base_url=server.base_url, max_retries=0, transport=transport)  # type: ignore[arg-type]
        request = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "hi"}])
        events: list[Any] = []
        try:
            async for event in model.stream(request):
                events.append(event)
        except ModelError as error:
            return events, error
        finally:
            await model.aclose()
    return events, None


@pytest.mark.parametrize("transport", ["wire", "sdk"])
@pytest.mark.parametrize("bad", ["../../../../tmp/planted", "toolu_1\n", "a.b"])
async def test_the_stream_parser_refuses_a_bad_id_on_both_transports(transport: str, bad: str) -> None:
    events, failure = await _stream(bad, transport)
    assert failure is not None and failure.kind == "stream_invalid", failure
    assert "not an id the Messages API gives" in str(failure) and repr(bad) in str(failure)
    assert not any(isinstance(e, BlockComplete) and e.block.get("type") == "tool_use" for e in events)
    assert any(isinstance(e, BlockComplete) and e.block.get("text") == "Let me look." for e in events), (
        "what came before the bad block stands"
    )


@pytest.mark.parametrize("transport", ["wire", "sdk"])
async def test_a_good_id_passes_unchanged(transport: str) -> None:
    events, failure = await _stream("toolu_01GoodId", transport)
    assert failure is None
    [use] = [e.block for e in events if isinstance(e, BlockComplete) and e.block["type"] == "tool_use"]
    assert use["id"] == "toolu_01GoodId"


# ---- every id that becomes a file name is checked again -----------------------------------------------------


def _inside(path: Path, root: Path) -> bool:
    return path.resolve().is_relative_to(root.resolve())


@pytest.mark.parametrize("bad", BAD_IDS)
def test_file_names_made_of_ids_stay_in_the_data_dir(bad: str, tmp_path: Path) -> None:
    data = tmp_path / "deep" / "data"
    data.mkdir(parents=True)
    for path in (spill_path(data, bad), result_path(data, bad)):
        assert _inside(path, data) and path.parent.name in ("bash-output", "tool-results"), path
        assert bad not in path.name or bad == ""


def test_a_spill_named_by_a_bad_id_would_land_outside_the_control(tmp_path: Path) -> None:
    """The control: the spill file named as Bash named it before (the id joined in) lands outside the data dir;
    named by `spill_path`, it stays in."""
    data = tmp_path / "deep" / "data"
    bad = "../../planted"
    for where in (data / "bash-output" / f"{bad}.log", spill_path(data, bad)):
        output = OutputBuffer(head=10, tail=10, spill_path=where)
        output.append("x" * 100)  # beyond head + tail: it spills
        output.close()
    assert (tmp_path / "deep" / "planted.log").exists(), "the old naming escaped the data dir"
    spilled = list((data / "bash-output").glob("*.log"))
    assert len(spilled) == 1 and spilled[0].read_text() == "x" * 100


def test_a_stored_result_under_a_bad_id_stays_in_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    text = bound_result("y" * 500, limit=100, data_dir=data, tool_use_id="../../escaped")
    assert not (tmp_path / "escaped.txt").exists() and not list(tmp_path.glob("*.txt"))
    [stored] = list((data / "tool-results").iterdir())
    assert stored.read_text() == "y" * 500 and str(stored) in text
