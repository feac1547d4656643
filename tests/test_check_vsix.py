"""scripts/check_vsix.py, the CI's proof that each platform's .vsix installs the bridge offline on CPython 3.11–3.14:
a complete bundle passes; a wheel for another platform, another CPython, or a dependency only the target's markers
ask for (pip, run on Linux, would not have fetched it) is a failure that names it."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_vsix", ROOT / "scripts" / "check_vsix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_vsix"] = module
    spec.loader.exec_module(module)
    return module


check_vsix = load_checker()


def wheel(filename: str, requires: tuple[str, ...] = (), requires_python: str = ">=3.11") -> tuple[str, bytes]:
    name, version = filename.split("-")[:2]
    meta = (
        "\n".join(
            [
                "Metadata-Version: 2.1",
                f"Name: {name}",
                f"Version: {version}",
                f"Requires-Python: {requires_python}",
                *(f"Requires-Dist: {r}" for r in requires),
            ]
        )
        + "\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{name}-{version}.dist-info/METADATA", meta)
    return filename, buffer.getvalue()


def vsix(tmp_path: Path, target: str, wheels: list[tuple[str, bytes]], declared: str | None = None) -> Path:
    path = tmp_path / f"agent-bridge-{target}.vsix"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("extension.vsixmanifest", f'<Identity TargetPlatform="{declared or target}" />')
        archive.writestr("extension/bridge/manifest.json", json.dumps({"target": target, "version": "0.1.0"}))
        for name, data in wheels:
            archive.writestr(f"extension/bridge/wheels/{name}", data)
    return path


BRIDGE = wheel("agent_bridge-0.1.0-py3-none-any.whl", ("psutil>=7", "mcp>=2"))
MCP = wheel("mcp-2.3.0-py3-none-any.whl", ("pywin32>=311; sys_platform == 'win32'",))
PYWIN32 = [wheel(f"pywin32-311-cp3{m}-cp3{m}-win_amd64.whl") for m in (11, 12, 13, 14)]


def test_a_complete_windows_bundle_passes(tmp_path: Path) -> None:
    path = vsix(tmp_path, "win32-x64", [BRIDGE, MCP, wheel("psutil-7.2.2-cp37-abi3-win_amd64.whl"), *PYWIN32])
    assert check_vsix.check(path) == []


def test_a_dependency_only_the_targets_markers_ask_for_is_required(tmp_path: Path) -> None:
    """What a Linux pip run misses: mcp needs pywin32 on Windows only."""
    path = vsix(tmp_path, "win32-x64", [BRIDGE, MCP, wheel("psutil-7.2.2-cp37-abi3-win_amd64.whl")])
    problems = check_vsix.check(path)
    assert len(problems) == 4 and all("no fitting wheel for pywin32>=311" in p for p in problems)
    linux = vsix(tmp_path, "linux-x64", [BRIDGE, MCP, wheel("psutil-7.2.2-cp36-abi3-manylinux2014_x86_64.whl")])
    assert check_vsix.check(linux) == []  # the control: on Linux the marker is false


@pytest.mark.parametrize(
    ("filename", "target", "python", "why"),
    [
        ("psutil-7.2.2-cp36-abi3-manylinux2014_x86_64.whl", "darwin-arm64", "3.11", "platform"),
        ("psutil-7.2.2-cp36-abi3-macosx_11_0_x86_64.whl", "darwin-arm64", "3.11", "platform"),
        ("jiter-0.19.0-cp312-cp312-macosx_11_0_arm64.whl", "darwin-arm64", "3.11", "does not run"),
        ("cryptography-50-cp312-abi3-win_amd64.whl", "win32-x64", "3.11", "does not run"),
        ("jiter-0.19.0-cp311-cp311-manylinux2014_aarch64.whl", "linux-x64", "3.11", "platform"),
    ],
)
def test_a_wheel_for_another_platform_or_python_does_not_fit(filename: str, target: str, python: str, why: str) -> None:
    assert why in (check_vsix.fits(filename, target, python) or "")


@pytest.mark.parametrize(
    ("filename", "target", "python"),
    [
        ("cryptography-50-cp311-abi3-macosx_10_9_universal2.whl", "darwin-x64", "3.14"),
        ("psutil-7.2.2-cp36-abi3-manylinux2010_x86_64.manylinux_2_12_x86_64.whl", "linux-x64", "3.13"),
        ("pydantic_core-2.50.5-cp314-cp314-manylinux_2_17_aarch64.whl", "linux-arm64", "3.14"),
        ("ripgrep-14.1.0-py3-none-win_amd64.whl", "win32-x64", "3.12"),
    ],
)
def test_the_wheels_that_do_fit(filename: str, target: str, python: str) -> None:
    assert check_vsix.fits(filename, target, python) is None


def test_a_missing_python_and_a_mislabelled_vsix_are_named(tmp_path: Path) -> None:
    only_311 = wheel("psutil-7.2.2-cp311-cp311-macosx_11_0_arm64.whl")
    path = vsix(tmp_path, "darwin-arm64", [BRIDGE, wheel("mcp-2.3.0-py3-none-any.whl"), only_311], declared="linux-x64")
    problems = check_vsix.check(path)
    assert any("targets linux-x64, its wheels darwin-arm64" in p for p in problems)
    assert sorted(p.split(":")[1].strip() for p in problems if "psutil" in p) == [
        "CPython 3.12",
        "CPython 3.13",
        "CPython 3.14",
    ]


def test_the_extension_runs_where_the_files_are() -> None:
    """`extensionKind: ["workspace"]`: in Remote-SSH, Dev Containers and WSL the bridge runs next to the files, on
    the remote's platform (so the remote's .vsix is the one installed there)."""
    manifest = json.loads((ROOT / "vscode-extension" / "package.json").read_text())
    assert manifest["extensionKind"] == ["workspace"]
