"""What runs later: files whose content a program runs, or takes the commands it runs from, after the command
that wrote them has ended — outside the sandbox, and without anyone asking for that code to run.

The line. A file is held when some program acts on it *by itself*:
- when a folder opens: editor and IDE settings and tasks (`.vscode/`, `.idea/`, `.zed/`, `.helix/`, `.fleet/`,
  `.theia/`), dev-container definitions (`initializeCommand` runs on the host), Vim's and Emacs's per-folder
  files (`.exrc`, `.nvim.lua`, `.dir-locals.el`);
- when a shell enters the folder: environment loaders (`.envrc`, mise's `mise.toml` and kin);
- when git runs — any git command, the editor's own included: the repository's configuration and hooks and
  everything that moves git to another configuration (`.git/config`, `.git/hooks/`, `.git/commondir`,
  `.git/config.worktree`, a `.git` file naming the git directory, submodules' and worktrees' git directories,
  the targets of `core.hooksPath` and `include.path`, and workspace files that git settings name as programs),
  and the hook managers a commit runs (`.husky/`, `.pre-commit-config.yaml`, lefthook, overcommit);
- at the bridge's next tool call or session: its settings, hooks and MCP servers and the files their commands
  name (`sh .claude/hooks/fmt.sh` holds that script), memory files and agent/command definitions.

Not held, on purpose: project code and build definitions (a Makefile, `package.json` scripts, `build.rs`,
`conftest.py`, `.cargo/config.toml`): they run when the user builds or tests, which is the user asking, and
writing them is the agent's work — review them as code. Installed dependencies (`node_modules/`, a virtualenv's
`site-packages` and its `.pth` files): editors' language tooling does load them on open (ESLint, the Python
extension's interpreter), but they are what `npm install` and `pip install` write; the line can't be drawn
there. Files git reads as data whose programs come from configuration (`.gitattributes`, `.git/info/attributes`
pick filter and diff drivers that only the held configuration defines; `.gitmodules`, whose `update = !command`
git ignores). Version pins (`.nvmrc`, `.tool-versions`). Interactive-rebase todo files (git itself rewrites
them as a rebase goes). A new `*.code-workspace` file (it runs nothing until the user opens it; an existing one
is held). Repositories deeper than one level below a root (only the root's and its subfolders' are held).

Where it is held:
- the permission engine (step 7 of its order): a write through the file tools, or a Bash command known to
  write one (a redirection, `git config`…), asks in every mode with no always-option, saying why in words;
  what the user allows is granted to that call (`Decision.grants`);
- the OS sandbox (bridge/tools/sandbox.py): read-only for every Bash command, at each workspace root, except
  what the command was granted. The engine asks for these names at any depth; the sandbox holds them at the
  roots (and in git's directories), where the programs above look.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from bridge.permissions.settings import SettingsStore

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


_VSCODE = "VS Code reads its workspace settings, tasks and launch configurations from it"
_IDEA = "JetBrains IDEs run the run configurations and startup tasks it holds"
_CONTAINER = "a dev container definition runs its commands (initializeCommand on this machine) when the folder " \
             "is reopened in a container"
_MISE = "mise runs the hooks and scripts it names when a shell enters the folder"
_LEFTHOOK = "lefthook runs the commands it lists at git commit and push"
_VIM = "Vim and Neovim run it when they start in the folder (exrc)"
_EMACS = "Emacs applies (and may evaluate) its local variables when a file in the folder opens"

BRIDGE_HELD: tuple[Held, ...] = (
    Held(".agent-bridge", "dir", "it holds the bridge's settings, hooks and definitions"),
    Held(".claude", "dir", "it holds Claude Code's settings, hooks and definitions"),
    Held(".mcp.json", "file", "it configures MCP servers (programs the bridge starts)"),
    Held("CLAUDE.md", "file", "it is a memory file (it loads into the next session's prompt)", "memory"),
    Held("CLAUDE.local.md", "file", "it is a memory file (it loads into the next session's prompt)", "memory"),
    Held("AGENTS.md", "file", "it is a memory file (it loads into the next session's prompt)", "memory"),
)
"""The bridge's and Claude Code's own (containment.py words the engine's questions about them)."""

RUNS_ON_OPEN: tuple[Held, ...] = (
    # editors and IDEs
    Held(".vscode/tasks.json", "file", "VS Code can run its tasks by itself when the folder opens"),
    Held(".vscode/settings.json", "file", "it can name programs VS Code runs (terminal profiles, interpreters, "
                                          "tool paths)"),
    Held(".vscode/launch.json", "file", "it defines what VS Code's debugger runs"),
    Held(".vscode", "dir", _VSCODE),
    Held(".idea", "dir", _IDEA),
    Held(".fleet", "dir", "JetBrains Fleet runs the run configurations it holds"),
    Held(".zed", "dir", "Zed starts the language servers and tasks its settings name"),
    Held(".helix", "dir", "Helix starts the language servers its languages.toml names"),
    Held(".theia", "dir", "Theia reads its workspace settings and tasks from it"),
    Held(".devcontainer", "dir", _CONTAINER),
    Held(".devcontainer.json", "file", _CONTAINER),
    Held(".exrc", "file", _VIM),
    Held(".nvimrc", "file", _VIM),
    Held(".nvim.lua", "file", _VIM),
    Held(".dir-locals.el", "file", _EMACS),
    Held(".dir-locals-2.el", "file", _EMACS),
    # environment loaders
    Held(".envrc", "file", "direnv runs it when a shell enters the folder"),
    Held("mise.toml", "file", _MISE),
    Held("mise.local.toml", "file", _MISE),
    Held(".mise.toml", "file", _MISE),
    Held(".mise.local.toml", "file", _MISE),
    Held(".mise", "dir", _MISE),
    Held(".config/mise.toml", "file", _MISE),
    Held(".config/mise", "dir", _MISE),
    # what a git commit runs
    Held(".pre-commit-config.yaml", "file", "pre-commit runs the hooks it lists at every git commit"),
    Held(".husky", "dir", "husky's scripts run at git commit and push"),
    Held("lefthook.yml", "file", _LEFTHOOK),
    Held("lefthook.yaml", "file", _LEFTHOOK),
    Held(".lefthook.yml", "file", _LEFTHOOK),
    Held(".lefthook.yaml", "file", _LEFTHOOK),
    Held("lefthook-local.yml", "file", _LEFTHOOK),
    Held(".lefthook-local.yml", "file", _LEFTHOOK),
    Held(".lefthook", "dir", _LEFTHOOK),
    Held(".overcommit.yml", "file", "overcommit runs the hooks it lists at git commit"),
)
"""What other programs run by themselves. The engine asks for these names at any depth (a `.envrc` in a
subfolder runs too); a more specific entry comes before the directory holding it (its reason is the more
precise one)."""

HELD: tuple[Held, ...] = (*BRIDGE_HELD, *RUNS_ON_OPEN)
"""Held by the sandbox at every workspace root."""

# -- git --------------------------------------------------------------------------------------------------

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


def gitdir_of(dotgit: Path) -> Path | None:
    """The git directory a `.git` file points to (`gitdir: …`, relative to the file's folder), as git reads it."""
    try:
        with open(dotgit, "rb") as handle:
            data = handle.read(MAX_GIT_POINTER + 1)
    except OSError:
        return None
    if len(data) > MAX_GIT_POINTER or not data.startswith(b"gitdir: "):
        return None
    target = os.fsdecode(data[len(b"gitdir: "):].rstrip(b"\r\n"))
    return Path(os.path.normpath(os.path.join(dotgit.parent, target))) if target else None


def common_dir_of(gitdir: Path) -> Path | None:
    """Where `gitdir/commondir` sends git (relative to `gitdir`), or None."""
    try:
        text = (gitdir / "commondir").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    target = text.strip("\r\n")
    return Path(os.path.normpath(os.path.join(gitdir, target))) if target else None


def _in_git_dir(gitdir: Path, name: str, kind: PathKind, why: str) -> HeldPath:
    checked: Literal["", "config", "hooks"] = "config" if name == "config" else "hooks" if name == "hooks" else ""
    return HeldPath(gitdir / name, kind, why, checked=checked)


def _git_dir_entries(gitdir: Path) -> list[HeldPath]:
    out = [_in_git_dir(gitdir, name, kind, why) for name, kind, why in GIT_DIR_NAMES]
    budget = MAX_MODULES
    # submodules' git directories (`modules/<name>[/modules/<name>…]`) and linked worktrees' (`worktrees/<name>`)
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
                out += [_in_git_dir(sub, name, kind, why) for name, kind, why in GIT_DIR_NAMES]
                stack.append(sub / "modules")
            else:
                stack.append(sub)  # a submodule named with a slash: `modules/a/b`
    try:
        worktrees = list(os.scandir(gitdir / "worktrees"))
    except OSError:
        worktrees = []
    for entry in worktrees[:MAX_MODULES]:
        if entry.is_dir(follow_symlinks=False):
            out += [_in_git_dir(Path(entry.path), name, kind, why) for name, kind, why in GIT_DIR_NAMES
                    if name != "hooks"]
    return out


_git_cache: dict[Path, tuple[tuple[object, ...], list[HeldPath]]] = {}


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def git_held(root: Path) -> list[HeldPath]:
    """What git takes settings and hooks from for the repository at `root`: its `.git` (a directory, or a file
    naming one), the git directories that points to, their submodules and worktrees, and what their config
    names (hooksPath, includes, programs in the workspace). A missing `.git` is itself held as a new
    repository (the sandbox lets one appear and checks what it holds). Cached while the files it read stay
    the same."""
    dotgit = root / ".git"
    gitdir = gitdir_of(dotgit) if os.path.isfile(dotgit) else dotgit
    key: tuple[object, ...] = (_stat_key(dotgit), *(_stat_key(gitdir / n) if gitdir else None
                                                   for n in ("config", "commondir", "modules", "worktrees")))
    with _config_lock:
        cached = _git_cache.get(root)
    if cached is not None and cached[0] == key:
        return cached[1]
    found = _git_held(root)
    with _config_lock:
        _git_cache[root] = (key, found)
    return found


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

_PROGRAM_KEYS = re.compile(
    r"^(core\.(fsmonitor|sshcommand|editor|pager|askpass|gitproxy)|sequence\.editor|gpg(\..+)?\.program"
    r"|credential(\..+)?\.helper|diff\.(.+\.)?(textconv|command)|diff\.external|filter\..+\.(clean|smudge|process)"
    r"|merge\..+\.driver|alias\..+|pager\..+|remote\..+\.(uploadpack|receivepack)|uploadpack\.packobjectshook"
    r"|(diff|merge)tool\..+\.cmd|submodule\..+\.update)$")
_INCLUDE_KEYS = re.compile(r"^(include|includeif\..+)\.path$")
_config_cache: dict[Path, tuple[tuple[int, int, int], list[tuple[str, str]]]] = {}
_config_lock = threading.Lock()


def config_entries(config: Path) -> list[tuple[str, str]] | None:
    """`(key, value)` pairs of a git config file as git reads it (`git config -f … --list`; no includes
    followed, no repository touched); None when git can't read it. Cached by the file's identity."""
    try:
        st = os.stat(config)
    except OSError:
        return []
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _config_lock:
        cached = _config_cache.get(config)
        if cached is not None and cached[0] == key:
            return cached[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    try:
        done = subprocess.run(["git", "config", "--file", str(config), "--null", "--list"], capture_output=True,
                              timeout=5, env=env, cwd="/", stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    entries: list[tuple[str, str]] = []
    for record in done.stdout.split(b"\0"):
        if record:
            name, _, value = record.partition(b"\n")
            entries.append((os.fsdecode(name).lower(), os.fsdecode(value)))
    with _config_lock:
        _config_cache[config] = (key, entries)
    return entries


def config_named(config: Path, worktree: Path) -> list[HeldPath]:
    """Workspace paths a git config sends git to: `core.hooksPath` (a directory of hooks), `include.path` targets
    (more settings) and files its program settings name (`core.fsmonitor = tools/watch.sh`)."""
    out: list[HeldPath] = []
    for key, value in config_entries(config) or []:
        if key == "core.hookspath" and value:
            why = f"git runs the hooks in it (core.hooksPath in {config})"
            out.append(HeldPath(_under(value, worktree), "dir", why))
        elif _INCLUDE_KEYS.match(key) and value:
            out.append(HeldPath(_under(value, config.parent), "file", f"git reads it as settings ({key} in {config})"))
        elif _PROGRAM_KEYS.match(key) and value:
            for path in command_paths(value.removeprefix("!"), worktree):
                out.append(HeldPath(path, "file", f"git runs it ({key} in {config})"))
    return out


def _under(value: str, base: Path) -> Path:
    return Path(os.path.normpath(os.path.join(base, os.path.expanduser(value))))


# -- git commands that write git's settings -----------------------------------------------------------------

_GIT_VALUE_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env",
                                "--super-prefix", "--exec-path", "--attr-source", "--list-cmds"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
                           "-l", "--list", "get", "list"})
_CONFIG_ELSEWHERE = frozenset({"--global", "--system", "--file", "-f", "--blob"})
_CONFIG_ACTIONS = frozenset({"--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
                             "--remove-section", "-e", "--edit", "set", "unset", "rename-section", "remove-section",
                             "edit"})
_CONFIG_VALUED = frozenset({"--type", "-t", "--default", "--comment", "--value", "--file", "-f", "--blob"})
_SUBCOMMAND_WRITES: dict[str, frozenset[str]] = {
    "remote": frozenset({"add", "rename", "mv", "remove", "rm", "set-head", "set-branches", "set-url"}),
    "submodule": frozenset({"add", "init", "update", "sync", "deinit", "set-url", "set-branch", "absorbgitdirs"}),
    "sparse-checkout": frozenset({"init", "set", "add", "disable", "reapply"}),
    "maintenance": frozenset({"register", "unregister", "start", "stop"}),
    "lfs": frozenset({"install", "uninstall"}),
}
_OPTION_WRITES: dict[str, frozenset[str]] = {
    "branch": frozenset({"-m", "-M", "-c", "-C", "--move", "--copy", "-u", "--set-upstream-to", "--unset-upstream",
                         "-t", "--track", "--edit-description"}),
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
    sub, args = words[i], list(words[i + 1:])
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
    if not (flags & _CONFIG_ACTIONS or (positionals[:1] and positionals[0] in _CONFIG_ACTIONS)) \
            and len(positionals) < 2:
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


# -- files commands name -----------------------------------------------------------------------------------

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
        path = _under(word, cwd)
        if ("/" in word or os.path.isfile(path)) and path not in found:
            found.append(path)
    return found


def hook_named(store: SettingsStore, events: Sequence[str], cwd: Path) -> list[HeldPath]:
    """The files the configured hook commands name (they run outside the sandbox at every matching event)."""
    variables = {"CLAUDE_PROJECT_DIR": str(cwd)}
    out: list[HeldPath] = []
    for event in events:
        for matcher in store.hooks(event):
            for hook in matcher.hooks:
                for path in command_paths(hook.command, cwd, variables=variables):
                    out.append(HeldPath(path, "file", f"the bridge runs it outside the sandbox (the {event} hook "
                                                      f"`{_short(hook.command)}`)"))
    return out


_mcp_cache: dict[tuple[Path, Path], tuple[tuple[int, int, int] | None, list[HeldPath]]] = {}


def mcp_named(config: Path, cwd: Path) -> list[HeldPath]:
    """The files the stdio MCP servers of a `.mcp.json`-style file name (started outside the sandbox). Cached
    while the file stays the same."""
    key = _stat_key(config)
    cached = _mcp_cache.get((config, cwd))
    if cached is not None and cached[0] == key:
        return cached[1]
    found = _mcp_named(config, cwd) if key is not None else []
    _mcp_cache[(config, cwd)] = (key, found)
    return found


def _mcp_named(config: Path, cwd: Path) -> list[HeldPath]:
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    out: list[HeldPath] = []
    for name, spec in (servers.items() if isinstance(servers, dict) else []):
        if not isinstance(spec, dict) or not isinstance(spec.get("command"), str):
            continue
        args = [a for a in spec.get("args") or [] if isinstance(a, str)]
        line = " ".join([spec["command"], *args])
        for path in command_paths(line, cwd):
            out.append(HeldPath(path, "file", f"the bridge starts it as the MCP server {name!r} (from {config.name})"))
    return out


def _short(command: str) -> str:
    first = command.strip().splitlines()[0] if command.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"


# -- the held paths of a workspace -------------------------------------------------------------------------


MAX_NESTED = 200  # immediate subdirectories whose repositories are held (their `.git`)


def nested_git_held(root: Path) -> list[HeldPath]:
    """The repositories one level below `root` (a submodule, a cloned or generated project): an editor finds them
    by itself (VS Code's git scans the workspace's subfolders, and opens a repository whose `.git` appears) and
    runs git there. Held like the root's; where there is none yet, a new one's settings are checked."""
    key = _stat_key(root)
    with _config_lock:
        cached = _nested_cache.get(root)
    if cached is not None and cached[0] == key:
        folders = cached[1]
    else:
        try:
            folders = sorted(Path(e.path) for e in os.scandir(root)
                             if e.name != ".git" and e.is_dir(follow_symlinks=False))[:MAX_NESTED]
        except OSError:
            folders = []
        with _config_lock:
            _nested_cache[root] = (key, folders)
    return [held for folder in folders for held in git_held(folder)]


_nested_cache: dict[Path, tuple[tuple[int, int, int] | None, list[Path]]] = {}


def held_at(root: Path) -> list[HeldPath]:
    """Everything held at one workspace root: the names of HELD, git's (the root's repository and those one level
    below it), and what the MCP file names."""
    out = [HeldPath(root / h.name, h.kind, h.why, h.strength) for h in HELD]
    out += git_held(root)
    out += nested_git_held(root)
    out += mcp_named(root / ".mcp.json", root)
    with contextlib.suppress(OSError):
        out += [HeldPath(root / name, "file", _CODE_WORKSPACE) for name in sorted(os.listdir(root))
                if name.endswith(".code-workspace")]
    return out


_CODE_WORKSPACE = "VS Code runs the tasks and applies the settings of a workspace file when it is opened"


def name_reason(path: Path) -> str | None:
    """Why writing `path` asks by its name alone (a RUNS_ON_OPEN name at any depth, case folded), or None."""
    if path.name.casefold().endswith(".code-workspace"):
        return f"{path}: {_CODE_WORKSPACE}"
    parts = [p.casefold() for p in path.parts]
    for held in RUNS_ON_OPEN:
        want = [p.casefold() for p in held.parts]
        n = len(want)
        for i in range(len(parts) - n + 1):
            if parts[i:i + n] == want and (held.kind == "dir" or i + n == len(parts)):
                if i + n == len(parts):
                    return f"{path}: {held.why}"
                return f"{path} (in {'/'.join(path.parts[i:i + n])}/): {held.why}"
    return None


# -- grants in flight --------------------------------------------------------------------------------------


class Grants:
    """Protected paths that calls now running were allowed to write (the user said yes to a question naming
    them). The sandbox's watcher leaves what they create alone. A grant lingers a moment after its call ends:
    the watcher may read the event of the last write after the call has returned.

    Before a grant takes effect its listeners hear of it, synchronously: a sandbox that started while such a
    path did not exist has no read-only mount for it, and could rewrite what the allowed call writes — the
    sandbox ends those at once, before the write happens."""

    LINGER = 2.0

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, tuple[Path, ...]] = {}
        self._ended: list[tuple[float, tuple[Path, ...]]] = []
        self._next = 0
        self.listeners: list[Callable[[tuple[Path, ...]], None]] = []

    @contextlib.contextmanager
    def hold(self, paths: Iterable[Path]) -> Iterator[None]:
        held = tuple(paths)
        if not held:
            yield
            return
        for listener in list(self.listeners):
            listener(held)
        with self._lock:
            key = self._next = self._next + 1
            self._active[key] = held
        try:
            yield
        finally:
            with self._lock:
                self._active.pop(key, None)
                self._ended.append((time.monotonic() + self.LINGER, held))

    def covers(self, path: Path) -> bool:
        now = time.monotonic()
        with self._lock:
            self._ended = [(until, paths) for until, paths in self._ended if until > now]
            pools = [*self._active.values(), *(paths for _, paths in self._ended)]
        return any(granted_covers(paths, path) for paths in pools)


def granted_covers(grants: Iterable[Path], path: Path) -> bool:
    """Whether a grant of `grants` is `path` or holds it."""
    return any(path == g or path.is_relative_to(g) for g in grants)


GRANTS = Grants()
