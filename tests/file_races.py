"""Real races against the file tools, as a hostile sandboxed command would run them: a separate process flips a
workspace name between what the permission check should see (a regular file, a real directory) and a symbolic
link to something outside (a secret, a file to plant), as fast as it can, while the tools run through the real
executor and permission engine (reads inside the workspace allowed, edits allowed in acceptEdits, anything
outside asked — and refused, as a user would).

Shared by tests/test_file_races.py (CI: `FSRACE_ITERATIONS` calls per tool, small by default) and
scripts/bench_fsrace.py (1,000 per tool). Each race has a control: the by-name way (check, then open by name),
run in the same race, must leak — else the race did not happen and the tool's 0 proved nothing.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from bridge import safefs
from bridge.abort import Abort
from bridge.loop.events import LoopEvent, ToolCallFinished
from bridge.loop.executor import ToolEnvironment, ToolExecutor
from bridge.messages import Block
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.tools.base import AnyTool, DocumentSource, FileSnapshot, ToolContext
from bridge.tools.edit import EditTool
from bridge.tools.glob import GlobTool
from bridge.tools.grep import GrepTool
from bridge.tools.notebook_edit import NotebookEditTool
from bridge.tools.read import ReadTool
from bridge.tools.ripgrep import rg_binary
from bridge.tools.write import WriteTool
from tests.permission_calls import GRAMMAR
from tests.poll import poll

SECRET = "SSH-PRIVATE-KEY-MATERIAL"
HIDDEN_NAME = "hidden-outside-name.txt"
PLANTED = "PWNED-BY-RACE"
NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "id": "c1", "metadata": {}, "outputs": [], "source": "alpha = 1"}
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}

# The flipper: `file` mode alternates NAME between a hard link to REGULAR (the same inode each time, so a
# snapshot of it stays fresh) and a symlink to TARGET; `dir` mode swaps NAME with a symlink to TARGET atomically
# (renameat2 RENAME_EXCHANGE: a directory can't be renamed over a link). It prints its flip count when stopped.
FLIPPER = r"""
import ctypes, mmap, os, random, signal, struct, sys, time
mode, name, target, regular, counter = sys.argv[1:6]
with open(counter, "r+b") as fh:
    shared = mmap.mmap(fh.fileno(), 8)
flips = 0
stop = False
def done(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, done)
d = os.path.dirname(name)
tmp_link, tmp_file = os.path.join(d, ".flip-link"), os.path.join(d, ".flip-file")
libc = ctypes.CDLL(None, use_errno=True)
if mode == "dir":
    other = os.path.join(d, ".flip-other")
    if not os.path.lexists(other):
        os.symlink(target, other)
print("ready", flush=True)
changes = 0  # odd: NAME is the link now; even: it is what the check should see
def hold():  # each state lasts a random moment (0-200 us), as a tuned attack would
    end = time.perf_counter() + random.random() * 0.0002
    while time.perf_counter() < end:
        pass
while not stop:
    try:
        if mode == "dir":
            if libc.renameat2(-100, os.fsencode(name), -100, os.fsencode(other), 2) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
            changes += 1
            shared[:8] = struct.pack("Q", changes)
            hold()
        else:
            for t in (tmp_link, tmp_file):
                try:
                    os.unlink(t)
                except FileNotFoundError:
                    pass
            os.symlink(target, tmp_link)
            os.link(regular, tmp_file)
            os.replace(tmp_link, name)
            changes += 1
            shared[:8] = struct.pack("Q", changes)
            hold()
            os.replace(tmp_file, name)
            changes += 1
            shared[:8] = struct.pack("Q", changes)
            hold()
        flips += 1
    except OSError:
        if mode != "dir" and changes % 2:  # stopped half-way: count NAME as it is
            changes += 1
            shared[:8] = struct.pack("Q", changes)
print(flips, flush=True)
"""


BACKENDS = ["openat2", "walk", "portable"]


def use_backend(name: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make bridge/safefs open files through the back end `name` for this test, or skip: `openat2` where the
    kernel has it, the `O_NOFOLLOW` walk (forced), the portable check-after-open back end (forced). A run that
    takes the portable back end anyway (`AGENT_BRIDGE_PORTABLE=1`, or no `dir_fd` here) runs only that one."""
    monkeypatch.delenv(safefs.FORCE_ENV, raising=False)
    natural = safefs.backend()
    if name != "portable" and natural == "portable":
        pytest.skip("this run takes the portable back end only (AGENT_BRIDGE_PORTABLE=1, or no dir_fd here)")
    if name == "openat2" and natural != "openat2":
        pytest.skip("openat2 is not available on this kernel")
    if name != "openat2":
        monkeypatch.setenv(safefs.FORCE_ENV, name)
    assert safefs.backend() == name
    return name


class ByNameEditor(DocumentSource):
    """An ACP editor as Zed is one: `fs/read_text_file` of a file it has no buffer for reads the disk by name,
    a moment after it is asked (the answer is a message away)."""

    asks_editor = True

    async def read_text(self, path: Path) -> str | None:
        await anyio.lowlevel.checkpoint()
        try:
            return path.read_text()
        except (OSError, UnicodeDecodeError):
            return None


@dataclass
class Arena:
    """A workspace and what lies outside it, for one race."""

    tmp: Path
    ws: Path
    outside: Path
    read_files: dict[Path, FileSnapshot] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)  # what the permission step asked (and was refused)
    changed: int = 0  # search results left out as changed (the editor's rawOutput.changed)
    documents: DocumentSource = field(default_factory=DocumentSource)

    @classmethod
    def build(cls, tmp: Path) -> Arena:
        tmp = Path(os.path.realpath(tmp))
        ws, outside = tmp / "ws", tmp / "outside"
        (ws / "g").mkdir(parents=True)
        (ws / "d").mkdir()
        (outside / "dir").mkdir(parents=True)
        (outside / "id_rsa").write_text(SECRET + "\n")
        (outside / "dir" / HIDDEN_NAME).write_text("outside\n")
        (outside / "victim.txt").write_text("alpha\n")
        (outside / "victim.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
        (ws / ".real").write_text("alpha harmless\n")
        (ws / ".real.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
        (ws / "g" / ".real").write_text("harmless\n")
        (ws / "d" / "inside.txt").write_text("inside\n")
        return cls(tmp, ws, outside)

    def engine(self, mode: Mode) -> PermissionEngine:
        store = SettingsStore(self.ws, user_config_dir=self.tmp / "cfg", claude_home=self.tmp / "home" / ".claude")
        return PermissionEngine(cwd=self.ws, settings=store, grammar=GRAMMAR, mode=mode, session_rules=RuleSet())

    def outside_state(self) -> dict[str, bytes]:
        """Every file outside the workspace, to compare after the race (nothing may change or appear)."""
        return {str(p): p.read_bytes() for p in sorted(self.outside.rglob("*")) if p.is_file()}


class Flipper:
    """The flipping process (see FLIPPER); a context manager that starts it and stops it. `count()` is its
    flips so far (a shared page), so a race can make sure the name flipped between two calls."""

    def __init__(self, mode: str, name: Path, target: Path, regular: Path | None = None) -> None:
        self._counter = name.parent / ".flip-count"
        self._counter.write_bytes(bytes(8))
        self.argv = [
            sys.executable,
            "-c",
            FLIPPER,
            mode,
            str(name),
            str(target),
            str(regular or ""),
            str(self._counter),
        ]
        self.flips = 0
        self._process: subprocess.Popen[str] | None = None
        self._shared: mmap.mmap | None = None

    def __enter__(self) -> Flipper:
        with open(self._counter, "r+b") as fh:
            self._shared = mmap.mmap(fh.fileno(), 8)
        self._process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        assert self._process.stdout.readline().strip() == "ready"
        return self

    def count(self) -> int:
        """State changes so far: odd while the name is the link."""
        assert self._shared is not None
        return int(struct.unpack("Q", self._shared[:8])[0])

    async def flipped(self, since: int, *, link: bool, timeout: float = 1.0) -> int:
        """Wait (bounded) until the name changed since the count `since` and is now the link (`link`) or what
        the check should see: calls start in both states, and the flips go on during them. The count now."""

        def there() -> bool:
            now = self.count()
            return now > since and now % 2 == link

        with contextlib.suppress(TimeoutError):  # a stalled flipper: the call goes ahead anyway
            await poll(there, timeout=timeout, interval=0.0002, what="the name to flip")
        return self.count()

    def __exit__(self, *_exc: object) -> None:
        assert self._process is not None
        self._process.send_signal(signal.SIGTERM)
        out, _ = self._process.communicate(timeout=10)
        self.flips = int(out.strip() or 0)
        if self._shared is not None:
            self._shared.close()
        self._counter.unlink(missing_ok=True)


async def run_call(arena: Arena, engine: PermissionEngine, tool_name: str, raw: dict[str, Any]) -> str:
    """One tool call as a turn runs it: the real executor, the real engine; a question is refused. The text the
    model gets; what the editor saw of a search's changed files is added to `arena.changed`."""

    def seen(event: LoopEvent) -> None:
        if isinstance(event, ToolCallFinished) and event.raw_output:
            arena.changed += int(event.raw_output.get("changed") or 0)

    async def refuse(request: PermissionRequest) -> PermissionAnswer:
        arena.asked.append(request.title)
        return PermissionAnswer("reject_once")

    every: list[AnyTool] = [ReadTool(), WriteTool(), EditTool(), NotebookEditTool(), GrepTool(), GlobTool()]
    tools = {t.name: t for t in every}
    env = ToolEnvironment(
        tools=tools,
        policy=engine,
        prompter=refuse,
        emit=seen,
        context=lambda _id: ToolContext(
            cwd=arena.ws,
            abort=Abort(),
            data_dir=arena.tmp / "data",
            read_files=arena.read_files,
            read_guard=engine.read_guard(),
            documents=arena.documents,
        ),
    )
    block: Block = {"type": "tool_use", "id": f"toolu_{time.monotonic_ns()}", "name": tool_name, "input": raw}
    async with anyio.create_task_group() as group:
        executor = ToolExecutor(env, Abort(), group)
        executor.add(block)
        results = await executor.results()
    content = results[0]["content"]
    return content if isinstance(content, str) else json.dumps(content)


@dataclass
class Tally:
    calls: int = 0
    leaks: int = 0
    worked: int = 0  # calls that did their job on the workspace file (the tool still works under the race)
    flips: int = 0
    outside_changed: bool = False
    contested: int = 0  # calls the race reached: asked about the link's target (and refused), or refused as changed
    refused: int = 0


def snapshot(path: Path) -> FileSnapshot:
    st = os.stat(path)
    return FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)


async def race(arena: Arena, tool: str, iterations: int) -> Tally:
    """`iterations` calls of `tool` while its name flips; what leaked, what worked."""
    ws, outside = arena.ws, arena.outside
    before = arena.outside_state()
    tally = Tally()
    flip: Path
    if tool in ("Read", "ReadViaEditor"):
        flip, engine = ws / "flip", arena.engine("default")
        if tool == "ReadViaEditor":
            arena.documents = ByNameEditor()
        flipper = Flipper("file", flip, outside / "id_rsa", ws / ".real")

        async def once() -> None:
            text = await run_call(arena, engine, "Read", {"file_path": str(flip)})
            tally.refused += "changed while" in text
            tally.leaks += SECRET in text
            tally.worked += "harmless" in text
    elif tool in ("Write", "Edit"):
        flip, engine = ws / "flip", arena.engine("acceptEdits")
        target = outside / ("planted.txt" if tool == "Write" else "victim.txt")  # Write: O_CREAT on a dangling link
        flipper = Flipper("file", flip, target, ws / ".real")
        raw: dict[str, Any] = (
            {"file_path": str(flip), "content": PLANTED + "\n"}
            if tool == "Write"
            else {"file_path": str(flip), "old_string": "alpha", "new_string": PLANTED}
        )

        async def once() -> None:
            arena.read_files[flip] = snapshot(ws / ".real")  # the model read it (the same inode each flip)
            text = await run_call(arena, engine, tool, raw)
            tally.refused += "changed while" in text
            tally.worked += "successfully" in text or "has been" in text
    elif tool == "NotebookEdit":
        flip, engine = ws / "nb.ipynb", arena.engine("acceptEdits")
        flipper = Flipper("file", flip, outside / "victim.ipynb", ws / ".real.ipynb")
        nb_raw = {"notebook_path": str(flip), "cell_id": "c1", "new_source": PLANTED}

        async def once() -> None:
            arena.read_files[flip] = snapshot(ws / ".real.ipynb")
            text = await run_call(arena, engine, "NotebookEdit", nb_raw)
            tally.refused += "changed while" in text
            tally.worked += text.startswith("Updated")
    elif tool == "Grep":
        flip, engine = ws / "g" / "flip.txt", arena.engine("default")
        flipper = Flipper("file", flip, outside / "id_rsa", ws / "g" / ".real")
        modes = [
            {"pattern": "SSH-PRIVATE|harmless", "path": str(ws / "g"), "output_mode": "content"},
            {"pattern": "SSH-PRIVATE", "path": str(ws / "g")},  # the oracle: does the secret match?
            {"pattern": "SSH-PRIVATE", "path": str(ws / "g"), "output_mode": "count"},
        ]

        async def once() -> None:
            for grep_raw in modes:
                text = await run_call(arena, engine, "Grep", grep_raw)
                tally.refused += "changed while" in text
                tally.leaks += SECRET in text or ("flip.txt" in text and "harmless" not in text)
                tally.worked += "harmless" in text
    elif tool == "Glob":
        flip, engine = ws / "d", arena.engine("default")
        flipper = Flipper("dir", flip, outside / "dir")

        async def once() -> None:
            text = await run_call(arena, engine, "Glob", {"pattern": "**/*.txt", "path": str(ws)})
            tally.refused += "changed while" in text
            tally.leaks += HIDDEN_NAME in text
            tally.worked += "inside.txt" in text
    else:
        raise ValueError(tool)
    asked, changed = len(arena.asked), arena.changed

    def contested() -> int:
        return len(arena.asked) - asked + tally.refused + arena.changed - changed

    with flipper:
        seen = 0
        # at least `iterations` calls, and on (bounded) until the race has reached the tool a few times and the
        # tool has done its job once: a loaded machine may deschedule the flipper for a while, or leave the name a
        # link through every call (a Write that met the link 40 times in a row under two test runs at once)
        while tally.calls < iterations or ((contested() < 3 or not tally.worked) and tally.calls < 20 * iterations):
            seen = await flipper.flipped(seen, link=tally.calls % 2 == 1)
            await once()
            tally.calls += 1
    tally.flips = flipper.flips
    tally.contested = contested()
    tally.outside_changed = arena.outside_state() != before or any(
        p.name in ("planted.txt",) for p in outside.rglob("*")
    )
    return tally


# ---- controls: the by-name way, in the same race -----------------------------------------------------------


def _by_name_read(name: Path, ws: Path) -> bool:
    """Check the real path, then open by name (what the tools did): True when the secret came out."""
    try:
        if not os.path.realpath(name).startswith(str(ws) + "/"):
            return False
        return SECRET in name.read_text()
    except OSError:
        return False


def _by_name_write(name: Path, ws: Path, outside: Path) -> bool:
    try:
        if not os.path.realpath(name).startswith(str(ws) + "/"):
            return False
        name.write_text(PLANTED + "\n")  # open(O_CREAT|O_TRUNC) by name follows a link flipped in
    except OSError:
        return False
    return any(PLANTED in p.read_text() for p in outside.rglob("*") if p.is_file())


def _rg_first_pass(args: list[str], needle: str, cwd: Path) -> bool:
    out = subprocess.run(
        [rg_binary(), "--no-config", "--no-follow", *args], cwd=cwd, capture_output=True, text=True, check=False
    ).stdout
    return needle in out


def control(arena: Arena, tool: str, deadline_s: float = 30.0) -> int:
    """Attempts of the by-name way until it leaked (in the same kind of race); raises when it never did."""
    ws, outside = arena.ws, arena.outside
    attempt: Callable[[], bool]
    if tool in ("Read", "ReadViaEditor", "Grep"):
        name = ws / ("g/flip.txt" if tool == "Grep" else "flip")
        regular = ws / ("g/.real" if tool == "Grep" else ".real")
        flipper = Flipper("file", name, outside / "id_rsa", regular)
        if tool != "Grep":

            def attempt() -> bool:
                return _by_name_read(name, ws)
        else:

            def attempt() -> bool:
                return _rg_first_pass(["SSH-PRIVATE|harmless", str(ws / "g")], SECRET, ws)
    elif tool in ("Write", "Edit", "NotebookEdit"):
        name = ws / "flip-control"
        (ws / ".real-control").write_text("alpha\n")
        target = outside / f"planted-by-control-{tool}.txt"
        flipper = Flipper("file", name, target, ws / ".real-control")

        def attempt() -> bool:
            return _by_name_write(name, ws, outside)
    elif tool == "Glob":
        flipper = Flipper("dir", ws / "d", outside / "dir")

        def attempt() -> bool:
            return _rg_first_pass(["--files", str(ws)], HIDDEN_NAME, ws)
    else:
        raise ValueError(tool)
    tries = 0
    end = time.monotonic() + deadline_s
    with flipper:
        while time.monotonic() < end:
            tries += 1
            if attempt():
                return tries
    raise AssertionError(f"the by-name control for {tool} never leaked in {tries} tries: the race did not happen")


async def run_all(
    tmp: Path, tools: list[str], iterations: int, on_result: Callable[[str, Tally], Awaitable[None]] | None = None
) -> dict[str, Tally]:
    out: dict[str, Tally] = {}
    for tool in tools:
        arena = Arena.build(tmp / tool)
        out[tool] = await race(arena, tool, iterations)
        if on_result is not None:
            await on_result(tool, out[tool])
    return out
