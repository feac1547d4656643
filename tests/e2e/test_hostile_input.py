"""Hostile input never ends the process, in either framing (`serve`: LSP Content-Length, `acp`: ndjson).

The real `agent-bridge serve|acp --offline playground` process is fed raw bytes on stdin: the named cases of
issue 11 (nesting depth, a message over the size limit, invalid UTF-8, bad Content-Length, a header without a
body, unknown headers, a batch, a response to a request never sent, ids of the wrong type, params of every
wrong type for every method) and a seeded stream of generated messages. Every request whose id can be read
gets a response; the process stays alive, its memory bounded, and a normal prompt still works at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bridge.server.jsonrpc import MAX_MESSAGE_BYTES
from bridge.server.nesting import MAX_DEPTH
from tests.poll import poll

SEED = 20261203
GENERATED = 600  # per framing
MiB = 1024 * 1024
# JSON-RPC's codes, and ACP's auth_required (-32000) and resource_not_found (-32002)
STANDARD_CODES = {-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002}
METHODS = [
    "initialize",
    "session/new",
    "session/load",
    "session/list",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "$/cancelRequest",
    "initialized",
    "no/such/method",
    "authenticate",
]
LSP_ONLY = ["textDocument/didOpen", "workspace/didChangeConfiguration", "$/setTrace"]


class RawBridge:
    """The bridge process with raw stdin; everything it writes to stdout, parsed, in `received`."""

    def __init__(self, acp: bool, workspace: Path, data_dir: Path) -> None:
        self.acp = acp
        self.workspace = workspace
        self.data_dir = data_dir
        self.received: list[dict[str, Any]] = []
        self.process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.stderr_path = data_dir / "stderr.log"
        self._next = 0

    async def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(
            AGENT_BRIDGE_DATA_DIR=str(self.data_dir),
            AGENT_BRIDGE_CONFIG_DIR=str(self.data_dir / "config"),
            HOME=str(self.data_dir / "home"),
            AGENT_BRIDGE_LOG="WARNING",
        )
        (self.data_dir / "home").mkdir(exist_ok=True)
        command = "acp" if self.acp else "serve"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bridge.cli.main",
            command,
            "--offline",
            "playground",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            limit=64 * MiB,
        )
        self._reader = asyncio.create_task(self._read())

    async def stop(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        if self.process.returncode is None:
            self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 20)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self._reader is not None:
            self._reader.cancel()
        self._stderr.close()

    async def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        stdout = self.process.stdout
        while True:
            if self.acp:
                line = await stdout.readline()
                if not line:
                    return
                self.received.append(json.loads(line))
                continue
            length = 0
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            self.received.append(json.loads(await stdout.readexactly(length)))

    # ---- writing ---------------------------------------------------------------------------------------

    def frame(self, body: bytes) -> bytes:
        return body + b"\n" if self.acp else b"Content-Length: %d\r\n\r\n" % len(body) + body

    async def raw(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def send(self, body: bytes | dict[str, Any]) -> None:
        await self.raw(self.frame(body if isinstance(body, bytes) else json.dumps(body).encode()))

    def new_id(self, prefix: str = "r") -> str:
        self._next += 1
        return f"{prefix}-{self._next}"

    async def request(self, method: str, params: Any = None, *, timeout: float = 30.0) -> dict[str, Any]:
        msg_id = self.new_id("call")
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(msg_id, timeout=timeout)

    # ---- reading ---------------------------------------------------------------------------------------

    def responses(self, msg_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.received if "method" not in m and m.get("id") == msg_id]

    async def wait(self, predicate: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
        def ready() -> Any:
            value = predicate()
            assert value or self.alive, (
                f"the bridge exited ({self.process.returncode if self.process else '?'}) "
                f"waiting for {what}:\n{self.stderr_tail()}"
            )
            return value

        try:
            return await poll(ready, timeout=timeout, what=what, interval=0.01)
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n{self.stderr_tail()}") from None

    async def response(self, msg_id: Any, *, timeout: float = 30.0) -> dict[str, Any]:
        found: list[dict[str, Any]] = await self.wait(
            lambda: self.responses(msg_id), f"the answer to {msg_id!r}", timeout
        )
        return found[0]

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def stderr_tail(self) -> str:
        return self.stderr_text()[-3000:]

    def stderr_text(self) -> str:
        return self.stderr_path.read_bytes().decode(errors="replace")

    def memory_kib(self, field: str = "VmRSS") -> int:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise AssertionError(f"no {field}")

    async def initialize(self) -> None:
        params = (
            {"protocolVersion": 1, "clientCapabilities": {}}
            if self.acp
            else {"capabilities": {}, "rootUri": self.workspace.as_uri()}
        )
        assert "result" in await self.request("initialize", params)
        if not self.acp:
            await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    async def barrier(self) -> None:
        """Everything sent before has been read and handled (sync handlers run in order)."""
        assert "result" in await self.request("session/list", {})

    async def prompt_works(self) -> None:
        new = await self.request("session/new", {"cwd": str(self.workspace), "mcpServers": []})
        sid = new["result"]["sessionId"]
        answer = await self.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
        assert answer.get("result") == {"stopReason": "end_turn"}, answer
        chunks = [
            m["params"]["update"]["content"]["text"]
            for m in self.received
            if m.get("method") == "session/update"
            and m["params"]["sessionId"] == sid
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert "hello" in "".join(chunks)


@pytest.fixture(params=["serve", "acp"])
async def bridge(request: pytest.FixtureRequest, workspace: Path, data_dir: Path) -> Any:
    raw = RawBridge(request.param == "acp", workspace, data_dir)
    await raw.start()
    try:
        await raw.initialize()
        yield raw
    finally:
        await raw.stop()


def _error(message: dict[str, Any]) -> dict[str, Any]:
    assert "error" in message, message
    error: dict[str, Any] = message["error"]
    assert error["code"] in STANDARD_CODES and isinstance(error["message"], str), message
    assert "Traceback" not in error["message"], message
    return error


# ---- the named cases --------------------------------------------------------------------------------------


async def case_nesting_depth(bridge: RawBridge) -> None:
    await bridge.send(b"[" * 300_000)
    await bridge.send(b'{"a":' * 200_000)
    deep = b'{"jsonrpc": "2.0", "id": "deep", "method": "session/list", "params": ' + b"[" * 300_000
    await bridge.send(deep)
    assert "nests deeper" in _error(await bridge.response("deep"))["message"]
    valid = (
        b'{"jsonrpc": "2.0", "id": "deep2", "method": "session/list", "params": {"a": '
        + b"[" * (MAX_DEPTH + 10)
        + b"]" * (MAX_DEPTH + 10)
        + b"}}"
    )
    await bridge.send(valid)
    assert _error(await bridge.response("deep2"))["code"] == -32700
    assert "nests deeper" in bridge.stderr_text()


async def case_a_message_over_the_size_limit_is_skipped_unheld(bridge: RawBridge) -> None:
    before = bridge.memory_kib("VmHWM")
    size = 6 * MAX_MESSAGE_BYTES  # 192 MiB
    head = b'{"jsonrpc": "2.0", "id": "big", "method": "session/prompt", "params": {"text": "'
    tail = b'"}}'
    piece = b"x" * MiB
    if bridge.acp:
        await bridge.raw(head)
    else:
        await bridge.raw(b"Content-Length: %d\r\n\r\n" % size + head)
    left = size - len(head) - len(tail)
    while left > 0:
        await bridge.raw(piece[:left])
        left -= len(piece)
    await bridge.raw(tail + (b"\n" if bridge.acp else b""))
    error = _error(await bridge.response("big", timeout=60))
    assert error["code"] == -32600 and "over the 32 MiB limit" in error["message"]
    grown_mib = (bridge.memory_kib("VmHWM") - before) / 1024
    # LSP skips the body in 1 MiB pieces; ndjson holds at most the limit (then discards to the newline).
    assert grown_mib < (3 * MAX_MESSAGE_BYTES / MiB if bridge.acp else 24), grown_mib


async def case_invalid_utf8(bridge: RawBridge) -> None:
    await bridge.send(b'{"jsonrpc": "2.0", "id": "utf", "method": "session/list", "params": {"cwd": "\xff\xfe"}}')
    assert "not valid UTF-8" in _error(await bridge.response("utf"))["message"]
    await bridge.send(b"\xff\xfe\xfd\x00\x80garbage")
    await bridge.wait(
        lambda: len([m for m in bridge.received if m.get("id") is None and "error" in m]) >= 1,
        "a parse error with id null",
    )


async def case_huge_integer(bridge: RawBridge) -> None:
    await bridge.send(
        b'{"jsonrpc": "2.0", "id": "int", "method": "session/list", "params": {"n": ' + b"9" * 5000 + b"}}"
    )
    assert _error(await bridge.response("int"))["code"] == -32700


async def case_a_batch_gets_an_error_per_request(bridge: RawBridge) -> None:
    batch = [
        {"jsonrpc": "2.0", "id": "b1", "method": "session/list"},
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {}},
        {"jsonrpc": "2.0", "id": "b2", "method": "session/new", "params": {}},
    ]
    await bridge.send(json.dumps(batch).encode())
    for msg_id in ("b1", "b2"):
        assert "batch" in _error(await bridge.response(msg_id))["message"]
    await bridge.send(b"[]")


async def case_ids_of_the_wrong_type_and_stray_responses(bridge: RawBridge) -> None:
    nulls = len([m for m in bridge.received if m.get("id") is None and "error" in m])
    for bad in ({"a": 1}, [1], True, 1.5):
        await bridge.send({"jsonrpc": "2.0", "id": bad, "method": "session/list", "params": {}})
    await bridge.wait(
        lambda: len([m for m in bridge.received if m.get("id") is None and "error" in m]) >= nulls + 4,
        "four invalid-request errors with id null",
    )
    for stray in (
        {"jsonrpc": "2.0", "id": "never-sent", "result": {"outcome": "x"}},
        {"jsonrpc": "2.0", "id": 424242, "error": {"code": -1, "message": "no"}},
        {"jsonrpc": "2.0", "id": 7, "error": "not an object"},
        {"jsonrpc": "2.0", "id": {"x": 1}, "result": None},
    ):
        await bridge.send(stray)
    await bridge.barrier()
    assert not bridge.responses("never-sent") and not bridge.responses(424242)


async def case_framing_faults(bridge: RawBridge) -> None:
    """LSP: a wrong Content-Length (too short, too long, negative, not a number), a header without a body, a
    head without Content-Length, unknown headers, an over-long header line. ndjson: blank lines, a line that is
    not JSON, a message split by a stray newline."""
    body = json.dumps({"jsonrpc": "2.0", "id": "after", "method": "session/list", "params": {}}).encode()
    if bridge.acp:
        await bridge.raw(b"\n\n   \n\r\n")
        await bridge.raw(b'{"jsonrpc": "2.0", "id": "split",\n "method": "session/list"}\n')
        await bridge.raw(b"Content-Length: 12\r\n\r\n")
    else:
        good = json.dumps({"jsonrpc": "2.0", "id": "short", "method": "session/list", "params": {}}).encode()
        await bridge.raw(b"Content-Length: 10\r\n\r\n" + good)  # too short: the rest is noise before the next
        await bridge.raw(b"Content-Length: -5\r\n\r\n{}")
        await bridge.raw(b"Content-Length: abc\r\n\r\n{}")
        await bridge.raw(b"Content-Length: 99999999999999999999999\r\n\r\n{}")
        await bridge.raw(b"Content-Length: 0\r\n\r\n")
        await bridge.raw(b"Content-Type: application/json\r\n\r\n{}")
        await bridge.raw(b"X-Long: " + b"a" * 100_000 + b"\r\nContent-Length: 2\r\n\r\n{}")
        unknown = json.dumps({"jsonrpc": "2.0", "id": "unknown-headers", "method": "session/list"}).encode()
        await bridge.raw(b"X-Whatever: 1\r\nContent-Type: x\r\ncontent-length:%d\n\n" % len(unknown) + unknown)
        long = json.dumps({"jsonrpc": "2.0", "id": "too-long", "method": "session/list"}).encode()
        await bridge.raw(b"Content-Length: %d\r\n\r\n" % (len(long) + 30) + long + b" " * 30)
    await bridge.send(body)
    assert "result" in await bridge.response("after")
    if not bridge.acp:
        assert "result" in await bridge.response("unknown-headers")
        assert "result" in await bridge.response("too-long")
        log = bridge.stderr_text()
        assert "bad Content-Length" in log and "without Content-Length" in log and "header line of" in log


WRONG_PARAMS: list[Any] = [
    None,
    1,
    "x",
    True,
    [],
    [1, "a"],
    {},
    {"sessionId": 1},
    {"sessionId": None},
    {"sessionId": "nope"},
    {"sessionId": ["a"]},
    {"cwd": 1},
    {"cwd": "relative"},
    {"cwd": "/no/such/dir"},
    {"cwd": ["/"]},
    {"prompt": "x"},
    {"modeId": 5},
    {"capabilities": 3},
    {"protocolVersion": "one"},
    {"id": {"a": 1}},
    {"_meta": 5},
    {"sessionId": "SID", "prompt": "text"},
    {"sessionId": "SID", "prompt": [1]},
    {"sessionId": "SID", "prompt": [{"type": "text", "text": 5}]},
    {"sessionId": "SID", "prompt": [{"type": "x"}]},
    {"sessionId": "SID", "prompt": []},
    {"sessionId": "SID", "modeId": None},
    {"sessionId": "SID", "modeId": "yolo"},
    {"cwd": "WS", "mcpServers": "x"},
    {"cwd": "WS", "mcpServers": [1]},
    {"cwd": "WS", "mcpServers": [{"name": 1}]},
    {"cwd": "WS", "mcpServers": [{"name": "s", "command": 5, "args": "x"}]},
    {"sessionId": "SID", "cwd": 3},
]


async def case_params_of_every_wrong_type_for_every_method(bridge: RawBridge) -> None:
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]

    def fill(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        return {"SID": sid, "WS": str(bridge.workspace)}.get(value, value) if isinstance(value, str) else value

    sent: list[tuple[str, str, Any]] = []
    for method in [m for m in METHODS if m != "initialized"] + ([] if bridge.acp else LSP_ONLY):
        for params in WRONG_PARAMS:
            msg_id = bridge.new_id("p")
            message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
            if params is not None:
                message["params"] = fill(params)
            await bridge.send(message)
            sent.append((msg_id, method, params))
    try:
        await bridge.wait(lambda: all(bridge.responses(i) for i, _, _ in sent), "an answer to every request", 60)
    except TimeoutError:
        raise AssertionError(f"unanswered: {[(m, p) for i, m, p in sent if not bridge.responses(i)]}") from None
    internal = []
    for msg_id, method, params in sent:
        answer = bridge.responses(msg_id)[0]
        if "error" in answer:
            error = _error(answer)
            if error["code"] == -32603:
                internal.append((method, params, error["message"]))
    assert not internal, internal  # a wrong param is the caller's error (-32602), never an internal one


@pytest.mark.parametrize("bridge", ["acp"], indirect=True)
async def test_an_invalid_prompt_image_is_refused_and_poisons_nothing(bridge: RawBridge) -> None:
    for image in ({"type": "image"}, {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="}):
        new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
        sid = new["result"]["sessionId"]
        answer = await bridge.request(
            "session/prompt", {"sessionId": sid, "prompt": [image, {"type": "text", "text": "see"}]}
        )
        assert "error" in answer and _error(answer)["code"] == -32602, answer
        again = await bridge.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        assert again.get("result") == {"stopReason": "end_turn"}, again


# ---- the generated stream ---------------------------------------------------------------------------------

_WORDS = ["", "x", "nope", "hello", "😀", "\u0000", "../..", "a" * 300, "session/new", "jsonrpc", "id"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.35:
        return rng.choice([None, True, False, 0, -1, 2**40, 1.5, rng.choice(_WORDS), rng.randint(-9, 9)])
    if roll < 0.65:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = [
        "sessionId",
        "cwd",
        "prompt",
        "modeId",
        "mcpServers",
        "type",
        "text",
        "_meta",
        "capabilities",
        "protocolVersion",
        "name",
        "command",
        "args",
        "env",
        "id",
        rng.choice(_WORDS),
    ]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _generated(rng: random.Random, bridge: RawBridge, sid: str) -> tuple[bytes, str | None]:
    """One generated message (unframed body) and the id whose answer is owed, if any."""
    methods = METHODS + ([] if bridge.acp else LSP_ONLY)
    roll = rng.random()
    if roll < 0.55:  # a request/notification with well-formed envelope, params of any shape
        method = rng.choice(methods)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        owed = None
        if rng.random() < 0.8:
            owed = message["id"] = bridge.new_id("g")
        if rng.random() < 0.85:
            params = _value(rng)
            if isinstance(params, dict) and rng.random() < 0.5:
                params["sessionId"] = sid
            if isinstance(params, dict) and "prompt" in params and rng.random() < 0.5:
                params["prompt"] = [{"type": "text", "text": rng.choice(["hi", "hello", "x"])}]
            message["params"] = params
        return json.dumps(message).encode(), owed
    if roll < 0.65:  # an id of the wrong type, or a response nobody asked for
        message = {"jsonrpc": "2.0", "id": rng.choice([[1], {"a": 1}, True, 2.5, None, "stray", 999_999])}
        if rng.random() < 0.5:
            message["method"] = rng.choice(methods)
        else:
            message[rng.choice(["result", "error"])] = _value(rng)
        return json.dumps(message).encode(), None
    if roll < 0.75:  # any JSON at all
        return json.dumps(_value(rng)).encode(), None
    if roll < 0.85:  # truncated JSON
        whole = json.dumps({"jsonrpc": "2.0", "id": "t", "method": rng.choice(methods), "params": _value(rng)})
        return whole[: rng.randint(1, max(1, len(whole) - 1))].encode(), None
    if roll < 0.92:  # bytes
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 60))).replace(b"\n", b" "), None
    msg_id = bridge.new_id("g")  # a request with invalid UTF-8 inside: answered with its id
    return (
        b'{"jsonrpc": "2.0", "id": "%s", "method": "session/list", "params": {"cwd": "\xc3\x28"}}' % msg_id.encode()
    ), msg_id


async def case_generated_messages(bridge: RawBridge) -> None:
    rng = random.Random(SEED)
    new = await bridge.request("session/new", {"cwd": str(bridge.workspace), "mcpServers": []})
    sid = new["result"]["sessionId"]
    started = time.monotonic()
    owed: list[str] = []
    for _ in range(GENERATED):
        body, msg_id = _generated(rng, bridge, sid)
        if bridge.acp:
            body = body.replace(b"\n", b" ")
        await bridge.send(body)
        if msg_id is not None:
            owed.append(msg_id)
    try:
        await bridge.wait(lambda: all(bridge.responses(i) for i in owed), f"answers to {len(owed)} requests", 60)
    except TimeoutError:
        raise AssertionError(f"unanswered: {[i for i in owed if not bridge.responses(i)]}") from None
    for msg_id in owed:
        assert len(bridge.responses(msg_id)) == 1, msg_id
        answer = bridge.responses(msg_id)[0]
        if "error" in answer:
            _error(answer)
    assert bridge.alive
    assert bridge.memory_kib("VmRSS") < 600 * 1024
    print(f"{GENERATED} generated messages ({len(owed)} owed an answer) in {time.monotonic() - started:.1f} s")


CASES = [
    case_nesting_depth,
    case_a_message_over_the_size_limit_is_skipped_unheld,
    case_invalid_utf8,
    case_huge_integer,
    case_a_batch_gets_an_error_per_request,
    case_ids_of_the_wrong_type_and_stray_responses,
    case_framing_faults,
    case_params_of_every_wrong_type_for_every_method,
    case_generated_messages,
]


async def test_hostile_input_never_ends_the_process(bridge: RawBridge) -> None:
    """Every named case, then the generated stream, on one process; then a normal prompt still works."""
    await bridge.prompt_works()  # everything is loaded (the SDK is imported in the background at first)
    settled = bridge.memory_kib("VmRSS")
    for case in CASES:
        started = time.monotonic()
        await case(bridge)
        assert bridge.alive, f"{case.__name__} ended the process:\n{bridge.stderr_tail()}"
        print(f"{case.__name__}: {time.monotonic() - started:.1f} s")
    await bridge.prompt_works()
    assert bridge.alive
    grown_mib = (bridge.memory_kib("VmRSS") - settled) / 1024
    assert grown_mib < 100, f"RSS grew by {grown_mib:.0f} MiB"
