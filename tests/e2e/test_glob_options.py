"""A glob is checked as the names bash will hand the program: a file named like an option (`--pre=sh`,
`-oMakefile`) that a repository ships turns `rg TODO *` into `rg TODO --pre=sh notes.txt`, and a glob in a
place that gives names their meaning (`uniq *.txt`: the second is the output) writes. Run with the OS sandbox
unavailable and no one to answer: nothing of it may happen without a question. jq's `$ ENV` is `$ENV`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.e2e.harness import text_response, tool_response
from tests.e2e.test_trust import run_cli, scenario_file

RG_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # the ripgrep wheel's `rg`


async def test_a_glob_never_hands_a_program_an_option_or_an_output_unasked(tmp_path: Path) -> None:
    ws, marker = tmp_path / "ws", tmp_path / "ran"
    ws.mkdir()
    (ws / "--pre=sh").write_text("")
    (ws / "notes.txt").write_text(f"touch {marker}\n# TODO\n")
    (ws / "-oMakefile").write_text("")
    (ws / "-d").mkdir()  # `*/x` is `-d/x`: an option too
    (ws / "-d" / "x").write_text("")
    (ws / "Makefile").write_text("all:\n")
    pair = ws / "pair"
    pair.mkdir()
    (pair / "a.txt").write_text("from a\n")
    (pair / "b.txt").write_text("mine\n")
    asked = ["rg TODO *", "sort *", "cat */x", "uniq pair/*.txt", "jq -n '$ ENV'"]
    allowed = ["rg TODO ./*", "cat pair/b.txt"]
    calls = [tool_response(("Bash", {"command": c})) for c in [*allowed, *asked]]
    scenario = scenario_file(tmp_path, [*calls, text_response("done")])
    out = await run_cli(
        tmp_path,
        ws,
        "go",
        "--non-interactive",
        scenario=scenario,
        env={"AGENT_BRIDGE_BWRAP": "/bin/false", "PATH": RG_PATH},
    )
    lines = out.splitlines()
    for command in allowed:
        answer = lines[lines.index(f"● `{command}`") + 1]
        assert "Permission denied" not in answer, f"the control: `{command}` runs with no question\n{out}"
    assert "./notes.txt:# TODO" in out and "mine" in out
    for command in asked:
        answer = lines[lines.index(f"● `{command}`") + 1]
        assert "Permission denied" in answer, (command, out)
    assert not marker.exists()
    assert (ws / "Makefile").read_text() == "all:\n" and (pair / "b.txt").read_text() == "mine\n"
