"""`AnthropicModel.stream` lets nothing but a `ModelError` out, whatever the stream does (the real SDK over HTTP
to the offline API); the events before the failure stand."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import BlockDelta, ModelError, ModelRequest, ResponseComplete
from bridge.offline import OfflineServer

TEXT = "Hello there, this is an answer in several pieces."
CLASS_NAMES = re.compile(r"\b[A-Z]\w*(Error|Exception|Group)\b|\w+Error\(|Traceback")


def response(fault: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = {"content": [{"type": "text", "text": TEXT, "chunks": 6}], "stop_reason": "end_turn"}
    return {**answer, "fault": fault} if fault else answer


async def run(fault: dict[str, Any] | None, **options: Any) -> tuple[str, ModelError | None, list[Any]]:
    with OfflineServer({"responses": [response(fault)]}) as server:
        model = AnthropicModel(api_key="k", base_url=server.base_url, max_retries=0, **options)
        request = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "hi"}])
        events: list[Any] = []
        failure: ModelError | None = None
        try:
            async for event in model.stream(request):
                events.append(event)
        except ModelError as error:  # anything else fails the test
            failure = error
        finally:
            await model.aclose()
    text = "".join(e.text for e in events if isinstance(e, BlockDelta))
    return text, failure, events


@pytest.mark.parametrize(
    ("fault", "kind", "says"),
    [
        ({"type": "garbage", "after_events": 4}, "stream_invalid", "not valid JSON"),
        (
            {
                "type": "garbage",
                "after_events": 4,
                "data": '{"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}',
            },
            "stream_invalid",
            "not open",
        ),
        (
            {"type": "garbage", "after_events": 4, "data": '{"type": "message_start"}'},
            "stream_invalid",
            "could not be read",
        ),
        ({"type": "truncated_event", "after_events": 4}, "stream_dropped", "ended before it was complete"),
        ({"type": "unclosed_block"}, "stream_invalid", "never finished"),
        (
            {"type": "sse_error", "after_events": 4, "error_type": "api_error", "message": "Internal trouble"},
            "api",
            "Internal trouble",
        ),
        ({"type": "drop", "after_events": 4}, "stream_dropped", "dropped mid-response"),
        ({"type": "stall", "after_events": 4}, "stream_stalled", "sent nothing for 0.5 s"),
    ],
)
async def test_every_fault_is_one_clear_model_error(fault: dict[str, Any], kind: str, says: str) -> None:
    text, failure, _ = await run(fault, stall_timeout=0.5)
    assert failure is not None
    assert failure.kind == kind and says in str(failure), str(failure)
    assert not CLASS_NAMES.search(str(failure)), str(failure)
    assert text and TEXT.startswith(text)  # what came before the fault was yielded


async def test_an_unknown_event_is_ignored() -> None:
    text, failure, events = await run({"type": "unknown_event", "after_events": 3})
    assert failure is None and text == TEXT
    assert isinstance(events[-1], ResponseComplete) and events[-1].stop_reason == "end_turn"


async def test_nothing_listening_is_a_connection_error() -> None:
    with OfflineServer({"responses": []}) as server:
        url = server.base_url
    model = AnthropicModel(api_key="k", base_url=url, max_retries=0)
    request = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ModelError) as caught:
        async for _ in model.stream(request):
            pass
    await model.aclose()
    assert caught.value.kind == "connection" and "Cannot reach the model API" in str(caught.value)
    assert not CLASS_NAMES.search(str(caught.value)), str(caught.value)
