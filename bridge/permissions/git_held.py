"""Git's part of what runs later: everything git reads its settings or hooks from, and the git commands whose
purpose is to change those settings. runs_later.py says where this stands in the line; the rest of `.git`
(objects, refs, the index, logs, lock files) stays writable, so ordinary git work runs sandboxed."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from bridge import safefs
from bridge.execution import programs
from bridge.permissions.held import HeldPath, PathKind, StatCache, command_paths, stat_key, under

GIT_CONFIG = "git's settings, which can make git run programs (core.fsmonitor, core.hooksPath, aliases)"
GIT_HOOKS = "git runs its hooks at commit, merge and checkout"
GIT_REDIRECT = "it moves where git reads its settings and hooks from"
GIT_FILE = "it tells git where the repository (its settings and hooks) is"
NEW_REPOSITORY = "a new repository's settings and hooks (git runs them)"
GIT_DIR_NAMES: tuple[tuple[str, PathKind, str], ...] = (
    ("config", "file", GIT_CONFIG),
    ("hooks", "dir", GIT_HOOKS),
    ("commondir", "file", GIT_REDIRECT),
    ("config.worktree", "file", GIT_CONFIG),
)
"""Inside every git directory: what git reads settings or hooks from. The rest of `.git` (objects, refs, the
index, logs, COMMIT_EDITMSG, lock files) stays writable, so add, commit, branch and fetch work sandboxed."""

MAX_GIT_POINTER = 1024 * 1024  # git reads no bigger `.git` file
MAX_MODULES = 2_000  # directory entries a walk of `.git/modules` may visit


def read_small(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes, if it holds at most `limit`; None for anything else. Opened without waiting: a
    folder's FIFO in git's place (`.git/commondir`, `.git/index`) must not hang the check that reads it."""
    try:
        fd = os.open(path, safefs.READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return safefs.read_all(fd, limit, str(path))
    except OSError:  # TooBig is one
        return None
    finally:
        os.close(fd)


def gitdir_of(dotgit: Path) -> Path | None:
    """The git directory a `.git` file points to (`gitdir: …`, relative to the file's folder), as git reads it."""
    data = read_small(dotgit, MAX_GIT_POINTER)
    if data is None or not data.startswith(b"gitdir: "):
        return None
    target = os.fsdecode(data[len(b"gitdir: ") :].rstrip(b"\r\n"))
    return Path(os.path.normpath(os.path.join(dotgit.parent, target))) if target else None


def common_dir_of(gitdir: Path) -> Path | None:
    """Where `gitdir/commondir` sends git (relative to `gitdir`), or None."""
    data = read_small(gitdir / "commondir", MAX_GIT_POINTER)
    if data is None:
        return None
    target = data.decode("utf-8", "surrogateescape").strip("\r\n")
    return Path(os.path.normpath(os.path.join(gitdir, target))) if target else None


def _in_git_dir(gitdir: Path, name: str, kind: PathKind, why: str) -> HeldPath:
    checked: Literal["", "config", "hooks"] = "config" if name == "config" else "hooks" if name == "hooks" else ""
    return HeldPath(gitdir / name, kind, why, checked=checked)


def inner_gitdirs(gitdir: Path) -> tuple[list[Path], list[Path]]:
    """The git directories kept inside `gitdir`: its submodules' (`modules/<name>[/modules/<name>…]`, a name may
    hold a slash) and its linked worktrees' (`worktrees/<name>`). Bounded by MAX_MODULES entries each."""
    modules: list[Path] = []
    budget = MAX_MODULES
    stack = [gitdir / "modules"]
    while stack and budget > 0:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        budget -= len(entries)
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            sub = Path(entry.path)
            if (sub / "HEAD").exists() or (sub / "config").exists():
                modules.append(sub)
                stack.append(sub / "modules")
            else:
                stack.append(sub)  # a submodule named with a slash: `modules/a/b`
    try:
        worktrees = [Path(e.path) for e in os.scandir(gitdir / "worktrees") if e.is_dir(follow_symlinks=False)]
    except OSError:
        worktrees = []
    return modules, worktrees[:MAX_MODULES]


def _git_dir_entries(gitdir: Path) -> list[HeldPath]:
    modules, worktrees = inner_gitdirs(gitdir)
    out = [_in_git_dir(gitdir, name, kind, why) for name, kind, why in GIT_DIR_NAMES]
    for sub in modules:
        out += [_in_git_dir(sub, name, kind, why) for name, kind, why in GIT_DIR_NAMES]
    for sub in worktrees:
        out += [_in_git_dir(sub, name, kind, why) for name, kind, why in GIT_DIR_NAMES if name != "hooks"]
    return out


_git_cache: StatCache[list[HeldPath]] = StatCache()


def git_held(root: Path) -> list[HeldPath]:
    """What git takes settings and hooks from for the repository at `root`: its `.git` (a directory, or a file
    naming one), the git directories that points to, their submodules and worktrees, and what their config
    names (hooksPath, includes, programs in the workspace). A missing `.git` is itself held as a new
    repository (the sandbox lets one appear and checks what it holds). Cached while the files it read stay
    the same."""
    dotgit = root / ".git"
    gitdir = gitdir_of(dotgit) if os.path.isfile(dotgit) else dotgit
    key: tuple[object, ...] = (
        stat_key(dotgit),
        *(stat_key(gitdir / n) if gitdir else None for n in ("config", "commondir", "modules", "worktrees")),
    )
    return _git_cache.get(root, key, lambda: _git_held(root))


def _git_held(root: Path) -> list[HeldPath]:
    dotgit = root / ".git"
    out: list[HeldPath] = []
    if os.path.islink(dotgit) or os.path.isfile(dotgit):
        out.append(HeldPath(dotgit, "file", GIT_FILE))
        target = gitdir_of(dotgit) if os.path.isfile(dotgit) else Path(os.path.realpath(dotgit))
        gitdirs = [target] if target is not None else []
    elif os.path.isdir(dotgit):
        gitdirs = [dotgit]
    else:
        return [HeldPath(dotgit, "dir", NEW_REPOSITORY, checked="repository")]
    for gitdir in list(gitdirs):
        common = common_dir_of(gitdir)
        if common is not None and common not in gitdirs:
            gitdirs.append(common)
    for gitdir in gitdirs:
        out += _git_dir_entries(gitdir)
        out += config_named(gitdir / "config", root)
    return out


# -- what git settings name --------------------------------------------------------------------------------

PROGRAM_KEYS = re.compile(
    r"^(core\.(fsmonitor|sshcommand|editor|pager|askpass|gitproxy)|sequence\.editor|gpg(\..+)?\.program"
    r"|credential(\..+)?\.helper|diff\.(.+\.)?(textconv|command)|diff\.external|filter\..+\.(clean|smudge|process)"
    r"|merge\..+\.driver|alias\..+|pager\..+|remote\..+\.(uploadpack|receivepack)|uploadpack\.packobjectshook"
    r"|(diff|merge)tool\..+\.cmd|submodule\..+\.update|interactive\.difffilter|gpg\.ssh\.defaultkeycommand"
    r"|trailer\..+\.(command|cmd)|sendemail\.(sendmailcmd|smtpserver|tocmd|cccmd)|browser\..+\.(cmd|path)"
    r"|guitool\..+\.cmd|web\.browser|url\..+\.insteadof|core\.hookspath)$"
)
_INCLUDE_KEYS = re.compile(r"^(include|includeif\..+)\.path$")
_config_cache: StatCache[list[tuple[str, str]] | None] = StatCache(keep_none=False)  # git may time out


def config_entries(config: Path) -> list[tuple[str, str]] | None:
    """`(key, value)` pairs of a git config file as git reads it (`git config -f … --list`; no includes
    followed, no repository touched); None when git can't read it, or it is a link out of its git directory (its
    key names were quoted to the model: a `.git/config` linked to `~/.aws/credentials` — attack round 24). Cached
    by the file's identity."""
    try:
        st = os.stat(config)
        if os.path.islink(config) and os.path.commonpath(
            [os.path.realpath(config), os.path.realpath(config.parent)]
        ) != os.path.realpath(config.parent):
            return None
    except (OSError, ValueError):
        return []
    if not stat.S_ISREG(st.st_mode):
        return None  # a FIFO would hold git (and this check) until its timeout
    return _config_cache.get(config, (st.st_ino, st.st_size, st.st_mtime_ns), lambda: _read_config(config))


def _read_config(config: Path) -> list[tuple[str, str]] | None:
    git = programs.helper("git")  # by absolute path, never the folder's own `git`
    if git is None:
        return None
    env = {k: v for k, v in programs.helper_env().items() if not k.startswith("GIT_")}  # no key of ours in it
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        done = subprocess.run(
            [git, "config", "--file", str(config), "--null", "--list"],
            capture_output=True,
            timeout=5,
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for record in done.stdout.split(b"\0"):
        if record:
            name, _, value = record.partition(b"\n")
            entries.append((os.fsdecode(name).lower(), os.fsdecode(value)))
    return entries


def config_named(config: Path, worktree: Path) -> list[HeldPath]:
    """Workspace paths a git config sends git to: `core.hooksPath` (a directory of hooks), `include.path` targets
    (more settings) and files its program settings name (`core.fsmonitor = tools/watch.sh`)."""
    out: list[HeldPath] = []
    for key, value in config_entries(config) or []:
        if key == "core.hookspath" and value:
            why = f"git runs the hooks in it (core.hooksPath in {config})"
            out.append(HeldPath(under(value, worktree), "dir", why))
        elif _INCLUDE_KEYS.match(key) and value:
            out.append(HeldPath(under(value, config.parent), "file", f"git reads it as settings ({key} in {config})"))
        elif PROGRAM_KEYS.match(key) and value:
            for path in command_paths(value.removeprefix("!"), worktree):
                out.append(HeldPath(path, "file", f"git runs it ({key} in {config})"))
    return out


# -- git commands that write git's settings -----------------------------------------------------------------

_GIT_VALUE_OPTIONS = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--config-env",
        "--super-prefix",
        "--exec-path",
        "--attr-source",
        "--list-cmds",
    }
)
_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "-l",
        "--list",
        "get",
        "list",
    }
)
_CONFIG_ELSEWHERE = frozenset({"--global", "--system", "--file", "-f", "--blob"})
_CONFIG_ACTIONS = frozenset(
    {
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
        "set",
        "unset",
        "rename-section",
        "remove-section",
        "edit",
    }
)
_CONFIG_VALUED = frozenset({"--type", "-t", "--default", "--comment", "--value", "--file", "-f", "--blob"})
_SUBCOMMAND_WRITES: dict[str, frozenset[str]] = {
    "remote": frozenset({"add", "rename", "mv", "remove", "rm", "set-head", "set-branches", "set-url"}),
    "submodule": frozenset({"add", "init", "update", "sync", "deinit", "set-url", "set-branch", "absorbgitdirs"}),
    "sparse-checkout": frozenset({"init", "set", "add", "disable", "reapply"}),
    "maintenance": frozenset({"register", "unregister", "start", "stop"}),
    "lfs": frozenset({"install", "uninstall"}),
}
_OPTION_WRITES: dict[str, frozenset[str]] = {
    "branch": frozenset(
        {
            "-m",
            "-M",
            "-c",
            "-C",
            "--move",
            "--copy",
            "-u",
            "--set-upstream-to",
            "--unset-upstream",
            "-t",
            "--track",
            "--edit-description",
        }
    ),
    "checkout": frozenset({"-t", "--track"}),
    "switch": frozenset({"-t", "--track"}),
    "push": frozenset({"-u", "--set-upstream"}),
    "pull": frozenset({"--set-upstream"}),
    "fetch": frozenset({"--set-upstream"}),
}


def git_settings_written(words: Sequence[str], *, repository_exists: bool) -> tuple[str, ...]:
    """Which of a git directory's held files (`config`, `config.worktree`, `hooks`) a git command line writes
    as its purpose (`git config k v`, `git remote add`, `git push -u`, `git lfs install`); () when none. Git's
    own incidental config writes beyond these (`git branch -d` dropping a section) fail read-only in the
    sandbox and say so."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        option = words[i].split("=", 1)[0]
        i += 2 if option in _GIT_VALUE_OPTIONS and "=" not in words[i] else 1
    if i >= len(words):
        return ()
    sub, args = words[i], list(words[i + 1 :])
    if sub == "config":
        return _config_written(args)
    if sub == "init":
        return ("config",) if repository_exists else ()
    if sub in _SUBCOMMAND_WRITES:
        action = next((a for a in args if not a.startswith("-")), None)
        if action in _SUBCOMMAND_WRITES[sub]:
            return ("config", "hooks") if sub == "lfs" else ("config",)
        return ()
    if sub in _OPTION_WRITES and any(a.split("=", 1)[0] in _OPTION_WRITES[sub] for a in args):
        return ("config",)
    return ()


def _config_written(args: list[str]) -> tuple[str, ...]:
    flags = {a.split("=", 1)[0] for a in args if a.startswith("-")}
    if flags & _CONFIG_ELSEWHERE:
        return ()  # another file: outside the workspace (read-only) or an ordinary one
    positionals: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = arg in _CONFIG_VALUED
        else:
            positionals.append(arg)
    if flags & _CONFIG_READS or (positionals[:1] and positionals[0] in _CONFIG_READS):
        return ()
    if (
        not (flags & _CONFIG_ACTIONS or (positionals[:1] and positionals[0] in _CONFIG_ACTIONS))
        and len(positionals) < 2
    ):
        return ()  # `git config KEY`: a read
    return ("config.worktree",) if "--worktree" in flags else ("config",)


def git_directory(base: Path) -> Path:
    """The git directory git uses from `base` (walking up as git does; following a `.git` file), or
    `base/.git` when there is none (where `git init` would make one)."""
    for folder in [base, *base.parents]:
        dotgit = folder / ".git"
        if os.path.isdir(dotgit):
            return dotgit
        if os.path.isfile(dotgit):
            return gitdir_of(dotgit) or dotgit
    return base / ".git"


# -- repositories one level down ---------------------------------------------------------------------------


MAX_NESTED = 200  # immediate subdirectories whose repositories are held (their `.git`)


def nested_git_held(root: Path) -> list[HeldPath]:
    """The repositories one level below `root` (a submodule, a cloned or generated project): an editor finds them
    by itself (VS Code's git scans the workspace's subfolders, and opens a repository whose `.git` appears) and
    runs git there. Held like the root's; where there is none yet, a new one's settings are checked."""
    folders = _nested_cache.get(root, stat_key(root), lambda: _subfolders(root))
    return [held for folder in folders for held in git_held(folder)]


def _subfolders(root: Path) -> list[Path]:
    try:
        found = (Path(e.path) for e in os.scandir(root) if e.name != ".git" and e.is_dir(follow_symlinks=False))
        return sorted(found)[:MAX_NESTED]
    except OSError:
        return []


_nested_cache: StatCache[list[Path]] = StatCache()
