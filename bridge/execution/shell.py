"""What a command line runs in: `bash -c` (Git Bash on Windows, found as Claude Code finds it) with the
environment every command gets.

Windows: `CLAUDE_CODE_GIT_BASH_PATH` when set (a path that is not there is an error, not a fallback); else the
`bash.exe` of the Git for Windows that `git` on PATH belongs to (`<Git>\\cmd\\git.exe` → `<Git>\\bin\\bash.exe`);
else the usual install folders. None of them: commands can't run, and the message says where to get Git Bash and
how to point at one.
"""

from __future__ import annotations

import ntpath
import os
import shutil
from collections.abc import Callable, Mapping

from bridge.execution import host, programs

GIT_BASH_ENV = "CLAUDE_CODE_GIT_BASH_PATH"
NO_GIT_BASH = (
    "Commands on Windows run in Git Bash, and none was found (get it from "
    "https://git-scm.com/downloads/win). If it is installed but git is not on PATH, set the environment "
    f"variable {GIT_BASH_ENV} to its bash.exe, e.g. {GIT_BASH_ENV}=C:\\Program Files\\Git\\bin\\bash.exe"
)

# Non-interactive, plain output: no pagers waiting for a key, no credential prompts, no editors, no color
# unless the command asks for it (`--color=always`, or FORCE_COLOR/CLICOLOR_FORCE in the user's env).
COMMAND_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "NO_COLOR": "1",
    "TERM": "dumb",
    "AGENT_BRIDGE": "1",
}


class NoShell(host.CannotRun):
    """There is no shell to run commands in (Windows without Git Bash)."""


def command_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment commands run with: `base` (default: ours) plus `COMMAND_ENV`."""
    return {**(os.environ if base is None else base), **COMMAND_ENV}


def shell_argv(command: str) -> list[str]:
    """`bash -c command`: /bin/bash where there is one, Git Bash on Windows (NoShell when there is none)."""
    if host.windows():
        return [git_bash(), "-c", command]
    return ["/bin/bash", "-c", command] if os.path.exists("/bin/bash") else ["bash", "-c", command]


def sh_argv(command: str) -> list[str]:
    """`sh -c command` (hooks, as Claude Code runs them): /bin/sh, or Git Bash on Windows."""
    if host.windows():
        return [git_bash(), "-c", command]
    return ["/bin/sh", "-c", command]


_found: dict[tuple[str, str], str] = {}


def git_bash() -> str:
    """Git Bash's bash.exe (found once per PATH and setting)."""
    key = (os.environ.get(GIT_BASH_ENV, ""), os.environ.get("PATH", ""))
    if key not in _found:
        _found[key] = find_git_bash(os.environ, which=programs.helper)  # never the folder's git.exe
    return _found[key]


def find_git_bash(
    env: Mapping[str, str],
    *,
    which: Callable[[str], str | None] = shutil.which,
    exists: Callable[[str], bool] = os.path.isfile,
) -> str:
    """Where Git Bash is, by Claude Code's order; NoShell (saying what to do) when it is nowhere. Pure but for
    `which` and `exists`, so it is tested with Windows paths anywhere."""
    configured = env.get(GIT_BASH_ENV, "").strip().strip('"')
    if configured:
        if exists(configured):
            return configured
        raise NoShell(
            f"{GIT_BASH_ENV} is set to {configured!r}, but there is no file there. Point it at Git Bash's "
            "bash.exe, e.g. C:\\Program Files\\Git\\bin\\bash.exe."
        )
    candidates: list[str] = []
    git = which("git")
    if git:  # <Git>\cmd\git.exe or <Git>\bin\git.exe
        candidates.append(ntpath.join(ntpath.dirname(ntpath.dirname(git)), "bin", "bash.exe"))
    for variable, below in (
        ("ProgramFiles", ""),
        ("ProgramW6432", ""),
        ("ProgramFiles(x86)", ""),
        ("LOCALAPPDATA", "Programs"),
    ):
        base = env.get(variable)
        if base:
            candidates.append(
                ntpath.join(base, below, "Git", "bin", "bash.exe")
                if below
                else ntpath.join(base, "Git", "bin", "bash.exe")
            )
    for candidate in dict.fromkeys(candidates):
        if exists(candidate):
            return candidate
    raise NoShell(NO_GIT_BASH)
