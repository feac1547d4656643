"""The programs the bridge itself runs — checkpoint `git`, the sandbox's `bwrap`, `setpriv`, `rg`, `env`,
`systemd-run` — found by absolute path, never in the folder.

An empty PATH entry (`export PATH="$EXTRA:$PATH"` with EXTRA unset gives `:/usr/bin:…`) or a relative one (`.`,
`node_modules/.bin`) means "the current directory", which is the folder the bridge works in: a `git` or `bwrap`
a repository ships would run outside any sandbox, with no question asked. So a helper is looked up only in the
absolute entries of PATH, and not in the working directory or below it (a sandboxed command may write there).
(Not `shutil.which`: on Windows, given a bare name, it tries the current directory first whatever PATH says.)

What commands, hooks and MCP servers get as PATH (bridge/environment.py `handed_out`) loses its empty and relative
entries too: in the folder, they would make an auto-allowed `ls` the repository's own program.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from bridge.environment import absolute_entries

_found: dict[tuple[str, str, str], str | None] = {}
_lock = threading.Lock()


def helper_path(path: str | None = None, cwd: str | None = None) -> str:
    """The PATH the bridge's helpers are found on (and run with): absolute entries outside the working directory
    (`path`: default ours; `cwd`: default ours)."""
    here = Path(cwd or _cwd()).resolve()
    kept: list[str] = []
    for entry in absolute_entries(os.environ.get("PATH", os.defpath) if path is None else path):
        try:
            real = Path(entry).resolve()
        except (OSError, RuntimeError):
            continue
        if real != here and here not in real.parents:
            kept.append(entry)
    return os.pathsep.join(kept)


def helper_env() -> dict[str, str]:
    """The environment a helper starts with: ours as handed out (no credentials of the bridge's: a same-user
    process could read them in the helper's /proc/PID/environ while it runs), PATH as `helper_path()`."""
    from bridge.environment import handed_out

    return {**handed_out(os.environ), "PATH": helper_path()}


def helper(name: str, *, outside: str | os.PathLike[str] | None = None) -> str | None:
    """The absolute path of the helper program `name` on `helper_path()`, or None; looked up once per PATH and
    folder (`outside`: the folder it runs in, when not our working directory — it is left out too)."""
    key = (name, os.environ.get("PATH", os.defpath), os.fspath(outside) if outside is not None else _cwd())
    with _lock:
        if key in _found:
            return _found[key]
    found = next(
        (
            os.path.abspath(candidate)
            for entry in helper_path(key[1], key[2]).split(os.pathsep)
            if entry
            for candidate in _named(os.path.join(entry, name))
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK)
        ),
        None,
    )
    with _lock:
        _found[key] = found
    return found


def _named(path: str) -> list[str]:
    """The files `path` may be: on Windows with each PATHEXT extension (`git` is `git.exe`), as a shell finds it."""
    if sys.platform != "win32" or os.path.splitext(path)[1]:
        return [path]
    extensions = os.environ.get("PATHEXT", ".COM;.EXE;.BAT;.CMD").split(";")
    return [path + extension for extension in extensions if extension]


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # removed under us: no folder to keep out
        return os.sep
