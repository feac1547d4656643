"""`agent-bridge acp`: the same agent over ACP's own stdio framing (one JSON-RPC message per line)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bridge.offline import OfflineServer
from tests.e2e.harness import server_env, text_response, tool_response


async def test_a_turn_over_ndjson_with_a_permission(workspace: Path, data_dir: Path) -> None:
    marker = workspace / "made"
    scenario = {"responses": [tool_response(("Bash", {"command": f"touch {marker}"})), text_response("done")]}
    with OfflineServer(scenario) as model:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bridge.cli.main",
            "acp",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=server_env(model, data_dir),
        )
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout

        def send(message: dict[str, Any]) -> None:
            stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")

        async def next_message(predicate: Any) -> dict[str, Any]:
            while True:
                line = await asyncio.wait_for(stdout.readline(), 15)
                assert line, "the bridge closed stdout"
                message: dict[str, Any] = json.loads(line)
                if predicate(message):
                    return message
                seen.append(message)

        seen: list[dict[str, Any]] = []
        try:
            send({"id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}})
            init = await next_message(lambda m: m.get("id") == 0)
            assert init["result"]["protocolVersion"] == 1 and "agentCapabilities" in init["result"]
            send({"id": 1, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}})
            sid = (await next_message(lambda m: m.get("id") == 1))["result"]["sessionId"]
            send(
                {
                    "id": 2,
                    "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "make it"}]},
                }
            )
            ask = await next_message(lambda m: m.get("method") == "session/request_permission")
            send({"id": ask["id"], "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
            answer = await next_message(lambda m: m.get("id") == 2)
            assert answer["result"] == {"stopReason": "end_turn"}
            assert marker.exists()
            texts = [
                m["params"]["update"]["content"]["text"]
                for m in seen
                if m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            ]
            assert "".join(texts) == "done"
            send({"id": 3, "method": "no/such/method"})  # errors are answered; the process goes on
            stdin.write(b"{not json\n")
            error = await next_message(lambda m: "error" in m and m.get("id") is None)
            assert error["error"]["code"] == -32700
        finally:
            stdin.close()
            await asyncio.wait_for(process.wait(), 15)
        assert model.rejected == []
