#!/usr/bin/env python3
"""Check, by tag, that each platform's .vsix carries a complete set of wheels for CPython 3.11–3.14.

For every .vsix given: its target (the manifest's `TargetPlatform`, which must match the bundled bridge's
`manifest.json`); then, for each CPython, the dependency closure of agent-bridge walked through the bundled wheels'
own metadata with that platform's environment markers (`sys_platform == 'win32'` and the like: pip would judge
them for this machine), each requirement met by a wheel whose tags fit — the interpreter tag that CPython (py3,
cpXY, or abi3 from an older cp), the platform tag the target's OS and architecture (or `any`), Requires-Python
that version. The rules are this script's own, not the bundler's. Prints one line per target and Python; exits 1
when anything is missing or does not fit.

Usage: scripts/check_vsix.py out/agent-bridge-*.vsix
"""

from __future__ import annotations

import email.parser
import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

PYTHONS = ("3.11", "3.12", "3.13", "3.14")
PLATFORMS = {
    "linux-x64": re.compile(r"^(?:manylinux\d*(?:_\d+_\d+)?|musllinux_\d+_\d+|linux)_x86_64$"),
    "linux-arm64": re.compile(r"^(?:manylinux\d*(?:_\d+_\d+)?|musllinux_\d+_\d+|linux)_aarch64$"),
    "darwin-arm64": re.compile(r"^macosx_\d+_\d+_(?:arm64|universal2)$"),
    "darwin-x64": re.compile(r"^macosx_\d+_\d+_(?:x86_64|intel|universal2|universal)$"),
    "win32-x64": re.compile(r"^win_amd64$"),
}
WHEEL = re.compile(
    r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)"
    r"\.whl$"
)


def fits(filename: str, target: str, python: str) -> str | None:
    """None when the wheel `filename` installs on CPython `python` for `target`; else why not."""
    found = WHEEL.match(filename)
    if found is None:
        return f"{filename}: not a wheel file name"
    major, minor = (int(part) for part in python.split("."))
    interpreters, abis, platforms = (found[k].split(".") for k in ("py", "abi", "plat"))
    if not any(p == "any" or PLATFORMS[target].match(p) for p in platforms):
        return f"{filename}: platform {found['plat']} is not {target}'s"

    def interpreter_fits(tag: str) -> bool:
        if tag in ("py3", f"py{major}{minor}", f"cp{major}{minor}"):
            return True
        older = re.fullmatch(r"cp3(\d+)", tag)
        return older is not None and "abi3" in abis and int(older[1]) <= minor

    if not any(interpreter_fits(tag) for tag in interpreters):
        return f"{filename}: {found['py']}-{found['abi']} does not run on CPython {python}"
    return None


ENVIRONMENTS = {
    "linux-x64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "x86_64",
    },
    "linux-arm64": {
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "aarch64",
    },
    "darwin-arm64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "os_name": "posix",
        "platform_machine": "arm64",
    },
    "darwin-x64": {
        "sys_platform": "darwin",
        "platform_system": "Darwin",
        "os_name": "posix",
        "platform_machine": "x86_64",
    },
    "win32-x64": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt", "platform_machine": "AMD64"},
}


@dataclass(frozen=True)
class Wheel:
    filename: str
    name: str  # canonical
    version: Version
    requires: tuple[Requirement, ...]
    requires_python: SpecifierSet


def read_wheel(filename: str, data: bytes) -> Wheel:
    name, version, _, _ = parse_wheel_filename(filename)
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        message = email.parser.Parser().parsestr(wheel.read(meta).decode())
    requires = tuple(Requirement(r) for r in message.get_all("Requires-Dist") or [])
    return Wheel(filename, canonicalize_name(name), version, requires, SpecifierSet(message.get("Requires-Python", "")))


def closure(wheels: list[Wheel], root: Requirement, target: str, python: str) -> tuple[list[Wheel], list[str]]:
    """The wheels that install `root` on CPython `python` for `target`, and what can't be met."""
    environment = {
        **ENVIRONMENTS[target],
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    chosen: dict[str, Wheel] = {}
    missing: list[str] = []
    queue: list[tuple[Requirement, frozenset[str]]] = [(root, frozenset())]
    while queue:
        requirement, extras = queue.pop()
        if requirement.marker is not None and not any(
            requirement.marker.evaluate({**environment, "extra": extra}) for extra in (extras or {""})
        ):
            continue
        name = canonicalize_name(requirement.name)
        fitting = sorted(
            (
                w
                for w in wheels
                if w.name == name
                and requirement.specifier.contains(w.version, True)
                and fits(w.filename, target, python) is None
                and w.requires_python.contains(python)
            ),
            key=lambda w: w.version,
            reverse=True,
        )
        if not fitting:
            missing.append(str(requirement))
            continue
        wheel = fitting[0]
        new = name not in chosen
        chosen.setdefault(name, wheel)
        if new or requirement.extras:
            queue += [(dependency, frozenset(requirement.extras)) for dependency in chosen[name].requires]
    return list(chosen.values()), missing


def check(vsix: Path) -> list[str]:
    """The problems of one .vsix (empty: complete); prints what it found."""
    problems: list[str] = []
    with zipfile.ZipFile(vsix) as archive:
        declared = re.search(r'TargetPlatform="([^"]+)"', archive.read("extension.vsixmanifest").decode())
        bundle = json.loads(archive.read("extension/bridge/manifest.json"))
        wheels = [
            read_wheel(Path(member).name, archive.read(member))
            for member in archive.namelist()
            if member.startswith("extension/bridge/wheels/") and member.endswith(".whl")
        ]
    target = bundle["target"]
    if declared is None or declared[1] != target:
        problems.append(
            f"{vsix.name}: the .vsix targets {declared[1] if declared else 'every platform'}, its wheels {target}"
        )
    root = Requirement(f"agent-bridge=={bundle['version']}")
    for python in PYTHONS:
        chosen, missing = closure(wheels, root, target, python)
        problems += [f"{vsix.name}: CPython {python}: no fitting wheel for {what}" for what in missing]
        native = sorted(
            f"{m['name']} {m['py']}-{m['abi']}-{m['plat'].split('.')[0]}"
            for w in chosen
            if not w.filename.endswith("-none-any.whl") and (m := WHEEL.match(w.filename))
        )
        print(
            f"{target:13} cp{python.replace('.', ''):4} {len(chosen):3} wheels {'ok' if not missing else 'MISSING'}; "
            f"native: {', '.join(native)}"
        )
    return problems


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    problems = [problem for path in argv for problem in check(Path(path))]
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
