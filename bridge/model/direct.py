"""The Messages API over httpx2 (the anthropic SDK's own HTTP library), sending exactly the bytes the SDK
sends — request line, headers in the SDK's order and case, the JSON body as the SDK serializes it — and
reading the stream as the SDK reads it, without importing the SDK (seconds of pydantic model building).

What the SDK would send depends on its version: each version this module speaks for has a `Profile` (its API
version, the order of `messages.create`'s body keys, the fields of the content blocks the loop keeps). An SDK
version without a profile, or a setup the profile does not cover (custom headers, proxies), is served by the
SDK itself (`supported()` says why not). tests/test_model_direct.py holds both to the same bytes and events.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpcore2
import httpx2

NESTED = object()
"""A block field whose value is an SDK model of its own (e.g. text citations): a block carrying one is dumped by
the SDK itself (see `dump_block`). The other fields are `str` or `dict` (free JSON objects such as tool input)."""


@dataclass(frozen=True)
class Profile:
    """What one SDK version sends and keeps."""

    api_version: str
    body_keys: tuple[str, ...]  # `messages.create`'s body, in the order the SDK writes it
    # the fields of each content block model in declaration order (model_dump's), each with its kind
    block_fields: Mapping[str, tuple[tuple[str, object], ...]]


PROFILES: dict[str, Profile] = {
    "2.16.0": Profile(
        api_version="2026-10-21",
        body_keys=(
            "max_tokens",
            "messages",
            "model",
            "cache_control",
            "container",
            "diagnostics",
            "inference_geo",
            "metadata",
            "output_config",
            "service_tier",
            "speed",
            "stop_sequences",
            "stream",
            "system",
            "thinking",
            "tool_choice",
            "tools",
        ),
        block_fields={
            "text": (("citations", NESTED), ("text", str), ("type", str)),
            "tool_use": (
                ("id", str),
                ("caller", NESTED),
                ("input", dict),
                ("name", str),
                ("type", str),
                ("toolset_name", str),
            ),
            "thinking": (("signature", str), ("thinking", str), ("type", str)),
            "redacted_thinking": (("data", str), ("type", str)),
        },
    ),
}

FORCE = "AGENT_BRIDGE_MODEL_TRANSPORT"
"""`sdk` makes every request go through the anthropic SDK; `wire` (the default where supported) this module."""


@lru_cache(maxsize=1)
def sdk_version() -> str | None:
    """The installed anthropic SDK's version, read from its `_version.py` (importing it would build the SDK)."""
    spec = find_spec("anthropic")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "_version.py").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", text, re.MULTILINE)
    return match.group(1) if match else None


def supported(environ: Mapping[str, str] | None = None, base_url: str | None = None) -> str | None:
    """None when requests can go on the wire directly; else why the SDK must send them. Decided on what changes
    the request, never on a variable's name: a proxy that applies to the API's host sends requests through the
    SDK (which honours it); `NO_PROXY`, or a proxy the host bypasses, changes nothing."""
    env = os.environ if environ is None else environ
    forced = env.get(FORCE, "").strip().lower()
    if forced == "sdk":
        return f"{FORCE}=sdk"
    version = sdk_version()
    if version not in PROFILES:
        return f"no wire profile for anthropic SDK {version}"
    if "ANTHROPIC_CUSTOM_HEADERS" in env:
        return "ANTHROPIC_CUSTOM_HEADERS is set"
    url = base_url or env.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
    proxy = proxy_for(url, env)
    if proxy is not None:
        return f"{proxy} applies to {urlsplit(url).hostname}"
    return None


def proxy_for(url: str, env: Mapping[str, str]) -> str | None:
    """The variable whose proxy a request to `url` would go through (httpx's rules: `<scheme>_proxy`, then
    `all_proxy`, either case, lower case first; `no_proxy` names hosts that bypass it), or None."""
    parts = urlsplit(url)
    lowered = {name.lower(): name for name in sorted(env) if env[name]}  # lower case last: it wins
    name = lowered.get(f"{parts.scheme}_proxy") or lowered.get("all_proxy")
    if name is None:
        return None
    no_proxy = env.get(lowered["no_proxy"], "") if "no_proxy" in lowered else ""
    if _bypasses(parts.hostname or "", no_proxy):
        return None
    return name


def _bypasses(host: str, no_proxy: str) -> bool:
    """Whether `no_proxy` (comma-separated: `*`, hosts, `.domain` or `domain` for it and its subdomains, IPs,
    each optionally with a port) names `host`."""
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        entry = (
            entry.strip("[]") if entry.startswith("[") else entry.rsplit(":", 1)[0] if entry.count(":") == 1 else entry
        )
        entry = entry.lstrip(".")
        if entry and (host == entry or host.endswith("." + entry)):
            return True
    return False


# ---- the request -------------------------------------------------------------------------------------------


class Unsupported(Exception):
    """This request uses something the profile does not cover: the SDK sends it."""


class StatusError(Exception):
    """The API answered with an error status (or an `event: error` mid-stream): the SDK's `APIStatusError`
    fields, with the same values."""

    def __init__(self, message: str, *, response: httpx2.Response, body: object) -> None:
        super().__init__(message)
        self.message = message
        self.response = response
        self.status_code = response.status_code
        self.body = body


class ConnectionFailure(Exception):
    """No answer (the SDK's `APIConnectionError`; `timed_out`: its `APITimeoutError`), with the same text."""

    def __init__(self, *, timed_out: bool) -> None:
        super().__init__("Request timed out." if timed_out else "Connection error.")
        self.timed_out = timed_out


def _platform_name() -> str:
    """The SDK's `get_platform()`."""
    try:
        system = platform.system().lower()
        machine = platform.machine().lower()
        release = platform.release().lower()
    except Exception:
        return "Unknown"
    if system in ("ios", "ipados") or machine.startswith(("iphone", "ipad")):
        return "iOS"
    if system == "darwin":
        return "MacOS"
    if system == "windows":
        return "Windows"
    if system == "android" or hasattr(sys, "getandroidapilevel") or "android" in release:
        return "Android"
    names = {"linux": "Linux", "freebsd": "FreeBSD", "openbsd": "OpenBSD"}
    if system in names:
        return names[system]
    return f"Other:{system}" if system else "Unknown"


def _architecture() -> str:
    """The SDK's `get_architecture()`."""
    try:
        machine = platform.machine().lower()
    except Exception:
        return "unknown"
    if machine in ("arm64", "aarch64"):
        return "arm64"
    if machine == "arm":
        return "arm"
    if machine == "x86_64":
        return "x64"
    if sys.maxsize <= 2**32:
        return "x32"
    return f"other:{machine}" if machine else "unknown"


def _async_library() -> str:
    try:
        import sniffio

        return str(sniffio.current_async_library())
    except Exception:
        return "false"


def _socket_options() -> list[tuple[int, int, int | bool]]:
    """The SDK's TCP keep-alive settings for its default transport."""
    options: list[tuple[int, int, int | bool]] = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, True)]
    interval = getattr(socket, "TCP_KEEPINTVL", None)
    if interval is not None:
        options.append((socket.IPPROTO_TCP, interval, 60))
    elif sys.platform == "darwin":
        options.append((socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPALIVE", 0x10), 60))
    count = getattr(socket, "TCP_KEEPCNT", None)
    if count is not None:
        options.append((socket.IPPROTO_TCP, count, 5))
    idle = getattr(socket, "TCP_KEEPIDLE", None)
    if idle is not None:
        options.append((socket.IPPROTO_TCP, idle, 60))
    return options


_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
_PREPARED: list[httpx2.AsyncHTTPTransport] = []


_TLS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def _tls() -> ssl.SSLContext:
    """The TLS context the transports of the process share: what `verify=True` builds (`httpcore2`'s default,
    reading `SSL_CERT_FILE`/`SSL_CERT_DIR` as the transport's `trust_env` does), built once for those two.
    Reading the CA certificates is most of a transport's cost (~30 ms here); `serve` built two before the first
    tool result."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    if key not in _TLS:
        _TLS[key] = httpcore2.default_ssl_context()
    return _TLS[key]


def _transport() -> httpx2.AsyncHTTPTransport:
    """The SDK's default transport (its `DefaultAsyncHttpxClient` without proxies)."""
    return httpx2.AsyncHTTPTransport(limits=_LIMITS, socket_options=_socket_options(), verify=_tls())


def prepare() -> None:
    """Do ahead what the first request would (`serve` calls this in its warm-up thread after `initialize`): load
    the connection's modules and build a transport (its TLS context reads the CA certificates: a good part of
    a second on a loaded machine). The next client takes it."""
    import anyio._backends._asyncio
    import anyio.streams.tls  # noqa: F401
    import h11  # noqa: F401
    import httpcore2._backends.anyio  # noqa: F401

    if not _PREPARED:
        _PREPARED.append(_transport())


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class WireClient:
    """`AsyncAnthropic(api_key=..., base_url=..., max_retries=0, timeout=Timeout(total, connect=5, read=stall))`
    for `messages.create(..., stream=True)`, as the SDK version `version` sends it."""

    def __init__(
        self, *, api_key: str, base_url: str | None, timeout: float, stall_timeout: float, version: str | None = None
    ) -> None:
        self.version = version or sdk_version() or ""
        self.profile = PROFILES[self.version]
        if base_url is None:
            base_url = os.environ.get("ANTHROPIC_BASE_URL")
        url = httpx2.URL(base_url if base_url is not None else "https://api.anthropic.com")
        if not url.raw_path.endswith(b"/"):
            url = url.copy_with(raw_path=url.raw_path + b"/")
        self.base_url = url
        self.timeout = httpx2.Timeout(timeout, connect=5.0, read=stall_timeout)
        self._api_key = api_key
        self._stall_timeout = stall_timeout
        self._platform: str | None = None
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                base_url=self.base_url,
                timeout=self.timeout,
                limits=_LIMITS,
                follow_redirects=True,
                mounts={},
                transport=_PREPARED.pop() if _PREPARED else _transport(),
            )
        return self._client

    def headers(self) -> httpx2.Headers:
        """The SDK's header layers folded as its `build_headers` folds them."""
        if self._platform is None:
            self._platform = _platform_name()
        layer: dict[str, str] = {
            "x-stainless-timeout": "NOT_GIVEN",
            "x-stainless-retry-count": "0",
            "x-stainless-read-timeout": str(self._stall_timeout),
            "Accept": "application/json",
            "Content-Type": "application/json",
            "User-Agent": f"AsyncAnthropic/Python {self.version}",
            "X-Stainless-Lang": "python",
            "X-Stainless-Package-Version": self.version,
            "X-Stainless-OS": self._platform,
            "X-Stainless-Arch": _architecture(),
            "X-Stainless-Runtime": platform.python_implementation(),
            "X-Stainless-Runtime-Version": platform.python_version(),
            "Authorization": f"Bearer {self._api_key}",
            "X-Stainless-Async": f"async:{_async_library()}",
            "anthropic-version": self.profile.api_version,
        }
        headers = httpx2.Headers(encoding="utf-8")
        for name, value in layer.items():
            headers[name] = value
        return headers

    def body(self, params: Mapping[str, Any]) -> bytes:
        """`params` (with `stream`) as the SDK writes them. Raises `Unsupported` for a key `create` does not take
        (the SDK raises its own error for it)."""
        unknown = [key for key in params if key not in self.profile.body_keys]
        if unknown:
            raise Unsupported(f"parameters {', '.join(unknown)}")
        ordered = {key: params[key] for key in self.profile.body_keys if key in params}
        # a lone surrogate (text cut mid-character somewhere) can't be UTF-8: sent as U+FFFD's stand-in, not a crash
        return _ENCODER.encode(ordered).encode("utf-8", "replace")

    def build(self, params: Mapping[str, Any], *, trace: Any = None) -> httpx2.Request:
        """The request for `params`; `trace` (httpcore's trace hook: it sends nothing) sees the I/O happen."""
        content = self.body({**params, "stream": True})
        url = self.base_url.copy_with(raw_path=self.base_url.raw_path + b"v1/messages")
        extensions: dict[str, Any] = {"sni_hostname": url.host.replace("_", "-")} if "_" in url.host else {}
        if trace is not None:
            extensions["trace"] = trace
        return self._http().build_request(
            method="post",
            url=url,
            headers=self.headers(),
            content=content,
            timeout=self.timeout,
            extensions=extensions or None,
        )

    def settings(self) -> tuple[str, str, httpx2.Timeout, float]:
        """What the bytes and the I/O depend on, besides the request itself."""
        return self._api_key, str(self.base_url), self.timeout, self._stall_timeout

    async def send(self, request: httpx2.Request) -> httpx2.Response:
        """The response, its body not yet read; `StatusError` / `ConnectionFailure` as the SDK raises them."""
        try:
            response = await self._http().send(request, stream=True)
        except httpx2.TimeoutException as error:
            raise ConnectionFailure(timed_out=True) from error
        except Exception as error:
            raise ConnectionFailure(timed_out=False) from error
        if response.is_success:
            return response
        if not response.is_closed:
            await response.aread()
        raise status_error(response)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def status_error(response: httpx2.Response) -> StatusError:
    """The SDK's `_make_status_error_from_response`."""
    if response.is_closed and not response.is_stream_consumed:
        return StatusError(f"Error code: {response.status_code}", response=response, body=None)
    text = response.text.strip()
    body: object = text
    try:
        body = json.loads(text)
        message = f"Error code: {response.status_code} - {body}"
    except Exception:
        message = text or f"Error code: {response.status_code}"
    return StatusError(message, response=response, body=body)


# ---- the stream --------------------------------------------------------------------------------------------


class _Sse:
    __slots__ = ("data", "event")

    def __init__(self, event: str | None, data: str) -> None:
        self.event = event or None
        self.data = data


class _Decoder:
    """The SDK's `SSEDecoder` (itself from httpx-sse): the same chunking, line splitting and fields."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []
        self._last_event_id: str | None = None
        self._retry: int | None = None

    async def events(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[_Sse]:
        async for chunk in self._chunks(chunks):
            for raw_line in chunk.splitlines():
                sse = self._decode(raw_line.decode("utf-8"))
                if sse is not None:
                    yield sse

    @staticmethod
    async def _chunks(iterator: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        data = b""
        async for chunk in iterator:
            for line in chunk.splitlines(keepends=True):
                data += line
                if data.endswith((b"\r\r", b"\n\n", b"\r\n\r\n")):
                    yield data
                    data = b""
        if data:
            yield data

    def _decode(self, line: str) -> _Sse | None:
        if not line:
            if not self._event and not self._data and not self._last_event_id and self._retry is None:
                return None
            sse = _Sse(self._event, "\n".join(self._data))
            self._event, self._data, self._retry = None, [], None
            return sse
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self._last_event_id = value
        elif name == "retry":
            with contextlib.suppress(TypeError, ValueError):
                self._retry = int(value)
        return None


async def stream_events(response: httpx2.Response) -> AsyncIterator[Any]:
    """Each event's parsed `data`, as the SDK's `AsyncStream` yields them (pings and nameless events skipped,
    `event: error` raised as a `StatusError`); the response is closed at the end, whatever happens."""
    try:
        async for sse in _Decoder().events(response.aiter_bytes()):
            if sse.event == "ping" or sse.event is None:
                continue
            if sse.event == "error":
                body: object = sse.data
                try:
                    body = json.loads(sse.data)
                    message = f"{body}"
                except Exception:
                    message = sse.data or f"Error code: {response.status_code}"
                raise StatusError(message, response=response, body=body)
            if not sse.data:
                continue
            yield json.loads(sse.data)
    finally:
        await response.aclose()


def field(obj: object, name: str) -> Any:
    """`obj.name` as the SDK's loosely built models answer it: a missing field is None; anything but an object
    has no fields (AttributeError, as on the SDK's side)."""
    if not isinstance(obj, dict):
        raise AttributeError(f"{type(obj).__name__} has no field {name!r}")
    return obj.get(name)


def dump_block(block: object, profile: Profile) -> dict[str, Any] | None:
    """The SDK's `content_block.model_dump(mode="json", exclude_none=True)` for the block types in the profile:
    the model's fields in declaration order, then unknown keys in arrival order, None values left out. None when
    only the SDK can say (another block type, or a field that is a model of its own)."""
    if not isinstance(block, dict):
        raise AttributeError(f"{type(block).__name__} has no model_dump")
    kind = block.get("type")
    fields = profile.block_fields.get(kind) if isinstance(kind, str) else None
    if fields is None:
        return None
    names = {name for name, _ in fields}
    dumped: dict[str, Any] = {}
    for name, field_kind in fields:
        value = block.get(name)
        if value is None:
            continue
        if field_kind is NESTED or type(value) is not field_kind:
            return None  # a model, or a value the SDK's validation or serializer would coerce or warn about
        dumped[name] = value
    for name, value in block.items():
        if name not in names and value is not None:
            dumped[name] = value
    return dumped


def sdk_dump_block(event: dict[str, Any]) -> dict[str, Any]:
    """The SDK's own dump of a `content_block_start` event's block (imports the SDK: rare blocks only)."""
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    built: Any = construct_type(type_=RawMessageStreamEvent, value=event)
    dumped: dict[str, Any] = built.content_block.model_dump(mode="json", exclude_none=True)
    return dumped
