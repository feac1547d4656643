"""Seatbelt (`sandbox-exec`), the OS sandbox on macOS: a profile in Apple's sandbox language (SBPL) rendered from
the same plan bubblewrap mounts (bridge/execution/sandbox_plan.py), so the two hold the same things:

    (allow default)                                everything else is as it would be outside
    (deny file-write*)                             everything read-only ...
    (allow file-write* (subpath W) …)              ... but /dev, the session's temp dir and each writable root
    (deny file-write* (subpath P) …)               held paths, existing or not (no placeholder, nothing to watch
                                                   for them: a rule can name a path that isn't there)
    (deny file-write-unlink (literal A) …)         the directories on the way to them can't be moved away
    (allow file-write* (subpath G) …)              what the user allowed this call to write
    (deny file-write* (subpath R) …)               Edit deny rules
    (deny file-read-data (subpath H))              a folder's hook: the home folder hidden ...
    (allow file-read-data (subpath T) …)           ... but for the tools' folders and the roots in it
    (deny file-read* file-write* (subpath M) …)    Read deny rules: unreadable
    (deny network-outbound (remote ip "*:*")) …    no network unless it is allowed

Later rules win over earlier ones, so the restrictive ones come last, as in the bwrap command line. Paths are the
real ones (macOS resolves `/tmp` to `/private/tmp` before the rules see it). Held paths that may appear with their
content checked instead (a new repository from `git init`, a repository's missing config or hooks) are not denied:
they are checked after the command, as bwrap's watch does without inotify. `sandbox-exec` execs the command: no
wrapper process stays, and the command gets every signal itself.

Not run here (Linux): the profile is pinned per policy case and parsed as s-expressions by the tests; whether
macOS accepts it is for a Mac to show (README's platform table says so).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bridge.execution import host
from bridge.execution.sandbox_notes import inside
from bridge.execution.sandbox_plan import Availability, MountPlan, probe, probed_once
from bridge.permissions.sandbox_policy import SandboxPolicy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
SANDBOX_EXEC_ENV = "AGENT_BRIDGE_SANDBOX_EXEC"  # the sandbox-exec to use (tests point it elsewhere)
DEVICES = "/dev"  # ttys, /dev/null, /dev/fd: writable, as bwrap's fresh /dev is


def sandbox_exec_path() -> str:
    return os.environ.get(SANDBOX_EXEC_ENV) or SANDBOX_EXEC


def probe_seatbelt() -> Availability:
    """Whether sandbox-exec can start a profile like ours; checked once per process (and binary)."""
    binary = sandbox_exec_path()
    return probed_once(("seatbelt", binary), lambda: _probe(binary))


def _probe(binary: str) -> Availability:
    if not host.macos():
        return Availability(False, None, f"Seatbelt needs macOS; this is {sys.platform}", "seatbelt")
    if not os.access(binary, os.X_OK):
        return Availability(
            False, None, f"{binary} is missing (macOS ships it; is this a restricted system?)", "seatbelt"
        )
    argv = [
        binary,
        "-p",
        '(version 1)\n(allow default)\n(deny network-outbound (remote ip "*:*"))',
        "--",
        "/bin/sh",
        "-c",
        ":",
    ]
    return probe(binary, argv, "seatbelt")


def quote(text: str) -> str:
    """An SBPL string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _rule(action: str, operations: str, filters: list[str], why: str) -> list[str]:
    if not filters:
        return []
    return [f"; {why}", f"({action} {operations}", *(f"  {each}" for each in filters[:-1]), f"  {filters[-1]})"]


def _subpaths(paths: list[Path] | tuple[Path, ...]) -> list[str]:
    return [f"(subpath {quote(str(p))})" for p in dict.fromkeys(paths)]


def profile(policy: SandboxPolicy, plan: MountPlan, tmp: Path) -> str:
    """The SBPL profile for one command: what `plan` holds, in the order that makes the restrictive rules win."""
    held = [*plan.read_only, *(h.path for h in plan.missing if not h.checked)]  # checked ones: after the command
    lines = [
        "(version 1)",
        "; agent-bridge: generated from the session's sandbox policy",
        "(allow default)",
        "; everything read-only but what follows",
        "(deny file-write*)",
    ]
    lines += _rule(
        "allow",
        "file-write*",
        _subpaths([Path(DEVICES), Path(os.path.realpath(tmp)), *policy.writable]),
        "writable: devices, the session's temp dir, the workspace roots",
    )
    lines += _rule("deny", "file-write*", _subpaths(held), "held: settings, memory, what runs later")
    lines += _rule(
        "deny",
        "file-write-unlink",
        [f"(literal {quote(str(p))})" for p in dict.fromkeys(plan.ways)],
        "the way to what is held: it can't be moved away",
    )
    granted = [g for g in plan.grants if inside(g, policy.writable) is not None]  # bwrap can't open others either
    lines += _rule("allow", "file-write*", _subpaths(granted), "what the user allowed this call to write")
    lines += _rule("deny", "file-write*", _subpaths(plan.edit_denied), "Edit deny rules")
    home = policy.private_home
    if home is not None:  # what is in it can't be read or listed (its names can still be stat'ed, as on the way)
        lines += _rule("deny", "file-read-data", _subpaths([home]), "a folder's hook: the home folder hidden ...")
        shown = [Path(os.path.realpath(p)) for p in policy.home_tools] + [
            w for w in policy.writable if w.is_relative_to(home)
        ]
        lines += _rule("allow", "file-read-data", _subpaths(shown), "... but the tools' folders and the roots in it")
    lines += _rule("deny", "file-read* file-write*", _subpaths(plan.masked), "Read deny rules: unreadable")
    if not policy.network:
        lines += [
            "; no network",
            '(deny network-outbound (remote ip "*:*"))',
            '(deny network-inbound (local ip "*:*"))',
            '(deny network-bind (local ip "*:*"))',
        ]
    return "\n".join(lines) + "\n"


def seatbelt_argv(binary: str, text: str) -> list[str]:
    """sandbox-exec and its arguments, up to the `--` before the command."""
    return [binary, "-p", text, "--"]
