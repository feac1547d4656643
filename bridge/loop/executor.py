"""Runs a response's tool calls: each as soon as its tool_use block is complete (while the model is
still streaming), consecutive concurrency-safe calls in parallel (bounded), anything else alone and in
order. Results come back in the order of the tool_use blocks.

Ordering is a dependency chain: a safe call waits for the last unsafe call before it; an unsafe call
waits for every call before it. Whether a call is safe (and read-only) is asked off the event loop (a Bash
command is parsed in a worker thread), so each call first learns its own answer and its predecessors'.
Before a call starts it checks the signal (the seed's third checkpoint).

A call's own checks come in two steps around the permission step: `validate_input` (the input alone) before
it, `validate_target` (what the input names) after it — or before its question when every path the call names
may be read without asking — so a path the call may not use is never touched before it is allowed. The real
paths the permission step judged go to the tool (`ToolContext.granted`): it opens exactly those.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ValidationError

from bridge.abort import Abort, AbortReason, cancel_on_abort, not_interrupt
from bridge.display import Diff, Display
from bridge.errors import cause_text, root_cause, validation_problems
from bridge.loop.events import (
    LoopEvent,
    Notice,
    ToolCallFinished,
    ToolCallInProgress,
    ToolCallProgress,
    ToolCallStarted,
)
from bridge.loop.permission import PermissionPolicy, Prompter
from bridge.messages import INTERRUPTED_RESULT, Block, interrupted_result, tool_result_block
from bridge.permissions.hooks import FolderView, HookOutcome, HookRunner, NoHooks
from bridge.permissions.runs_later import GRANTS
from bridge.permissions.types import PermissionRequest
from bridge.tools.base import AnyTool, BoundCall, Effect, ToolContext, ToolError, ToolResult
from bridge.tools.paths import read_guard_of, within
from bridge.tools.storage import bound_result

log = logging.getLogger(__name__)

MAX_PARALLEL = 10


class RunningCalls:
    """The calls running now, at every level (a sub-agent's calls too), by tool_use id, so that one of them can be
    stopped alone (the editor's per-call cancel): its own abort fires, the turn it belongs to goes on."""

    def __init__(self) -> None:
        self._aborts: dict[str, Abort] = {}
        # every tool_use id a level of this session has used: a call that comes with one of them is given a fresh
        # id (bridge/loop/query.py's `unique_tool_id`) — a sub-agent's call with its parent's Agent call id took
        # over the parent's card in every view, its result and report never shown (attack round 18)
        self.used: set[str] = set()

    def track(self, use_id: str, abort: Abort) -> Callable[[], None]:
        self._aborts[use_id] = abort

        def untrack() -> None:
            if self._aborts.get(use_id) is abort:
                del self._aborts[use_id]

        return untrack

    def stop(self, use_id: str) -> bool:
        """`ctrl-c` for that call alone (`force` when it is already stopping). False: no such call runs."""
        abort = self._aborts.get(use_id)
        if abort is None:
            return False
        abort.abort(AbortReason.FORCE if abort.aborted else AbortReason.CTRL_C)
        return True

    def __contains__(self, use_id: object) -> bool:
        return use_id in self._aborts


StepFinished = Callable[[ToolResult | None], None]
StepObserver = Callable[[AnyTool, Any, ToolContext, bool], AbstractAsyncContextManager[StepFinished]]
"""`steps(tool, input, ctx, read_only)`: entered just before a tool's `call` runs and left when it returned, failed or
was cancelled; what it yields is told the result. The session's checkpoints use it (bridge/checkpoints/observer.py)."""


@contextlib.asynccontextmanager
async def no_steps(_tool: AnyTool, _data: Any, _ctx: ToolContext, _read_only: bool) -> AsyncIterator[StepFinished]:
    yield lambda _result: None


@dataclass
class ToolEnvironment:
    """What the executor needs from the session, built once per turn."""

    tools: dict[str, AnyTool]
    policy: PermissionPolicy
    prompter: Prompter
    emit: Callable[[LoopEvent], None]
    context: Callable[[str], ToolContext]  # a ToolContext for a tool_use id (abort filled in by the executor)
    apply: Callable[[Effect], None] = lambda _effect: None  # a finished call's effects (the session's)
    held_back: Callable[[], set[str]] = set  # tools whose schemas are not sent (deferred, not loaded yet)
    unavailable: dict[str, str] = field(default_factory=dict)  # names the history uses that are gone, and why
    running: RunningCalls = field(default_factory=RunningCalls)  # the session's: every level's running calls
    notifications: Callable[[], list[Block]] = list  # drained before each request: news for the model (a
    # background agent that ended), added to the history as user text
    hooks: HookRunner = field(default_factory=NoHooks)  # every hook event (PreToolUse … Stop)
    steps: StepObserver = no_steps  # around each call that runs (checkpoints)


@dataclass
class _Call:
    block: Block
    tool: AnyTool | None
    data: Any
    error: str | None
    safe: bool = True  # concurrency-safe; known once `classified` is set
    read_only: bool = False
    classified: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Block | None = None
    output: str = ""  # progress so far, kept for the synthesized result
    display: list[Display] = field(default_factory=list)
    raw_output: dict[str, Any] | None = None
    edited: tuple[str, str] | None = None  # (what the model proposed, what the user edited it to)
    target_checked: bool = False  # validate_target ran before the permission question
    grants: tuple[Path, ...] = ()  # protected paths the permission step allowed this call to write
    ran_input: dict[str, Any] | None = None  # what runs, when not the model's input: a hook's rewrite, the user's edit


WITHHELD_FROM_FOLDER_HOOKS = (
    "a folder's own hooks get a tool's result only when the call read or wrote nothing but the workspace's files"
)
_WORKSPACE_FILE_TOOLS = frozenset({"Read", "Write", "Edit", "NotebookEdit", "Grep", "Glob"})


def _workspace_only(tool: AnyTool, ctx: ToolContext) -> bool:
    """Whether the call's result holds nothing but files of the workspace's roots the sandbox shows its hooks: a file
    tool whose every path the permission step judged (`ctx.granted`, resolved) lies in one, none of them masked.
    Anything else (a command, a fetch, an MCP tool, a sub-agent) may hold what the sandbox hides from the
    folder's hooks."""
    if tool.name not in _WORKSPACE_FILE_TOOLS or not ctx.granted:
        return False
    roots = [os.path.realpath(root) for root in (ctx.cwd, *ctx.additional_dirs)]
    if not all(any(within(str(real), root) for root in roots) for real in ctx.granted.values()):
        return False
    # and none the sandbox hides from the hook (`denyRead` of the workspace's `.env`: the Read tool reads it)
    sandbox = ctx.services.sandbox
    below = tool.name == "Grep"  # (a search shows what it finds in the folder)
    return sandbox is None or not any(sandbox.masks(Path(real), below=below) for real in ctx.granted.values())


_HOOK_STOP: ContextVar[list[str] | None] = ContextVar("hook_stop", default=None)


@contextlib.contextmanager
def hook_stop_scope() -> Iterator[list[str]]:
    """A turn's record of a hook's `continue: false`. A sub-agent's turn runs inside its parent's call, so it shares
    the record: a stop in a sub-agent ends the turn that started it too (a kill switch is not got round by
    delegating)."""
    found = _HOOK_STOP.get()
    if found is not None:
        yield found
        return
    stops: list[str] = []
    token = _HOOK_STOP.set(stops)
    try:
        yield stops
    finally:
        _HOOK_STOP.reset(token)


class ToolExecutor:
    def __init__(self, env: ToolEnvironment, abort: Abort, group: TaskGroup, offered: set[str] | None = None) -> None:
        """`offered`: the tools the request declared (the model may call only those); None: all of them."""
        self._env = env
        self._offered = set(env.tools) if offered is None else offered
        self._abort = abort
        self._group = group
        self._calls: list[_Call] = []
        # why a hook said `continue: false` (the first), for this turn and the sub-agents it runs (`hook_stop_scope`):
        # no call starts after it, and the turn ends after this round
        shared = _HOOK_STOP.get()
        self._stops: list[str] = shared if shared is not None else []
        self._limit = anyio.Semaphore(MAX_PARALLEL)

    @property
    def count(self) -> int:
        return len(self._calls)

    def add(self, block: Block) -> None:
        """Schedule a complete tool_use block."""
        call = self._prepare(block)
        earlier = list(self._calls)
        self._calls.append(call)
        self._env.emit(self._started_event(call))
        self._group.start_soon(self._run, call, earlier)

    async def _classify(self, call: _Call) -> None:
        """Is the call read-only, may it run beside others (asked off the event loop; see the tool's
        `traits_async`). A call that can't run (bad input, unknown tool) is safe: it only reports an error."""
        try:
            if call.tool is not None and call.error is None:
                traits = await call.tool.traits_async(call.data)
                call.safe, call.read_only = traits.concurrency_safe, traits.read_only
        except Exception:
            log.exception("tool %s: is_read_only / is_concurrency_safe failed", call.block["name"])
            call.safe, call.read_only = False, False
        finally:
            call.classified.set()

    async def _waits_for(self, call: _Call, earlier: list[_Call]) -> list[anyio.Event]:
        for other in earlier:
            await other.classified.wait()
        if not call.safe:
            return [c.done for c in earlier]
        for other in reversed(earlier):
            if not other.safe:
                return [other.done]
        return []

    def _prepare(self, block: Block) -> _Call:
        tool = self._env.tools.get(block["name"]) if block["name"] in self._offered else None
        if tool is None:
            return _Call(block, None, None, self._not_callable(str(block["name"])), True)
        raw = block.get("input") or {}
        if "__invalid_json__" in raw:
            return _Call(block, tool, None, "The tool input was not valid JSON; send it again.", True)
        try:
            data = tool.input_model.model_validate(raw)
        except ValidationError as error:
            return _Call(block, tool, None, _validation_message(tool.name, error), True)
        return _Call(block, tool, data, None)

    def _not_callable(self, name: str) -> str:
        """Why the model cannot call `name` from this request, and what to do instead."""
        if name in self._env.tools:  # held back: deferred and not loaded
            return (
                f'{name} is a deferred tool and is not loaded: call ToolSearch with query "select:{name}" '
                f"first, then call {name} again."
            )
        if name in self._env.unavailable:
            return f"{name} is not connected: {self._env.unavailable[name]}. It cannot be called in this session."
        known = ", ".join(sorted(self._offered & self._env.tools.keys()))
        deferred = len(self._env.tools.keys() - self._offered)
        more = f" ({deferred} more are deferred: find them with ToolSearch.)" if deferred else ""
        return f"No such tool: {name}. Available tools: {known}.{more}"

    @property
    def stopped(self) -> str | None:
        """Why a hook said `continue: false` in this turn (at any level), or None."""
        return self._stops[0] if self._stops else None

    def _started_event(self, call: _Call) -> ToolCallStarted:
        # An input that failed validation shows under the bare name (validating again would not help).
        return started_event(call.block, call.tool if call.data is not None else None, call.data)

    async def _run(self, call: _Call, earlier: list[_Call]) -> None:
        try:
            await self._classify(call)
            for event in await self._waits_for(call, earlier):
                await event.wait()
            if self._abort.aborted:  # checkpoint: no new work after a cancel
                call.result = interrupted_result(call.block["id"])
                return
            if self.stopped is not None:  # a hook's `continue: false`, here or in a sub-agent: nothing new starts
                message = f"Not run: a hook stopped the turn ({self.stopped})."
                call.result = tool_result_block(call.block["id"], message, is_error=True)
                return
            try:
                if call.safe:
                    async with self._limit:
                        call.result = await self._execute(call)
                else:
                    call.result = await self._execute(call)
            except Exception as error:  # a failing policy, hook or prompter denies this call, not the turn
                log.exception("tool call %s failed", call.block["id"])
                message = f"The tool was not run: {_named(error)}"
                call.result = tool_result_block(call.block["id"], message, is_error=True)
        finally:
            call.classified.set()  # cancelled while classifying: the calls after it must not wait for it
            if call.result is None:
                call.result = interrupted_result(call.block["id"], call.output)
            self._finish_event(call)
            call.done.set()

    def _finish_event(self, call: _Call) -> None:
        result = call.result or {}
        text = _text_of(result.get("content"))
        status: Literal["completed", "failed"] = "failed" if result.get("is_error") else "completed"
        self._env.emit(ToolCallFinished(call.block["id"], status, text, call.display, call.raw_output))

    async def _execute(self, call: _Call) -> Block:
        use_id = call.block["id"]
        if call.error is not None or call.tool is None:
            return tool_result_block(use_id, call.error or "tool failed", is_error=True)
        tool, data = call.tool, call.data
        ctx = self._env.context(use_id)
        ctx.tool_use_id = use_id
        # A view of the step's signal of its own, so that this call can also be stopped alone.
        ctx.abort = self._abort.child(_every if tool.interrupt_behavior == "cancel" else not_interrupt)
        untrack = self._env.running.track(use_id, ctx.abort)
        try:
            return await self._execute_tracked(call, tool, data, ctx)
        finally:
            untrack()

    async def _execute_tracked(self, call: _Call, tool: AnyTool, data: Any, ctx: ToolContext) -> Block:
        use_id = call.block["id"]

        def progress(text: str) -> None:
            call.output = text
            self._env.emit(ToolCallProgress(use_id, text))

        ctx.progress = progress
        try:
            problem = await tool.validate_input(data, ctx)
            if problem:
                return tool_result_block(use_id, problem, is_error=True)
            denied, data = await self._permit(call, ctx)
            if denied is not None:
                return tool_result_block(use_id, denied, is_error=True)
            if call.edited is not None:
                tool, data = self._edited_call(call, tool, data, call.edited[1])
            if not call.target_checked or call.edited is not None:
                problem = await tool.validate_target(data, ctx)
                if problem:
                    return tool_result_block(use_id, problem, is_error=True)
            self._env.emit(ToolCallInProgress(use_id))
            ctx.grants = call.grants
            with GRANTS.hold(call.grants):  # what it was allowed to write, the sandbox's watcher leaves alone
                async with self._env.steps(tool, data, ctx, call.read_only) as finished:
                    # (a cancel while the step's checkpoint was taken: the tool does not start)
                    result = None if ctx.abort.aborted else await self._call_tool(call, tool, data, ctx)
                    finished(result)
            if result is not None and call.edited is not None and not result.is_error:
                result.content = _with_user_edit(result.content, *call.edited)
        except ToolError as error:
            return tool_result_block(use_id, str(error), is_error=True)
        if result is not None:
            result = await self._after(call, tool, result, ctx)
        if result is None:  # cancelled by the signal
            return interrupted_result(use_id, call.output)
        call.display, call.raw_output = result.display, result.raw_output
        for effect in result.effects:
            self._env.apply(effect)
        content: str | list[Block] = result.content
        if isinstance(content, str):  # beyond the tool's limit: stored, and the model gets a preview
            content = bound_result(content, limit=tool.max_result_chars, data_dir=ctx.data_dir, tool_use_id=use_id)
        return tool_result_block(use_id, content, is_error=result.is_error)

    def _edited_call(self, call: _Call, tool: AnyTool, data: Any, text: str) -> tuple[AnyTool, Any]:
        """The call that writes the user's edit of the proposed change (the tool's `edited_input`): what runs, and
        what PostToolUse hooks are told ran."""
        swap = tool.edited_input(data, text)
        other = self._env.tools.get(swap[0]) if swap else None
        if swap is None or other is None:
            raise ToolError(f"{tool.name}: the user's edit of the proposed change cannot be applied; nothing written.")
        try:
            validated = other.input_model.model_validate(swap[1])
        except ValidationError as error:
            raise ToolError(_validation_message(other.name, error)) from None
        call.ran_input = dict(swap[1])
        return other, validated

    async def _call_tool(self, call: _Call, tool: AnyTool, data: Any, ctx: ToolContext) -> ToolResult | None:
        """The tool's result, or None when the signal stopped it (`call.output` is what it had so far)."""
        if tool.answers_abort:  # it stops itself, leaving its own state valid
            result = await self._guarded(tool, data, ctx)
            if ctx.abort.aborted:
                call.output = _text_of(result.content) or call.output
                return None
            return result
        with cancel_on_abort(ctx.abort):
            return await self._guarded(tool, data, ctx)
        return None

    async def _guarded(self, tool: AnyTool, data: Any, ctx: ToolContext) -> ToolResult:
        try:
            return await tool.call(data, ctx)
        except ToolError:
            raise
        except Exception as error:  # a bug in a tool must not end the turn
            log.exception("tool %s failed", tool.name)
            raise ToolError(f"{tool.name} failed unexpectedly: {_named(error)}") from error

    async def _hooks(
        self, event: str, payload: dict[str, Any], tool_name: str, folder_view: FolderView = None
    ) -> HookOutcome:
        """A cancel (not a new prompt) stops the hooks under way, their processes killed: a hook near its timeout
        held the cancel that long, and its effects landed after it."""
        outcome = HookOutcome()
        with cancel_on_abort(self._abort.child(not_interrupt)):
            outcome = await self._env.hooks.run(event, payload, tool_name=tool_name, folder_view=folder_view)
        if self._abort.aborted and self._abort.reason is not AbortReason.INTERRUPT:
            outcome.blocked, outcome.reason = True, outcome.reason or "the turn was cancelled"
        for error in outcome.errors:
            self._env.emit(Notice(f"{event} hook failed: {error}", level="warning"))
        for message in outcome.system_messages:
            self._env.emit(Notice(f"{event} hook: {message}", level="warning"))
        if outcome.stop:  # `continue: false`: this round's results are kept, and the turn ends
            self._stops.append(outcome.stop_reason or f"a {event} hook stopped the turn")
            if event == "PreToolUse":
                outcome.blocked, outcome.reason = True, outcome.reason or self._stops[0]
        return outcome

    async def _after(self, call: _Call, tool: AnyTool, result: ToolResult, ctx: ToolContext) -> ToolResult:
        """PostToolUse hooks: a blocking hook's reason is added for the model (the tool already ran). The folder's
        own hooks get the result only when it holds nothing but the workspace's files (`_workspace_only`): they run
        in the sandbox, which hides the rest of the home folder and the user's credentials from them, and a result
        the user let the model have (a read of `~/.aws/credentials`, a command's output) would carry it in."""
        payload = {
            # what ran: a hook's rewrite, the user's edit of the proposed change (`tool`: an Edit may run as a Write)
            "tool_input": dict(call.ran_input or call.block.get("input") or {}),
            "tool_use_id": call.block["id"],
            "tool_response": {
                "content": result.content if isinstance(result.content, str) else "",
                "is_error": result.is_error,
            },
        }

        def folder_view() -> dict[str, Any] | None:  # (worked out only when a folder's hook runs)
            if _workspace_only(tool, ctx):
                return None
            return {
                "tool_response": {"content": "", "is_error": result.is_error, "withheld": WITHHELD_FROM_FOLDER_HOOKS}
            }

        outcome = await self._hooks("PostToolUse", payload, tool.name, folder_view)
        notes = [*outcome.additional_context, *([outcome.reason] if outcome.blocked and outcome.reason else [])]
        if notes and isinstance(result.content, str):
            result.content += "\n\n" + "\n".join(f"[hook] {note}" for note in notes)
        return result

    async def _permit(self, call: _Call, ctx: ToolContext) -> tuple[str | None, Any]:
        """(None, input to run with) when the call may run; else (the message for the model, _). The wait for
        an answer is cut by any abort reason (a tool that has not started is not run, even a `block` one).
        PreToolUse hooks run first: they may block, decide, or rewrite the input."""
        tool, data = call.tool, call.data
        assert tool is not None
        raw = dict(call.block.get("input") or {})
        hook = await self._hooks(
            "PreToolUse",
            {"tool_input": tool.backfill_observable_input(dict(raw)), "tool_use_id": call.block["id"]},
            tool.name,
        )
        if hook.blocked:
            return f"Blocked by a PreToolUse hook: {hook.reason or 'no reason given'}", data
        rewritten = hook.updated_input is not None and hook.updated_input != raw
        if rewritten:
            assert hook.updated_input is not None
            refused, data = await self._rewrite(call, hook.updated_input, ctx)
            if refused is not None:
                return refused, data
            raw = dict(hook.updated_input)
            call.ran_input = raw
            # the call's card shows what runs, asked or not (the question, if any, shows it too)
            self._env.emit(dataclasses.replace(started_event({**call.block, "input": raw}, tool, data), rewritten=True))
        paths = _safe(lambda: tool.permission_paths(data, ctx), [])
        decision = await self._env.policy.decide_async(BoundCall(tool, data, raw, ctx, call.read_only), hook=hook)
        if decision.updated_input is not None:
            try:
                data = tool.input_model.model_validate(decision.updated_input)
            except ValidationError as error:
                return "A hook rewrote the input invalidly: " + _validation_message(tool.name, error), data
        # the paths as judged are the ones opened (a rewrite's too: it was judged as rewritten), so a name swapped
        # for a link meanwhile is refused, not followed
        if decision.resolved and len(decision.resolved) == len(paths):
            ctx.granted = {named: real for (named, _access), real in zip(paths, decision.resolved, strict=True)}
        if decision.behavior == "allow":
            if rewritten:  # nothing asked: say so (the card shows what runs, retitled above)
                title = started_event({**call.block, "input": raw}, tool, data).title
                message = f"A PreToolUse hook rewrote this {tool.name} call; it runs as: {title}"
                self._env.emit(Notice(message, level="warning"))
            return None, data
        if decision.behavior == "deny":
            return f"Permission denied: {decision.reason or 'a deny rule matched'}.", data
        if self._may_look(tool, data, ctx):  # the question can show the real diff; a doomed call is not asked
            call.target_checked = True
            problem = await tool.validate_target(data, ctx)
            if problem:
                return problem, data
        # what the user is asked is what runs: a hook's rewrite, not the call the model made
        started = started_event({**call.block, "input": raw}, tool, data) if rewritten else self._started_event(call)
        reason = decision.reason
        if rewritten:
            reason = (
                f"a PreToolUse hook rewrote this call ({reason})" if reason else "a PreToolUse hook rewrote this call"
            )
        request = PermissionRequest(
            tool_call_id=started.tool_call_id,
            tool_name=tool.name,
            title=started.title,
            kind=started.tool_kind,
            raw_input=started.raw_input,
            display=_preview(tool, data, ctx),
            locations=started.locations,
            reason=reason,
            suggestions=decision.suggestions,
            shown=decision.shown,
        )
        call.display = request.display  # a rejected call keeps showing what it proposed
        answer = None
        with cancel_on_abort(self._abort), cancel_on_abort(ctx.abort):  # the step's signal, or this call's own
            answer = await self._env.prompter(request)
        if answer is None:  # the turn was cancelled while asking
            return INTERRUPTED_RESULT, data
        if answer.outcome == "cancelled":
            return "The permission request was dismissed (or the editor went away); the tool was not run.", data
        if answer.outcome in ("allow_always", "reject_always") and answer.suggestion is not None:
            try:
                self._env.policy.save_rule(answer.suggestion)
            except Exception as error:  # the answer still counts for this call
                self._env.emit(Notice(f"Could not save the rule {answer.suggestion.label}: {error}", level="error"))
        if answer.allowed:
            if _edit_not_whole(answer.edited_text, request.display):
                self._env.emit(Notice(_EDIT_NOT_APPLIED, level="warning"))
                return _EDIT_NOT_APPLIED + " Ask the user how they want the file changed.", data
            call.edited = _user_edit(answer.edited_text, request.display)
            call.grants = decision.grants
            return None, data
        message = "Permission denied by user"
        if answer.feedback:
            message += f". The user said: {answer.feedback}"
        return message, data

    async def _rewrite(self, call: _Call, rewritten: dict[str, Any], ctx: ToolContext) -> tuple[str | None, Any]:
        """A PreToolUse hook's rewrite of the input, taken as the model's own input is: validated, checked by the
        tool (`validate_input`: a path no file can have, a search rooted where it may not be) and classified again.
        The call was scheduled as what the model asked for: a rewrite that would change something where a read was
        asked for is refused (a read-only agent, the checkpoints and the calls running beside it counted on it)."""
        tool = call.tool
        assert tool is not None
        try:
            data = tool.input_model.model_validate(rewritten)
        except ValidationError as error:
            return "A hook rewrote the input invalidly: " + _validation_message(tool.name, error), call.data
        problem = await tool.validate_input(data, ctx)
        if problem:
            return f"A hook rewrote the input invalidly: {problem}", call.data
        try:
            traits = await tool.traits_async(data)
            read_only, safe = traits.read_only, traits.concurrency_safe
        except Exception:
            log.exception("tool %s: is_read_only / is_concurrency_safe failed", tool.name)
            read_only, safe = False, False
        if (call.read_only and not read_only) or (call.safe and not safe):
            return (
                "A PreToolUse hook rewrote a call that only reads into one that may change something; it was not run.",
                call.data,
            )
        call.read_only, call.safe = read_only, safe
        return None, data

    @staticmethod
    def _may_look(tool: AnyTool, data: Any, ctx: ToolContext) -> bool:
        """Every path the call names may be read without asking (the read guard: inside the workspace or the
        call's scope, no Read rule against it): then `validate_target` may run before the question."""
        guard = read_guard_of(ctx)
        paths = _safe(lambda: tool.permission_paths(data, ctx), None)
        if paths is None:
            return False
        granted = ctx.granted or {}
        for named, _access in paths:
            try:
                if guard(granted.get(named, named), None) is not None:
                    return False
            except Exception:
                return False
        return True

    async def results(self) -> list[Block]:
        """Every call's result, in tool_use order (waits for the running ones)."""
        for call in self._calls:
            await call.done.wait()
        return [c.result for c in self._calls if c.result is not None]

    def unfinished_outputs(self) -> dict[str, str]:
        return {c.block["id"]: c.output for c in self._calls if not c.done.is_set()}


def _every(_reason: AbortReason) -> bool:
    return True


_EDIT_NOT_APPLIED = (
    "The user edited the proposed text, but what they were shown was not the whole file (only the changed part, "
    "or the file was not read yet), so their version can't be written as the file: nothing was written."
)


def _edit_not_whole(edited: str | None, display: list[Display]) -> bool:
    """The user changed the proposed text of a diff that is not the whole file: writing it would cut the file to
    the part shown, and writing the proposal instead is not what they accepted."""
    diffs = [d for d in display if isinstance(d, Diff)]
    return edited is not None and len(diffs) == 1 and diffs[0].partial and edited != diffs[0].new_text


def _user_edit(edited: str | None, display: list[Display]) -> tuple[str, str] | None:
    """(proposed, edited) when the user changed the whole-file text of the one diff they were shown."""
    diffs = [d for d in display if isinstance(d, Diff)]
    if edited is None or len(diffs) != 1 or diffs[0].partial:
        return None  # a partial diff (a huge file) is not the whole text: writing it would cut the file
    proposed = diffs[0].new_text
    return None if edited == proposed else (proposed, edited)


def _with_user_edit(content: str | list[Block], proposed: str, edited: str) -> str | list[Block]:
    """The tool result, told that the user changed the proposal and how (a diff from the proposal)."""
    lines = difflib.unified_diff(
        proposed.splitlines(keepends=True),
        edited.splitlines(keepends=True),
        "your proposal",
        "what the user accepted",
        n=2,
    )
    note = (
        "The user edited the proposed change before accepting it; the user's version was written. "
        "The difference from your proposal:\n" + "".join(lines).rstrip("\n")
    )
    if isinstance(content, str):
        return f"{content}\n\n{note}"
    return [*content, {"type": "text", "text": note}]


def _preview(tool: AnyTool, data: Any, ctx: ToolContext) -> list[Display]:
    """An edit's diff for the permission dialog; a failing preview just shows nothing."""
    try:
        return list(tool.preview(data, ctx))
    except Exception:
        return []


def started_event(block: Block, tool: AnyTool | None, data: BaseModel | None = None) -> ToolCallStarted:
    """How a tool_use shows to the editor: the tool's title, kind, locations and observable input.

    `data` is the validated input when the caller has it; else it is validated here (a stored history's
    replay), and a block that does not validate shows under its bare name.
    """
    raw = dict(block.get("input") or {})
    if tool is not None and data is None:
        data = _safe(lambda: tool.input_model.model_validate(raw), None)
    if tool is None or data is None:
        return ToolCallStarted(block["id"], block["name"], block["name"], "other", raw)
    valid = data
    return ToolCallStarted(
        block["id"],
        tool.name,
        _safe(lambda: tool.user_facing_title(valid), tool.name),
        tool.kind,
        tool.backfill_observable_input(dict(raw)),
        list(_safe(lambda: tool.locations(valid), [])),
    )


def _named(error: BaseException) -> str:
    """A failure for the model: the cause (out of any exception group) with its kind, which helps it."""
    cause = root_cause(error)
    return f"{type(cause).__name__}: {cause_text(cause)}"


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:
        return default


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _validation_message(tool_name: str, error: ValidationError) -> str:
    return f"Invalid input for {tool_name}: " + "; ".join(validation_problems(error, whole="input"))


__all__ = ["AbortReason", "RunningCalls", "StepObserver", "ToolEnvironment", "ToolExecutor", "no_steps"]


def replayed_effects(block: Block, tool: AnyTool | None) -> list[Effect]:
    """The effects a stored tool_use's call had, as far as its input tells (a replay's plan); [] when the tool or
    a valid input is missing."""
    return _from_stored(block, tool, lambda t, data: t.replayed_effects(data))


def stored_display(block: Block, tool: AnyTool | None, readable: Callable[[Path], bool]) -> list[Display]:
    """What a stored tool_use's call showed, as far as its input tells (a replay's Edit diff); [] when the tool
    or a valid input is missing. `readable`: which files the replay may read (`Tool.stored_display`)."""
    return _from_stored(block, tool, lambda t, data: t.stored_display(data, readable))


T = TypeVar("T")


def _from_stored(block: Block, tool: AnyTool | None, ask: Callable[[AnyTool, Any], list[T]]) -> list[T]:
    if tool is None:
        return []
    data = _safe(lambda: tool.input_model.model_validate(dict(block.get("input") or {})), None)
    if data is None:
        return []
    return list(_safe(lambda: ask(tool, data), []))
