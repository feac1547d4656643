"""A session's checkpoint log: what each step changed, in order, as an append-only JSONL file beside its transcript
(`sessions/<id>/checkpoints.jsonl`). The trees and blobs are in the store; the log says whose they are.

Records (one per line):
- `{"type": "turn", "turn": ID}` — a prompt started: the anchor a rewind to that prompt goes back to.
- `{"type": "step", ...}` — a step that could change files, once it ended (`Step`): which call of which turn made
  it, the trees before and after, what it changed (`changes`), what changed outside any step since the previous
  checkpoint (`external`: the user's edits, or a background command's), what was left out (`skipped`), and what
  it did that no checkpoint can undo (`outside`). A rewind or an undo is a step too (`kind` `rewind`/`review`);
  `views` is then the state a review shows for a path (the agent's version, without the user's edits merged in).
- `{"type": "keep", "path", "blob", "mode"}` — the user kept a change: the review's baseline for the path is now
  that version.
- `{"type": "effect", "turn", "call", "text"}` — a call that checkpoints can't undo and that changes no file (a
  network request): named when a rewind goes back past it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bridge.checkpoints.store import Change, Skipped
from bridge.jsonfile import jsonl_records
from bridge.transcript import private_dir, private_opener

log = logging.getLogger(__name__)

StepKind = str  # a tool's kind (edit, execute, other...), or `rewind` / `review`


@dataclass
class Step:
    number: int
    turn: str | None  # the prompt's turn id
    call: str  # the tool call id ("" for a rewind or an undo)
    tool: str
    title: str
    kind: StepKind
    before: str
    after: str
    changes: list[Change] = field(default_factory=list)
    external: list[Change] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    agent: str | None = None  # the Agent call a sub-agent's step ran under
    outside: str | None = None
    interrupted: bool = False
    background: bool = False  # a background command's end
    views: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # path -> (blob, mode)
    at: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "step",
            "step": self.number,
            "turn": self.turn,
            "call": self.call,
            "tool": self.tool,
            "title": self.title,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "changes": [c.to_json() for c in self.changes],
            "external": [c.to_json() for c in self.external],
            "at": self.at,
        }
        if self.skipped:
            data["skipped"] = [{"path": s.path, "why": s.why} for s in self.skipped]
        for key, value in (("agent", self.agent), ("outside", self.outside)):
            if value is not None:
                data[key] = value
        if self.interrupted:
            data["interrupted"] = True
        if self.background:
            data["background"] = True
        if self.views:
            data["views"] = {path: list(view) for path, view in self.views.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Step:
        views = data.get("views") or {}
        return cls(
            int(data["step"]),
            data.get("turn"),
            str(data.get("call", "")),
            str(data["tool"]),
            str(data.get("title", data["tool"])),
            str(data.get("kind", "other")),
            str(data["before"]),
            str(data["after"]),
            [Change.from_json(c) for c in data.get("changes", [])],
            [Change.from_json(c) for c in data.get("external", [])],
            [Skipped(str(s["path"]), str(s["why"])) for s in data.get("skipped", [])],
            data.get("agent"),
            data.get("outside"),
            bool(data.get("interrupted")),
            bool(data.get("background")),
            {str(p): (v[0], v[1]) for p, v in views.items()},
            float(data.get("at", 0.0)),
        )

    def touched(self) -> set[str]:
        return {c.path for c in self.changes}


@dataclass(frozen=True)
class TurnMark:
    turn: str


@dataclass(frozen=True)
class Keep:
    path: str
    blob: str | None
    mode: str | None


@dataclass(frozen=True)
class Effect:
    turn: str | None
    call: str
    text: str


Entry = Step | TurnMark | Keep | Effect


class StepLog:
    """The records of one session, in memory and appended to its file as they happen."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: list[Entry] = []
        self._file: IO[str] | None = None
        if path is not None and path.is_file():
            self.entries = list(_read(path))

    @property
    def steps(self) -> list[Step]:
        return [e for e in self.entries if isinstance(e, Step)]

    def next_number(self) -> int:
        return 1 + max((e.number for e in self.entries if isinstance(e, Step)), default=0)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self._write(_to_json(entry))

    def anchor(self, turn: str) -> int | None:
        """Where `turn` started in the log (its mark's index), or None: no checkpoints go back there."""
        for index, entry in enumerate(self.entries):
            if isinstance(entry, TurnMark) and entry.turn == turn:
                return index
        return None

    def _write(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        try:
            if self._file is None:
                private_dir(self.path.parent)  # the data dir's: its owner's alone
                self._file = open(self.path, "a", encoding="utf-8", opener=private_opener)  # noqa: SIM115 - appended to
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")  # ASCII: any file name survives
            self._file.flush()
        except OSError as error:
            log.error("cannot write the checkpoint log %s: %s", self.path, error)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _to_json(entry: Entry) -> dict[str, Any]:
    match entry:
        case Step():
            return entry.to_json()
        case TurnMark(turn):
            return {"type": "turn", "turn": turn}
        case Keep(path, blob, mode):
            return {"type": "keep", "path": path, "blob": blob, "mode": mode}
        case Effect(turn, call, text):
            return {"type": "effect", "turn": turn, "call": call, "text": text}


def _read(path: Path) -> list[Entry]:
    entries: list[Entry] = []
    for number, record in jsonl_records(path):
        try:
            if isinstance(record, str):
                raise ValueError(record)
            kind = record["type"]
            if kind == "step":
                entries.append(Step.from_json(record))
            elif kind == "turn":
                entries.append(TurnMark(str(record["turn"])))
            elif kind == "keep":
                entries.append(Keep(str(record["path"]), record.get("blob"), record.get("mode")))
            elif kind == "effect":
                entries.append(Effect(record.get("turn"), str(record.get("call", "")), str(record["text"])))
        except (KeyError, TypeError, ValueError) as error:
            log.warning("%s:%d: corrupt checkpoint record skipped (%s)", path, number, error)
    return entries
