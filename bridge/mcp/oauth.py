"""OAuth for remote MCP servers, on the SDK's `OAuthClientProvider` (discovery, dynamic registration, PKCE,
refresh).

The authorization URL goes to the person (the editor shows it; see `on_url`); the browser comes back to a
loopback listener on 127.0.0.1 that this module runs only while a sign-in is pending. Tokens and the
registered client are stored per server URL under the data dir (`mcp-auth/`, directory 0700, files 0600), so
the next start signs in silently (or refreshes).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

if TYPE_CHECKING:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

log = logging.getLogger(__name__)

CALLBACK_PATH = "/callback"
DONE_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>Signed in</title>"
    b"<p>Signed in. You can close this tab and go back to your editor.</p>"
)


class SignInError(Exception):
    """The sign-in did not complete (timed out, the browser reported an error, the port was taken)."""


def token_file(data_dir: Path, name: str, url: str) -> Path:
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:40]
    return data_dir / "mcp-auth" / f"{safe}-{digest}.json"


class FileTokenStorage:
    """The SDK's `TokenStorage` in one JSON file, readable by the user only."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: dict[str, Any]) -> None:
        data = self._read()
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        tmp = self.path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = self._read().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write("client", client_info.model_dump(mode="json", exclude_none=True))

    def redirect_port(self) -> int | None:
        """The loopback port of the stored registration's redirect URI (a new port means a new registration)."""
        client = self._read().get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        if isinstance(uris, list) and uris and isinstance(uris[0], str):
            return urlparse(uris[0]).port
        return None


class LoopbackCallback:
    """One pending sign-in's redirect target: `http://127.0.0.1:<port>/callback?code=...&state=...`."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[dict[str, str]] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def open(self) -> None:
        await self.close()
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        except OSError as error:
            raise SignInError(f"the sign-in callback port {self.port} on 127.0.0.1 is taken ({error})") from None

    async def wait(self, timeout: float) -> dict[str, str]:
        assert self._result is not None, "open() first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), timeout)
        except TimeoutError:
            raise SignInError(f"no sign-in within {timeout:g} s (the mcp.authTimeout setting)") from None
        finally:
            await self.close()

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 10)
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass  # headers
            parts = request.decode("latin-1").split()
            target = urlparse(parts[1]) if len(parts) >= 2 else None
            if target is None or target.path != CALLBACK_PATH:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            query = {k: v[0] for k, v in parse_qs(target.query).items()}
            body = (
                DONE_PAGE
                if "code" in query
                else (b"<!doctype html><p>Sign-in failed: " + query.get("error", "no code").encode()[:200] + b"</p>")
            )
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            if self._result is not None and not self._result.done():
                self._result.set_result(query)
        except (TimeoutError, OSError, UnicodeError):
            pass
        finally:
            with contextlib.suppress(Exception):
                await writer.drain()
                writer.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def oauth_provider(
    server_url: str,
    storage: FileTokenStorage,
    on_url: Callable[[str], Awaitable[None]],
    on_back: Callable[[], None],
    *,
    timeout: float,
) -> OAuthClientProvider:
    """The SDK's provider for `server_url`: the URL to open goes to `on_url`; the code comes back through a
    loopback callback on the port of the stored registration (or a free one, registered anew), then `on_back`
    (whether it came or not)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    port = storage.redirect_port() or free_port()
    callback = LoopbackCallback(port)

    async def redirect(url: str) -> None:
        await callback.open()
        await on_url(url)

    async def come_back() -> AuthorizationCodeResult:
        try:
            query = await callback.wait(timeout)
        finally:
            on_back()
        if "code" not in query:
            raise SignInError(f"the sign-in was refused: {query.get('error_description') or query.get('error')}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": "agent-bridge",
            "redirect_uris": [callback.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
    )
    return OAuthClientProvider(server_url, metadata, storage, redirect_handler=redirect, callback_handler=come_back)
