"""DESIGN.md's "never" arrows, read from the source: every `import` of every module in a layer (inside functions
and TYPE_CHECKING blocks too, since a deferred import is still a dependency). The execution package has its own,
finer test (tests/execution/test_layers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BRIDGE = Path(__file__).resolve().parents[1] / "bridge"

FRONT = ("bridge.server", "bridge.cli")
# modules every layer may use: the shared vocabulary (DESIGN.md's "ground")
GROUND = (
    "abort",
    "messages",
    "errors",
    "display",
    "config",
    "jsonfile",
    "safefs",
    "environment",
    "visible",
    "secrets",
    "memory",
    "prompt",
    "mcp_names",
    "winpaths",
)
ABOVE_GROUND = (
    "bridge.loop",
    "bridge.tools",
    "bridge.session",
    "bridge.turns",
    "bridge.session_effects",
    "bridge.session_setup",
    "bridge.toolset",
    "bridge.agent",
    "bridge.agents",
    "bridge.mcp",
    "bridge.commands",
    "bridge.replay",
    "bridge.server",
    "bridge.cli",
    "bridge.execution",
    "bridge.model",
    "bridge.permissions",
)

# (layer, what it must never import)
NEVER: list[tuple[str, tuple[str, ...]]] = [
    ("bridge.loop", (*FRONT, "bridge.session", "bridge.turns", "bridge.agent", "bridge.agents", "bridge.mcp")),
    ("bridge.tools", (*FRONT, "bridge.loop", "bridge.session", "bridge.turns", "bridge.agent", "bridge.mcp")),
    ("bridge.model", (*FRONT, "bridge.tools", "bridge.loop", "bridge.session")),
    ("bridge.permissions", (*FRONT, "bridge.tools", "bridge.loop", "bridge.session")),
    ("bridge.mcp", FRONT),
    ("bridge.agents", FRONT),
    ("bridge.commands", FRONT),
    ("bridge.session", FRONT),
    ("bridge.turns", (*FRONT, "bridge.session")),
    ("bridge.offline", tuple(f"bridge.{p.stem}" for p in BRIDGE.iterdir() if p.stem not in ("offline", "__init__"))),
    *[(f"bridge.{name}", ABOVE_GROUND) for name in GROUND],
]


def modules(layer: str) -> list[Path]:
    base = BRIDGE / layer.removeprefix("bridge.").replace(".", "/")
    if base.is_dir():
        return sorted(base.rglob("*.py"))
    return [base.with_suffix(".py")] if base.with_suffix(".py").exists() else []


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {name for name in found if name.startswith("bridge")}


def breaks(name: str, forbidden: tuple[str, ...]) -> bool:
    return any(name == f or name.startswith(f + ".") for f in forbidden)


@pytest.mark.parametrize(("layer", "forbidden"), NEVER, ids=[layer for layer, _ in NEVER])
def test_no_layer_imports_what_it_must_never_import(layer: str, forbidden: tuple[str, ...]) -> None:
    files = modules(layer)
    assert files, f"{layer}: no such module (the layer list is out of date)"
    broken = {
        f"{path.relative_to(BRIDGE.parent)} imports {name}"
        for path in files
        for name in imports(path)
        if breaks(name, forbidden)
    }
    assert not broken, "\n".join(sorted(broken))


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    """The control: a module that imports upward, in a function and under TYPE_CHECKING, is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bridge.server import wire\n"
        "def f():\n    import bridge.session\n"
    )
    assert {n for n in imports(bad) if breaks(n, (*FRONT, "bridge.session"))} == {
        "bridge.server",
        "bridge.server.wire",
        "bridge.session",
    }
