"""A checkpoint at every step that can change files (issue 23 item 1), through the real loop: the offline model's
tool calls run for real (Write, Edit, Bash — in the foreground and the background), and each step's record says
exactly which files it changed, with the call and the prompt that made it; edits between steps are the user's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from bridge.checkpoints.log import Effect, Step, TurnMark
from tests.checkpoint_run import Run, checkpoint_run, say, step, use
from tests.poll import poll


def _steps(run_log: Sequence[object]) -> list[Step]:
    return [e for e in run_log if isinstance(e, Step)]


async def test_each_step_knows_the_files_it_changed_its_call_and_its_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "gone.txt").write_text("bye\n")
    (ws / "tool.sh").write_text("echo\n")
    responses = [
        step(use("Write", file_path=str(ws / "a.txt"), content="one\n")),
        step(use("Read", file_path=str(ws / "a.txt"))),
        step(use("Edit", file_path=str(ws / "a.txt"), old_string="one", new_string="two")),
        step(
            use(
                "Bash",
                command="echo made > made.txt && rm gone.txt && chmod +x tool.sh && mkdir -p d && "
                "printf '\\0\\1' > d/bin.dat",
            )
        ),
        step(use("Bash", command="ls")),  # read-only: no step
        say("done"),
        step(use("Bash", command="mv made.txt moved.txt")),
        say("moved"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("make files") == "end_turn"
        first_turn = run.session.turn_id
        (ws / "user.txt").write_text("mine\n")  # the user, between turns
        assert await run.prompt("move it") == "end_turn"
        await run.session.checkpoints.settle()
        entries = run.session.checkpoints.log.entries

    steps = _steps(entries)
    assert [s.tool for s in steps] == ["Write", "Edit", "Bash", "Bash"]
    assert [[c.path for c in s.changes] for s in steps] == [
        ["a.txt"],
        ["a.txt"],
        ["d/bin.dat", "gone.txt", "made.txt", "tool.sh"],
        ["made.txt", "moved.txt"],
    ]
    calls = [
        b["id"]
        for r in run.model.valid_requests
        for m in r.body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use" and b["name"] in ("Write", "Edit", "Bash")
    ]
    assert [s.call for s in steps] == list(dict.fromkeys(c for c in calls if c != _ls_call(run.model)))
    assert [s.turn for s in steps[:3]] == [first_turn] * 3 and steps[3].turn == run.session.turn_id != first_turn
    marks = [e.turn for e in entries if isinstance(e, TurnMark)]
    assert marks == [first_turn, run.session.turn_id]
    chmod = next(c for c in steps[2].changes if c.path == "tool.sh")
    assert (chmod.old_mode, chmod.new_mode) == ("100644", "100755")
    assert [c.path for c in steps[3].external] == ["user.txt"], "the user's edit between steps is theirs"
    assert steps[2].outside is not None and "outside the workspace" in steps[2].outside
    assert steps[0].outside is None, "a file tool's step is all inside the workspace"


async def test_the_first_snapshot_is_taken_when_the_session_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26: the session's first snapshot starts when it opens, not at its first prompt, so the first call of
    its first turn does not wait for git (in an editor it runs while the user writes). What the user changes
    between the opening and the first call is theirs, as between any two calls."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "old.txt").write_text("old\n")
    responses = [step(use("Bash", command="echo one > a.txt")), say("done")]  # a whole snapshot around it
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        await run.session.checkpoints.settle()  # the snapshot started by the opening (none, before: no turn yet)
        assert run.session.checkpoints.index is not None and run.session.checkpoints.index.path.is_file()
        (ws / "user.txt").write_text("mine\n")  # the user, before the first prompt
        assert await run.prompt("write") == "end_turn"
        await run.session.checkpoints.settle()
        steps = _steps(run.session.checkpoints.log.entries)
    assert [[c.path for c in s.changes] for s in steps] == [["a.txt"]]
    assert [c.path for c in steps[0].external] == ["user.txt"], "the user's file, made after the opening, is theirs"


def _ls_call(model: object) -> str:
    from bridge.offline import OfflineServer

    assert isinstance(model, OfflineServer)
    for request in model.valid_requests:
        for message in request.body["messages"]:
            for block in message["content"]:
                if block.get("type") == "tool_use" and block.get("input", {}).get("command") == "ls":
                    return str(block["id"])
    return ""


async def test_a_background_command_is_checkpointed_again_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "go").mkdir()
    responses = [
        step(
            use(
                "Bash",
                command="while [ ! -e go/now ]; do sleep 0.02; done; echo late > late.txt",
                run_in_background=True,
            )
        ),
        say("started"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("start it") == "end_turn"
        (ws / "go" / "now").write_text("")  # the user lets it finish
        log = run.session.checkpoints.log
        ended = await poll(
            lambda: [s for s in _steps(log.entries) if s.background],
            timeout=20,
            what="the background command's end checkpoint",
        )
        started = _steps(log.entries)[0]

    assert started.tool == "Bash" and not started.background and started.changes == []
    assert ended[0].call == started.call and ended[0].turn == started.turn
    assert {c.path for c in ended[0].changes} == {"late.txt", "go/now"}


async def test_a_network_request_is_named_as_an_effect_and_read_only_calls_are_no_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    responses = [
        step(use("Read", file_path=str(ws / "a.txt")), use("Grep", pattern="a"), use("Glob", pattern="*")),
        step(use("WebFetch", url="http://127.0.0.1:9/nothing", prompt="what")),
        say("read"),
    ]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("look") == "end_turn"
        entries = run.session.checkpoints.log.entries

    assert _steps(entries) == []
    effects = [e for e in entries if isinstance(e, Effect)]
    assert len(effects) == 1 and "network" in effects[0].text and "127.0.0.1" in effects[0].text


async def test_every_steps_trees_survive_a_gc_of_the_store(tmp_path: Path) -> None:
    """The steps' trees are chained on the session's ref: `git gc --prune=now` keeps them, while a snapshot no step
    recorded (the control) is pruned — the chain is what keeps them."""
    import os
    import subprocess

    from bridge.checkpoints.recorder import Checkpoints, StepCall

    ws = tmp_path / "ws"
    ws.mkdir()
    checkpoints = Checkpoints.open(tmp_path / "data", ws, "gc", tell=lambda _t: None)
    checkpoints.turn_started("t1")
    for n in range(20):  # more than one batch of the chain
        async with checkpoints.step(StepCall(f"c{n}", "Bash", "cmd", "execute")):
            (ws / f"f{n % 3}.txt").write_text(f"version {n}\n")
    await checkpoints.settle()
    assert checkpoints.index is not None and checkpoints.store is not None
    (ws / "loose.txt").write_text("never recorded\n")
    orphan = checkpoints.index.snapshot().tree
    env = {"GIT_DIR": str(checkpoints.store.git_dir), "PATH": os.environ["PATH"], "GIT_CONFIG_GLOBAL": os.devnull}

    def exists(tree: str) -> bool:
        return subprocess.run(["git", "cat-file", "-e", tree], env=env).returncode == 0

    assert exists(orphan)
    subprocess.run(["git", "gc", "--prune=now", "--quiet"], env=env, check=True)  # noqa: ASYNC221 - a test
    trees = {t for s in _steps(checkpoints.log.entries) for t in (s.before, s.after)}
    assert len(trees) > 16 and all(exists(tree) for tree in trees)
    assert not exists(orphan), "the control: gc does prune what nothing keeps"
    await checkpoints.close()


async def test_a_session_closes_without_waiting_for_a_background_command_to_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end of a background command is awaited for one more checkpoint, but a closing session drops that wait
    (the shell is stopped after the sessions close): the close is not held up by it."""
    import asyncio

    responses = [step(use("Bash", command="sleep 60", run_in_background=True)), say("started")]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        assert await run.prompt("start it") == "end_turn"
        await asyncio.wait_for(run.session.checkpoints.settle(), 10)  # the snapshots, not the command's end
        await asyncio.wait_for(run.agent.close_session(run.session.id), 5)
        assert [s.background for s in run.session.checkpoints.log.steps] == [False]


async def test_a_sub_agents_steps_are_checkpointed_under_its_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    scenario = {
        "responses": [
            step(use("Agent", description="Write it", prompt="write the file", subagent_type="general-purpose")),
            say("the agent wrote it"),
        ],
        "agents": [
            {
                "prompt": "write the file",
                "responses": [
                    step(use("Write", file_path=str(ws / "by_agent.txt"), content="from the sub-agent\n")),
                    say("written"),
                ],
            }
        ],
    }
    async with checkpoint_run(tmp_path, monkeypatch, scenario) as run:
        assert await run.prompt("delegate") == "end_turn"
        await run.session.checkpoints.settle()
        steps = _steps(run.session.checkpoints.log.entries)
        agent_call = next(
            b["id"]
            for r in run.model.valid_requests
            for m in r.body["messages"]
            for b in m["content"]
            if b.get("type") == "tool_use" and b["name"] == "Agent"
        )

    assert [(s.tool, s.agent, [c.path for c in s.changes]) for s in steps] == [
        ("Write", agent_call, ["by_agent.txt"])
    ], "the Agent call itself is no step: its agent's calls are"
    assert steps[0].turn == run.session.turn_id


async def test_a_cancelled_command_is_checkpointed_after_its_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    ws = tmp_path / "ws"
    ws.mkdir()
    responses = [step(use("Bash", command="echo partial > half.txt; touch started; sleep 30"))]
    async with checkpoint_run(tmp_path, monkeypatch, responses) as run:
        turn = asyncio.ensure_future(run.prompt("start and cancel"))
        await poll(lambda: (ws / "started").exists(), timeout=20, what="the command running")
        run.session.cancel()
        assert await turn == "cancelled"
        log = run.session.checkpoints.log
        [recorded] = await poll(lambda: _steps(log.entries), timeout=20, what="the cancelled step's record")

    assert recorded.interrupted and {c.path for c in recorded.changes} == {"half.txt", "started"}


async def test_a_call_cancelled_while_its_step_is_checkpointed_never_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot before a step can take a while (a big workspace, a slow disk): a cancel meanwhile means the
    call does not start at all (the executor looks at the signal again once the snapshot is taken)."""
    import asyncio

    from bridge.loop.events import ToolCallInProgress

    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, [step(use("Bash", command="touch ran")), say("done")]) as run:
        lock = run.session.checkpoints.lock
        await lock.acquire()  # a snapshot that takes its time
        turn = asyncio.ensure_future(run.prompt("go"))
        await poll(lambda: any(isinstance(e, ToolCallInProgress) for e in run.events), what="the call's step")
        run.session.cancel()
        lock.release()
        assert await turn == "cancelled"
        await run.session.checkpoints.settle()

    assert not (ws / "ran").exists()


async def test_a_cancel_while_the_steps_snapshot_is_taken_answers_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A snapshot can take minutes (a folder's `.gitignore` of 100,000 costly patterns: attack round 26): a cancel
    meanwhile ends the turn without waiting for it (before, it waited for the whole snapshot; the call never
    started, as the test before this one shows)."""
    import asyncio

    from bridge.loop.events import ToolCallInProgress

    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, [step(use("Bash", command="touch ran")), say("done")]) as run:
        lock = run.session.checkpoints.lock
        await lock.acquire()  # the snapshot that takes its time, still going when the turn must end
        try:
            turn = asyncio.ensure_future(run.prompt("go"))
            await poll(lambda: any(isinstance(e, ToolCallInProgress) for e in run.events), what="the call's step")
            run.session.cancel()
            assert await asyncio.wait_for(turn, 20) == "cancelled"
        finally:
            lock.release()
        await run.session.checkpoints.settle()

    assert not (ws / "ran").exists()


WAITING_CALL = "touch started; while [ ! -e go ]; do sleep 0.05; done; echo made > made.txt"


async def _cancel_during_the_after_snapshot(run: Run, ws: Path) -> None:
    """The call (WAITING_CALL) is done, its after-snapshot waits for the checkpoint lock (held here, and still
    held on return), and the turn is cancelled: it has answered."""
    import asyncio

    checkpoints = run.session.checkpoints
    turn = asyncio.ensure_future(run.prompt("go"))
    await poll(lambda: (ws / "started").exists(), timeout=20, what="the command running")
    await checkpoints.lock.acquire()  # its after-snapshot will wait
    (ws / "go").touch()
    # (asyncio.Lock keeps its waiters in `_waiters`: the after-snapshot is waiting for the lock)
    await poll(lambda: bool(getattr(checkpoints.lock, "_waiters", None)), timeout=20, what="the snapshot")
    run.session.cancel()
    assert await asyncio.wait_for(turn, 20) == "cancelled"


@pytest.mark.parametrize("then", ["settle", "close"])
async def test_a_cancel_while_a_finished_calls_snapshot_is_taken_answers_at_once_and_the_step_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """The call is done, its after-snapshot waits: a cancel ends the turn at once, the snapshot goes on in the
    background and the step is recorded whole (not interrupted: the call ended on its own). And a session closing
    meanwhile waits for it however long (CLOSE_WAIT is 0 here): a `run` cancelled during a slow one gave it up after
    CLOSE_WAIT, and the call's changes were in no step, which no rewind could undo (round 26's verification)."""
    import asyncio

    from bridge.checkpoints import recorder

    monkeypatch.setattr(recorder, "CLOSE_WAIT", 0.0)
    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, [step(use("Bash", command=WAITING_CALL)), say("done")]) as run:
        checkpoints = run.session.checkpoints
        closing = None
        try:
            await _cancel_during_the_after_snapshot(run, ws)
            if then == "close":
                closing = asyncio.ensure_future(checkpoints.close())
                done, _ = await asyncio.wait({closing}, timeout=1.0)
                assert not done, "the close gave the call's snapshot up"
        finally:
            if checkpoints.lock.locked():
                checkpoints.lock.release()
        await (asyncio.wait_for(closing, 60) if closing is not None else checkpoints.settle())
        [recorded] = _steps(checkpoints.log.entries)

    assert not recorded.interrupted and {c.path for c in recorded.changes} == {"started", "made.txt", "go"}


async def test_a_close_told_to_give_up_ends_without_the_snapshot_it_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close waits for a call's after-snapshot whole (above), however long a folder makes it take; a second
    Ctrl-C (`give_up`, what the terminal and `serve` call then) ends the wait at once: the snapshot is given up (the
    lock it waits for stays held here: it could never finish) and the call is in no step."""
    import asyncio
    import io
    import signal

    from bridge.cli.terminal import TerminalSignals
    from bridge.cli.view import TerminalView

    ws = tmp_path / "ws"
    ws.mkdir()
    async with checkpoint_run(tmp_path, monkeypatch, [step(use("Bash", command=WAITING_CALL)), say("done")]) as run:
        checkpoints = run.session.checkpoints
        try:
            await _cancel_during_the_after_snapshot(run, ws)
            closing = asyncio.ensure_future(checkpoints.close())
            done, _ = await asyncio.wait({closing}, timeout=1.0)
            assert not done, "the control: the close waits for the call's snapshot"
            # what the terminal does at a Ctrl-C while nothing runs but the closing's wait
            out = io.StringIO()
            signals = TerminalSignals(TerminalView(out, color=False))
            signals.agent = run.agent
            signals.on_signal(signal.SIGINT)
            await asyncio.wait_for(closing, 20)
            assert "not waiting for the last checkpoint: the last call's changes can't be rewound" in out.getvalue()
            assert not checkpoints.give_up(), "nothing left to give up"
        finally:
            if checkpoints.lock.locked():
                checkpoints.lock.release()
        assert _steps(checkpoints.log.entries) == []
