"""`initialize` answered before the server loads (bridge/server/fast_initialize.py): from the very first start,
the editor gets the bytes the server itself sends, once; the server then works as always; an `initialize` not plain
enough to be sure of is left to the server; and whatever the first message is, the server reads exactly what the
client sent."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge.offline import OfflineServer
from bridge.server.fast_initialize import AnswerFilter, FirstMessage, Replay
from tests.e2e.harness import server_env

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "processId": 4242,
        "capabilities": {"general": {"positionEncodings": ["utf-16"]}},
        "initializationOptions": {},
    },
}
EARLY = "initialize answered ahead of the server"
# what vscode-languageclient 9 sends, in part: the capabilities pygls reads, and others around them
VSCODE_CAPABILITIES: dict[str, Any] = {
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {"documentChanges": True, "resourceOperations": ["create", "rename", "delete"]},
        "didChangeConfiguration": {"dynamicRegistration": True},
        "workspaceFolders": True,
        "fileOperations": {
            "dynamicRegistration": True,
            "didCreate": True,
            "didRename": True,
            "didDelete": True,
            "willCreate": True,
            "willRename": True,
            "willDelete": True,
        },
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": True, "willSave": True, "willSaveWaitUntil": True, "didSave": True},
        "completion": {"dynamicRegistration": True, "contextSupport": True},
        "rename": {"dynamicRegistration": True, "prepareSupport": True},
    },
    "window": {"showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}}, "workDoneProgress": True},
    "general": {
        "staleRequestSupport": {"cancel": True, "retryOnContentModified": []},
        "regularExpressions": {"engine": "ECMAScript", "version": "ES2020"},
        "markdown": {"parser": "marked", "version": "1.1.0"},
        "positionEncodings": ["utf-16"],
    },
    "notebookDocument": {"synchronization": {"dynamicRegistration": True, "executionSummarySupport": True}},
}


def frame(message: dict[str, Any], *, acp: bool = False) -> bytes:
    body = json.dumps(message).encode()
    return body + b"\n" if acp else b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(stream: asyncio.StreamReader, *, acp: bool = False) -> tuple[bytes, dict[str, Any]]:
    """One framed message: its exact bytes and its JSON."""
    if acp:
        line = await stream.readline()
        return line, json.loads(line)
    head = await stream.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    body = await stream.readexactly(length)
    return head + body, json.loads(body)


async def session(
    env: dict[str, str], ws: Path, *, acp: bool = False, first: dict[str, Any] = INITIALIZE
) -> tuple[bytes, list[dict[str, Any]], str]:
    """Start the bridge, initialize, make a session, prompt; the raw initialize answer, every message and the
    log."""
    command = "acp" if acp else "serve"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bridge.cli.main",
        command,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin and process.stdout
    params = {"protocolVersion": 1, "clientCapabilities": {}} if acp else first["params"]
    process.stdin.write(frame({**first, "params": params}, acp=acp))
    await process.stdin.drain()
    raw, answer = await asyncio.wait_for(read_message(process.stdout, acp=acp), 60)
    seen = [answer]
    process.stdin.write(
        frame(
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}}, acp=acp
        )
    )
    await process.stdin.drain()
    while not any(m.get("id") == 2 for m in seen):
        seen.append((await asyncio.wait_for(read_message(process.stdout, acp=acp), 60))[1])
    sid = next(m for m in seen if m.get("id") == 2)["result"]["sessionId"]
    process.stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
            },
            acp=acp,
        )
    )
    await process.stdin.drain()
    while not any(m.get("id") == 3 for m in seen):
        seen.append((await asyncio.wait_for(read_message(process.stdout, acp=acp), 60))[1])
    process.stdin.close()
    assert process.stderr
    log = (await asyncio.wait_for(process.stderr.read(), 30)).decode()
    await asyncio.wait_for(process.wait(), 30)
    return raw, seen, log


def with_capabilities(capabilities: Any, msg_id: int | str = 1) -> dict[str, Any]:
    return {**INITIALIZE, "id": msg_id, "params": {**INITIALIZE["params"], "capabilities": capabilities}}


def check_served(raw: bytes, seen: list[dict[str, Any]], log: str, msg_id: int | str = 1) -> None:
    """The answer came once, the server's own (it logs a difference), and the session works."""
    assert [m.get("id") for m in seen].count(msg_id) == 1
    assert "differs" not in log, log
    assert next(m for m in seen if m.get("id") == 3)["result"] == {"stopReason": "end_turn"}
    assert json.loads(raw[raw.index(b"{") :])["result"]["serverInfo"]["name"] == "agent-bridge"


BAD_FIELDS = {**INITIALIZE, "params": {"processId": "x", "rootUri": 5, "capabilities": {}, "trace": "loud"}}


@pytest.mark.parametrize(
    ("first", "encoding"),
    [
        (with_capabilities({}), "utf-16"),
        (with_capabilities({"general": {"positionEncodings": ["utf-8"]}}), "utf-8"),
        (with_capabilities({"general": {"positionEncodings": ["latin-1", "utf-32", "utf-8"]}}), "utf-32"),
        (with_capabilities({"general": {"positionEncodings": ["latin-1"]}}), "utf-16"),
        (with_capabilities({"general": None, "textDocument": None}), "utf-16"),
        (with_capabilities(VSCODE_CAPABILITIES), "utf-16"),
        (with_capabilities({**VSCODE_CAPABILITIES, "general": {"positionEncodings": ["utf-8", "utf-16"]}}), "utf-8"),
        (with_capabilities({"workspace": {"fileOperations": "all"}, "window": []}), "utf-16"),  # pygls reads it
        # pygls's types cannot read these whole: the server goes on with what `readable_initialize` keeps
        (with_capabilities({"textDocument": 5, "general": {"positionEncodings": ["utf-8"]}}), "utf-8"),
        (BAD_FIELDS, "utf-16"),
    ],
    ids=[
        "none",
        "utf-8",
        "first-known",
        "unknown-only",
        "nulls",
        "vscode",
        "vscode-utf-8",
        "odd-workspace",
        "bad-text",
        "bad-fields",
    ],
)
async def test_the_first_start_answers_at_once_with_the_servers_own_bytes(
    workspace: Path, data_dir: Path, first: dict[str, Any], encoding: str, request: pytest.FixtureRequest
) -> None:
    with OfflineServer({"responses": []}) as model:
        raw, seen, log = await session(server_env(model, data_dir), workspace, first=first)
    assert EARLY in log  # before the server loaded, in a fresh HOME
    check_served(raw, seen, log)
    # what pygls's types could not read is named, and the server went on
    assert ("could not be read whole" in log) == (request.node.callspec.id.startswith("bad-")), log
    assert json.loads(raw[raw.index(b"{") :])["result"]["capabilities"]["positionEncoding"] == encoding


@pytest.mark.parametrize(
    "first",
    [
        with_capabilities({"general": {"positionEncodings": "utf-8"}}),  # not a list: pygls's reading is its own
        with_capabilities({"general": 7}),
        with_capabilities({"general": {"positionEncodings": ["utf-8", 8]}}),
        with_capabilities({"general": {"positionEncodings": ["utf-8"]}, "deep": json.loads("[" * 70 + "]" * 70)}),
    ],
    ids=["encodings-text", "general-number", "encodings-mixed", "too-deep"],
)
async def test_an_initialize_not_plain_enough_is_left_to_the_server(
    workspace: Path, data_dir: Path, first: dict[str, Any]
) -> None:
    with OfflineServer({"responses": []}) as model:
        raw, seen, log = await session(server_env(model, data_dir), workspace, first=first)
    assert EARLY not in log
    if "deep" in first["params"]["capabilities"]:  # the server refuses it, as any message nested that deep
        assert "error" in json.loads(raw[raw.index(b"{") :])
        return
    check_served(raw, seen, log)


async def test_a_string_id_and_another_request_with_the_same_id_later(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        raw, seen, log = await session(
            server_env(model, data_dir), workspace, first=with_capabilities(VSCODE_CAPABILITIES, "ünï")
        )
    assert EARLY in log
    check_served(raw, seen, log, "ünï")


def test_the_servers_answer_to_what_was_answered_early_is_held_back_once_and_checked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first = FirstMessage(b"")
    first.msg_id, first.answered = 1, b'{"id": 1, "jsonrpc": "2.0", "result": {"a": 1}}'
    first.early = {2: b'{"id": 2, "jsonrpc": "2.0", "result": {"sessionId": "s"}}'}
    out = io.BytesIO()
    writer = AnswerFilter(out, first)
    with caplog.at_level(logging.ERROR, "bridge.server.fast_initialize"):
        writer.write(b'Content-Length: 9\r\n\r\n{"id": 1, "jsonrpc": "2.0", "result": {"a": 2}}')
        writer.write(b'{"id": 2, "jsonrpc": "2.0", "result": {"sessionId": "s"}}')
        writer.write(b'{"id": 1, "jsonrpc": "2.0", "result": {"again": true}}')
        writer.write(b'{"jsonrpc": "2.0", "method": "note", "params": {"id": 2}}')
    assert out.getvalue() == (
        b'{"id": 1, "jsonrpc": "2.0", "result": {"again": true}}'
        b'{"jsonrpc": "2.0", "method": "note", "params": {"id": 2}}'
    )
    assert [r.getMessage()[:31] for r in caplog.records] == ["the early answer to 1 differs f"]


async def test_acp_too(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        cold, _, log = await session(env, workspace, acp=True)
        warm, seen, _ = await session(env, workspace, acp=True)
    assert warm == cold and cold.endswith(b"\n") and EARLY in log and "differs" not in log
    assert json.loads(warm)["result"]["protocolVersion"] == 1
    assert next(m for m in seen if m.get("id") == 3)["result"] == {"stopReason": "end_turn"}


OPS = st.lists(st.tuples(st.sampled_from(["readline", "read"]), st.integers(-1, 12)), max_size=20)


@given(data=st.binary(max_size=60).map(lambda b: b.replace(b"x", b"\n")), split=st.integers(0, 60), ops=OPS)
def test_replay_reads_as_the_stream_would(data: bytes, split: int, ops: list[tuple[str, int]]) -> None:
    expected, replay = (
        io.BufferedReader(io.BytesIO(data)),
        Replay(data[:split], io.BufferedReader(io.BytesIO(data[split:]))),
    )
    for op, n in ops:
        assert getattr(replay, op)(n) == getattr(expected, op)(n), (op, n)
    assert replay.read() == expected.read()
