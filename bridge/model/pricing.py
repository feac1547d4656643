"""Per-model prices in USD per million tokens (input, output, cache write 5m, cache read)."""

from __future__ import annotations

from dataclasses import dataclass

from bridge.model.types import Usage


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_write: float
    cache_read: float


# Longest prefix wins; unknown models cost like Sonnet (and say so nowhere: an estimate is an estimate).
PRICES: dict[str, Price] = {
    "claude-opus-4": Price(15.0, 75.0, 18.75, 1.50),
    "claude-opus-4-5": Price(5.0, 25.0, 6.25, 0.50),
    "claude-sonnet-4": Price(3.0, 15.0, 3.75, 0.30),
    "claude-haiku-4": Price(1.0, 5.0, 1.25, 0.10),
    "claude-3-5-haiku": Price(0.80, 4.0, 1.0, 0.08),
}
DEFAULT_PRICE = PRICES["claude-sonnet-4"]

CONTEXT_WINDOW = 200_000

# The models an editor's picker offers (id, name, description); a session may run any other model id too.
MODELS: tuple[tuple[str, str, str], ...] = (
    ("claude-sonnet-4-5", "Claude Sonnet 4.5", "Fast and capable: the default"),
    ("claude-opus-4-5", "Claude Opus 4.5", "The most capable"),
    ("claude-haiku-4-5", "Claude Haiku 4.5", "The fastest and cheapest"),
)


def price_for(model: str) -> Price:
    matches = [key for key in PRICES if model.startswith(key)]
    return PRICES[max(matches, key=len)] if matches else DEFAULT_PRICE


def cost_usd(model: str, usage: Usage) -> float:
    price = price_for(model)
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_write_tokens * price.cache_write
        + usage.cache_read_tokens * price.cache_read
    ) / 1_000_000
