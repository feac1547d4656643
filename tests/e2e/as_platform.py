"""Start the bridge as if this were another platform: `python as_platform.py darwin|win32 serve …`.

The standard library and the third-party packages are loaded first, as this machine's interpreter loads them
(asyncio picks its event loop, subprocess its way of starting children, sysconfig its build, the HTTP stack its
TLS trust store): their own platform branches are theirs, not the bridge's. Then `sys.platform` says the other
platform, and what that platform lacks is taken away where this process can take it: on Windows the POSIX-only
modules (fcntl, resource, termios, pwd, grp) can't be imported and the POSIX-only `os` calls and flags are gone;
on macOS the Linux-only ones are. So every `sys.platform`-dependent path of the bridge runs here, and a POSIX-only
call on one of them fails loudly. What can't be faked (the kernel, /proc, the signals the standard library itself
sends) stays Linux's.
"""

from __future__ import annotations

import asyncio
import asyncio.subprocess
import contextlib
import importlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

GONE = {
    "win32": [
        "killpg",
        "getpgid",
        "getsid",
        "getuid",
        "geteuid",
        "setsid",
        "pipe2",
        "pidfd_open",
        "O_NOFOLLOW",
        "O_DIRECTORY",
        "O_PATH",
        "O_TMPFILE",
        # O_CLOEXEC stays: the emulation keeps Linux's dir_fd opens, so safefs takes its walk back end, which
        # real Windows (no dir_fd) never reaches; its portable back end needs Windows' own APIs
        "sched_getaffinity",
    ],
    "darwin": ["pipe2", "pidfd_open", "O_PATH", "O_TMPFILE", "sched_getaffinity"],
}
UNIMPORTABLE = {"win32": ["fcntl", "resource", "termios", "pwd", "grp", "posix"], "darwin": []}


LOADED = (asyncio, selectors, shutil, signal, subprocess, tempfile)  # imported before the switch, on purpose
PRELOADED = (
    "zoneinfo",
    "pydantic",
    "pydantic_core",
    "anyio",
    "anyio._backends._asyncio",
    "pygls.server",
    "lsprotocol.types",
    "httpx",
    "httpx2",
    "anthropic",
    "truststore",
    "mimetypes",
    "uuid",
    "psutil",
)


def become(name: str) -> None:
    sysconfig.get_config_vars()
    for module in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    sys.platform = name
    for module in UNIMPORTABLE[name]:
        sys.modules[module] = None  # type: ignore[assignment]  # `import` of it raises ImportError
    for attribute in GONE[name]:
        if hasattr(os, attribute):
            delattr(os, attribute)


if __name__ == "__main__":
    if log := os.environ.get("AS_PLATFORM_STDERR"):  # the bridge's log, for the test to read
        os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), 2)
    become(sys.argv.pop(1))
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bridge.cli.main import entry

    sys.argv[0] = "agent-bridge"
    sys.exit(entry())
