"""What the bridge logs never carries its credentials: its stderr may be saved, shared or shown by an editor that
does not redact (at DEBUG, pygls logs every message in full, `initialize`'s `apiKey` among them).

A filter on the stderr handler rewrites a record whose text holds a credential: the values of the bridge's own
credential variables, anything shaped like an Anthropic key (`sk-ant-…`), and the value of a field named like
one (`apiKey`, `api_key`, `authToken`, `Authorization`, `x-api-key`) in the dict or JSON text a library logged.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable

_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}")
_FIELD = re.compile(
    r"""(?P<name>['"]?(?:api[_-]?key|auth[_-]?token|authorization|x-api-key|access[_-]?token)['"]?\s*[:=]\s*)"""
    r"""(?P<quote>['"]?)(?P<value>(?:Bearer\s+)?[^'"\s,}]+)""",
    re.IGNORECASE,
)
SHOWN = "[redacted]"


class Redacting(logging.Filter):
    """Rewrites the record's message (made once, arguments folded in) where it holds a credential."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        super().__init__()
        self.values = sorted({v for v in values if len(v) >= 8}, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record that can't be formatted is the handler's to report
            return True
        cleaned = redact(message, self.values)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def redact(text: str, values: Iterable[str] = ()) -> str:
    for value in values:
        text = text.replace(value, SHOWN)
    text = _KEY_SHAPE.sub(SHOWN, text)
    return _FIELD.sub(lambda m: f"{m['name']}{m['quote']}{SHOWN}" if m["value"] != SHOWN else m[0], text)


def install(credentials: Iterable[str]) -> None:
    """On every handler of the root logger (the stderr one `basicConfig` made): the named variables' values."""
    values = [os.environ[name] for name in credentials if os.environ.get(name)]
    for handler in logging.getLogger().handlers:
        handler.addFilter(Redacting(values))
