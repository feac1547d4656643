"""A start-up smoke of the bridge as macOS and as Windows would run it, on this Linux machine (issue 29): the real
`agent-bridge serve` under `as_platform.py`, which makes `sys.platform` say the other platform and takes away what
that platform lacks (Windows: fcntl, resource, pwd, os.killpg, os.getuid, O_NOFOLLOW…; macOS: pipe2, pidfd_open,
O_PATH). Through the real protocol: a session starts and says once why commands ask (no Seatbelt here; Windows has
no OS sandbox), a read-only command runs without asking, one that writes asks, and a cancel ends a whole tree of
processes (psutil's paths: no /proc reader, no subreaper, no parent-death signal; on "Windows" no process group
signal either). What Linux can't pretend (the kernel, its signals) is Linux's: README's platform table says so."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from tests.e2e import harness
from tests.e2e.harness import Editor, poll, running_editor
from tests.execution.test_processes import marked_pids

AS_PLATFORM = Path(__file__).with_name("as_platform.py")


@pytest.fixture(params=["darwin", "win32"])
def platform(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    name = str(request.param)
    monkeypatch.setattr(harness, "server_command", lambda: [sys.executable, str(AS_PLATFORM), name, "serve"])
    return name


def platform_env(platform: str, data_dir: Path, **extra: str) -> dict[str, str]:
    env = {"AGENT_BRIDGE_SANDBOX": "", "AGENT_BRIDGE_PORTABLE": "", "AS_PLATFORM_STDERR": str(data_dir / "bridge.log")}
    if platform == "win32":  # where Windows keeps what the bridge writes (platformdirs reads these there)
        env |= {
            "APPDATA": str(data_dir / "AppData" / "Roaming"),
            "LOCALAPPDATA": str(data_dir / "AppData" / "Local"),
            "CLAUDE_CODE_GIT_BASH_PATH": "/bin/bash",
        }
    return env | extra


def warnings(editor: Editor, text: str) -> list[str]:
    return [m.message for m in editor.client.messages if text in m.message]


def no_traceback(data_dir: Path) -> str:
    """The bridge's log, which must show no failure (a POSIX-only call on the platform's path is one)."""
    log = (data_dir / "bridge.log").read_text(errors="replace")
    assert "INFO" in log and "Traceback" not in log and " ERROR " not in log, log[-3000:]
    return log


async def test_a_session_commands_and_a_cancel(platform: str, workspace: Path, data_dir: Path) -> None:
    (workspace / ".agent-bridge").mkdir()
    rules = {"permissions": {"allow": ["Bash(touch *)"]}}
    (workspace / ".agent-bridge" / "settings.json").write_text(json.dumps(rules))
    async with running_editor("playground", workspace, data_dir, env=platform_env(platform, data_dir)) as editor:
        sid = await editor.new_session()
        why = "sandbox-exec" if platform == "darwin" else "Windows has no OS sandbox"
        await poll(lambda: warnings(editor, why), what="the session's warning")
        [warning] = warnings(editor, "OS sandbox unavailable")  # said once
        assert why in warning and "will ask" in warning

        assert await editor.prompt(sid, "run: pwd") == {"stopReason": "end_turn"}
        [pwd] = editor.of_kind("tool_call", sid)
        assert str(workspace) in json.dumps(editor.tool_updates(pwd["toolCallId"]))  # it ran, in the workspace
        assert editor.permission_requests == []  # read-only: no question

        assert await editor.prompt(sid, "run: touch made") == {"stopReason": "end_turn"}
        [request] = editor.permission_requests  # the allow rule alone no longer runs it: there is no sandbox
        assert "sandbox is unavailable" in json.dumps(request)
        assert (workspace / "made").exists()

        mark = uuid.uuid4().hex
        turn = editor.start_prompt(sid, f"run: export TEST_MARK={mark}; (sleep 300 &) ; sleep 300 & echo started; wait")
        await poll(
            lambda: "started" in json.dumps(editor.tool_updates(editor.of_kind("tool_call", sid)[-1]["toolCallId"])),
            what="the last command's output",
        )
        await poll(lambda: len(marked_pids(mark)) >= 2, what="the command's tree")
        editor.cancel(sid)
        assert (await turn) == {"stopReason": "cancelled"}
        await poll(lambda: not marked_pids(mark), timeout=5, what="every process of the command to end")
    no_traceback(data_dir)


async def test_windows_without_git_bash_says_what_to_do(
    workspace: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "server_command", lambda: [sys.executable, str(AS_PLATFORM), "win32", "serve"])
    env = platform_env("win32", data_dir, CLAUDE_CODE_GIT_BASH_PATH="", PATH="/usr/bin:/bin", ProgramFiles="")
    async with running_editor(
        "playground", workspace, data_dir, env=env, initialization_options={"permissionMode": "bypassPermissions"}
    ) as editor:
        sid = await editor.new_session()
        await poll(lambda: warnings(editor, "Git Bash"), what="the session's warning")
        [warning] = warnings(editor, "Git Bash")
        assert "CLAUDE_CODE_GIT_BASH_PATH" in warning and "git-scm.com" in warning
        assert await editor.prompt(sid, "run: echo hi") == {"stopReason": "end_turn"}
        assert "CLAUDE_CODE_GIT_BASH_PATH" in json.dumps(editor.updates)  # the call's error says it too
    no_traceback(data_dir)
