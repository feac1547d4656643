"""What the bridge says about an MCP server never carries the server's secrets (attack round 8): the values of its
secret-looking env entries and headers, and the credentials in its URL.

A server quotes its config in whatever form its language prints it — a repr doubles a backslash, JSON escapes a
quote, a connection URL percent-encodes — so matching the value as written is not enough. Each secret becomes
one pattern in which every character may appear as itself or escaped (any number of backslashes before it,
`\\n`, `\\xNN`, `\\uNNNN`), percent-encoded (either case) or, for a space, as `+`; and its base64 is matched
too. A URL the bridge shows keeps its scheme, host, port and path (what tells servers apart) and loses its
userinfo, query values and fragment; so does any URL in a server's own text. Then the log's redaction runs
(token shapes, `NAME=value` with a secret-looking NAME): a server may print a token it was never given.

Values shorter than MIN_CHARS are left alone: `AWS_REGION=eu` would otherwise blank every "eu".
"""

from __future__ import annotations

import base64
import logging
import re
import weakref
from collections.abc import Iterable, Iterator
from urllib.parse import unquote

from bridge.log_redaction import SHOWN, redact
from bridge.secrets import looks_secret

MIN_CHARS = 6
_SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_URL_TAIL = re.compile(r"[^\s'\"<>`|\\]*[^\s'\"<>`|\\.,:;)]")


def urls(text: str) -> Iterator[tuple[int, int]]:
    """The URLs in `text` (a scheme, `://`, and what follows up to a space or quote, not the sentence's stop), as the
    spans `re.finditer(r"\\b[A-Za-z][A-Za-z0-9+.\\-]*://[^\\s'\"<>`|\\\\]*[^\\s'\"<>`|\\\\.,:;)]", text)` finds them, in
    linear time: that pattern tried every letter of a long run like
    `a.a.a.a…` as a scheme's start and scanned the run to its end each time, O(n^2) on a server's stderr line
    (attack round 20). Here each `://` is found first, and its scheme's leftmost start in the run before it."""
    done = 0
    at = text.find("://")
    while at >= 0:
        start = at
        while start > done and text[start - 1] in _SCHEME:
            start -= 1
        begin = next(
            (
                p
                for p in range(start, at)
                if text[p] in _LETTERS and (p == 0 or not (text[p - 1].isalnum() or text[p - 1] == "_"))
            ),
            None,
        )
        tail = _URL_TAIL.match(text, at + 3) if begin is not None else None
        if begin is not None and tail is not None:
            yield begin, tail.end()
            done = tail.end()
            at = text.find("://", done)
        else:
            at = text.find("://", at + 1)


# scheme://[userinfo@]host[:port]path[?query][#fragment], by hand: `urlsplit` refuses a host part with brackets
_PARTS = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?:(?P<userinfo>[^/?#]*)@)?(?P<host>[^/?#@]*)(?P<path>[^?#]*)"
    r"(?:\?(?P<query>[^#]*))?(?:#(?P<fragment>.*))?",
    re.DOTALL,
)
_ESCAPED_CONTROL = {"\n": "n", "\r": "r", "\t": "t"}


class Shown:
    """The redaction of one server's messages, made once from its configuration."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values: set[str] = set()
        for secret in secrets:
            values |= _parts(secret)
        kept = sorted((v for v in values if len(v) >= MIN_CHARS), key=len, reverse=True)
        literal = {form for value in kept for form in _base64_forms(value)}
        alternatives = [re.escape(f) for f in sorted(literal, key=len, reverse=True)] + [_pattern(v) for v in kept]
        self._pattern = re.compile("|".join(alternatives)) if alternatives else None

    @classmethod
    def of(cls, env: Iterable[tuple[str, str]], headers: Iterable[tuple[str, str]], url: str) -> Shown:
        """A server's: its secret-looking env entries and headers (`X-Api-Key` is asked as `X_API_KEY`), and its
        URL's userinfo, query values and fragment."""
        secrets = [value for name, value in env if looks_secret(name)]
        secrets += [value for name, value in headers if looks_secret(name.replace("-", "_"))]
        return cls([*secrets, *_url_secrets(url)])

    def text(self, text: str) -> str:
        """`text` (a server's stderr, an error about it) as it may be shown or logged."""
        if self._pattern is not None:
            text = self._pattern.sub(SHOWN, text)
        pieces, last = [], 0
        for begin, end in urls(text):  # the log's redaction would take a URL's query for one field's value
            pieces += [redact(text[last:begin]), shown_url(text[begin:end])]
            last = end
        return "".join([*pieces, redact(text[last:])])

    def watch_logs(self) -> None:
        """The SDK's and its HTTP client's own log records (a request's URL at INFO, a message at DEBUG) are
        redacted with this server's secrets too, for as long as this object lives."""
        if self._pattern is not None:
            _LIBRARY_LOGS.shown.add(self)

    def url(self, url: str) -> str:
        """`url` as `shown_url` shows it, with any of the secrets left in its host or path redacted too."""
        shown = shown_url(url)
        return shown if self._pattern is None else self._pattern.sub(SHOWN, shown)


def shown_url(url: str) -> str:
    """`url` with its userinfo, query values and fragment redacted; scheme, host, port and path kept."""
    parts = _PARTS.fullmatch(url)
    if parts is None:  # not shaped like a URL: nothing of it can be told safe
        return SHOWN
    userinfo = f"{SHOWN}@" if parts["userinfo"] is not None else ""
    shown = parts["scheme"] + userinfo + redact(parts["host"] + parts["path"])  # a token as a path segment
    if parts["query"] is not None:
        shown += "?" + "&".join(_query_item(item) for item in parts["query"].split("&"))
    return shown + (f"#{SHOWN}" if parts["fragment"] else "")


class _LibraryLogs(logging.Filter):
    """On the loggers of the libraries that talk to the servers: every live server's redaction, in turn."""

    LOGGERS = ("httpx2", "httpx", "client", "mcp.client.sse", "mcp.client.streamable_http", "mcp.client.stdio")

    def __init__(self) -> None:
        super().__init__()
        self.shown: weakref.WeakSet[Shown] = weakref.WeakSet()
        for name in self.LOGGERS:
            logging.getLogger(name).addFilter(self)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record that can't be formatted is the handler's to report
            return True
        cleaned = message
        for shown in list(self.shown):
            cleaned = shown.text(cleaned)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_LIBRARY_LOGS = _LibraryLogs()


def _query_item(item: str) -> str:
    name, equals, value = item.partition("=")
    if not equals:
        return SHOWN if name else ""
    return f"{name}={SHOWN}" if value else f"{name}="


def _url_secrets(url: str) -> list[str]:
    """What in a URL may be a credential: the password (or the user, a token in that place), query values, the
    fragment; as written and decoded."""
    parts = _PARTS.fullmatch(url.strip())
    if parts is None:
        return []
    userinfo, query, fragment = parts["userinfo"] or "", parts["query"] or "", parts["fragment"] or ""
    found = [userinfo, *userinfo.partition(":")[::2]]
    found += [item.partition("=")[2] or item for item in query.split("&")]
    found += [fragment.partition("=")[2] or fragment]
    return [form for value in found if value for form in {value, unquote(value)}]


def _parts(secret: str) -> set[str]:
    """A secret and what it holds that may be printed alone: the token after `Bearer `/`Basic `, a connection
    URL's password and query values."""
    found = {secret, secret.strip()}
    words = secret.split()
    if len(words) == 2:
        found.add(words[1])
    if "://" in secret:
        found.update(_url_secrets(secret))
    return {value for value in found if value}


def _pattern(value: str) -> str:
    """Every character of `value` as itself or as a program may have escaped or encoded it."""
    return "".join(_character(c) for c in value)


def _character(c: str) -> str:
    encoded = c.encode("utf-8", errors="surrogatepass")
    percent = "".join(f"%{_hex(b)}" for b in encoded)
    forms = [re.escape(c), percent]
    if c == " ":
        forms.append(r"\+")
    if c in _ESCAPED_CONTROL:
        forms.append(re.escape("\\" + _ESCAPED_CONTROL[c]))
    if not c.isascii() or not c.isprintable():
        forms.append("".join(rf"\\+x{_hex(b)}" for b in encoded))  # a bytes literal's
        forms.append(rf"\\+x{_hex(ord(c))}" if ord(c) < 0x100 else rf"\\+u{_hex(ord(c), 4)}")
        if ord(c) > 0xFFFF:
            forms.append(rf"\\+U{_hex(ord(c), 8)}")
    return rf"(?:\\*(?:{'|'.join(forms)}))"


def _hex(number: int, digits: int = 2) -> str:
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{number:0{digits}x}")


def _base64_forms(value: str) -> set[str]:
    raw = value.encode("utf-8", errors="surrogatepass")
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return forms | {form.rstrip("=") for form in forms}
