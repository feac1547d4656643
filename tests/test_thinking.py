"""The thinking levels a user picks and what each asks of the Messages API: a budget the API accepts (at least
1,024, below `max_tokens`), with room left for the answer, never past what a model writes in one response."""

from __future__ import annotations

import pytest

from bridge.model import thinking


def test_off_asks_nothing() -> None:
    assert thinking.request_fields("off", 16_000) == (16_000, {})
    assert thinking.DEFAULT == "off"


@pytest.mark.parametrize("level", ["low", "medium", "high"])
@pytest.mark.parametrize("max_tokens", [256, 16_000, 64_000])
def test_each_level_is_a_budget_the_api_accepts(level: str, max_tokens: int) -> None:
    room, extra = thinking.request_fields(level, max_tokens)
    budget = extra["thinking"]["budget_tokens"]
    assert extra["thinking"]["type"] == "enabled" and budget >= 1024
    assert budget < room <= max(max_tokens, thinking.MAX_OUTPUT)
    assert room >= max_tokens, "the answer keeps at least the room it had"


def test_levels_grow_and_unknown_ones_are_refused() -> None:
    budgets = [
        thinking.request_fields(level, 16_000)[1]["thinking"]["budget_tokens"] for level in ("low", "medium", "high")
    ]
    assert budgets == sorted(budgets) and len(set(budgets)) == 3
    assert not thinking.is_level("enormous") and all(thinking.is_level(level) for level, _, _ in thinking.LEVELS)
