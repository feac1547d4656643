"""Attack round 14 on the protocol: the editor's answer to a request of the bridge's own that can't be read (nested
too deep, no result, too big) was answered as if it were a request — a JSON-RPC error carrying the bridge's own id,
a response to a request the editor never made — and the question it answered waited for ever. Now the question
fails (a permission question is denied), the turn goes on, and nothing is sent back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hostile_input import RawBridge, bridge  # noqa: F401 - the fixture


def _unreadable(msg_id: Any, kind: str) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(msg_id).encode()
    if kind == "nested":
        return head + b',"result":' + b"[" * 100 + b"]" * 100 + b"}"
    return head + b"}"  # no result and no error


@pytest.mark.parametrize("kind", ["nested", "no result"])
async def test_an_unreadable_answer_to_a_permission_question_denies_it(
    bridge: RawBridge,  # noqa: F811
    kind: str,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran"
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": f"run: touch {marker}"}]}
    await bridge.send({"jsonrpc": "2.0", "id": "P", "method": "session/prompt", "params": params})
    question = await bridge.wait(
        lambda: next((m for m in bridge.received if m.get("method") == "session/request_permission"), None),
        "the permission question",
    )
    await bridge.send(_unreadable(question["id"], kind))
    answered = await bridge.response("P")
    assert answered.get("result", {}).get("stopReason") == "end_turn", answered
    assert not marker.exists()
    assert not bridge.responses(question["id"]), "a response to a request the editor never made"
    again = await bridge.request("session/list", {})
    assert "result" in again


async def test_the_editors_error_text_is_bounded_in_the_log(bridge: RawBridge, tmp_path: Path) -> None:  # noqa: F811
    """An error answer of 100,000 characters was logged whole (and an fs/* one went to the model whole)."""
    marker = tmp_path / "ran"
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    params = {"sessionId": new["result"]["sessionId"], "prompt": [{"type": "text", "text": f"run: touch {marker}"}]}
    await bridge.send({"jsonrpc": "2.0", "id": "P", "method": "session/prompt", "params": params})
    question = await bridge.wait(
        lambda: next((m for m in bridge.received if m.get("method") == "session/request_permission"), None),
        "the permission question",
    )
    await bridge.send({"jsonrpc": "2.0", "id": question["id"], "error": {"code": -32603, "message": "x" * 100_000}})
    assert (await bridge.response("P")).get("result", {}).get("stopReason") == "end_turn"
    assert not marker.exists()
    assert "permission request failed" in bridge.stderr_text()
    assert max(len(line) for line in bridge.stderr_text().splitlines()) < 2000
