"""What the bridge logs never carries a credential: its stderr may be saved, shared or shown by an editor that does
not redact (at DEBUG, pygls logs every message in full, `initialize`'s `apiKey` among them; an MCP server may print
its token to the stderr whose tail an error quotes).

A filter on the stderr handler rewrites a record whose text (or traceback) holds a credential: the values of the
bridge's own credential variables (as written, and as a repr or bytes literal escapes them), anything shaped like
a well-known token (`sk-ant-…`, `ghp_…`, `xoxb-…`, `AKIA…`), a URL's password (`https://user:…@host`), the
value of a field named like one (`apiKey`,
`Authorization`, `x-api-key`) and of `NAME=value` where NAME looks secret (`GITHUB_TOKEN=…`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from bridge.secrets import looks_secret

_TOKEN_SHAPES = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{6,}|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|npm_[A-Za-z0-9]{30,}"
)
_FIELD = re.compile(
    r"""(?P<name>['"]?(?:api[_-]?key|auth[_-]?token|authorization|x-api-key|access[_-]?token)['"]?\s*[:=]\s*)"""
    r"""(?P<quote>(?:\[\s*+)?['"]?)(?P<value>(?:Bearer\s+)?[^'"\s,}\]]+)""",
    re.IGNORECASE,
)
_ASSIGNMENT = re.compile(r"\b(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>[^\s'\"|;,]+)")
# a URL's password (`https://user:secret@gateway/`: sent as Basic authorization in place of the key)
_USERINFO = re.compile(r"(?P<head>\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)(?P<password>[^/\s]+)@", re.IGNORECASE)  # (to the
# last `@` before the host, as a URL parser reads it: a password may hold a raw `@`)
SHOWN = "[redacted]"


class Redacting(logging.Filter):
    """Rewrites the record's message (made once, arguments folded in) and its traceback where they hold one."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        super().__init__()
        forms: set[str] = set()
        for value in values:
            if len(value) >= 8:  # as written, and as `repr`, `unicode_escape` and a bytes literal show it
                forms |= {value, repr(value)[1:-1], value.encode("unicode_escape").decode(), str(value.encode())[2:-1]}
        self.values = sorted(forms, key=len, reverse=True)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record that can't be formatted is the handler's to report
            return True
        cleaned = redact(message, self.values)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info), self.values)
        elif record.exc_text:
            record.exc_text = redact(record.exc_text, self.values)
        return True


def redact(text: str, values: Iterable[str] = ()) -> str:
    for value in values:
        text = text.replace(value, SHOWN)
    text = _TOKEN_SHAPES.sub(SHOWN, text)
    text = _USERINFO.sub(lambda m: f"{m['head']}***@", text)  # (a URL still: brackets would read as an IPv6 host)
    text = _FIELD.sub(lambda m: f"{m['name']}{m['quote']}{SHOWN}" if m["value"] != SHOWN else m[0], text)
    return _ASSIGNMENT.sub(
        lambda m: f"{m['name']}={SHOWN}" if looks_secret(m["name"]) and m["value"] != SHOWN else m[0], text
    )


def install(values: Iterable[str]) -> None:
    """On every handler of the root logger (the stderr one `basicConfig` made): `values` (the bridge's credentials,
    bridge/environment.py's `credential_values`)."""
    values = list(values)
    for handler in logging.getLogger().handlers:
        handler.addFilter(Redacting(values))
