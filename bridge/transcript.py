"""Append-only JSONL transcripts: one file per session under the data dir.

Line 1 is a header (`{"type": "session", ...}`); every later line is one complete message
(`{"type": "message", "message": {...}}`), written and flushed when it is complete — a `kill -9` loses at
most the message in flight. After each response a `{"type": "usage", ...}` line keeps its tokens and cost,
so a loaded session's totals go on from where they were. A turn is framed by `{"type": "turn", "event":
"start"}` and `{"type": "turn", "event": "end", "stopReason": ...}` (or `"error": ...`), so a replay shows each
prompt as its own turn with how it ended and what it cost; a turn with no end line was cut off (a crash). A
turn's start line carries its `id` (what a rewind or a fork names). A rewind of the conversation is a line of its
own, `{"type": "rewind", "turn": ID, ...}`: from there on the history is what it was before that turn's prompt
(the lines before it stay as they were: the file is only ever appended to). A corrupt line is reported and skipped
on load, never fatal.

The data dir is private (attack round 8: transcripts, command output and checkpoints hold what commands printed and
what files held, and the umask's 0755/0644 let any local user read them): every folder the bridge makes in it is
0700 and every file 0600 (`private_dir`, `private_opener`; on Windows the profile's ACLs do this). A data dir made
before that is tightened when a session is made in it (`Transcript.create`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bridge.jsonfile import jsonl_records
from bridge.messages import MARKER, MARKER_TOOL_USE, Message, repair_pairing, sound_blocks, tool_uses
from bridge.model.types import Usage

log = logging.getLogger(__name__)


PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600
_POSIX = sys.platform != "win32"  # (Windows: the profile's ACLs keep the data dir the user's)


def private_dir(path: Path) -> Path:
    """`path`, a folder of the data dir, made as `make_private` does, or tightened to 0700 when a bridge before
    this one made it with the umask's mode."""
    make_private(path)
    if _POSIX and not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) != PRIVATE_DIR:
        os.chmod(path, PRIVATE_DIR)
    return path


def make_private(path: Path) -> None:
    """`path` and every missing folder above it made 0700 (the umask may only take from that); a folder that is
    there is left as it is (one above the data dir is the user's)."""
    if not path.is_dir():
        if path.parent != path:
            make_private(path.parent)
        path.mkdir(PRIVATE_DIR, exist_ok=True)


def private_opener(path: str, flags: int) -> int:
    """For `open(..., opener=private_opener)`: a file of the data dir, made 0600; one a bridge before this one made
    with the umask's mode is tightened as it is opened."""
    fd = os.open(path, flags, PRIVATE_FILE)
    if _POSIX:
        try:
            if stat.S_IMODE(os.fstat(fd).st_mode) & ~PRIVATE_FILE:
                os.fchmod(fd, PRIVATE_FILE)
        except OSError:  # not ours to change (another user's file): it is read as it is
            pass
    return fd


def tighten_data_dir(data_dir: Path, workspace: Path) -> None:
    """The data dir itself made private when it is the bridge's: a folder of the user's own (not a link) that is
    neither the home folder nor the workspace or a folder it is in (a data dir set to one of those is the user's
    folder, left as it is; the bridge's own folders in it are private all the same)."""
    getuid = getattr(os, "getuid", None)
    if not _POSIX or getuid is None:
        return
    try:
        st = os.lstat(data_dir)
        real, home = Path(os.path.realpath(data_dir)), Path(os.path.realpath(Path.home()))
        workspace = Path(os.path.realpath(workspace))
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != getuid() or stat.S_IMODE(st.st_mode) == PRIVATE_DIR:
            return
        if real == home or workspace == real or workspace.is_relative_to(real):
            return
        os.chmod(data_dir, PRIVATE_DIR)
    except (OSError, RuntimeError) as error:  # RuntimeError: no home folder to tell apart
        log.warning("cannot make the data dir %s private: %s", data_dir, error)


def sessions_dir(data_dir: Path) -> Path:
    return data_dir / "sessions"


def transcript_path(data_dir: Path, session_id: str) -> Path:
    if not session_id.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"invalid session id {session_id!r}")
    return sessions_dir(data_dir) / f"{session_id}.jsonl"


class HeldElsewhere(Exception):
    """The session's transcript is another process's to write (it has the session open)."""


class Transcript:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._claim: int | None = None

    def claim(self) -> None:
        """This process becomes the session's one writer, until `close`: an exclusive lock on the transcript (the
        kernel drops it when the process dies). Raises HeldElsewhere when another process has it: two writers
        interleave their turns, and a later load merges their replies and drops a result as an orphan. Where
        there are no such locks (Windows), nothing is claimed."""
        try:
            import fcntl
        except ImportError:
            return
        if self._claim is not None:
            return
        fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise HeldElsewhere(str(self.path)) from None
        except OSError:  # a filesystem without locks: no claim, as on Windows
            os.close(fd)
            return
        self._claim = fd

    @classmethod
    def create(cls, data_dir: Path, session_id: str, cwd: Path) -> Transcript:
        path = transcript_path(data_dir, session_id)
        data_dir.parent.mkdir(parents=True, exist_ok=True)  # the folders around the data dir are the user's
        make_private(data_dir)
        tighten_data_dir(data_dir, cwd)
        private_dir(path.parent)
        private_dir(path.parent / session_id)  # the session's stored output, sub-agents, checkpoint log
        transcript = cls(path)
        transcript._write({"type": "session", "sessionId": session_id, "cwd": str(cwd), "createdAt": time.time()})
        return transcript

    @classmethod
    def create_sidechain(cls, path: Path, header: dict[str, Any]) -> Transcript:
        """A sub-agent's transcript beside its session's (`sessions/<id>/agents/<toolCallId>.jsonl`): the same
        records, with a header of `type: agent` that says which call started it."""
        try:
            private_dir(path.parent)
        except OSError as error:
            log.error("cannot create %s: %s", path.parent, error)
        transcript = cls(path)
        transcript._write(header)
        return transcript

    def append(self, message: Message) -> None:
        self._write({"type": "message", "message": message})

    def usage(self, usage: Usage, cost_usd: float) -> None:
        self._write(
            {
                "type": "usage",
                "costUsd": cost_usd,
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "cacheReadTokens": usage.cache_read_tokens,
                "cacheWriteTokens": usage.cache_write_tokens,
            }
        )

    def turn_started(self, turn_id: str | None = None) -> None:
        record: dict[str, Any] = {"type": "turn", "event": "start"}
        if turn_id is not None:
            record["id"] = turn_id
        self._write(record)

    def rewound(self, turn_id: str, *, conversation: bool, code: bool) -> None:
        """A rewind to before the prompt of `turn_id`: of the conversation (the history goes back there on load),
        of the code, or both (the code's is recorded for the record: the files are the checkpoints' business)."""
        self._write({"type": "rewind", "turn": turn_id, "conversation": conversation, "code": code, "at": time.time()})

    def turn_ended(self, stop_reason: str | None, error: str | None = None) -> None:
        """`stop_reason` as the prompt was answered; None with `error` when the turn failed."""
        record: dict[str, Any] = {"type": "turn", "event": "end", "stopReason": stop_reason}
        if error is not None:
            record["error"] = error
        self._write(record)

    def restart(self, messages: list[Message]) -> None:
        """The conversation continues from `messages` (after /compact or /clear); what came before stays."""
        self._write({"type": "restart", "messages": messages})

    def _write(self, record: dict[str, Any]) -> None:
        try:
            if self._file is None:
                # errors="replace": a lone surrogate must not leave the history in memory and on disk apart
                self._file = open(  # noqa: SIM115 - kept open
                    self.path, "a", encoding="utf-8", errors="replace", opener=private_opener
                )
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
            if not line.isascii():
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError:  # a lone surrogate (a folder name not in UTF-8): escaped, read back as is
                    line = json.dumps(record, separators=(",", ":"))
            self._file.write(line + "\n")
            self._file.flush()  # to the OS: survives the process being killed
        except OSError as error:  # a full disk must not end the turn
            log.error("cannot write transcript %s: %s", self.path, error)

    def close(self) -> None:
        """Flushed and synced to disk, then closed (the process may end without more ado right after); the claim
        goes with it."""
        claim, self._claim = self._claim, None
        if claim is not None:
            os.close(claim)
        if self._file is not None:
            try:
                self._file.flush()
                os.fsync(self._file.fileno())
            except OSError as error:
                log.error("cannot sync transcript %s: %s", self.path, error)
            finally:
                self._file.close()
                self._file = None


@dataclass
class StoredTurn:
    """One prompt and what followed it, as stored (for a replay; the model gets the repaired history).

    `ended`: the turn has its end line (`stop_reason`, or `error` when it failed); a turn without one was cut
    off. `usage`/`cost_usd` sum its responses; `session_cost_usd` is the session's total after it, and
    `context_tokens` its last response's context."""

    messages: list[Message] = field(default_factory=list)
    ended: bool = False
    stop_reason: str | None = None
    error: str | None = None
    responses: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    session_cost_usd: float = 0.0
    context_tokens: int = 0
    framed: bool = True  # opened by a start line; False: found by its prompt (an older transcript)
    id: str | None = None  # its start line's id (None: an older transcript's turn)


@dataclass
class LoadedTranscript:
    session_id: str
    cwd: Path
    messages: list[Message]
    problems: list[str] = field(default_factory=list)
    cost_usd: float = 0.0  # the session's totals over every response, compactions included
    usage_total: Usage = field(default_factory=Usage)
    turns: list[StoredTurn] = field(default_factory=list)  # since the last compaction or /clear


def load(path: Path) -> LoadedTranscript:
    found = _records(path, "session")
    return LoadedTranscript(
        str(found.header["sessionId"]),
        Path(found.header["cwd"]),
        repair_pairing(found.messages),
        found.problems + _reused_ids(path, found.messages),
        found.cost_usd,
        found.usage,
        found.turns,
    )


def turns_of(messages: list[Message]) -> list[StoredTurn]:
    """A history without turn lines (no transcript) as turns: each prompt opens one."""
    turns = _Turns()
    for message in messages:
        turns.message(message)
    return turns.finish()


def is_prompt(message: Message) -> bool:
    """Whether a stored user message starts a turn (for transcripts without turn lines, or a turn cut off by a
    crash that the next prompt followed): the user's words, not tool results, markers or hook notes."""
    if message.get("role") != "user":
        return False
    blocks = message.get("content", [])
    if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks):
        return False
    return any(
        isinstance(b, dict)
        and (b.get("type") == "image" or (b.get("type") == "text" and not str(b.get("text", "")).startswith("[")))
        for b in blocks
    )


@dataclass
class LoadedSidechain:
    header: dict[str, Any]
    messages: list[Message]
    problems: list[str] = field(default_factory=list)


def load_sidechain(path: Path) -> LoadedSidechain:
    """A sub-agent's stored history, repaired (a crash may have cut it anywhere)."""
    found = _records(path, "agent")
    return LoadedSidechain(
        found.header, repair_pairing(found.messages), found.problems + _reused_ids(path, found.messages)
    )


def sidechain_tool_ids(folder: Path) -> set[str]:
    """The tool_use ids a stored session's sub-agents used (their transcripts in `folder`): after a load, a new call
    must not take one of them — the replayed sub-agent card has it, and an editor keying cards by id put the new
    call's result on it (attack round 19)."""
    ids: set[str] = set()
    with contextlib.suppress(OSError):
        for path in sorted(folder.glob("*.jsonl")):
            with contextlib.suppress(OSError, ValueError):
                for message in load_sidechain(path).messages:
                    ids.update(b["id"] for b in tool_uses(message) if isinstance(b.get("id"), str))
    return ids


def _reused_ids(path: Path, messages: list[Message]) -> list[str]:
    """The problem to report when calls of the history share an id (the repair keeps the first of each, with its
    result; the API refuses a history that repeats one)."""
    ids = [b["id"] for m in messages for b in tool_uses(m) if isinstance(b.get("id"), str)]
    reused = len(ids) - len(set(ids))
    if not reused:
        return []
    return [f"{path.name}: {reused} tool call(s) reuse an earlier call's id: left out with their results"]


@dataclass
class _Records:
    header: dict[str, Any]
    messages: list[Message]
    problems: list[str]
    cost_usd: float
    usage: Usage
    turns: list[StoredTurn]


class _Turns:
    """Groups the records since the last restart into turns. A start line opens a turn and an end line closes
    it; a message with no turn open (an older transcript) opens one, and there a prompt after a prompt opens
    the next (`inferred`: no start line framed it, so the user's words are the only boundary).

    The turns of every earlier history (before a restart) are kept by id, so a rewind can go back past a
    compaction: the history is then that earlier one's turns up to the one named."""

    def __init__(self) -> None:
        self.turns: list[StoredTurn] = []
        self._open: StoredTurn | None = None
        self._inferred = False
        self._earlier: list[list[StoredTurn]] = []  # the turn lists that restarts replaced

    def restart(self, messages: list[Message]) -> None:
        """The history starts again from `messages` (a compaction in a turn, `/clear`): the turn goes on."""
        framed = self._open is not None and not self._inferred
        turn_id = self._open.id if self._open is not None else None
        self._earlier.append(self.turns)
        self.turns, self._open = [], None
        if framed:
            self.start(turn_id=turn_id)
        for message in messages:
            self.message(message)

    def rewind(self, turn_id: str) -> bool:
        """The history as it was before the prompt of `turn_id`; the turn running now (the one that rewinds) goes
        on. False: no such turn."""
        for turns in [self.turns, *reversed(self._earlier)]:
            index = next((i for i, t in enumerate(turns) if t.id == turn_id), None)
            if index is None:
                continue
            kept = [_copy_turn(t) for t in turns[:index]]
            if turns is self.turns:
                self._earlier.append(self.turns)
            if self._open is not None and self._open.id != turn_id and not self._open.messages:
                kept.append(self._open)  # the rewinding turn itself (a command's: it adds no message)
            else:
                self._open = None  # (a fork's copy of a turn still running in the original: not this history's)
            self.turns = kept
            return True
        return False

    def messages(self) -> list[Message]:
        return [m for turn in self.turns for m in turn.messages]

    def start(self, *, framed: bool = True, turn_id: str | None = None) -> None:
        self._open, self._inferred = StoredTurn(framed=framed, id=turn_id), not framed
        self.turns.append(self._open)

    def message(self, message: Message) -> None:
        if self._open is None or (
            self._inferred and is_prompt(message) and any(is_prompt(m) for m in self._open.messages)
        ):
            self.start(framed=False)
        assert self._open is not None
        self._open.messages.append(message)

    def finish(self) -> list[StoredTurn]:
        """The turns; one found by its prompt ended as its last message says (an answer: `end_turn`; the
        cancel marker: `cancelled`); otherwise it is left as cut off."""
        for turn in self.turns:
            if turn.framed or turn.ended or not turn.messages:
                continue
            last = turn.messages[-1]
            texts = [b.get("text") for b in last.get("content", []) if isinstance(b, dict)]
            if last.get("role") == "user" and (MARKER in texts or MARKER_TOOL_USE in texts):
                turn.ended, turn.stop_reason = True, "cancelled"
            elif last.get("role") == "assistant" and not any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in last.get("content", [])
            ):
                turn.ended, turn.stop_reason = True, "end_turn"
        return self.turns

    def usage(self, usage: Usage, cost: float, session_cost: float) -> None:
        if self._open is None:
            return
        self._open.responses += 1
        self._open.usage += usage
        self._open.cost_usd += cost
        self._open.session_cost_usd = session_cost
        self._open.context_tokens = usage.context_tokens

    def end(self, record: dict[str, Any], session_cost: float) -> None:
        if self._open is None:
            return
        stop, error = record.get("stopReason"), record.get("error")
        self._open.ended = True
        self._open.stop_reason = stop if isinstance(stop, str) else None
        self._open.error = error if isinstance(error, str) else None
        if not self._open.responses:
            self._open.session_cost_usd = session_cost
        self._open = None


def _records(path: Path, kind: str) -> _Records:
    """A transcript's records; `kind` is its header's type (`session`, or `agent` for a sidechain)."""
    problems: list[str] = []
    header: dict[str, Any] | None = None
    messages: list[Message] = []
    cost = 0.0
    usage = Usage()
    turns = _Turns()
    for number, record in jsonl_records(path):
        if isinstance(record, str):
            problems.append(f"{path.name}:{number}: corrupt line skipped ({record})")
            continue
        record_kind = record["type"]
        if record_kind == kind:
            header = record
        elif record_kind == "message" and _is_message(record.get("message")):
            message = _sound(record["message"], f"{path.name}:{number}", problems)
            if message is not None:
                messages.append(message)
                turns.message(message)
        elif record_kind == "restart" and isinstance(record.get("messages"), list):
            where = f"{path.name}:{number}"
            found = (_sound(m, where, problems) for m in record["messages"] if _is_message(m))
            messages = [m for m in found if m is not None]
            turns.restart(messages)
        elif record_kind == "usage" and _is_usage(record):
            cost += record["costUsd"]
            response = Usage(
                record["inputTokens"], record["outputTokens"], record["cacheReadTokens"], record["cacheWriteTokens"]
            )
            usage += response
            turns.usage(response, record["costUsd"], cost)
        elif record_kind == "turn" and record.get("event") == "start":
            turns.start(turn_id=record["id"] if isinstance(record.get("id"), str) else None)
        elif record_kind == "rewind" and isinstance(record.get("turn"), str):
            if record.get("conversation") and turns.rewind(record["turn"]):
                messages = turns.messages()
        elif record_kind == "turn" and record.get("event") == "end":
            turns.end(record, cost)
        else:
            problems.append(f"{path.name}:{number}: unknown record skipped")
    if header is None:
        raise ValueError(f"{path} is not a transcript (no {kind} header)")
    if kind == "session" and not (isinstance(header.get("sessionId"), str) and isinstance(header.get("cwd"), str)):
        # (a forged or hand-edited header: said as such, never a bare KeyError)
        raise ValueError(f"{path} is not a transcript (its header names no session id and folder)")
    return _Records(header, messages, problems, cost, usage, turns.finish())


def _copy_turn(turn: StoredTurn) -> StoredTurn:
    return dataclasses.replace(turn, messages=list(turn.messages))


def _is_usage(record: dict[str, Any]) -> bool:
    counts = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
    return (
        isinstance(record.get("costUsd"), int | float)
        and not isinstance(record.get("costUsd"), bool)
        and all(type(record.get(key)) is int and record[key] >= 0 for key in counts)
    )


def _is_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("role") in ("user", "assistant")
        and isinstance(value.get("content"), list)
    )


def _sound(message: Message, where: str, problems: list[str]) -> Message | None:
    """`message` with only the blocks the API takes back (`sound_blocks`), None when none is left; what was
    dropped is said once for the line, in `problems` (shown to the person, as a corrupt line is)."""
    blocks, dropped = sound_blocks(message)
    if dropped:
        what = ", ".join(
            f"{text} (x{dropped.count(text)})" if dropped.count(text) > 1 else text for text in dict.fromkeys(dropped)
        )
        problems.append(f"{where}: malformed content dropped from a stored message: {what}")
    if not blocks:
        return None
    return message if not dropped and blocks == message["content"] else {**message, "content": blocks}


@dataclass(frozen=True)
class StoredSession:
    session_id: str
    cwd: str
    title: str
    updated_at: float  # the transcript's mtime (seconds since the epoch)


def list_sessions(data_dir: Path, cwd: Path | None = None) -> list[StoredSession]:
    """Every stored session (newest first), optionally only those of `cwd`."""
    found = []
    root = sessions_dir(data_dir)
    if not root.is_dir():
        return []
    for path in root.glob("*.jsonl"):
        try:
            with open(path, encoding="utf-8", errors="replace") as lines:
                header = json.loads(lines.readline())
                title = _title(lines)
            updated = os.stat(path).st_mtime
        except (OSError, ValueError, RecursionError):  # (a JSON nested past Python's limit: RecursionError)
            continue
        if not isinstance(header, dict) or header.get("type") != "session":
            continue
        if not isinstance(header.get("sessionId"), str) or not isinstance(header.get("cwd"), str):
            continue  # not a header this bridge wrote: no session to list
        if cwd is not None and header.get("cwd") != str(cwd):
            continue
        found.append(StoredSession(header["sessionId"], header["cwd"], title, updated))
    found.sort(key=lambda s: s.updated_at, reverse=True)
    return found


def _title(lines: IO[str]) -> str:
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        title = title_of(record.get("message") if isinstance(record, dict) else None)
        if title is not None:
            return title
    return "(empty session)"


def title_of(message: Any) -> str | None:
    """A session's title, if `message` (its first user message with words) gives it: the first line of its text.
    Anything may be in a stored line (a hand edit, another tool): what is not a text block with a string is no
    title, never an error (one bad file must not break the session list or `--continue`)."""
    if not isinstance(message, dict) or message.get("role") != "user" or not isinstance(message.get("content"), list):
        return None
    for block in message["content"]:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        if isinstance(text, str) and not text.startswith("["):
            lines = text.strip().splitlines()
            return lines[0][:80] if lines else None
    return None
