"""The Linux extras on top of the portable process handling (bridge/execution/host.py switches them off):

- a child subreaper: orphans of our commands reparent to the bridge instead of init, so a double fork can't
  hide a process from the parent chain, and we reap their zombies;
- a parent-death signal: an unsandboxed shell (and an MCP server) starts through `setpriv --pdeathsig KILL`, and
  bubblewrap gets `--die-with-parent`, so what we start dies with us even when nothing else runs.

Without them the watchdog (bridge/execution/watchdog.py) and the next bridge's clean-up do the same work, a few
milliseconds later; the tree is still found by group, session and the token in its environment.
"""

from __future__ import annotations

import ctypes

from bridge.execution import host, programs

_PR_SET_CHILD_SUBREAPER = 36
_PDEATHSIG: dict[bool, list[str]] = {}


def set_child_subreaper() -> bool:
    """Make orphans of our descendants reparent to this process. False where unsupported or switched off."""
    if not host.linux_extras():
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def pdeathsig_prefix() -> list[str]:
    """`setpriv --pdeathsig KILL --`: what it starts dies with the bridge (util-linux; [] where missing or
    switched off). The signal follows the thread that forked: start the process from the event loop's thread."""
    extras = host.linux_extras()
    found = _PDEATHSIG.get(extras)
    if found is None:
        binary = programs.helper("setpriv") if extras else None
        found = _PDEATHSIG[extras] = [binary, "--pdeathsig", "KILL", "--"] if binary else []
    return found
