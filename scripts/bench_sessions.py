"""Session benchmarks (issue 6): load a 5,000-message transcript over the protocol; the bridge's memory
after it, against the same process idle before the load (baseline in the same run)."""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.e2e.harness import running_editor

MESSAGES = 5_000


def write_transcript(data: Path, cwd: Path, sid: str) -> Path:
    path = data / "sessions" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as out:
        out.write(json.dumps({"type": "session", "sessionId": sid, "cwd": str(cwd), "createdAt": 0}) + "\n")
        for i in range(MESSAGES // 4):
            use = f"toolu_{i:06d}"
            records = [
                {"role": "user", "content": [{"type": "text", "text": f"question {i} " + "lorem ipsum " * 20}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "let me look"},
                        {"type": "tool_use", "id": use, "name": "Read", "input": {"file_path": f"/tmp/f{i}.py"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": use, "content": "     1\tprint('x')\n" * 20}],
                },
                {"role": "assistant", "content": [{"type": "text", "text": f"answer {i} " + "dolor sit " * 30}]},
            ]
            for message in records:
                out.write(json.dumps({"type": "message", "message": message}) + "\n")
    return path


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws, data = root / "ws", root / "data"
        ws.mkdir()
        data.mkdir()
        sid = "sess_bench5000"
        path = write_transcript(data, ws, sid)
        async with running_editor({"responses": []}, ws, data) as editor:
            assert editor.client._server is not None
            pid = editor.client._server.pid
            await editor.new_session()
            idle = rss_kb(pid)
            start = time.perf_counter()
            await editor.request("session/load", {"sessionId": sid, "cwd": str(ws)})
            loaded = time.perf_counter() - start
            after = rss_kb(pid)
            replayed = len(editor.updates)
        print(f"transcript: {MESSAGES} messages, {path.stat().st_size / 1e6:.1f} MB")
        print(f"session/load answered in {loaded * 1000:.0f} ms ({replayed} updates replayed)")
        print(f"bridge RSS idle {idle / 1024:.1f} MB -> after load {after / 1024:.1f} MB (ratio {after / idle:.2f})")


if __name__ == "__main__":
    asyncio.run(main())
