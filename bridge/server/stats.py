"""`_bridge/stats` (only with AGENT_BRIDGE_DEBUG_STATS set): what a soak watches for leaks, from inside the
process."""

from __future__ import annotations

import asyncio
import collections
import os
import threading
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from bridge.agent import Agent

DEBUG_STATS_ENV = "AGENT_BRIDGE_DEBUG_STATS"  # set: `_bridge/stats` answers (the soak benchmark's view)


class BridgeStats(TypedDict):
    """`_bridge/stats`: what a soak watches for leaks, from inside the process."""

    pid: int
    tasks: int  # asyncio tasks of the server's loop, this request's included
    taskNames: dict[str, int]  # tasks by their coroutine's qualified name
    threads: int
    threadNames: list[str]
    sessions: int


def debug_stats(agent: Agent | None) -> BridgeStats:
    tasks = asyncio.all_tasks()
    names = collections.Counter(getattr(task.get_coro(), "__qualname__", "?") for task in tasks)
    return {
        "pid": os.getpid(),
        "tasks": len(tasks),
        "taskNames": dict(names),
        "threads": threading.active_count(),
        "threadNames": sorted(thread.name for thread in threading.enumerate()),
        "sessions": len(agent.sessions) if agent is not None else 0,
    }
