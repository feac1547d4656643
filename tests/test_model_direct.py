"""The wire transport (bridge/model/direct.py) against the anthropic SDK, side by side over real HTTP: the same
request bytes (request line, every header in order and case, the body), the same events, the same errors and
retries, for every way a stream can go wrong; and its profile matches the installed SDK."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.model import direct as wire
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelError, ModelRequest
from bridge.offline import OfflineServer

TRANSPORTS: tuple[Literal["sdk", "wire"], ...] = ("sdk", "wire")


def request_of(**changes: Any) -> ModelRequest:
    base: dict[str, Any] = dict(
        model="claude-sonnet-4-5",
        system=[{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
        tools=[
            {
                "name": "Read",
                "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                "cache_control": {"type": "ephemeral"},
            }
        ],
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    )
    return ModelRequest(**{**base, **changes})


async def outcome(model: AnthropicModel, request: ModelRequest) -> tuple[list[Any], tuple[str, str, int | None] | None]:
    events: list[Any] = []
    failure = None
    try:
        async for event in model.stream(request):
            events.append(event)
    except ModelError as error:
        failure = (error.kind, str(error), error.status)
    finally:
        await model.aclose()
    return events, failure


def head_of(raw: bytes) -> list[str]:
    return [re.sub(r"^(Host: [^:]+):\d+$", r"\1:<PORT>", line) for line in raw.decode("latin-1").split("\r\n")]


# ---- request bytes --------------------------------------------------------------------------------------

TRICKY_TEXT = 'é ✓ "q" \\ \t\n\r \u2028 \x00\x1f 日本 \U0001f600 </script>'
REQUESTS = {
    "plain": request_of(),
    "no system, no tools": request_of(system=[], tools=[]),
    "tricky text": request_of(messages=[{"role": "user", "content": [{"type": "text", "text": TRICKY_TEXT}]}]),
    "history with tool use": request_of(
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "read it"}]},
            {
                "role": "assistant",
                "content": [
                    {"signature": "sig", "thinking": "hmm", "type": "thinking"},
                    {
                        "id": "toolu_1",
                        "input": {"path": "/x", "n": 1.5, "big": 10**30, "none": None},
                        "name": "Read",
                        "type": "tool_use",
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "x",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ]
    ),
    "thinking and max_tokens": request_of(
        max_tokens=32_000, extra={"thinking": {"type": "enabled", "budget_tokens": 2048}}
    ),
    "image": request_of(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                    {"type": "text", "text": "what is this?"},
                ],
            }
        ]
    ),
}


@pytest.mark.parametrize("name", list(REQUESTS))
@pytest.mark.parametrize(
    "options", [{}, {"stall_timeout": 42}, {"stall_timeout": 0.25, "timeout": 30.0}, {"api_key": None}]
)
async def test_the_request_bytes_are_the_sdks(name: str, options: dict[str, Any]) -> None:
    sent: dict[str, tuple[list[str], bytes]] = {}
    for transport in TRANSPORTS:
        with OfflineServer({"responses": [], "after_last": "end_turn_text"}) as server:
            kwargs: dict[str, Any] = {"api_key": "sk-test", "max_retries": 0, **options}
            model = AnthropicModel(base_url=server.base_url, transport=transport, **kwargs)
            _, failure = await outcome(model, REQUESTS[name])
            assert failure is None, failure
            (record,) = server.requests
            sent[transport] = (head_of(record.head), record.raw)
    assert sent["wire"][0] == sent["sdk"][0]
    assert sent["wire"][1] == sent["sdk"][1]


async def test_a_base_url_with_a_path_and_no_trailing_slash() -> None:
    heads = []
    for transport in TRANSPORTS:
        with OfflineServer({"responses": []}) as server:
            model = AnthropicModel(api_key="k", base_url=server.base_url + "/", transport=transport, max_retries=0)
            await outcome(model, request_of())
            heads.append(head_of(server.requests[0].head))
    assert heads[0] == heads[1]


async def test_a_parameter_the_profile_lacks_goes_through_the_sdk() -> None:
    with OfflineServer({"responses": []}) as server:
        model = AnthropicModel(api_key="k", base_url=server.base_url, transport="wire", max_retries=0)
        _, failure = await outcome(model, request_of(extra={"temperature": 0.5}))
    assert failure is not None and failure[0] == "api" and "temperature" in failure[1], failure


# ---- events and errors ----------------------------------------------------------------------------------

TEXT = "An answer in several pieces, with ✓ and 日本."
FAULTS: dict[str, dict[str, Any]] = {
    "clean": {},
    "garbage": {"type": "garbage", "after_events": 4},
    "garbage in a closed block": {
        "type": "garbage",
        "after_events": 4,
        "data": json.dumps({"type": "content_block_delta", "index": 7, "delta": {"type": "text_delta", "text": "x"}}),
    },
    "message_start without message": {"type": "garbage", "after_events": 4, "data": '{"type": "message_start"}'},
    "null event": {"type": "garbage", "after_events": 3, "data": "null"},
    "truncated": {"type": "truncated_event", "after_events": 4},
    "unclosed": {"type": "unclosed_block"},
    "sse error": {"type": "sse_error", "after_events": 4, "error_type": "api_error", "message": "Internal trouble"},
    "sse overloaded": {"type": "sse_error", "after_events": 2, "error_type": "overloaded_error"},
    "drop": {"type": "drop", "after_events": 4},
    "stall": {"type": "stall", "after_events": 4},
    "unknown event": {"type": "unknown_event", "after_events": 3},
    "529 exhausted": {"type": "status", "status": 529, "times": 5},
    "529 once": {"type": "status", "status": 529, "times": 1},
    "429 with retry-after": {"type": "status", "status": 429, "retry_after": 0.01, "times": 1},
    "429 exhausted": {"type": "status", "status": 429, "retry_after": 0.01, "times": 5},
    "401": {"type": "status", "status": 401},
    "403": {"type": "status", "status": 403},
    "404": {"type": "status", "status": 404, "message": "model: claude-nope"},
    "400": {"type": "status", "status": 400, "message": "messages: bad"},
    "500 once": {"type": "status", "status": 500, "times": 1},
}
BLOCKS: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "Let me think.", "signature": "sig_1"},
    {"type": "text", "text": TEXT, "chunks": 6},
    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "/a", "deep": {"x": [1, None]}}},
]


def _comparable(events: list[Any]) -> list[Any]:
    return [(type(e).__name__, *[getattr(e, k) for k in e.__dataclass_fields__ if k != "delay"]) for e in events]


@pytest.mark.parametrize("name", list(FAULTS))
async def test_events_and_errors_are_the_sdks(name: str) -> None:
    results = {}
    for transport in TRANSPORTS:
        response: dict[str, Any] = {"content": BLOCKS, "stop_reason": "tool_use"}
        if FAULTS[name]:
            response["fault"] = FAULTS[name]
        with OfflineServer({"responses": [response, response], "after_last": "repeat_last"}) as server:
            model = AnthropicModel(
                api_key="k",
                base_url=server.base_url,
                transport=transport,
                max_retries=2,
                max_retry_wait=0.01,
                stall_timeout=0.5,
            )
            events, failure = await outcome(model, request_of())
            results[transport] = (
                _comparable(events),
                failure,
                [head_of(r.head) for r in server.requests],
                [r.raw for r in server.requests],
            )
    assert results["wire"] == results["sdk"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_nothing_listening(transport: str) -> None:
    with OfflineServer({"responses": []}) as server:
        url = server.base_url
    model = AnthropicModel(
        api_key="k",
        base_url=url,
        transport=transport,  # type: ignore[arg-type]
        max_retries=1,
        max_retry_wait=0.01,
    )
    events, failure = await outcome(model, request_of())
    assert failure is not None and failure[0] == "connection"
    assert "Cannot reach the model API at" in failure[1] and "the connection was refused" in failure[1], failure
    assert [type(e).__name__ for e in events] == ["Retrying"]


# ---- arbitrary streams ----------------------------------------------------------------------------------


@asynccontextmanager
async def canned(bodies: list[tuple[int, bytes]]) -> AsyncIterator[str]:
    """An HTTP server answering request n with `bodies[n]` (status, SSE or JSON body), then closing."""
    answers = iter(bodies)

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        await reader.readexactly(length)
        status, body = next(answers)
        kind = b"text/event-stream" if status == 200 else b"application/json"
        writer.write(
            b"HTTP/1.1 %d X\r\ncontent-type: %s\r\ncontent-length: %d\r\nconnection: close\r\n\r\n"
            % (status, kind, len(body))
            + body
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(on_connection, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


def sse(events: list[Any]) -> bytes:
    out = b""
    for event in events:
        kind = event.get("type") if isinstance(event, dict) else None
        name = kind if isinstance(kind, str) else "x"
        out += b"event: " + name.encode() + b"\ndata: " + json.dumps(event).encode() + b"\n\n"
    return out


def valid_stream() -> list[dict[str, Any]]:
    return [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "m",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 3},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t", "name": "R", "input": {}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"a":'}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " 1}"}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]


# Replacements that no lenient SDK coercion turns back into a valid value (a string of digits for an int
# would be: the wire transport reports such type-confused events as corrupted, the SDK coerces some of them).
ODD_VALUES = st.sampled_from([None, "x", [], [1], {}, {"type": "text_delta"}, {"type": "weird"}, 1.5, -1])


@st.composite
def mutated_streams(draw: st.DrawFn) -> list[Any]:
    events: list[Any] = valid_stream()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(events) - 1))
        event = events[i]
        action = draw(
            st.sampled_from(
                ["drop_event", "drop_key", "odd_value", "odd_nested", "extra_key", "unknown_type", "duplicate"]
            )
        )
        if action == "drop_event":
            del events[i]
        elif action == "duplicate":
            events.insert(i, json.loads(json.dumps(event)))
        elif not isinstance(event, dict) or not event:
            continue
        elif action == "drop_key":
            event.pop(draw(st.sampled_from(sorted(event))))
        elif action == "odd_value":
            event[draw(st.sampled_from(sorted(event)))] = draw(ODD_VALUES)
        elif action == "odd_nested":
            inner = [k for k in sorted(event) if isinstance(event[k], dict) and event[k]]
            if inner:
                target = event[draw(st.sampled_from(inner))]
                target[draw(st.sampled_from(sorted(target)))] = draw(ODD_VALUES)
        elif action == "extra_key":
            event[draw(st.sampled_from(["extra", "z_more"]))] = draw(ODD_VALUES)
        else:
            event["type"] = draw(st.sampled_from(["future_event", "ping_like", "content_block_x"]))
        if not events:
            break
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_streams())
async def test_any_mutated_stream_gives_the_sdks_outcome(events: list[Any]) -> None:
    results = []
    for transport in TRANSPORTS:
        async with canned([(200, sse(events))]) as url:
            model = AnthropicModel(api_key="k", base_url=url, transport=transport, max_retries=0)
            got, failure = await outcome(model, request_of())
            results.append((_comparable(got), failure))
    assert results[0] == results[1], events


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b'{"error": {"type": "x"}}',
        b'{"type": "error"}',
        b"[1, 2]",
        json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode(),
    ],
)
@pytest.mark.parametrize("status", [400, 401, 404, 413, 500, 529])
async def test_any_error_body_gives_the_sdks_error(status: int, body: bytes) -> None:
    results = []
    for transport in TRANSPORTS:
        async with canned([(status, body)]) as url:
            model = AnthropicModel(api_key="k", base_url=url, transport=transport, max_retries=0)
            results.append(await outcome(model, request_of()))
    assert results[0] == results[1]


async def test_a_block_only_the_sdk_can_dump_is_dumped_by_the_sdk() -> None:
    """Citations, a server tool call and a block type the profile does not know: kept exactly as the SDK keeps
    them (the history sent back must not change)."""
    stream = [
        *valid_stream()[:1],
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {
                "type": "text",
                "text": "",
                "citations": [
                    {
                        "type": "char_location",
                        "cited_text": "x",
                        "document_index": 0,
                        "document_title": None,
                        "start_char_index": 0,
                        "end_char_index": 1,
                    }
                ],
            },
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {"q": 1}},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "future_block", "b": 1, "a": None}},
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "t", "name": "R", "input": {}, "caller": {"type": "direct"}},
        },
        {"type": "content_block_stop", "index": 3},
        *valid_stream()[-2:],
    ]
    results = []
    for transport in TRANSPORTS:
        async with canned([(200, sse(stream))]) as url:
            model = AnthropicModel(api_key="k", base_url=url, transport=transport, max_retries=0)
            events, failure = await outcome(model, request_of())
            assert failure is None, failure
            results.append([json.dumps(e.block) for e in events if type(e).__name__ == "BlockComplete"])
    assert results[0] == results[1] and len(results[0]) == 4


# ---- the profile ----------------------------------------------------------------------------------------


def test_the_installed_sdk_has_a_profile_that_matches_it() -> None:
    """A new SDK version needs a profile (else every request pays the SDK's import): its API version, the order
    of `messages.create`'s body and the block models' fields are read from the SDK here."""
    import inspect

    import anthropic
    import pydantic
    from anthropic import types
    from anthropic._constants import ANTHROPIC_API_VERSION
    from anthropic.resources.messages.messages import AsyncMessages

    assert wire.sdk_version() == anthropic.__version__
    profile = wire.PROFILES.get(anthropic.__version__)
    assert profile is not None, f"add a wire profile for anthropic {anthropic.__version__} (bridge/model/direct.py)"
    assert profile.api_version == ANTHROPIC_API_VERSION
    source = inspect.getsource(AsyncMessages.create)
    body = source[source.index("body={") :]
    keys = re.findall(r'^\s+"(\w+)": \w+,$', body[: body.index("}")], re.MULTILINE)
    assert tuple(keys) == profile.body_keys
    models: dict[str, type[pydantic.BaseModel]] = {
        "text": types.TextBlock,
        "tool_use": types.ToolUseBlock,
        "thinking": types.ThinkingBlock,
        "redacted_thinking": types.RedactedThinkingBlock,
    }
    for name, model in models.items():
        fields = profile.block_fields[name]
        assert [f for f, _ in fields] == list(model.model_fields), name
        for field_name, kind in fields:
            annotation = model.model_fields[field_name].annotation
            text = str(annotation)
            if kind is str:
                assert annotation is str or text in ("typing.Optional[str]", f"typing.Literal['{name}']"), text
            elif kind is dict:
                assert text.startswith("typing.Dict[str,"), text
            else:
                assert kind is wire.NESTED and "anthropic.types" in text, text


def test_without_a_profile_or_with_custom_headers_the_sdk_sends() -> None:
    assert wire.supported({}) is None
    assert wire.supported({"AGENT_BRIDGE_MODEL_TRANSPORT": "sdk"}) is not None
    assert wire.supported({"ANTHROPIC_CUSTOM_HEADERS": "x: y"}) is not None
    assert wire.supported({"HTTPS_PROXY": "http://proxy:3128"}) is not None


@pytest.mark.parametrize(
    ("env", "base_url", "fast"),
    [
        ({"NO_PROXY": "127.0.0.1,localhost"}, None, True),
        ({"no_proxy": "*"}, None, True),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": "127.0.0.1,localhost"}, "http://127.0.0.1:8080", True),
        ({"HTTPS_PROXY": "http://p:3128", "NO_PROXY": ".anthropic.com"}, None, True),
        ({"HTTP_PROXY": "http://p:3128"}, None, True),  # the API is https: an http proxy does not apply
        ({"https_proxy": "http://p:3128"}, None, False),
        ({"ALL_PROXY": "socks5://p:1080", "NO_PROXY": "example.com"}, None, False),
        ({"HTTP_PROXY": "http://p:3128"}, "http://gateway.internal:8080", False),
    ],
)
def test_the_sdk_is_needed_only_when_a_proxy_applies_to_the_apis_host(
    env: dict[str, str], base_url: str | None, fast: bool
) -> None:
    """Issue 26: NO_PROXY (set on every corporate machine and CI) no longer sends requests down the SDK path."""
    assert (wire.supported(env, base_url=base_url) is None) is fast
    assert AnthropicModel(api_key="k", base_url=None, transport="sdk").transport == "sdk"


def test_transports_share_one_tls_context_for_the_same_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the CA certificates is most of a transport's cost: `serve`'s warm-up built a second context after
    the first request's (issue 26); a changed SSL_CERT_FILE still gets a context that trusts what it names."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)

    def context(transport: Any) -> Any:
        return transport._pool._ssl_context

    first, second = wire._transport(), wire._transport()
    assert context(first) is context(second)
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    with pytest.raises(FileNotFoundError):  # (read at once, as httpcore2 does: not the shared one)
        wire._transport()
