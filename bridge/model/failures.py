"""What a request to the model API that failed says to a person: the cause — the key, the API's load, the
network, TLS, a proxy — and what to do about it, in one line. The terminal prints it and the server sends it
to the editor (the panel shows it): one wording for both, made here, from what the transport raised (either
transport: the SDK's exceptions and ours chain the same network errors)."""

from __future__ import annotations

import os
import socket
import ssl
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from bridge.model.types import ModelError

KEY_HELP = "Set ANTHROPIC_API_KEY to a valid key (console.anthropic.com → API Keys)"
CA_HELP = "If a company proxy or security software inspects TLS, point SSL_CERT_FILE at its CA certificate (a PEM file)"


def status_failure(status: int, detail: str, *, model: str, attempts: int, retry_after: float | None) -> ModelError:
    """The API answered `status` (after `attempts` attempts, for the statuses worth retrying)."""
    if status == 401:
        return ModelError(
            f"Authentication failed (401): the API key was refused ({detail}). {KEY_HELP}.",
            kind="authentication",
            status=status,
        )
    if status == 403:
        return ModelError(
            f"Permission denied by the API (403): {detail}. The key works but may not do this: check "
            "its workspace and organization in console.anthropic.com.",
            kind="authentication",
            status=status,
        )
    if status == 404:
        return ModelError(
            f"Model {model!r} was not found (404): {detail}. Set AGENT_BRIDGE_MODEL (or `model` in "
            "settings) to a model your key can use.",
            kind="not_found",
            status=status,
        )
    if status == 407:
        return ModelError(
            f"The proxy asked for a sign-in (407): {detail}. Put the user and password in the proxy "
            "variable (HTTPS_PROXY=http://user:password@host:port).",
            kind="proxy",
            status=status,
        )
    if status == 429:
        hint = f"Try again in {retry_after:.0f} s" if retry_after else "Try again shortly"
        return ModelError(
            f"Rate limited by the API (429) after {attempts} attempts: {detail}. {hint}, or ask for a "
            "higher limit in console.anthropic.com.",
            kind="rate_limited",
            status=status,
        )
    if status == 529:
        return ModelError(
            f"The API is overloaded (529) after {attempts} attempts: the trouble is on Anthropic's "
            "side. Try again in a minute (status.anthropic.com says how it is going).",
            kind="overloaded",
            status=status,
        )
    if status == 400:
        return ModelError(f"The API rejected the request (400): {detail}", kind="invalid_request", status=status)
    if status == 413:  # the request itself is too large: sending it again can't help, what made it so must go
        return ModelError(
            f"The API refused the request as too large (413): {detail}", kind="invalid_request", status=status
        )
    return ModelError(
        f"The API failed ({status}) after {attempts} attempts: {detail}. Try again shortly.", kind="api", status=status
    )


def connection_failure(error: BaseException, *, url: str, environ: Mapping[str, str] | None = None) -> ModelError:
    """No answer came from `url`: through a proxy, a TLS failure, or a network one (a name that does not resolve,
    a refused connection, a timeout), as the chain of `error` tells."""
    env = os.environ if environ is None else environ
    url = _shown(url)
    parts = urlsplit(url)
    host = parts.hostname or url
    port = parts.port or (443 if parts.scheme == "https" else 80)
    cause = _cause(error)
    proxy = _proxy(url, env)
    if proxy is not None and cause[0] != "tls":
        variable, where = proxy
        return ModelError(
            f"Cannot reach the model API through the proxy {where} (from {variable}): {cause[1]}. "
            f"Check {variable}, or add {host} to NO_PROXY to connect directly.",
            kind="proxy",
        )
    kind, what = cause
    if kind == "tls":
        return ModelError(f"The secure connection to the model API at {url} failed: {what}. {CA_HELP}.", kind="tls")
    if kind == "dns":
        return ModelError(
            f"Cannot reach the model API at {url}: the name {host} does not resolve (no network, or a "
            "wrong ANTHROPIC_BASE_URL). Check your connection.",
            kind="connection",
        )
    if kind == "refused":
        return ModelError(
            f"Cannot reach the model API at {url}: the connection was refused (nothing listens at "
            f"{host}:{port}). Check ANTHROPIC_BASE_URL.",
            kind="connection",
        )
    if kind == "timeout":
        return ModelError(
            f"Cannot reach the model API at {url}: no answer in time (the network or a firewall drops "
            "the connection). Check your connection; a proxy goes in HTTPS_PROXY.",
            kind="connection",
        )
    return ModelError(
        f"Cannot reach the model API at {url}: {what}. Check your network connection and ANTHROPIC_BASE_URL.",
        kind="connection",
    )


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _cause(error: BaseException) -> tuple[str, str]:
    """(kind, a few words): `tls`, `dns`, `refused`, `timeout`, or `other` with the deepest error's own text."""
    chain = list(_chain(error))
    for link in chain:
        if isinstance(link, ssl.SSLCertVerificationError):
            return "tls", f"its certificate is not trusted ({link.verify_message or link.reason})"
        if isinstance(link, ssl.SSLError):
            return "tls", (link.reason or str(link)).replace("_", " ").lower()
        text = str(link)
        if "CERTIFICATE_VERIFY_FAILED" in text:
            return "tls", "its certificate is not trusted (" + text.split("certificate verify failed:")[-1].split(
                "(_ssl"
            )[0].strip(" :") + ")"
        if (
            isinstance(link, socket.gaierror)
            or "Name or service not known" in text
            or "Temporary failure in name resolution" in text
            or "nodename nor servname" in text
        ):
            return "dns", "the name does not resolve"
        if isinstance(link, ConnectionRefusedError) or "Connection refused" in text or "Errno 111" in text:
            return "refused", "the connection was refused"
        if isinstance(link, TimeoutError) or type(link).__name__.endswith("Timeout"):
            return "timeout", "no answer in time"
    deepest = next((str(link).strip() for link in reversed(chain) if str(link).strip()), "")
    return "other", deepest.rstrip(".") or "no answer"


def _proxy(url: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    """The variable whose proxy a request to `url` goes through, and the proxy's address (its credentials
    left out), or None."""
    from bridge.model.direct import proxy_for

    variable = proxy_for(url, env)
    if variable is None:
        return None
    parts = urlsplit(env[variable] if "://" in env[variable] else f"http://{env[variable]}")
    where = f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    return variable, where


def _shown(url: str) -> str:
    """`url` as an error shows it: a password in it is not (`https://user:…@gateway/`)."""
    from bridge.log_redaction import redact

    return redact(url)
