"""`session/new` answered, and the first prompt's request sent, before the server loads
(bridge/server/early_session.py): the editor sees the very answer the server gives (parity, both framings); a
folder's own settings are never read early, so they cannot widen anything before trust; and whatever else comes
early (malformed JSON, an unknown method, a cancel, a disconnect) gets the server's own answer, as later."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge.offline import OfflineServer
from tests.e2e.harness import server_env

EARLY = "answered before the server loaded"
AHEAD = "the first request was sent ahead: its response is taken"


def frame(message: dict[str, Any] | bytes, *, acp: bool) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return body + b"\n" if acp else b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    """The bridge on stdio, spoken to as an editor does: each message sent as soon as the protocol lets it."""

    def __init__(self, process: asyncio.subprocess.Process, *, acp: bool) -> None:
        self.process = process
        self.acp = acp
        self.seen: list[tuple[bytes, dict[str, Any]]] = []

    @classmethod
    async def start(cls, env: dict[str, str], *, acp: bool, args: tuple[str, ...] = ()) -> Client:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bridge.cli.main",
            "acp" if acp else "serve",
            *args,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process, acp=acp)

    async def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame(message, acp=self.acp))
        await self.process.stdin.drain()

    async def read(self) -> tuple[bytes, dict[str, Any]]:
        stream = self.process.stdout
        assert stream is not None
        if self.acp:
            line = await asyncio.wait_for(stream.readline(), 60)
            raw, message = line, json.loads(line)
        else:
            head = await asyncio.wait_for(stream.readuntil(b"\r\n\r\n"), 60)
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))  # type: ignore[union-attr]
            raw = head + await asyncio.wait_for(stream.readexactly(length), 60)
            message = json.loads(raw[len(head) :])
        self.seen.append((raw, message))
        return raw, message

    async def reply(self) -> dict[str, Any]:
        """The next message that is not a notification of ours."""
        while True:
            _, message = await self.read()
            if "method" not in message:
                return message

    async def answer(self, msg_id: int) -> tuple[bytes, dict[str, Any]]:
        for raw, message in self.seen:
            if message.get("id") == msg_id and "method" not in message:
                return raw, message
        while True:
            raw, message = await self.read()
            if message.get("id") == msg_id and "method" not in message:
                return raw, message

    async def initialize(self, options: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}} if self.acp else {"capabilities": {}}
        if options is not None:
            params["initializationOptions"] = options
        await self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        await self.answer(1)
        if not self.acp:
            await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    async def new_session(self, ws: Path, msg_id: int = 2) -> tuple[bytes, dict[str, Any]]:
        await self.send(
            {"jsonrpc": "2.0", "id": msg_id, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}}
        )
        return await self.answer(msg_id)

    async def prompt(self, sid: str, msg_id: int = 3, text: str = "hi") -> None:
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
            }
        )

    async def close(self) -> str:
        """stdin closed: the bridge ends; what it logged."""
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        stderr = await asyncio.wait_for(self.process.stderr.read(), 60)
        assert await asyncio.wait_for(self.process.wait(), 30) == 0
        return stderr.decode(errors="replace")


async def one_session(
    env: dict[str, str], ws: Path, *, acp: bool, options: dict[str, Any] | None = None
) -> tuple[bytes, Client, str]:
    """initialize, session/new, a prompt answered: the raw session/new answer, the client, the log."""
    client = await Client.start(env, acp=acp)
    await client.initialize(options)
    raw, answer = await client.new_session(ws)
    await client.prompt(answer["result"]["sessionId"])
    assert (await client.answer(3))[1]["result"] == {"stopReason": "end_turn"}
    return raw, client, await client.close()


@pytest.mark.parametrize("acp", [True, False], ids=["acp", "serve"])
async def test_the_early_answer_is_the_servers(workspace: Path, data_dir: Path, acp: bool) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        first_log = (await one_session(env, workspace, acp=acp))[2]  # a fresh HOME's first start
        early, early_client, early_log = await one_session(env, workspace, acp=acp)
        # control: a user settings file (empty: nothing changes) leaves session/new to the server
        (data_dir / "config").mkdir(exist_ok=True)
        (data_dir / "config" / "settings.json").write_text("{}")
        late, late_client, late_log = await one_session(env, workspace, acp=acp)
    assert EARLY in first_log and EARLY in early_log and AHEAD in early_log
    assert EARLY not in late_log and AHEAD not in late_log
    assert "differs" not in early_log
    early_sid = json.loads(early[early.index(b"{") :])["result"]["sessionId"]
    late_sid = json.loads(late[late.index(b"{") :])["result"]["sessionId"]
    assert early_sid != late_sid and re.fullmatch(r"sess_[0-9a-f]{20}", early_sid)
    assert early.replace(early_sid.encode(), b"SID") == late.replace(late_sid.encode(), b"SID")  # byte for byte
    for client, sid in ((early_client, early_sid), (late_client, late_sid)):
        answers = [m for _, m in client.seen if m.get("id") == 2 and "method" not in m]
        assert len(answers) == 1  # answered once
        updates = [m["params"] for _, m in client.seen if m.get("method") == "session/update"]
        # the session the server made is the one the answer named, and the editor hears of it in the same order
        assert updates[0]["sessionId"] == sid
        assert updates[0]["update"]["sessionUpdate"] == "available_commands_update"
    assert [m.get("method") for _, m in early_client.seen] == [m.get("method") for _, m in late_client.seen]
    assert len(model.requests) == 3


@pytest.mark.parametrize("trusted", [False, True], ids=["untrusted", "trusted"])
async def test_a_folders_settings_are_left_to_the_server(workspace: Path, data_dir: Path, trusted: bool) -> None:
    """A folder whose own settings ask for another mode: never answered early (its file is not even read), so
    trust decides as it does later — untrusted, the mode stays `default`; trusted (the control: the file takes
    effect), it is the folder's."""
    (workspace / ".agent-bridge").mkdir()
    (workspace / ".agent-bridge" / "settings.json").write_text('{"permissions": {"defaultMode": "bypassPermissions"}}')
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir, AGENT_BRIDGE_TRUST_FOLDER="")  # tests/conftest.py trusts every folder
        client = await Client.start(env, acp=True, args=("--trust-folder",) if trusted else ())
        await client.initialize()
        _, answer = await client.new_session(workspace)
        log = await client.close()
    assert EARLY not in log
    assert answer["result"]["modes"]["currentModeId"] == ("bypassPermissions" if trusted else "default")


BAD: list[dict[str, Any] | bytes] = [
    b'{"jsonrpc": "2.0", "id": 7, "method": ',
    {"jsonrpc": "2.0", "id": 8, "method": "no/such", "params": {}},
]


@pytest.mark.parametrize("order", [1, -1], ids=["malformed-first", "unknown-first"])
@pytest.mark.parametrize("acp", [True, False], ids=["acp", "serve"])
async def test_bad_input_early_is_answered_as_later(workspace: Path, data_dir: Path, acp: bool, order: int) -> None:
    """Malformed JSON and an unknown method, sent where session/new would come and again once the session
    exists: the same errors both times (the early phase ends at the first and the server answers it)."""
    bad = BAD[::order]
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        await one_session(env, workspace, acp=acp)  # serve: the initialize answer kept
        client = await Client.start(env, acp=acp)
        await client.initialize()
        for message in bad:
            await client.send(message)
        early = [await client.reply() for _ in bad]
        _, answer = await client.new_session(workspace)
        for message in bad:
            await client.send(message)
        later = [await client.reply() for _ in bad]
        log = await client.close()
    assert "result" in answer
    assert EARLY not in log  # nothing was answered early after the bad input
    assert early == later
    errors = {m["id"]: m["error"]["code"] for m in early}
    assert errors == {None: -32700, 8: -32601}


async def test_a_cancel_stops_a_prompt_sent_ahead(workspace: Path, data_dir: Path) -> None:
    slow = {"content": [{"type": "text", "text": "slow", "chunks": 2, "delay_ms": 30_000}], "stop_reason": "end_turn"}
    with OfflineServer({"responses": [slow]}) as model:
        env = server_env(model, data_dir)
        client = await Client.start(env, acp=True)
        await client.initialize()
        _, answer = await client.new_session(workspace)
        sid = answer["result"]["sessionId"]
        await client.prompt(sid)
        await model.wait_for_requests(1)
        await client.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})
        _, done = await client.answer(3)
        log = await client.close()
    assert EARLY in log and AHEAD in log
    assert done["result"] == {"stopReason": "cancelled"}


@pytest.mark.parametrize("acp", [True, False], ids=["acp", "serve"])
async def test_a_disconnect_after_the_early_answer_ends_cleanly(workspace: Path, data_dir: Path, acp: bool) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        await one_session(env, workspace, acp=acp)
        client = await Client.start(env, acp=acp)
        await client.initialize()
        _, answer = await client.new_session(workspace)
        log = await client.close()  # exit status 0
    assert EARLY in log and "Traceback" not in log
    assert answer["result"]["sessionId"]


VS_CODE_OPTIONS = {
    "clientCapabilities": {"session": {"notices": {}}},
    "folderTrust": "ask",
    "apiKey": "test-key",
    "model": "claude-opus-4-5",
}


async def test_the_vs_code_extensions_options_are_answered_early_as_the_server_would(
    workspace: Path, data_dir: Path
) -> None:
    """The extension sends its settings as `initializationOptions` (key, model, trust): the early answer takes
    them as the server does (the model named is the current one) and the request sent ahead is the session's."""
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        await one_session(env, workspace, acp=False, options=VS_CODE_OPTIONS)
        early, _, early_log = await one_session(env, workspace, acp=False, options=VS_CODE_OPTIONS)
        (data_dir / "config").mkdir(exist_ok=True)
        (data_dir / "config" / "settings.json").write_text("{}")
        late, _, late_log = await one_session(env, workspace, acp=False, options=VS_CODE_OPTIONS)
    assert EARLY in early_log and AHEAD in early_log and "differs" not in early_log
    assert EARLY not in late_log
    early_answer, late_answer = (json.loads(raw[raw.index(b"{") :])["result"] for raw in (early, late))
    assert early_answer["models"]["currentModelId"] == "claude-opus-4-5"
    early_sid, late_sid = early_answer.pop("sessionId"), late_answer.pop("sessionId")
    assert early_answer == late_answer
    assert early.replace(early_sid.encode(), b"SID") == late.replace(late_sid.encode(), b"SID")


async def test_an_option_that_changes_the_answer_is_left_to_the_server(workspace: Path, data_dir: Path) -> None:
    with OfflineServer({"responses": []}) as model:
        env = server_env(model, data_dir)
        options = {**VS_CODE_OPTIONS, "permissionMode": "plan"}
        await one_session(env, workspace, acp=False, options=options)
        raw, _, log = await one_session(env, workspace, acp=False, options=options)
    assert EARLY not in log
    assert json.loads(raw[raw.index(b"{") :])["result"]["modes"]["currentModeId"] == "plan"
