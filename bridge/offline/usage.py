"""Rough token accounting, including prompt caching.

Tokens are estimated as characters / 4. Caching follows the real API's shape, simplified: the request is a
sequence of segments (tools, system blocks, message blocks); a `cache_control` breakpoint writes the prefix
ending there; a later request reads the longest previously written prefix found at or up to 20 segments
before one of its own breakpoints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from bridge.offline.scenario import Json

LOOKBACK = 20


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def as_json(self) -> Json:
        return {
            "input_tokens": self.input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


def estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body, separators=(",", ":"))) // 4)


def _strip_cache_control(block: Any) -> tuple[Any, bool]:
    if isinstance(block, dict) and "cache_control" in block:
        return {k: v for k, v in block.items() if k != "cache_control"}, True
    return block, False


def _segments(body: Json) -> list[tuple[str, bool]]:
    """(serialized segment without cache_control, is a breakpoint) in the API's cache order."""
    segments: list[tuple[str, bool]] = []

    def add(tag: str, block: Any) -> None:
        stripped, breakpoint = _strip_cache_control(block)
        segments.append((json.dumps([tag, stripped], sort_keys=True, separators=(",", ":")), breakpoint))

    for tool in body.get("tools") or []:
        add("tool", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else (system or []):
        add("system", block)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        for index, block in enumerate(blocks):
            add(f"{message.get('role')}:{'start' if index == 0 else 'next'}", block)
    return segments


class PromptCache:
    """Prefixes written by earlier requests (hash → tokens). Used from the server's loop thread only."""

    def __init__(self) -> None:
        self._written: dict[str, int] = {}

    def usage_for(self, body: Json) -> Usage:
        total = estimate_tokens(body)
        segments = _segments(body)
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        prefixes: list[tuple[str, int]] = []  # (hash, tokens) of the prefix ending at each segment
        chars = 0
        for text, _ in segments:
            digest.update(text.encode())
            chars += len(text)
            prefixes.append((digest.copy().hexdigest(), max(1, chars // 4)))
        breakpoints = [i for i, (_, is_breakpoint) in enumerate(segments) if is_breakpoint]
        if not breakpoints:
            return Usage(input_tokens=total)
        read = 0
        for point in breakpoints:
            for index in range(point, max(-1, point - LOOKBACK - 1), -1):
                key, tokens = prefixes[index]
                if key in self._written:
                    read = max(read, tokens)
                    break
        last_tokens = prefixes[breakpoints[-1]][1]
        for point in breakpoints:
            key, tokens = prefixes[point]
            self._written[key] = tokens
        created = max(0, last_tokens - read)
        return Usage(
            input_tokens=max(1, total - read - created),
            cache_read_input_tokens=read,
            cache_creation_input_tokens=created,
        )
