"""What a read-only git command (`git status`, `git diff`, `git log -p`) would do beyond reading, in a repository
the folder brought with it (an unpacked archive, a copied project: its own `.git`, not one `git clone` wrote).
Git takes programs from a repository's settings (`core.fsmonitor`, a diff driver's `textconv`, a `filter`'s
`clean`, `diff.external`, `include.path` to more settings), fires a hook when `git status` refreshes the index,
reads objects and a work tree named there (`core.worktree`, `commondir`, `objects/info/alternates`), and does
all of this again in every submodule the index tracks. The engine asks before such a command runs (it would
otherwise run with no question); this module says why.

The settings are judged by an allowlist (`inert`): git has too many keys that run programs to list those."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path

from bridge.permissions.git_held import common_dir_of, config_entries, gitdir_of, inner_gitdirs, read_small
from bridge.permissions.held import StatCache, stat_key, under

# Settings that run nothing and send git nowhere, whatever their value: what `git init`, `git clone` and ordinary
# git work write, and keys that only change how git shows things.
_INERT_EXACT = frozenset(
    {
        "core.repositoryformatversion",
        "core.filemode",
        "core.bare",
        "core.logallrefupdates",
        "core.ignorecase",
        "core.precomposeunicode",
        "core.symlinks",
        "core.autocrlf",
        "core.eol",
        "core.safecrlf",
        "core.quotepath",
        "core.sparsecheckout",
        "core.sparsecheckoutcone",
        "core.compression",
        "core.commentchar",
        "core.abbrev",
        "core.checkstat",
        "core.trustctime",
        "core.untrackedcache",
        "core.splitindex",
        "core.multipackindex",
        "core.preloadindex",
        "core.longpaths",
        "core.whitespace",
        "user.name",
        "user.email",
        "user.signingkey",
        "init.defaultbranch",
        "extensions.objectformat",
        "extensions.refstorage",
        "extensions.partialclone",
        "extensions.worktreeconfig",
        "extensions.preciousobjects",
        "pull.rebase",
        "pull.ff",
        "push.default",
        "push.autosetupremote",
        "fetch.prune",
        "merge.ff",
        "merge.conflictstyle",
        "rebase.autosquash",
        "rebase.autostash",
        "branch.autosetupmerge",
        "branch.autosetuprebase",
        "gc.auto",
        "index.version",
        "feature.manyfiles",
        "lfs.repositoryformatversion",
        "commit.gpgsign",
        "tag.gpgsign",
        "color.ui",
        "advice.detachedhead",
        "status.showuntrackedfiles",
        "diff.renames",
        "diff.algorithm",
        "log.date",
        "log.decorate",
    }
)
_INERT_TAILS = {
    "remote": {
        *("url", "pushurl", "fetch", "push", "tagopt", "mirror", "prune", "partialclonefilter", "promisor"),
        *("gh-resolved", "skipdefaultupdate"),  # GitHub's CLI, `git remote update`
    },
    "branch": {
        *("remote", "merge", "rebase", "pushremote", "description"),
        *("vscode-merge-base", "github-pr-owner-number", "github-pr-base-branch"),  # VS Code and its PR extension
    },
    "submodule": {"url", "active", "branch", "shallow"},
}
READ_HOOKS = ("post-index-change",)  # the hook a read-only command fires: `git status` refreshing the index
MAX_INDEX = 64 * 1024 * 1024  # a bigger index is not read: its submodules can't be listed, so the command asks
MAX_SUBMODULES = 500
MAX_DEPTH = 4  # submodules of submodules


def inert(key: str) -> bool:
    """A git setting (lower-case key) that runs nothing and sends git nowhere, whatever its value."""
    if key in _INERT_EXACT:
        return True
    section, _, rest = key.partition(".")
    return section in _INERT_TAILS and "." in rest and rest.rsplit(".", 1)[1] in _INERT_TAILS[section]


def reading_risks(root: Path, contains: Callable[[Path], bool]) -> list[str]:
    """Why a read-only git command in the repository whose work tree is `root` could run a program or read
    outside the workspace (`contains` says what is inside, on resolved paths); [] when it can't. Looks at the
    repository, its worktrees' and submodules' git directories, and the repositories its index tracks as
    submodules (git runs `status` in each)."""
    return _risks(root, contains, MAX_DEPTH)


def _risks(root: Path, contains: Callable[[Path], bool], depth: int) -> list[str]:
    dotgit = root / ".git"
    gitdir = Path(os.path.realpath(dotgit)) if os.path.islink(dotgit) else dotgit
    if os.path.isfile(dotgit):
        pointed = gitdir_of(dotgit)
        if pointed is None:
            return [f"{dotgit} can't be read as a pointer to a git directory"]
        gitdir = pointed
    out: list[str] = []
    gitdirs = [gitdir]
    common = common_dir_of(gitdir)
    if common is not None:
        gitdirs.append(common)
    elif os.path.lexists(gitdir / "commondir"):
        out.append(f"{gitdir / 'commondir'} can't be read to check where git's repository is")
    modules, worktrees = inner_gitdirs(gitdir)
    gitdirs += modules + worktrees
    for directory in gitdirs:
        real = Path(os.path.realpath(directory))
        if not contains(real):
            out.append(f"the repository's git directory {real} is outside the workspace")
            continue
        out += _settings_risks(directory, root, contains)
        out += [f"git runs its hook {directory / 'hooks' / h}" for h in READ_HOOKS if _exists(directory / "hooks" / h)]
        out += _alternates_risks(directory, contains)
    if depth > 0:
        submodules = _gitlinks(gitdir / "index")
        if submodules is None:
            out.append(f"its index {gitdir / 'index'} can't be read to list the submodules git looks into")
        else:
            for relative in submodules[:MAX_SUBMODULES]:
                sub = root / relative
                if os.path.lexists(sub / ".git"):
                    out += _risks(sub, contains, depth - 1)
            if len(submodules) > MAX_SUBMODULES:
                out.append(f"its index tracks over {MAX_SUBMODULES} submodules")
    return out


def _settings_risks(gitdir: Path, root: Path, contains: Callable[[Path], bool]) -> list[str]:
    """Settings that are not inert. `core.hooksPath` (husky and the like set it) is judged by what it names: a
    directory in the workspace without the hook a read fires."""
    out: list[str] = []
    for name in ("config", "config.worktree"):
        config = gitdir / name
        if not os.path.lexists(config):
            continue
        entries = config_entries(config) if os.path.isfile(config) else None
        if entries is None:
            out.append(f"git's settings {config} can't be read to check them")
            continue
        for key, value in entries:
            if key == "core.hookspath":
                hooks = Path(os.path.realpath(under(value, root)))
                if not contains(hooks):
                    out.append(f"git's settings {config} send git to hooks in {hooks}, outside the workspace")
                out += [f"git runs its hook {hooks / h}" for h in READ_HOOKS if _exists(hooks / h)]
        keys = sorted({k for k, _ in entries if not inert(k) and k != "core.hookspath"})
        if keys:
            shown = ", ".join(f"`{k}`" for k in keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
            out.append(f"git's settings {config} set {shown}, which can make git run a program or read elsewhere")
    return out


def _alternates_risks(gitdir: Path, contains: Callable[[Path], bool]) -> list[str]:
    alternates = gitdir / "objects" / "info" / "alternates"
    if not os.path.lexists(alternates):
        return []
    data = read_small(alternates, 1024 * 1024)
    if data is None:
        return [f"{alternates} can't be read to check where git reads objects from"]
    lines = data.decode("utf-8", "surrogateescape").splitlines()
    for line in lines:
        if line.strip() and not line.startswith("#"):
            store = Path(os.path.realpath(os.path.join(gitdir / "objects", line.strip())))
            if not contains(store):
                return [f"git reads objects from {store} ({alternates}), outside the workspace"]
    return []


def _exists(path: Path) -> bool:
    return os.path.lexists(path)


_ENTRY = struct.Struct(">10I")  # ctime, ctime ns, mtime, mtime ns, dev, ino, mode, uid, gid, size
_GITLINK = 0o160000


def _gitlinks(index: Path) -> list[str] | None:
    """The paths git's index tracks as submodules (mode 160000), read from the index file itself (running git
    there could run what is being checked); [] without an index, None when it can't be read. Cached while the
    index stays the same file."""
    return _index_cache.get(index, stat_key(index), lambda: _read_gitlinks(index))


def tracked_links(root: Path) -> list[str]:
    """The paths the index of `root`'s repository tracks as symbolic links (mode 120000), relative to `root`: the
    links a clone made, however big the work tree (containment.py's look for links is bounded). Read from the
    index file itself; [] when there is none or it can't be read."""
    dotgit = root / ".git"
    gitdir = dotgit if os.path.isdir(dotgit) else gitdir_of(dotgit) if os.path.isfile(dotgit) else None
    if gitdir is None:
        return []
    index = gitdir / "index"
    return _links_cache.get(index, stat_key(index), lambda: _read_gitlinks(index, _SYMLINK)) or []


_index_cache: StatCache[list[str] | None] = StatCache()
_links_cache: StatCache[list[str] | None] = StatCache()
_SYMLINK = 0o120000


def _read_gitlinks(index: Path, wanted: int = _GITLINK) -> list[str] | None:
    if not os.path.lexists(index):
        return []
    data = read_small(index, MAX_INDEX)
    if data is None or len(data) < 12 or data[:4] != b"DIRC":
        return None if data != b"" else []
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4):
        return None
    for hash_size in (20, 32):  # SHA-1, or SHA-256 repositories
        found = _index_entries(data, version, count, hash_size, wanted)
        if found is not None:
            return found
    return None


def _index_entries(data: bytes, version: int, count: int, hash_size: int, wanted: int) -> list[str] | None:
    out: list[str] = []
    pos, previous = 12, b""
    try:
        for _ in range(count):
            start = pos
            mode = _ENTRY.unpack_from(data, pos)[6]
            pos += _ENTRY.size + hash_size
            (flags,) = struct.unpack_from(">H", data, pos)
            pos += 2
            if version >= 3 and flags & 0x4000:
                pos += 2
            if version == 4:
                strip, pos = _varint(data, pos)
                if strip > len(previous):
                    return None
                end = data.index(b"\0", pos)
                path = previous[: len(previous) - strip] + data[pos:end]
                pos = end + 1
            else:
                end = data.index(b"\0", pos)
                path = data[pos:end]
                pos = start + ((end - start) // 8 + 1) * 8  # 1–8 NULs pad the entry to a multiple of 8
            if pos > len(data) or mode & 0o170000 not in (0o100000, 0o120000, 0o040000, _GITLINK):
                return None
            if mode & 0o170000 == wanted:
                out.append(os.fsdecode(path))
            previous = path
    except (struct.error, ValueError):
        return None
    return out


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Git's offset varint (as in pack files' ofs-delta): big-endian 7-bit groups, each continuation adds one."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos
