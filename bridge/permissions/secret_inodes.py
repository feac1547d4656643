"""The files of the bridge's own secrets by inode, to tell a hard link to one (another name of the same file, which
no path comparison sees) from an ordinary file.

Only a regular file with more than one name can be such a link, so a file with one name costs one `stat`. The
secrets' inodes are listed once and kept while no directory they were listed from changed (a new or replaced
file changes its directory's mtime; a listing within a second of a change is not kept: a change in the same
clock tick would not show). The listing is bounded (`MAX_ENTRIES`); past it every file with more than one name
on a secret's device is taken for one (fail closed). Whether a secret has a second name at all (`any_linked`)
is asked of the files themselves each time (a new link changes the file, not its directory): a tree is searched
for links only then.
"""

from __future__ import annotations

import fnmatch
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bridge.permissions.linked_paths import file_key

MAX_ENTRIES = 100_000
_SETTLED_NS = 1_000_000_000


@dataclass
class _Index:
    files: dict[tuple[int, int], str] = field(default_factory=dict)  # (st_dev, st_ino) -> what
    paths: list[str] = field(default_factory=list)
    dirs: dict[str, int | None] = field(default_factory=dict)  # listed directory -> its mtime (None: absent)
    devices: set[int] = field(default_factory=set)
    cut_short: bool = False
    settled: bool = True


class SecretInodes:
    def __init__(self, secrets: tuple[tuple[Path, str, str], ...] = ()) -> None:
        """`secrets`: (base directory, pattern below it with `*` parts, what it is)."""
        self._secrets = secrets
        self._index: _Index | None = None
        self._lock = threading.Lock()

    def linked(self, path: str) -> str | None:
        """What secret the file at `path` is another name of, if it is one."""
        if not self._secrets:
            return None
        key = file_key(path)
        if key is None:
            return None
        index = self.index()
        found = index.files.get(key)
        if found is None and index.cut_short and key[0] in index.devices:
            return "one of them, maybe: there are too many to tell"
        return found

    def any_linked(self) -> bool:
        """Whether some secret file has another name now (or can't be told)."""
        if not self._secrets:
            return False
        index = self.index()
        if index.cut_short:
            return True
        for path in index.paths:
            try:
                if os.lstat(path).st_nlink > 1:
                    return True
            except OSError:
                continue
        return False

    def links_under(self, roots: list[Path]) -> tuple[list[str], bool]:
        """The other names (hard links) of the secrets' files found below `roots`, and whether the walk was cut
        short (`MAX_ENTRIES`). Walked only while some secret has another name (`any_linked`): the sandbox masks
        what it finds, as it masks the secrets' own paths (a command's reads are not all seen by the checker)."""
        if not self.any_linked():
            return [], False
        index = self.index()
        found: list[str] = []
        budget = MAX_ENTRIES
        todo = [str(root) for root in roots]
        seen: set[str] = set()
        while todo:
            folder = todo.pop()
            if folder in seen:
                continue
            seen.add(folder)
            try:
                with os.scandir(folder) as entries:
                    listed = list(entries)
            except OSError:
                continue
            budget -= len(listed)
            if budget < 0:
                return found, True
            for entry in listed:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        if st.st_nlink > 1 and (st.st_dev, st.st_ino) in index.files:
                            found.append(entry.path)
                except OSError:
                    continue
        return found, False

    def index(self) -> _Index:
        with self._lock:
            if self._index is None or not self._index.settled or not _unchanged(self._index.dirs):
                self._index = _list(self._secrets)
            return self._index


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _unchanged(dirs: dict[str, int | None]) -> bool:
    return all(_mtime(d) == seen for d, seen in dirs.items())


def _list(secrets: tuple[tuple[Path, str, str], ...]) -> _Index:
    index = _Index()
    started = time.time_ns()
    budget = [MAX_ENTRIES]

    def listed(directory: str) -> list[os.DirEntry[str]]:
        index.dirs[directory] = _mtime(directory)
        try:
            with os.scandir(directory) as found:
                entries = list(found)
        except OSError:
            return []
        budget[0] -= len(entries)
        if budget[0] < 0:
            index.cut_short = True
            return []
        return entries

    def add(path: str, what: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            return
        index.devices.add(st.st_dev)
        if stat.S_ISREG(st.st_mode):
            index.files[(st.st_dev, st.st_ino)] = what
            index.paths.append(path)
        elif stat.S_ISDIR(st.st_mode):
            for entry in listed(path):
                add(entry.path, what)

    for base, below, what in secrets:
        places = [str(base)]
        for part in below.split("/"):
            places = [d for d in places if os.path.isdir(d)]  # what the next name is looked for in
            if any(c in part for c in "*?["):
                places = [e.path for d in places for e in listed(d) if fnmatch.fnmatchcase(e.name, part)]
            else:
                for d in places:
                    index.dirs[d] = _mtime(d)  # a file appearing here changes it
                places = [os.path.join(d, part) for d in places]
        for place in places:
            add(place, what)
    index.settled = all(seen is None or seen < started - _SETTLED_NS for seen in index.dirs.values())
    return index
