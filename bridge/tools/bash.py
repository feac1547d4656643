"""Bash: run a shell command in the session's cwd; stream its output; never leave a process behind.

Each call is a fresh `bash -c` (a `cd` does not persist) under the `ProcessSupervisor`. Results:
the merged stdout+stderr, then `Exit code N` when it is not 0 — and `is_error` exactly then (a failing
test run is an error the model should look at; its output is the useful part either way). Processes the
command leaves running after the shell exits are stopped (servers belong in `run_in_background`).

Cancellation: the loop cancels `call`; we hand the tree to the supervisor (SIGINT -> SIGTERM -> SIGKILL in
the background, or SIGKILL at once for `force`), report the output so far through `ctx.progress`, and
re-raise without waiting, so the editor's prompt answers at once.
"""

from __future__ import annotations

import codecs
import os
import time
from typing import Any

import anyio
from pydantic import Field

from bridge.abort import AbortReason
from bridge.environment import handed_out
from bridge.execution import programs
from bridge.execution.host import CannotRun
from bridge.execution.output import OutputBuffer, Throttle, exit_note, spill_path
from bridge.execution.sandbox import CallSandbox
from bridge.execution.shell import command_environment, shell_argv
from bridge.permissions.facts import RuleForm, ShellCall
from bridge.permissions.shell import ANALYSIS_DEADLINE_S, call_verdict, verdict
from bridge.tools.base import CallTraits, Tool, ToolContext, ToolError, ToolInput, ToolResult, required
from bridge.visible import code_span, one_line

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
PROGRESS_INTERVAL = 0.05
LEFTOVER_WAIT = 3.0  # bound on waiting for leftovers / a timed-out tree to die (escalation takes ~1 s)


class BashInput(ToolInput):
    command: str = Field(description="The command to run")
    timeout: float | None = Field(
        default=None, gt=0, le=MAX_TIMEOUT_MS, description=f"Timeout in ms (default {DEFAULT_TIMEOUT_MS}, max 600000)"
    )
    description: str | None = Field(default=None, description="What the command does, in 5-10 words")
    run_in_background: bool | None = Field(
        default=None, description="Run without waiting; read output with TaskOutput, stop with TaskStop"
    )


# -- the tool ---------------------------------------------------------------------------------------------


class BashTool(Tool[BashInput]):
    name = "Bash"
    input_model = BashInput
    description = (
        "Run a bash command (`bash -c`) in the working directory; stdin is /dev/null, stdout and stderr are "
        "merged. Each call is a fresh shell: `cd` and variables do not persist; chain with `&&`. Returns the "
        "output and `Exit code N` when non-zero. Timeout: 120000 ms by default, max 600000. Long output keeps "
        "its start and end; the full text is saved to a file named in the result. Processes still running "
        "when the command ends are stopped: for servers and watchers set run_in_background and use "
        "TaskOutput/TaskStop. Prefer Read, Grep and Glob over cat, grep and find. Quote paths with spaces."
    )
    search_hint = "shell terminal run command execute script"
    kind = "execute"
    interrupt_behavior = "block"
    max_result_chars = 40_000  # the output bounds itself to ~30k; beyond that it is spilled to a file
    rule_form = RuleForm("command")

    def is_read_only(self, data: BashInput) -> bool:
        """The permission layer's one verdict (`bridge.permissions.shell`): read-only and side-effect free,
        so it also runs in parallel with other such calls. Parsed once per command text (cached)."""
        return call_verdict(data.command, background=bool(data.run_in_background)).read_only

    def permission_command(self, data: BashInput) -> ShellCall:
        """The command as it runs and its verdict (the one `is_read_only` reads): the engine matches command rules
        against its parts and judges every path they read and write."""
        return ShellCall(data.command, call_verdict(data.command, background=bool(data.run_in_background)))

    def is_destructive(self, data: BashInput) -> bool:
        return verdict(data.command).destructive

    async def traits_async(self, data: BashInput) -> CallTraits:
        """Reading a command near MAX_COMMAND_CHARS takes a few hundred ms: in a worker thread, within the
        analysis deadline (past it the call is neither read-only nor safe to run beside others). The verdict
        cache then answers the permission check's questions about the same command without a second parse."""
        with anyio.move_on_after(ANALYSIS_DEADLINE_S):
            return await anyio.to_thread.run_sync(self.traits, data, abandon_on_cancel=True)
        return CallTraits()

    async def validate_input(self, data: BashInput, ctx: ToolContext) -> str | None:
        if not data.command.strip():
            return "command is empty; send the shell command to run."
        if not ctx.cwd.is_dir():
            return f"The working directory {ctx.cwd} does not exist."
        return None

    def user_facing_title(self, data: BashInput) -> str:
        """The whole command, every line, its hidden characters made visible (issue 21: a title cut at 80
        characters or at the first line showed a harmless start and hid what ran)."""
        return code_span(one_line(data.command.strip())) + (" (background)" if data.run_in_background else "")

    async def call(self, data: BashInput, ctx: ToolContext) -> ToolResult:
        try:
            return await self._call(data, ctx)
        except CannotRun as refused:  # no sandbox where one is required, no shell: the model reads why
            raise ToolError(str(refused)) from refused

    async def _call(self, data: BashInput, ctx: ToolContext) -> ToolResult:
        if data.run_in_background:
            shells = required(ctx.services.background, "background shells")
            argv, env = command_launch(data.command, ctx)
            shell = await shells.start(
                data.command,
                cwd=ctx.cwd,
                env=env,
                sandbox=_sandbox(ctx, timeout_s=None),
                argv=argv,
                stop_with=ctx.services.owner.on_abort if ctx.services.owner is not None else None,
            )
            text = (
                f"Command running in background with ID: {shell.id}. "
                f"Read its output with TaskOutput(task_id={shell.id!r}); stop it with TaskStop(task_id={shell.id!r})."
            )
            return ToolResult(text, raw_output={"background_id": shell.id, "pid": shell.process.pid})
        return await run_command(data.command, ctx, timeout_s=(data.timeout or DEFAULT_TIMEOUT_MS) / 1000)


def command_launch(command: str, ctx: ToolContext) -> tuple[list[str], dict[str, str]]:
    """The argv and environment a command starts with. The environment is ours as commands may see it
    (bridge/environment.py: no credentials of the bridge's, no secret-looking variable `passEnv` doesn't name);
    the settings files' `env` (read at each call, so an edited file applies to the next command) is set by
    `env` as the first program inside the sandbox — never on the sandbox program itself."""
    env = command_environment(handed_out(os.environ, pass_env=ctx.services.pass_env()))
    inner = ctx.services.settings_env()
    argv = shell_argv(command)
    if inner:
        argv = [
            programs.helper("env", outside=ctx.cwd) or "/usr/bin/env",
            "--",
            *(f"{k}={v}" for k, v in inner.items()),
            *argv,
        ]
    return argv, env


def _sandbox(ctx: ToolContext, *, timeout_s: float | None) -> CallSandbox | None:
    """The session's sandbox for this call: what it was allowed to write, its CPU bound, its data dir."""
    sandbox = ctx.services.sandbox
    return sandbox.for_call(grants=ctx.grants, timeout_s=timeout_s, data_dir=ctx.data_dir) if sandbox else None


async def run_command(command: str, ctx: ToolContext, *, timeout_s: float) -> ToolResult:
    supervisor = required(ctx.services.processes, "a process supervisor")
    output = OutputBuffer(spill_path=spill_path(ctx.data_dir, ctx.tool_use_id))
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    progress = Throttle(ctx.progress, output.render, PROGRESS_INTERVAL)

    argv, env = command_launch(command, ctx)
    proc = await supervisor.spawn(argv, cwd=ctx.cwd, env=env, sandbox=_sandbox(ctx, timeout_s=timeout_s))

    def on_output(chunk: bytes) -> None:
        output.append(decoder.decode(chunk))
        progress.poke()

    proc.on_output = on_output

    def on_abort(reason: AbortReason) -> None:
        if reason is AbortReason.FORCE:  # a second cancel while the first unwinds: no grace left
            supervisor.terminate(proc, force=True)

    unsubscribe = ctx.abort.on_abort(on_abort)
    started = time.monotonic()
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await proc.wait()
        timed_out = deadline.cancelled_caught
        leftovers = bool(supervisor.tree_pids(proc))
        if timed_out or leftovers:
            supervisor.terminate(proc)
        if not await supervisor.wait_gone(proc, LEFTOVER_WAIT):
            proc.on_output = None  # something escaped tracking and holds the pipe; stop listening
    except anyio.get_cancelled_exc_class():
        proc.on_output = None
        output.append(decoder.decode(b"", final=True))
        progress.flush()  # the loop keeps the output so far for the synthesized result
        supervisor.terminate(proc, force=ctx.abort.reason is AbortReason.FORCE)
        # the abort listener stays: a later `force` must still cut the grace short
        progress.close()
        output.close()
        raise
    unsubscribe()
    output.append(decoder.decode(b"", final=True))
    progress.flush()
    progress.close()
    output.close()
    run = proc.run
    text = output.render()
    breach = run.breach(text, proc.returncode) if run is not None else None
    notes = run.notes(text, proc.returncode) if run is not None else []
    return _result(
        output,
        proc.returncode,
        timed_out=timed_out,
        timeout_s=timeout_s,
        elapsed=time.monotonic() - started,
        notes=notes,
        breach=breach,
    )


def _result(
    output: OutputBuffer,
    code: int | None,
    *,
    timed_out: bool,
    timeout_s: float,
    elapsed: float,
    notes: list[str],
    breach: str | None,
) -> ToolResult:
    text = output.render().rstrip("\n")
    raw: dict[str, Any] = {
        "exit_code": code,
        "timed_out": timed_out,
        "truncated": output.truncated,
        "duration_ms": round(elapsed * 1000),
    }
    if output.spilled:
        raw["output_file"] = str(output.spilled)
    if breach is not None:
        raw["limit"] = breach
    sandbox = "".join(f"\n\n[sandbox] {note}" for note in notes)
    if timed_out and breach is None:
        head = f"Command timed out after {timeout_s:g} s and was stopped."
        body = f"{head} Output so far:\n{text}" if text else f"{head} It printed nothing."
        return ToolResult(body + sandbox, is_error=True, raw_output=raw)
    if code or breach is not None:
        ending = exit_note(code) if code else ""
        body = "\n\n".join(part for part in (text, ending) if part) or "(no output)"
        return ToolResult(body + sandbox, is_error=True, raw_output=raw)
    return ToolResult((text or "(no output)") + sandbox, raw_output=raw)
