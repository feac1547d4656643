"""The model layer's contract: a request, the stream events it yields, the errors a person can act on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from bridge.messages import Block, Message


@dataclass
class ModelRequest:
    model: str
    system: list[Block]
    tools: list[dict[str, Any]]
    messages: list[Message]
    max_tokens: int = 16_000
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"thinking": {...}}

    def params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": self.messages}
        if self.system:
            params["system"] = self.system
        if self.tools:
            params["tools"] = self.tools
        return params | self.extra


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass(frozen=True)
class BlockDelta:
    """Streamed text or thinking of the block at `index`."""

    index: int
    text: str
    block_type: Literal["text", "thinking"]
    kind: Literal["delta"] = "delta"


@dataclass(frozen=True)
class BlockComplete:
    """A content block finished streaming (a tool_use block's input is parsed)."""

    index: int
    block: Block
    kind: Literal["block"] = "block"


@dataclass(frozen=True)
class ResponseComplete:
    stop_reason: str
    usage: Usage
    kind: Literal["done"] = "done"


@dataclass(frozen=True)
class Retrying:
    """The request failed in a way worth retrying; the client waits `delay` seconds first."""

    attempt: int  # the attempts that failed so far
    delay: float
    message: str
    reason: str = ""  # a few words for a person: "API overloaded", "rate limited", "connection failed"
    attempts: int = 0  # the most attempts there will be (0: not said)
    kind: Literal["retry"] = "retry"


ModelEvent = BlockDelta | BlockComplete | ResponseComplete | Retrying


ErrorKind = Literal[
    "authentication",
    "not_found",
    "rate_limited",
    "overloaded",
    "connection",
    "tls",
    "proxy",
    "stream_dropped",
    "stream_stalled",
    "stream_invalid",
    "invalid_request",
    "api",
]


class ModelError(Exception):
    """A model/API failure that survived the retries. `str(error)` is meant for a person."""

    def __init__(self, message: str, *, kind: ErrorKind, status: int | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status


class ModelClient(Protocol):
    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...
