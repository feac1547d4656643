"""Attack rounds 14 and 15: a server named `a__b` named its tool `c` as `mcp__a__b__c`, the name server `a`'s tool
`b__c` has; the first server listed won, the other's tool was left out without a word, and `mcp__a` (every tool of
server `a`) was read as naming server `a__b`'s tools too; so was `github_`'s by `mcp__github`. A server's part of a
name holds no `__` and no `_` at its ends now, and two servers whose names come to one part can't both be."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest

from bridge.mcp.config import ConfigFiles, discover
from bridge.mcp.tools import Calls, tools_of
from bridge.mcp_names import mcp_name, server_of, server_part, server_rule
from tests.test_mcp_config import files, write  # noqa: F401 - the fixture


@pytest.mark.parametrize("server", ["a__b", "a::b", "a..b", "a___b", "a_b", "_a_b_", "a_b__"])
def test_a_servers_part_is_the_whole_server(server: str) -> None:
    name = mcp_name(server, "c")
    assert name == "mcp__a_b__c"
    assert server_of(name) == server_part(server) == "a_b"
    assert server_rule(name) == "mcp__a_b"  # not "mcp__a": a rule about server `a` is not about this one


def test_names_of_two_servers_do_not_meet() -> None:
    assert mcp_name("a", "b__c") == "mcp__a__b__c" != mcp_name("a__b", "c")
    assert server_of(mcp_name("a", "b__c")) == "a"
    assert server_of(mcp_name("github", "_delete_repo")) == "github"  # a tool's own leading `_` stays its own


def test_two_servers_whose_names_meet_cannot_both_be(files: ConfigFiles) -> None:  # noqa: F811
    write(
        files.user_config_dir / "settings.json",
        {"mcpServers": {"github": {"command": "a"}, "github_": {"command": "b"}}},
    )
    entries, problems = discover(files, [], environ={})
    assert [e.name for e in entries] == ["github"]
    assert len(problems) == 1 and "'github_' is left out" in problems[0] and "'github'" in problems[0]


def test_a_name_taken_is_said(caplog: pytest.LogCaptureFixture) -> None:
    taken: set[str] = set()
    calls = cast(Calls, object())
    listed: list[dict[str, Any]] = [{"name": "run"}]
    assert [t.name for t in tools_of(calls, "x.y", listed, taken)] == ["mcp__x_y__run"]
    with caplog.at_level(logging.WARNING, logger="bridge.mcp.tools"):
        assert tools_of(calls, "x:y", listed, taken) == []
    assert "'run' is left out" in caplog.text


@pytest.mark.parametrize("server", ["__", "!!!", "_"])
def test_a_server_named_with_nothing_safe_is_unnamed_and_still_found(server: str) -> None:
    name = mcp_name(server, "t")
    assert name == "mcp__unnamed__t" and server_of(name) == server_part(server) == "unnamed"


def test_long_names_keep_their_server_and_stay_apart() -> None:
    """Round 16: names were cut at the API's 64 characters, so a long server's tools had no server part left (its
    deny rules gave ask) and were all one name; two long servers' tools met, and one's rule allowed the other's."""
    eu0 = "acme-internal-deployment-orchestrator-production-cluster-eu0"
    eu1 = eu0[:-1] + "1"
    tools = ("deploy_everything_now", "rollback", "status")
    names = {mcp_name(server, tool) for server in (eu0, eu1) for tool in tools}
    assert len(names) == 6 and all(len(name) <= 64 for name in names)
    for server in (eu0, eu1):
        for tool in ("deploy_everything_now", "x" * 80):
            name = mcp_name(server, tool)
            assert server_of(name) == server_part(server) and server_rule(name) == f"mcp__{server_part(server)}"
    assert server_part(eu0) != server_part(eu1) and len(server_part(eu0)) <= 40
    assert mcp_name("github", "create_issue") == "mcp__github__create_issue"  # short names as they were
