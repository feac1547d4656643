"""`run` sends its first model request ahead (bridge/first_request.py): the prediction reads the settings as
`BridgeConfig` does and the settings files SettingsStore reads; it is only sent when it can be sure; a request
sent ahead that differs from the loop's is discarded, never used."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge import first_request
from bridge.config import DEFAULT_MODEL, BridgeConfig
from bridge.mcp import present
from bridge.model.anthropic_client import AnthropicModel
from bridge.model.types import BlockDelta, ModelRequest
from bridge.offline import OfflineServer
from bridge.permissions.settings import SettingsStore
from tests.e2e.harness import server_env


def test_the_defaults_are_bridge_configs() -> None:
    config = BridgeConfig()
    assert first_request.DEFAULT_MODEL == DEFAULT_MODEL == config.model
    assert config.max_tokens == first_request.DEFAULT_MAX_TOKENS
    assert config.stall_timeout == first_request.DEFAULT_STALL_TIMEOUT


def test_hooks_come_from_the_files_settings_store_reads(tmp_path: Path) -> None:
    env = {"AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config")}
    store = SettingsStore(tmp_path, user_config_dir=tmp_path / "config")
    ours = [f.path for f in store.files if not f.claude]
    assert first_request.hook_sources(tmp_path, env) == ours


def test_the_settings_files_are_the_ones_settings_store_reads(tmp_path: Path) -> None:
    """session/new is answered early only when none of these exist (bridge/server/early_session.py): a file the
    store reads and this list missed could change the answer (a folder's mode)."""
    env = {
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    store = SettingsStore(tmp_path, user_config_dir=tmp_path / "config", claude_home=tmp_path / "claude")
    assert sorted(first_request.settings_files(tmp_path, env)) == sorted(f.path for f in store.files)


VALUES = st.one_of(
    st.just(""),
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=8),
    st.sampled_from(["1", "0", "42", "1.5", "-3", "1e3", " 7", "inf", "nan", "0.0", "90", "abc", "1_000", "٣"]),
)


@settings(max_examples=200, deadline=None)
@given(model=VALUES, stall=VALUES, key=VALUES, url=VALUES, override=st.sampled_from([None, "m", "", "x y"]))
def test_the_settings_read_ahead_are_bridge_configs(
    model: str, stall: str, key: str, url: str, override: str | None
) -> None:
    env = {
        "AGENT_BRIDGE_MODEL": model,
        "AGENT_BRIDGE_STALL_TIMEOUT": stall,
        "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_BASE_URL": url,
    }
    overrides: dict[str, Any] = {"allow": ["Read"], "ask": [], "deny": []}
    if override is not None:
        overrides["model"] = override
    ahead = first_request.settings_of(overrides, env)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        config, _ = BridgeConfig.load(overrides)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if ahead is not None:  # unsure is always allowed; wrong never
        real = {
            "model": config.model,
            "api_key": config.api_key,
            "base_url": config.base_url,
            "max_tokens": config.max_tokens,
            "stall_timeout": config.stall_timeout,
        }
        assert ahead == real


def _empty_home(tmp_path: Path) -> dict[str, str]:
    """A user with no agent types, skills or plugins: what a new session offers is what ships."""
    return {
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }


def test_the_shipped_schemas_are_what_a_new_session_offers() -> None:
    """Issue 26: the first run after install sends ahead like the tenth (nothing is cached per user). When a
    tool changes, this fails: run scripts/gen_tool_schemas.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gen_tool_schemas", Path(__file__).parent.parent / "scripts" / "gen_tool_schemas.py"
    )
    assert spec is not None and spec.loader is not None
    script: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert first_request.shipped_schemas() == json.loads(json.dumps(script.current(), ensure_ascii=False))


def test_the_shipped_input_schemas_are_what_pydantic_makes_of_the_models() -> None:
    """The input schemas a process sends without asking pydantic (bridge/tool_inputs.json) are pydantic's own, for
    every tool a new session has; when a tool's input changes, this fails: run scripts/gen_tool_schemas.py."""
    import importlib.util

    from bridge.tools import base

    spec = importlib.util.spec_from_file_location(
        "gen_tool_schemas", Path(__file__).parent.parent / "scripts" / "gen_tool_schemas.py"
    )
    assert spec is not None and spec.loader is not None
    script: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    shipped = json.loads(base.SHIPPED_INPUTS.read_text(encoding="utf-8"))
    assert shipped == json.loads(json.dumps(script.current_inputs(), ensure_ascii=False))
    assert len(shipped) >= 12


def test_the_folders_that_change_the_tools_are_the_loaders(tmp_path: Path) -> None:
    from bridge.agents.loader import agent_dirs
    from bridge.skills import skill_dirs

    env = _empty_home(tmp_path)
    dirs = {"user_config_dir": Path(env["AGENT_BRIDGE_CONFIG_DIR"]), "claude_home": Path(env["CLAUDE_CONFIG_DIR"])}
    saved = os.environ.get("HOME")
    os.environ["HOME"] = env["HOME"]
    try:
        expected = [*agent_dirs(tmp_path, **dirs), *(d for d, _ in skill_dirs(tmp_path, **dirs))]
    finally:
        os.environ["HOME"] = saved or ""
    assert sorted(first_request.tool_sources(tmp_path, env)) == sorted(expected)


def test_a_prediction_needs_everything_sure(tmp_path: Path) -> None:
    env = _empty_home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    predicted = first_request.predict("hi", ws, {"folderTrust": "trusted"}, env)
    assert predicted is not None
    request, _ = predicted
    assert [t["name"] for t in request.tools][-1] == "Agent" and request.tools[-1]["cache_control"] == {
        "type": "ephemeral"
    }
    assert first_request.predict("/compact", ws, {}, env) is None  # maybe a command
    assert first_request.predict("hi", ws / "missing", {}, env) is None
    assert first_request.predict("hi", ws, {"maxTokens": 300}, env) is None
    assert first_request.predict("hi", ws, {}, {**env, "AGENT_BRIDGE_STALL_TIMEOUT": "1e3"}) is None
    (ws / ".claude" / "skills" / "lint").mkdir(parents=True)
    assert first_request.predict("hi", ws, {}, env) is None  # a skill: the session offers a Skill tool
    (ws / ".claude" / "skills" / "lint").rmdir()
    (ws / ".agent-bridge").mkdir()
    (ws / ".agent-bridge" / "settings.json").write_text(json.dumps({"hooks": {}}))
    assert first_request.predict("hi", ws, {}, env) is None  # a hook may change or block the prompt


async def test_a_request_sent_ahead_that_differs_is_discarded_and_never_used() -> None:
    with OfflineServer(
        {
            "responses": [
                {"content": [{"type": "text", "text": "first"}], "stop_reason": "end_turn"},
                {"content": [{"type": "text", "text": "second"}], "stop_reason": "end_turn"},
            ]
        }
    ) as server:
        early = AnthropicModel(api_key="k", base_url=server.base_url)
        guess = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "guess"}])
        written = early.send_ahead(guess)
        assert written is not None
        await asyncio.wait_for(written.wait(), 10)
        model = AnthropicModel(api_key="k", base_url=server.base_url)
        assert model.adopt(early)
        actual = ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "actual"}])
        texts = [e.text for e in [e async for e in model.stream(actual)] if isinstance(e, BlockDelta)]
        await model.aclose()
        await early.aclose()
    assert "".join(texts) == "second"  # the guess's answer was not used
    assert [r.body["messages"][0]["content"] for r in server.requests] == ["guess", "actual"]


async def test_other_settings_discard_a_request_sent_ahead() -> None:
    with OfflineServer({"responses": []}) as server:
        early = AnthropicModel(api_key="k", base_url=server.base_url)
        written = early.send_ahead(
            ModelRequest(model="m", system=[], tools=[], messages=[{"role": "user", "content": "x"}])
        )
        assert written is not None
        other = AnthropicModel(api_key="another", base_url=server.base_url)
        assert not other.adopt(early)
        await other.aclose()
        await early.aclose()


@pytest.mark.parametrize("change", ["agent", "memory"])
async def test_run_sends_ahead_from_a_fresh_home_and_not_when_the_user_changed_the_tools(
    tmp_path: Path, change: str
) -> None:
    """A fresh HOME: the first run sends ahead (cold equals warm). A memory file: the guess reads it as the session
    does, and is right. An agent type of the user's changes the Agent tool: nothing is sent ahead."""
    ws, data = tmp_path / "ws", tmp_path / "data"
    ws.mkdir()
    data.mkdir()
    answers = [{"content": [{"type": "text", "text": f"answer {n}"}], "stop_reason": "end_turn"} for n in range(3)]
    with OfflineServer({"responses": answers}) as model:
        env = server_env(model, data)

        async def run() -> str:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bridge.cli.main",
                "run",
                "hello",
                "--non-interactive",
                "--cwd",
                str(ws),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), 120)
            assert process.returncode == 0, err.decode()
            return out.decode() + err.decode()

        first = await run()
        assert "sent ahead" in first, first
        if change == "agent":
            agents = data / "home" / ".claude" / "agents"
            agents.mkdir(parents=True)
            (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: Reviews.\n---\nReview.\n")
        else:
            (ws / "CLAUDE.md").write_text("remember this\n")  # read by the guess and by the session alike
        output = await run()
        requests = model.requests
    assert len(requests) == 2, "the guess, when sent, was right: one request per run"
    if change == "agent":
        assert "sent ahead" not in output and "reviewer" in requests[1].raw.decode(), output
    else:
        assert "sent ahead" in output and "answer 1" in output, output


def test_mcp_servers_anywhere_mean_no_guess_and_an_empty_list_is_none(tmp_path: Path) -> None:
    env = _empty_home(tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    claude_json = Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    claude_json.parent.mkdir(parents=True, exist_ok=True)
    # Claude Code writes an empty list for every project it opened: still a guess (the control)
    claude_json.write_text(json.dumps({"mcpServers": {}, "projects": {str(ws.resolve()): {"mcpServers": {}}}}))
    assert first_request.predict("hi", ws, {}, env) is not None
    server = {"command": "srv"}
    for state in ({"mcpServers": {"s": server}}, {"projects": {str(ws.resolve()): {"mcpServers": {"s": server}}}}):
        claude_json.write_text(json.dumps(state))
        assert first_request.predict("hi", ws, {}, env) is None, state  # the servers' tools join the request
    claude_json.write_text('{"mcpServers": {"s": ')
    assert first_request.predict("hi", ws, {}, env) is None  # unsure
    claude_json.write_text("{not json")
    assert first_request.predict("hi", ws, {}, env) is not None  # no server in it, whatever else is wrong
    claude_json.unlink()
    for path in present.server_files(ws, env):
        path[0].parent.mkdir(parents=True, exist_ok=True)
        path[0].write_text(json.dumps({"mcpServers": {"s": server}}))
        assert first_request.predict("hi", ws, {}, env) is None, path
        path[0].unlink()
    assert first_request.predict("hi", ws, {}, env) is not None


def test_the_mcp_files_looked_at_are_the_ones_discover_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bridge.mcp.config import MCP_JSON, PROJECT_SETTINGS, ConfigFiles

    env = _empty_home(tmp_path)
    for name in ("HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.setenv(name, env[name])
    files = ConfigFiles(tmp_path.resolve(), Path(env["AGENT_BRIDGE_CONFIG_DIR"]), Path(env["CLAUDE_CONFIG_DIR"]))
    assert [path for path, _ in present.server_files(tmp_path, env)] == [
        files.local_settings,
        files.cwd / MCP_JSON,
        files.cwd / PROJECT_SETTINGS,
        files.user_config_dir / "settings.json",
    ]
    assert present.claude_json(env) == files.claude_json
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert present.claude_json({"HOME": env["HOME"]}) == files.claude_json
