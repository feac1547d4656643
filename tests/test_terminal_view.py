"""What `agent-bridge run` shows (issue 28 item 3), as a person sees it: the command in a pseudo-terminal of 80
columns and 24 rows whose output a VT emulator (pyte) draws — escape sequences applied, the lines that scrolled
away kept — with offline scenario files for screens that come out the same every run. Parallel calls each with
its result under it in call order, markdown rendered, thinking collapsed, a sub-agent's calls under its call, a
running command with its indicator, where an always-rule went, NO_COLOR, and the same turns piped (plain)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tests.poll import poll
from tests.pty_terminal import PtyRun, run_in_pty

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")
COLUMNS, ROWS = 80, 24
SPINNER = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
COLOUR_SGR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def bash(command: str) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Bash", "input": {"command": command, "description": "a step"}}


def text(body: str, pieces: int = 12) -> dict[str, Any]:
    return {"type": "text", "text": body, "chunks": pieces}


PARALLEL = {
    "responses": [
        {
            "content": [
                text("Three checks at once."),
                bash("sleep 1.5; echo first"),
                bash("sleep 0.8; echo second"),
                bash("echo third"),
            ],
            "stop_reason": "tool_use",
        },
        {"content": [text("All three done.")], "stop_reason": "end_turn"},
    ]
}

MARKDOWN_ANSWER = """# Release notes

The **parser** is faster, and `run` shows more:

- tool calls in order
- thinking folded

```python
def greet(name):
    return f"hello {name}"
```

| step | time |
|------|------|
| parse | 2 ms |
| render | 5 ms |

That is all."""
MARKDOWN = {"responses": [{"content": [text(MARKDOWN_ANSWER, 40)], "stop_reason": "end_turn", "delay_ms": 5}]}

THOUGHTS = "First, what is asked.\nThen, what is known.\nLast, the answer: SECRET-THOUGHT."
THINKING = {
    "responses": [
        {
            "content": [
                {"type": "thinking", "thinking": THOUGHTS, "chunks": 6, "signature": "offline-signature"},
                text("The answer is 42."),
            ],
            "stop_reason": "end_turn",
        }
    ]
}

AGENT_PROMPT = "Find the nested marker and report it."
SUB_AGENT = {
    "responses": [
        {
            "content": [
                text("Asking a helper."),
                {
                    "type": "tool_use",
                    "name": "Agent",
                    "input": {
                        "description": "find the marker",
                        "prompt": AGENT_PROMPT,
                        "subagent_type": "general-purpose",
                    },
                },
            ],
            "stop_reason": "tool_use",
        },
        {"content": [text("The helper found it.")], "stop_reason": "end_turn"},
    ],
    "agents": [
        {
            "prompt": AGENT_PROMPT,
            "responses": [
                {"content": [bash("echo nested-marker")], "stop_reason": "tool_use"},
                {"content": [text("## Found\n\nThe marker is **nested-marker**.")], "stop_reason": "end_turn"},
            ],
        }
    ],
}

LONG = {
    "responses": [
        {"content": [bash("for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done")], "stop_reason": "tool_use"},
        {"content": [text("Done.")], "stop_reason": "end_turn"},
    ]
}


class Screen(PtyRun):
    """What a terminal shows of `agent-bridge run`: the lines that scrolled away, then the screen."""

    def text(self) -> str:
        return "\n".join(self.lines()).strip("\n")

    def block(self, first: str, count: int) -> list[str]:
        lines = self.lines()
        start = lines.index(first)
        return lines[start : start + count]

    async def until(self, predicate: Any, what: str) -> None:
        await poll(lambda: predicate(self.text()), timeout=60, what=what, changed=self.changed)


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_", "NO_COLOR"))}
    return env | {
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "TERM": "xterm",
        "COLUMNS": str(COLUMNS),
        "LINES": str(ROWS),
        "TMPDIR": str(tmp_path / "tmp"),
        **extra,
    }


def scenario_file(tmp_path: Path, scenario: dict[str, Any] | str) -> str:
    if isinstance(scenario, str):
        return scenario
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    return str(path)


def workspace(tmp_path: Path) -> Path:
    for name in ("ws", "home", "tmp"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    return tmp_path / "ws"


@contextlib.asynccontextmanager
async def terminal(
    tmp_path: Path, scenario: dict[str, Any] | str, prompt: str = "go", *flags: str, **env: str
) -> AsyncIterator[Screen]:
    cwd = workspace(tmp_path)  # (makes tmp_path's folders, the scenario file's among them)
    argv = [AGENT_BRIDGE, "run", "--offline", scenario_file(tmp_path, scenario), *flags, prompt]
    async with run_in_pty(
        Screen,
        argv,
        cwd=cwd,
        env=environment(tmp_path, **env),
        log=tmp_path / "stderr.log",
        columns=COLUMNS,
        rows=ROWS,
        history=2000,
    ) as term:
        yield term


async def finished(term: Screen) -> None:
    assert await asyncio.wait_for(term.process.wait(), 60) == 0
    await term.until(lambda shown: "[end_turn]" in shown, "the end line")


async def screen_of(
    tmp_path: Path, scenario: dict[str, Any] | str, prompt: str = "go", *flags: str, **env: str
) -> Screen:
    async with terminal(tmp_path, scenario, prompt, *flags, **env) as term:
        await finished(term)
    return term


def piped(tmp_path: Path, scenario: dict[str, Any] | str, prompt: str = "go", *flags: str) -> str:
    cwd = workspace(tmp_path)
    done = subprocess.run(
        [AGENT_BRIDGE, "run", "--offline", scenario_file(tmp_path, scenario), *flags, prompt],
        cwd=cwd,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


# --- tool calls ----------------------------------------------------------------------------------------------


async def test_parallel_calls_show_each_result_under_its_call_in_call_order(tmp_path: Path) -> None:
    term = await screen_of(tmp_path, PARALLEL)
    lines = term.lines()
    start = lines.index("Three checks at once.")
    assert lines[start : start + 10] == [
        "Three checks at once.",
        "",
        "● `sleep 1.5; echo first`",
        "  ⎿ first",
        "",
        "● `sleep 0.8; echo second`",
        "  ⎿ second",
        "",
        "● `echo third`",
        "  ⎿ third",
    ]
    assert "All three done." in lines
    assert not SPINNER & set(term.text()), "the indicator is gone at the end"


async def test_a_running_command_shows_its_output_and_elapsed_time_then_its_result(tmp_path: Path) -> None:
    async with terminal(tmp_path, LONG) as term:
        running = re.compile(r"^  ⎿ [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] running · [1-9] s$", re.MULTILINE)
        await term.until(
            lambda shown: running.search(shown) and "    step 2" in shown,
            "the command's last output lines and its spinner with the elapsed time",
        )
        await finished(term)
    lines = term.lines()
    start = lines.index("● `for i in 1 2 3 4 5 6; do echo step $i; sleep 0.5; done`")
    assert lines[start + 1 : start + 6] == [
        "  ⎿ step 1",
        "    step 2",
        "    step 3",
        "    step 4",
        "    … 2 more lines",
    ]
    assert not running.search(term.text()) and not SPINNER & set(term.text())


async def test_the_model_working_shows_a_spinner_with_elapsed_time(tmp_path: Path) -> None:
    # The wait is before each event of the block (its start, its one delta, its stop): the text comes 2.4 s in,
    # the indicator's second shows from 1 s (a delay on the response waits before every event: ~25 s in all).
    slow = {"responses": [{"content": [{**text("Finally."), "deltas": ["Finally."], "delay_ms": 1200}]}]}
    async with terminal(tmp_path, slow) as term:
        await term.until(
            lambda shown: re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Waiting for the model · [1-9] s · ctrl-c cancels", shown),
            "the model's indicator",
        )
        await finished(term)
    assert "Waiting for the model" not in term.text()


async def test_a_sub_agents_calls_show_under_its_call_and_its_report_rendered(tmp_path: Path) -> None:
    term = await screen_of(tmp_path, SUB_AGENT)
    lines = term.lines()
    start = lines.index("● find the marker")
    block = lines[start : start + 7]
    assert block[1:3] == ["  ↳ `echo nested-marker`", "    ⎿ nested-marker"]
    assert re.fullmatch(r"  ⎿ Done · 1 tool call · [0-9.]+k? tokens · \d+ s", block[3]), block
    assert block[4:7] == ["    Found", "", "    The marker is nested-marker."]
    assert lines.index("The helper found it.") > start + 6


async def test_where_an_always_rule_is_saved_is_shown(tmp_path: Path) -> None:
    async with terminal(tmp_path, "playground", "run: rm -f victim.txt") as term:
        await term.until(lambda shown: "  >" in term.lines(), "the question")
        os.write(term.master, b"a\n")
        await finished(term)
    saved = tmp_path / "ws" / ".agent-bridge" / "settings.local.json"
    assert json.loads(saved.read_text())["permissions"]["allow"] == ["Bash(rm -f victim.txt)"]
    assert f"  ✓ allow Bash(rm -f victim.txt): saved in {saved}" in "\n".join(term.lines()).replace("\n", "")


async def test_a_questions_answers_are_never_cut_mid_word_at_the_width(tmp_path: Path) -> None:
    """80 columns: "always allow" names its rule and the file it is saved in, which doesn't fit beside the others,
    so each answer starts a line of its own and wraps between words under its key (it wrapped mid-word, at the
    terminal's edge: "[d] alw" / "ays deny")."""
    async with terminal(tmp_path, "playground", "run: rm -f victim.txt") as term:
        await term.until(lambda shown: "  >" in term.lines(), "the question")
        lines = term.lines()
        os.write(term.master, b"n\n")
        await finished(term)
    start = next(i for i, line in enumerate(lines) if line.startswith("  [y]"))
    block = lines[start : lines.index("  >", start)]
    assert [line[:5] for line in block if line.startswith("  [")] == ["  [y]", "  [a]", "  [d]", "  [n]"], block
    joined = " ".join(line.strip() for line in block)
    assert "[a] always allow Bash(rm -f victim.txt) (saved to .agent-bridge/settings.local.json)" in joined, block
    assert all(line.startswith(("  [", "      ")) and len(line) < COLUMNS for line in block), block


async def test_a_read_results_line_numbers_line_up(tmp_path: Path) -> None:
    """The first line of a `cat -n` result keeps its indentation, like the ones under it (it was stripped)."""
    file = workspace(tmp_path) / "hello.py"
    file.write_text("a = 1\nb = 2\nc = 3\n")
    term = await screen_of(tmp_path, "playground", f"read: {file}")
    ends = [m.end(1) for line in term.lines() if (m := re.search(r"(\d+) {2,}[abc] = \d", line))]
    assert len(ends) >= 3 and len(set(ends[:3])) == 1, term.text()  # the call's result (the answer quotes it again)


# --- markdown and thinking -----------------------------------------------------------------------------------

RENDERED = [
    "Release notes",
    "",
    "The parser is faster, and run shows more:",
    "",
    " • tool calls in order",
    " • thinking folded",
    "",
    "  def greet(name):",
    '      return f"hello {name}"',
    "",
    "┌────────┬──────┐",
    "│ step   │ time │",
    "├────────┼──────┤",
    "│ parse  │ 2 ms │",
    "│ render │ 5 ms │",
    "└────────┴──────┘",
    "",
    "That is all.",
]


async def test_markdown_is_rendered_headings_lists_code_and_tables(tmp_path: Path) -> None:
    term = await screen_of(tmp_path, MARKDOWN)
    lines = term.lines()
    start = lines.index("Release notes")
    assert lines[start : start + len(RENDERED)] == RENDERED
    assert "```" not in term.text() and "**" not in term.text() and "|---" not in term.text()
    raw = term.raw.decode()
    assert "\x1b[1;4mRelease notes" in raw, "the heading: bold, underlined"
    assert re.search(r"\x1b\[[0-9;]*9[0-7][0-9;]*mdef\x1b\[0m", raw), "the code: highlighted"
    assert "\x1b[1mparser\x1b[0m" in raw


async def test_no_color_keeps_the_layout_and_drops_every_colour(tmp_path: Path) -> None:
    coloured = await screen_of(tmp_path / "a", MARKDOWN)
    plain = await screen_of(tmp_path / "b", MARKDOWN, NO_COLOR="1")
    assert COLOUR_SGR.search(coloured.raw.decode()), "the control: colours without NO_COLOR"
    assert not COLOUR_SGR.search(plain.raw.decode())
    assert "\x1b[1;4mRelease notes" in plain.raw.decode(), "bold and underline are not colours"
    assert plain.lines()[plain.lines().index("Release notes") :][: len(RENDERED)] == RENDERED


async def test_thinking_is_one_dim_line_and_shown_on_request(tmp_path: Path) -> None:
    term = await screen_of(tmp_path / "a", THINKING)
    lines = term.lines()
    assert "✻ Thought (3 lines; --show-thinking shows them)" in lines
    assert lines[lines.index("✻ Thought (3 lines; --show-thinking shows them)") + 2] == "The answer is 42."
    assert "SECRET-THOUGHT" not in term.text()
    assert "\x1b[2m✻ Thought" in term.raw.decode(), "dim"
    shown = await screen_of(tmp_path / "b", THINKING, "go", "--show-thinking")
    start = shown.lines().index("✻ Thinking (3 lines):")
    assert shown.lines()[start : start + 5] == [
        "✻ Thinking (3 lines):",
        "  First, what is asked.",
        "  Then, what is known.",
        "  Last, the answer: SECRET-THOUGHT.",
        "",
    ]


async def test_a_long_title_is_cut_to_the_width_not_wrapped(tmp_path: Path) -> None:
    long = "echo " + "x" * 120
    scenario = {
        "responses": [
            {"content": [bash(long)], "stop_reason": "tool_use"},
            {"content": [text("ok")], "stop_reason": "end_turn"},
        ]
    }
    term = await screen_of(tmp_path, scenario)
    [header] = [line for line in term.lines() if line.startswith("● `echo")]
    assert len(header) == COLUMNS and header.endswith("…")
    [result] = [line for line in term.lines() if line.startswith("  ⎿ xxx")]
    assert len(result) == COLUMNS and result.endswith("…")


# --- the end line, the offline model, temp folders -----------------------------------------------------------


async def test_the_offline_model_is_named_instead_of_a_cost_and_nothing_is_left_in_temp(tmp_path: Path) -> None:
    term = await screen_of(tmp_path, PARALLEL)
    end = "\n".join(term.lines()[term.lines().index(next(ln for ln in term.lines() if ln.startswith("[end_turn]"))) :])
    assert "offline demo model (scenario)" in end and "$" not in end
    assert all(len(line) <= COLUMNS for line in term.lines())
    assert list((tmp_path / "tmp").iterdir()) == [], "the run's temp files are gone"


# --- piped: plain text -----------------------------------------------------------------------------------------


def test_piped_output_is_plain_text_in_the_same_order(tmp_path: Path) -> None:
    out = piped(tmp_path / "a", PARALLEL)
    assert "\x1b" not in out and not SPINNER & set(out)
    assert (
        "Three checks at once.\n\n● `sleep 1.5; echo first`\n  ⎿ first\n\n● `sleep 0.8; echo second`\n"
        "  ⎿ second\n\n● `echo third`\n  ⎿ third\n\nAll three done.\n\n[end_turn]" in out
    )
    answer = piped(tmp_path / "b", MARKDOWN)
    assert MARKDOWN_ANSWER in answer and "\x1b" not in answer, "markdown as the model wrote it"
    thought = piped(tmp_path / "c", THINKING)
    assert "✻ Thought (3 lines; --show-thinking shows them)\n\nThe answer is 42.\n" in thought


async def test_ctrl_c_while_a_command_runs_leaves_a_clean_screen(tmp_path: Path) -> None:
    scenario = {
        "responses": [
            {"content": [bash("echo waiting; sleep 60")], "stop_reason": "tool_use"},
            {"content": [text("never")], "stop_reason": "end_turn"},
        ]
    }
    async with terminal(tmp_path, scenario) as term:
        await term.until(lambda shown: "    waiting" in shown and re.search(r"⎿ . running", shown), "the command")
        term.process.send_signal(signal.SIGINT)  # what Ctrl-C sends (this pty is not the controlling terminal)
        assert await asyncio.wait_for(term.process.wait(), 60) == 130
        await term.until(lambda shown: "[cancelled]" in shown, "the end line")
    lines = term.lines()
    assert "^C cancelling…" in lines
    assert not SPINNER & set(term.text()) and "running ·" not in term.text()
    start = lines.index("● `echo waiting; sleep 60`")
    assert lines[start + 1 : start + 3] == ["^C cancelling…", "  ⎿ Interrupted by user"], lines[start:]


def test_a_failed_edit_says_its_diff_was_not_applied(tmp_path: Path) -> None:
    """The question showed the proposed diff; the call then failed (the link leads to a device). Under the error
    the diff stayed, headed `edited: +1 -1`, as if it had been made."""
    ws = workspace(tmp_path / "a")
    (ws / "z").symlink_to("/dev/zero")
    edit = {
        "type": "tool_use",
        "name": "Edit",
        "input": {"file_path": str(ws / "z"), "old_string": "a", "new_string": "b"},
    }
    scenario = {"responses": [{"content": [edit], "stop_reason": "tool_use"}, {"content": [text("done")]}]}

    out = piped(tmp_path / "a", scenario, "go", "--dangerously-approve-all")

    result = out[out.index("⎿") :]
    assert "not a regular file" in result
    # (the link leads out of the workspace: the question came before the file was read, round 8's "unread" diff)
    assert "(the change only: file not read, not applied: +1 -1)" in result and "(edited: +1" not in result, result


def test_a_diffs_path_shows_on_one_line_as_it_is() -> None:
    """Found by an attack round: a path with a newline in it (`sub\\nfake/b.txt`) printed the diff's header as two
    lines, a path `…/sub` and a line `fake/b.txt (new file: +1 -0)`; a trailing space did not show."""
    from bridge.cli.calls import _render
    from bridge.display import Diff

    [header, *_] = _render(Diff("ws/sub\nfake/b.txt", None, "x\n"), applied=False)
    assert header == "ws/sub\\x0afake/b.txt (new file, not applied: +1 -0)"
    [header, *_] = _render(Diff("notes.txt ", "a\n", "b\n"), applied=True)
    assert header == '"notes.txt " (edited: +1 -1)'
