"""What a person is shown of the agent's work, as domain objects: a tool call's content (a text, a diff), the
places it touches, the plan. The editor server turns them into ACP shapes (`bridge/server/wire.py`), the
terminal into lines of text; nothing here knows a wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PlanStatus = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True)
class Location:
    """A file a tool call reads or changes, at `line` (1-based) when known."""

    path: str
    line: int | None = None


@dataclass(frozen=True)
class TextContent:
    text: str


@dataclass(frozen=True)
class Diff:
    """An edit of `path`: the whole old text (None for a new file) and new text, or for a huge file only the
    region around the change, which starts at line `first_line` of the old text; or (`unread`) only the texts the
    call names, the file not read (a question about a file outside the workspace is asked before it is looked
    at): then `old_text` None says nothing of whether the file exists."""

    path: str
    old_text: str | None
    new_text: str
    first_line: int | None = None  # set when the texts are only the changed region
    unread: bool = False

    @property
    def partial(self) -> bool:
        """The texts are not the whole file: the user's edit of them can't be written as the file."""
        return self.first_line is not None or self.unread


Display = TextContent | Diff
"""One item of what a tool call shows (its result, or the permission dialog's preview)."""


@dataclass(frozen=True)
class PlanEntry:
    content: str
    status: PlanStatus


@dataclass(frozen=True)
class SubAgentLabel:
    """Which sub-agent a tool call, a question or a line of text comes from: its type, the `description` its
    `Agent` call gave, and that call's id."""

    agent_type: str
    description: str
    parent_tool_call_id: str
