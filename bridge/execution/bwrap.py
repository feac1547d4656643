"""bubblewrap (`bwrap`), the OS sandbox on Linux, as Claude Code's own: can it start here, and its command line.

The mounts come from bridge/execution/sandbox_plan.py, in this order (later ones win over earlier ones, so the
restrictive ones come last):

    --ro-bind / /  --dev /dev  --proc /proc        everything read-only; a fresh /dev and /proc
    --bind <session tmp> /tmp                      a private /tmp per session, TMPDIR=/tmp
    --tmpfs H, --ro-bind T T                       a folder's hook: an empty home, its tools' folders shown
    --bind W W                                     each writable root (workspace, added dirs, allowWrite)
    --bind A A, --ro-bind P P                      held paths that exist (runs_later.py: settings, memory,
                                                   git's config and hooks, `.vscode/`…); the directories on
                                                   the way to them are bound onto themselves, so they can't be
                                                   renamed away
    --ro-bind R R                                  Edit deny rules
    --tmpfs D --remount-ro D / --ro-bind /dev/null F   Read deny rules: masked
    --remount-ro H                                 the hook's empty home, once what is mounted in it is

plus `--unshare-pid` (its own /proc, so no `/proc/<pid>/root` of a process outside; killing bwrap kills
everything inside), `--unshare-ipc` and `--unshare-uts`, a seccomp filter refusing Unix sockets (the host's are
doors out: bridge/execution/seccomp.py) unless allowed, `--unshare-net` unless the network is allowed,
`--die-with-parent` (the sandbox dies with the bridge, SIGKILL included: a Linux extra, bridge/execution/linux.py;
without it the watchdog kills it) and `--cap-drop ALL` (as root, bwrap keeps every capability: the command could
unmount its own protections).
"""

from __future__ import annotations

import os
import sys

from bridge.execution import host, programs
from bridge.execution.sandbox_plan import Availability, MountPlan, probe, probed_once
from bridge.permissions.sandbox_policy import SandboxPolicy

BWRAP_ENV = "AGENT_BRIDGE_BWRAP"  # the bwrap binary to use (tests point it at a missing one)


def bwrap_path() -> str | None:
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return programs.helper("bwrap")


def probe_bwrap() -> Availability:
    """Whether bwrap can start a sandbox like ours; checked once per process (and bwrap binary)."""
    binary = bwrap_path()
    return probed_once(("bwrap", binary, host.linux_extras()), lambda: _probe(binary))


def _probe(binary: str | None) -> Availability:
    if not host.linux():
        return Availability(False, None, f"bubblewrap needs Linux; this is {sys.platform}")
    if binary is None:
        return Availability(False, None, "bubblewrap is not installed (`apt-get install bubblewrap`)")
    argv = [
        binary,
        *die_with_parent(),
        *NAMESPACES,
        "--unshare-net",
        "--cap-drop",
        "ALL",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--",
        "/bin/sh",
        "-c",
        ":",
    ]
    return probe(binary, argv, "bwrap")


NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-uts")
"""Its own processes, System V IPC and POSIX message queues (attack round 20: a command read a root-owned shared
memory segment of the host's), and host name."""


def die_with_parent() -> list[str]:
    return ["--die-with-parent"] if host.linux_extras() else []


def bwrap_argv(binary: str, policy: SandboxPolicy, plan: MountPlan, seccomp_fd: int | None = None) -> list[str]:
    """bwrap and its arguments, up to the `--` before the command. `seccomp_fd`: the filter bwrap loads
    (bridge/execution/seccomp.py: no Unix sockets), an open file passed to it."""
    flags = [*die_with_parent(), *NAMESPACES, "--cap-drop", "ALL"]
    if not policy.network:
        flags.append("--unshare-net")
    if seccomp_fd is not None:
        flags += ["--seccomp", str(seccomp_fd)]
    return [binary, *flags, *plan.args, "--"]
