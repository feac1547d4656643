"""Another name of a file a deny or ask rule names: a hard link (the same inode under a name no path comparison
sees). `Read(secret.env)` also stops a read of `sub/copy.txt` when that is a hard link to `secret.env`, as the
bridge's own secrets are caught under any name (secret_inodes.py).

Only a regular file with more than one name can be such a link, so a file with one name costs one `stat`. For a
file with more, the files a rule's pattern matches are listed below its fixed directory, by inode, and kept while
no directory listed changed (a link made later to a listed file changes the file, not a directory: the inode
listed is the file's whatever its count of names); the directories are looked at again at most once a second.
The listing is bounded (`MAX_ENTRIES` per pattern); past it, a file with more than one name on a listed device is
taken for one (fail closed: deny and ask rules win).

The agent can't make such a link itself (`ln` of a denied file is denied; inside the sandbox a masked file is
on another device): this is about links that exist already — a `cp -al` backup, a package store.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bridge.permissions.specifiers import PathPattern

MAX_ENTRIES = 200_000
RECHECK_S = 1.0  # a listing's folders are looked at again at most this often
MAX_LISTINGS = 64  # listings kept (one per rule pattern and folder)
_SETTLED_NS = 1_000_000_000
_GLOB = re.compile(r"[*?\[\\]")

FileKey = tuple[int, int]  # (st_dev, st_ino)


@dataclass
class _Listing:
    files: dict[FileKey, str] = field(default_factory=dict)  # a file the pattern matches -> its path
    dirs: dict[str, int | None] = field(default_factory=dict)  # listed directory -> its mtime (None: absent)
    devices: set[int] = field(default_factory=set)
    cut_short: bool = False
    settled: bool = True
    checked: float = 0.0  # time.monotonic() of the last look at its directories


_listings: dict[tuple[str, str], _Listing] = {}
_lock = threading.Lock()


def file_key(path: str | Path) -> FileKey | None:
    """The inode of the regular file at `path` (followed) when it has more than one name; None otherwise."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:
        return None
    return (st.st_dev, st.st_ino)


def linked_name(pattern: PathPattern, key: FileKey | None) -> str | None:
    """The name `pattern` matches of the file `key` (from `file_key`), if it matches one; a note when the listing
    was cut short and the file may be one."""
    if key is None:
        return None
    listing = _listing(pattern)
    found = listing.files.get(key)
    if found is None and listing.cut_short and key[0] in listing.devices:
        return "one of the files it names, maybe: there are too many to tell"
    return found


def any_linked(pattern: PathPattern) -> bool:
    """Whether some file `pattern` matches has another name now (or it can't be told): only then can a folder
    that is not on the pattern's branch hold one of its files (`grep -r` there must look)."""
    listing = _listing(pattern)
    # asked of the files each time (a new name changes the file, not a folder): a rule names few files
    return listing.cut_short or any(_names(path) > 1 for path in listing.files.values())


def _names(path: str) -> int:
    try:
        return os.lstat(path).st_nlink
    except OSError:
        return 0


def _listing(pattern: PathPattern) -> _Listing:
    cache = (str(pattern.base), pattern.pattern)
    with _lock:
        listing = _listings.get(cache)
        now = time.monotonic()
        if listing is not None and now - listing.checked < RECHECK_S:
            # Grep's thousands of results in a package store, a workspace that just changed (not settled): one
            # look at the folders a second, not one per result
            return listing
        if listing is None or not listing.settled or not all(_mtime(d) == m for d, m in listing.dirs.items()):
            _listings.pop(cache, None)
            while len(_listings) >= MAX_LISTINGS:  # a long `serve` across many folders: the oldest goes
                del _listings[next(iter(_listings))]
            listing = _listings[cache] = _list(pattern)
        listing.checked = now
        return listing


def _fixed(pattern: PathPattern) -> Path:
    """The directory (or file) every path the pattern matches lies under: its base, then its literal parts (a
    slash-free name like `.env` matches at any depth below the base)."""
    fixed = pattern.base
    text = pattern.pattern.strip("/")
    if "/" not in text:
        return fixed
    parts = text.split("/")
    for part in parts[:-1]:
        if _GLOB.search(part) or not part:
            return fixed
        fixed = fixed / part
    last = parts[-1]
    return fixed / last if last and not _GLOB.search(last) else fixed


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _list(pattern: PathPattern) -> _Listing:
    listing = _Listing()
    started = time.time_ns()
    budget = MAX_ENTRIES
    todo = [str(_fixed(pattern))]
    while todo:
        path = todo.pop()
        try:
            st = os.lstat(path)
        except OSError:
            listing.dirs[os.path.dirname(path)] = _mtime(os.path.dirname(path))  # a file appearing there
            continue
        listing.devices.add(st.st_dev)
        if stat.S_ISREG(st.st_mode):
            # every file it matches, whatever its count of names now: a link made later adds none to its directory
            if pattern.matches(Path(path)):
                listing.files[(st.st_dev, st.st_ino)] = path
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue
        listing.dirs[path] = st.st_mtime_ns
        try:
            with os.scandir(path) as entries:
                names = [e.path for e in entries]
        except OSError:
            continue
        budget -= len(names)
        if budget < 0:
            listing.cut_short = True
            break
        todo += names
    listing.settled = all(seen is None or seen < started - _SETTLED_NS for seen in listing.dirs.values())
    return listing
