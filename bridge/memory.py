"""Memory files: `AGENTS.md` and `CLAUDE.md` (+ `CLAUDE.local.md`) from the project root down to the
cwd, and the user's own. They go into the system prompt, read once per session (stable for caching).

A folder's memory files are what a cloned repository says: each must be a regular file inside the folder that
holds it (an unpacked folder below a home kept in git, or below any repository, is not the repository's),
opened without following a link out of it (a committed `CLAUDE.md -> /proc/self/environ` would put every
environment variable into the first request), and no larger than `MAX_BYTES`. A file that isn't is skipped,
with the reason (`Memory.skipped`, told to the user). The user's own memory files may be links (dotfile
managers make them), but must still be regular files within the size cap: never a FIFO, a device or `/proc`.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from bridge import safefs

NAMES = ("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md")
MAX_CHARS = 40_000  # of all memory together, in the prompt
MAX_BYTES = 256 * 1024  # one file; larger ones are skipped whole (a cut instruction file is a wrong one)


class MemoryRefused(Exception):
    """Why a memory file was not read."""


@dataclass
class Memory:
    section: str = ""
    skipped: list[str] = field(default_factory=list)  # "path: why", for the user


def project_root(cwd: Path) -> Path:
    for directory in (cwd, *cwd.parents):
        if (directory / ".git").exists():
            return directory
    return cwd


def user_memory_files() -> list[Path]:
    config = Path(os.environ.get("AGENT_BRIDGE_CONFIG_DIR") or platformdirs.user_config_dir("agent-bridge"))
    return [config / "AGENTS.md", Path.home() / ".claude" / "CLAUDE.md"]


def _project_directories(cwd: Path) -> tuple[Path, list[Path]]:
    root = project_root(cwd)
    chain = [cwd, *cwd.parents]
    return root, (list(reversed(chain[: chain.index(root) + 1])) if root in chain else [cwd])


def memory_files(cwd: Path) -> list[Path]:
    """The memory files that exist by name (links included: reading them is where they are checked)."""
    _, directories = _project_directories(cwd)
    found = [path for path in user_memory_files() if os.path.lexists(path)]
    for directory in directories:
        found += [directory / name for name in NAMES if os.path.lexists(directory / name)]
    return found


def read_project_file(root: Path, path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """`path` (inside `root`) as a regular file reached without leaving `root` (bridge/safefs/: links are
    followed only while they stay inside it, the file is opened exactly where they lead). Raises MemoryRefused
    with the reason. Nothing inside git's own folder is read: a committed `CLAUDE.md -> .git/config` put the
    clone's settings into the first request, and a checkout's token can be there (`http.extraheader`)."""
    if _in_git(root, path):
        raise MemoryRefused("it leads into git's own folder (.git), which can hold the clone's credentials")
    try:
        return safefs.read_regular(root, path, max_bytes)
    except (safefs.Outside, safefs.LinkOut):
        raise MemoryRefused("it is a link to a file outside the project") from None
    except safefs.NotRegular:
        raise MemoryRefused("it is not a regular file") from None
    except safefs.TooBig as error:
        raise MemoryRefused(f"it is larger than {max_bytes // 1024} KiB ({error.size:,} bytes)") from None
    except OSError as error:
        raise MemoryRefused(_why(error)) from None


def _in_git(root: Path, path: Path) -> bool:
    """Whether `path`, its links followed, lies in a `.git` folder below `root` (what lies outside `root` is
    refused by the read itself). Checked by name before the read: a link swapped in between takes a process that
    can already write the folder."""
    try:
        relative = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except (OSError, ValueError):  # (another drive, on Windows)
        return False
    return any(part.lower() == ".git" for part in Path(relative).parts)


def read_user_file(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """The user's own memory file (links followed), if it is a regular file within the size cap."""
    try:
        fd = os.open(path, safefs.READ_FLAGS)  # O_NONBLOCK where the OS has it (not Windows)
    except OSError as error:
        raise MemoryRefused(_why(error)) from None
    return _read_regular(fd, max_bytes)


def _read_regular(fd: int, max_bytes: int) -> bytes:
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise MemoryRefused("it is not a regular file")
        if st.st_size > max_bytes:
            raise MemoryRefused(f"it is larger than {max_bytes // 1024} KiB ({st.st_size:,} bytes)")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise MemoryRefused(f"it is larger than {max_bytes // 1024} KiB")
        return data
    finally:
        os.close(fd)


def _why(error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return "it is reached through a link (a memory file of a folder is read only as a file of its own)"
    if error.errno == errno.ENOTDIR:
        return "a directory on its way is a link or not a directory"
    return f"it cannot be opened ({error.strerror})"


def load_memory(cwd: Path) -> Memory:
    memory = Memory()
    parts: list[str] = []
    budget = MAX_CHARS
    root, directories = _project_directories(cwd)
    user = [path for path in user_memory_files() if os.path.lexists(path)]
    project = [d / name for d in directories for name in NAMES if os.path.lexists(d / name)]
    for path in [*user, *project]:
        try:
            if path in user:
                data = read_user_file(path)
            else:  # a folder's: reached inside the project, and without leaving the folder that holds it: a folder
                # above the workspace (an unpacked tarball below a repository, a home kept in git) linked its
                # CLAUDE.md to a file elsewhere in the repository (`../../.env`, `~/.ssh`), sent to the model
                # unasked (attack round 36)
                data = read_project_file(root, path)
                if path.parent != root:
                    data = read_project_file(path.parent, path)
        except MemoryRefused as refused:
            memory.skipped.append(f"{path}: {refused}")
            continue
        text = data.decode("utf-8", errors="replace").strip()
        if not text or budget <= 0:
            continue
        text = text[:budget]
        budget -= len(text)
        parts.append(f"## {path}\n{text}")
    if parts:
        memory.section = "# Memory (instructions from the user's files; follow them)\n\n" + "\n\n".join(parts)
    return memory


def memory_section(cwd: Path) -> str:
    return load_memory(cwd).section
