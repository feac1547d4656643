"""A program in a pseudo-terminal of a given size, its output drawn by a VT emulator (pyte) as a terminal would:
what a test asserts is what a person would see, escape sequences applied. Shared by the terminal front end's
tests (tests/test_terminal_view.py) and the terminal question's (tests/test_permission_terminal.py)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import struct
import termios
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TypeVar

import pyte


class PtyRun:
    """A process writing to a pty; `screen` is what the terminal shows (with `history` rows kept above it)."""

    def __init__(
        self, process: asyncio.subprocess.Process, master: int, columns: int, rows: int, history: int = 0
    ) -> None:
        self.process, self.master, self.columns = process, master, columns
        self.screen: pyte.Screen = (
            pyte.HistoryScreen(columns, rows, history=history) if history else pyte.Screen(columns, rows)
        )
        self.stream = pyte.ByteStream(self.screen)
        self.changed = asyncio.Event()
        self.raw = bytearray()

    def on_output(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the other side closed
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master)
        self.raw += data
        self.stream.feed(data)
        self.changed.set()

    def lines(self) -> list[str]:
        """The rows that scrolled away (if kept), then the screen's, each without trailing blanks."""
        top = getattr(self.screen, "history", None)
        above = ["".join(line[x].data for x in range(self.columns)).rstrip() for line in top.top] if top else []
        return [*above, *(line.rstrip() for line in self.screen.display)]

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


Run = TypeVar("Run", bound=PtyRun)


@contextlib.asynccontextmanager
async def run_in_pty(
    kind: type[Run],
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    columns: int,
    rows: int,
    history: int = 0,
) -> AsyncIterator[Run]:
    """`argv` started in its own session on a `columns` x `rows` pty (stderr to `log`), seen through `kind` (a
    PtyRun with a test's own ways of reading the screen); killed if still running when the block ends."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    os.set_blocking(master, False)
    with open(log, "ab") as err:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=err, start_new_session=True
        )
    os.close(slave)
    run = kind(process, master, columns, rows, history)
    asyncio.get_running_loop().add_reader(master, run.on_output)
    try:
        yield run
    finally:
        with contextlib.suppress(ProcessLookupError):
            if process.returncode is None:
                process.kill()
        await process.wait()
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(master)
        os.close(master)
