"""Attack round 17 on the terminal front end: nothing a cloned folder, the model, a sub-agent or the API supplies
reaches the person's terminal as a control sequence. Each case checks the raw bytes `agent-bridge run` wrote to a
real pty: no OSC (clipboard, title), no cursor movement or erase of ours but the live area's, no C1 control, no
bidi or zero-width character; and the unit under all of them, `guarded`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bridge.cli.screen import guarded
from tests.test_terminal_view import Screen, finished, terminal

OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # the clipboard set to `rm -rf ~`
TITLE = "\x1b]0;PWNED\x07"
UP_ERASE = "\x1b[3A\x1b[2K"  # up three rows, erase the line: rewrites what was shown
HIDDEN = "\u202e\u2066\u200b\ufeff\u2028"

# What the bridge itself writes: colour and weight (SGR), and the live area's way back (CR, up, erase below).
OWN = re.compile(rb"\x1b\[[0-9;]*m|\r|\x1b\[[0-9]+A|\x1b\[J")


def foreign(raw: bytes) -> list[str]:
    """What in `raw` is a control or hidden character the bridge did not write itself."""
    rest = OWN.sub(b"", raw).decode("utf-8", errors="replace")
    return sorted(
        {
            repr(c)
            for c in rest
            if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F or c in HIDDEN or c == "\u200f"
        }
    )


def test_guarded_lets_only_line_breaks_tabs_and_colour_through() -> None:
    text = f"a{OSC52}b{TITLE}c{UP_ERASE}d\x9b31m\x9d0;x\x07e\u202ef\x1b[8mhidden\x1b[0m\tg\n"
    out = guarded(f"\x1b[31m{text}\x1b[0m", sgr=True)
    assert out.startswith("\x1b[31m") and out.endswith("\x1b[0m")
    inner = out[len("\x1b[31m") : -len("\x1b[0m")].replace("\x1b[0m", "")  # (the reset after "hidden": ours)
    assert "\x1b" not in inner and "\x07" not in inner and "\x9b" not in inner and "\u202e" not in inner
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in inner and "\\x1b[8mhidden" in inner  # shown, not acted on
    assert inner.endswith("\tg\n")
    assert guarded("\x1b[1mbold\x1b[0m", sgr=False) == "\\x1b[1mbold\\x1b[0m"  # to a pipe: no escape at all


async def raw_run(tmp_path: Path, scenario: dict[str, Any] | str, *flags: str) -> tuple[Screen, bytes]:
    async with terminal(tmp_path, scenario, "go", *flags) as term:
        await finished(term)
    return term, bytes(term.raw)


async def test_a_cloned_folders_agent_and_skill_file_names_are_shown_not_acted_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents" / f"x{OSC52}{TITLE}{HIDDEN}.md").write_text("no front matter\n")
    skill = ws / ".claude" / "skills" / f"s{OSC52}"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: s\ndescription: d\n---\nbody\n")
    term, raw = await raw_run(tmp_path, "echo")
    assert foreign(raw) == [], raw
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in term.text()  # the name as it is, readable


async def test_a_sub_agents_report_is_shown_not_acted_on(tmp_path: Path) -> None:
    report = f"## Report\n\nAll good {OSC52}{TITLE}{UP_ERASE}\x9b2J{HIDDEN} end\n"
    scenario = {
        "responses": [
            {
                "content": [
                    {
                        "type": "tool_use",
                        "name": "Agent",
                        "input": {"description": "helper", "prompt": "check", "subagent_type": "general-purpose"},
                    }
                ],
                "stop_reason": "tool_use",
            },
            {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"},
        ],
        "agents": [{"prompt": "check", "responses": [{"content": [{"type": "text", "text": report}]}]}],
    }
    term, raw = await raw_run(tmp_path, scenario)
    assert foreign(raw) == [], raw
    assert "Report" in term.text()


async def test_an_api_errors_text_is_shown_not_acted_on(tmp_path: Path) -> None:
    fault = {"type": "status", "status": 400, "message": f"bad {OSC52}{TITLE}{HIDDEN}"}
    scenario = {"responses": [{"content": [], "fault": fault | {"error_type": "invalid_request_error"}}]}
    async with terminal(tmp_path, scenario) as term:
        await term.process.wait()
    raw = bytes(term.raw)
    assert foreign(raw) == [], raw
    assert "Error:" in term.text()
    assert "\x1b]" not in (tmp_path / "stderr.log").read_text(errors="replace")  # nor in what is logged


async def test_markdown_character_references_do_not_bring_back_hidden_characters(tmp_path: Path) -> None:
    text = (
        "Run &#x202e;txt.exe&#x202c; now. ZW:[a&#x200b;b] rlm:[&rlm;] BOM:[&#xfeff;] iso:[&#x2066;x&#x2069;] "
        "ls:[&#x2028;]\n\n# head &#x202e;abc\n\n- item &#x202e;dcba\n\n| a | b&#x202e;c |\n|---|---|\n| 1 | 2 |\n"
    )
    term, raw = await raw_run(tmp_path, {"responses": [{"content": [{"type": "text", "text": text}]}]})
    assert foreign(raw) == [], raw
    assert "txt.exe" in term.text()


def test_the_trust_questions_changed_file_names_are_shown_not_acted_on(tmp_path: Path) -> None:
    """A file a `git pull` brought into a trusted hook's venv, named with escape sequences: the question that asks
    again names it readably, in every front end (the text is the question's own)."""
    from bridge.permissions.trust import TrustItem, TrustQuestion

    item = TrustItem(".agent-bridge/settings.json", "hook", ".venv/bin/python hook.py")
    name = f".venv/lib/python3.12/site-packages/z{OSC52}{TITLE}{HIDDEN}.pth"
    text = TrustQuestion(tmp_path, (item,), ((item, [name]),)).text
    assert foreign(text.encode()) == [], text
    assert "z\\x1b]52;c;cm0gLXJmIH4K\\x07" in text


async def test_a_sub_agent_reusing_its_parents_call_id_does_not_hide_its_report(tmp_path: Path) -> None:
    """Attack round 18: ids were made unique per conversation, and a sub-agent's is its own: its Read with the
    parent's Agent call id took over the parent's card, and the Agent call's result and report never showed."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("notes\n")
    scenario = {
        "responses": [
            {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_same",
                        "name": "Agent",
                        "input": {"description": "helper", "prompt": "check", "subagent_type": "general-purpose"},
                    }
                ],
                "stop_reason": "tool_use",
            },
            {"content": [{"type": "text", "text": "PARENT-FINAL-ANSWER"}], "stop_reason": "end_turn"},
        ],
        "agents": [
            {
                "prompt": "check",
                "responses": [
                    {
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "toolu_same",
                                "name": "Read",
                                "input": {"file_path": "notes.txt"},
                            }
                        ],
                        "stop_reason": "tool_use",
                    },
                    {"content": [{"type": "text", "text": "SUBAGENT-REPORT"}], "stop_reason": "end_turn"},
                ],
            }
        ],
    }
    term, _raw = await raw_run(tmp_path, scenario)
    shown = term.text()
    assert "SUBAGENT-REPORT" in shown and "PARENT-FINAL-ANSWER" in shown
    assert shown.index("SUBAGENT-REPORT") < shown.index("PARENT-FINAL-ANSWER")


def test_guarded_lets_no_colour_through_that_hides_text() -> None:
    """Attack round 18: conceal written `08` or `008`, black on black, RGB colours passed the guard."""
    for sgr in (
        "\x1b[08m",
        "\x1b[0;008m",
        "\x1b[30;40m",
        "\x1b[97;107m",
        "\x1b[38;2;0;0;0;48;2;0;0;0m",
        "\x1b[38;5;0m",
    ):
        assert "\x1b" not in guarded(f"{sgr}HIDDEN", sgr=True), sgr
    for sgr in ("\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[0m", "\x1b[1;36;40m"):
        assert guarded(f"{sgr}shown", sgr=True) == f"{sgr}shown", sgr


def test_the_command_lines_own_errors_quote_arguments_without_acting_on_them(tmp_path: Path) -> None:
    """Attack round 18: argparse's `unrecognized arguments: …` and the demo's project line printed what was pasted
    as it was."""
    import subprocess
    import sys

    pasted = f"a{OSC52}{TITLE}"
    for argv in (["run", "go", pasted], ["demo", str(tmp_path / f"x{TITLE}")]):
        done = subprocess.run(
            [sys.executable, "-m", "bridge.cli.main", *argv],
            capture_output=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "d")},
        )
        assert b"\x1b" not in done.stdout + done.stderr, (argv, done.stdout[-500:], done.stderr[-500:])
