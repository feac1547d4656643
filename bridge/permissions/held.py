"""What the sandbox holds, as data: a name held at every workspace root (`Held`), a concrete path with why it is
held (`HeldPath`), and what a shell command's text names as files. The line itself (what is held and why) is
drawn in runs_later.py; git's part of it in git_held.py."""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PathKind = Literal["file", "dir"]
Protection = Literal["settings", "memory"]


@dataclass(frozen=True)
class Held:
    """A name held at every workspace root (`/`-separated, relative), what it is, and why, in words."""

    name: str
    kind: PathKind
    why: str
    strength: Protection = "settings"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.name.split("/"))


@dataclass(frozen=True)
class HeldPath:
    """A concrete path to hold: where, what kind, and why (in words)."""

    path: Path
    kind: PathKind
    why: str
    strength: Protection = "settings"
    checked: Literal["", "repository", "config", "hooks"] = ""
    """What may appear here when it is missing, its content checked instead (sandbox_watch.py): a new
    repository (`.git`), a git directory's config (only inert settings), its hooks directory (only samples)."""

    @property
    def new_repository(self) -> bool:
        return self.checked == "repository"


def stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def under(value: str, base: Path) -> Path:
    return Path(os.path.normpath(os.path.join(base, os.path.expanduser(value))))


_SPLIT = re.compile(r"[\s;&|()<>`'\"=]+")


def command_paths(command: str, cwd: Path, *, variables: dict[str, str] | None = None) -> list[Path]:
    """Files a shell command names, as far as the text shows: each word with a `/`, or naming a file that exists
    in `cwd`, after `$VAR`/`${VAR}` (from `variables`) and `~` are expanded. Over-approximate on purpose: a
    word held by mistake costs a question, a script missed runs unasked."""
    text = command
    for name, value in (variables or {}).items():
        text = text.replace(f"${{{name}}}", value).replace(f"${name}", value)
    try:
        words = shlex.split(text, comments=False)
    except ValueError:
        words = []
    words += _SPLIT.split(text)
    found: list[Path] = []
    for word in dict.fromkeys(w for w in words if w and not w.startswith("-") and "$" not in w):
        path = under(word, cwd)
        if ("/" in word or os.path.isfile(path)) and path not in found:
            found.append(path)
    return found
