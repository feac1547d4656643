"""What a command's result says when the OS sandbox refused something it tried: which path, why it is held or
out of reach, and what to do instead (the tool that asks, or the setting that allows it). Read from the
command's own output: the kernel's words for a refusal (a read-only file system, a busy mount point, no
network) name the path just before them or in quotes."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.permissions.sandbox_policy import SandboxPolicy, home_hides

if TYPE_CHECKING:
    from bridge.execution.sandbox_plan import MountPlan


def inside(path: Path, roots: tuple[Path, ...]) -> Path | None:
    """The deepest root holding `path`."""
    text = f"{path}/"
    holding = [r for r in roots if text.startswith(f"{r}/") or str(r) == "/"]
    return max(holding, key=lambda r: len(str(r))) if holding else None


_REFUSED = re.compile(
    r"Read-only file system|read-only file system|EROFS|\[Errno 30\]|Device or resource busy|"
    r"EBUSY|\[Errno 16\]"
)
_NO_NETWORK = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Network is unreachable|"
    r"Name or service not known|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|No address associated|"
    r"Failed to establish a new connection|network is unreachable",
    re.IGNORECASE,
)
# (a path starts a word: from inside a long one, every `/tmp/` in it would scan to its end, O(n^2) on the output)
# (dash, `sh`'s shell on Debian, says "cannot create /tmp/x/y: Directory nonexistent")
_HOST_TMP = re.compile(
    r"(?<![^\s'\"‘“`(])(/tmp/[^\s:'\"’”`]+)['\"’”`]?: (?:No such file or directory|Directory nonexistent)"
)
_EPERM = re.compile(r"Operation not permitted|PermissionError|EPERM|\[Errno 1\]")
_SOCKET = re.compile(r"socket|AF_UNIX|forkserver|multiprocessing|Listener|\bbind\b|\bconnect\b", re.IGNORECASE)
# an agent reached through its socket: gpg's (commit signing), ssh's
_AGENT = re.compile(
    r"can't connect to the agent|gpg failed to sign|connection to your authentication agent|connecting to agent"
)
_QUOTED = re.compile(r"""['"‘“`]([^'"’”`\n]+)['"’”`]""")
_BEFORE = re.compile(
    r"(?:^|\s)([^\s'\"‘’“”`]+?): (?:Read-only file system|Device or resource busy|"
    r"Operation not permitted)"
)
# Seatbelt refuses with EPERM, which other things say too: there, only a path the policy holds gets a note.
_REFUSED_SEATBELT = re.compile(r"Operation not permitted|EPERM|\[Errno 1\]")


def refusal_notes(output: str, policy: SandboxPolicy, plan: MountPlan) -> list[str]:
    """Why the sandbox refused what the output shows it refused, per path where the output names one."""
    notes: list[str] = []
    refused = _REFUSED_SEATBELT if plan.backend == "seatbelt" else _REFUSED
    lines = [line for line in output.splitlines() if refused.search(line)][:20]
    named: dict[str, str] = {}
    for line in lines:  # a path is quoted (`touch: cannot touch 'x': …`) or just before the error (`x: Read-only…`)
        for word in [*_QUOTED.findall(line), *_BEFORE.findall(line)]:
            word = word.strip()
            if not word or word.startswith("[") or len(word) > 500:
                continue
            path = Path(os.path.normpath(os.path.join(policy.cwd, os.path.expanduser(word))))
            why = _why_read_only(path, policy, plan)
            if why is not None:
                named.setdefault(str(path), why)
    for shown, why in list(named.items())[:5]:
        notes.append(f"The sandbox keeps {shown} read-only: {why}")
    if lines and not named and plan.backend != "seatbelt":
        notes.append(
            "The OS sandbox refused a write: commands may write only the workspace, its added directories and "
            "/tmp, and never the files held there (settings, memory files, git's config and hooks, editor "
            "folders). Write a held file with the Write or Edit tool (it asks you); to let commands write "
            'another directory, add it to "sandbox": {"filesystem": {"allowWrite": [...]}} in '
            ".agent-bridge/settings.json."
        )
    hidden = [m for m in _HOST_TMP.findall(output)[:20] if os.path.exists(m) or os.path.isdir(os.path.dirname(m))]
    if any(inside(Path(m), policy.writable) is None for m in hidden):
        notes.append(
            "Commands have their own /tmp (private to this session): files in this machine's /tmp are not "
            "visible to them. Put shared files in the workspace, or add their directory to "
            '"sandbox": {"filesystem": {"allowWrite": [...]}} in .agent-bridge/settings.json.'
        )
    if not policy.unix_sockets and plan.backend != "seatbelt" and _unix_socket_refused(output):
        notes.append(
            "The sandbox refuses Unix sockets (a command could reach the machine's daemons through one: Docker, "
            "systemd, an ssh or gpg agent), so what makes one fails with EPERM: multiprocessing's Manager() and "
            "its forkserver start, a server on a socket file, signing a commit with gpg. Use multiprocessing's fork "
            "start method, or, to allow "
            'them all, set "sandbox": {"network": {"allowAllUnixSockets": true}} in .agent-bridge/settings.json.'
        )
    home = policy.private_home
    if home is not None and _names_in(output, home):
        notes.append(
            "That is hidden: a folder's own hooks run unasked and see none of your home folder but its installed "
            "tools' folders (~/.local/bin, ~/.nvm, ~/.cargo/bin…): no settings (git's too), shell history, "
            "transcripts, tokens or other projects."
        )
    hidden_credentials = [path for path in policy.credentials if _names(output, path) and not home_hides(policy, path)]
    if hidden_credentials:
        shown = ", ".join(_home_form(path) for path in hidden_credentials[:3])
        first = _home_form(hidden_credentials[0])
        notes.append(
            f"The sandbox hides {shown} from commands: the user's credentials for other services are never readable "
            f"by what a command runs. If the user wants commands to read it, they add the allow rule "
            f"Read({first}/**) to their own settings (~/.config/agent-bridge/settings.json), or allow reading it "
            "when asked."
        )
    if not policy.network and _NO_NETWORK.search(output):
        notes.append(
            'The sandbox has no network. To allow it, set "sandbox": {"network": {"allowedDomains": ["*"]}} '
            "in .agent-bridge/settings.json."
        )
    return notes


_NOT_READ = re.compile(r"No such file or directory|Permission denied|Not a directory|Operation not permitted")


def _names(output: str, path: Path) -> bool:
    """Whether an error line of the output names `path`, as it is or from the home folder (`~/.aws/credentials`)."""
    home = os.path.expanduser("~")
    relative = os.path.relpath(path, home) if str(path).startswith(home) else None
    for line in output.splitlines()[-200:]:
        if _NOT_READ.search(line) and (str(path) in line or (relative is not None and relative in line)):
            return True
    return False


def _names_in(output: str, home: Path) -> bool:
    """Whether an error line of the output says a path in `home` (as it is or as `~/…`) can't be read."""
    forms = {os.path.join(home, ""), os.path.join(os.path.expanduser("~"), ""), "~/"}
    return any(_NOT_THERE.search(line) and any(f in line for f in forms) for line in output.splitlines()[-200:])


_NOT_THERE = re.compile(_NOT_READ.pattern + "|Directory nonexistent|Read-only file system")  # (dash's words)


def _home_form(path: Path) -> str:
    home = os.path.expanduser("~")
    return "~/" + os.path.relpath(path, home) if str(path).startswith(os.path.join(home, "")) else str(path)


def _unix_socket_refused(output: str) -> bool:
    """Whether the output's end says EPERM and speaks of sockets (a traceback names them lines before its error)."""
    tail = "\n".join(output.splitlines()[-200:])
    return (_EPERM.search(tail) is not None and _SOCKET.search(tail) is not None) or _AGENT.search(tail) is not None


def _why_read_only(path: Path, policy: SandboxPolicy, plan: MountPlan) -> str | None:
    real = Path(os.path.realpath(path))
    for mounted, held in plan.held:
        if real == mounted or real.is_relative_to(mounted):
            return (
                f"{held.why}. To change it, use the Write or Edit tool (it asks you), or run a command that "
                "names it on its own line (the permission question says so, and allowing it lets that command "
                "write it)."
            )
    if inside(real, policy.writable) is None:
        return (
            "it is outside the workspace; commands may write only the workspace, its added directories and /tmp. "
            'To allow it, add it to "sandbox": {"filesystem": {"allowWrite": ["//' + str(real).lstrip("/") + '"]}} '
            "(or permissions.additionalDirectories) in .agent-bridge/settings.json."
        )
    for pattern in policy.read_only:
        if pattern.matches(real) or pattern.matches(path):
            return f"an Edit deny rule ({pattern.base}/{pattern.pattern}) or sandbox.filesystem.denyWrite holds it."
    return None
