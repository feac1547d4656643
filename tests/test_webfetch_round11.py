"""Attack round 11 on WebFetch (found by a helper, each proven in a real run):

- a `WebFetch(domain:classic.example)` rule allowed `https://claßic.example/` (Python's IDNA 2003 codec maps `ß` to
  `ss`), and the request went to `xn--claic-nqa.example`, another domain;
- an 818-byte body sent `Content-Encoding: gzip, gzip` inflated to 400 MB in the bridge before the 5 MB cap was
  looked at (the HTTP client inflates each chunk whole, through every layer);
- 80,000 empty `<a></a>` made the HTML reading quadratic (36 s of CPU for 640 kB), past the fetch's timeout.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bridge.abort import Abort
from bridge.tools.base import ToolContext, ToolError
from bridge.tools.notebook_edit import NotebookEditInput, NotebookEditTool
from bridge.tools.web_fetch import WebFetchInput, WebFetchTool, _Markdown, domain
from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide

ZEROS = 200 * 1024 * 1024  # what the bomb inflates to
BOMB = gzip.compress(b"\0" * ZEROS, compresslevel=9)
ROUTES: dict[str, tuple[bytes, dict[str, str]]] = {
    "/bomb": (BOMB, {"Content-Encoding": "gzip", "Content-Type": "text/plain"}),
    "/stacked": (gzip.compress(gzip.compress(b"hello" * 1000)), {"Content-Encoding": "gzip, gzip"}),
    "/br": (b"\x0b\x02\x80hello\x03", {"Content-Encoding": "br", "Content-Type": "text/plain"}),
    "/small": (gzip.compress(b"<p>hello <b>world</b></p>"), {"Content-Encoding": "gzip", "Content-Type": "text/html"}),
    "/members": (gzip.compress(b"one ") + gzip.compress(b"two"), {"Content-Encoding": "gzip"}),
}


@pytest.fixture
def server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body, headers = ROUTES[self.path]
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(200)
                headers = {"Content-Type": "text/plain", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)


async def fetch(ctx: ToolContext, url: str) -> str:
    result = await WebFetchTool().call(WebFetchInput(url=url, prompt="p"), ctx)
    assert isinstance(result.content, str)
    return result.content


@pytest.mark.parametrize(
    ("url", "rule", "host"),
    [
        ("https://claßic.example/leak?d=1", "classic.example", "xn--claic-nqa.example"),
        ("https://xn--zca.example/", "ss.example", "xn--zca.example"),
        ("https://ς.example/", "σ.example", "xn--3xa.example"),
    ],
)
def test_a_domain_rule_allows_only_the_host_the_request_goes_to(
    found: Workspace, url: str, rule: str, host: str
) -> None:
    data = {"url": url, "prompt": "p"}
    assert domain(WebFetchInput(**data)) == host
    assert decide(engine(found, "default", allow=(f"WebFetch(domain:{rule})",)), "WebFetch", data).behavior == "ask"
    # the rule naming the host as the request goes to it allows it, however it is written
    same = decide(engine(found, "default", allow=(f"WebFetch(domain:{host})",)), "WebFetch", data)
    assert same.behavior == "allow"


async def test_a_compressed_body_is_inflated_no_further_than_the_cap(ctx: ToolContext, server: str) -> None:
    tracemalloc.start()
    try:
        text = await fetch(ctx, f"{server}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "body cut at 5" in text
    assert peak < 60 * 1024 * 1024, f"{peak / 2**20:.0f} MiB held while reading a 200 MiB bomb"


async def test_stacked_and_unknown_encodings_are_refused(ctx: ToolContext, server: str) -> None:
    with pytest.raises(ToolError, match="stacked content encodings"):
        await fetch(ctx, f"{server}/stacked")
    with pytest.raises(ToolError, match="content encoding 'br'"):
        await fetch(ctx, f"{server}/br")


async def test_gzip_bodies_still_read(ctx: ToolContext, server: str) -> None:
    assert "hello **world**" in await fetch(ctx, f"{server}/small")
    assert "one two" in await fetch(ctx, f"{server}/members")  # every member (the client's decoder read the first)


def test_empty_elements_leave_nothing_to_walk_back_over() -> None:
    parser = _Markdown("")
    parser.feed("<p>x</p>" + "<a></a> " * 80_000)
    parser.close()
    assert len(parser.out) < 10 and parser.markdown().strip() == "x"


async def test_a_notebook_whose_version_is_not_a_number_is_refused_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": [], "nbformat": "4"}))
    ctx = ToolContext(cwd=tmp_path, abort=Abort(), data_dir=tmp_path)
    from bridge.tools.base import FileSnapshot

    st = path.stat()
    ctx.read_files[path] = FileSnapshot(mtime_ns=st.st_mtime_ns, size=st.st_size)
    data = NotebookEditInput(notebook_path=str(path), new_source="x", cell_type="code", edit_mode="insert")
    with pytest.raises(ToolError, match="nbformat '4'"):
        await NotebookEditTool().call(data, ctx)


# --- attack round 12: round 11's fixes attacked again ----------------------------------------------------------


@pytest.mark.parametrize("url", ["http://2130706433:18931/b", "http://127.1:18931/c", "http://0x7f000001/"])
def test_ipv4_in_its_older_forms_is_judged_as_the_address_it_connects_to(found: Workspace, url: str) -> None:
    data = {"url": url, "prompt": "p"}
    assert domain(WebFetchInput(**data)) == "127.0.0.1"
    denied = engine(found, "default", allow=("WebFetch",), deny=("WebFetch(domain:127.0.0.1)",))
    assert decide(denied, "WebFetch", data).behavior == "deny"


def test_links_inside_links_are_their_text() -> None:
    from bridge.tools.web_fetch import html_to_markdown

    page = "<a href=./>" * 12_000 + "x" + "</a>" * 12_000
    parser = _Markdown("http://h/" + "p" * 1900 + "/x")
    parser.feed(page)
    parser.close()
    assert parser.markdown().count("](") == 1  # one link, not one per level (each re-joined the page: quadratic)
    assert (
        html_to_markdown("<a href=/a>one <a href=/b>two</a> three</a>", "http://h/")[1] == "[one two three](http://h/a)"
    )


def test_a_given_up_parse_ends_at_its_next_tag() -> None:
    from bridge.tools.web_fetch import html_to_markdown

    stop = threading.Event()
    stop.set()
    _title, text = html_to_markdown("<p>one</p>" * 100_000, "", stop=stop)
    assert text == ""  # stopped at once: a fetch that timed out leaves no parse running
