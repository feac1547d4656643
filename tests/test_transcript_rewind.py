"""The transcript's rewind line (issue 23 item 3): the file stays append-only; on load, the history is what it was
before the named turn's prompt — also when that turn is older than a compaction (a restart line), and a copy of a
turn still running elsewhere (a fork's) is not part of it."""

from __future__ import annotations

from pathlib import Path

from bridge.messages import Message
from bridge.transcript import Transcript, load


def _user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _assistant(text: str) -> Message:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def _turn(transcript: Transcript, turn: str, prompt: str, answer: str) -> None:
    transcript.turn_started(turn)
    transcript.append(_user(prompt))
    transcript.append(_assistant(answer))
    transcript.turn_ended("end_turn")


def test_a_rewind_goes_back_past_a_compaction(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, "sess_a", tmp_path)
    _turn(transcript, "t1", "one", "1")
    _turn(transcript, "t2", "two", "2")
    transcript.turn_started("t3")
    transcript.append(_user("three"))
    transcript.restart([_user("summary of one, two"), _assistant("ok")])  # a compaction in turn 3
    transcript.append(_assistant("3"))
    transcript.turn_ended("end_turn")
    _turn(transcript, "t4", "four", "4")
    before = transcript.path.read_bytes()

    transcript.turn_started("t5")  # the /rewind command's own turn
    transcript.rewound("t2", conversation=True, code=False)
    transcript.turn_ended("end_turn")
    transcript.close()
    loaded = load(transcript.path)

    assert loaded.messages == [_user("one"), _assistant("1")]
    assert [t.id for t in loaded.turns] == ["t1", "t5"]
    after = transcript.path.read_bytes()
    assert after.startswith(before) and len(after) > len(before), "the file was only appended to"
    assert b'"type":"restart"' in transcript.path.read_bytes(), "what came before stays in the file"


def test_a_code_rewind_leaves_the_history_and_a_later_turn_follows_a_rewind(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, "sess_b", tmp_path)
    _turn(transcript, "t1", "one", "1")
    _turn(transcript, "t2", "two", "2")
    transcript.rewound("t2", conversation=False, code=True)
    assert [m["content"][0]["text"] for m in load(transcript.path).messages] == ["one", "1", "two", "2"]
    transcript.rewound("t2", conversation=True, code=True)
    _turn(transcript, "t3", "three", "3")
    transcript.close()
    loaded = load(transcript.path)
    assert [m["content"][0]["text"] for m in loaded.messages] == ["one", "1", "three", "3"]
    assert [t.id for t in loaded.turns] == ["t1", "t3"]


def test_a_forks_copy_of_a_running_turn_is_dropped_by_its_rewind(tmp_path: Path) -> None:
    transcript = Transcript.create(tmp_path, "sess_c", tmp_path)
    _turn(transcript, "t1", "one", "1")
    transcript.turn_started("t2")
    transcript.append(_user("two, still running"))
    transcript.rewound("t2", conversation=True, code=False)  # what a fork from before prompt 2 appends
    transcript.close()
    loaded = load(transcript.path)
    assert loaded.messages == [_user("one"), _assistant("1")] and [t.id for t in loaded.turns] == ["t1"]


def test_a_folder_whose_name_is_not_utf8_keeps_its_name_in_the_transcript(tmp_path: Path) -> None:
    """Attack round 7: a session in `proj\\udcff` (the byte 0xff, as Python names it) was stored as `proj?`: it left
    `session/list` for its folder, and a load reopened it in a folder that does not exist."""
    from bridge.transcript import Transcript, list_sessions
    from bridge.transcript import load as load_transcript

    cwd = tmp_path / "proj\udcff"
    transcript = Transcript.create(tmp_path / "data", "sess_x", cwd)
    transcript.close()
    assert load_transcript(transcript.path).cwd == cwd
    assert [s.session_id for s in list_sessions(tmp_path / "data", cwd)] == ["sess_x"]
