"""One supervised command as the rest of the bridge sees it (`ManagedProcess`), what a wrapper such as the
sandbox makes of it before it starts (`Launch`, `CommandRun`, `CommandWrapper`), and processes a library starts
that must die with the bridge all the same (`ExternalProcess`). bridge/execution/supervisor.py owns them.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bridge.execution import proctable
from bridge.execution.proctable import TOKEN_ENV, ProcInfo
from bridge.execution.registry import ProcessRegistry

if TYPE_CHECKING:
    from bridge.execution.signals import Job

log = logging.getLogger(__name__)


class CommandRun(Protocol):
    """A wrapper's view of one running command (bridge.execution.sandbox.SandboxRun): its limits and notes."""

    def started(self, stop: Callable[[], None], kill: Callable[[], None]) -> None:
        """The command runs; `stop` ends it (from any thread); `kill` SIGKILLs its tree at once (the loop's
        thread)."""

    def check(self, members: int) -> bool:
        """At each sweep, with the live members counted: True when it met a limit and must end."""

    def output_seen(self, text: str) -> None:
        """A chunk of output that names a resource limit (the run may end the command)."""

    def release(self) -> None:
        """The whole tree is gone."""

    def notes(self, output: str, code: int | None) -> list[str]:
        """What the command's result should say about how it was run (limits met, refusals)."""

    def breach(self, output: str, code: int | None) -> str | None:
        """The limit it met, in words, or None."""


@dataclass
class Launch:
    """What to start for a command: its argv and environment as a wrapper (the sandbox) made them."""

    argv: list[str]
    env: dict[str, str]
    wrapped: bool = False  # bwrap runs it: bwrap's own processes get no polite signals
    release: Callable[[], None] | None = None  # called once the command's whole tree is gone
    run: CommandRun | None = None
    pass_fds: tuple[int, ...] = ()  # open files the wrapper reads (bwrap's seccomp filter): passed, then closed here


class CommandWrapper(Protocol):
    """The sandbox as the supervisor sees it (bridge.execution.sandbox.Sandbox)."""

    async def prepare(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch: ...


class ManagedProcess:
    """One supervised command. Its output (stdout and stderr merged, bytes in arrival order) is pushed
    to `on_output`: set it right after `spawn` returns (nothing is delivered before the next await).
    `wait()` returns when the shell exits, `wait_closed()` when its pipe also reached EOF (everything
    that held it is gone) and the transport is closed."""

    def __init__(self, argv: Sequence[str], token: str) -> None:
        self.argv = list(argv)
        self.token = token
        self.pid = -1
        self.pgid = -1
        self.on_output: Callable[[bytes], None] | None = None
        self.started = time.monotonic()
        self.known: dict[int, int] = {}  # pid -> start time of every member ever seen
        self.terminating = False
        self.wrapped = False
        self.release: Callable[[], None] | None = None
        self.run: CommandRun | None = None  # the sandbox's view of it: limits, notes
        self.job: Job | None = None  # Windows: the job object holding its tree
        self._transport: asyncio.SubprocessTransport | None = None
        self._start_time: int | None = None
        self._exited = asyncio.Event()
        self._eof = asyncio.Event()
        self._closed = asyncio.Event()
        self.on_closed: Callable[[ManagedProcess], None] | None = None

    def _attach(self, transport: asyncio.SubprocessTransport) -> None:
        self._transport = transport
        self.pid = self.pgid = transport.get_pid()  # its own session (or Windows process group): it leads it
        info = proctable.info(self.pid)
        self._start_time = info.start if info is not None else None

    @property
    def returncode(self) -> int | None:
        """The shell's exit status (negative: killed by that signal); None while it runs."""
        return self._transport.get_returncode() if self._transport is not None else None

    async def wait(self) -> int:
        await self._exited.wait()
        code = self.returncode
        assert code is not None
        return code

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    def is_shell(self, info: ProcInfo) -> bool:
        return info.pid == self.pid and (self._start_time is None or info.start == self._start_time)

    # protocol callbacks
    def _data(self, data: bytes) -> None:
        if self.run is not None and (b"File size limit exceeded" in data or b"CPU time limit exceeded" in data):
            self.run.output_seen(data.decode(errors="replace"))
        sink = self.on_output
        if sink is not None:
            try:
                sink(data)
            except Exception:
                log.exception("output sink of pid %d failed", self.pid)

    def _finish_if_done(self) -> None:
        if self._exited.is_set() and self._eof.is_set() and not self._closed.is_set():
            if self._transport is not None:
                self._transport.close()
            self._closed.set()
            if self.on_closed is not None:
                self.on_closed(self)


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, owner: ManagedProcess) -> None:
        self._owner = owner

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._owner._data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._owner._eof.set()
        self._owner._finish_if_done()

    def process_exited(self) -> None:
        self._owner._exited.set()
        self._owner._finish_if_done()


class ExternalProcess:
    """A process started outside the supervisor (by a library), written down so it dies with the bridge."""

    def __init__(self, registry: ProcessRegistry | None, name: str) -> None:
        self.name = name
        self.token = uuid.uuid4().hex
        self.env = {TOKEN_ENV: self.token}
        self._registry = registry
        self._pid: int | None = None
        if self._registry is not None:
            self._registry.track(f"external:{self.token}", token=self.token)

    def attach(self, pid: int) -> None:
        self._pid = pid
        if self._registry is not None:
            self._registry.track(f"external:{self.token}", token=self.token, pid=pid)

    def close(self) -> None:
        if self._registry is not None:
            self._registry.untrack(f"external:{self.token}")
