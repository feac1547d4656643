"""Bash and the background-shell tools, with real shells; survivors are checked through /proc."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import ValidationError

from bridge.abort import Abort, AbortReason, cancel_on_abort, not_interrupt
from bridge.execution.background import BackgroundShells
from bridge.execution.output import OutputBuffer
from bridge.execution.supervisor import ProcessSupervisor
from bridge.tools.base import Services, ToolContext, ToolError
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.tasks import TaskOutputInput, TaskOutputTool, TaskStopInput, TaskStopTool
from tests.execution.test_processes import ESCAPING, marked_pids
from tests.poll import poll

BASH = BashTool()


@pytest.fixture
async def supervisor() -> AsyncIterator[ProcessSupervisor]:
    sup = ProcessSupervisor()
    yield sup
    await sup.shutdown()


class Harness:
    def __init__(self, root: Path, supervisor: ProcessSupervisor) -> None:
        self.progress: list[str] = []
        self.abort = Abort()
        self.background = BackgroundShells(supervisor)
        self.ctx = ToolContext(
            cwd=root,
            abort=self.abort,
            data_dir=root / "data",
            tool_use_id="toolu_1",
            progress=self.progress.append,
            services=Services(processes=supervisor, background=self.background),
        )

    async def run(self, **raw: Any) -> Any:
        data = BashInput.model_validate(raw)
        assert await BASH.validate_input(data, self.ctx) is None
        return await BASH.call(data, self.ctx)


@pytest.fixture
async def bash(tmp_path: Path, supervisor: ProcessSupervisor) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path, supervisor)
    yield harness
    await harness.background.shutdown()


def marked(mark: str, command: str) -> str:
    return f"export TEST_MARK={mark}; {command}"


# -- input ------------------------------------------------------------------------------------------------


def test_input_model_rejects_what_models_get_wrong() -> None:
    with pytest.raises(ValidationError):
        BashInput.model_validate({})
    with pytest.raises(ValidationError):
        BashInput.model_validate({"command": "ls", "timeout": 600_001})
    with pytest.raises(ValidationError):
        BashInput.model_validate({"command": "ls", "cmd": "ls"})
    assert BashInput.model_validate({"command": "ls", "timeout": 5000, "description": "list"}).timeout == 5000


async def test_empty_command_is_refused(bash: Harness) -> None:
    assert "empty" in (await BASH.validate_input(BashInput(command="  "), bash.ctx) or "")


def test_schema_is_lean() -> None:
    schema = BASH.schema()["input_schema"]
    assert "title" not in str(schema)
    assert schema["required"] == ["command"]
    assert schema["properties"]["timeout"]["type"] == "number"


def test_title_and_classification() -> None:
    assert BASH.user_facing_title(BashInput(command="npm test")) == "`npm test`"
    assert BASH.kind == "execute" and BASH.interrupt_behavior == "block"
    assert BASH.is_concurrency_safe(BashInput(command="git status")) is True
    assert BASH.is_concurrency_safe(BashInput(command="git status", run_in_background=True)) is False


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat a.txt | grep foo | head -5",
        "git status",
        "git -C sub log --oneline -5",
        "git diff HEAD~1 -- src",
        "rg -n TODO src",
        "pwd && ls",
        "find . -name '*.py'",
        "wc -l *.py 2>/dev/null",
        "sed -n 10,20p file.txt",
        "git branch",
        "echo 'a > b'",
        "sleep 2; echo x",
        "date +%s && true",
        "printf '%s\\n' a b",
    ],
)
def test_read_only_commands(command: str) -> None:
    assert BASH.is_read_only(BashInput(command=command)), command


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "ls > out.txt",
        "echo hi >> log",
        "cat $(which foo)",
        "ls `pwd`",
        "find . -delete",
        "find . -exec rm {} ;",
        "sed -i s/a/b/ f",
        "git push",
        "git branch new-feature",
        "git -c diff.external=x diff",
        "ls\nrm x",
        "sleep 10 &",
        "FOO=1 ls",
        "npm test",
        "python -c 'print(1)'",
        "sort -o out in",
        "git diff --output=x",
        "rg --pre ./sh x",
        "cat 'unterminated",
        "sort --outp=x in",
        "uniq in out",
        "sleep 1 && touch x",
    ],
)
def test_not_read_only_commands(command: str) -> None:
    assert not BASH.is_read_only(BashInput(command=command)), command


@pytest.mark.parametrize(
    ("command", "destructive"),
    [
        ("rm -rf build", True),
        ("ls && rm x", True),
        ("sudo rm x", True),
        ("find . | xargs rm", True),
        ("mv a b", True),
        ("echo x > file", True),
        ("echo x >> file", False),
        ("ls > /dev/null", False),
        ("git reset --hard HEAD", True),
        ("git push --force", True),
        ("git clean -fdx", True),
        ("git status", False),
        ("npm test", False),
        ("find . -delete", True),
    ],
)
def test_destructive_commands(command: str, destructive: bool) -> None:
    assert BASH.is_destructive(BashInput(command=command)) is destructive


# -- running ----------------------------------------------------------------------------------------------


async def test_output_and_exit_code(bash: Harness) -> None:
    ok = await bash.run(command="echo out; echo err >&2")
    assert ok.content == "out\nerr" and not ok.is_error
    assert ok.raw_output["exit_code"] == 0
    failed = await bash.run(command="echo broken; exit 3")
    assert failed.is_error and failed.content == "broken\n\nExit code 3"
    quiet = await bash.run(command="true")
    assert quiet.content == "(no output)"


async def test_environment_cwd_and_stdin(bash: Harness) -> None:
    result = await bash.run(command='pwd; echo "$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $NO_COLOR"; cat; echo eof')
    assert result.content.splitlines() == [str(bash.ctx.cwd), "cat cat 0 1", "eof"]


async def test_cd_does_not_persist(bash: Harness) -> None:
    (bash.ctx.cwd / "sub").mkdir()
    await bash.run(command="cd sub")
    assert (await bash.run(command="pwd")).content == str(bash.ctx.cwd)


async def test_huge_output_keeps_head_and_tail_and_spills_the_rest(bash: Harness) -> None:
    result = await bash.run(command="seq 1 300000")
    text = result.content
    assert len(text) < 32_000
    assert text.startswith("1\n2\n3\n")
    assert text.endswith("299999\n300000")
    assert "lines" in text and "cut from the middle" in text
    spilled = Path(result.raw_output["output_file"])
    assert str(spilled) in text
    assert (await anyio.Path(spilled).read_text()).splitlines() == [str(i) for i in range(1, 300001)]


def test_output_buffer_memory_is_bounded() -> None:
    buffer = OutputBuffer(head=100, tail=100)
    for i in range(10_000):
        buffer.append(f"line {i}\n")
    assert buffer.truncated and buffer.total_lines == 10_000
    rendered = buffer.render()
    assert rendered.startswith("line 0\n") and rendered.endswith("line 9999\n")
    assert len(rendered) < 400


async def test_ansi_and_carriage_returns_are_cleaned(bash: Harness) -> None:
    result = await bash.run(command=r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\n'")
    assert result.content == "red\n100%"


async def test_timeout_kills_the_tree_and_keeps_output(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    result = await bash.run(command=marked(mark, ESCAPING), timeout=500)
    assert result.is_error and result.raw_output["timed_out"]
    assert result.content.startswith("Command timed out after 0.5 s")
    assert "started" in result.content
    await poll(lambda: not marked_pids(mark))


async def test_processes_left_behind_are_stopped(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    result = await bash.run(command=marked(mark, "sleep 300 & (setsid sleep 300 &); echo done"))
    assert result.content == "done" and not result.is_error
    await poll(lambda: not marked_pids(mark))


async def test_progress_streams_and_ends_with_the_full_output(bash: Harness) -> None:
    result = await bash.run(command="for i in 1 2 3 4 5; do echo $i; sleep 0.06; done")
    assert len(bash.progress) >= 2
    assert bash.progress[-1].rstrip("\n") == result.content
    assert all(
        later.startswith(earlier.rstrip("\n")) for earlier, later in zip(bash.progress, bash.progress[1:], strict=False)
    )


async def cancel_when(harness: Harness, seen: str, reason: AbortReason, command: str) -> None:
    """Run `command` the way the loop does (a cancel scope on the turn's abort) and abort it once
    `seen` shows up in the progress. Returns when the call has returned (not when processes died)."""
    tool_abort = harness.abort.child(not_interrupt)
    harness.ctx.abort = tool_abort

    async def watcher() -> None:
        await poll(lambda: any(seen in p for p in harness.progress))
        harness.abort.abort(reason)

    async with anyio.create_task_group() as group:
        group.start_soon(watcher)
        with cancel_on_abort(tool_abort):
            await BASH.call(BashInput(command=command), harness.ctx)
            pytest.fail("the call should have been cancelled")


async def test_ctrl_c_returns_at_once_keeps_output_and_kills_everything(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    await cancel_when(bash, "started", AbortReason.CTRL_C, marked(mark, ESCAPING))
    # the call returned while the TERM-ignoring child is still in its grace period: cleanup is not awaited
    assert marked_pids(mark)
    assert "started" in bash.progress[-1]
    await poll(lambda: not marked_pids(mark))


async def test_interrupt_does_not_stop_a_block_tool(bash: Harness) -> None:
    tool_abort = bash.abort.child(not_interrupt)
    bash.ctx.abort = tool_abort
    bash.abort.abort(AbortReason.INTERRUPT)
    with cancel_on_abort(tool_abort):
        result = await BASH.call(BashInput(command="sleep 0.1; echo finished"), bash.ctx)
    assert result.content == "finished"


async def test_force_kills_at_once(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    await cancel_when(bash, "go", AbortReason.FORCE, marked(mark, "trap '' TERM INT; setsid sleep 300 & echo go; wait"))
    await poll(lambda: not marked_pids(mark), timeout=0.8)


async def test_force_after_ctrl_c_skips_the_grace(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    await cancel_when(bash, "go", AbortReason.CTRL_C, marked(mark, "trap '' TERM INT; sleep 300 & echo go; wait"))
    bash.abort.abort(AbortReason.FORCE)  # a second cancel while the first unwinds
    await poll(lambda: not marked_pids(mark), timeout=0.8)


# -- background shells ------------------------------------------------------------------------------------


async def test_background_shell_output_status_and_kill(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    started = await bash.run(
        command=marked(mark, "echo one; sleep 0.05; echo two; setsid sleep 300 & wait"), run_in_background=True
    )
    shell_id = started.raw_output["background_id"]
    assert shell_id in started.content and "TaskOutput" in started.content
    read = TaskOutputTool()
    shell = bash.background.get(shell_id)
    await poll(lambda: "two" in "".join(shell._unread))
    first = await read.call(TaskOutputInput(task_id=shell_id, block=False), bash.ctx)
    assert "running" in first.content and "one\ntwo" in first.content
    again = await read.call(TaskOutputInput(task_id=shell_id, block=False), bash.ctx)
    assert "(no new output)" in again.content
    killed = await TaskStopTool().call(TaskStopInput(task_id=shell_id), bash.ctx)
    assert "Killed" in killed.content
    await poll(lambda: not marked_pids(mark))
    status = await read.call(TaskOutputInput(task_id=shell_id), bash.ctx)
    assert "killed" in status.content


async def test_task_output_blocks_until_the_shell_ends_or_the_timeout(bash: Harness) -> None:
    started = await bash.run(command="sleep 0.3; echo late; exit 2", run_in_background=True)
    shell_id = started.raw_output["background_id"]
    waited = await TaskOutputTool().call(TaskOutputInput(task_id=shell_id, timeout=20_000), bash.ctx)
    assert "failed (Exit code 2)" in waited.content and "late" in waited.content
    assert waited.raw_output == {"task_id": shell_id, "status": "failed", "exit_code": 2}
    slow = await bash.run(command="sleep 300", run_in_background=True)
    short = await TaskOutputTool().call(TaskOutputInput(task_id=slow.raw_output["background_id"], timeout=50), bash.ctx)
    assert "running" in short.content, "the timeout answers with the status so far"
    done = await TaskStopTool().call(TaskStopInput(task_id=shell_id), bash.ctx)
    assert "already finished" in done.content
    await TaskStopTool().call(TaskStopInput(task_id=slow.raw_output["background_id"]), bash.ctx)


async def test_background_shell_survives_the_turns_cancel_but_not_shutdown(bash: Harness) -> None:
    mark = uuid.uuid4().hex
    with anyio.CancelScope() as scope:
        started = await bash.run(command=marked(mark, "sleep 300"), run_in_background=True)
        scope.cancel()
        await anyio.lowlevel.checkpoint()
    await poll(lambda: bool(marked_pids(mark)))  # running, though the turn was cancelled
    assert bash.background.get(started.raw_output["background_id"]).status == "running"
    await bash.background.shutdown()
    await poll(lambda: not marked_pids(mark), timeout=2)


async def test_unknown_task_ids_name_the_known_ones(bash: Harness) -> None:
    started = await bash.run(command="true", run_in_background=True)
    with pytest.raises(ToolError, match=r"No background task with id 'bash_99' \(known: bash_1\)"):
        await TaskOutputTool().call(TaskOutputInput(task_id="bash_99"), bash.ctx)
    with pytest.raises(ToolError, match="No background task with id 'nope'"):
        await TaskStopTool().call(TaskStopInput(task_id="nope"), bash.ctx)
    assert started.raw_output["background_id"] == "bash_1"
