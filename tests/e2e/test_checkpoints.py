"""Checkpoints, rewind, fork and review through `agent-bridge serve` (issue 23), as the panel uses them: the
`_bridge/*` methods, `/rewind` as a slash command with its confirmation, `session/load` of a rewound session and
of a fork. Real files, real commands (the offline model's scripted calls run for real)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.harness import Editor, running_editor, text_response, tool_response

# main's sandbox makes placeholder files while a command runs (see tests/checkpoint_run.py): commands run unsandboxed
ENV = {"AGENT_BRIDGE_SANDBOX": "0"}
OPTIONS = {"permissionMode": "acceptEdits"}


def _scenario(ws: Path) -> dict[str, Any]:
    return {
        "responses": [
            tool_response(("Write", {"file_path": str(ws / "a.txt"), "content": "one\ntwo\nthree\n"})),
            text_response("wrote a"),
            tool_response(("Bash", {"command": "sed -i 's/two/TWO/' a.txt && echo made > b.txt"})),
            text_response("changed a, made b"),
            text_response("after the fork"),
        ]
    }


async def _two_prompts(editor: Editor) -> str:
    sid = await editor.new_session()
    assert await editor.prompt(sid, "write a") == {"stopReason": "end_turn"}
    assert await editor.prompt(sid, "change a, make b") == {"stopReason": "end_turn"}
    return sid


async def test_review_and_rewind_through_the_bridge_methods(workspace: Path, data_dir: Path) -> None:
    async with running_editor(
        _scenario(workspace), workspace, data_dir, env=ENV, initialization_options=OPTIONS
    ) as editor:
        sid = await _two_prompts(editor)

        listed = (await editor.request("_bridge/prompts", {"sessionId": sid}))["prompts"]
        assert [(p["index"], p["text"], p["changedAfter"]) for p in listed] == [
            (1, "write a", 2),
            (2, "change a, make b", 2),
        ]
        session = await editor.request("_bridge/changes", {"sessionId": sid})
        assert session["scope"] == "session" and [f["path"] for f in session["files"]] == ["a.txt", "b.txt"]
        turn = await editor.request("_bridge/changes", {"sessionId": sid, "turnId": listed[1]["turnId"]})
        [a_file, b_file] = turn["files"]
        assert (a_file["status"], a_file["oldText"], a_file["newText"]) == (
            "modified",
            "one\ntwo\nthree\n",
            "one\nTWO\nthree\n",
        )
        assert [s["tool"] for s in a_file["steps"]] == ["Bash"] and b_file["status"] == "added"
        [hunk] = a_file["hunks"]

        stale = await _error(
            editor, "_bridge/undo", {"sessionId": sid, "prompt": 2, "path": "a.txt", "hunk": 0, "hunkId": "0000"}
        )
        assert "changed since it was shown" in stale
        undone = await editor.request(
            "_bridge/undo", {"sessionId": sid, "prompt": 2, "path": "a.txt", "hunk": 0, "hunkId": hunk["id"]}
        )
        assert undone["done"] == [{"path": "a.txt", "hunk": 0}] and undone["conflicts"] == []
        assert (workspace / "a.txt").read_text() == "one\ntwo\nthree\n"
        kept = await editor.request("_bridge/keep", {"sessionId": sid, "path": "b.txt"})
        assert kept["done"] == [{"path": "b.txt", "hunk": None}] and (workspace / "b.txt").exists()

        (workspace / "a.txt").write_text("one\ntwo\nthree\nmine\n")  # the user's edit
        preview = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 1})
        assert {f["path"]: (f["action"], bool(f["conflict"])) for f in preview["files"]} == {
            "a.txt": ("delete", True),
            "b.txt": ("delete", False),
        }
        assert any("sed -i" in item for item in preview["irreversible"])
        assert (workspace / "b.txt").exists(), "a preview changes nothing"
        done = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 1, "confirm": True})
        assert done["restored"] == ["b.txt"] and [k["path"] for k in done["kept"]] == ["a.txt"]
        assert done["conversation"] and not (workspace / "b.txt").exists()
        assert (workspace / "a.txt").read_text() == "one\ntwo\nthree\nmine\n", "the user's file is theirs"
        assert (await editor.request("_bridge/prompts", {"sessionId": sid}))["prompts"] == []

    async with running_editor({"responses": []}, workspace, data_dir, env=ENV) as editor:
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        assert editor.of_kind("user_message_chunk", sid) == [], "the rewound conversation is empty"


async def test_rewind_as_a_slash_command_and_fork_from_a_prompt(workspace: Path, data_dir: Path) -> None:
    async with running_editor(
        _scenario(workspace), workspace, data_dir, env=ENV, initialization_options=OPTIONS
    ) as editor:
        sid = await _two_prompts(editor)
        commands = editor.of_kind("available_commands_update", sid)[-1]["availableCommands"]
        assert {"rewind", "changes"} <= {c["name"] for c in commands}

        fork = (await editor.request("_bridge/fork", {"sessionId": sid, "prompt": 2}))["sessionId"]
        assert fork != sid
        assert await editor.prompt(fork, "in the fork") == {"stopReason": "end_turn"}
        assert "change a, make b" not in str(editor.last_request_messages()), "the fork starts before prompt 2"

        asked = len(editor.permission_requests)
        assert await editor.prompt(sid, "/rewind 2 code") == {"stopReason": "end_turn"}
        question = editor.permission_requests[asked]["toolCall"]
        assert question["title"] == "Rewind code to before prompt 2"
        shown = "\n".join(c["content"]["text"] for c in question["content"])  # (the first block: the question)
        assert "restore a.txt" in shown and "delete b.txt" in shown and "sed -i" in shown
        assert (workspace / "a.txt").read_text() == "one\ntwo\nthree\n" and not (workspace / "b.txt").exists()

    async with running_editor({"responses": []}, workspace, data_dir, env=ENV) as editor:
        await editor.request("session/load", {"sessionId": fork, "cwd": str(workspace)})
        assert editor.text(fork, "user_message_chunk") == "write ain the fork"
        await editor.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        said = editor.text(sid, "user_message_chunk")
        assert said.startswith("write a") and "change a, make b" in said, "a code rewind keeps the conversation"
        prompts = (await editor.request("_bridge/prompts", {"sessionId": sid}))["prompts"]
        replayed = [u.get("messageId") for u in editor.of_kind("user_message_chunk", sid)]
        assert replayed == [p["turnId"] for p in prompts], "a replayed prompt names its turn: rewind to here"


async def _error(editor: Editor, method: str, params: dict[str, Any]) -> str:
    try:
        await editor.request(method, params)
    except Exception as error:  # pygls raises the JSON-RPC error as an exception
        return str(error)
    raise AssertionError(f"{method} succeeded")


async def test_a_prompt_answers_its_turn_id_when_asked(workspace: Path, data_dir: Path) -> None:
    """The panel asks (`_meta.turnId: true`) so its rewind-to-here and Changes name a live prompt; an ACP client
    that does not ask gets the plain answer."""
    async with running_editor(
        _scenario(workspace), workspace, data_dir, env=ENV, initialization_options=OPTIONS
    ) as editor:
        sid = await editor.new_session()
        first = await editor.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "a"}], "_meta": {"turnId": True}}
        )
        assert await editor.prompt(sid, "b") == {"stopReason": "end_turn"}
        listed = (await editor.request("_bridge/prompts", {"sessionId": sid}))["prompts"]
        assert first == {"stopReason": "end_turn", "_meta": {"turnId": listed[0]["turnId"]}}
        assert listed[0]["turnId"] != listed[1]["turnId"]


async def test_a_confirm_does_what_its_own_preview_showed(workspace: Path, data_dir: Path) -> None:
    """Attack round 12: the server kept one preview a session, so a preview of prompt 2 after one of prompt 1 made
    prompt 1's confirm apply the plan as it was then, unseen; and a confirm with no preview did too."""
    async with running_editor(
        _scenario(workspace), workspace, data_dir, env=ENV, initialization_options=OPTIONS
    ) as editor:
        sid = await _two_prompts(editor)
        confirm = {"sessionId": sid, "prompt": 1, "mode": "code", "confirm": True}
        unseen = await _error(editor, "_bridge/rewind", confirm)
        assert "preview this rewind first" in unseen and (workspace / "b.txt").exists()
        first = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 1, "mode": "code"})
        second = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 2, "mode": "code"})
        assert {f["path"] for f in first["files"]} == {"a.txt", "b.txt"} and second["files"]
        done = await editor.request("_bridge/rewind", confirm)
        assert sorted(done["restored"]) == ["a.txt", "b.txt"]
        assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
        again = await _error(editor, "_bridge/rewind", confirm)
        assert "preview this rewind first" in again, "a preview is confirmed once"
