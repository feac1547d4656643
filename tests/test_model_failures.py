"""A failed request to the model API names its cause and what to do, in one line (issue 28 item 2): a refused
key, an overloaded API, the network (a name that does not resolve, nothing listening), TLS (a certificate not
trusted), a proxy — each made for real (the offline API's faults, a closed port, a TLS server with a
self-signed certificate, a proxy that is not there), through both transports where both can get there. The
terminal and the editor show this text as it is (bridge/cli, bridge/server)."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import ModelError, ModelRequest
from bridge.offline import OfflineServer

TRANSPORTS = ["wire", "sdk"]
CLASS_NAMES = ("Error(", "Exception", "Traceback", "httpx", "httpcore")
AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


async def failure(base_url: str, transport: str = "wire", **options: Any) -> ModelError:
    model = AnthropicModel(
        api_key="k",
        base_url=base_url,
        max_retries=0,
        transport=transport,  # type: ignore[arg-type]
        **options,
    )
    request = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "hi"}])
    try:
        with pytest.raises(ModelError) as caught:
            async for _ in model.stream(request):
                pass
    finally:
        await model.aclose()
    message = str(caught.value)
    assert "\n" not in message and not any(name in message for name in CLASS_NAMES), message
    return caught.value


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_refused_key_says_to_set_the_key(transport: str) -> None:
    with OfflineServer({"responses": [{"fault": {"type": "status", "status": 401}}]}) as server:
        error = await failure(server.base_url, transport)
    assert error.kind == "authentication"
    assert str(error).startswith("Authentication failed (401): the API key was refused")
    assert "Set ANTHROPIC_API_KEY to a valid key" in str(error)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_overloaded_api_says_whose_trouble_it_is_and_when_to_try(transport: str) -> None:
    scenario = {"responses": [{"fault": {"type": "status", "status": 529, "retry_after": 0.01, "times": 5}}]}
    with OfflineServer(scenario) as server:
        error = await failure(server.base_url, transport)
    assert error.kind == "overloaded"
    assert (
        "The API is overloaded (529) after 1 attempts: the trouble is on Anthropic's side. Try again in a "
        "minute" in str(error)
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_nothing_listening_is_a_refused_connection(transport: str) -> None:
    port = closed_port()
    error = await failure(f"http://127.0.0.1:{port}", transport)
    assert error.kind == "connection"
    assert str(error) == (
        f"Cannot reach the model API at http://127.0.0.1:{port}: the connection was refused "
        f"(nothing listens at 127.0.0.1:{port}). Check ANTHROPIC_BASE_URL."
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_name_that_does_not_resolve_is_named(transport: str) -> None:
    error = await failure("http://api.name.invalid", transport)
    assert error.kind == "connection"
    assert "the name api.name.invalid does not resolve" in str(error) and "Check your connection" in str(error)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate for 127.0.0.1 (and its key, in the same PEM file)."""
    folder = tmp_path_factory.mktemp("tls")
    pem = folder / "self-signed.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(folder / "key.pem"),
            "-out",
            str(folder / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )
    pem.write_text((folder / "cert.pem").read_text() + (folder / "key.pem").read_text())
    return pem


@contextlib.contextmanager
def tls_server(pem: Path) -> Iterator[int]:
    """Accepts TLS connections with `pem`'s certificate, then closes each (no HTTP: only the handshake counts)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pem)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                continue
            with contextlib.suppress(OSError), context.wrap_socket(sock, server_side=True):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_untrusted_certificate_is_a_tls_failure_with_the_way_out(
    transport: str, certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with tls_server(certificate) as port:
        error = await failure(f"https://127.0.0.1:{port}", transport)
        assert error.kind == "tls"
        assert str(error).startswith(
            f"The secure connection to the model API at https://127.0.0.1:{port} failed: "
            "its certificate is not trusted (self"
        )
        assert "point SSL_CERT_FILE at its CA certificate" in str(error)
        # the control: trusting that certificate, as the message says, gets past TLS (to a server that says
        # nothing: another failure, not TLS)
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate))
        trusted = await failure(f"https://127.0.0.1:{port}", transport)
        assert trusted.kind != "tls", str(trusted)


async def test_a_proxy_that_fails_is_named_without_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    port = closed_port()
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:hunter2@127.0.0.1:{port}")
    for name in ("NO_PROXY", "no_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    error = await failure("https://api.anthropic.com", "sdk")  # a proxy sends requests through the SDK
    assert error.kind == "proxy"
    assert str(error) == (
        f"Cannot reach the model API through the proxy http://127.0.0.1:{port} (from HTTPS_PROXY): "
        "the connection was refused. Check HTTPS_PROXY, or add api.anthropic.com to NO_PROXY to "
        "connect directly."
    )
    assert "hunter2" not in str(error)


def test_the_terminal_shows_the_cause_in_one_line(tmp_path: Path) -> None:
    scenario = tmp_path / "refused.json"
    scenario.write_text('{"responses": [{"fault": {"type": "status", "status": 401, "times": 9}}]}')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_"))}
    env |= {
        "HOME": str(tmp_path),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    done = subprocess.run(
        [AGENT_BRIDGE, "run", "--offline", str(scenario), "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("Error:")]
    assert line.startswith("Error: Authentication failed (401): the API key was refused (")
    assert line.endswith("Set ANTHROPIC_API_KEY to a valid key (console.anthropic.com → API Keys).")
    assert "Traceback" not in done.stderr
