"""How much the model thinks before it answers: the levels a user picks (ACP's `thought_level` config option) and
what each one asks of the Messages API — extended thinking with a token budget (`thinking: {type: "enabled",
budget_tokens}`), which every model the pickers offer takes. The budget counts toward `max_tokens`, so a request
that thinks gets room for both: the budget plus the usual answer (never more than a model writes in one response)."""

from __future__ import annotations

from typing import Any

# (id, name, description); the first is the default.
LEVELS: tuple[tuple[str, str, str], ...] = (
    ("off", "Off", "Answers without extended thinking"),
    ("low", "Low", "Thinks briefly first: up to 4,000 tokens"),
    ("medium", "Medium", "Thinks first: up to 10,000 tokens"),
    ("high", "High", "Thinks hard first: up to 32,000 tokens"),
)
DEFAULT = LEVELS[0][0]
BUDGETS: dict[str, int] = {"low": 4_000, "medium": 10_000, "high": 31_999}
MAX_OUTPUT = 64_000  # what the listed models write at most in one response


def is_level(level: str) -> bool:
    return any(level == known for known, _, _ in LEVELS)


def request_fields(level: str, max_tokens: int) -> tuple[int, dict[str, Any]]:
    """The request's `max_tokens` and its extra body fields for `level` (no extra fields when it is off)."""
    budget = BUDGETS.get(level)
    if budget is None:
        return max_tokens, {}
    room = max(max_tokens, min(budget + max_tokens, MAX_OUTPUT))
    return room, {"thinking": {"type": "enabled", "budget_tokens": budget}}
