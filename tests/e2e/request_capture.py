"""The model requests of a few whole flows (`run` and `serve`), exactly as the offline API received them: the
request line and headers byte for byte (names' case and order kept) and the raw body. Only what differs from
one machine or run to the next is replaced by a placeholder (the port, temp paths, the date, the platform).

`python -m tests.e2e.request_capture OUT.json` writes them (to compare two versions of the code by hand).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import platform
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bridge.offline import OfflineServer, RecordedRequest
from tests.e2e.harness import running_editor, server_env

PROMPT = 'héllo ✓ "quoted" \\ back\tslash — 日本 \U0001f600'

THINK_READ_ANSWER: list[dict[str, Any]] = [
    {
        "content": [
            {"type": "thinking", "thinking": "Let me look.", "signature": "sig_fixed_1"},
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "toolu_fixed_1", "name": "Read", "input": {"file_path": "@WS@/notes.txt"}},
        ],
        "stop_reason": "tool_use",
    },
    {"content": [{"type": "text", "text": "It says hello. ✓"}], "stop_reason": "end_turn"},
]
RETRY_THEN_ANSWER: list[dict[str, Any]] = [
    {"fault": {"type": "status", "status": 529, "times": 1}},
    {"content": [{"type": "text", "text": "after a retry"}], "stop_reason": "end_turn"},
]


def _placeholders(text: str, values: dict[str, str]) -> str:
    for name, value in sorted(values.items(), key=lambda item: -len(item[1])):
        if value:
            text = text.replace(value, name)
    return text


def normalized(record: RecordedRequest, values: dict[str, str]) -> dict[str, Any]:
    """One request with the machine- and run-dependent parts replaced (everything else byte for byte)."""
    head = record.head.decode("latin-1")
    lines = head.split("\r\n")
    headers: list[list[str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        value = value.strip()
        low = name.lower()
        if low == "host":
            value = re.sub(r":\d+$", ":<PORT>", value)
        elif low == "content-length":
            assert int(value) == len(record.raw), "Content-Length is the body's length"
            value = "<LEN>"
        elif low == "x-stainless-runtime-version":
            assert value == platform.python_version()
            value = "<PYTHON>"
        elif low in ("x-stainless-os", "x-stainless-arch"):
            value = f"<{low[12:].upper()}>"
        elif low == "x-stainless-package-version" or low == "user-agent":
            value = value.replace(_sdk_version(), "<SDK>")
        headers.append([name, value])
    # JSON-escaped forms of the values, as they sit in the body
    escaped = {name: json.dumps(value, ensure_ascii=False)[1:-1] for name, value in values.items()}
    body = _placeholders(record.raw.decode("utf-8"), escaped)
    return {"request_line": lines[0], "headers": headers, "body": body}


def _sdk_version() -> str:
    from importlib.metadata import version

    return version("anthropic")


def _values(tmp: Path) -> dict[str, str]:
    return {
        "<TMP>": str(tmp),
        "<DATE>": datetime.date.today().isoformat(),
        "<RELEASE>": f"{platform.system().lower()} {platform.release()}",
    }


SENT_AHEAD = "the first request was sent ahead"


async def _run(
    prompt: str,
    responses: list[dict[str, Any]],
    tmp: Path,
    env: dict[str, str],
    args: tuple[str, ...] = (),
    *,
    times: int = 1,
) -> list[RecordedRequest]:
    """`run` `times` times in the same data dir (from the second on, the first request is sent ahead unless the
    SDK sends requests); the last run's requests."""
    ws, data = tmp / "ws", tmp / "data"
    ws.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text("hello\n")
    scenario = json.loads(json.dumps({"responses": responses}).replace("@WS@", str(ws)))
    for _ in range(times):
        with OfflineServer(scenario) as model:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bridge.cli.main",
                "run",
                prompt,
                "--non-interactive",
                "--cwd",
                str(ws),
                *args,
                env=server_env(model, data, **env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), 120)
            assert process.returncode == 0, (out.decode(), err.decode())
            ahead = SENT_AHEAD in err.decode()
            # the schemas ship with the package: the first run after install sends ahead like the next ones
            assert ahead == (env.get("AGENT_BRIDGE_MODEL_TRANSPORT") != "sdk"), err.decode()
            assert "discarded" not in err.decode(), err.decode()
    return model.requests


async def _serve(tmp: Path, env: dict[str, str]) -> list[RecordedRequest]:
    ws, data = tmp / "ws", tmp / "data"
    ws.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    (ws / "notes.txt").write_text("hello\n")
    responses = json.loads(json.dumps(THINK_READ_ANSWER).replace("@WS@", str(ws)))
    responses.append({"content": [{"type": "text", "text": "second answer"}], "stop_reason": "end_turn"})
    async with running_editor({"responses": responses}, ws, data, env=env) as editor:
        sid = await editor.new_session()
        await editor.prompt(sid, PROMPT)
        await editor.prompt(sid, "and again")
        return editor.model.requests


async def capture(tmp: Path, env: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every flow's requests, normalized. `env` is added to each bridge process's environment."""
    env = env or {}
    flows: dict[str, list[dict[str, Any]]] = {}
    makers: tuple[tuple[str, Callable[[Path], Awaitable[list[RecordedRequest]]]], ...] = (
        ("run: thinking, text, a Read, the answer", lambda d: _run(PROMPT, THINK_READ_ANSWER, d, env)),
        ("run: 529 retried", lambda d: _run("retry me", RETRY_THEN_ANSWER, d, env)),
        (
            "run: model and token settings",
            lambda d: _run(
                "hi",
                RETRY_THEN_ANSWER[1:],
                d,
                {**env, "AGENT_BRIDGE_MODEL": "claude-opus-4-1", "AGENT_BRIDGE_STALL_TIMEOUT": "42"},
            ),
        ),
        ("serve: two prompts", lambda d: _serve(d, env)),
        ("run: the first request sent ahead", lambda d: _run(PROMPT, THINK_READ_ANSWER, d, env, times=2)),
        (
            "run: sent ahead with settings",
            lambda d: _run(
                "hi",
                RETRY_THEN_ANSWER,
                d,
                {**env, "AGENT_BRIDGE_MODEL": "claude-opus-4-1", "AGENT_BRIDGE_STALL_TIMEOUT": "42"},
                ("--model", "m2"),
                times=2,
            ),
        ),
    )
    for name, make in makers:
        where = tmp / f"flow{len(flows)}"
        records = await make(where)
        flows[name] = [normalized(r, _values(where)) for r in records]
    return flows


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        result = asyncio.run(
            capture(
                Path(directory).resolve(),
                dict(item.split("=", 1) for item in os.environ.get("CAPTURE_ENV", "").split(",") if item),
            )
        )
    Path(sys.argv[1]).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
