"""The terminal's permission question, as a person sees it (issue 21 item 3), and no "yes" without a person
(issue 20 item 4): `agent-bridge run` with the offline playground model (`run: CMD` runs CMD with Bash,
`read: PATH` reads PATH), driven in a pseudo-terminal whose output a VT emulator (pyte) draws into a screen —
what the question looks like is what the screen shows, escape sequences applied — and with standard input
that is not a terminal (`< /dev/null`, a pipe), where every question is denied and nothing happens."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyte
import pytest

from tests.poll import poll
from tests.pty_terminal import PtyRun, run_in_pty

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")
COLUMNS, ROWS = 220, 60
MARKER = "MARKER-SECRET-5d1c"
HARMLESS = "echo '" + "all tests passed, nothing to see here, carry on with the next step please thanks" + "'"


@dataclass
class Places:
    root: Path
    ws: Path
    home: Path
    outside: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_"))}
        return env | {
            "HOME": str(self.home),
            "AGENT_BRIDGE_DATA_DIR": str(self.root / "data"),
            "AGENT_BRIDGE_CONFIG_DIR": str(self.root / "cfg"),
            "CLAUDE_CONFIG_DIR": str(self.root / "claude"),
            "TERM": "xterm",
            "COLUMNS": str(COLUMNS),
            "LINES": str(ROWS),
        }


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Places]:
    # outside the workspace and outside /tmp (a sandboxed command has a private /tmp: a file there could not
    # show that a read of it is real)
    outside = Path(tempfile.mkdtemp(prefix="agent-bridge-outside-", dir="/var/tmp"))
    found = Places(tmp_path, tmp_path / "ws", tmp_path / "home", outside)
    for directory in (found.ws, found.home):
        directory.mkdir()
    (found.ws / "victim.txt").write_text("keep me\n")
    (found.home / ".bashrc").write_text("# rc\n")
    (found.ws / "rc").symlink_to(found.home / ".bashrc")
    (found.outside / "secret.txt").write_text(MARKER + "\n")
    yield found
    shutil.rmtree(outside, ignore_errors=True)


class Terminal(PtyRun):
    """`agent-bridge run` in a pseudo-terminal; `screen` is what a terminal shows of its output."""

    def text(self) -> str:
        return "\n".join(line for line in self.lines() if line)

    async def until(self, text: str, timeout: float = 60) -> None:
        await poll(lambda: text in self.text(), timeout=timeout, what=f"{text!r} on the screen", changed=self.changed)

    async def asked(self) -> None:
        """The question is on the screen and waits for an answer (its `  > ` prompt)."""
        await poll(lambda: "  >" in self.lines(), timeout=60, what="the question's prompt", changed=self.changed)

    def block(self, first: str, last: str) -> list[str]:
        """The screen's lines from the one starting with `first` to the one starting with `last`."""
        lines = self.lines()
        start = next(i for i, line in enumerate(lines) if line.startswith(first))
        end = next(i for i in range(start, len(lines)) if lines[i].startswith(last))
        return lines[start : end + 1]


@contextlib.asynccontextmanager
async def terminal(places: Places, prompt: str, *flags: str) -> AsyncIterator[Terminal]:
    argv = [AGENT_BRIDGE, "run", "--offline", "playground", *flags, prompt]
    async with run_in_pty(
        Terminal, argv, cwd=places.ws, env=places.env(), log=places.root / "stderr.log", columns=COLUMNS, rows=ROWS
    ) as term:
        yield term


async def finished(term: Terminal) -> int:
    code = await asyncio.wait_for(term.process.wait(), 60)
    await poll(lambda: "[end_turn]" in term.text() or code != 0, what="the turn's end line", changed=term.changed)
    return code


# --- what the question shows ---------------------------------------------------------------------------------


async def test_the_whole_command_shows_with_the_part_that_asks_underlined(places: Places) -> None:
    command = f"{HARMLESS} && rm -f victim.txt"
    async with terminal(places, f"run: {command}") as term:
        await term.asked()
        under = " " * (len(HARMLESS) + 4) + "^" * len("rm -f victim.txt")
        assert term.block("? Allow", "  [y]") == [
            "? Allow Bash to run this command?",
            f"  │ {command}",
            f"  │ {under}",
            "  ^ rm -f victim.txt: `rm` is not a known read-only command",
            "  why: `rm` is not a known read-only command",
            "  [y] yes  [a] always allow Bash(rm -f victim.txt) (saved to .agent-bridge/settings.local.json)  "
            "[d] always deny Bash(rm -f victim.txt) (saved to .agent-bridge/settings.local.json)  "
            "[n] no (or type feedback)",
        ]
        term.type("n\n")
        assert await finished(term) == 0
    assert (places.ws / "victim.txt").read_text() == "keep me\n"


async def test_every_line_of_a_multi_line_command_shows(places: Places) -> None:
    command = "ls\n# just listing\nrm -f victim.txt"
    async with terminal(places, f"run: {command}") as term:
        await term.asked()
        assert term.block("? Allow", "  why:")[1:5] == [
            "  │ ls",
            "  │ # just listing",
            "  │ rm -f victim.txt",
            "  │ ^^^^^^^^^^^^^^^^",
        ]
        term.type("n\n")
        assert await finished(term) == 0
    assert (places.ws / "victim.txt").exists()


async def test_control_characters_cannot_redraw_the_question(places: Places) -> None:
    command = "rm -f victim.txt #\r\x1b[2Kls -la"
    # the control: printed as it is, a terminal shows a harmless `ls -la` where the command is
    control = pyte.Screen(COLUMNS, 3)
    pyte.Stream(control).feed(f"  │ {command}")
    assert control.display[0].rstrip() == "ls -la"
    async with terminal(places, f"run: {command}") as term:
        await term.asked()
        shown = "rm -f victim.txt #\\x0d\\x1b[2Kls -la"
        assert f"  │ {shown}" in term.lines()
        assert f"● `{shown}`" in term.lines(), "the tool call's own line too"
        assert not [line for line in term.lines() if line.strip() == "ls -la"]
        term.type("n\n")
        assert await finished(term) == 0
    assert (places.ws / "victim.txt").exists()


async def test_a_symlink_shows_the_home_file_it_writes(places: Places) -> None:
    async with terminal(places, "run: echo 'alias ls=rm' >> rc") as term:
        await term.asked()
        assert f"  path: rc → {places.home / '.bashrc'}" in term.lines()
        term.type("n\n")
        assert await finished(term) == 0
    assert (places.home / ".bashrc").read_text() == "# rc\n"


async def test_always_saves_exactly_the_rules_the_choice_shows(places: Places) -> None:
    async with terminal(places, "run: npm test && python3 x.py") as term:
        await term.asked()
        [choices] = [line for line in term.lines() if line.startswith("  [y]")]
        assert "[a] always allow Bash(npm test *), Bash(python3 x.py *) (saved to " in choices
        term.type("a\n")
        assert await finished(term) == 0
    saved = json.loads((places.ws / ".agent-bridge" / "settings.local.json").read_text())
    assert saved["permissions"]["allow"] == ["Bash(npm test *)", "Bash(python3 x.py *)"]


async def test_the_end_of_the_terminals_input_is_no_answer_not_a_yes(places: Places) -> None:
    """Enter alone answers yes; Ctrl-D (or a connection that closes) ends the input: that is denied."""
    async with terminal(places, "run: rm -f victim.txt") as term:
        await term.asked()
        term.type("\x04")
        assert await finished(term) == 0
        assert any("✗ Denied: Bash `rm -f victim.txt`. The terminal's input ended." in line for line in term.lines())
    assert (places.ws / "victim.txt").exists()
    async with terminal(places, "run: rm -f victim.txt") as term:  # the control: Enter is a yes
        await term.asked()
        term.type("\n")
        assert await finished(term) == 0
    assert not (places.ws / "victim.txt").exists()


# --- no person, no yes ----------------------------------------------------------------------------------------

# (what the model asks for, the effect if it happens). The playground runs `run: CMD` with Bash and reads
# `read: PATH` with Read; a scenario file asks for a Write.
OUTSIDE_ATTEMPTS = [
    ("run: cat {outside}/secret.txt", "secret"),
    ("read: {outside}/secret.txt", "secret"),
    ("write: {outside}/written.txt", "written"),
]


def run_without_terminal(places: Places, prompt: str, stdin: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """`agent-bridge run` as CI, cron or `ssh host cmd` run it: standard input is /dev/null or a pipe."""
    prompt = prompt.replace("{outside}", str(places.outside))
    model = "playground"
    if prompt.startswith("write: "):  # a scenario: one Write, then an answer
        write = {"type": "tool_use", "name": "Write", "input": {"file_path": prompt[7:], "content": "pwned\n"}}
        model = str(places.root / "write.json")
        Path(model).write_text(
            json.dumps(
                {
                    "responses": [
                        {"content": [write], "stop_reason": "tool_use"},
                        {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"},
                    ]
                }
            )
        )
    argv = [AGENT_BRIDGE, "run", "--offline", model, *flags, prompt]
    feed = {"stdin": subprocess.DEVNULL} if stdin == "devnull" else {"input": "y\ny\ny\n"}
    return subprocess.run(
        argv,
        cwd=places.ws,
        env=places.env(),
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
        **feed,
    )


def effect(places: Places, kind: str, output: str) -> bool:
    return MARKER in output if kind == "secret" else (places.outside / "written.txt").exists()


@pytest.mark.parametrize("stdin", ["devnull", "pipe"])
@pytest.mark.parametrize(("prompt", "kind"), OUTSIDE_ATTEMPTS, ids=[p.split(":")[0] for p, _ in OUTSIDE_ATTEMPTS])
def test_without_a_terminal_every_question_is_denied_and_says_so(
    places: Places, prompt: str, kind: str, stdin: str
) -> None:
    done = run_without_terminal(places, prompt, stdin)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not effect(places, kind, done.stdout), done.stdout
    [denial] = [line for line in done.stdout.splitlines() if "✗ Denied:" in line]
    assert "There is no terminal to ask" in denial and "--dangerously-approve-all" in denial
    what = {"run": "Denied: Bash `cat ", "read": "Denied: Read ", "write": "Denied: Write "}
    assert what[prompt.split(":")[0]] in denial
    # the control: the same run, approving every question by name, does it
    approved = run_without_terminal(places, prompt, stdin, "--dangerously-approve-all")
    assert approved.returncode == 0, approved.stderr[-2000:]
    assert effect(places, kind, approved.stdout), approved.stdout
    assert "--dangerously-approve-all: every permission question is answered yes" in approved.stdout


def test_without_a_terminal_a_command_writing_outside_is_denied(places: Places) -> None:
    """(No control here: an approved command still runs in the sandbox, which keeps the outside read-only.)"""
    done = run_without_terminal(places, "run: echo pwned > {outside}/written.txt", "pipe")
    assert "✗ Denied: Bash `echo pwned > " in done.stdout and not (places.outside / "written.txt").exists()


def test_a_denial_says_which_rule_would_allow_it(places: Places) -> None:
    done = run_without_terminal(places, "run: rm -f victim.txt", "devnull")
    [denial] = [line for line in done.stdout.splitlines() if "✗ Denied:" in line]
    assert "Bash `rm -f victim.txt`" in denial and "--allow 'Bash(rm -f victim.txt)'" in denial
    assert (places.ws / "victim.txt").exists()
    allowed = run_without_terminal(places, "run: rm -f victim.txt", "devnull", "--allow", "Bash(rm -f victim.txt)")
    assert allowed.returncode == 0 and not (places.ws / "victim.txt").exists(), allowed.stdout


def test_the_demo_still_runs_without_a_terminal(places: Places) -> None:
    done = subprocess.run(
        [AGENT_BRIDGE, "demo", "--yes"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=places.env(),
        timeout=120,
        start_new_session=True,
    )
    assert done.returncode == 0 and "TODO / FIXME summary" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
