"""The permission question shows what runs (issue 21 item 3): the whole command with the parts that made it ask
marked, the resolved path when it differs from the one named, the reason; hidden characters made visible; an
always-choice that lists every rule it saves. Here: the engine's data (`Decision.shown`), the ACP shape
(`questions.permission_params`) and the terminal's lines, from real decisions in a real workspace."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.cli.terminal import question_lines
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.hooks import HookOutcome
from bridge.permissions.types import Decision, NamedPath, PermissionRequest, answer_options
from bridge.server import questions
from bridge.tools.write import WriteInput, WriteTool
from bridge.visible import MAX_SHOWN_CHARS, MAX_TITLE_CHARS, code_span, has_hidden, one_line, visible, visible_spans
from tests.attacks.workspace import Workspace, build, engine, setup_env
from tests.permission_calls import decide

HARMLESS = "echo '" + "all tests passed, nothing to see here, carry on with the next step please thanks" + "'"
TITLE_CUT = f"{HARMLESS} && rm -f victim.txt"  # issue 21: its first 80 characters were the title


@pytest.fixture
def found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    made = build(tmp_path)
    setup_env(monkeypatch, made)
    (made.ws / "victim.txt").write_text("keep\n")
    (made.home / ".bashrc").write_text("# rc\n")
    (made.ws / "rc").symlink_to(made.home / ".bashrc")
    return made


def ask(judge: PermissionEngine, command: str, **raw: Any) -> Decision:
    decision = decide(judge, "Bash", {"command": command, **raw})
    assert decision.behavior == "ask", decision.reason
    return decision


def request_of(
    decision: Decision, tool: str = "Bash", raw: dict[str, Any] | None = None, title: str = ""
) -> PermissionRequest:
    """The request the executor builds from a decision (the tool's title, the decision's facts)."""
    raw = raw if raw is not None else {"command": decision.shown.command}
    return PermissionRequest(
        "toolu_1",
        tool,
        title or f"`{raw.get('command', '')}`",
        "execute",
        raw,
        [],
        [],
        decision.reason,
        decision.suggestions,
        shown=decision.shown,
    )


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def marked(decision: Decision) -> list[str]:
    command = decision.shown.command or ""
    return [command[m.start : m.end] for m in decision.shown.marks]


# --- the data: the command, its marked parts, the paths ---------------------------------------------------------


def test_a_command_past_80_characters_is_whole_and_only_the_part_that_asks_is_marked(found: Workspace) -> None:
    decision = ask(engine(found), TITLE_CUT)
    assert decision.shown.command == TITLE_CUT
    assert marked(decision) == ["rm -f victim.txt"]
    params = questions.permission_params("s1", request_of(decision))
    title = params["toolCall"]["title"]
    assert TITLE_CUT in title and len(title) > 100, title
    question = params["_meta"]["question"]
    assert question["command"] == TITLE_CUT
    assert [question["command"][m["start"] : m["end"]] for m in question["marks"]] == ["rm -f victim.txt"]
    assert params["toolCall"]["content"][0]["content"]["text"].startswith(TITLE_CUT + "\n\n")


def test_every_line_of_a_multi_line_command_is_shown(found: Workspace) -> None:
    command = "ls\n# nothing to worry about\nrm -f victim.txt"
    decision = ask(engine(found), command)
    assert marked(decision) == ["rm -f victim.txt"]
    params = questions.permission_params("s1", request_of(decision))
    assert params["toolCall"]["title"] == "`ls ⏎ # nothing to worry about ⏎ rm -f victim.txt`"
    assert params["_meta"]["question"]["command"] == command, "real line breaks in the data"
    lines = question_lines(request_of(decision), lambda code, text: text)
    assert lines[1:5] == ["  │ ls", "  │ # nothing to worry about", "  │ rm -f victim.txt", "  │ ^^^^^^^^^^^^^^^^"]


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("ls && git push origin main", ["git push origin main"]),  # the ask rule's part
        ("ls && echo x > .agent-bridge/settings.json", ["echo x > .agent-bridge/settings.json"]),  # protected
        ("cat a.txt; bash -c 'rm victim.txt'", ["bash -c 'rm victim.txt'"]),  # a nested part: what runs it
        ("echo `rm victim.txt` done", ["`rm victim.txt`"]),  # a backtick's commands: the backtick
        ("echo $(rm victim.txt) done", ["rm victim.txt"]),
        ("cd /tmp && ls", ["cd /tmp"]),
        ("ls | tee out.txt | wc -l", ["tee out.txt"]),
        ("cat a.txt && echo $ANTHROPIC_API_KEY", ["echo $ANTHROPIC_API_KEY"]),
        ("cat a.txt ../outside/x.txt", ["cat a.txt ../outside/x.txt"]),
    ],
)
def test_the_marks_name_the_parts_that_made_it_ask(found: Workspace, command: str, parts: list[str]) -> None:
    assert marked(ask(engine(found, ask=("Bash(git push:*)",)), command)) == parts


def test_a_symlink_shows_where_it_leads(found: Workspace) -> None:
    judge = engine(found, "acceptEdits")
    path = found.ws / "rc"
    decision = decide(
        judge, "Write", {"file_path": str(path), "content": "x"}, read_only=False, paths=[(path, "write")]
    )
    assert decision.behavior == "ask"
    assert decision.shown.paths == (NamedPath(str(path), str(found.home / ".bashrc")),)
    raw = {"file_path": str(path), "content": "x"}
    params = questions.permission_params(
        "s1", request_of(decision, "Write", raw, WriteTool().user_facing_title(WriteInput(**raw)))
    )
    assert params["toolCall"]["title"] == f"Write {path} → {found.home / '.bashrc'}"
    assert params["_meta"]["question"]["paths"] == [{"named": str(path), "resolved": str(found.home / ".bashrc")}]
    bash = ask(judge, "echo 'alias ls=rm' >> rc")
    assert NamedPath("rc", str(found.home / ".bashrc")) in bash.shown.paths
    lines = question_lines(request_of(bash), lambda code, text: text)
    assert f"  path: rc → {found.home / '.bashrc'}" in lines


def test_a_plain_relative_path_is_not_shown_as_leading_elsewhere(found: Workspace) -> None:
    decision = ask(engine(found), "echo x > out.txt && echo y > ./src/out.txt")
    assert decision.shown.paths == ()


@pytest.mark.parametrize(
    "command",
    [
        "rm -f victim.txt #\r\x1b[2Kls -la",  # a carriage return and an erase: the line would read `ls -la`
        "rm -f victim.txt \x1b[8m&& ls",  # concealed text
        "ls\x08\x08rm -f victim.txt",  # backspaces
        "rm -f victim.txt\u0085ls",  # NEL
    ],
)
def test_control_characters_are_marked_and_shown_escaped(found: Workspace, command: str) -> None:
    decision = ask(engine(found), command)
    assert decision.shown.command == command
    assert marked(decision) and all(has_hidden(text) for text in marked(decision))
    params = questions.permission_params("s1", request_of(decision))
    shown = {k: v for k, v in params["toolCall"].items() if k != "rawInput"}  # rawInput: the data, as sent
    texts = strings_in([shown, params["_meta"], params["options"]])
    assert texts and not [t for t in texts if has_hidden(t)], "no raw control character in anything shown"
    assert params["_meta"]["question"]["escaped"] is True
    assert visible(command) in params["toolCall"]["title"]
    assert all(
        not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", line)
        for line in question_lines(request_of(decision), lambda code, text: text)
    )


def test_bidi_and_zero_width_characters_are_made_visible_in_title_reason_and_rules(found: Workspace) -> None:
    command = "rm -f victim.txt # \u202eignore\u2066 this\u200b"
    decision = ask(engine(found), command)
    params = questions.permission_params("s1", request_of(decision))
    title = params["toolCall"]["title"]
    assert "\\u{202e}" in title and "\\u{2066}" in title and "\\u{200b}" in title
    assert not has_hidden(title) and not has_hidden(params["_meta"]["reason"])
    assert all(not has_hidden(option["name"]) for option in params["options"])


def test_a_hook_that_rewrites_the_command_is_judged_and_shown_as_rewritten(found: Workspace) -> None:
    hook = HookOutcome(decision="ask", reason="check it", updated_input={"command": "rm -f victim.txt"})
    decision = decide(engine(found), "Bash", {"command": "ls"}, hook=hook)
    assert decision.behavior == "ask" and decision.shown.command == "rm -f victim.txt"


def test_an_always_choice_lists_every_rule_it_saves(found: Workspace) -> None:
    decision = ask(engine(found), "npm test && python3 x.py")
    [always] = [s for s in decision.suggestions if s.behavior == "allow"]
    assert always.rules == ("Bash(npm test *)", "Bash(python3 x.py *)")
    request = request_of(decision)
    params = questions.permission_params("s1", request)
    [option] = [o for o in params["options"] if o["kind"] == "allow_always"]
    assert option["name"] == "Always allow Bash(npm test *), Bash(python3 x.py *) (saved to settings.local.json)"
    assert option["_meta"]["rules"] == ["Bash(npm test *)", "Bash(python3 x.py *)"]
    answer = questions.permission_answer({"outcome": {"outcome": "selected", "optionId": option["optionId"]}}, request)
    assert answer.suggestion is not None and answer.suggestion.rules == tuple(option["_meta"]["rules"])
    terminal = question_lines(request, lambda code, text: text)
    assert not [line for line in terminal if "always" in line], "choices come after the question lines"


def test_the_answers_a_question_offers_have_one_order(found: Workspace) -> None:
    request = request_of(ask(engine(found), "npm test && rm -f victim.txt"))
    options = answer_options(request)
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    assert options[1].suggestion is not None and options[1].suggestion.rules == (
        "Bash(npm test *)",
        "Bash(rm -f victim.txt)",
    )
    single = request_of(ask(engine(found), "rm -f victim.txt"))
    assert [o.option_id for o in answer_options(single)] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    for shown in (request, single):  # the editor is offered them in that order
        assert [o["optionId"] for o in questions.permission_params("s1", shown)["options"]] == [
            o.option_id for o in answer_options(shown)
        ]


def test_an_answer_naming_no_offered_option_saves_nothing(found: Workspace) -> None:
    request = request_of(ask(engine(found), "rm -f victim.txt"))
    for option_id in ("allow_always:2", "allow_always:x", "reject_always:9", "nonsense"):
        answer = questions.permission_answer({"outcome": {"outcome": "selected", "optionId": option_id}}, request)
        assert answer.outcome == "cancelled" and answer.suggestion is None


def test_a_rule_with_hidden_characters_is_not_offered(found: Workspace) -> None:
    decision = ask(engine(found), "ls\u200b -la")
    assert decision.suggestions == []


# --- the ground function ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ls -la", "ls -la"),
        ("a\rb", "a\\x0db"),
        ("\x1b[2J", "\\x1b[2J"),
        ("tab\there", "tab\\x09here"),
        ("\u202eabc", "\\u{202e}abc"),
        ("a\u200bb", "a\\u{200b}b"),
        ("\ufeff", "\\u{feff}"),
        ("a\u00a0b", "a\\xa0b"),
        ("\u2028", "\\u{2028}"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\u3164", "\\u{3164}"),
        ("é ü 中文", "é ü 中文"),
        ("line\nbreak", "line\\x0abreak"),
        ("\U000e0041", "\\u{e0041}"),
    ],
)
def test_visible_escapes_every_character_that_hides_or_redraws(text: str, shown: str) -> None:
    assert visible(text) == shown
    assert has_hidden(text) == (text != shown and "\n" not in text)  # (a line break is hidden only in a title)


def test_visible_spans_follow_the_escapes() -> None:
    text, spans = visible_spans("a\x1bb\nrm x", [(2, 3), (4, 8)])
    assert text == "a\\x1bb\nrm x" and [text[s:e] for s, e in spans] == ["b", "rm x"]


def test_a_title_is_never_cut_silently() -> None:
    assert one_line("a\nb") == "a ⏎ b"
    long = "x" * (MAX_TITLE_CHARS + 10)
    assert one_line(long) == "x" * MAX_TITLE_CHARS + "… (+10 more characters)"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("ls", "`ls`"),
        ("echo `id`", "`` echo `id` ``"),
        ("a ``b`` *c*", "```a ``b`` *c*```"),
        (" x ", "`  x  `"),  # CommonMark takes a space off each end of ` x `: padded, both stay (attack round 23)
        (" x", "` x`"),
        ("   ", "`   `"),  # (all spaces: none is taken off)
    ],
)
def test_a_title_is_a_code_span_no_backtick_inside_can_end(text: str, span: str) -> None:
    assert code_span(text) == span


def test_a_long_run_of_blanks_cannot_push_the_rest_of_a_title_out_of_sight(found: Workspace) -> None:
    command = "echo hi" + " " * 3000 + "; rm -f victim.txt"
    title = questions.permission_params("s1", request_of(ask(engine(found), command)))["toolCall"]["title"]
    assert title == "`echo hi ⟨3000 spaces⟩ ; rm -f victim.txt`"


def test_a_command_past_the_title_limit_names_what_asks(found: Workspace) -> None:
    command = "echo '" + "x" * (MAX_TITLE_CHARS + 500) + "' && rm -f victim.txt"
    title = questions.permission_params("s1", request_of(ask(engine(found), command)))["toolCall"]["title"]
    assert "more characters)" in title and title.endswith(" — it asks about `rm -f victim.txt`")


def test_a_huge_command_is_shown_capped_and_says_how_much_is_left_out(found: Workspace) -> None:
    command = "echo " + "é\u200b" * 500_000 + " && rm -f victim.txt"
    decision = ask(engine(found), command)
    started = time.perf_counter()
    params = questions.permission_params("s1", request_of(decision))
    assert time.perf_counter() - started < 2.0
    question = params["_meta"]["question"]
    assert question["command"].endswith(f"… (+{len(command) - MAX_SHOWN_CHARS:,} more characters not shown)")
    assert len(params["toolCall"]["title"]) < MAX_TITLE_CHARS + 100
    assert all(m["end"] <= len(question["command"]) for m in question["marks"])


@pytest.mark.parametrize(
    ("command", "rules"),
    [
        ("cat ../outside/x.txt", [("Bash(cat ../outside/x.txt)",), ("Bash(cat ../outside/x.txt)",)]),
        ("cat /proc/self/environ", [("Bash(cat /proc/self/environ)",), ("Bash(cat /proc/self/environ)",)]),
        ("printenv", [("Bash(printenv)",), ("Bash(printenv)",)]),
        ("echo $ANTHROPIC_API_KEY", []),  # no rule can allow a word computed at run time: no always-option
        ("npm test && python3 x.py", [("Bash(npm test *)", "Bash(python3 x.py *)")]),
        # found by an attack round: `python3 scripts/x.py` offered `Bash(python3 *)`, which runs any code after
        ("python3 scripts/x.py --fast", [("Bash(python3 scripts/x.py *)",), ("Bash(python3 scripts/x.py *)",)]),
        ("python3 -W ignore scripts/x.py", [("Bash(python3 -W ignore scripts/x.py *)",)] * 2),
        ("python3 -m pytest -q", [("Bash(python3 -m pytest *)",), ("Bash(python3 -m pytest *)",)]),
        ("node scripts/x.js", [("Bash(node scripts/x.js *)",), ("Bash(node scripts/x.js *)",)]),
        ("node -r ./hook.js x.js", [("Bash(node -r ./hook.js x.js)",), ("Bash(node -r ./hook.js x.js)",)]),
        # attack round 6: a program that runs what it is given is saved exactly (`Bash(flock *)` ran anything)
        ("flock lockfile touch a", [("Bash(flock lockfile touch a)",), ("Bash(flock lockfile touch a)",)]),
        ("watch -n 1 make", [("Bash(watch -n 1 make)",), ("Bash(watch -n 1 make)",)]),
        ("ionice -c3 make", [("Bash(ionice -c3 make)",), ("Bash(ionice -c3 make)",)]),
    ],
)
def test_an_always_rule_allows_no_more_than_the_question_was_about(
    found: Workspace, command: str, rules: list[tuple[str, ...]]
) -> None:
    """A read that asks only for what it reads (outside, the environment) gets the exact command: `Bash(cat *)`
    would let `cat` read anything from then on."""
    assert [s.rules for s in ask(engine(found), command).suggestions] == rules
