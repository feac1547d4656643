"""The offline Messages API, driven by the real anthropic SDK over HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from bridge.offline import OfflineServer, RecordedRequest, Scenario, ScenarioError, load_scenario
from tests.poll import poll

HELLO: dict[str, Any] = {
    "content": [{"type": "text", "text": "Hello there, world", "chunks": 4}],
    "stop_reason": "end_turn",
    "delay_ms": 5,
}
TOOLS = [
    {"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
    {"name": "Read", "description": "read", "input_schema": {"type": "object"}},
]
USER: Any = [{"role": "user", "content": "hi"}]

ServerFactory = Callable[..., OfflineServer]


@pytest.fixture
def make_server() -> Iterator[ServerFactory]:
    servers: list[OfflineServer] = []

    def make(*responses: dict[str, Any], after_last: str = "end_turn_text") -> OfflineServer:
        server = OfflineServer({"name": "test", "responses": list(responses), "after_last": after_last})
        server.start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def sdk(server: OfflineServer, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=server.base_url, api_key="test", max_retries=options.pop("retries", 0), **options
    )


async def stream(client: anthropic.AsyncAnthropic, messages: Any = None, **kwargs: Any) -> tuple[Any, list[Any]]:
    events: list[Any] = []
    async with client.messages.stream(
        model="claude-offline", max_tokens=1000, messages=messages or USER, **kwargs
    ) as s:
        async for event in s:
            events.append(event)
        return await s.get_final_message(), events


async def test_streams_text_in_the_requested_chunks(make_server: ServerFactory) -> None:
    server = make_server(HELLO)
    async with sdk(server) as client:
        message, events = await stream(client)
    assert message.content[0].text == "Hello there, world"
    assert message.stop_reason == "end_turn"
    assert len([e for e in events if e.type == "text"]) == 4
    assert message.id.startswith("msg_")
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert [r.status for r in server.requests] == [200]
    assert server.requests[0].body["messages"] == USER
    assert server.rejected == []


async def test_thinking_text_and_tool_use_blocks(make_server: ServerFactory) -> None:
    server = make_server(
        {
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig1"},
                {"type": "text", "deltas": ["Let me ", "check."]},
                {"type": "tool_use", "name": "Bash", "input": {"command": "echo hi", "nested": {"a": [1, 2]}}},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "/x"}, "id": "toolu_given"},
            ]
        }
    )
    async with sdk(server) as client:
        message, events = await stream(client, tools=TOOLS)
    thinking, text, bash, read = message.content
    assert (thinking.type, thinking.thinking, thinking.signature) == ("thinking", "hmm", "sig1")
    assert text.text == "Let me check."
    assert bash.name == "Bash" and bash.input == {"command": "echo hi", "nested": {"a": [1, 2]}}
    assert bash.id.startswith("toolu_") and read.id == "toolu_given"
    assert message.stop_reason == "tool_use"
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"} <= set(deltas)
    assert deltas.count("input_json_delta") > 2  # tool input arrives in pieces


async def test_generated_ids_are_unique(make_server: ServerFactory) -> None:
    tool = {"content": [{"type": "tool_use", "name": "Bash", "input": {}}]}
    server = make_server(tool, tool)
    async with sdk(server) as client:
        first, _ = await stream(client, tools=TOOLS)
        second, _ = await stream(client, tools=TOOLS)
    assert first.id != second.id and first.content[0].id != second.content[0].id


async def test_non_stream_request_gets_the_full_message(make_server: ServerFactory) -> None:
    server = make_server(
        {
            "content": [
                {"type": "text", "text": "plain"},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "/a"}},
            ]
        }
    )
    async with sdk(server) as client:
        message = await client.messages.create(model="m", max_tokens=100, messages=USER, tools=TOOLS)  # type: ignore[arg-type]
    assert message.content[0].text == "plain"  # type: ignore[union-attr]
    assert message.content[1].input == {"file_path": "/a"}  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.model == "m"


async def test_overloaded_fault_repeats_times_then_answers(make_server: ServerFactory) -> None:
    server = make_server({"fault": {"type": "status", "status": 529, "retry_after": 0.05, "times": 3}}, HELLO)
    async with sdk(server) as client:
        for _ in range(3):
            with pytest.raises(anthropic.OverloadedError) as caught:
                await stream(client)
            assert caught.value.status_code == 529
            assert caught.value.response.headers["retry-after"] == "0.05"
            assert caught.value.response.headers["retry-after-ms"] == "50"
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"
    assert [r.status for r in server.requests] == [529, 529, 529, 200]
    assert len(server.valid_requests) == 1 and server.rejected == []


async def test_sdk_retries_honour_retry_after(make_server: ServerFactory) -> None:
    server = make_server({"fault": {"type": "status", "status": 429, "retry_after": 0.01, "times": 2}}, HELLO)
    async with sdk(server, retries=2) as client:
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"
    assert [r.status for r in server.requests] == [429, 429, 200]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, anthropic.RateLimitError),
        (401, anthropic.AuthenticationError),
        (404, anthropic.NotFoundError),
        (500, anthropic.InternalServerError),
        (403, anthropic.PermissionDeniedError),
    ],
)
async def test_status_faults_raise_the_sdk_error(
    make_server: ServerFactory, status: int, error: type[anthropic.APIStatusError]
) -> None:
    server = make_server({"fault": {"type": "status", "status": status}})
    async with sdk(server) as client:
        with pytest.raises(error) as caught:
            await stream(client)
    assert caught.value.status_code == status
    body: Any = caught.value.body
    assert body["error"]["type"] in {
        "rate_limit_error",
        "authentication_error",
        "not_found_error",
        "api_error",
        "permission_error",
    }


async def test_drop_cuts_the_stream_and_the_server_keeps_serving(make_server: ServerFactory) -> None:
    server = make_server(
        {
            "fault": {"type": "drop", "after_events": 5},
            "content": [{"type": "text", "text": "partial text that is cut", "chunks": 6}],
        },
        HELLO,
    )
    async with sdk(server) as client:
        received: list[str] = []
        with pytest.raises(httpx2.RemoteProtocolError):
            async with client.messages.stream(model="m", max_tokens=100, messages=USER) as s:
                async for text in s.text_stream:
                    received.append(text)
        assert 0 < len("".join(received)) < len("partial text that is cut")
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"


async def test_sse_error_raises_api_status_error(make_server: ServerFactory) -> None:
    server = make_server(
        {"fault": {"type": "sse_error", "after_events": 3, "error_type": "overloaded_error", "message": "Overloaded"}},
        HELLO,
    )
    async with sdk(server) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await stream(client)
        assert "Overloaded" in str(caught.value)
        message, _ = await stream(client)  # same connection pool, the stream ended cleanly
    assert message.stop_reason == "end_turn"


async def _raw_event_types(client: anthropic.AsyncAnthropic) -> list[str]:
    kinds: list[str] = []
    stream = await client.messages.create(model="m", max_tokens=100, messages=USER, stream=True)
    async for event in stream:
        kinds.append(event.type)
    return kinds


async def test_garbage_json_in_a_data_line(make_server: ServerFactory) -> None:
    server = make_server({**HELLO, "fault": {"type": "garbage", "after_events": 3}}, HELLO)
    async with sdk(server) as client:
        with pytest.raises(json.JSONDecodeError):  # the SDK's own error: not an anthropic.APIError
            await _raw_event_types(client)
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"


async def test_a_truncated_event_ends_the_stream_early(make_server: ServerFactory) -> None:
    server = make_server({**HELLO, "fault": {"type": "truncated_event", "after_events": 3}})
    async with sdk(server) as client:
        kinds = await _raw_event_types(client)
    assert kinds == ["message_start", "content_block_start", "content_block_delta"]  # no error, no message_stop


async def test_an_unknown_event_is_passed_through(make_server: ServerFactory) -> None:
    server = make_server({**HELLO, "fault": {"type": "unknown_event", "after_events": 2, "name": "brand_new"}})
    async with sdk(server) as client:
        kinds = await _raw_event_types(client)
    assert kinds[2] == "brand_new" and kinds[-1] == "message_stop"


async def test_an_unclosed_block(make_server: ServerFactory) -> None:
    server = make_server({**HELLO, "fault": {"type": "unclosed_block"}})
    async with sdk(server) as client:
        kinds = await _raw_event_types(client)
    assert "content_block_stop" not in kinds and kinds[-2:] == ["message_delta", "message_stop"]


def test_garbage_without_streaming_is_a_cut_json_body(make_server: ServerFactory) -> None:
    server = make_server({**HELLO, "fault": {"type": "garbage"}})
    with httpx2.Client(base_url=server.base_url) as http:
        response = http.post("/v1/messages", json={"model": "m", "max_tokens": 10, "messages": USER})
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_fault_after_events_is_checked() -> None:
    with pytest.raises(ScenarioError, match="after_events"):
        Scenario.from_responses([{"fault": {"type": "garbage", "after_events": -1}}])


async def test_stall_ends_with_the_client_read_timeout(make_server: ServerFactory) -> None:
    server = make_server({"fault": {"type": "stall", "after_events": 4}}, HELLO)
    async with sdk(server, timeout=0.3) as client:
        with pytest.raises(httpx2.ReadTimeout):  # headers came, the body stalls: not an anthropic.APIError
            await stream(client)
        await poll(lambda: server.active_streams == 0)
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"


async def test_stall_ended_by_cancelling_the_consumer(make_server: ServerFactory) -> None:
    server = make_server({"fault": {"type": "stall", "after_events": 2}}, HELLO)
    async with sdk(server) as client:
        started = asyncio.Event()

        async def consume() -> None:
            async with client.messages.stream(model="m", max_tokens=100, messages=USER) as s:
                async for _ in s:
                    started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 5)
        assert server.active_streams == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await poll(lambda: server.active_streams == 0)
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"


async def test_stall_on_stop_does_not_hang(make_server: ServerFactory) -> None:
    server = make_server({"fault": {"type": "stall", "after_events": 1}})
    async with sdk(server) as client:
        task = asyncio.create_task(stream(client))
        await poll(lambda: server.active_streams == 1)
        await asyncio.to_thread(server.stop)
        with pytest.raises((httpx2.RemoteProtocolError, anthropic.APIConnectionError)):
            await task


async def test_client_disconnecting_mid_stream(make_server: ServerFactory) -> None:
    slow = {"content": [{"type": "text", "text": "x" * 400, "chunks": 100}], "delay_ms": 10}
    server = make_server(slow, HELLO)
    async with sdk(server) as client:
        async with client.messages.stream(model="m", max_tokens=100, messages=USER) as s:
            async for event in s:
                if event.type == "text":
                    break  # leaving the block closes the response mid-stream
        await poll(lambda: server.active_streams == 0)
        message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"


async def test_twenty_concurrent_streams(make_server: ServerFactory) -> None:
    server = make_server(HELLO, after_last="repeat_last")
    async with sdk(server) as client:
        results = await asyncio.gather(*(stream(client, [{"role": "user", "content": f"n{i}"}]) for i in range(20)))
    assert all(message.content[0].text == "Hello there, world" for message, _ in results)
    assert len(server.valid_requests) == 20
    assert sorted(r.body["messages"][0]["content"] for r in server.requests) == sorted(f"n{i}" for i in range(20))


async def test_keep_alive_serves_several_requests_on_one_connection(make_server: ServerFactory) -> None:
    server = make_server(HELLO, after_last="repeat_last")
    body = json.dumps({"model": "m", "max_tokens": 10, "messages": USER, "stream": True}).encode()
    request = (
        b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )
    reader, writer = await asyncio.open_connection(server.host, server.port)
    try:
        for _ in range(2):
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head
            await reader.readuntil(b"0\r\n\r\n")
    finally:
        writer.close()
        await writer.wait_closed()
    assert len(server.valid_requests) == 2


async def test_after_last_end_turn_text_and_repeat_last(make_server: ServerFactory) -> None:
    ending = make_server(HELLO)
    repeating = make_server(HELLO, after_last="repeat_last")
    async with sdk(ending) as a, sdk(repeating) as b:
        await stream(a)
        extra, _ = await stream(a)
        await stream(b)
        again, _ = await stream(b)
    assert "no more responses" in extra.content[0].text and extra.stop_reason == "end_turn"
    assert again.content[0].text == "Hello there, world"


async def test_prompt_cache_reads_the_prefix_of_an_earlier_request(make_server: ServerFactory) -> None:
    server = make_server(HELLO, after_last="repeat_last")
    system = [{"type": "text", "text": "You are a careful agent. " * 200, "cache_control": {"type": "ephemeral"}}]
    async with sdk(server) as client:
        first, _ = await stream(client, system=system)
        history = [*USER, {"role": "assistant", "content": "Hello there, world"}, {"role": "user", "content": "more"}]
        second, _ = await stream(client, history, system=system)
    assert first.usage.cache_creation_input_tokens > 1000 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0


async def test_count_tokens(make_server: ServerFactory) -> None:
    server = make_server()
    async with sdk(server) as client:
        counted = await client.messages.count_tokens(model="m", messages=USER)
    assert counted.input_tokens > 0
    assert server.requests == [] and server.other_requests[0].path == "/v1/messages/count_tokens"


async def test_responder_failure_is_a_500_with_the_reason(make_server: ServerFactory) -> None:
    def broken(request: RecordedRequest) -> dict[str, Any]:
        raise KeyError("no such step")

    server = OfflineServer(Scenario.from_responder(broken, name="broken"))
    with server:
        async with sdk(server) as client:
            with pytest.raises(anthropic.InternalServerError):
                await stream(client)
    assert server.requests[0].status == 500 and "no such step" in server.requests[0].errors[0]


async def test_wait_for_requests_times_out_with_what_it_saw(make_server: ServerFactory) -> None:
    server = make_server(HELLO)
    async with sdk(server) as client:
        await stream(client)
    assert len(await server.wait_for_requests(1)) == 1
    with pytest.raises(TimeoutError, match=r"waited 0.05s for 2 requests, got 1: #0 status=200"):
        await server.wait_for_requests(2, timeout=0.05)
    with pytest.raises(TimeoutError):
        server.wait_for_requests_sync(2, timeout=0.01)


def test_scenario_files_and_bad_scenarios(tmp_path: Path) -> None:
    path = tmp_path / "hello.json"
    path.write_text(json.dumps({"responses": [HELLO], "after_last": "repeat_last"}))
    scenario = load_scenario(path)
    assert scenario.name == "hello" and scenario.after_last == "repeat_last" and len(scenario.responses) == 1
    with pytest.raises(ScenarioError, match="fault type"):
        Scenario.from_dict({"responses": [{"fault": {"type": "explode"}}]})
    with pytest.raises(ScenarioError, match="block type"):
        Scenario.from_dict({"responses": [{"content": [{"type": "image"}]}]})
    with pytest.raises(ScenarioError, match="unknown scenario"):
        load_scenario("no-such-builtin")


async def test_command_line_prints_the_url_and_serves(tmp_path: Path) -> None:
    path = tmp_path / "hello.json"
    path.write_text(json.dumps({"responses": [HELLO]}))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.offline",
        "--scenario",
        str(path),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line.startswith("listening on http://127.0.0.1:")
        async with anthropic.AsyncAnthropic(base_url=line.split()[-1], api_key="t", max_retries=0) as client:
            message, _ = await stream(client)
        assert message.content[0].text == "Hello there, world"
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 10) == 0


@pytest.fixture
async def echo_client() -> AsyncIterator[tuple[OfflineServer, anthropic.AsyncAnthropic]]:
    with OfflineServer({"name": "one", "responses": [HELLO], "after_last": "repeat_last"}) as server:
        async with sdk(server) as client:
            yield server, client


async def test_context_manager_and_base_url(echo_client: tuple[OfflineServer, anthropic.AsyncAnthropic]) -> None:
    server, client = echo_client
    assert server.base_url.startswith("http://127.0.0.1:")
    message, _ = await stream(client)
    assert message.content[0].text == "Hello there, world"
