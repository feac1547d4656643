"""A session's conversation: the history (what the next request carries) and the running totals."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from bridge.loop.events import UsageReport
from bridge.messages import Message, scrubbed
from bridge.model.types import Usage


@dataclass
class Conversation:
    """The history and running totals of one session."""

    messages: list[Message] = field(default_factory=list)
    cost_usd: float = 0.0
    usage_total: Usage = field(default_factory=Usage)
    context_tokens: int = 0  # of the latest response: what the next request will at least carry
    on_message: Callable[[Message], None] = lambda _m: None  # transcript hook: each message when complete
    on_compact: Callable[[list[Message]], None] = lambda _m: None
    on_usage: Callable[[Usage, float], None] = lambda _u, _c: None  # transcript hook: each response's usage

    def append(self, message: Message) -> None:
        message = scrubbed(message)  # no lone surrogate: it could be neither stored nor sent
        self.messages.append(message)
        self.on_message(message)

    def replace(self, messages: list[Message]) -> None:
        """After compaction: continue from `messages` (the transcript keeps what came before)."""
        self.messages = list(messages)
        self.context_tokens = 0
        self.on_compact(self.messages)

    def record(self, usage: Usage, cost: float) -> None:
        """One response's usage and cost."""
        self.context_tokens = usage.context_tokens
        self.add(usage, cost)

    def add(self, usage: Usage, cost: float) -> None:
        """Usage and cost that count in the totals without being this history's context (a sub-agent's)."""
        self.cost_usd += cost
        self.usage_total = self.usage_total + usage
        self.on_usage(usage, cost)

    def roll_up(self, report: UsageReport, context_size: int) -> UsageReport:
        """A sub-agent's response, counted in these totals: the report the editor gets for it."""
        usage = Usage(report.input_tokens, report.output_tokens, report.cache_read_tokens, report.cache_write_tokens)
        self.add(usage, report.cost_usd)
        return dataclasses.replace(
            report, context_used=self.context_tokens, context_size=context_size, session_cost_usd=self.cost_usd
        )
