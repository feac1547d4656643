"""How deep a message's JSON may nest: light on purpose (no pygls), so that the first message, read before the
server is loaded (bridge/server/fast_initialize.py), is judged by the same rule as every later one."""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 64  # nesting of a message's JSON (editor messages nest < 10 deep)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests containers deeper than `limit` (a scalar message, e.g. `null` or `123`, does not)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
