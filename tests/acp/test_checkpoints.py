"""Checkpoints over ACP (issue 23 item 5), driven by the official SDK's client as an ACP editor would: `/rewind` and
`/changes` are in `available_commands`; `/rewind` asks through `session/request_permission` and puts the files back;
`/changes` shows its diffs as a tool call's diff content; ACP's unstable `session/fork` forks from before a prompt
(`_meta.prompt`), and loading the fork replays only what came before it. Every message the bridge sends passes the
strict oracle (the `editor` fixture)."""

from __future__ import annotations

from pathlib import Path

from acp import schema
from acp.helpers import ContentBlock

from tests.acp.editor import Editor, running_agent

UNSANDBOXED = {"AGENT_BRIDGE_SANDBOX": "0"}  # see tests/checkpoint_run.py: main's sandbox makes placeholders


def text(value: str) -> list[ContentBlock]:
    return [schema.TextContentBlock(type="text", text=value)]


async def test_rewind_changes_and_fork_in_an_acp_editor(editor: Editor, data_dir: Path, workspace: Path) -> None:
    async with running_agent(editor, "playground", data_dir, env=UNSANDBOXED) as (conn, _):
        init = await conn.initialize(protocol_version=1, client_capabilities=schema.ClientCapabilities())
        assert init.agent_capabilities is not None and init.agent_capabilities.session_capabilities is not None
        capabilities = init.agent_capabilities.session_capabilities
        # not in v1's stable schema (the TypeScript SDK refuses the field): named in _meta
        assert capabilities.fork is None and (capabilities.field_meta or {}).get("fork") == {}
        sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        await editor.until(lambda: editor.of_kind("available_commands_update", sid), what="commands")
        names = {c.name for c in editor.of_kind("available_commands_update", sid)[-1].available_commands}
        assert {"rewind", "changes"} <= names

        await conn.prompt(session_id=sid, prompt=text("run: echo one > a.txt"))
        await conn.prompt(session_id=sid, prompt=text("run: echo two > a.txt && echo b > b.txt"))
        assert (workspace / "a.txt").read_text() == "two\n" and (workspace / "b.txt").exists()

        await conn.prompt(session_id=sid, prompt=text("/changes 2"))
        [diffs] = [
            u
            for u in editor.of_kind("tool_call_update", sid)
            if u.content and any(getattr(c, "type", "") == "diff" for c in u.content)
        ]
        shown = {Path(c.path).name: (c.old_text, c.new_text) for c in diffs.content or [] if c.type == "diff"}
        assert shown == {"a.txt": ("one\n", "two\n"), "b.txt": (None, "b\n")}

        asked = len(editor.permission_requests)
        await conn.prompt(session_id=sid, prompt=text("/rewind 2"))
        question = editor.permission_requests[asked]
        assert question.tool_call.title == "Rewind both to before prompt 2"
        assert (workspace / "a.txt").read_text() == "one\n" and not (workspace / "b.txt").exists()

        fork = await conn.fork_session(session_id=sid, cwd=str(workspace), prompt=1)
        assert fork.session_id != sid and fork.modes is not None
        await conn.load_session(session_id=fork.session_id, cwd=str(workspace), mcp_servers=[])
        assert editor.text(fork.session_id, "user_message_chunk") == "", "forked from before prompt 1: empty"
        await conn.load_session(session_id=sid, cwd=str(workspace), mcp_servers=[])
        replayed = [u.content.text for u in editor.of_kind("user_message_chunk", sid)]
        assert replayed == ["run: echo one > a.txt"], "the rewound conversation, as stored"
