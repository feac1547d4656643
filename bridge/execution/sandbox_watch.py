"""Protected paths that don't exist yet, held without a placeholder: watched while sandboxed commands run.

A bind mount needs something to mount on, and every placeholder we made was seen by `ls`, `git status` and
`git add -A` (which committed four empty phantom files into a user's repository). Mount tricks can't refuse
one name in a directory that must stay writable (the workspace root: `git init`, `touch new`, `mkdir build`),
and a seccomp/ptrace supervisor would have to re-run every file-creating syscall for the command to be safe
from its own threads. So a missing protected path is held by watching it:

- `inotify` on the deepest directory that exists on the way to it (that directory and the ones above it are
  bound onto themselves, so they can't be renamed away while the command runs); a dedicated thread reads the
  events, so the reaction does not wait for the event loop;
- what a sandboxed command creates at a protected name is set aside at once — moved to
  `<data dir>/quarantine/…` (or beside itself first when the data dir is on another file system) — and the
  command's result says so, with why and how to write it for real; a second one ends the command;
- a new repository (`.git` where there was none: `git init`, `cargo new`) may appear: its settings are checked
  instead (only inert keys such as `user.name` or `remote.*.url`; hooks only `*.sample`; no `commondir`), and
  what fails the check is set aside;
- a path the user allowed this call to write (`ToolContext.grants`) is left alone; one that another allowed
  call writes (`runs_later.GRANTS`) stays, and the sandboxes that started before it existed — they can't hold
  it read-only — are ended with a note (run them again);
- after the command, every missing path is checked once more (what a full event queue hid).

Nothing can tell who created a file: one that the user makes by hand while a sandboxed command runs is set
aside too (it is kept in the quarantine, and the note names where). Without inotify (not Linux, no watches
left) only the check after the command remains; the log says so once.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import select
import stat
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bridge.execution import host
from bridge.execution.quarantine import quarantine
from bridge.permissions.git_held import NEW_REPOSITORY, config_entries
from bridge.permissions.git_reading import inert
from bridge.permissions.held import HeldPath
from bridge.permissions.runs_later import GRANTS, granted_covers
from bridge.safefs.held import Held

log = logging.getLogger(__name__)

IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE = 0x2, 0x8, 0x80, 0x100
IN_Q_OVERFLOW, IN_IGNORED = 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW = 0x01000000, 0x02000000
_MASK = IN_CREATE | IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW
_REPOSITORY_MASK = _MASK | IN_CLOSE_WRITE  # in a new repository's `.git`: its config being rewritten too
_EVENT = struct.Struct("iIII")
STRIKES = 2  # the protected creations a command may make before it is ended

# -- what a command's watch sees ---------------------------------------------------------------------------


@dataclass
class SetAside:
    """A protected path a command created, and where it went."""

    path: Path
    why: str
    to: Path | None  # None: it could only be removed (or was gone already)
    kept: bool = False  # another call was allowed to write it: it stays, and this command was ended

    def note(self) -> str:
        if self.kept:
            return (
                f"Another call the user allowed wrote {self.path} while this command ran; this command started "
                "before it existed, so its sandbox could not hold it read-only, and it was stopped: run it again."
            )
        where = f" It was moved to {self.to}." if self.to is not None else " It was removed."
        return (
            f"The sandbox set aside {self.path}, which appeared while this command ran: {self.why}.{where} "
            "Commands may not create it; write it with the Write tool (it asks you), or run a command that names "
            "it (the permission question shows it, and allowing it lets that command write it)."
        )


@dataclass
class Watch:
    """One sandboxed command's missing protected paths, from its start until its whole tree is gone."""

    missing: list[HeldPath]
    grants: tuple[Path, ...]
    quarantine: Path  # where set-aside files go
    expect: dict[Path, Identity] = field(default_factory=dict)  # what was there at the start: left alone
    links: dict[Path, str] = field(default_factory=dict)  # held symbolic links there at the start: put back
    roots: tuple[Path, ...] = ()  # a directory made right in one of these may become a repository: checked
    _held: dict[Path, HeldPath] = field(default_factory=dict)  # missing paths by path ...
    _ways: dict[Path, list[HeldPath]] = field(default_factory=dict)  # ... and by the directories on their way
    on_strike: Callable[[], None] = lambda: None  # ends the command (called from the watcher's thread)
    kill_now: Callable[[], None] = lambda: None  # kills its whole tree now (from the event loop's thread)
    set_aside: list[SetAside] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)  # the directories watched for it
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for held in list(self.missing):
            self.index(held)

    def index(self, held: HeldPath) -> None:
        """Look `held` up by its path and its ancestors' (events come by the thousand: no scan per event)."""
        if held.path in self._held:
            return
        if held not in self.missing:
            self.missing.append(held)
        self._held[held.path] = held
        for parent in held.path.parents:
            self._ways.setdefault(parent, []).append(held)
            if parent in self.roots or parent == parent.parent:
                break

    def holding(self, path: Path) -> HeldPath | None:
        """The missing held path that is `path` or holds it."""
        for candidate in (path, *path.parents):
            found = self._held.get(candidate)
            if found is not None:
                return found
            if candidate in self.roots:
                return None
        return None

    def on_the_way(self, path: Path) -> list[HeldPath]:
        return self._ways.get(path, [])

    def record(self, item: SetAside) -> None:
        with self._lock:
            if any(s.path == item.path and s.to == item.to for s in self.set_aside):
                return
            self.set_aside.append(item)
            strikes = len(self.set_aside)
        if item.kept or strikes >= STRIKES:
            self.on_strike()

    def notes(self, since: int = 0) -> list[str]:
        with self._lock:
            return [s.note() for s in self.set_aside[since:]]


# -- the watcher -------------------------------------------------------------------------------------------


class _Inotify:
    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self._add = libc.inotify_add_watch
        self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._rm = libc.inotify_rm_watch
        self._rm.argtypes = [ctypes.c_int, ctypes.c_int]
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.fd = int(fd)

    def add(self, path: Path, mask: int) -> int:
        wd = int(self._add(self.fd, os.fsencode(path), mask))
        if wd < 0:
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error), str(path))
        return wd

    def remove(self, wd: int) -> None:
        self._rm(self.fd, wd)

    def read(self) -> list[tuple[int, int, str]]:
        try:
            data = os.read(self.fd, 256 * 1024)
        except BlockingIOError:
            return []
        out = []
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
            out.append((wd, mask, os.fsdecode(name)))
            offset += _EVENT.size + length
        return out


class Watcher:
    """The process's one inotify instance and thread, shared by every sandboxed command's `Watch`."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._watches: list[Watch] = []
        GRANTS.listeners.append(self._granting)
        self._dirs: dict[Path, int] = {}  # watched directory -> wd
        self._paths: dict[int, Path] = {}
        self._refs: dict[Path, int] = {}
        self._inotify: _Inotify | None = None
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self._failed = False

    # subscribing

    def add(self, watch: Watch) -> list[HeldPath]:
        """Start watching `watch.missing`, before the command starts. Returns those that exist by now (the
        caller plans its mounts again: they can be mounted read-only after all)."""
        with self._lock:
            self._watches.append(watch)
            for held in watch.missing:  # links on the way there now are the user's: followed, never set aside
                for link in _links_on_way(held.path, watch.roots):
                    watch.expect.setdefault(link, identity(link) or (0, 0, 0, 0))
            if self._start():
                for held in watch.missing:
                    anchor = held.path.parent
                    while not os.path.isdir(anchor) and anchor != anchor.parent:
                        anchor = anchor.parent
                    self._watch_dir(anchor, watch)
        return [held for held in watch.missing if os.path.lexists(held.path) and not _expected(watch, held.path)]

    def discard(self, watch: Watch) -> None:
        """Stop watching for `watch`, judging nothing (a plan that is being made again)."""
        with self._lock:
            if watch in self._watches:
                self._watches.remove(watch)
            for folder in watch.folders:
                self._unwatch_dir(folder)
            watch.folders.clear()

    def _granting(self, paths: tuple[Path, ...]) -> None:
        """Another call is about to write `paths` (allowed): a sandbox watching one of them as missing has no
        read-only mount for it and could rewrite it afterwards: it is killed now, before the write."""
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            if any(watch.holding(path) is not None and not granted_covers(watch.grants, path) for path in paths):
                with watch._lock:
                    watch.set_aside.append(SetAside(paths[0], "", None, kept=True))
                watch.kill_now()

    def remove(self, watch: Watch) -> None:
        """The command's tree is gone: check once more, stop watching its paths."""
        self.check(watch)
        self.discard(watch)

    # the thread

    def _start(self) -> bool:
        if self._inotify is not None:
            return True
        if self._failed:
            return False
        try:
            if not host.linux():
                raise OSError(f"inotify is Linux's; this is {sys.platform}")
            self._inotify = _Inotify()
        except (OSError, AttributeError) as error:
            self._failed = True
            log.warning(
                "cannot watch protected paths that don't exist yet (%s): they are checked only after each command",
                error,
            )
            return False
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._thread = threading.Thread(target=self._run, name="sandbox-watch", daemon=True)
        self._thread.start()
        return True

    def _watch_dir(self, folder: Path, watch: Watch, mask: int = _MASK) -> None:
        if self._inotify is None or folder in watch.folders:
            return
        watch.folders.append(folder)
        self._refs[folder] = self._refs.get(folder, 0) + 1
        if folder in self._dirs and mask == _MASK:
            return
        try:
            wd = self._inotify.add(folder, mask)  # a second add of a directory widens its mask
        except OSError as error:
            if error.errno not in (errno.ENOENT, errno.ENOTDIR):
                log.warning("cannot watch %s: %s", folder, error)
            return
        self._dirs[folder] = wd
        self._paths[wd] = folder

    def _unwatch_dir(self, folder: Path) -> None:
        left = self._refs.get(folder, 0) - 1
        if left > 0:
            self._refs[folder] = left
            return
        self._refs.pop(folder, None)
        wd = self._dirs.pop(folder, None)
        if wd is not None and self._inotify is not None:
            self._paths.pop(wd, None)
            with contextlib.suppress(OSError):
                self._inotify.remove(wd)

    def _run(self) -> None:
        assert self._inotify is not None
        fd = self._inotify.fd
        while True:
            try:
                select.select([fd, self._wake_r], [], [])
            except OSError:
                return
            events = self._inotify.read()
            overflow = False
            touched: list[Path] = []
            with self._lock:
                for wd, mask, name in events:
                    if mask & IN_Q_OVERFLOW:
                        overflow = True
                    elif mask & IN_IGNORED:
                        folder = self._paths.pop(wd, None)
                        if folder is not None and self._dirs.get(folder) == wd:
                            del self._dirs[folder]
                    elif name and wd in self._paths:
                        touched.append(self._paths[wd] / name)
                watches = list(self._watches)
            for watch in watches:
                try:
                    if overflow:
                        self.check(watch)
                    else:
                        for path in dict.fromkeys(touched):
                            self._seen(watch, path)
                except Exception:  # the watcher must outlive any one bad event
                    log.exception("checking protected paths failed")

    # judging what appeared

    def _seen(self, watch: Watch, path: Path) -> None:
        held = watch.holding(path)
        if held is not None:
            self._judge(watch, held, path)
            return
        ways = watch.on_the_way(path)
        mode = _lmode(path) if ways else None
        if mode is not None and stat.S_ISLNK(mode) and not _expected(watch, path):
            # a link on the way to a protected path makes it another place's: the link is what appeared (never
            # followed: what it leads to may be anywhere, attack round 20)
            self._set_aside(watch, ways[0], path, _on_the_way_why(ways[0]))
        elif mode is not None and os.path.isdir(path):  # (through the user's own link, there at the start)
            with self._lock:  # a directory on the way: watch it, and look at what is there already
                self._watch_dir(path, watch)
            for each in ways:
                self._judge_existing(watch, each)
        if path.parent in watch.roots and path.name != ".git" and os.path.isdir(path) and not os.path.islink(path):
            repository = HeldPath(path / ".git", "dir", NEW_REPOSITORY, checked="repository")
            watch.index(repository)  # a new folder right in the workspace: it may become a repository
            with self._lock:
                self._watch_dir(path, watch)
            self._judge_existing(watch, repository)

    def check(self, watch: Watch) -> None:
        """Every missing path of `watch`, looked at now; a held link the command removed is put back."""
        for held in watch.missing:
            self._judge_existing(watch, held)
            self._put_back(watch, held.path)

    @staticmethod
    def _put_back(watch: Watch, path: Path) -> None:
        target = watch.links.get(path)
        way = _way_of(watch, path) if target is not None else None
        if target is None or way is None:
            return  # (never through a command's link: the link would be made wherever it leads)
        if not os.path.lexists(path) and not granted_covers(watch.grants, path):
            with contextlib.suppress(OSError), Held(way) as parent:  # exactly there, whatever the way says since
                parent.symlink(target, path.name)
                watch.expect[path] = identity(path) or (0, 0, 0, 0)

    def _judge_existing(self, watch: Watch, held: HeldPath) -> None:
        link = _new_link_on_way(watch, held.path)
        if link is not None:  # a command's: what is beyond it is another place's, the link itself is what appeared
            self._set_aside(watch, held, link, _on_the_way_why(held))
            return
        if os.path.lexists(held.path):
            self._judge(watch, held, held.path)

    def _judge(self, watch: Watch, held: HeldPath, path: Path) -> None:
        if held.checked == "repository":
            self._new_repository(watch, held)
            return
        if held.checked == "config":
            self._new_config(watch, held, held.path)
            return
        if held.checked == "hooks":
            self._new_hooks(watch, held, held.path)
            return
        if _expected(watch, path):
            if os.path.isdir(path) and _on_the_way(watch.grants, path):
                self._granted_way(watch, held, path)
            return
        if granted_covers(watch.grants, path) or _on_the_way(watch.grants, path):
            if os.path.isdir(path) and not granted_covers(watch.grants, path):
                self._granted_way(watch, held, path)
            return
        if GRANTS.covers(path):
            watch.record(SetAside(path, held.why, None, kept=True))
            return
        self._set_aside(watch, held, path)

    def _granted_way(self, watch: Watch, held: HeldPath, folder: Path) -> None:
        """A directory on the way to a granted path: only that way may appear in it."""
        with self._lock:
            self._watch_dir(folder, watch)
        for entry in _listdir(folder):
            self._judge(watch, held, folder / entry)

    def _new_repository(self, watch: Watch, held: HeldPath) -> None:
        gitdir = held.path
        mode = _lmode(gitdir)  # one look: a directory that appears between two looks is not "something else"
        if mode is None:
            return
        if not stat.S_ISDIR(mode):
            if not GRANTS.covers(gitdir) and not granted_covers(watch.grants, gitdir):
                self._set_aside(watch, held, gitdir)  # a `.git` file or link names another repository
            return
        with self._lock:
            self._watch_dir(gitdir, watch, _REPOSITORY_MASK)
        for name in ("commondir", "config.worktree"):
            if os.path.lexists(gitdir / name):
                self._set_aside(watch, held, gitdir / name, f"{gitdir / name}: it moves where git reads its settings")
        self._new_config(watch, held, gitdir / "config")
        self._new_hooks(watch, held, gitdir / "hooks")

    def _new_config(self, watch: Watch, held: HeldPath, config: Path) -> None:
        """A git config that was not there: it may hold only inert settings (`git init`'s, `user.name`,
        remotes and branches) unless the call was allowed to write it."""
        if not os.path.lexists(config) or granted_covers(watch.grants, config) or GRANTS.covers(config):
            return
        with self._lock:
            self._watch_dir(config.parent, watch, _REPOSITORY_MASK)  # it is rewritten in place (lock + rename)
        entries = config_entries(config) if os.path.isfile(config) and not os.path.islink(config) else None
        bad = ["(unreadable)"] if entries is None else [k for k, _ in entries if not inert(k)]
        if bad:
            self._set_aside(
                watch, held, config, f"git's settings there hold {', '.join(bad[:3])}, which can make git run programs"
            )

    def _new_hooks(self, watch: Watch, held: HeldPath, hooks: Path) -> None:
        """A hooks directory that was not there: only `*.sample` files (what `git init` copies) may be in it."""
        mode = _lmode(hooks)  # one look: `git init` making the folder between two looks is not a file there
        if mode is None:
            return
        if not stat.S_ISDIR(mode):
            if not granted_covers(watch.grants, hooks):
                self._set_aside(watch, held, hooks, "git runs its hooks at commit, merge and checkout")
            return
        with self._lock:
            self._watch_dir(hooks, watch)
        for entry in _listdir(hooks):
            hook = hooks / entry
            if not entry.endswith(".sample") and not granted_covers(watch.grants, hook) and not GRANTS.covers(hook):
                self._set_aside(watch, held, hook, "git runs its hooks at commit, merge and checkout")

    def _set_aside(self, watch: Watch, held: HeldPath, path: Path, why: str | None = None) -> None:
        """Move `path` aside; every running command that could have made it hears of it (nothing tells which
        one did)."""
        link = _new_link_on_way(watch, path)
        if link is not None:
            path, why = link, _on_the_way_why(held)
        if not os.path.lexists(path):
            return
        way = _way_of(watch, path)
        if way is None:  # (gone meanwhile, or a link that appeared since: the next look sets that aside)
            return
        try:  # (the user's own links on the way resolved one by one: the move follows none)
            moved = quarantine(way / path.name, watch.quarantine)
        except OSError as error:  # a link appeared on its way meanwhile (`Changed`): the command is racing us
            log.warning("cannot set %s aside: %s", path, error)
            watch.record(SetAside(path, f"{why or held.why}; it could not be set aside ({error})", None))
            watch.on_strike()
            return
        if moved is False or moved is True:
            return
        item = SetAside(path, why or held.why, moved)
        self._put_back(watch, path)
        with self._lock:
            others = [w for w in self._watches if w is not watch and any(h.path == held.path for h in w.missing)]
        for each in (watch, *others):
            each.record(item)


_MAX_HOPS = 40  # links followed on one way (the kernel's own bound)


@dataclass
class _Way:
    """What `_walk` saw: the links met, the directory reached (link-free; None when the way ends before it), and the
    first link the caller said is new (then the walk stopped there)."""

    links: list[Path] = field(default_factory=list)
    reached: Path | None = None
    new_link: Path | None = None


def _walk(path: Path, roots: tuple[Path, ...], new: Callable[[Path], bool] = lambda _link: False) -> _Way:
    """The way to `path`'s directory walked one name at a time below the writable root that holds it (the root's own
    way is the host's, read-only to commands), each link read and followed one step: what `realpath` does, but
    seeing every link it passes (attack round 21: in a chain `.config -> cfglink -> dotfiles` of the user's, a
    command replaced the middle link, and `realpath` followed it out). The walk stops at the first link `new` names."""
    root = max((r for r in roots if path != r and path.is_relative_to(r)), key=lambda r: len(r.parts), default=None)
    current = root if root is not None else Path(path.anchor)
    todo = list(path.relative_to(current).parts[:-1])
    way = _Way()
    while todo:
        part = todo.pop(0)
        if part == "..":
            current = current.parent
            continue
        step = current / part
        mode = _lmode(step)
        if mode is None:
            return way
        if stat.S_ISLNK(mode):
            if new(step):
                way.new_link = step
                return way
            way.links.append(step)
            try:
                target = Path(os.readlink(step))
            except OSError:
                return way
            if len(way.links) > _MAX_HOPS:
                return way
            if target.is_absolute():
                current = Path(target.anchor)
            todo = [p for p in target.parts if p not in (target.anchor, ".")] + todo
            continue
        if not stat.S_ISDIR(mode):
            return way
        current = step
    way.reached = current
    return way


def _links_on_way(path: Path, roots: tuple[Path, ...]) -> list[Path]:
    """Every link on the way to `path` (see `_walk`)."""
    return _walk(path, roots).links


def _new_link_on_way(watch: Watch, path: Path) -> Path | None:
    """The first link on the way to `path` that was not there when the command started (a command's), if any."""
    return _walk(path, watch.roots, lambda link: not _expected(watch, link)).new_link


def _way_of(watch: Watch, path: Path) -> Path | None:
    """`path`'s directory as reached through the user's own links only (link-free), or None."""
    return _walk(path, watch.roots, lambda link: not _expected(watch, link)).reached


def _on_the_way_why(held: HeldPath) -> str:
    return f"it is a symbolic link on the way to {held.path}, which is protected ({held.why})"


def _on_the_way(grants: tuple[Path, ...], path: Path) -> bool:
    return any(g != path and g.is_relative_to(path) for g in grants)


Identity = tuple[int, int, int, int]


def _lmode(path: Path) -> int | None:
    """The mode of `path` itself (a link's, not its target's), or None when there is nothing there."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def identity(path: Path) -> Identity | None:
    """What tells an entry from one made in its place: a deleted file's inode number is often reused at once,
    so the kind and the change time count too."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), st.st_ctime_ns


def _expected(watch: Watch, path: Path) -> bool:
    """`path` is what was there when the command started (a held link, an entry of a held directory that
    holds a grant)."""
    want = watch.expect.get(path)
    return want is not None and identity(path) == want


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


WATCHER = Watcher()
"""The process's watcher (its thread starts with the first command that has a missing protected path)."""


def supported() -> bool:
    return sys.platform.startswith("linux")
