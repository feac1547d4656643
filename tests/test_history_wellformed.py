"""Attack round 17 F2/F3: a history with reused tool_use ids, and stored transcripts written by anyone (a hand edit,
another tool, an attacker), must still make requests the Messages API takes. The offline API's oracle
(`history_errors`, which shares no code with the repair) is the judge; what the load drops is reported."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bridge.messages import repair_pairing
from bridge.offline.validation import history_errors
from bridge.transcript import list_sessions, load, load_sidechain, title_of

Json = dict[str, Any]


def user(*blocks: Any) -> Json:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> Json:
    return {"role": "assistant", "content": list(blocks)}


def text(value: Any) -> Json:
    return {"type": "text", "text": value}


def use(use_id: Any, name: Any = "Read", data: Any = None) -> Json:
    block: Json = {"type": "tool_use", "name": name, "input": {"file_path": "a"} if data is None else data}
    if use_id is not None:
        block["id"] = use_id
    return block


def result(use_id: Any, content: Any = "out") -> Json:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content}


GO = user(text("do it"))
NEXT = user(text("next"))


def sent(history: list[Json]) -> list[Json]:
    """The messages of the next request after `history`: a new prompt joins it, then the repair."""
    return repair_pairing([*history, NEXT])


# ---- F2: ids reused in the history ---------------------------------------------------------------------------


def test_a_duplicate_id_in_one_message_keeps_the_first_call_and_its_result() -> None:
    history = [GO, assistant(use("toolu_1"), use("toolu_1", data={"file_path": "b"})), user(result("toolu_1", "A"))]
    history[-1]["content"].append(result("toolu_1", "B"))
    repaired = sent(history)
    assert history_errors(repaired) == []
    assert [b["input"]["file_path"] for b in repaired[1]["content"]] == ["a"]
    assert [b.get("content") for b in repaired[2]["content"] if b["type"] == "tool_result"] == ["A"]


def test_an_id_reused_by_a_later_message_drops_the_later_call_with_its_result() -> None:
    history = [
        GO,
        assistant(use("toolu_2")),
        user(result("toolu_2", "x")),
        assistant(text("again"), use("toolu_2")),
        user(result("toolu_2", "y")),
        assistant(text("fine")),
    ]
    repaired = sent(history)
    assert history_errors(repaired) == []
    assert '"y"' not in json.dumps(repaired) and '"x"' in json.dumps(repaired)
    assert "again" in json.dumps(repaired), "the rest of the later message stays"


def test_a_later_message_of_nothing_but_the_reused_call_goes_with_it() -> None:
    history = [
        GO,
        assistant(use("toolu_3")),
        user(result("toolu_3")),
        assistant(use("toolu_3")),
        user(result("toolu_3")),
    ]
    assert history_errors(sent(history)) == []


def test_random_histories_with_reused_ids_pass_the_oracle() -> None:
    rng = random.Random(1717)
    for _ in range(500):
        history: list[Json] = [GO]
        for _turn in range(rng.randint(1, 6)):
            ids = [f"toolu_{rng.randint(1, 4)}" for _ in range(rng.randint(0, 3))]
            history.append(assistant(text("t"), *[use(i) for i in ids]))
            answers = [result(rng.choice([*ids, "toolu_9"])) for _ in range(rng.randint(0, 4))]
            if answers:
                history.append(user(*answers))
        assert history_errors(sent(history)) == [], history


# ---- F3: stored transcripts ------------------------------------------------------------------------------------

HOSTILE: dict[str, list[Json]] = {
    "duplicate ids in one message": [GO, assistant(use("toolu_1"), use("toolu_1"))],
    "one id in two turns": [
        GO,
        assistant(use("toolu_2", data={})),
        user(result("toolu_2", "x")),
        assistant(use("toolu_2", data={})),
        user(result("toolu_2", "y")),
        assistant(text("fine")),
    ],
    "an id with bad characters": [GO, assistant(use("../../x y"))],
    "an id too long": [GO, assistant(use("t" * 129))],
    "an id that is a number": [GO, assistant(use(7))],
    "no id": [GO, assistant(use(None))],
    "a result answering a bad id": [GO, assistant(use("../x")), user(result("../x"))],
    "a block that is a string": [GO, assistant("just a string")],
    "a block that is a list": [GO, assistant(["a"]), user([])],
    "a block without a type": [GO, assistant({"text": "x"})],
    "text that is a number": [user(text(5))],
    "text that is null": [GO, assistant(text(None))],
    "input that is a string": [GO, assistant(use("toolu_3", data="str"))],
    "a name with bad characters": [GO, assistant(use("toolu_4", name="../Read me"))],
    "a name that is missing": [GO, assistant({"type": "tool_use", "id": "toolu_5", "input": {}})],
    "an unknown block type": [GO, assistant({"type": "bogus", "x": 1})],
    "thinking without a signature": [GO, assistant({"type": "thinking", "thinking": "hm"}, text("a"))],
    "thinking that is not first": [GO, assistant(text("a"), {"type": "thinking", "thinking": "hm", "signature": "s"})],
    "redacted thinking without data": [GO, assistant({"type": "redacted_thinking"}, text("a"))],
    "thinking with a cache_control": [
        GO,
        assistant({"type": "thinking", "thinking": "hm", "signature": "s", "cache_control": {"type": "ephemeral"}}),
    ],
    "a tool_result in an assistant message": [GO, assistant(result("toolu_9"))],
    "a tool_use in a user message": [user(text("hi"), use("toolu_6"))],
    "a result whose content is a number": [GO, assistant(use("toolu_7")), user(result("toolu_7", 42))],
    "a result holding a bad block": [
        GO,
        assistant(use("toolu_8")),
        user(result("toolu_8", [{"type": "tool_use"}, "s", text(3), text("kept")])),
    ],
    "a result whose is_error is a string": [
        GO,
        assistant(use("toolu_10")),
        user({**result("toolu_10"), "is_error": "yes"}),
    ],
    "an image without a source": [user({"type": "image"}, text("look"))],
    "an image of an unknown type": [
        user({"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA"}}, text("x"))
    ],
    "a document without a source": [user({"type": "document"}, text("read"))],
    "a bad cache_control": [user({"type": "text", "text": "x", "cache_control": {"type": "forever"}})],
    "many cache_controls": [
        user(*[{"type": "text", "text": f"{i}", "cache_control": {"type": "ephemeral"}} for i in range(6)])
    ],
}


def _write(path: Path, records: list[Any], kind: str = "session") -> Path:
    header = {"type": kind, "sessionId": path.stem, "cwd": str(path.parent), "createdAt": 0}
    lines = [json.dumps(header), *(json.dumps({"type": "message", "message": m}) for m in records)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("messages", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_transcript_loads_into_a_history_the_api_takes(tmp_path: Path, messages: list[Json]) -> None:
    loaded = load(_write(tmp_path / "sess_x.jsonl", messages))
    assert history_errors(sent(loaded.messages)) == []
    if "cache_control" not in json.dumps(messages):  # (a stored cache_control is left off without a word)
        assert loaded.problems, "what was dropped is reported"


@pytest.mark.parametrize("messages", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_sidechain_loads_into_a_history_the_api_takes(tmp_path: Path, messages: list[Json]) -> None:
    loaded = load_sidechain(_write(tmp_path / "toolu_x.jsonl", messages, kind="agent"))
    assert history_errors(sent(loaded.messages)) == []


def test_a_hostile_restart_record_is_cleaned_too(tmp_path: Path) -> None:
    path = _write(tmp_path / "sess_r.jsonl", [GO])
    bad = [GO, assistant(use("toolu_1"), use("toolu_1"), "junk", {"type": "thinking", "thinking": "x"})]
    with path.open("a") as lines:
        lines.write(json.dumps({"type": "restart", "messages": bad}) + "\n")
    loaded = load(path)
    assert history_errors(sent(loaded.messages)) == [] and loaded.problems
    assert all(isinstance(b, dict) for turn in loaded.turns for m in turn.messages for b in m["content"])


def test_the_problems_say_what_was_dropped_once_per_line(tmp_path: Path) -> None:
    loaded = load(_write(tmp_path / "sess_p.jsonl", [GO, assistant(use(None), use(None), "s", text("ok"))]))
    [problem] = loaded.problems
    assert "sess_p.jsonl:3" in problem and "tool_use" in problem and "dropped" in problem, problem
    assert "ok" in json.dumps(loaded.messages), "the well-formed rest of the message stays"


JUNK: list[Any] = [
    "s",
    3,
    None,
    [],
    {},
    {"type": 1},
    {"type": "bogus"},
    text(None),
    text(["x"]),
    use(None),
    use("a b"),
    use("toolu_dup"),
    use("toolu_ok", data=[1]),
    use("toolu_n", name=5),
    result("toolu_dup"),
    result(None),
    result("toolu_ok", {"a": 1}),
    {"type": "thinking"},
    {"type": "thinking", "thinking": 1, "signature": "s"},
    {"type": "redacted_thinking", "data": 3},
    {"type": "image", "source": "x"},
    {"type": "document", "source": {"type": "pdf"}},
    {"type": "text", "text": "c", "cache_control": "yes"},
]


def test_random_junk_in_stored_messages_loads_into_a_history_the_api_takes(tmp_path: Path) -> None:
    rng = random.Random(20260517)
    for round_number in range(300):
        messages: list[Json] = []
        for index in range(rng.randint(1, 7)):
            role = "user" if index % 2 == 0 else "assistant"
            blocks = [rng.choice(JUNK) for _ in range(rng.randint(0, 3))]
            if rng.random() < 0.5:
                blocks.append(text("words"))
            messages.append({"role": role, "content": blocks})
        path = _write(tmp_path / f"sess_{round_number}.jsonl", messages)
        loaded = load(path)
        assert history_errors(sent(loaded.messages)) == [], (messages, loaded.messages)


# ---- titles -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        user(text(5)),
        user(text(None)),
        user({"type": "text"}),
        user("s"),
        {"role": "user", "content": "a string"},
        {"role": "user", "content": None},
        {"role": "user", "content": {"type": "text"}},
        {"role": "user"},
        "s",
        None,
    ],
)
def test_a_title_of_a_malformed_message_is_none_not_a_crash(message: Any) -> None:
    assert title_of(message) is None


def test_title_of_a_well_formed_message() -> None:
    assert title_of(user(text("[hook] no"), text("  first line\nsecond"))) == "first line"


def test_one_malformed_session_file_does_not_break_the_listing(tmp_path: Path) -> None:
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    _write(sessions / "sess_bad.jsonl", [user(text(5)), user({"type": "text"}), user(text("late title"))])
    _write(sessions / "sess_good.jsonl", [user(text("good title"))])
    (sessions / "sess_noid.jsonl").write_text(json.dumps({"type": "session"}) + "\n")
    (sessions / "sess_list.jsonl").write_text("[]\n")
    titles = {s.session_id: s.title for s in list_sessions(tmp_path / "data")}
    assert titles == {"sess_bad": "late title", "sess_good": "good title"}


@pytest.mark.parametrize("header", [{"type": "session"}, {"type": "session", "sessionId": 5, "cwd": "/w"}])
def test_a_header_without_its_id_or_folder_is_said_to_be_no_transcript(tmp_path: Path, header: Json) -> None:
    path = tmp_path / "sess_h.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps({"type": "message", "message": GO}) + "\n")
    with pytest.raises(ValueError, match="not a transcript"):
        load(path)
