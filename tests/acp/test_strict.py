"""The strict oracle must fail where the SDK's lenient models would quietly accept."""

from __future__ import annotations

from typing import Any

from tests.acp.strict import StrictValidator


def problems(*messages: dict[str, Any], asked: dict[Any, str] | None = None) -> list[str]:
    validator = StrictValidator()
    for msg_id, method in (asked or {}).items():
        validator.outgoing({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {}})
    for message in messages:
        validator.incoming(message)
    return [p for v in validator.violations for p in v.problems]


def update(body: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": body, **params}}


def test_a_valid_update_passes_and_meta_may_hold_anything() -> None:
    chunk = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "hi"},
        "_meta": {"anything": {"goes": [1, 2]}},
    }
    assert problems(update(chunk, _meta={"x": 1})) == []


def test_an_unknown_field_fails_even_deep_inside() -> None:
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi", "color": "red"}}
    assert problems(update(chunk)) == ["update.content.color: unknown field (not in the schema)"]


def test_a_value_the_sdk_would_salvage_fails() -> None:
    call = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "x", "kind": "launch_rockets"}
    [problem] = problems(update(call))
    assert problem.startswith("update.kind: 'launch_rockets' is not valid here")


def test_an_invalid_list_item_the_sdk_would_drop_fails() -> None:
    result = {"protocolVersion": 1, "authMethods": [{"name": "no id"}]}
    [problem] = problems({"jsonrpc": "2.0", "id": 0, "result": result}, asked={0: "initialize"})
    assert "authMethods" in problem and "dropped" in problem


def test_a_method_acp_does_not_define_fails_and_a_null_load_answer_fails() -> None:
    lsp = {"jsonrpc": "2.0", "method": "window/showMessage", "params": {"type": 2, "message": "hi"}}
    cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "perm_1"}}
    found = problems(lsp, cancel, {"jsonrpc": "2.0", "id": 3, "result": None}, asked={3: "session/load"})
    assert len(found) == 3 and "window/showMessage" in found[0] and "$/cancelRequest" in found[1]


def test_acps_own_cancel_and_error_codes_pass() -> None:
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "perm_1"}}
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Unknown session", "data": {"a": 1}}}
    assert problems(cancel, error, asked={1: "session/prompt"}) == []


def test_a_response_to_nothing_and_an_unknown_envelope_member_fail() -> None:
    assert problems({"jsonrpc": "2.0", "id": 9, "result": {}}) != []
    assert (
        problems(
            {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}, "extra": 1}, asked={1: "session/prompt"}
        )
        != []
    )


def test_an_answer_to_session_close_is_checked_and_one_to_a_method_the_oracle_does_not_know_fails() -> None:
    assert problems({"jsonrpc": "2.0", "id": 1, "result": {}}, asked={1: "session/close"}) == []
    [extra] = problems({"jsonrpc": "2.0", "id": 1, "result": {"closed": True}}, asked={1: "session/close"})
    assert extra == "closed: unknown field (not in the schema)"
    [unknown] = problems({"jsonrpc": "2.0", "id": 2, "result": {}}, asked={2: "session/archive"})
    assert "session/archive" in unknown and "no schema" in unknown
