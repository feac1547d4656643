"""The OS sandbox under every Bash command: bubblewrap (`bwrap`) on Linux, as Claude Code's own sandbox.

What it allows comes from the permission engine (bridge/permissions/sandbox_policy.py); here it becomes
mounts, in this order (later ones win over earlier ones, so the restrictive ones come last):

    --ro-bind / /  --dev /dev  --proc /proc        everything read-only; a fresh /dev and /proc
    --bind <session tmp> /tmp                      a private /tmp per session, TMPDIR=/tmp
    --bind W W                                     each writable root (workspace, added dirs, allowWrite)
    --bind A A, --ro-bind P P                      protected paths; their directories inside a root are
                                                   bound onto themselves so they can't be renamed away
    --ro-bind R R                                  Edit deny rules
    --tmpfs D --remount-ro D / --ro-bind /dev/null F   Read deny rules: masked

plus `--unshare-pid` (its own /proc, so no `/proc/<pid>/root` of a process outside; killing bwrap kills
everything inside), `--unshare-net` unless the network is allowed, `--die-with-parent` (the sandbox dies
with the bridge, SIGKILL included) and `--cap-drop ALL` (as root, bwrap keeps every capability: the
command could unmount its own protections).

A protected path that does not exist yet (`.mcp.json`, `.agent-bridge/`) needs something to mount on:
we create an empty placeholder (a directory for a missing directory on the way) and remove it when the
last command using it is gone. Every sandbox holds a shared `flock` on each protected path it binds while
it runs, and a placeholder is removed only under an exclusive one, so two bridges on one workspace never
pull a mount out from under each other. Placeholders and the session tmp are written in the process
registry, so the watchdog or the next bridge removes them after a crash.

Where bwrap cannot start (not Linux, not installed, no namespaces), the session says so once and
the permission engine asks for every Bash command that is not read-only (`engine.unsandboxed`, step 10 of
its order); `sandbox.failIfUnavailable` makes
such commands fail instead. `sandbox.enabled: false` (or `AGENT_BRIDGE_SANDBOX=0`) turns it all off.
"""

from __future__ import annotations

import asyncio
import atexit
import errno
import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridge.permissions.engine import PermissionEngine
from bridge.permissions.sandbox_policy import (
    Kind,
    SandboxPolicy,
    SandboxSettings,
    expand,
    policy_from_engine,
    sandbox_settings,
    sandbox_wanted,
)
from bridge.tools.base import Services, ToolError
from bridge.tools.process_registry import ProcessRegistry, remove_placeholder
from bridge.tools.processes import Launch

log = logging.getLogger(__name__)

BWRAP_ENV = "AGENT_BRIDGE_BWRAP"  # the bwrap binary to use (tests point it at a missing one)
PROBE_TIMEOUT = 10.0


class SandboxError(ToolError):
    """The command cannot run sandboxed (and must not run otherwise)."""


# -- can bwrap start here? -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Availability:
    ok: bool
    bwrap: str | None
    reason: str = ""


_probes: dict[str | None, Availability] = {}
_probe_lock = threading.Lock()


def bwrap_path() -> str | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("bwrap")


def probe() -> Availability:
    """Whether bwrap can start a sandbox like ours; checked once per process (and bwrap binary)."""
    binary = bwrap_path()
    with _probe_lock:
        found = _probes.get(binary)
        if found is None:
            found = _probes[binary] = _probe(binary)
            if not found.ok:
                log.warning("OS sandbox unavailable: %s", found.reason)
        return found


def _probe(binary: str | None) -> Availability:
    if not sys.platform.startswith("linux"):
        return Availability(False, None, f"the OS sandbox needs Linux (bubblewrap); this is {sys.platform}")
    if binary is None:
        return Availability(False, None, "bubblewrap is not installed (`apt-get install bubblewrap`)")
    argv = [binary, "--die-with-parent", "--unshare-pid", "--unshare-net", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "/bin/sh", "-c", ":"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Availability(False, binary, f"{binary} cannot start: {error}")
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return Availability(False, binary, f"{binary} cannot start a sandbox here: {why}")
    return Availability(True, binary)


# -- placeholders and guards -----------------------------------------------------------------------------


@dataclass
class _Guard:
    """A protected path held open, with a shared flock, while sandboxes bind it."""

    path: Path
    kind: Kind
    fd: int
    dev: int
    ino: int
    created: bool
    registry: ProcessRegistry | None
    refs: int = 1


_guards: dict[Path, _Guard] = {}
_guards_lock = threading.Lock()


def _hold(path: Path, kind: Kind, *, create: bool, registry: ProcessRegistry | None) -> _Guard | None:
    """Hold `path` (creating an empty placeholder of `kind` when `create` and it is missing); None when
    it is missing and cannot be created by us (so not by the command either)."""
    with _guards_lock:
        guard = _guards.get(path)
        if guard is not None:
            try:
                st = os.lstat(path)
                if (st.st_dev, st.st_ino) == (guard.dev, guard.ino):
                    guard.refs += 1
                    return guard
            except OSError:
                pass
            _drop(guard)  # replaced under us: start over with what is there now
        for _ in range(5):
            created = False
            if create and not os.path.lexists(path):
                try:
                    if kind == "dir":
                        os.mkdir(path, 0o755)
                    else:
                        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
                    created = True
                except FileExistsError:
                    pass
                except OSError as error:
                    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                        return None  # we can't create it: nor can the command, with fewer rights than ours
                    raise SandboxError(f"The sandbox cannot protect {path}: {error}") from None
            is_dir = os.path.isdir(path) and not os.path.islink(path)
            flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | (os.O_DIRECTORY if is_dir else 0)
            try:
                fd = os.open(path, flags)
            except FileNotFoundError:
                continue  # removed between the check and the open: try again
            except OSError as error:
                raise SandboxError(f"The sandbox cannot protect {path}: {error}") from None
            fcntl.flock(fd, fcntl.LOCK_SH)
            st = os.fstat(fd)
            try:
                current = os.lstat(path)
            except OSError:
                current = None
            if current is None or (current.st_dev, current.st_ino) != (st.st_dev, st.st_ino):
                os.close(fd)  # someone removed it while we waited for the lock
                continue
            guard = _Guard(path, "dir" if is_dir else "file", fd, st.st_dev, st.st_ino, created, registry)
            _guards[path] = guard
            if created and registry is not None:
                registry.add_cleanup(path, guard.kind)
            return guard
        raise SandboxError(f"The sandbox cannot protect {path}: it keeps changing")


def _release(guard: _Guard) -> None:
    with _guards_lock:
        guard.refs -= 1
        if guard.refs <= 0 and _guards.get(guard.path) is guard:
            _drop(guard)


def _drop(guard: _Guard) -> None:
    _guards.pop(guard.path, None)
    os.close(guard.fd)  # our shared lock goes with it
    removed = guard.created and remove_placeholder(guard.path, guard.dev, guard.ino, guard.kind)
    if removed and guard.registry is not None:
        guard.registry.drop_cleanup(guard.path)


# -- mounts ----------------------------------------------------------------------------------------------


@dataclass
class MountPlan:
    args: list[str] = field(default_factory=list)
    guards: list[_Guard] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)

    def release(self) -> None:
        guards, self.guards = self.guards, []
        for guard in guards:
            _release(guard)


def _inside(path: Path, roots: tuple[Path, ...]) -> Path | None:
    """The deepest root holding `path`."""
    holding = [r for r in roots if path == r or path.is_relative_to(r)]
    return max(holding, key=lambda r: len(r.parts)) if holding else None


def plan_mounts(policy: SandboxPolicy, tmp: Path, registry: ProcessRegistry | None) -> MountPlan:
    plan = MountPlan()
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", str(tmp), "/tmp"]
    roots = tuple(sorted(policy.writable, key=lambda p: len(p.parts)))
    for root in roots:
        args += ["--bind", str(root), str(root)]
    try:
        protect: dict[Path, str] = {}  # path -> "--bind" (anti-rename) or "--ro-bind"
        for path, kind in sorted(policy.protected, key=lambda pair: len(pair[0].parts)):  # shallow first
            real = Path(os.path.realpath(path))
            holder = _inside(real, roots)
            if holder is None or real == holder:
                continue  # read-only already (or it is a root itself: nothing sensible to protect)
            if any(op == "--ro-bind" and real.is_relative_to(p) for p, op in protect.items()):
                continue  # inside what is read-only already (e.g. a settings file in `.agent-bridge/`)
            current = holder
            parts = real.relative_to(holder).parts
            for i, part in enumerate(parts):
                current = current / part
                last = i == len(parts) - 1
                if not os.path.lexists(current) or last or not os.path.isdir(current):
                    missing = not os.path.lexists(current)
                    guard = _hold(current, kind if last else "dir", create=missing, registry=registry)
                    if guard is not None:
                        plan.guards.append(guard)
                        protect[current] = "--ro-bind"
                    break
                protect.setdefault(current, "--bind")
        for path, op in sorted(protect.items(), key=lambda item: len(item[0].parts)):
            args += [op, str(path), str(path)]
        read_only = expand(policy.read_only) if policy.read_only else None
        masked = expand(policy.masked) if policy.masked else None
        if read_only is not None:
            plan.truncated += read_only.truncated
            for path in sorted(read_only.paths, key=lambda p: len(p.parts)):
                if _inside(Path(os.path.realpath(path)), roots) is not None:
                    args += ["--ro-bind", str(path), str(path)]
        if masked is not None:
            plan.truncated += masked.truncated
            for path in sorted(masked.paths, key=lambda p: len(p.parts)):
                if os.path.isdir(path):
                    args += ["--tmpfs", str(path), "--remount-ro", str(path)]
                else:
                    args += ["--ro-bind", "/dev/null", str(path)]
    except BaseException:
        plan.release()
        raise
    args += ["--chdir", str(policy.cwd)]
    plan.args = args
    return plan


# -- the session's sandbox -------------------------------------------------------------------------------

_sandboxes: weakref.WeakSet[Sandbox] = weakref.WeakSet()


class Sandbox:
    """A session's sandbox (`ctx.services.sandbox`): its policy, its private /tmp, its warning."""

    def __init__(
        self, policy: Callable[[SandboxSettings], SandboxPolicy], settings: Callable[[], SandboxSettings]
    ) -> None:
        self._policy = policy
        self._settings = settings
        self._tmp: Path | None = None
        self._warned: set[str] = set()
        _sandboxes.add(self)

    @classmethod
    def for_engine(cls, engine: PermissionEngine) -> Sandbox:
        return cls(lambda settings: policy_from_engine(engine, settings), lambda: sandbox_settings(engine.settings))

    @property
    def wanted(self) -> bool:
        return sandbox_wanted(self._settings())

    @property
    def enforced(self) -> bool:
        """Commands run sandboxed (wanted, and bwrap can start here)."""
        return self.wanted and probe().ok

    @property
    def unavailable(self) -> bool:
        """Wanted but bwrap cannot start: every Bash command that is not read-only must ask."""
        return self.wanted and not probe().ok

    def problems(self) -> list[str]:
        """What the user should hear at session start: invalid `sandbox` settings, an unavailable sandbox."""
        settings = self._settings()
        found = list(settings.problems)
        if sandbox_wanted(settings) and not (availability := probe()).ok:
            then = ("Bash commands will fail (sandbox.failIfUnavailable)" if settings.fail_if_unavailable
                    else "every Bash command that is not read-only will ask first")
            found.append(f"OS sandbox unavailable — {availability.reason}; {then}. "
                         'Set "sandbox": {"enabled": false} in .agent-bridge/settings.json to run without it.')
        return found

    async def prepare(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch:
        settings = self._settings()
        if not sandbox_wanted(settings):
            return Launch(argv, env)
        availability = probe()
        if not availability.ok or availability.bwrap is None:
            if settings.fail_if_unavailable:
                raise SandboxError(f"The OS sandbox cannot start ({availability.reason}) and "
                                   "sandbox.failIfUnavailable is set: the command was not run.")
            return Launch(argv, env)
        policy = self._policy(settings)
        tmp = self._private_tmp(registry)
        if policy.read_only or policy.masked:  # walking the file system: not on the event loop
            plan = await asyncio.to_thread(plan_mounts, policy, tmp, registry)
        else:
            plan = plan_mounts(policy, tmp, registry)
        for pattern in plan.truncated:
            if pattern not in self._warned:
                self._warned.add(pattern)
                log.warning("deny rule %s matches more paths than the sandbox checks per command; it masks only "
                            "the first ones found", pattern)
        flags = ["--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"]
        if not policy.network:
            flags.append("--unshare-net")
        wrapped = [availability.bwrap, *flags, *plan.args, "--", *argv]
        return Launch(wrapped, {**env, "TMPDIR": "/tmp", "AGENT_BRIDGE_SANDBOXED": "1"}, wrapped=True,
                      release=plan.release)

    def _private_tmp(self, registry: ProcessRegistry | None) -> Path:
        if self._tmp is None or not self._tmp.is_dir():
            self._tmp = Path(tempfile.mkdtemp(prefix=f"agent-bridge-tmp-{os.getuid()}-"))  # 0700, ours
            if registry is not None:
                registry.add_cleanup(self._tmp, "tree")
        return self._tmp

    def close(self) -> None:
        """Remove the private /tmp (the bridge's exit; also done at interpreter exit)."""
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


@atexit.register
def _remove_tmps() -> None:
    for sandbox in list(_sandboxes):
        sandbox.close()


def sandbox_of(services: Services) -> Sandbox | None:
    """The session's sandbox (`services.sandbox`); None where there is none (tools run on their own)."""
    return services.sandbox

