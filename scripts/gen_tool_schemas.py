"""Write bridge/tool_schemas.json: the tools a new session offers when no agent types, skills or plugins add
to them, as the model sees them — what `run` sends ahead before the bridge has loaded (bridge/cli/
first_request.py); and bridge/tool_inputs.json: their input schemas by model, which spares a process's first
request pydantic's work (bridge/tools/base.py). tests/test_first_request.py fails when either differs from the
code; then run this.

    .venv/bin/python scripts/gen_tool_schemas.py
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bridge.first_request import SCHEMAS
from bridge.tools.base import SHIPPED_INPUTS, computed_input_schema
from bridge.tools.registry import LazyTool


async def _session_tools(root: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from bridge.agent import Agent
    from bridge.config import BridgeConfig
    from bridge.loop.permission import deny_all
    from bridge.session import Frontend

    (root / "ws").mkdir()
    agent = Agent(BridgeConfig(api_key="unused", dataDir=root / "data"))
    session = agent.new_session(root / "ws", Frontend(emit=lambda _event: None, prompter=deny_all))
    try:
        # each tool as its class makes it (not a LazyTool's shipped copy: that is what this writes)
        tools = [t.loaded() if isinstance(t, LazyTool) else t for t in session.toolset.tools.values()]
        models = {tool.input_model for tool in tools}
        inputs = {f"{m.__module__}.{m.__qualname__}": computed_input_schema(m) for m in models}
        return [tool.schema() for tool in tools], dict(sorted(inputs.items()))
    finally:
        await agent.shutdown()


def current() -> list[dict[str, Any]]:
    """What a new session offers in an empty folder, for a user with no agent types, skills or plugins."""
    return _current()[0]


def current_inputs() -> dict[str, Any]:
    """The input schemas of those tools, worked out by pydantic, by model (`module.qualname`)."""
    return _current()[1]


def _current() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        saved = {k: os.environ.get(k) for k in ("HOME", "AGENT_BRIDGE_CONFIG_DIR", "CLAUDE_CONFIG_DIR")}
        os.environ.update(
            HOME=str(root / "home"), AGENT_BRIDGE_CONFIG_DIR=str(root / "cfg"), CLAUDE_CONFIG_DIR=str(root / "claude")
        )
        try:
            return asyncio.run(_session_tools(root))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


if __name__ == "__main__":
    schemas, inputs = _current()
    SCHEMAS.write_text(json.dumps(schemas, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    SHIPPED_INPUTS.write_text(json.dumps(inputs, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SCHEMAS} and {SHIPPED_INPUTS}")
