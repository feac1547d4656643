"""How the loop asks for permission: a policy decides, a prompter asks a person."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, Protocol

from bridge.permissions.hooks import HookOutcome
from bridge.permissions.types import Decision, PermissionAnswer, PermissionRequest, RuleSuggestion

Prompter = Callable[[PermissionRequest], Awaitable[PermissionAnswer]]
"""Asks a person. Cancelled (by the turn's abort) while waiting: the front end withdraws the question."""


class PermissionPolicy(Protocol):
    """What the loop needs of the permission engine (`bridge.permissions.engine.PermissionEngine`)."""

    def decide(
        self,
        tool_name: str,
        raw_input: dict[str, Any],
        *,
        read_only: bool,
        paths: list[tuple[Path, Literal["read", "write"]]],
        hook: HookOutcome | None = None,
    ) -> Decision: ...

    def save_rule(self, suggestion: RuleSuggestion) -> None: ...

    async def run_hooks(
        self, event: str, payload: dict[str, Any], *, tool_name: str | None = None
    ) -> HookOutcome: ...


class ReadOnlyGate:
    """The simplest policy: read-only calls run, everything else asks."""

    def decide(
        self,
        tool_name: str,
        raw_input: dict[str, Any],
        *,
        read_only: bool,
        paths: list[tuple[Path, Literal["read", "write"]]],
        hook: HookOutcome | None = None,
    ) -> Decision:
        if read_only:
            return Decision("allow", reason="read-only")
        return Decision("ask", reason=f"{tool_name} may change things")

    def save_rule(self, suggestion: RuleSuggestion) -> None:
        return None

    async def run_hooks(
        self, event: str, payload: dict[str, Any], *, tool_name: str | None = None
    ) -> HookOutcome:
        return HookOutcome()


async def deny_all(request: PermissionRequest) -> PermissionAnswer:
    """The prompter where no one can answer (background / non-interactive runs)."""
    return PermissionAnswer("reject_once", feedback="No one is available to approve this (non-interactive run).")
