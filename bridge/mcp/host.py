"""What the MCP client needs from whoever shows a session (the editor server, the terminal).

A front end gives each session's MCP handle a `McpHost`: `notice` for things a person should see (a server
is ready, failed, needs a sign-in URL opened), `ask` for a permission-style question that is not about a
tool call (approve a project's server, fill a server's elicitation form), and `changed` when the servers'
commands (prompts) changed so the editor's command list can be sent again. The wire shape of a question
lives in bridge/server/, not here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ChoiceKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
NoticeLevel = Literal["info", "warning", "error"]


@dataclass(frozen=True)
class Choice:
    id: str
    name: str
    kind: ChoiceKind


@dataclass(frozen=True)
class Question:
    """A permission-style question (ACP `session/request_permission`): `id` becomes the tool call id the
    editor shows it under, `text` its content, `meta` goes to the request's `_meta` (e.g. an elicitation's
    schema, for an editor that renders a form)."""

    id: str
    title: str
    text: str
    choices: tuple[Choice, ...]
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The chosen choice's id (None: dismissed, cancelled, or no one to ask) and the answer's `_meta`."""

    choice: str | None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class McpHost:
    notice: Callable[[str, NoticeLevel], None] = lambda _text, _level: None
    ask: Callable[[Question], Awaitable[Reply]] | None = None  # None: nobody answers (every question is declined)
    changed: Callable[[], None] = lambda: None

    async def question(self, question: Question) -> Reply:
        if self.ask is None:
            return Reply(None)
        try:
            return await self.ask(question)
        except Exception:  # the editor failed to answer: as if dismissed
            return Reply(None)
