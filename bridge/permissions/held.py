"""What the sandbox holds, as data: a name held at every workspace root (`Held`), a concrete path with why it is
held (`HeldPath`), and what a shell command's text names as files. The line itself (what is held and why) is
drawn in runs_later.py; git's part of it in git_held.py."""

from __future__ import annotations

import os
import re
import shlex
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

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


_V = TypeVar("_V")


class StatCache(Generic[_V]):
    """Values worked out from files, each kept while its key (the files' `stat_key`s) stays the same. Safe to
    share between threads: two that miss together both compute, and the last one's value is kept. With
    `keep_none=False`, a None (a failure that may pass, such as a timeout) is worked out again next time."""

    def __init__(self, *, keep_none: bool = True) -> None:
        self._items: dict[Hashable, tuple[object, _V]] = {}
        self._lock = threading.Lock()
        self._keep_none = keep_none

    def get(self, name: Hashable, key: object, compute: Callable[[], _V]) -> _V:
        with self._lock:
            cached = self._items.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        value = compute()
        if value is not None or self._keep_none:
            with self._lock:
                self._items[name] = (key, value)
        return value


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
