"""What a start loads: libraries only some sessions use load when first used, not with the core (each would sit
between `run`'s first request and its first tool: scripts/bench_startup.py's first tool gap)."""

from __future__ import annotations

import subprocess
import sys

ON_FIRST_USE = ("yaml", "pathspec", "bridge.checkpoint_commands", "bridge.history", "anthropic")


def loaded_after(code: str) -> list[str]:
    program = f"import sys\n{code}\nprint(' '.join(m for m in {ON_FIRST_USE!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.split()


def test_the_core_loads_none_of_them() -> None:
    assert loaded_after("import bridge.agent, bridge.tools.registry, bridge.commands") == []


def test_each_loads_when_its_first_user_needs_it() -> None:
    """The control: the check above sees them once something uses them."""
    uses = """
import asyncio, bridge.agent, bridge.commands
from pathlib import Path
from bridge.agents.loader import load_yaml
from bridge.permissions.specifiers import compile_path_specifier
load_yaml("name: x")
compile_path_specifier("src/[ab]*.py", cwd=Path.cwd(), root=Path("/"))  # (plain ones, ** too, need no pathspec)
try:
    asyncio.run(bridge.commands._RUNS["rewind"](None, "", None))  # loads its modules, then fails on no session
except AttributeError:
    pass
"""
    assert loaded_after(uses)[:4] == ["yaml", "pathspec", "bridge.checkpoint_commands", "bridge.history"]
