"""Attack round 17 through `agent-bridge serve`, as the panel rewinds: a command removes a nested repository's
`.git` and rewrites a `.gitignore` that ignored itself and `secrets.env`. The files that were there before it,
never stored, never written by the agent, are not in the preview's files (nothing deletes them), are named among
what the rewind leaves as it is, and are there after the confirm."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.harness import running_editor, text_response, tool_response

ENV = {"AGENT_BRIDGE_SANDBOX": "0"}  # (see tests/e2e/test_checkpoints.py)
OPTIONS = {"permissionMode": "acceptEdits"}
COMMAND = "printf '.gitignore\\n' > .gitignore && rm -rf vendor/lib/.git && echo made > made.txt"


def _repository(path: Path) -> None:
    """A real nested repository (its own `.git`, made by git)."""
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


async def test_a_rewind_keeps_the_files_the_snapshot_before_had_no_word_of(workspace: Path, data_dir: Path) -> None:
    (workspace / ".gitignore").write_text(".gitignore\nsecrets.env\n")
    (workspace / "secrets.env").write_text("API_KEY=user-secret\n")
    _repository(workspace / "vendor" / "lib")
    (workspace / "vendor" / "lib" / "mywork.c").write_text("user's work\n")
    scenario = {
        "responses": [tool_response(("Bash", {"command": COMMAND, "description": "tidy"})), text_response("done")]
    }
    async with running_editor(scenario, workspace, data_dir, env=ENV, initialization_options=OPTIONS) as editor:
        sid = await editor.new_session()
        assert await editor.prompt(sid, "tidy up") == {"stopReason": "end_turn"}
        assert (workspace / "made.txt").exists() and not (workspace / "vendor" / "lib" / ".git").exists()

        preview = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 1, "mode": "code"})
        assert {f["path"]: f["action"] for f in preview["files"]} == {"made.txt": "delete"}, preview["files"]
        named = "\n".join(preview["irreversible"])
        for path in ("secrets.env", "vendor/lib/mywork.c"):
            assert f"{path}: what it was before this call is not in the checkpoints" in named, named

        done = await editor.request("_bridge/rewind", {"sessionId": sid, "prompt": 1, "mode": "code", "confirm": True})
        assert done["restored"] == ["made.txt"], done
    assert not (workspace / "made.txt").exists()
    assert (workspace / "secrets.env").read_text() == "API_KEY=user-secret\n"
    assert (workspace / "vendor" / "lib" / "mywork.c").read_text() == "user's work\n"
