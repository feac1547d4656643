"""The built-in scenarios, played over HTTP against hand-built histories with real tool output."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from bridge.offline import OfflineServer, RecordedRequest, builtin_scenario
from bridge.offline.builtins import todo_demo

RG = str(Path(sys.executable).with_name("rg"))
PROMPT = "find all TODO/FIXME comments in this project"
TOOLS: Any = [
    {"name": name, "description": name, "input_schema": {"type": "object"}} for name in ("Grep", "Read", "Bash", "Glob")
]


class Conversation:
    """A history built the way the loop builds it: assistant replies as dicts, then tool results."""

    def __init__(self, client: anthropic.AsyncAnthropic, cwd: Path | None = None) -> None:
        self.client = client
        self.system = "You are a coding agent.\n" + (f"Working directory: {cwd}\n" if cwd else "")
        self.messages: list[Any] = []
        self.text_deltas = 0

    async def say(self, *blocks: dict[str, Any]) -> Any:
        self.messages.append({"role": "user", "content": list(blocks)})
        self.text_deltas = 0
        async with self.client.messages.stream(
            model="m", max_tokens=4000, system=self.system, tools=TOOLS, messages=self.messages
        ) as stream:
            async for event in stream:
                self.text_deltas += event.type == "text"
            message = await stream.get_final_message()
        self.messages.append(
            {
                "role": "assistant",
                "content": [
                    {k: v for k, v in b.model_dump(mode="json", exclude_none=True).items() if k != "parsed_output"}
                    for b in message.content
                ],
            }
        )
        return message


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def result(use: Any, content: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use.id, "content": content, "is_error": is_error}


def uses(message: Any) -> list[Any]:
    return [b for b in message.content if b.type == "tool_use"]


def all_text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


@pytest.fixture
async def todo_client() -> AsyncIterator[tuple[OfflineServer, anthropic.AsyncAnthropic]]:
    with OfflineServer(builtin_scenario("todo-demo", delay_ms=0)) as server:
        async with anthropic.AsyncAnthropic(base_url=server.base_url, api_key="t", max_retries=0) as client:
            yield server, client


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text(
        "# TODO: load settings from disk\nx = 1  # FIXME: off by one\n# TODO: log this\n"
    )
    (tmp_path / "src" / "util.py").write_text("def f():\n    pass  # TODO: implement f\n")
    (tmp_path / "README.md").write_text("Nothing to do here.\n")
    (tmp_path / "notes.txt").write_text("FIXME: the build is slow\nFIXME: and flaky\n")
    return tmp_path


def files_of(root: Path) -> dict[str, str]:
    return {str(p): p.read_text() for p in root.rglob("*.*")}


def ripgrep(cwd: Path, *paths: str) -> str:
    run = subprocess.run([RG, "-n", "TODO|FIXME", *paths], cwd=cwd, capture_output=True, text=True, check=False)
    return run.stdout or "No matches found"


async def test_todo_demo_plays_grep_read_bash_summary(
    todo_client: tuple[OfflineServer, anthropic.AsyncAnthropic], project: Path
) -> None:
    server, client = todo_client
    chat = Conversation(client, cwd=project)
    first = await chat.say(text(PROMPT))
    assert all_text(first) == "I'll search the project for TODO and FIXME comments."
    (grep,) = uses(first)
    assert (grep.name, grep.input) == ("Grep", {"pattern": "TODO|FIXME", "output_mode": "content", "-n": True})

    grep_output = ripgrep(project)  # relative paths, as ripgrep prints them from the cwd
    second = await chat.say(result(grep, grep_output))
    reads = uses(second)
    assert all_text(second) and len(reads) == 3
    assert [r.name for r in reads] == ["Read"] * 3
    assert {r.input["file_path"] for r in reads} == {
        str(project / "src" / "app.py"),
        str(project / "notes.txt"),
        str(project / "src" / "util.py"),
    }
    assert reads[0].input["file_path"] == str(project / "src" / "app.py")  # most markers first

    contents = files_of(project)
    third = await chat.say(*(result(r, contents[r.input["file_path"]]) for r in reads))
    (bash,) = uses(third)
    assert bash.name == "Bash" and bash.input == todo_demo.BASH_INPUT

    summary = await chat.say(result(bash, "Tue Jun 3 10:00:00 2025 +0200\n"))
    assert summary.stop_reason == "end_turn" and uses(summary) == []
    report = all_text(summary)
    assert "**6** markers in **3** files: **3** TODO and **3** FIXME" in report
    assert "- `src/app.py`: 3" in report and "- `notes.txt`: 2" in report and "- `src/util.py`: 1" in report
    examples = [line for line in report.splitlines() if line.startswith("> `")]
    assert len(examples) == 3 and any("FIXME" in line for line in examples)
    for line in examples:  # "> `path:line` — text", quoted from the real Grep output
        where, _, quoted = line[3:].partition("` — ")
        hit = next(h for h in grep_output.splitlines() if h.startswith(f"{where}:"))
        assert hit.endswith(quoted)
    assert "Last change: Tue Jun 3 10:00:00 2025 +0200." in report
    assert chat.text_deltas > 50  # streamed live in many small pieces
    assert server.rejected == [] and len(server.valid_requests) == 4


async def test_todo_demo_with_absolute_paths_and_a_denied_command(
    todo_client: tuple[OfflineServer, anthropic.AsyncAnthropic], project: Path
) -> None:
    _, client = todo_client
    chat = Conversation(client)  # no working directory in the system prompt: paths are used as given
    (grep,) = uses(await chat.say(text(PROMPT)))
    reads = uses(await chat.say(result(grep, ripgrep(project, str(project)))))
    assert all(Path(r.input["file_path"]).is_absolute() for r in reads)
    (bash,) = uses(await chat.say(*(result(r, "     1\tcontent") for r in reads)))
    summary = await chat.say(result(bash, "The user denied this command.", is_error=True))
    report = all_text(summary)
    assert "**3** TODO and **3** FIXME" in report
    assert "couldn't check when the project last changed" in report


async def test_todo_demo_when_nothing_is_found(
    todo_client: tuple[OfflineServer, anthropic.AsyncAnthropic], tmp_path: Path
) -> None:
    server, client = todo_client
    chat = Conversation(client, cwd=tmp_path)
    (grep,) = uses(await chat.say(text(PROMPT)))
    answer = await chat.say(result(grep, ripgrep(tmp_path)))
    assert uses(answer) == [] and "no TODO or FIXME comments" in all_text(answer)
    assert answer.stop_reason == "end_turn" and server.rejected == []


def test_todo_demo_summary_streams_with_a_visible_delay() -> None:
    body = {
        "messages": [
            {"role": "user", "content": PROMPT},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "g", "name": "Grep", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "g", "content": "a.py:1:# TODO x"}]},
        ],
        "tools": [{"name": "Grep"}],
    }  # no Read or Bash offered: straight to the summary
    response = todo_demo.respond(RecordedRequest(body=body, raw=b"", headers={}))
    assert response["delay_ms"] == todo_demo.SUMMARY_DELAY_MS
    assert len(response["content"][0]["deltas"]) > 20
    assert "**1** TODO and **0** FIXME" in "".join(response["content"][0]["deltas"])


def test_parse_grep_tolerates_notes_and_windows_paths() -> None:
    report = todo_demo.parse_grep(
        "Found 2 matches\nC:\\src\\a.py:3:# TODO one\nb.py:10:  FIXME two TODO\n"
        "b.py-11-context line\n[Showing results with pagination]\n"
    )
    assert (report.todo, report.fixme) == (2, 1)
    assert report.per_file == {"C:\\src\\a.py": 1, "b.py": 2}
    assert todo_demo.parse_grep("No matches found").hits == []


@pytest.fixture
async def playground() -> AsyncIterator[tuple[OfflineServer, anthropic.AsyncAnthropic]]:
    with OfflineServer(builtin_scenario("playground", delay_ms=0)) as server:
        async with anthropic.AsyncAnthropic(base_url=server.base_url, api_key="t", max_retries=0) as client:
            yield server, client


async def test_playground_run_then_quote_the_output(playground: tuple[OfflineServer, anthropic.AsyncAnthropic]) -> None:
    server, client = playground
    chat = Conversation(client)
    (bash,) = uses(await chat.say(text("run: echo hello")))
    assert bash.name == "Bash" and bash.input["command"] == "echo hello"
    answer = await chat.say(result(bash, "hello\n"))
    assert "Output of `echo hello`" in all_text(answer) and "hello" in all_text(answer)
    (failing,) = uses(await chat.say(text("run: false")))
    answer = await chat.say(result(failing, "Exit code 1", is_error=True))
    assert "failed" in all_text(answer) and "Exit code 1" in all_text(answer)
    assert server.rejected == []


async def test_playground_read_think_long_and_echo(
    playground: tuple[OfflineServer, anthropic.AsyncAnthropic], tmp_path: Path
) -> None:
    _, client = playground
    chat = Conversation(client)
    (read,) = uses(await chat.say(text(f"read: {tmp_path / 'a.txt'}")))
    assert read.name == "Read" and read.input == {"file_path": str(tmp_path / "a.txt")}
    answer = await chat.say(result(read, "     1\tfirst line"))
    assert "first line" in all_text(answer)

    thought = await chat.say(text("think: why is the sky blue"))
    assert thought.content[0].type == "thinking" and thought.content[0].signature
    assert "why is the sky blue" in thought.content[0].thinking and all_text(thought)

    long = await chat.say(text("long"))
    assert chat.text_deltas == 500 and long.stop_reason == "end_turn"

    echoed = await chat.say(text("hello **there**"))
    reply = all_text(echoed)
    assert reply.startswith("## You said") and "- `run: <command>`" in reply and "```text" in reply
    assert 15 <= chat.text_deltas <= 30


async def test_playground_keeps_its_live_delays() -> None:
    scenario = builtin_scenario("playground")
    assert scenario.responder is not None
    body = {"messages": [{"role": "user", "content": "long"}]}
    response = scenario.responder(RecordedRequest(body=body, raw=b"", headers={}))
    assert response["delay_ms"] == 20 and len(response["content"][0]["deltas"]) == 500


async def test_echo_repeats_the_last_user_text_without_reminders() -> None:
    with OfflineServer(builtin_scenario("echo")) as server:
        async with anthropic.AsyncAnthropic(base_url=server.base_url, api_key="t", max_retries=0) as client:
            chat = Conversation(client)
            message = await chat.say(text("<system-reminder>be nice</system-reminder>"), text("hello world"))
    assert all_text(message) == "You said: hello world"


def _playground(messages: list[dict[str, Any]], tools: list[str]) -> dict[str, Any]:
    scenario = builtin_scenario("playground", delay_ms=0)
    assert scenario.responder is not None
    body = {"messages": messages, "tools": [{"name": n} for n in tools]}
    return dict(scenario.responder(RecordedRequest(body=body, raw=b"", headers={})))


def test_playground_hands_prompts_to_sub_agents_and_reports_what_they_said() -> None:
    asked = _playground([{"role": "user", "content": "agents: run: echo a ;; read: /x"}], ["Agent", "Bash"])
    calls = [b for b in asked["content"] if b["type"] == "tool_use"]
    assert [(c["name"], c["input"]["prompt"], c["input"]["subagent_type"]) for c in calls] == [
        ("Agent", "run: echo a", "general-purpose"),
        ("Agent", "read: /x", "general-purpose"),
    ]
    background = _playground([{"role": "user", "content": "background: run: sleep 1"}], ["Agent"])
    assert background["content"][1]["input"]["run_in_background"] is True
    explore = _playground([{"role": "user", "content": "explore: run: ls"}], ["Agent"])
    assert explore["content"][1]["input"]["subagent_type"] == "Explore"
    # A sub-agent has no Agent tool: the same command there says so.
    refused = _playground([{"role": "user", "content": "agent: x"}], ["Bash"])
    assert "".join(refused["content"][0]["deltas"]) == "I can't do that here: the Agent tool is not available."
    uses = [{"type": "tool_use", "id": f"u{i}", "name": "Agent", "input": c["input"]} for i, c in enumerate(calls)]
    results = [
        {"type": "tool_result", "tool_use_id": "u0", "content": "Output of `echo a`:\n\n```\na\n```"},
        {"type": "tool_result", "tool_use_id": "u1", "content": "The first lines"},
    ]
    report = _playground(
        [
            {"role": "user", "content": "agents: ..."},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": results},
        ],
        ["Agent"],
    )
    said = "".join(report["content"][0]["deltas"])
    assert "Output of `echo a`: — a" in said and "The first lines" in said


def test_a_json_scenario_scripts_each_sub_agents_own_turns() -> None:
    scenario = {
        "responses": [{"content": [{"type": "text", "text": "main 1"}]}],
        "agents": [
            {
                "prompt": "job a",
                "responses": [
                    {"content": [{"type": "text", "text": "a 1"}]},
                    {"content": [{"type": "text", "text": "a 2"}]},
                ],
            }
        ],
    }
    with OfflineServer(scenario) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="t", max_retries=0)

        def ask(first: str) -> str:
            message = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": first}])
            return "".join(b.text for b in message.content if b.type == "text")

        assert [ask("job a"), ask("the user"), ask("job a"), ask("job a")] == [
            "a 1",
            "main 1",
            "a 2",
            "(offline scenario 'scenario/agent' has no more responses)",
        ]
        client.close()
    with pytest.raises(ValueError, match=r"agents.0: needs a prompt"):
        OfflineServer({"responses": [], "agents": [{"responses": []}]})


def test_the_playground_help_is_one_line_an_item() -> None:
    """The panel renders an answer's line breaks (chat markdown): an item wrapped in the source showed broken in
    two in the panel ('…as diffs you review, and' / 'a command that asks first')."""
    from bridge.offline.builtins.playground import HELP

    head, *items = [line for line in HELP.splitlines() if line]
    assert head.endswith(":") and len(items) >= 8
    assert all(line.startswith("- ") for line in items), [line for line in items if not line.startswith("- ")]
