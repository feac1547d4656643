"""Attack round 14: a server named `a__b` named its tool `c` as `mcp__a__b__c`, the name server `a`'s tool `b__c`
has; the first server listed won, the other's tool was left out without a word, and `mcp__a` (every tool of
server `a`) was read as naming server `a__b`'s tools too. A server's part of a name holds no `__` now."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from bridge.mcp.tools import Calls, tools_of
from bridge.mcp_names import mcp_name, server_of, server_part, server_rule


@pytest.mark.parametrize("server", ["a__b", "a::b", "a..b", "a___b", "a_b"])
def test_a_servers_part_is_the_whole_server(server: str) -> None:
    name = mcp_name(server, "c")
    assert name == "mcp__a_b__c"
    assert server_of(name) == server_part(server) == "a_b"
    assert server_rule(name) == "mcp__a_b"  # not "mcp__a": a rule about server `a` is not about this one


def test_names_of_two_servers_do_not_meet() -> None:
    assert mcp_name("a", "b__c") == "mcp__a__b__c" != mcp_name("a__b", "c")
    assert server_of(mcp_name("a", "b__c")) == "a"


def test_a_name_taken_is_said(caplog: pytest.LogCaptureFixture) -> None:
    taken: set[str] = set()
    calls = cast(Calls, object())
    listed: list[dict[str, Any]] = [{"name": "run"}]
    assert [t.name for t in tools_of(calls, "x.y", listed, taken)] == ["mcp__x_y__run"]
    with caplog.at_level(logging.WARNING, logger="bridge.mcp.tools"):
        assert tools_of(calls, "x:y", listed, taken) == []
    assert "'run' is left out" in caplog.text
