"""What the machine under the bridge offers its commands, asked at each use (tests switch it per process).

Process handling has a portable core — process trees found, signalled and reaped through psutil and the
POSIX or Windows primitives — and Linux extras on top: a child subreaper (orphans come back to us), a
parent-death signal (what we start dies with us, `kill -9` included), start times and environments read
straight from /proc (exact, and cheaper than psutil), cgroups for resource limits. `AGENT_BRIDGE_PORTABLE=1`
switches the extras off on Linux, so the paths macOS and Windows take run, and are tested, here too.

Nothing here is called at import time, and nothing POSIX-only is called on Windows.
"""

from __future__ import annotations

import os
import sys

PORTABLE_ENV = "AGENT_BRIDGE_PORTABLE"


def portable() -> bool:
    """The Linux-only extras are switched off (`AGENT_BRIDGE_PORTABLE` = 1/on/true/yes)."""
    return os.environ.get(PORTABLE_ENV, "").strip().lower() in ("1", "on", "true", "yes")


def linux() -> bool:
    return sys.platform.startswith("linux")


def linux_extras() -> bool:
    """Subreaper, parent-death signal, /proc, cgroups: Linux, unless switched off."""
    return linux() and not portable()


def macos() -> bool:
    return sys.platform == "darwin"


def windows() -> bool:
    return sys.platform == "win32"


def uid() -> int:
    """Our user id; -1 where there are none (Windows)."""
    getuid = getattr(os, "getuid", None)
    return int(getuid()) if getuid is not None and not windows() else -1


class CannotRun(Exception):
    """A command cannot run here as asked (no sandbox where one is required, no shell); the message says why and
    what to do, for the model and the user alike."""
