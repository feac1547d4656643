"""A command's output: bounded in memory (head + rolling tail, the rest spilled to a file), cleaned of
terminal control sequences, and streamed to the editor at most every so often.

The spill file is bounded too: a command may print gigabytes in seconds (and run for ten minutes). It keeps
the first `SPILL_HEAD_CHARS` as they come and the last `SPILL_TAIL_CHARS` in memory, written at the end after a
line saying how much was dropped between them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO

from bridge.messages import valid_tool_use_id

HEAD_CHARS = 10_000  # the start of a long output (what ran, first errors) ...
TAIL_CHARS = 20_000  # ... and its end (the summary, the last error) are what the model needs
SPILL_HEAD_CHARS = 16 * 1024 * 1024  # the spill file: the start as it comes ...
SPILL_TAIL_CHARS = 4 * 1024 * 1024  # ... and the end, kept in memory until the command ends

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]")


def spill_path(data_dir: Path, tool_use_id: str) -> Path:
    """Where a command's whole output spills: named by its tool_use id when that is a valid id (the stream
    parser refuses others; asked again here because the id becomes a file name), else by a fresh random name."""
    name = tool_use_id if valid_tool_use_id(tool_use_id) else uuid.uuid4().hex
    return data_dir / "bash-output" / f"{name}.log"


def _private_file(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def clean_output(text: str) -> str:
    return _overwritten(_ANSI.sub("", text)).replace("\r\n", "\n")


def _overwritten(text: str) -> str:
    """Each line as a terminal shows it last (progress bars): what follows its last carriage return, but for the
    one a line break follows (CRLF). Line by line, in linear time: the regex it replaces, `[^\n]*\r(?!\n)`,
    scanned to the line's end from every position of a line without one, O(n²) (attack round 17: one 100 MB line
    of output held the event loop for minutes, and the command was killed at its timeout)."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    last = len(lines) - 1
    for n, line in enumerate(lines):
        end = len(line) - 1 if n < last and line.endswith("\r") else len(line)
        cut = line.rfind("\r", 0, end)
        if cut >= 0:
            lines[n] = line[cut + 1 :]
    return "\n".join(lines)


class OutputBuffer:
    """Head and rolling tail of a stream in bounded memory. Once anything would be dropped, the whole
    stream goes to `spill_path` as well, so nothing is lost: the note tells the model where it is."""

    def __init__(
        self,
        head: int = HEAD_CHARS,
        tail: int = TAIL_CHARS,
        spill_path: Path | None = None,
        spill_head: int | None = None,
        spill_tail: int | None = None,
    ) -> None:
        self._head_cap, self._tail_cap = head, tail
        self._spill_head_cap = SPILL_HEAD_CHARS if spill_head is None else spill_head
        self._spill_tail_cap = SPILL_TAIL_CHARS if spill_tail is None else spill_tail
        self._spill_written = 0  # characters of the start written to the spill file
        self._spill_tail: deque[str] = deque()  # the end, once the start is full
        self._spill_tail_len = 0
        self.spill_dropped = 0  # characters dropped between the spill file's start and end
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total_chars = 0
        self.total_lines = 0
        self._spill_path = spill_path
        self._spill: IO[str] | None = None
        self.spilled: Path | None = None

    def append(self, text: str) -> None:
        if not text:
            return
        self.total_chars += len(text)
        self.total_lines += text.count("\n")
        if self._spill is not None:
            self._spill_write(text)
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        if self._tail_len > self._tail_cap:
            self._open_spill()
            while self._tail_len - len(self._tail[0]) >= self._tail_cap:
                self._tail_len -= len(self._tail.popleft())
            excess = self._tail_len - self._tail_cap
            if excess > 0:
                self._tail[0] = self._tail[0][excess:]
                self._tail_len -= excess

    def _open_spill(self) -> None:
        if self._spill is not None or self._spill_path is None or self.spilled is not None:
            return
        try:
            # the data dir's: its owner's alone, as bridge/transcript.py makes the rest (the process half imports
            # nothing above the ground, so by the modes themselves; the umask may only take from them)
            self._spill_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._spill = open(  # noqa: SIM115 - written as the command runs
                self._spill_path, "w", encoding="utf-8", errors="replace", opener=_private_file
            )
            self._spill_write("".join(self._head) + "".join(self._tail))
            self.spilled = self._spill_path
        except OSError:
            self._spill = None
            self.spilled = None
            self._spill_path = None

    def _spill_write(self, text: str) -> None:
        assert self._spill is not None
        room = self._spill_head_cap - self._spill_written
        if room > 0:
            self._spill.write(text[:room])
            self._spill_written += min(room, len(text))
            text = text[room:]
            if not text:
                return
        self._spill_tail.append(text)
        self._spill_tail_len += len(text)
        while self._spill_tail_len - len(self._spill_tail[0]) >= self._spill_tail_cap:
            dropped = len(self._spill_tail.popleft())
            self._spill_tail_len -= dropped
            self.spill_dropped += dropped
        excess = self._spill_tail_len - self._spill_tail_cap
        if excess > 0:
            self._spill_tail[0] = self._spill_tail[0][excess:]
            self._spill_tail_len -= excess
            self.spill_dropped += excess

    @property
    def truncated(self) -> bool:
        return self.total_chars > self._head_len + self._tail_len

    def render(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.truncated:
            return clean_output(head + tail)
        # Cut at line boundaries so no half line is shown.
        if "\n" in head[-2000:]:
            head = head[: head.rfind("\n") + 1]
        if "\n" in tail[:2000]:
            tail = tail[tail.find("\n") + 1 :]
        cut_chars = self.total_chars - len(head) - len(tail)
        cut_lines = max(0, self.total_lines - head.count("\n") - tail.count("\n"))
        where = ""
        if self.spilled:
            kept = (
                f"its first {self._spill_head_cap} and last {self._spill_tail_cap} characters are"
                if self.spill_dropped
                else "the full output is"
            )
            where = f"; {kept} in {self.spilled} (Read it with offset/limit)"
        note = f"\n[… {cut_lines} lines ({cut_chars} characters) cut from the middle{where} …]\n\n"
        return clean_output(head) + note + clean_output(tail)

    def close(self) -> None:
        if self._spill is not None:
            with contextlib.suppress(OSError):
                if self.spill_dropped:
                    tail = "".join(self._spill_tail)
                    self._spill.write(
                        f"\n[… {self.spill_dropped} characters dropped here: this file keeps the first "
                        f"{self._spill_head_cap} and the last {self._spill_tail_cap} of "
                        f"{self.total_chars} …]\n"
                    )
                    self._spill.write(tail)
                else:
                    self._spill.write("".join(self._spill_tail))
                self._spill.close()
            self._spill = None
            self._spill_tail.clear()


class Throttle:
    """Calls `emit(render())` at most every `interval` s while `poke`d, with a trailing call so the last
    output is never held back; `flush` sends one now."""

    def __init__(self, emit: Callable[[str], None], render: Callable[[], str], interval: float) -> None:
        self._emit, self._render, self._interval = emit, render, interval
        self._last = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def poke(self) -> None:
        wait = self._last + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
        elif self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        self.close()
        self._last = time.monotonic()
        with contextlib.suppress(Exception):
            self._emit(self._render())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def exit_note(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Exit code {128 - code} (killed by {name})"
    return f"Exit code {code}"
