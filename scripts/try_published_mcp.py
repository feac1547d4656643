"""Two published MCP servers through `agent-bridge acp`, as an ACP editor shows them (not part of scripts/test).

npm `@modelcontextprotocol/server-everything` and PyPI `mcp-server-time`, given to `session/new` as the editor's
stdio servers; a scripted offline model calls a tool of each, lists and reads a resource, gets an image and a
long-running call with progress; `/mcp` and a server prompt as a slash command run too. Prints what the user
sees (agent text and notices, tool calls, their results, permission questions) and whether every message the
bridge sent was valid ACP (the strict oracle of tests/acp).

Install the servers first (outside the repository), or point at them with EVERYTHING_MCP / TIME_MCP:
  npm install --prefix /tmp/published-mcp/npm @modelcontextprotocol/server-everything
  python3 -m venv /tmp/published-mcp/time-venv && /tmp/published-mcp/time-venv/bin/pip install mcp-server-time
Exit status: 0 done, 1 something went wrong, 2 a server is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acp import schema

from tests.acp.editor import Editor, running_agent

EVERYTHING = os.environ.get("EVERYTHING_MCP", "/tmp/published-mcp/npm/node_modules/.bin/mcp-server-everything")
TIME = os.environ.get("TIME_MCP", "/tmp/published-mcp/time-venv/bin/mcp-server-time")
RESOURCE = "demo://resource/static/document/features.md"


def tool_use(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "name": name, "input": data}], "stop_reason": "tool_use"}


def answer(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "stop_reason": "end_turn"}


SCRIPT = [
    answer("Hello."),  # turn 1: the servers start in the background
    tool_use("mcp__everything__echo", {"message": "hello from the bridge"}),  # turn 3 (turn 2 is /mcp)
    tool_use("mcp__time__get_current_time", {"timezone": "Europe/Paris"}),
    tool_use(
        "mcp__time__convert_time", {"source_timezone": "Europe/Paris", "time": "16:30", "target_timezone": "Asia/Tokyo"}
    ),
    tool_use("ListMcpResourcesTool", {"server": "everything"}),
    tool_use("ReadMcpResourceTool", {"server": "everything", "uri": RESOURCE}),
    tool_use("mcp__everything__get-tiny-image", {}),
    tool_use("mcp__everything__get-resource-links", {"count": 2}),
    tool_use("mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
    tool_use("mcp__everything__get-structured-content", {"location": "Chicago"}),
    tool_use("mcp__everything__get-roots-list", {}),
    tool_use("mcp__everything__trigger-long-running-operation", {"duration": 2, "steps": 4}),
    answer("Done with the tools."),
    answer("Got the prompt."),  # turn 4: /mcp__everything__args-prompt
]


def short(value: str, limit: int = 240) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def shown(block: Any) -> str:
    data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    inner = data.get("content", data)
    kind = inner.get("type")
    if kind == "text":
        return short(inner["text"])
    if kind == "image":
        return f"[image {inner.get('mimeType')}, {len(inner.get('data', ''))} base64 chars]"
    return short(json.dumps(inner, ensure_ascii=False))


class Transcript:
    """Prints each turn as the user sees it: what arrived since the last mark."""

    def __init__(self, editor: Editor, sid: str) -> None:
        self.editor, self.sid, self.mark, self.asked = editor, sid, 0, 0

    def turn(self, title: str) -> None:
        print(f"\n=== {title}")
        updates = [u for s, u in self.editor.updates[self.mark :] if s == self.sid]
        self.mark = len(self.editor.updates)
        text = ""
        for update in updates:
            kind = update.session_update
            if kind == "agent_message_chunk" and update.content.type == "text":
                text += update.content.text
                continue
            if text:
                print(f"  agent: {short(text, 1200)}")
                text = ""
            if kind == "tool_call":
                print(f"  tool call: {update.title} [{update.kind}] {json.dumps(update.raw_input)[:160]}")
            elif kind == "tool_call_update":
                for block in update.content or []:
                    print(f"    {update.status or 'update'}: {shown(block)}")
                if update.raw_output is not None and update.status == "completed":
                    print(f"    rawOutput: {short(json.dumps(update.raw_output, ensure_ascii=False), 160)}")
                if not update.content and update.status:
                    print(f"    {update.status}")
        if text:
            print(f"  agent: {short(text, 1200) if len(text) < 1500 else text}")
        for request in self.editor.permission_requests[self.asked :]:
            options = ", ".join(o.name for o in request.options)
            print(f"  asked: {request.tool_call.title} — options: {options}")
        self.asked = len(self.editor.permission_requests)


async def main() -> int:
    missing = [path for path in (EVERYTHING, TIME) if not os.access(path, os.X_OK)]
    if missing:
        print("not installed: " + ", ".join(missing) + "\n" + __doc__.split("Install the servers first")[1])
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        (root / "data").mkdir()
        scenario = root / "scenario.json"
        scenario.write_text(json.dumps({"name": "published-mcp", "responses": SCRIPT}))
        editor = Editor()
        servers: list[schema.HttpMcpServer | schema.SseMcpServer | schema.AcpMcpServer | schema.McpServerStdio] = [
            schema.McpServerStdio(name="everything", command=EVERYTHING, args=[], env=[]),
            schema.McpServerStdio(name="time", command=TIME, args=[], env=[]),
        ]
        async with running_agent(editor, str(scenario), root / "data") as (conn, _):
            await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
            began = time.monotonic()
            sid = (await conn.new_session(cwd=str(root / "ws"), mcp_servers=servers)).session_id
            answered = time.monotonic() - began
            transcript = Transcript(editor, sid)

            def text() -> str:
                return editor.text(sid)

            await editor.until(lambda: text().count("connected") >= 2, timeout=120, what="both servers")
            print(
                f"session/new answered in {answered * 1000:.0f} ms; both servers connected after "
                f"{time.monotonic() - began:.1f} s"
            )
            commands = editor.of_kind("available_commands_update", sid)[-1].available_commands
            print("slash commands offered:", ", ".join(f"/{c.name}" for c in commands))
            transcript.turn("session/new")
            for title, prompt in (
                ("prompt: hello", "hello"),
                ("prompt: /mcp", "/mcp"),
                ("prompt: use the tools", "use the tools"),
                ("prompt: /mcp__everything__args-prompt Paris France", "/mcp__everything__args-prompt Paris France"),
            ):
                done = await conn.prompt(session_id=sid, prompt=[schema.TextContentBlock(type="text", text=prompt)])
                transcript.turn(f"{title} → {done.stop_reason}")
            await conn.close_session(session_id=sid)
        violations = [str(v) for v in editor.validator.violations]
        print(f"\nACP messages checked strictly: {len(editor.validator.seen)}; violations: {len(violations)}")
        for violation in violations:
            print("  " + violation)
        print("\nwhat the model got (tool results in the session's transcript):")
        for line in (root / "data" / "sessions" / f"{sid}.jsonl").read_text().splitlines():
            entry = json.loads(line)
            for block in (entry.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block.get("content")
                    parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
                    kinds = ", ".join(str(p.get("type", "?")) for p in parts)
                    first = next((p.get("text", "") for p in parts if p.get("type") == "text"), "")
                    error = " ERROR" if block.get("is_error") else ""
                    print(f"  [{kinds}]{error} {short(str(first), 200)}")
        log = (root / "data" / "stderr.log").read_text()
        warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
        print(f"bridge log: {len(warnings)} warning/error lines" + "".join(f"\n  {short(w)}" for w in warnings[:10]))
        return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
