"""How the loop asks for permission: a policy decides, a prompter asks a person. Hooks (every event, the
permission-free ones like UserPromptSubmit and Stop included) run through a `HookRunner` of their own."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from bridge.permissions.facts import PermissionCall
from bridge.permissions.hooks import HookOutcome
from bridge.permissions.types import Decision, PermissionAnswer, PermissionRequest, RuleSuggestion

Prompter = Callable[[PermissionRequest], Awaitable[PermissionAnswer]]
"""Asks a person. Cancelled (by the turn's abort) while waiting: the front end withdraws the question."""


class PermissionPolicy(Protocol):
    """What the loop needs of the permission engine (`bridge.permissions.engine.PermissionEngine`).
    `decide_async` keeps the analysis off the event loop, with a deadline; it asks the call for its facts."""

    async def decide_async(self, call: PermissionCall, *, hook: HookOutcome | None = None) -> Decision: ...

    def save_rule(self, suggestion: RuleSuggestion) -> None: ...


class ReadOnlyGate:
    """The simplest policy: read-only calls run, everything else asks."""

    async def decide_async(self, call: PermissionCall, *, hook: HookOutcome | None = None) -> Decision:
        if call.read_only:
            return Decision("allow", reason="read-only")
        return Decision("ask", reason=f"{call.tool_name} may change things")

    def save_rule(self, suggestion: RuleSuggestion) -> None:
        return None


async def deny_all(request: PermissionRequest) -> PermissionAnswer:
    """The prompter where no one can answer (background / non-interactive runs)."""
    return PermissionAnswer("reject_once", feedback="No one is available to approve this (non-interactive run).")
