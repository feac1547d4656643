"""The bridge's own process is closed to the processes it starts: hooks, MCP servers and unsandboxed commands run
as the same user, and /proc/<bridge pid>/environ would give them the API key — the environment the bridge was
started with, which removing the key from `os.environ` does not change (bridge/environment.py keeps it out of
*their* environments only).

On Linux, `prctl(PR_SET_DUMPABLE, 0)` makes /proc/<pid>/environ, mem, maps, fd… of this process root's, and
refuses ptrace to the same user: the same as for a setuid program. Its other effects: no core dump, and no
debugger attaching without root (py-spy, gdb -p). The bridge's reads of its own /proc/self (fd, cgroup,
mountinfo) still work; it never reads its own environ there. What it starts is dumpable again after exec.

Root is the exception: what root starts may read any process's /proc files, dumpable or not (and dropping
`CAP_SYS_PTRACE` alone from what it starts does not stop it here). So the credentials' values are also wiped from
the environment block the process started with (`scrub_environ`): /proc/<pid>/environ shows that block, for
anyone who may read it, and Python had copied it into `os.environ` before the bridge ran.

Sandboxed commands never saw the bridge (their own pid namespace and /proc). Elsewhere nothing is done: see
`keep_private`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

_PR_SET_DUMPABLE = 4
# The bridge's own credentials by name (bridge/environment.py hands none of them to anything it starts).
BRIDGE_CREDENTIALS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
)


def keep_private() -> bool:
    """Close this process to other processes of its user, where the system allows it; whether it is closed.

    macOS has no such switch: its process arguments and environment (sysctl KERN_PROCARGS2, `ps -E`) are
    readable by the same user; PT_DENY_ATTACH only refuses a debugger. Windows: a process of the same user may
    open another's memory. There, only a key that is not in the environment the process started with is safe."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0:
            return True
        error = ctypes.get_errno()
    except (OSError, AttributeError) as failure:
        error = getattr(failure, "errno", None) or 0
    import logging

    logging.getLogger(__name__).warning("could not close this process to its user's others (errno %s)", error)
    return False


def scrub_environ(names: Iterable[str]) -> list[str]:
    """Wipe the values of `names` (with zero bytes) in the environment block this process started with, which
    /proc/<pid>/environ shows; the names whose values were wiped. `os.environ` keeps them (a copy). What the
    process starts without an environment of its own would inherit the wiped values: the bridge hands every child
    its own (bridge/environment.py), which never holds them anyway. Linux only ([] elsewhere)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        with open("/proc/self/stat", "rb") as file:
            stat = file.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end: fields 50 and 51 of stat(5)
        import ctypes

        block = ctypes.string_at(start, end - start)
    except (OSError, ValueError, IndexError) as failure:
        import logging

        logging.getLogger(__name__).warning("could not wipe the credentials from the environment block: %s", failure)
        return []
    wiped: list[str] = []
    for name in names:
        entry = name.encode() + b"="
        at = 0 if block.startswith(entry) else block.find(b"\0" + entry) + 1
        if at <= 0 and not block.startswith(entry):
            continue
        value = at + len(entry)
        stop = block.find(b"\0", value)
        stop = len(block) if stop < 0 else stop
        if stop > value:
            ctypes.memset(start + value, 0, stop - value)
            wiped.append(name)
    return wiped


def close_early() -> None:
    """`keep_private` and `scrub_environ` of the bridge's credentials (and of ANTHROPIC_BASE_URL, which may hold a
    gateway's password), first thing (bridge/cli/start.py): nothing but this module loads before."""
    keep_private()
    scrub_environ((*BRIDGE_CREDENTIALS, "ANTHROPIC_BASE_URL"))
