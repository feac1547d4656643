"""Where bridge/execution/ sits (DESIGN.md's layers): it imports no tool, loop, session, server, MCP, sub-agent or
front-end module; its process half (what runs and how it is stopped) imports nothing of the bridge but itself and
the ground, so the permission layer's hooks may run their commands through it; the sandbox half reads the
permission layer's policy. Read from the source (every import, in functions and TYPE_CHECKING blocks too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BRIDGE = Path(__file__).resolve().parents[2] / "bridge"
NEVER = (
    "bridge.tools",
    "bridge.loop",
    "bridge.session",
    "bridge.server",
    "bridge.mcp",
    "bridge.agents",
    "bridge.agent",
    "bridge.cli",
    "bridge.commands",
    "bridge.toolset",
    "bridge.model",
)
PROCESS_HALF = (
    "host",
    "proctable",
    "signals",
    "shell",
    "linux",
    "managed",
    "supervisor",
    "registry",
    "watchdog",
    "output",
    "background",
    "programs",
)
GROUND = ("bridge.messages", "bridge.environment")  # both ground in tests/test_layers.py too


def bridge_imports(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            found |= {n for n in names if n.startswith("bridge.") or n == "bridge"}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("bridge")}
    return found


def modules_of(package: str) -> dict[str, set[str]]:
    return {path.stem: bridge_imports(path.read_text(encoding="utf-8")) for path in (BRIDGE / package).glob("*.py")}


def crossing(imports: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(i for i in imports if any(i == p or i.startswith(p + ".") for p in prefixes))


def test_the_checker_sees_a_forbidden_import() -> None:
    """The control: an import of a tool (in a function, under TYPE_CHECKING) is found."""
    source = (
        "import typing\nif typing.TYPE_CHECKING:\n    from bridge.tools.base import ToolError\n"
        "def f():\n    import bridge.loop.executor\n"
    )
    assert crossing(bridge_imports(source), NEVER) == [
        "bridge.loop.executor",
        "bridge.tools.base",
        "bridge.tools.base.ToolError",
    ]


@pytest.mark.parametrize("module", sorted(modules_of("execution")))
def test_execution_imports_nothing_above_it(module: str) -> None:
    assert crossing(modules_of("execution")[module], NEVER) == []


@pytest.mark.parametrize("module", PROCESS_HALF)
def test_the_process_half_stands_on_the_ground_only(module: str) -> None:
    imports = modules_of("execution")[module]
    outside = [i for i in imports if not i.startswith("bridge.execution") and not crossing({i}, GROUND)]
    assert outside == []
    assert not [i for i in imports for s in ("sandbox", "bwrap", "seatbelt", "limits") if f"execution.{s}" in i]


def test_the_permission_layer_uses_only_the_process_half() -> None:
    used = {
        i.split(".")[2]
        for imports in modules_of("permissions").values()
        for i in imports
        if i.startswith("bridge.execution.")
    }
    assert used and used <= set(PROCESS_HALF)
