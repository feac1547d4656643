"""WebFetch: fetch a URL and give the model its readable text.

Caps on time (one deadline for the whole fetch), size (the body is streamed and reading stops at the cap)
and redirects (followed on the same host only: a redirect to another host is reported back, so the
permission engine sees the new domain when the model fetches it). http is upgraded to https except for
loopback hosts. HTML becomes markdown-ish text via the stdlib parser. There is no secondary model here
to answer `prompt` over the page, so the page text is returned with the prompt as what to look for.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import threading
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import anyio
from pydantic import Field

from bridge.abort import cancel_on_abort
from bridge.permissions.facts import RuleForm
from bridge.tools.base import Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import looks_binary

if TYPE_CHECKING:
    import httpx  # imported by the calls that fetch: a tenth of a second no session pays until it fetches

MAX_URL_CHARS = 2_000
REDIRECT_CODES = {301, 302, 303, 307, 308}
USER_AGENT = "agent-bridge/0.1 (coding agent; WebFetch)"


class WebFetchInput(ToolInput):
    url: str = Field(description="The fully formed URL to fetch (http is upgraded to https)")
    prompt: str = Field(description="What to look for in the page")


# ---------------------------------------------------------------- URLs


def parse_url(raw: str) -> httpx.URL:
    """The URL to fetch, or a `ToolError`. http becomes https unless the host is loopback."""
    import httpx

    if len(raw) > MAX_URL_CHARS:
        raise ToolError(f"The URL is longer than {MAX_URL_CHARS} characters.")
    try:
        url = httpx.URL(raw.strip())
    except (httpx.InvalidURL, TypeError) as exc:
        raise ToolError(f"Invalid URL {raw!r}: {exc}") from None
    if url.scheme not in ("http", "https"):
        raise ToolError(f"Invalid URL {raw!r}: give a full http:// or https:// URL.")
    if not url.host:
        raise ToolError(f"Invalid URL {raw!r}: it has no host.")
    if url.userinfo:
        raise ToolError("URLs with a user name or password are not fetched; remove the credentials.")
    numeric = _legacy_ipv4(url.host)
    if numeric is not None:  # `127.1`, `2130706433`, `0x7f000001` connect to 127.0.0.1: judged (and sent) as that
        url = url.copy_with(host=numeric)
    if url.scheme == "http" and not is_loopback(url.host):
        url = url.copy_with(scheme="https")
    return url


def _legacy_ipv4(host: str) -> str | None:
    """The dotted quad a host in one of IPv4's older forms (fewer parts, decimal, hex or octal) connects to; None
    for a name, an IPv6 address, or a dotted quad already."""
    if not host or not re.fullmatch(r"[0-9a-fA-FxX.]+", host) or not host[0].isdigit():
        return None
    import socket

    try:
        canonical = socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None
    return canonical if canonical != host else None


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def domain(data: WebFetchInput) -> str:
    """The host a fetch goes to ('' if the URL is invalid): what the permission engine's domain rules judge."""
    try:
        return _ascii_host(parse_url(data.url))
    except ToolError:
        return ""


def _ascii_host(url: httpx.URL) -> str:
    """The host as the request goes to it: the HTTP client's own IDNA 2008 form (`xn--…`). Its Unicode form was
    judged after Python's IDNA 2003 codec, which maps `ß` to `ss`: `claßic.example` passed a rule for
    `classic.example`, and the request went to `xn--claic-nqa.example`."""
    try:
        return url.raw_host.decode("ascii").lower()
    except UnicodeDecodeError:
        return url.host.lower()


def _origin(url: httpx.URL) -> tuple[str, int | None]:
    host = _ascii_host(url).removeprefix("www.")
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return host, port


def same_site(a: httpx.URL, b: httpx.URL) -> bool:
    """A redirect that may be followed: same host (ignoring `www.`) and port, no downgrade to http."""
    if b.scheme not in ("http", "https") or b.userinfo or (a.scheme == "https" and b.scheme == "http"):
        return False
    if a.scheme == "http" and b.scheme == "https":  # an upgrade: compare hosts only
        return _origin(a)[0] == _origin(b)[0]
    return _origin(a) == _origin(b)


# ---------------------------------------------------------------- HTML to text


_BLOCK = {
    "p", "blockquote", "table", "section", "article", "main", "header", "footer", "figure", "ul", "ol", "dl",
    "address", "details", "fieldset", "form",
}  # fmt: skip
_LINE = {"div", "tr", "dt", "dd", "caption", "summary", "figcaption", "option"}
_SKIP = {"script", "style", "noscript", "template", "svg", "nav", "head", "iframe", "canvas", "select", "object"}
_VOID = {"br", "img", "hr", "meta", "link", "input", "area", "base", "col", "embed", "source", "track", "wbr"}
_INLINE = {"code": "`", "strong": "**", "b": "**", "em": "*", "i": "*"}  # the same mark opens and closes


class _Markdown(HTMLParser):
    """Readable text from HTML: headings as `#`, links as `[text](url)`, lists, code blocks, tables as
    `a | b` rows; scripts, styles, navigation and the head (except the title) dropped."""

    def __init__(self, base_url: str, stop: threading.Event | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.base_url = base_url
        self.stop = stop  # set: the fetch was given up (timeout, cancel): the next tag ends the parse
        self.out: list[str] = []
        self.size = 0  # characters emitted (roughly the text's length)
        self.title = ""
        self._skip = 0
        self._in_title = False
        self._pre = 0
        self._lists: list[list[Any]] = []  # [tag, next number]
        self._links: list[tuple[int, str]] = []  # (index into out, href)
        self._cells = 0

    # output helpers
    def _tail(self) -> str:
        for piece in reversed(self.out):
            if piece:
                return piece[-1]
        return "\n"

    def _newlines(self, n: int) -> None:
        if not self.out:
            return
        text = "".join(self.out[-3:])
        have = len(text) - len(text.rstrip("\n"))
        if have < n:
            self._emit("\n" * (n - have))

    def _emit(self, text: str) -> None:
        if not text:  # (80,000 empty `<a></a>` made `_tail` walk back over them all at every space: 36 s of CPU)
            return
        self.out.append(text)
        self.size += len(text)

    # parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.stop is not None and self.stop.is_set():
            raise _Stopped
        if tag == "title":
            self._in_title = True
            return
        if tag in _SKIP:
            self._skip += 1
            return
        if self._skip:
            return
        attr = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag):
            self._newlines(2)
            self._emit("#" * int(tag[1]) + " ")
        elif tag in ("ul", "ol"):
            self._newlines(1 if self._lists else 2)  # a nested list continues its item
            self._lists.append([tag, 1])
        elif tag in _BLOCK:
            self._newlines(2)
        elif tag in _LINE:
            self._newlines(1)
            if tag == "tr":
                self._cells = 0
        elif tag == "br":
            self._emit("\n")
        elif tag == "hr":
            self._newlines(2)
            self._emit("---")
            self._newlines(2)
        elif tag == "li":
            self._newlines(1)
            indent = "  " * max(0, len(self._lists) - 1)
            if self._lists and self._lists[-1][0] == "ol":
                marker = f"{self._lists[-1][1]}. "
                self._lists[-1][1] += 1
            else:
                marker = "- "
            self._emit(indent + marker)
        elif tag == "pre":
            self._newlines(2)
            self._emit("```\n")
            self._pre += 1
        elif tag in _INLINE and not self._pre:
            self._emit(_INLINE[tag])
        elif tag in ("td", "th"):
            if self._cells:
                self._emit(" | ")
            self._cells += 1
        elif tag == "a":
            # a link inside a link is its text (12,000 nested `<a>` joined the page again at every level: quadratic)
            self._links.append((len(self.out), attr.get("href") or "") if not self._links else (-1, ""))
        elif tag == "img" and attr.get("alt"):
            self._emit(f"![{attr['alt']}]({urljoin(self.base_url, attr.get('src') or '')})")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
            return
        if tag in _SKIP:
            self._skip = max(0, self._skip - 1)
            return
        if self._skip or tag in _VOID:
            return
        if tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._newlines(1 if self._lists else 2)
        elif re.fullmatch(r"h[1-6]", tag) or tag in _BLOCK:
            self._newlines(2)
        elif tag in _LINE or tag == "li":
            self._newlines(1)
        elif tag == "pre" and self._pre:
            self._pre -= 1
            self._newlines(1)
            self._emit("```")
            self._newlines(2)
        elif tag in _INLINE and not self._pre:
            self._emit(_INLINE[tag])
        elif tag == "a" and self._links:
            start, href = self._links.pop()
            if start < 0:
                return
            text = "".join(self.out[start:]).strip()
            del self.out[start:]
            if href and not href.startswith(("#", "javascript:")) and text:
                self._emit(f"[{text}]({urljoin(self.base_url, href)})")
            else:
                self._emit(text)

    def handle_data(self, data: str) -> None:
        if self.stop is not None and self.stop.is_set():
            raise _Stopped
        if self._in_title:
            self.title += data
            return
        if self._skip:
            return
        if self._pre:
            self._emit(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self._tail() in "\n " or self._tail() == "":
            text = text.lstrip()
        if text:
            self._emit(text)

    def markdown(self) -> str:
        text = "".join(self.out)
        text = re.sub(r"[ \t]+\n", "\n", text)
        return re.sub(r"\n{3,}", "\n\n", text).strip()


class _Stopped(Exception):
    """The parse was given up (its fetch timed out or was cancelled)."""


def html_to_markdown(
    html: str, base_url: str = "", *, enough: int | None = None, stop: threading.Event | None = None
) -> tuple[str, str]:
    """(title, readable text) of an HTML document. With `enough`, parsing stops (the stdlib parser does
    about 1 MB/s) once well over that many characters of text exist: the text is then longer than `enough`
    but not the whole page. `stop` set: the parse ends at its next tag or text (what was made so far)."""
    parser = _Markdown(base_url, stop)
    step = 8 * 1024
    try:
        for start in range(0, len(html), step):
            parser.feed(html[start : start + step])
            if enough is not None and parser.size > enough + 4096:
                break
        else:
            parser.close()
    except _Stopped:
        pass
    return " ".join(parser.title.split()), parser.markdown()


# ---------------------------------------------------------------- fetching


_TEXTUAL = re.compile(
    r"^(text/|application/(json|xml|javascript|x-javascript|ecmascript|x-sh|toml|yaml|x-yaml))|\+(json|xml)$"
)


ACCEPT_ENCODING = "gzip, deflate"  # what `_BoundedDecoder` reads (brotli and zstd can't be bounded as well)


class _BoundedDecoder:
    """One content encoding (gzip or deflate, or none), inflated at most `room` bytes at a time. Stacked encodings
    (`gzip, gzip`: a bomb's way past a cap on the outer layer) and others are refused."""

    def __init__(self, header: str, url: str) -> None:
        encodings = [e.strip().lower() for e in header.split(",") if e.strip() and e.strip().lower() != "identity"]
        if len(encodings) > 1:
            raise ToolError(f"{url} was sent with stacked content encodings ({header}); it is not read.")
        self.kind = encodings[0] if encodings else None
        if self.kind not in (None, "gzip", "x-gzip", "deflate"):
            raise ToolError(f"{url} was sent with the content encoding {self.kind!r}, which WebFetch does not read.")
        self._inflate: Any = self._new() if self.kind else None
        self._first = True

    def _new(self, raw_deflate: bool = False) -> Any:
        import zlib

        if self.kind in ("gzip", "x-gzip"):
            return zlib.decompressobj(zlib.MAX_WBITS | 16)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw_deflate else zlib.MAX_WBITS)

    def decode(self, raw: bytes, room: int) -> bytes:
        """What `raw` inflates to, at most `room` bytes (the rest of this chunk is dropped: the body is cut)."""
        import zlib

        if self._inflate is None:
            return raw
        out: list[bytes] = []
        pending = raw
        while pending and room > 0:
            try:
                piece = self._inflate.decompress(pending, room)
            except zlib.error as error:
                if self._first and self.kind == "deflate":  # a server that sends raw deflate (no zlib header)
                    self._first = False
                    self._inflate = self._new(raw_deflate=True)
                    continue
                raise ToolError(f"The response could not be decompressed ({self.kind}): {error}") from None
            self._first = False
            out.append(piece)
            room -= len(piece)
            if self._inflate.eof and self._inflate.unused_data and self.kind != "deflate":
                pending = self._inflate.unused_data  # another gzip member follows
                self._inflate = self._new()
            else:
                pending = self._inflate.unconsumed_tail
        return b"".join(out)


def _decode(body: bytes, response: httpx.Response, is_html: bool) -> str:
    charset = response.charset_encoding
    if charset is None and is_html:
        meta = re.search(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_-]+)""", body[:4096], re.IGNORECASE)
        charset = meta.group(1).decode("ascii") if meta else None
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name
        return body.decode("utf-8", errors="replace")


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n} bytes"


class WebFetchTool(Tool[WebFetchInput]):
    name = "WebFetch"
    input_model = WebFetchInput
    description = (
        "Fetch a URL and return its content as readable text (HTML converted to markdown). prompt says "
        "what you are looking for. http URLs are upgraded to https. A redirect to another host is reported "
        "rather than followed: fetch the new URL with another call. Large pages are truncated. Read-only; "
        "for local files use Read."
    )
    search_hint = "download web page url http content"
    kind = "fetch"
    interrupt_behavior = "cancel"
    max_result_chars = 100_000
    rule_form = RuleForm("domain")

    def __init__(
        self,
        *,
        timeout_s: float = 20.0,
        max_bytes: int = 5 * 1024 * 1024,
        max_chars: int = 40_000,
        max_redirects: int = 5,
    ) -> None:
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.max_redirects = max_redirects

    def is_read_only(self, data: WebFetchInput) -> bool:
        return True

    def permission_host(self, data: WebFetchInput) -> str | None:
        """The host this call will fetch from, exactly (`WebFetch(domain:HOST)` rules judge it)."""
        return domain(data) or None

    async def validate_input(self, data: WebFetchInput, ctx: ToolContext) -> str | None:
        try:
            parse_url(data.url)
        except ToolError as exc:
            return str(exc)
        return None

    def user_facing_title(self, data: WebFetchInput) -> str:
        return f"Fetch {data.url}"

    async def call(self, data: WebFetchInput, ctx: ToolContext) -> ToolResult:
        import httpx

        url = parse_url(data.url)
        result: ToolResult | None = None
        with cancel_on_abort(ctx.abort):
            try:
                with anyio.fail_after(self.timeout_s):
                    result = await self._fetch(url, data.prompt)
            except TimeoutError:
                raise ToolError(f"Fetching {url} timed out after {self.timeout_s:g} s.") from None
            except httpx.HTTPError as exc:
                raise ToolError(f"Fetching {url} failed: {type(exc).__name__}: {exc or 'no detail'}") from None
        ctx.abort.raise_if_aborted()
        assert result is not None
        return result

    async def _fetch(self, url: httpx.URL, prompt: str) -> ToolResult:
        import httpx

        timeout = httpx.Timeout(self.timeout_s)
        headers = {
            "User-Agent": USER_AGENT,
            "Accept": "text/html, text/markdown, text/plain, */*;q=0.5",
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        # Proxies from the environment apply to the web, not to this machine's own loopback servers.
        async with httpx.AsyncClient(timeout=timeout, headers=headers, trust_env=not is_loopback(url.host)) as client:
            current = url
            for _ in range(self.max_redirects + 1):
                async with client.stream("GET", current) as response:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_CODES and location:
                        target = current.join(location)
                        if not same_site(current, target):
                            return self._redirect_notice(url, target, response.status_code, prompt)
                        current = target
                        continue
                    body, cut = await self._read_capped(response)
                    return await self._result(current, response, body, cut, prompt)
        raise ToolError(f"Too many redirects (more than {self.max_redirects}) fetching {url}.")

    async def _read_capped(self, response: httpx.Response) -> tuple[bytes, bool]:
        """The body, decoded here and never past `max_bytes` (+1, to know it was cut): the HTTP client's decoders
        inflate each chunk whole, through every encoding listed, and an 818-byte `gzip, gzip` body became 400 MB
        in memory before the cap was looked at."""
        decoder = _BoundedDecoder(response.headers.get("content-encoding", ""), str(response.url))
        chunks: list[bytes] = []
        size = 0
        async for raw in response.aiter_raw():
            chunk = decoder.decode(raw, self.max_bytes + 1 - size)
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_bytes:
                return b"".join(chunks)[: self.max_bytes], True
        return b"".join(chunks), False

    def _redirect_notice(self, original: httpx.URL, target: httpx.URL, status: int, prompt: str) -> ToolResult:
        text = (
            f"REDIRECT DETECTED: {original} redirects (HTTP {status}) to a different host: {target}\n"
            "It was not followed. To get the content, call WebFetch again with:\n"
            f"url: {target}\nprompt: {prompt}"
        )
        return ToolResult(text, raw_output={"url": str(original), "redirect": str(target), "status": status})

    async def _result(
        self, url: httpx.URL, response: httpx.Response, body: bytes, cut: bool, prompt: str
    ) -> ToolResult:
        status = response.status_code
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        sniff = body[:512].lstrip().lower()
        is_html = ctype in ("text/html", "application/xhtml+xml") or (
            not ctype and sniff.startswith((b"<!doctype html", b"<html"))
        )
        if not is_html and not (_TEXTUAL.search(ctype) if ctype else not looks_binary(body)):
            raise ToolError(
                f"{url} returned {ctype or 'binary data'} ({len(body)} bytes), not text; "
                "WebFetch reads web pages and text documents only."
            )
        text = _decode(body, response, is_html)
        title, partial = "", False
        if is_html:
            # A few MB of HTML is CPU work: keep it off the event loop.
            stop = threading.Event()
            try:
                title, text = await anyio.to_thread.run_sync(
                    functools.partial(html_to_markdown, text, str(url), enough=self.max_chars, stop=stop),
                    abandon_on_cancel=True,  # a timeout or a cancel answers at once, and ends the parse (`stop`)
                )
            finally:
                stop.set()
            partial = len(text) > self.max_chars
        if status >= 400:
            excerpt = text[:500].strip()
            raise ToolError(
                f"HTTP {status} {response.reason_phrase} fetching {url}."
                + (f" The page says: {excerpt}" if excerpt else "")
            )
        total = len(text)
        size = f"over {self.max_chars}" if partial else str(total)
        if total > self.max_chars:
            text = text[: self.max_chars] + (
                f"\n\n[Truncated: the page text is {size} chars; this is the first {self.max_chars}.]"
            )
        notes = [f"{status}", ctype or "unknown type", f"{size} chars of text"]
        if cut:
            notes.append(f"body cut at {_size(self.max_bytes)}")
        header = f"Fetched {url} ({', '.join(notes)})."
        if title:
            header += f"\nTitle: {title}"
        header += (
            "\nNo secondary model summarizes pages here; the page text follows. "
            f"Look in it for what was asked: {prompt}"
        )
        raw = {"url": str(url), "status": status, "content_type": ctype, "bytes": len(body), "truncated": cut}
        return ToolResult(f"{header}\n\n{text}", raw_output=raw)
