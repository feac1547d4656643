"""The core tools load when first used (issue 26): a session holds each as a `LazyTool` that knows its name, rule
form and schema without its module, and is the tool itself for anything else."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bridge.tools.registry import CORE_TOOLS, LazyTool, core_tools, rule_grammar, shipped_schema, tool_class
from tests.scripted_run import scripted_run


@pytest.mark.parametrize("entry", CORE_TOOLS, ids=lambda entry: entry.name)
def test_each_entry_is_its_class(entry: object) -> None:
    """What the registry says of a tool before loading it is what the tool's class says."""
    assert isinstance(entry, type(CORE_TOOLS[0]))
    cls = tool_class(entry)
    assert (cls.name, cls.rule_form) == (entry.name, entry.rule_form)
    assert rule_grammar().form(entry.name) == cls.rule_form


def test_a_lazy_tool_answers_as_the_tool_does() -> None:
    for lazy, entry in zip(core_tools(), CORE_TOOLS, strict=True):
        assert isinstance(lazy, LazyTool)
        before = lazy.schema()
        real = tool_class(entry)()
        assert before == real.schema() == shipped_schema(entry.name)
        assert (lazy.description, lazy.kind, lazy.input_model) == (real.description, real.kind, real.input_model)
        assert lazy.schema() == before  # loaded now: the tool's own
        assert lazy.loaded() is lazy.loaded()


def test_each_session_has_its_own_tools() -> None:
    first, second = core_tools(), core_tools()
    for a, b in zip(first, second, strict=True):
        assert isinstance(a, LazyTool) and isinstance(b, LazyTool)
        assert a.loaded() is not b.loaded()


def test_a_new_session_loads_no_tool_module() -> None:
    """Making a session and sending its tools to the model imports no tool's module."""
    code = """
import asyncio, sys, tempfile
from pathlib import Path
from bridge.agent import Agent
from bridge.config import BridgeConfig
from bridge.loop.permission import deny_all
from bridge.session import Frontend

async def main():
    root = Path(tempfile.mkdtemp())
    (root / "ws").mkdir()
    agent = Agent(BridgeConfig(api_key="unused", dataDir=root / "data"))
    session = agent.new_session(root / "ws", Frontend(emit=lambda _event: None, prompter=deny_all))
    [tool.schema() for tool in session.toolset.tools.values()]
    await agent.shutdown()
asyncio.run(main())
print(" ".join(sorted(m for m in sys.modules if m.startswith("bridge.tools."))))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(done.stdout.split())
    assert loaded, done.stderr
    assert not loaded & {entry.module for entry in CORE_TOOLS}, loaded


def test_a_turn_loads_the_tools_it_calls_and_no_other(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    env = {
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "config"),
        "AGENT_BRIDGE_LOG": "DEBUG",
    }
    done = scripted_run(
        ws,
        [("Bash", {"command": "echo hi"}), ("Read", {"file_path": str(ws / "a.txt")})],
        env=env,
        scenario=tmp_path / "s.json",
    )
    assert "alpha" in done.stdout and "hi" in done.stdout
    assert re.findall(r"loading the (\w+) tool", done.stderr) == ["Bash", "Read"]
