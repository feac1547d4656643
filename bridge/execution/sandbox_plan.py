"""What the OS sandbox holds for one command, worked out once from the session's SandboxPolicy and rendered by
each backend: bubblewrap's mounts (`MountPlan.args`, bridge/execution/bwrap.py) or a Seatbelt profile
(bridge/execution/seatbelt.py).

- writable: the policy's roots (workspace, added directories, allowWrite) and the session's private temp dir;
- held read-only: what runs later and the settings files (bridge/permissions/runs_later.py), where they exist; the
  directories on the way to them can't be renamed away (`ways`); what the user allowed this call to write
  (`grants`) is not held;
- missing: held paths that don't exist yet, watched (bridge/execution/sandbox_watch.py), with no placeholder;
- read-only: Edit deny rules and denyWrite, expanded to the paths that exist inside the roots;
- masked: Read deny rules, denyRead and the bridge's own secrets, expanded to the paths that exist;
- for a folder's own hook, the home folder: hidden but for the installed tools' folders (`private_home`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridge.execution import programs
from bridge.execution.sandbox_notes import inside
from bridge.execution.sandbox_watch import Identity, identity
from bridge.permissions.runs_later import HeldPath, granted_covers
from bridge.permissions.sandbox_policy import SandboxPolicy, expand, home_hides


@dataclass(frozen=True)
class Availability:
    """Whether the platform's sandbox can start here: its program, or why not (said once per session)."""

    ok: bool
    binary: str | None
    reason: str = ""
    backend: str = "bwrap"


PROBE_TIMEOUT = 10.0
_probes: dict[tuple[object, ...], Availability] = {}
_probe_lock = threading.Lock()
log = logging.getLogger(__name__)


def probed_once(key: tuple[object, ...], start: Callable[[], Availability]) -> Availability:
    """A sandbox program's availability, checked once per process and `key` (the backend, its binary...); an
    unavailable one is logged once."""
    with _probe_lock:
        found = _probes.get(key)
        if found is None:
            found = _probes[key] = start()
            if not found.ok:
                log.warning("OS sandbox unavailable: %s", found.reason)
        return found


def probe(binary: str, argv: list[str], backend: str) -> Availability:
    """Start an empty sandbox (`argv` runs `sh -c :` inside): available when it exits 0, else why not, in the
    sandbox program's own words."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
            env=programs.helper_env(),
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Availability(False, binary, f"{binary} cannot start: {error}", backend)
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return Availability(False, binary, f"{binary} cannot start a sandbox here: {why}", backend)
    return Availability(True, binary, "", backend)


@dataclass
class MountPlan:
    args: list[str] = field(default_factory=list)
    held: list[tuple[Path, HeldPath]] = field(default_factory=list)  # mounted read-only (real path, why)
    missing: list[HeldPath] = field(default_factory=list)  # held but not there: watched
    expect: dict[Path, Identity] = field(default_factory=dict)  # watched entries there at the start
    links: dict[Path, str] = field(default_factory=dict)  # held paths that are symbolic links: their targets
    truncated: list[str] = field(default_factory=list)
    ways: list[Path] = field(default_factory=list)  # directories on the way to what is held: can't be moved
    read_only: list[Path] = field(default_factory=list)  # held paths that exist: read-only
    edit_denied: list[Path] = field(default_factory=list)  # Edit deny paths that exist inside the roots
    # every path the Edit deny patterns matched before the command (None: the search was cut short), to tell what
    # the command made that one matches (sandbox.py's `SandboxRun.notes`)
    denied_before: frozenset[Path] | None = None
    masked: list[Path] = field(default_factory=list)  # Read deny paths that exist: unreadable
    grants: tuple[Path, ...] = ()  # what the user allowed this call to write
    backend: str = "bwrap"  # which backend runs it (the words of its refusals differ)


def _leads_to(grants: tuple[Path, ...], path: Path) -> bool:
    return any(g != path and g.is_relative_to(path) for g in grants)


def plan_mounts(policy: SandboxPolicy, tmp: Path, grants: tuple[Path, ...] = ()) -> MountPlan:
    """The bwrap mount arguments for `policy`; `grants` (protected paths this command may write) stay
    writable. Held paths that don't exist are listed in `missing`, to be watched (nothing is created)."""
    plan = MountPlan(grants=grants)
    base = _system_view() if policy.system_view else ["--ro-bind", "/", "/"]
    args = [*base, "--dev", "/dev", "--proc", "/proc", *_proc_read_only(), "--bind", str(tmp), "/tmp"]
    home = policy.private_home
    if home is not None:  # an empty home folder, the tools' folders in it bound back read-only
        args += ["--tmpfs", str(home)]
        for tool in policy.home_tools:  # (a link, as a version manager's often is: what it leads to, in its place)
            target = os.path.realpath(tool)
            if os.path.exists(target) and not home.is_relative_to(target):  # (never the home folder by another name)
                args += ["--ro-bind", target, str(tool)]
    roots = tuple(sorted(policy.writable, key=lambda p: len(p.parts)))
    for root in roots:
        # not one inside another (it adds nothing, and a command or hook may rename the folders on its way and
        # put a link there before bwrap resolves it: attack round 30 had the real home mounted over a hook's)
        if not any(other != root and root.is_relative_to(other) for other in roots):
            args += ["--bind", str(root), str(root)]
    protect: dict[Path, str] = {}  # path -> "--bind" (onto itself: can't be renamed) or "--ro-bind"
    covered: list[str] = []  # held directories (with a trailing `/`), read-only or watched whole: what is below
    # them needs nothing more (strings: pathlib's is_relative_to made this loop most of a command's planning)
    folders: dict[Path, str] = {}  # resolved parents: the held paths share a few

    def resolved(path: Path) -> Path:
        parent = folders.get(path.parent)
        if parent is None:
            parent = folders[path.parent] = os.path.realpath(path.parent)
        joined = os.path.join(parent, path.name)
        return Path(os.path.realpath(joined) if os.path.islink(joined) else joined)

    for held in sorted(policy.protected, key=lambda h: len(h.path.parts)):  # shallow first
        link = os.path.islink(held.path)
        if link and inside(held.path.parent, roots) is not None:
            plan.missing.append(held)  # a link can be replaced by a file: watched; its target is held below
            plan.expect[held.path] = identity(held.path) or (0, 0, 0, 0)
            with contextlib.suppress(OSError):
                plan.links[held.path] = os.readlink(held.path)
        real = resolved(held.path)
        key = f"{real}/"
        if any(key.startswith(c) for c in covered):
            continue  # inside what is held whole
        holder = inside(real, roots)
        if holder is None or real == holder:
            continue  # read-only already, or a root itself
        if granted_covers(grants, real) or granted_covers(grants, held.path):
            continue  # the user allowed this call to write it
        current = holder
        parts = real.relative_to(holder).parts
        present = True
        for part in parts[:-1]:  # the directories on the way: bound onto themselves, so they stay where they are
            current = current / part
            if not os.path.isdir(current) or os.path.islink(current):
                present = False
                break
            protect.setdefault(current, "--bind")
        if present and os.path.lexists(real):
            if held.kind == "dir" and os.path.isdir(real) and _leads_to(grants, real):
                _split(real, grants, protect, plan.expect)  # read-only but for the way to what was granted in it
                plan.missing.append(held)  # and what appears in it is judged
                plan.expect[real] = identity(real) or (0, 0, 0, 0)
            else:
                protect[real] = "--ro-bind"
                plan.held.append((real, held))
            covered.append(key)
        elif not link:
            plan.missing.append(held)
            if not held.new_repository:
                covered.append(key)
    for path, op in sorted(protect.items(), key=lambda item: len(item[0].parts)):
        args += [op, str(path), str(path)]
        (plan.ways if op == "--bind" else plan.read_only).append(path)
    read_only = expand(policy.read_only) if policy.read_only else None
    masked = expand(policy.masked) if policy.masked else None
    if read_only is not None:
        plan.truncated += read_only.truncated
        plan.denied_before = None if read_only.truncated else frozenset(read_only.paths)
        for path in sorted(read_only.paths, key=lambda p: len(p.parts)):
            if inside(Path(os.path.realpath(path)), roots) is not None:
                args += ["--ro-bind", str(path), str(path)]
                plan.edit_denied.append(path)
    if masked is not None:
        plan.truncated += masked.truncated
        for path in sorted(masked.paths, key=lambda p: len(p.parts)):
            if home_hides(policy, path):  # not there at all, unless it is a link out of the home folder
                real = Path(os.path.realpath(path))
                if home is None or real.is_relative_to(home):
                    continue
                path = real
            plan.masked.append(path)
            args += _mask(path)
    for path in policy.home_masked:
        if os.path.islink(path):  # (bwrap mounts on where a link leads, and can't make it when it leads nowhere)
            path = Path(os.path.realpath(path))
        if os.path.exists(path):  # (a file read as empty, not refused: git stops at a settings file it can't read)
            plan.masked.append(path)
            args += _mask(path, empty=True)
    if home is not None:
        args += ["--remount-ro", str(home)]  # (the mount points in it are made: nothing more can be)
    if policy.system_view:
        args += _mask(Path(f"/run/user/{os.getuid()}")) if os.path.isdir(f"/run/user/{os.getuid()}") else []
        args += ["--remount-ro", "/"]  # (the new root's own folder: nothing new at the top)
    args += ["--chdir", str(policy.cwd)]
    plan.args = args
    return plan


SYSTEM_VIEW = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt", "nix", "snap", "sys", "run")
"""What a folder's hook sees of the machine outside the workspace's roots and the tools (`SandboxPolicy.
system_view`): the programs, their libraries and settings; not /home, /root, /var, /srv, /mnt or a data disk (where
the home folder's links may lead, where other projects are). The user's runtime folder in /run (podman's logins, an
agent's sockets) is masked."""


PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus")
"""What of the sandbox's /proc stays read-only: the kernel's settings. bwrap makes them so itself when it can; run
as root with every capability dropped it did not (attack round 32), and root writes a 0644 file without one:
`/proc/sys/kernel/core_pattern` set to a workspace script runs it as the host's root at the next crash."""


def _proc_read_only() -> list[str]:
    args: list[str] = []
    for name in PROC_READ_ONLY:
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    return args


def _system_view() -> list[str]:
    """bwrap's arguments for `SYSTEM_VIEW` as it is here: a folder bound read-only, a link (`/bin -> usr/bin`) made
    again."""
    args: list[str] = []
    for name in SYSTEM_VIEW:
        path = f"/{name}"
        if os.path.islink(path):
            with contextlib.suppress(OSError):
                args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _mask(path: Path, *, empty: bool = False) -> list[str]:
    """What makes `path` unreadable: an empty read-only folder over a folder, the null device over a file (it can't
    be opened there); `empty`: an empty file instead (it reads as nothing)."""
    if os.path.isdir(path):
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    return ["--ro-bind", str(_empty_file()) if empty else "/dev/null", str(path)]


_empty: Path | None = None
_empty_lock = threading.Lock()


def _empty_file() -> Path:
    """An empty, read-only file of the bridge's, outside anything a sandbox shows (the host's temp dir)."""
    global _empty
    with _empty_lock:
        if _empty is None or not os.path.isfile(_empty) or os.path.getsize(_empty) != 0:
            fd, name = tempfile.mkstemp(prefix=f"agent-bridge-empty-{os.getuid()}-")
            os.close(fd)
            os.chmod(name, 0o444)
            _empty = Path(name)
            atexit.register(_remove, name)
        return _empty


def empty_file_made() -> Path | None:
    """The empty file, if this process made one (for the registry: a killed bridge's is removed too)."""
    return _empty


def _remove(name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name)


def _split(folder: Path, grants: tuple[Path, ...], protect: dict[Path, str], expect: dict[Path, Identity]) -> None:
    """`folder` held, but a grant lies inside it: everything in it read-only except the way to the grant;
    what is there now is `expect`ed (the watch judges only what appears)."""
    protect.setdefault(folder, "--bind")
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return
    for name in entries:
        path = folder / name
        expect[path] = identity(path) or (0, 0, 0, 0)
        if granted_covers(grants, path):
            continue
        if _leads_to(grants, path) and os.path.isdir(path) and not os.path.islink(path):
            _split(path, grants, protect, expect)
        else:
            protect[path] = "--ro-bind"
