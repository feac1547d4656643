"""The shadow git object store: snapshots of a workspace, kept outside it, never in the user's own `.git`.

One store per workspace (keyed by its real path) under the data dir, `checkpoints/<name>-<hash>/`: a git directory
whose work tree is the workspace. Each session has its own index file in it (`index-<session>`), so sessions
snapshot independently and share the objects. A snapshot is a tree; `Store.commit` chains trees on a ref per
session (`refs/sessions/<id>`) so that a gc keeps them.

Git runs with an environment of our own: none of the bridge's `GIT_*`, no system or global configuration (so no
filter driver, hook, fsmonitor or `core.*` of the user's can run or change what is stored), `core.hooksPath` at
/dev/null, fsmonitor off, and `$GIT_DIR/info/attributes` saying `-text -filter -ident -working-tree-encoding`
for every path (it ranks above the workspace's `.gitattributes`), so a blob is the file's exact bytes. What a
workspace's `.gitattributes` names as a filter has no command to run: the store's config defines none.

What is left out: what `.gitignore` (and the repository's `.git/info/exclude`, and the user's global excludes)
ignores; files over `max_file_bytes`, binary ones over `max_binary_bytes`; FIFOs, sockets, devices; nested git
repositories. A snapshot names what it left out (once per path and version: `Snapshot.skipped`), and the index
remembers where the last snapshot did not look (`SessionIndex.unrecorded`): what a step makes appear there may
have been there before it, and no rewind may call it new.

Why `ls-files` + `update-index` and not `git add -A`: `add -A` hashes every new file whatever its size, so a
command that writes a 2 GB file would stall the turn and fill the disk; listing first (one process, the same
stat pass `add -A` makes) lets us leave such files out before git reads them. An unchanged workspace costs that
process and a second `ls-files` that lists what is ignored (folders as one entry: git does not go into them).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridge import safefs
from bridge.checkpoints.git_process import GitHeld, run_git
from bridge.checkpoints.git_process import stoppable as stoppable
from bridge.execution import programs
from bridge.transcript import private_dir, private_opener

log = logging.getLogger(__name__)

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's well-known empty tree (sha1)
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_BINARY_BYTES = 2 * 1024 * 1024
MAX_FILES = 100_000  # a first snapshot that finds more: a home directory, not a project; checkpoints are off
FIRST_TIMEOUT = 300.0  # seconds a session's first snapshot may take (a slow disk, a huge tree): then it is off
LATER_TIMEOUT = 120.0  # seconds a later one may take (it looks at what changed): no snapshot waits for ever
_SNIFF = 8000  # as git: a NUL in the first 8000 bytes makes a file binary
IGNORED = "ignored (by a .gitignore, the repository's exclude file or the user's excludes)"
_COULD_NOT_OPEN = "warning: could not open directory '"  # (git's words, LC_ALL=C)
_UNREADABLE_DIR = re.compile(r"^warning: could not open directory '(.*)': ([^':]*)$")
SOMEWHERE = ""  # an `unrecorded` place that is all of the workspace: a folder git could not open, name unknown

# Every git we start: nothing from the repository or the user can run (hooks, fsmonitor) or rewrite bytes.
_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.symlinks=true",
    "-c",
    "core.bigFileThreshold=512m",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
)
_ATTRIBUTES = b"* -text -filter -ident -working-tree-encoding\n"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "agent-bridge",
    "GIT_AUTHOR_EMAIL": "checkpoints@agent-bridge.invalid",
    "GIT_COMMITTER_NAME": "agent-bridge",
    "GIT_COMMITTER_EMAIL": "checkpoints@agent-bridge.invalid",
}
_PASSED = ("HOME", "XDG_CONFIG_HOME", "LANG", "TMPDIR")  # HOME/XDG: the user's global excludes apply; PATH: below


class StoreError(Exception):
    """The store can't work here (no git, a workspace too big, git failed): checkpoints are off, said once."""


@dataclass(frozen=True)
class Change:
    """One path's change between two trees: blob ids and modes before and after (None: absent)."""

    path: str
    old: str | None
    new: str | None
    old_mode: str | None = None
    new_mode: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "old": self.old, "new": self.new, "oldMode": self.old_mode, "newMode": self.new_mode}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Change:
        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        return cls(str(data["path"]), text("old"), text("new"), text("oldMode"), text("newMode"))


@dataclass(frozen=True)
class Skipped:
    """A path a snapshot left out, and why (in words a person reads)."""

    path: str
    why: str


@dataclass(frozen=True)
class Snapshot:
    tree: str
    skipped: list[Skipped] = field(default_factory=list)  # newly left out (not those already reported)


# What the bridge makes in its data dir (bridge/transcript.py, execution/, mcp/, tools/storage.py, here)
DATA_DIR_NAMES = (
    "checkpoints",
    "sessions",
    "running",
    "agents",
    "tool-results",
    "bash-output",
    "mcp-auth",
    "mcp-resources",
    "mcp-prompts",
    "quarantine",
)


def store_dir(data_dir: Path, workspace: Path) -> Path:
    """Where the store of `workspace` lives: its name for a person, a hash of its real path for uniqueness."""
    real = os.path.realpath(workspace)
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real))[:40] or "root"
    return data_dir / "checkpoints" / f"{name}-{digest}"


class Store:
    """The git directory of one workspace; every git command of the checkpoints goes through `run`."""

    def __init__(
        self,
        git_dir: Path,
        workspace: Path,
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_binary_bytes: int = MAX_BINARY_BYTES,
        max_files: int = MAX_FILES,
    ) -> None:
        git = programs.helper("git", outside=os.path.realpath(workspace))
        if git is None:
            raise StoreError("git is not installed: checkpoints (rewind, /changes) are off")
        self.git = git
        self.git_dir = git_dir
        self.workspace = Path(os.path.realpath(workspace))
        self.max_file_bytes, self.max_binary_bytes, self.max_files = max_file_bytes, max_binary_bytes, max_files
        self._env = {k: os.environ[k] for k in _PASSED if k in os.environ}
        self._env["PATH"] = programs.helper_path(cwd=str(self.workspace))  # never the folder's own programs
        self._env |= {
            "GIT_DIR": str(git_dir),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_ATTR_NOSYSTEM": "1",
            "LC_ALL": "C",
            **_IDENTITY,
        }
        self._ready = False
        self._init_lock = threading.Lock()

    @classmethod
    def for_workspace(cls, data_dir: Path, workspace: Path, **limits: int) -> Store:
        return cls(store_dir(data_dir, workspace), workspace, **limits)

    def _init(self) -> None:
        """Made on first use (in a worker thread: a session starts without waiting for git); one maker at a time,
        in this process and across bridges (a lock file beside the store)."""
        with self._init_lock:
            if self._ready:
                return
            private_dir(self.git_dir.parent)  # the data dir's: file contents, its owner's alone
            with open(self.git_dir.with_name(self.git_dir.name + ".lock"), "a", opener=private_opener) as lock:
                _lock_file(lock.fileno())
                self._make()
            self._ready = True

    def _make(self) -> None:
        private_dir(self.git_dir)  # git makes what is in it with the umask 077 (git_process.py)
        if not (self.git_dir / "HEAD").is_file():
            self.run("init", "--quiet", "--bare", str(self.git_dir), index=None)
            for key, value in (
                ("core.bare", "false"),
                ("core.untrackedCache", "true"),
                ("core.logAllRefUpdates", "false"),
                ("index.version", "4"),
            ):
                self.run("config", key, value, index=None)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        _write_if_changed(info / "attributes", _ATTRIBUTES)
        _write_if_changed(info / "exclude", self._repository_excludes() + self._own_excludes())

    def _own_excludes(self) -> bytes:
        """The bridge's data dir when the workspace holds it (the user opened their home folder): the store, the
        transcripts and what commands printed change at every step, and are no work of the agent's: a store that
        snapshots itself grows by its own objects at every step, and a rewind deleted them."""
        if self.git_dir.parent.name != "checkpoints":
            return b""
        data_dir = os.path.realpath(self.git_dir.parent.parent)
        relative = os.path.relpath(data_dir, self.workspace)
        if relative.startswith(".."):
            return b""
        # the data dir is the workspace itself: what the bridge makes in it (a rewind deleted the store's objects)
        folders = [relative] if relative != "." else list(DATA_DIR_NAMES)
        lines = [re.sub(r"([*?\[\]\\!# ])", r"\\\1", f.replace(os.sep, "/")) for f in folders]
        return b"\n# the bridge's own data dir\n" + b"".join(b"/" + os.fsencode(line) + b"/\n" for line in lines)

    def _repository_excludes(self) -> bytes:
        """The workspace repository's own `.git/info/exclude` (read, never written): what the user excludes
        there is not theirs to see in a review either."""
        try:  # exactly (no link on the way), never waiting on a FIFO, and only the first 64 KiB (a command may
            # make it a 1 GB file: it was read whole at every start, attack round 23b)
            with safefs.Beneath(str(self.workspace)) as root:
                fd = root.open(".git/info/exclude", safefs.READ_FLAGS)
            with os.fdopen(fd, "rb") as file:
                return file.read(65536) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        except (OSError, ValueError):
            return b""

    def run(
        self,
        *args: str,
        index: Path | None,
        data: bytes | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        if not self._ready and args[0] not in ("init", "config"):
            self._init()
        env = dict(self._env)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if args[0] == "init":
            del env["GIT_WORK_TREE"]
        try:
            result = run_git(
                [self.git, *_CONFIG, *args],
                env=env,
                cwd=self.workspace,
                data=data,
                timeout=timeout,
                ours=(self.workspace, Path(os.path.realpath(self.git_dir))),
            )
        except (subprocess.TimeoutExpired, GitHeld) as error:
            if index is not None:  # git was killed holding the index's lock
                with contextlib.suppress(OSError):
                    index.with_name(index.name + ".lock").unlink()
            if isinstance(error, GitHeld):
                raise StoreError(f"git {args[0]} on {self.workspace}: {error}") from None
            raise StoreError(f"git {args[0]} took more than {timeout:g} s on {self.workspace}") from None
        if check and result.returncode != 0:
            raise StoreError(f"git {args[0]} failed: {result.stderr.decode(errors='replace').strip()}")
        return result

    # -- objects ------------------------------------------------------------------------------------------------

    def diff(self, old_tree: str, new_tree: str) -> list[Change]:
        if old_tree == new_tree:
            return []
        out = self.run(
            "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv", old_tree, new_tree, index=None
        ).stdout
        fields = out.split(b"\0")
        changes = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            if not meta.startswith(b":"):
                continue
            old_mode, new_mode, old, new, _status = meta[1:].decode().split(" ")
            changes.append(
                Change(
                    os.fsdecode(path),
                    None if set(old) == {"0"} else old,
                    None if set(new) == {"0"} else new,
                    None if old_mode == "000000" else old_mode,
                    None if new_mode == "000000" else new_mode,
                )
            )
        return changes

    def entries(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) in `tree` of those of `paths` it holds."""
        if not paths:
            return {}
        out = self.run("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths, index=None).stdout
        found = {}
        for entry in filter(None, out.split(b"\0")):
            meta, path = entry.split(b"\t", 1)
            mode, _kind, blob = meta.decode().split(" ")
            found[os.fsdecode(path)] = (mode, blob)
        return found

    def read_blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        out = self.run("cat-file", "--batch", index=None, data="".join(f"{i}\n" for i in wanted).encode()).stdout
        blobs: dict[str, bytes] = {}
        at = 0
        for blob_id in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split(b" ")
            if len(header) < 3:  # "<id> missing"
                raise StoreError(f"checkpoint object {blob_id} is missing from the store")
            size = int(header[2])
            blobs[blob_id] = out[end + 1 : end + 1 + size]
            at = end + 1 + size + 1
        return blobs

    def write_blob(self, data: bytes) -> str:
        return self.run("hash-object", "-w", "--stdin", "--no-filters", index=None, data=data).stdout.decode().strip()

    def commit(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
        return self.run(*args, index=None, data=message.encode()).stdout.decode().strip()

    def set_ref(self, name: str, commit: str) -> None:
        self.run("update-ref", f"refs/sessions/{name}", commit, index=None)

    def ref(self, name: str) -> str | None:
        found = self.run(
            "rev-parse", "--verify", "--quiet", f"refs/sessions/{name}^{{commit}}", index=None, check=False
        )
        return found.stdout.decode().strip() or None

    def merge(self, ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> tuple[bytes, bool]:
        """A three-way text merge (`git merge-file`): the result and whether it is clean."""
        tmp = private_dir(self.git_dir / "tmp")
        with tempfile.TemporaryDirectory(dir=tmp) as scratch:
            names = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                path = Path(scratch) / name
                path.write_bytes(data)
                names.append(str(path))
            result = self.run(
                "merge-file",
                "-p",
                "--quiet",
                "-L",
                labels[0],
                "-L",
                labels[1],
                "-L",
                labels[2],
                *names,
                index=None,
                check=False,
            )
        if result.returncode < 0 or result.returncode > 127:
            raise StoreError(f"git merge-file failed: {result.stderr.decode(errors='replace').strip()}")
        return result.stdout, result.returncode == 0

    def pack_if_loose(self, threshold: int = 2000) -> bool:
        """`git repack -d` when more than `threshold` objects are loose (never a prune: nothing is deleted that
        any session, running or not, may still name)."""
        counted = self.run("count-objects", index=None).stdout.decode().split()
        if not counted or int(counted[0]) <= threshold:
            return False
        self.run("repack", "-d", "-q", index=None)
        return True

    def size_bytes(self) -> int:
        """What the store takes on disk (the objects)."""
        total = 0
        for root, _dirs, files in os.walk(self.git_dir / "objects"):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(root, name)).st_size
        return total


class SessionIndex:
    """One session's index in the store: its snapshots, its chain of commits. Thread-safe (git work runs in
    worker threads; two snapshots of one index never overlap)."""

    def __init__(self, store: Store, name: str) -> None:
        self.store, self.name = store, name
        self.path = store.git_dir / f"index-{name}"
        self._lock = threading.Lock()
        self._head_lock = threading.Lock()
        self._tree: str | None = None  # what the index holds now, as a tree
        self._reported: dict[str, tuple[int, int]] = {}  # skipped paths already named: (size, mtime_ns)
        self._holes: dict[str, str] = {}  # where the last snapshot did not look (`unrecorded`): path -> why
        self._head: str | None = None  # the last commit of the chain (read from the ref on first use)
        self._head_known = False

    @property
    def head(self) -> str | None:
        if not self._head_known:
            self._head, self._head_known = self.store.ref(self.name), True
        return self._head

    def snapshot(self, paths: Sequence[str] | None = None) -> Snapshot:
        """The workspace as a tree (`paths`: only those paths are looked at; the rest is as last seen)."""
        with self._lock:
            first = self._tree is None
            if first:
                self._start()
            timeout = FIRST_TIMEOUT if first else LATER_TIMEOUT
            listed, unreadable = self._changed(paths, timeout)
            if first and paths is None and len(listed) > self.store.max_files:
                raise StoreError(
                    f"{self.store.workspace} has more than {self.store.max_files:,} files: it is not "
                    "checkpointed (rewind and /changes are off for it)"
                )
            holes = {**self._ignored(paths, timeout), **unreadable}
            skipped = self._stage(listed, timeout, holes)
            if paths is None:  # it looked everywhere: where it did not look is exactly this
                self._holes = holes
            else:  # it looked at `paths` only: the rest is as the last snapshots saw it
                self._holes.update(holes)
            if listed or self._tree is None:
                self._tree = self.store.run("write-tree", index=self.path).stdout.decode().strip()
            return Snapshot(self._tree, skipped)

    def unrecorded(self) -> dict[str, str]:
        """Where the last snapshot did not look, path -> why: files left out (too big, not a file, unreadable), and
        folders it did not go into (ignored, a nested repository, unreadable) with everything in them. A file a step
        makes appear there may have been there before it, whatever the trees say: no checkpoint shows it absent
        (a rewind deleted a user's `secrets.env` a command un-ignored, and the files of a nested repository whose
        `.git` it removed)."""
        with self._lock:
            return dict(self._holes)

    def _start(self) -> None:
        """A new session's index starts as a copy of the store's most recent one: its stat data is warm, so the
        first snapshot hashes only what changed since (a cold one hashes the whole workspace)."""
        if self.path.exists():
            return
        others = sorted(
            (p for p in self.store.git_dir.glob("index-*") if p.name.count(".") == 0),
            key=lambda p: p.stat().st_mtime_ns,
            reverse=True,
        )
        for other in others:
            with contextlib.suppress(OSError):
                shutil.copyfile(other, self.path)
                return

    def _changed(
        self, paths: Sequence[str] | None, timeout: float | None
    ) -> tuple[list[tuple[str, bytes]], dict[str, str]]:
        """(tag, path) for each path that differs from the index: `?` untracked, else tracked (changed/gone); and
        the folders git could not open (it says so and goes on: what is in them is in no snapshot)."""
        spec = ["--", *paths] if paths is not None else []
        if paths is not None and not paths:
            return [], {}
        result = self.store.run(
            "ls-files", "-z", "-t", "-m", "-d", "-o", "--exclude-standard", *spec, index=self.path, timeout=timeout
        )
        seen: dict[bytes, str] = {}
        for entry in result.stdout.split(b"\0"):
            if len(entry) > 2:
                seen.setdefault(entry[2:], entry[:1].decode())
        unreadable = {}
        for line in result.stderr.decode(errors="surrogateescape").split("\n"):
            if not line.startswith(_COULD_NOT_OPEN):
                continue
            # Its name is what its quotes hold, up to the last `': ` (a folder may be named `a': b`); a name that
            # does not name a folder there (a line break in it cut the warning) leaves every new file unknown:
            # misread, it would be a hole in the wrong place, and what is in the real one would look new
            # (attack round 18: a rewind deleted what an unreadable folder `notes': old` held).
            found = _UNREADABLE_DIR.match(line)
            name = found[1].removesuffix("/") if found else ""
            if name and os.path.isdir(os.path.join(self.store.workspace, name)):
                unreadable[name] = f"unreadable ({found[2] if found else 'unknown'})"
            else:
                unreadable[SOMEWHERE] = "a folder git could not open, whose name its warning does not give plainly"
        return [(tag, path) for path, tag in seen.items()], unreadable

    def _ignored(self, paths: Sequence[str] | None, timeout: float | None) -> dict[str, str]:
        """What is there and ignored (a wholly ignored folder as one entry: git does not go into it). Listed at every
        snapshot because what a step makes appear is only new where the snapshot before it looked: a step that
        edits a `.gitignore` (one that ignores itself is in no tree), the user's excludes, or a folder's ignore
        rules uncovers files that were there all along."""
        if paths is not None and not paths:
            return {}
        # (of given paths: each as itself, as git lists a path inside an ignored folder only without --directory)
        shape = ["--directory"] if paths is None else ["--", *paths]
        out = self.store.run(
            "ls-files", "-z", "-o", "-i", "--exclude-standard", *shape, index=self.path, timeout=timeout
        ).stdout
        listed = sorted(os.fsdecode(entry.rstrip(b"/")) for entry in out.split(b"\0") if entry)
        # A folder whose files are all ignored is listed as itself and each of them (git went through it: what it
        # holds is listed); a folder ignored as such is listed alone (git did not go into it: all of it is a hole).
        walked: set[str] = set()
        for path in listed:
            while "/" in path and (path := path.rpartition("/")[0]) not in walked:
                walked.add(path)
        return {path: IGNORED for path in listed if path not in walked}

    def _stage(self, listed: list[tuple[str, bytes]], timeout: float | None, holes: dict[str, str]) -> list[Skipped]:
        """Stores what can be, and names what can't (each in `holes` too, said or not: the index does not hold it,
        so no tree shows whether it was there). A folder where a file was is no hole: its files are stored."""
        add: dict[bytes, os.stat_result] = {}  # what is added, as it was when looked at
        drop: list[bytes] = []  # tracked, but not storable now (too big, a directory now...): out of the index
        skipped: list[Skipped] = []
        root = os.fsencode(self.store.workspace)
        real_dirs: dict[bytes, bool] = {}
        for tag, raw in listed:
            if raw.endswith(b"/"):
                nested = "a nested git repository (not checkpointed)"
                holes[os.fsdecode(raw.rstrip(b"/"))] = nested
                skipped += self._skip(raw.rstrip(b"/"), None, nested)
                continue
            try:
                if not _leading_dirs_real(root, raw, real_dirs):  # beyond a link: not the workspace's
                    raise FileNotFoundError
                st = os.lstat(os.path.join(root, raw))
            except FileNotFoundError:
                if tag != "?":
                    drop.append(raw)  # gone (or beyond a link now): out of the index
                continue
            except OSError as error:
                holes[os.fsdecode(raw)] = f"unreadable ({error.strerror})"
                skipped += self._skip(raw, None, f"unreadable ({error.strerror})")
                continue
            why = self._unstorable(raw, st)
            if why is None:
                add[raw] = st
                self._reported.pop(os.fsdecode(raw), None)
                holes.pop(os.fsdecode(raw), None)
                self._holes.pop(os.fsdecode(raw), None)  # (a partial snapshot's: the others' stay)
                continue
            if tag != "?":
                drop.append(raw)
            if not stat.S_ISDIR(st.st_mode):
                holes[os.fsdecode(raw)] = why
            skipped += self._skip(raw, st, why)
        if drop:
            self._update_index(drop, "--force-remove")
        if add:
            unread = self._add(add, timeout)
            unread |= self._verify([raw for raw in add if raw not in unread], timeout)
            for raw, why in unread.items():
                holes[os.fsdecode(raw)] = why
                skipped += self._skip(raw, None, why)
            if unread:
                self._update_index(list(unread), "--force-remove")
        return skipped

    def _add(self, listed: dict[bytes, os.stat_result], timeout: float | None) -> dict[bytes, str]:
        """`update-index --add` of what was `listed`; what became something git can't store (a FIFO, a link on its
        way) after it was looked at is left out and the rest added again (git stops at it and writes nothing): a
        command swapping names as fast as it can turned checkpoints off for the session (attack round 23b)."""
        left: dict[bytes, str] = {}
        paths = list(listed)
        for _ in range(_ADD_TRIES):
            try:
                self._update_index(paths, "--add", "--remove", "--replace", timeout=timeout)
                return left
            except StoreError as error:
                found = _UNPROCESSABLE.search(str(error))
                named = os.fsencode(found[1]) if found else None
                changed = {named} if named in listed else {raw for raw in paths if _changed(self.store, raw, listed)}
                if not changed:
                    raise
                left |= dict.fromkeys(changed, "changed while it was stored (git could not read it as listed)")
                paths = [raw for raw in paths if raw not in changed]
                if not paths:
                    return left
        self._update_index(paths, "--add", "--remove", "--replace", timeout=timeout)
        return left

    def _verify(self, added: list[bytes], timeout: float | None) -> dict[bytes, str]:
        """Git opens what it adds by name: a folder on the way swapped for a link between its own check and its
        open made it store a file from outside the workspace, one the sandbox hides from commands (attack round
        23b). So each file git stored is read again here, exactly (safefs: beneath the workspace, no link
        followed), and where its blob is not what is there, what is there is stored instead; what can't be read
        so is left out (returned, with why)."""
        wanted = set(added)
        listing = self.store.run(
            "ls-files",
            "-s",
            "-z",
            *(["--", *map(os.fsdecode, added)] if len(added) <= 256 else []),
            index=self.path,
            timeout=timeout,
        ).stdout
        fixes: list[bytes] = []
        left: dict[bytes, str] = {}
        stored: set[bytes] = set()
        with safefs.Beneath(str(self.store.workspace)) as root:
            for entry in listing.split(b"\0"):
                head, _, raw = entry.partition(b"\t")
                fields = head.split(b" ")
                stored.add(raw)
                if raw not in wanted or len(fields) != 3 or fields[0] not in (b"100644", b"100755"):
                    continue
                mode, blob = fields[0].decode(), fields[1].decode()
                try:
                    data = _read_stored(root, os.fsdecode(raw), self.store.max_file_bytes)
                except (OSError, ValueError) as error:
                    left[raw] = f"changed while it was stored ({_reason(error)})"
                    continue
                if _blob_id(data, len(blob)) == blob:
                    continue
                log.warning("git stored another version of %s than the workspace's: stored again", os.fsdecode(raw))
                ours = self.store.run("hash-object", "-w", "--stdin", index=None, data=data).stdout.decode().strip()
                fixes.append(f"{mode} {ours}\t".encode() + raw + b"\0")
        if fixes:
            self.store.run("update-index", "-z", "--index-info", index=self.path, data=b"".join(fixes), timeout=timeout)
        # and what git did not store at all, saying nothing but "Ignoring path" (a name it refuses, as `GIT~1/x` or
        # `.git ` on the systems where that is `.git`): a hole, not a file no snapshot knows of (round 23)
        left |= dict.fromkeys(wanted - stored - left.keys(), "a name git does not store (refused on some systems)")
        return left

    def _update_index(self, paths: list[bytes], *flags: str, timeout: float | None = None) -> None:
        data = b"".join(p + b"\0" for p in paths)
        self.store.run("update-index", "-z", *flags, "--stdin", index=self.path, data=data, timeout=timeout)

    def _unstorable(self, raw: bytes, st: os.stat_result) -> str | None:
        if stat.S_ISLNK(st.st_mode):
            return None
        if stat.S_ISDIR(st.st_mode):
            return "a directory now (its files are checkpointed one by one)"
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        limit = self.store.max_file_bytes
        if st.st_size > limit:
            return f"{_size(st.st_size)}, over the {_size(limit)} limit"
        if st.st_size > self.store.max_binary_bytes:
            try:
                binary = _is_binary(str(self.store.workspace), os.fsdecode(raw), st)
            except (OSError, ValueError) as error:
                return f"changed while it was stored ({_reason(error)})"
            if binary:
                return f"binary, {_size(st.st_size)}, over the {_size(self.store.max_binary_bytes)} limit for binaries"
        return None

    def _skip(self, raw: bytes, st: os.stat_result | None, why: str) -> list[Skipped]:
        path = os.fsdecode(raw)
        version = (st.st_size, st.st_mtime_ns) if st is not None else (-1, -1)
        if self._reported.get(path) == version:
            return []
        self._reported[path] = version
        return [Skipped(path, why)]

    def record(self, trees: Sequence[str], message: str) -> str:
        """`trees` chained on this session's ref: one commit (whose parent is the last one) of a tree holding them
        all (`0001`, `0002`…); its commit id. Not under the snapshot lock: it writes no index."""
        listing = b"".join(f"040000 tree {tree}\t{n:04d}\0".encode() for n, tree in enumerate(trees, 1))
        holder = self.store.run("mktree", "-z", index=None, data=listing).stdout.decode().strip()
        with self._head_lock:
            commit = self.store.commit(holder, self.head, message)
            self.store.set_ref(self.name, commit)
            self._head = commit
            return commit


def _leading_dirs_real(root: bytes, raw: bytes, known: dict[bytes, bool]) -> bool:
    """Whether every directory on the way to `raw` is a real directory (not a link): a path beyond a link is
    another place's file, which git does not store either."""
    parts = raw.split(b"/")[:-1]
    for depth in range(1, len(parts) + 1):
        prefix = b"/".join(parts[:depth])
        if prefix not in known:
            try:
                known[prefix] = stat.S_ISDIR(os.lstat(os.path.join(root, prefix)).st_mode)
            except OSError:
                known[prefix] = False
        if not known[prefix]:
            return False
    return True


_UNPROCESSABLE = re.compile(r"fatal: Unable to process path (.*)$", re.MULTILINE)
_ADD_TRIES = 4  # `update-index --add` runs once more for each of the first few paths changed under it


def _changed(store: Store, raw: bytes, listed: dict[bytes, os.stat_result]) -> bool:
    """Whether the file at `raw` is not the one listed now (another file, another type, or gone)."""
    try:
        now = os.lstat(os.path.join(store.workspace, os.fsdecode(raw)))
    except OSError:
        return True
    seen = listed[raw]
    return (now.st_mode, now.st_ino, now.st_dev) != (seen.st_mode, seen.st_ino, seen.st_dev)


def _is_binary(root: str, relative: str, seen: os.stat_result) -> bool:
    """Whether the file git would store at `relative` is binary (a NUL in its first bytes, as git decides). Opened
    exactly (safefs: beneath `root`, no link followed, never waiting on a FIFO), and only the file `seen` (its
    lstat) is read: a name a command swapped for a FIFO held the snapshot in `open` for good (attack round 23b)."""
    with safefs.Beneath(root) as beneath:
        fd = beneath.open(relative, safefs.READ_FLAGS)
    with os.fdopen(fd, "rb") as file:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            raise ValueError("another file than the one listed")
        return b"\0" in file.read(_SNIFF)


def _read_stored(root: safefs.Beneath, relative: str, limit: int) -> bytes:
    """The regular file at `relative`, read exactly (at most `limit` bytes: `TooBig` beyond)."""
    fd = root.open(relative, safefs.READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file now")
        return safefs.read_all(fd, limit, root.path_of(relative))
    finally:
        os.close(fd)


def _blob_id(data: bytes, length: int) -> str:
    """The id git gives a blob of `data` (sha1, or sha256 in a repository of that format: by the ids' length)."""
    digest = hashlib.sha256 if length == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _reason(error: BaseException) -> str:
    return error.strerror if isinstance(error, OSError) and error.strerror else str(error) or type(error).__name__


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MB" if count >= 1024 * 1024 else f"{count / 1024:.0f} KB"


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    with open(path, "wb", opener=private_opener) as out:
        out.write(data)


def _lock_file(fd: int) -> None:
    """An exclusive lock on the open file `fd` until it is closed: `flock` on POSIX; on Windows (no fcntl)
    `msvcrt.locking` of its first byte, retried until it is free."""
    if sys.platform == "win32":
        import msvcrt

        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # (itself retries for 10 s, then raises)
                return
            except OSError:
                continue
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)
