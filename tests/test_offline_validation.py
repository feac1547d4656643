"""The offline API rejects what the real API rejects (400 invalid_request_error), records it, consumes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from bridge.messages import repair_pairing
from bridge.offline import OfflineServer
from bridge.offline.validation import history_errors

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]
USE = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}
FIRST = {"content": [{"type": "text", "text": "first response"}]}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


INVALID_HISTORIES: dict[str, list[dict[str, Any]]] = {
    "tool_use without result": [user(text("go")), assistant(USE), user(text("next"))],
    "tool_use at the end": [user(text("go")), assistant(USE)],
    "tool_result without tool_use": [user(text("go")), assistant(text("ok")), user(RESULT)],
    "empty content": [user()],
    "empty string content": [{"role": "user", "content": ""}],
    "whitespace-only text": [user(text("  \n"))],
    "two user messages": [user(text("a")), user(text("b"))],
    "first message from the assistant": [assistant(text("hi")), user(text("a"))],
    "text before the tool_result": [user(text("go")), assistant(USE), user(text("note"), RESULT)],
    "duplicate tool_use ids": [user(text("go")), assistant(USE, USE), user(RESULT)],
    "unknown role": [{"role": "system", "content": "x"}],
}


@pytest.fixture
def server() -> Iterator[OfflineServer]:
    with OfflineServer({"name": "v", "responses": [FIRST]}) as server:
        yield server


@pytest.mark.parametrize("case", list(INVALID_HISTORIES))
async def test_invalid_history_is_rejected_and_recorded(server: OfflineServer, case: str) -> None:
    async with anthropic.AsyncAnthropic(base_url=server.base_url, api_key="t", max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(
                model="m",
                max_tokens=10,
                messages=INVALID_HISTORIES[case],  # type: ignore[arg-type]
                tools=TOOLS,  # type: ignore[arg-type]
            )
        assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
        assert [r.status for r in server.rejected] == [400]
        assert server.rejected[0].errors
        message = await client.messages.create(model="m", max_tokens=10, messages=[user(text("ok"))])  # type: ignore[list-item]
    assert message.content[0].text == "first response"  # type: ignore[union-attr]  # nothing was consumed


@pytest.mark.parametrize(
    "body",
    [
        {"max_tokens": 10, "messages": [user(text("a"))]},
        {"model": "m", "messages": [user(text("a"))]},
        {"model": "m", "max_tokens": 0, "messages": [user(text("a"))]},
        {"model": "m", "max_tokens": 10},
        {"model": "m", "max_tokens": 10, "messages": [user(text("go")), assistant(USE), user(RESULT)]},  # no tools
        {
            "model": "m",
            "max_tokens": 10,
            "messages": [user(text("go")), assistant(USE), user(RESULT)],
            "tools": [{"name": "Read", "input_schema": {}}],
        },  # tool_use names a tool that is not offered
        {"model": "m", "max_tokens": 10, "messages": [user(text("a"))], "tools": [{"name": "Bash"}]},
        {
            "model": "m",
            "max_tokens": 2000,
            "messages": [user(text("a"))],
            "thinking": {"type": "enabled", "budget_tokens": 4000},
        },
    ],
)
def test_request_fields_are_checked(server: OfflineServer, body: dict[str, Any]) -> None:
    with httpx2.Client(base_url=server.base_url) as http:
        response = http.post("/v1/messages", json=body)
    assert response.status_code == 400
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert server.rejected and server.valid_requests == []


def test_bad_json_is_rejected(server: OfflineServer) -> None:
    with httpx2.Client(base_url=server.base_url) as http:
        response = http.post("/v1/messages", content=b"{not json", headers={"content-type": "application/json"})
        assert response.status_code == 400
        assert http.get("/nope").status_code == 404
    assert "not valid JSON" in server.rejected[0].errors[0]


def test_a_valid_tool_round_trip_is_accepted(server: OfflineServer) -> None:
    body = {
        "model": "m",
        "max_tokens": 10,
        "tools": TOOLS,
        "messages": [user(text("go")), assistant(text("running"), USE), user(RESULT, text("and then?"))],
    }
    with httpx2.Client(base_url=server.base_url) as http:
        response = http.post("/v1/messages", content=json.dumps(body))
    assert response.status_code == 200, response.text
    assert server.rejected == []


def test_repair_pairing_answers_what_the_oracle_rejects() -> None:
    """What the bridge repairs, the independent oracle accepts (it shares no code with the repair)."""
    # The shapes a conversation of ours can take (not: string content, unknown roles, repeated ids, which no
    # history of ours holds — ids come from the model, and the repair does not rename them).
    ours = [
        "tool_use without result",
        "tool_use at the end",
        "tool_result without tool_use",
        "empty content",
        "whitespace-only text",
        "two user messages",
        "first message from the assistant",
        "text before the tool_result",
    ]
    for name in ours:
        repaired = repair_pairing(INVALID_HISTORIES[name])
        if repaired and repaired[-1]["role"] == "user" and history_errors(repaired) == []:
            continue
        if repaired and repaired[-1]["role"] == "assistant":
            repaired.append(user(text("next")))
        assert not repaired or history_errors(repaired) == [], name


PNG_DATA = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_a_long_history_stays_within_the_apis_limits() -> None:
    """Attack round 7: 100 images in a prompt (the door's limit), then a Read of one more: the next request had
    101 and was refused, and so was every request after. An MCP result with an empty or blank text block beside
    an image was refused the same way. What goes out keeps the 100 latest images and drops the blank blocks."""
    from bridge.messages import within_limits

    image: dict[str, Any] = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_DATA}}
    use: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "x.png"}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "look"}, *[dict(image) for _ in range(100)]]},
        {"role": "assistant", "content": [use]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": ""}, {"type": "text", "text": "  "}, dict(image)],
                }
            ],
        },
    ]
    assert any("101 > 100" in e or "images" in e for e in history_errors(repair_pairing(history)))
    assert history_errors(repair_pairing(history)) != []
    sent = within_limits(repair_pairing(history))
    assert history_errors(sent) == []
    result = sent[2]["content"][0]["content"]
    assert [b["type"] for b in result] == ["image"], "the blank text blocks are gone, the latest image kept"
    assert sent[0]["content"][1]["type"] == "text" and sent[0]["content"][2]["type"] == "image"
    blank_only: list[dict[str, Any]] = [dict(history[0], content=[{"type": "text", "text": "go"}]), history[1]]
    blank_only.append(
        {"role": "user", "content": [dict(history[2]["content"][0], content=[{"type": "text", "text": ""}])]}
    )
    assert history_errors(within_limits(repair_pairing(blank_only))) == []
