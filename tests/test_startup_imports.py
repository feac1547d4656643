"""What a start loads: libraries only some sessions use load when first used, not with the core (each would sit
between `run`'s first request and its first tool: scripts/bench_startup.py's first tool gap)."""

from __future__ import annotations

import json
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


def built_after(code: str) -> dict[str, bool]:
    """Whether each validator a start could build is built, after `code` (a fresh interpreter)."""
    program = f"""
import json
from bridge.pydantic_setup import no_plugins
no_plugins()
import bridge.agent, bridge.tools.registry, bridge.commands
from bridge.permissions import command_limits, sandbox_policy, settings
from bridge.tools.bash import BashInput
from bridge.tools.read import ReadInput
{code}
print(json.dumps({{
    "settings": settings._FIELDS["allow"].pydantic_complete,
    "hooks": settings._HOOKS.pydantic_complete,
    "sandbox": sandbox_policy._SandboxModel.__pydantic_complete__,
    "limits": command_limits.LimitsModel.__pydantic_complete__,
    "Bash": BashInput.__pydantic_complete__,
    "Read": ReadInput.__pydantic_complete__,
}}))
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    built: dict[str, bool] = json.loads(done.stdout)
    return built


def test_a_validator_is_built_when_it_first_validates() -> None:
    """Most starts read no settings file and call one or two tools: building every model's validator at import
    (~1 ms each, fifteen tools and the settings' fields) sat between `run`'s first request and its first tool."""
    assert not any(built_after("").values())
    used = """
BashInput.model_validate({"command": "ls"})
settings._FIELDS["allow"].validate_python(["Bash(ls)"])
sandbox_policy._SandboxModel.model_validate({"enabled": True})
"""
    assert built_after(used) == {
        "settings": True,
        "hooks": False,
        "sandbox": True,
        "limits": False,
        "Bash": True,
        "Read": False,
    }


def test_the_bridge_looks_up_no_pydantic_plugin() -> None:
    """A pydantic plugin is code from elsewhere in the environment that would be handed every value the bridge
    validates, and finding one scans every installed distribution's metadata: the bridge loads none, and looks
    for none. The control: pydantic on its own looks."""
    program = """
import importlib.metadata, sys
def entry_points(**kwargs):
    print("looked", kwargs.get("group"))
    return ()
importlib.metadata.entry_points = entry_points
import pydantic.plugin._loader as loader
loader.entry_points = entry_points
if sys.argv[1] == "bridge":
    from bridge.pydantic_setup import no_plugins
    no_plugins()
from bridge.tools.bash import BashInput
BashInput.model_validate({"command": "ls"})
print("validated")
"""
    for who, expected in (("bridge", "validated\n"), ("pydantic", "looked pydantic\nvalidated\n")):
        done = subprocess.run(
            [sys.executable, "-c", program, who], capture_output=True, text=True, timeout=60, check=True
        )
        assert done.stdout == expected
