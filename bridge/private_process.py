"""The bridge's own process is closed to the processes it starts: hooks, MCP servers and unsandboxed commands run
as the same user, and /proc/<bridge pid>/environ would give them the API key — the environment the bridge was
started with, which removing the key from `os.environ` does not change (bridge/environment.py keeps it out of
*their* environments only).

On Linux, `prctl(PR_SET_DUMPABLE, 0)` makes /proc/<pid>/environ, mem, maps, fd… of this process root's, and
refuses ptrace to the same user: the same as for a setuid program. Its other effects: no core dump, and no
debugger attaching without root (py-spy, gdb -p). The bridge's reads of its own /proc/self (fd, cgroup,
mountinfo) still work; it never reads its own environ there. What it starts is dumpable again after exec.

Sandboxed commands never saw the bridge (their own pid namespace and /proc). Elsewhere nothing is done: see
`keep_private`.
"""

from __future__ import annotations

import logging
import sys

_PR_SET_DUMPABLE = 4


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
    logging.getLogger(__name__).warning("could not close this process to its user's others (errno %s)", error)
    return False
