"""Resource limits for every sandboxed command: memory, processes, file size and CPU time, each command in its
own bounds, so a runaway command ends with a result that says which limit it met — never the bridge.

Backends, best first; `AGENT_BRIDGE_LIMITS` forces one (`cgroup2`, `systemd`, `cgroup1`, `rlimit`, `off`). The
cgroup ones are Linux extras (bridge/execution/host.py): macOS, and Linux with the extras off, get `rlimit`;
Windows has no rlimits, so `off` (a command's job object could bound it: not done yet).
- `cgroup2`: a child of the bridge's own cgroup where it is ours to divide (a container's root, a delegated
  scope): `memory.max`, `memory.swap.max`, `pids.max` for the command's whole tree;
- `systemd`: `systemd-run --user --scope -p MemoryMax= -p TasksMax=` — a desktop's user manager makes the scope;
- `cgroup1`: writable v1 `memory` and `pids` hierarchies (containers running as root on a hybrid host);
- `rlimit`: per process only: RLIMIT_DATA (memory a process writes to; reservations such as WebAssembly's
  guard regions don't count), RLIMIT_NPROC (processes of the user inside the sandbox's user namespace; the
  kernel exempts root), and the supervisor counting the command's tree at each sweep as a last resort.
File size (RLIMIT_FSIZE) and CPU time (RLIMIT_CPU: SIGXCPU, then SIGKILL 5 s later) are rlimits in every
backend: cgroups have neither. The command enters its cgroup and takes its rlimits in a small bash prologue
that then `exec`s bwrap, so nothing it forks starts outside them.

Defaults are generous enough for real builds: memory half the RAM (or of the bridge's own cgroup limit),
4096 processes and threads, 4 GiB per file, CPU seconds of the command's timeout times the CPUs (none for a
background shell). `sandbox.limits.{memory,processes,fileSize,cpuSeconds}` change them
(bridge/permissions/command_limits.py; `"unlimited"` lifts one); a breach names the setting to raise.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shlex
import subprocess
import threading
from pathlib import Path
from typing import Literal

from bridge.execution import host, programs
from bridge.permissions.command_limits import CPU_GRACE, LimitName, Limits, LimitSettings, ram_bytes

log = logging.getLogger(__name__)

LIMITS_ENV = "AGENT_BRIDGE_LIMITS"
Backend = Literal["cgroup2", "systemd", "cgroup1", "rlimit", "off"]
BACKENDS: tuple[Backend, ...] = ("cgroup2", "systemd", "cgroup1", "rlimit")
SETTING_EXAMPLE: dict[LimitName, str] = {
    "memory": '"16GB"',
    "processes": "8192",
    "fileSize": '"16GB"',
    "cpuSeconds": "3600",
}


def _own_memory_limit() -> int | None:
    """The bridge's own cgroup memory limit, where it has one (a container's)."""
    for path in (_own_cgroup2_dir(), _own_cgroup1_dir("memory")):
        if path is None:
            continue
        for name in ("memory.max", "memory.limit_in_bytes"):
            with contextlib.suppress(OSError, ValueError):
                text = (path / name).read_text().strip()
                if text != "max" and int(text) < 2**60:
                    return int(text)
    return None


def default_memory() -> int:
    """Half the RAM, or of the bridge's own cgroup limit where that is lower; at least 512 MiB."""
    total = ram_bytes()
    own = _own_memory_limit()
    return max(512 * 1024**2, min(total, own or total) // 2)


def limits_for(settings: LimitSettings, *, timeout_s: float | None) -> Limits:
    return settings.resolve(timeout_s=timeout_s, default_memory=default_memory(), cpus=os.cpu_count() or 1)


# -- where cgroups are --------------------------------------------------------------------------------------


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _mounts() -> list[tuple[Path, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    out: list[tuple[Path, str, set[str]]] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and tail and tail[0] in ("cgroup", "cgroup2") and fields[3] == "/":
            options = set(tail[2].split(",")) if len(tail) > 2 else set()
            out.append((Path(fields[4].replace("\\040", " ")), tail[0], options))
    return out


def _own_cgroup1_dir(controller: str) -> Path | None:
    path = _own_cgroups().get(controller)
    mount = next((m for m, kind, opts in _mounts() if kind == "cgroup" and controller in opts), None)
    return mount / path.lstrip("/") if mount is not None and path is not None else None


def _own_cgroup2_dir() -> Path | None:
    path = _own_cgroups().get("")
    mount = next((m for m, kind, _ in _mounts() if kind == "cgroup2"), None)
    return mount / path.lstrip("/") if mount is not None and path is not None else None


# -- choosing a backend ------------------------------------------------------------------------------------

_chosen: dict[tuple[str, bool], Backend] = {}
_choose_lock = threading.Lock()
_counter = 0


def backend() -> Backend:
    """The backend for this process (checked once; `AGENT_BRIDGE_LIMITS` forces one)."""
    forced = os.environ.get(LIMITS_ENV, "").strip().lower() or "auto"
    with _choose_lock:
        key = (forced, host.linux_extras())
        found = _chosen.get(key)
        if found is None:
            found = _chosen[key] = _choose(forced)
            log.info("resource limits for commands: %s", found)
        return found


def _choose(forced: str) -> Backend:
    if forced == "off" or host.windows():
        return "off"
    if not host.linux_extras():
        return "rlimit"
    for name in BACKENDS:
        if forced == name:
            if name != "rlimit" and not _available(name):
                log.warning("%s=%s is not available here; commands run with rlimits only", LIMITS_ENV, forced)
                return "rlimit"
            return name
    if forced != "auto":
        log.warning(
            "%s=%s is not one of auto, %s, off; choosing automatically", LIMITS_ENV, forced, ", ".join(BACKENDS)
        )
    for name in BACKENDS[:-1]:
        if _available(name):
            return name
    return "rlimit"


def _available(name: Backend) -> bool:
    if not os.path.exists("/proc/self/cgroup") or not os.access("/bin/bash", os.X_OK):  # the prologue's shell
        return False
    try:
        if name == "cgroup2":
            return _probe_cgroup2()
        if name == "cgroup1":
            return all(_probe_dir(_own_cgroup1_dir(c)) for c in ("memory", "pids"))
        if name == "systemd":
            return _probe_systemd()
    except OSError:
        return False
    return name == "rlimit"


def _probe_dir(parent: Path | None) -> bool:
    if parent is None or not parent.is_dir():
        return False
    probe = parent / f"agent-bridge-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    with contextlib.suppress(OSError):
        probe.rmdir()
    return True


def _probe_cgroup2() -> bool:
    own = _own_cgroup2_dir()
    if own is None or not (own / "cgroup.controllers").exists():
        return False
    wanted = {"memory", "pids"}
    enabled = set((own / "cgroup.subtree_control").read_text().split())
    if not wanted <= enabled:
        if not wanted <= set((own / "cgroup.controllers").read_text().split()):
            return False
        try:  # fails (EBUSY) where our cgroup holds processes and is not the root: not ours to divide
            (own / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted - enabled))
        except OSError:
            return False
    return _probe_dir(own)


def _probe_systemd() -> bool:
    systemd_run = programs.helper("systemd-run")
    if systemd_run is None:
        return False
    try:
        done = subprocess.run(
            [systemd_run, "--user", "--scope", "--quiet", "--collect", "-p", "TasksMax=64", "true"],
            capture_output=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
            check=False,
            env=programs.helper_env(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


# -- one command's bounds ----------------------------------------------------------------------------------


class Bounds:
    """A command's limits as made for one backend: the prologue that puts the command in them, what to
    check for a breach, and the cgroups to remove once its tree is gone."""

    def __init__(self, limits: Limits, kind: Backend) -> None:
        global _counter
        self.limits = limits
        self.backend = kind
        self.cgroups: list[Path] = []
        self.breached: LimitName | None = None
        self._baseline = (0, 0)
        with _choose_lock:
            _counter += 1
            self._name = f"agent-bridge-{os.getpid()}-{_counter}"

    def prepare(self) -> list[str]:
        """Make the cgroups (if any); the argv prefix that enters them and sets the rlimits, then `exec`s the
        rest. Raises OSError where a cgroup can't be made (the caller falls back to rlimits)."""
        script = ["set +o posix"]  # POSIXLY_CORRECT would make ulimit count 512-byte blocks
        prefix: list[str] = []
        limits = self.limits
        if self.backend in ("cgroup1", "cgroup2"):
            plan = self._cgroup_files()
            taken_sets = POOL.take(self.backend, len(plan))
            pooled: list[Path | None] = list(taken_sets) if taken_sets else [None for _ in plan]
            for (fresh, files), taken in zip(plan, pooled, strict=True):
                folder = taken or fresh
                if taken is None:
                    folder.mkdir()
                self.cgroups.append(folder)
                for name, value in files:
                    if (folder / name).exists():
                        try:
                            (folder / name).write_text(
                                "max"
                                if value is None and name.endswith(".max")
                                else str(-1 if value is None else value)
                            )
                        except OSError:
                            if not name.endswith(("swap.max", "memsw.limit_in_bytes")):  # no swap accounting: fine
                                raise
                script.append(f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))} || exit 125")
            self._baseline = self._counters()
        elif self.backend == "systemd":
            prefix = [
                programs.helper("systemd-run") or "systemd-run",
                "--user",
                "--scope",
                "--quiet",
                "--collect",
                f"--unit={self._name}",
            ]
            if limits.memory is not None:
                prefix += ["-p", f"MemoryMax={limits.memory}", "-p", "MemorySwapMax=0"]
            if limits.processes is not None:
                prefix += ["-p", f"TasksMax={limits.processes}"]
            prefix.append("--")
        if limits.file_size is not None:
            script.append(f"ulimit -f {_capped('RLIMIT_FSIZE', limits.file_size) // 1024}")
        if limits.cpu_seconds is not None:
            hard = _capped("RLIMIT_CPU", limits.cpu_seconds + CPU_GRACE)
            script.append(f"ulimit -t {hard} && ulimit -S -t {min(hard, limits.cpu_seconds)}")
        if self.backend == "rlimit" and limits.memory is not None:
            script.append(f"ulimit -d {_capped('RLIMIT_DATA', limits.memory) // 1024}")
        if self.backend == "rlimit" and limits.processes is not None:
            script.append(f"ulimit -u {_capped('RLIMIT_NPROC', limits.processes)}")
        script.append('exec "$@"')
        return [*prefix, "/bin/bash", "-c", "; ".join(script), "agent-bridge-limits"]

    def _cgroup_files(self) -> list[tuple[Path, list[tuple[str, int | str | None]]]]:
        limits = self.limits
        if self.backend == "cgroup2":
            own = _own_cgroup2_dir()
            assert own is not None
            swap = 0 if limits.memory else None
            return [
                (
                    own / self._name,
                    [("memory.max", limits.memory), ("memory.swap.max", swap), ("pids.max", limits.processes)],
                )
            ]
        memory, pids = _own_cgroup1_dir("memory"), _own_cgroup1_dir("pids")
        assert memory is not None and pids is not None
        return [
            (
                memory / self._name,
                [
                    ("memory.memsw.limit_in_bytes", None),  # lifted first: a pooled cgroup's
                    ("memory.limit_in_bytes", limits.memory),  # may be below the new limit
                    ("memory.memsw.limit_in_bytes", limits.memory),
                ],
            ),
            (pids / self._name, [("pids.max", limits.processes)]),
        ]

    def fallback(self) -> None:
        """A cgroup could not be made: this command runs with rlimits only."""
        self.backend = "rlimit"
        self.cgroups = []

    def _counters(self) -> tuple[int, int]:
        """(OOM kills, refused forks) counted in the command's cgroups so far (a pooled cgroup counts on)."""
        oom = forks = 0
        for folder in self.cgroups:
            oom += _counter_of(folder / "memory.events", "oom_kill") + _counter_of(
                folder / "memory.oom_control", "oom_kill"
            )
            forks += _counter_of(folder / "pids.events", "max")
        return oom, forks

    def breach(self) -> LimitName | None:
        """Which cgroup limit the command met (an OOM kill, a refused fork), if any; remembered once seen."""
        if self.breached is None and self.cgroups:
            oom, forks = self._counters()
            if oom > self._baseline[0]:
                self.breached = "memory"
            elif forks > self._baseline[1]:
                self.breached = "processes"
        return self.breached

    def note_processes(self, count: int) -> bool:
        """The supervisor's count of the tree (the rlimit backend's last resort): True when over the bound."""
        if self.backend in ("rlimit", "off") and self.limits.processes is not None and count > self.limits.processes:
            self.breached = self.breached or "processes"
            return True
        return False

    def from_exit(self, code: int | None, output: str) -> LimitName | None:
        """A breach the command's end shows: SIGXFSZ / SIGXCPU (bwrap reports 128+n), or the shell's words for
        them, or a memory error in the rlimit backend."""
        if self.breach() is not None:
            return self.breached
        if code in (-25, 153) or "File size limit exceeded" in output:
            self.breached = "fileSize"
        elif code in (-24, 152) or "CPU time limit exceeded" in output:
            self.breached = "cpuSeconds"
        elif self.backend == "rlimit" and self.limits.memory is not None and _OUT_OF_MEMORY.search(output[-20000:]):
            self.breached = "memory"
        return self.breached

    def message(self, name: LimitName) -> str:
        what = {
            "memory": "The command used more memory than the sandbox allows a command",
            "processes": "The command tried to run more processes and threads at once than the sandbox allows",
            "fileSize": "A process of the command wrote a file larger than the sandbox allows",
            "cpuSeconds": "A process of the command used more CPU time than the sandbox allows",
        }[name]
        return (
            f"{what} ({self.limits.describe(name)}), so the sandbox stopped it. If it needs more, raise the limit: "
            f'"sandbox": {{"limits": {{"{name}": {SETTING_EXAMPLE[name]}}}}} in .agent-bridge/settings.json '
            '("unlimited" lifts it).'
        )

    def release(self) -> list[Path]:
        """The tree is gone: its cgroups go back to the pool (or are removed); the ones removed. What they
        counted is read first: the result is made after this."""
        self.breach()
        folders, self.cgroups = self.cgroups, []
        return POOL.give(self.backend, folders) if folders else []


class CgroupPool:
    """Per-command cgroups, kept for the next command. A fresh memory cgroup makes the command in it ~10 ms
    slower to start (measured here: 20 ms vs 12 for `bwrap … echo x`); one used before costs ~1.5 ms. A cgroup
    taken again gets the new command's limits, and its event counters are read at the start (they count on).
    Removed at exit (and by the process registry after a crash); one still busy with an exiting process is
    removed at a later release."""

    SIZE = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[list[Path]]] = {}
        self._busy: list[Path] = []  # could not be removed yet: tried again at each release

    def take(self, backend: str, count: int) -> list[Path] | None:
        with self._lock:
            idle = self._idle.get(backend, [])
            while idle:
                folders = idle.pop()
                if len(folders) == count and all(f.is_dir() for f in folders):
                    return folders
                self._remove(folders)
        return None

    def give(self, backend: str, folders: list[Path]) -> list[Path]:
        """Keep `folders` for the next command, or remove them; the ones removed."""
        with self._lock:
            removed = self._remove(self._busy)
            idle = self._idle.setdefault(backend, [])
            if len(idle) < self.SIZE and all(f.is_dir() for f in folders):
                idle.append(folders)
                return removed
            return removed + self._remove(folders)

    def _remove(self, folders: list[Path]) -> list[Path]:
        removed: list[Path] = []
        for folder in folders:
            try:
                folder.rmdir()
                removed.append(folder)
            except FileNotFoundError:
                removed.append(folder)
            except OSError:
                if folder not in self._busy:
                    self._busy.append(folder)
                continue
            if folder in self._busy:
                self._busy.remove(folder)
        return removed

    def drain(self) -> None:
        with self._lock:
            for sets in self._idle.values():
                for folders in sets:
                    self._remove(folders)
            self._idle.clear()
            self._remove(list(self._busy))


POOL = CgroupPool()
atexit.register(POOL.drain)


def _capped(name: str, value: int) -> int:
    """`value`, or the bridge's own hard limit where that is lower (ulimit can't raise it)."""
    import resource  # POSIX: not imported where there are no rlimits (Windows)

    which = getattr(resource, name)
    hard = resource.getrlimit(which)[1]
    return value if hard == resource.RLIM_INFINITY else max(1, min(value, hard))


_OUT_OF_MEMORY = re.compile(
    r"Cannot allocate memory|MemoryError|std::bad_alloc|out of memory|JavaScript heap out of "
    r"memory|fatal error: runtime: cannot allocate memory",
    re.IGNORECASE,
)


def _counter_of(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0


def bounds_for(limits: Limits) -> Bounds | None:
    """A command's bounds on this machine's backend; None when limits are off. A cgroup that can't be made
    falls back to rlimits for this command."""
    kind = backend()
    if kind == "off":
        return None
    return Bounds(limits, kind)
