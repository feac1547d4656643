"""What the executor calls around each tool call (its `steps` hook), for the session's checkpoints: it asks the
tool what the call is — read-only or not, its kind, the files it names, its title — and brackets every call that
can change files with `Checkpoints.step`. The loop knows only the hook's shape (bridge/loop/executor.py's
`StepObserver`); this module is how the session fills it.

- A read-only call is no step; one of kind `fetch` is remembered as an effect no rewind undoes (a request went
  out).
- A file tool (kind `edit`) with locations is a step over its files; any other call that is not read-only (a
  command, an MCP tool, TaskStop) is a step over the whole workspace, and what it may have done outside the
  workspace is named for a later rewind.
- A background command (`raw_output.background_id`) gets one more checkpoint when its shell ends.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from bridge.checkpoints.recorder import Checkpoints, StepCall
from bridge.tools.base import AnyTool, ToolContext, ToolResult

Finished = Callable[[ToolResult | None], None]


class CheckpointSteps:
    """The session's `steps` hook; `under(call)` is the same for a sub-agent's calls (tagged with its call)."""

    def __init__(self, checkpoints: Checkpoints, agent: str | None = None) -> None:
        self.checkpoints = checkpoints
        self.agent = agent

    def under(self, agent_call: str) -> CheckpointSteps:
        return CheckpointSteps(self.checkpoints, agent_call)

    @contextlib.asynccontextmanager
    async def __call__(self, tool: AnyTool, data: Any, ctx: ToolContext, read_only: bool) -> AsyncIterator[Finished]:
        checkpoints = self.checkpoints
        title = _safe(lambda: tool.user_facing_title(data), tool.name)
        if read_only or not checkpoints.enabled:
            if read_only and tool.kind == "fetch":
                checkpoints.effect(ctx.tool_use_id, f"{title}: a network request (it can't be taken back)")
            yield _ignore
            return
        call = StepCall(
            ctx.tool_use_id,
            tool.name,
            title,
            tool.kind,
            self._paths(tool, data),
            self.agent,
            _outside(tool.kind, title),
        )
        async with checkpoints.step(call, aborted=lambda: ctx.abort.aborted, abort=ctx.abort) as ended:

            def finished(result: ToolResult | None) -> None:
                shell = _background_shell(result, ctx)
                if shell is not None:
                    ended(shell)

            yield finished

    def _paths(self, tool: AnyTool, data: Any) -> list[str] | None:
        """The workspace files a file tool names; None (scan everything) for anything else, or a file outside."""
        if tool.kind != "edit":
            return None
        locations = _safe(lambda: tool.locations(data), [])
        paths: list[str | None] = []
        for location in locations:
            paths.append(self.checkpoints.relative(location.path))
            # a name that is a link: the file tool writes where it leads (the permission check judged that path),
            # so that file is the step's too (else the change was nobody's: not listed, never restored)
            with contextlib.suppress(OSError, ValueError):
                if os.path.islink(os.path.join(self.checkpoints.workspace or "", location.path)):
                    target = os.path.realpath(os.path.join(self.checkpoints.workspace or "", location.path))
                    paths.append(self.checkpoints.relative(target))
        if not paths or any(path is None for path in paths):
            return None
        return list(dict.fromkeys(path for path in paths if path is not None))


def _ignore(_result: ToolResult | None) -> None:
    return None


def _outside(kind: str, title: str) -> str | None:
    if kind == "edit":
        return None
    if kind == "execute":
        return (
            f"{title} ran: what it did outside the workspace (or to files .gitignore leaves out, or over the "
            "network) is not undone"
        )
    return f"{title}: what it did outside the workspace is not undone"


def _background_shell(result: ToolResult | None, ctx: ToolContext) -> Any:
    """What waits for the end of the background shell this call started, if it started one."""
    shells = ctx.services.background
    shell_id = (result.raw_output or {}).get("background_id") if result is not None else None
    if shells is None or not isinstance(shell_id, str):
        return None
    try:
        process = shells.get(shell_id).process
    except Exception:
        return None
    return process.wait


def _safe(fn: Callable[[], Any], default: Any) -> Any:
    try:
        return fn()
    except Exception:
        return default
