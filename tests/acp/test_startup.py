"""Start-up never stalls a request (issue 22, item 3): a client that connects twice at once (codecompanion does)
gets two bridges that each answer their own `session/new` at once after `initialize`, in order, with sessions of
their own; and the anthropic SDK, when it must be imported (no wire profile covers the installed version), loads
off the event loop — a request is never queued behind it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bridge.server import warmup
from tests.acp.editor import Editor, running_agent
from tests.acp.test_conformance import answer, scenario_file, text


async def test_two_connections_at_once_each_get_their_own_sessions(
    tmp_path: Path, workspace: Path, data_dir: Path, editor: Editor
) -> None:
    scenario = scenario_file(tmp_path, [answer("first bridge"), answer("second bridge")])
    second_editor = Editor()

    async def connect(client: Editor, word: str) -> tuple[str, str]:
        async with running_agent(client, scenario, data_dir) as (conn, _):
            await conn.initialize(protocol_version=1)
            # sent at once after the answer: queued behind nothing the client can see
            first, second = await asyncio.gather(
                conn.new_session(cwd=str(workspace), mcp_servers=[]),
                conn.new_session(cwd=str(workspace), mcp_servers=[]),
            )
            assert first.session_id != second.session_id
            sid = first.session_id
            await conn.prompt(session_id=sid, prompt=text(word))
            listed = {s.session_id for s in (await conn.list_sessions()).sessions}
            assert {first.session_id, second.session_id} <= listed
            return sid, client.text(sid)

    (one, said_one), (two, said_two) = await asyncio.gather(connect(editor, "one"), connect(second_editor, "two"))
    assert one != two
    assert said_one in ("first bridge", "second bridge") and said_two in ("first bridge", "second bridge")
    assert [u for sid, u in editor.updates if sid == two] == [], "no update crossed to the other connection"
    assert [u for sid, u in second_editor.updates if sid == one] == []
    assert second_editor.validator.violations == []


async def test_the_sdk_import_runs_off_the_loop() -> None:
    """With the SDK to import (as when no wire profile covers the installed version), the warm-up's steps each
    take one turn of the loop, and the SDK loads on its own thread: a request waits for none of it."""
    code = """
import asyncio, os, sys
os.environ["AGENT_BRIDGE_MODEL_TRANSPORT"] = "sdk"
from bridge.server import warmup

async def main():
    warmup.warm_up()
    while warmup._sdk_import is None:  # the steps: one turn of the loop each
        await asyncio.sleep(0)
    print("loading" if not warmup._sdk_import.done() else "loaded-on-the-loop")
    await warmup.sdk_loaded()
    print("anthropic" in sys.modules)

asyncio.run(main())
"""
    process = await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE)
    out, _ = await process.communicate()
    assert out.decode().split() == ["loading", "True"], "the loop went on while the SDK loaded on its own thread"
    assert warmup._sdk_import is None, "(not in this process)"


async def test_a_cancel_while_the_sdk_still_loads_cancels_the_prompt(
    tmp_path: Path, workspace: Path, data_dir: Path, editor: Editor
) -> None:
    """A prompt sent at once after start-up may wait for the SDK's import (off the loop); a `session/cancel`
    meanwhile must cancel it, not be lost while no turn runs yet."""
    long = {
        "content": [{"type": "text", "text": "word " * 400, "chunks": 400}],
        "stop_reason": "end_turn",
        "delay_ms": 20,
    }
    scenario = scenario_file(tmp_path, [long, answer("short")])
    async with running_agent(editor, scenario, data_dir, env={"AGENT_BRIDGE_MODEL_TRANSPORT": "sdk"}) as (conn, _):
        await conn.initialize(protocol_version=1)
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("talk")))
        await editor.until(
            lambda: any(w.message.get("method") == "session/prompt" for w in editor.wire if w.direction == "out"),
            what="the prompt sent",
        )
        await conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(turn, 60)).stop_reason == "cancelled"
        assert (await conn.prompt(session_id=sid, prompt=text("again"))).stop_reason == "end_turn"
