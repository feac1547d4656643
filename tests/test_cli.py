"""The command line's front door (issue 28): every user mistake is one line and the right exit code, never a
traceback; `--version`; help that lists the offline scenarios. Real `agent-bridge` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bridge.cli.main import SCENARIOS
from bridge.offline.builtins import BUILTIN_NAMES

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_BRIDGE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env or dict(os.environ),
        stdin=subprocess.DEVNULL,
    )


def test_version_and_help_with_the_scenarios() -> None:
    from bridge import __version__

    assert run("--version").stdout.strip() == f"agent-bridge {__version__}"
    assert SCENARIOS == BUILTIN_NAMES
    for command in ([], ["run"], ["serve"], ["acp"]):
        shown = run(*command, "--help").stdout
        assert "todo-demo, playground, echo" in shown, shown
    assert "answer one prompt in this terminal, then exit" in run("--help").stdout


def test_status_and_cost_on_the_offline_model_name_it_not_a_claude_model(tmp_path: Path) -> None:
    """`/status` says which model answers and `/cost` what it cost: on `--offline`, the offline demo model, at no
    cost (the header and the last line already say so; a Claude model's name and a dollar figure were not true)."""
    done = run("run", "--offline", "echo", "--cwd", str(tmp_path), "/status")
    assert done.returncode == 0, done.stderr
    assert "- Model: the offline demo model (scripted answers, no cost)\n- Mode: " in done.stdout, done.stdout
    cost = run("run", "--offline", "echo", "--cwd", str(tmp_path), "/cost")
    assert cost.stdout.startswith("No cost (the offline demo model) — input 0, output 0,"), cost.stdout


def test_help_lists_every_command_the_session_offers(tmp_path: Path) -> None:
    """`/help` answers without the model (it went to the model, which answered with whatever it made of it)."""
    (tmp_path / ".agent-bridge" / "commands").mkdir(parents=True)
    (tmp_path / ".agent-bridge" / "commands" / "ship.md").write_text("---\ndescription: Ship it\n---\nShip.\n")
    done = run("run", "--offline", "echo", "--cwd", str(tmp_path), "/help")
    assert done.returncode == 0, done.stderr
    said = done.stdout
    assert said.startswith("Commands:\n- `/help` — Show the commands this session offers\n"), said
    assert "\n- `/status` — Show model, mode, working directory and context use\n" in said, said
    assert "\n- `/changes [N] [undo|keep PATH[#HUNK]|all]` — " in said and "\n- `/ship arguments` — Ship it" in said
    assert "`help` (without the slash)" in said and "You said" not in said, said


def test_the_playground_reads_a_path_relative_to_the_folder(tmp_path: Path) -> None:
    """`read: a.py` as its help says (`read: <path>`): a model makes the path absolute; the playground did not, and
    the Read tool refused it."""
    (tmp_path / "a.py").write_text("first line of a.py\n")
    done = run("run", "--offline", "playground", "--cwd", str(tmp_path), "read: a.py")
    assert done.returncode == 0, done.stderr
    assert "first line of a.py" in done.stdout and "must be an absolute path" not in done.stdout, done.stdout


def test_the_playground_quotes_a_sub_agents_report_as_markdown(tmp_path: Path) -> None:
    """A sub-agent's answer is markdown: quoted as it is, its code block stays one (its fences were swapped for
    look-alike characters, and the block ran into a line)."""
    done = run("run", "--offline", "playground", "--cwd", str(tmp_path), "agent: run: echo hi")
    assert done.returncode == 0, done.stderr
    quoted = "The agent reported (`run echo hi`):\n\n> Output of `echo hi`:\n> \n> ```\n> hi\n> ```"
    assert quoted in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("args", "env_change", "said"),
    [
        (
            ["run", "--offline", "bogus", "hi"],
            {},
            "agent-bridge: --offline: unknown scenario 'bogus': built-in "
            "scenarios are todo-demo, playground, echo, or give the path of a .json scenario file",
        ),
        (
            ["run", "hi"],
            {"ANTHROPIC_API_KEY": None, "ANTHROPIC_AUTH_TOKEN": None},
            "agent-bridge: No API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) — or try the offline model, no "
            'key needed: agent-bridge run --offline playground "run: ls"',
        ),
        (["run", "--no-such-flag", "hi"], {}, "agent-bridge: error: unrecognized arguments: --no-such-flag"),
    ],
)
def test_a_mistake_is_one_line_and_exit_code_2(args: list[str], env_change: dict[str, str | None], said: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in env_change}
    done = run(*args, env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == said


@pytest.mark.parametrize("command", ["serve", "acp"])
def test_ctrl_c_on_an_idle_server_exits_quietly(command: str) -> None:
    # as a terminal starts it (its foreground job): with SIGINT's default action, even when this test run is a
    # script's background job, whose children inherit SIGINT ignored (then Python never sees the Ctrl-C)
    process = subprocess.Popen(
        [AGENT_BRIDGE, command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _reading_stdin(process.pid):
        time.sleep(0.02)  # polling the process's own state: it waits for its first message
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130 and stderr == "", stderr


def _reading_stdin(pid: int) -> bool:
    try:
        return (
            Path(f"/proc/{pid}/wchan").read_text() not in ("", "0")
            and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "S"
        )
    except OSError:
        return False


@pytest.mark.parametrize("command", ["run", "serve", "acp"])
def test_the_collector_runs_again_once_the_bridge_is_loaded(command: str) -> None:
    """The collector waits while the bridge loads (bridge/gcpause.py), and every front end turns it on again: left
    off, a long session would keep every cycle it made. And from then on no regular expression's program is kept
    (bridge/codecache.py): what compiles is the session's own (its rules, its paths)."""
    env = {**os.environ, "AGENT_BRIDGE_LOG": "DEBUG", "AGENT_BRIDGE_GC_PAUSE": "1"}
    if command == "run":
        done = run("run", "--offline", "echo", "hi", env=env)
        stderr = done.stderr
    else:
        first = (
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'
            if command == "acp"
            else _lsp(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}}
            )
        )
        process = subprocess.run(
            [AGENT_BRIDGE, command], input=first, capture_output=True, text=True, timeout=60, env=env
        )
        stderr = process.stderr
    assert "the collector runs again" in stderr, stderr[-2000:]
    assert "regular expressions' programs kept" in stderr and "no more are kept" in stderr, stderr[-2000:]


def _lsp(message: dict[str, object]) -> str:
    body = json.dumps(message)
    return f"Content-Length: {len(body.encode())}\r\n\r\n{body}"
