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
  name (`sh .claude/hooks/fmt.sh` holds that script), memory files and agent/command definitions;
- at login, a new terminal, an ssh or git command, when the user opened their home folder: shell startup files,
  `~/.ssh/`, git's global configuration, autostart entries and user services (`RUNS_AT_LOGIN`, in the home folder
  only).

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
- the OS sandbox (bridge/execution/sandbox.py): read-only for every Bash command, at each workspace root, except
  what the command was granted. The engine asks for these names at any depth; the sandbox holds them at the
  roots (and in git's directories), where the programs above look.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bridge.jsonfile import SETTINGS_MAX_BYTES, read_json
from bridge.permissions.git_held import git_held, nested_git_held
from bridge.permissions.held import Held, HeldPath, PathKind, Protection, StatCache, command_paths, stat_key
from bridge.permissions.named_files import binding, bound_paths, written_by

if TYPE_CHECKING:
    from bridge.permissions.settings import SettingsStore

__all__ = ["Held", "HeldPath", "PathKind", "Protection"]


_AGENTS = "another coding agent runs the hooks, commands and MCP servers it configures"
_VSCODE = "VS Code reads its workspace settings, tasks and launch configurations from it"
_IDEA = "JetBrains IDEs run the run configurations and startup tasks it holds"
_CONTAINER = (
    "a dev container definition runs its commands (initializeCommand on this machine) when the folder "
    "is reopened in a container"
)
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
    Held(
        ".vscode/settings.json",
        "file",
        "it can name programs VS Code runs (terminal profiles, interpreters, tool paths)",
    ),
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
    # other coding agents: the hooks and MCP servers they configure run when the folder is opened in them
    *(
        Held(name, "dir", _AGENTS)
        for name in (".gemini", ".cursor", ".codex", ".roo", ".amazonq", ".windsurf", ".continue", ".kiro", ".opencode")
    ),
    Held("opencode.json", "file", _AGENTS),
    # other version control: their settings run hooks at every command, as git's do
    Held(".hg", "dir", "Mercurial runs the hooks and extensions its hgrc names at every hg command"),
    Held(".jj", "dir", "Jujutsu runs the programs its repository config names"),
    Held(".sl", "dir", "Sapling runs the hooks its config names"),
    Held(".bzr", "dir", "Bazaar runs the hooks and plugins its branch and repository settings name"),
    Held(".vs", "dir", "Visual Studio runs the tasks and launch configurations it holds"),
    Held("mise/config.toml", "file", _MISE),
    Held(".rtx.toml", "file", _MISE),
    Held(".envrc.local", "file", "direnv setups source it from .envrc when a shell enters the folder"),
    Held("opencode.jsonc", "file", _AGENTS),
    # git: a folder with a HEAD takes its configuration from the folder its `commondir` names (a `config` there,
    # beside no HEAD, looks like nothing), and from `config.worktree`; git runs what those configs name
    Held("commondir", "file", "git reads the configuration of the folder it names, and runs what that names"),
    Held("config.worktree", "file", "git runs what a worktree's configuration names"),
    Held(".pdbrc", "file", "pdb runs its commands whenever someone debugs Python in the folder"),
)
"""What other programs run by themselves. The engine asks for these names at any depth (a `.envrc` in a
subfolder runs too); a more specific entry comes before the directory holding it (its reason is the more
precise one)."""

_SHELL = "the shell runs it at every login or new terminal, outside any sandbox"
_PATH = "the programs in it are on PATH (or run by a tool from it): one named like another runs instead of it"
_EDITOR = "an editor or terminal tool runs what it names (its startup files, extensions) when it starts"
_TOOL = "a tool reads it at every run and runs what it names (a credential process, an exec plugin, a script)"
_CONFIG = "it holds the bridge's settings, skills, commands and agents: what every later session loads and allows"
_INSTALLED_PLUGIN = "it is an installed plugin's folder: an enabled plugin's hooks and MCP servers run from it"
_CLAUDE_HOME = "it holds Claude Code's settings, hooks, skills, commands, agents and plugins"
_PLUGINS = "it holds Claude Code's plugins, whose hooks and MCP servers the bridge runs"
_GIT = "every git command reads it: the programs it names (core.fsmonitor, core.hooksPath, aliases) run"

RUNS_AT_LOGIN: tuple[Held, ...] = (
    *(Held(name, "file", _SHELL) for name in (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile")),
    *(Held(name, "file", _SHELL) for name in (".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout")),
    Held(".config/fish", "dir", _SHELL),
    Held(".ssh", "dir", "ssh runs the commands its config names and admits the keys authorized_keys lists"),
    Held(".gitconfig", "file", _GIT),
    Held(".config/git", "dir", _GIT),
    Held(".config/autostart", "dir", "the desktop session starts what it lists at login"),
    Held(".config/systemd/user", "dir", "systemd starts the user services it defines"),
    # found by an attack round (the home folder opened): what else runs by itself, or names what runs
    *(Held(name, "file", _SHELL) for name in (".bash_aliases", ".pam_environment", ".xprofile", ".xsessionrc")),
    *(Held(name, "file", _SHELL) for name in (".inputrc", ".xsession", ".zshrc.local", ".kshrc", ".mkshrc")),
    *(Held(name, "dir", _SHELL) for name in (".bashrc.d", ".oh-my-zsh", ".config/environment.d", ".zsh")),
    Held(".local/bin", "dir", "the programs in it come first on PATH: one named like another runs instead of it"),
    Held(".local/lib", "dir", "Python loads its user site-packages (and runs the .pth files there) at every start"),
    Held(".local/share/pipx", "dir", "the programs pipx installed (the bridge among them) run from it"),
    *(Held(name, "file", _EDITOR) for name in (".vimrc", ".gvimrc", ".tmux.conf", ".emacs", ".nanorc")),
    *(Held(name, "dir", _EDITOR) for name in (".vim", ".config/nvim", ".emacs.d", ".config/tmux", ".config/helix")),
    *(Held(name, "dir", _EDITOR) for name in (".vscode-server", ".vscode", ".cursor", ".cursor-server")),
    *(Held(name, "dir", _EDITOR) for name in (".config/Code", ".config/Cursor", ".config/zed", ".ipython")),
    *(Held(name, "file", _TOOL) for name in (".aws/config", ".kube/config", ".docker/config.json", ".npmrc")),
    *(Held(name, "file", _TOOL) for name in (".yarnrc", ".yarnrc.yml", ".condarc", ".Rprofile", ".irbrc")),
    *(Held(name, "dir", _TOOL) for name in (".gradle/init.d", ".config/direnv", ".config/pip", ".pip", ".sbt/1.0")),
    # not their caches (`~/.m2/repository`, `~/.cargo/registry`, `~/.gradle/caches`): builds write those
    *(Held(name, "file", _TOOL) for name in (".m2/settings.xml", ".gradle/init.gradle", ".gradle/gradle.properties")),
    *(Held(name, "file", _TOOL) for name in (".cargo/config.toml", ".cargo/config", ".lein/profiles.clj")),
    *(Held(name, "file", _TOOL) for name in (".ghci", ".terraformrc", ".psqlrc", ".gdbinit", ".hgrc")),
    *(Held(name, "dir", _TOOL) for name in (".config/gh", ".config/lazygit", ".config/hg", ".config/jj")),
    # attack round 7: more of the same, still a list (what runs later from a home folder has no end)
    *(Held(name, "dir", _PATH) for name in ("bin", ".cargo/bin", "go/bin", ".bun/bin", ".deno/bin", ".pyenv/shims")),
    Held(".local/share/mise/shims", "dir", _PATH),
    *(
        Held(name, "dir", _SHELL)
        for name in (".config/zsh", ".config/nushell", ".config/powershell", ".config/wezterm")
    ),
    *(Held(name, "file", _SHELL) for name in (".wezterm.lua", ".config/starship.toml")),
    *(Held(name, "dir", _EDITOR) for name in (".local/share/nvim", ".julia/config", ".jupyter")),
    # attack round 8: a user folder of skills (bridge/skills.py's `skill_dirs`), trusted as the user's in every
    # later session: a skill's allowed-tools apply unasked
    Held(".agents/skills", "dir", "it holds the user's own skills: every later session loads them, tools allowed"),
)
"""What runs by itself from the user's home folder. Held there only (a dotfiles repository's `.bashrc` is its
own), when a workspace root holds the home folder: the user opened `~` (or above it)."""


def home_held(home: Path, claude_home: Path, roots: Sequence[Path], config_dir: Path | None = None) -> list[HeldPath]:
    """RUNS_AT_LOGIN in `home`, Claude Code's home (its plugins first: their reason is the more precise) and the
    bridge's config dir, all resolved, where a root holds them (outside the roots the sandbox keeps them read-only
    anyway). The config dirs are held whole: a skill, command or agent of the user's is trusted as the user's
    (a skill's `allowed-tools` apply unasked), so one the model wrote there would widen every later session."""
    out: list[HeldPath] = []
    if any(home.is_relative_to(root) for root in roots):
        out += [HeldPath(home / h.name, h.kind, h.why, h.strength) for h in RUNS_AT_LOGIN]
    if any(claude_home.is_relative_to(root) for root in roots):
        out.append(HeldPath(claude_home / "plugins", "dir", _PLUGINS))
        out.append(HeldPath(claude_home, "dir", _CLAUDE_HOME))
    if config_dir is not None and any(config_dir.is_relative_to(root) for root in roots):
        out.append(HeldPath(config_dir, "dir", _CONFIG))
    for folder in installed_plugin_folders(claude_home):  # a plugin developer's: installed from a workspace folder
        if any(folder.is_relative_to(root) for root in roots):
            out.append(HeldPath(folder, "dir", _INSTALLED_PLUGIN))
    return out


def installed_plugin_folders(claude_home: Path) -> list[Path]:
    """Where the installed plugins are (`installed_plugins.json`), resolved: an enabled one's hooks and MCP servers
    run from there, outside the sandbox."""
    from bridge.plugins import installed_folders

    return [Path(os.path.realpath(folder)) for folder in installed_folders(claude_home)]


HELD: tuple[Held, ...] = (*BRIDGE_HELD, *RUNS_ON_OPEN)
"""Held by the sandbox at every workspace root."""


# -- files commands name -----------------------------------------------------------------------------------


def hook_named(store: SettingsStore, events: Sequence[str], cwd: Path) -> list[HeldPath]:
    """The files the configured hook commands name (they run at every matching event: the user's outside the
    sandbox, the folder's in it, where a swapped script would still do what the user did not trust)."""
    variables = {"CLAUDE_PROJECT_DIR": str(cwd)}
    root = Path(os.path.realpath(cwd))
    out: list[HeldPath] = []
    for event in events:
        for matcher in store.hooks(event):
            for hook in matcher.hooks:
                # and what its script pulls in (a sourced library, an imported module): what a trusted hook is
                # bound to, held so that no command swaps it between the check and the run
                pulled = (root / p for p in bound_paths(binding(hook.command, cwd)) if "*" not in p)
                written = written_by(hook.command, root, new=True)  # its own log: where it writes, not what it runs
                named = [
                    p
                    for p in command_paths(hook.command, cwd, variables=variables)
                    if Path(os.path.realpath(p)) not in written
                ]
                for path in dict.fromkeys([*named, *pulled]):
                    out.append(
                        HeldPath(
                            path,
                            "file",
                            f"the bridge runs it (the {event} hook `{_short(hook.command)}`)",
                        )
                    )
    return out


_mcp_cache: StatCache[list[HeldPath]] = StatCache()


def mcp_named(config: Path, cwd: Path) -> list[HeldPath]:
    """The files the stdio MCP servers of a `.mcp.json`-style file name (started outside the sandbox). Cached
    while the file stays the same."""
    key = stat_key(config)
    return _mcp_cache.get((config, cwd), key, lambda: _mcp_named(config, cwd) if key is not None else [])


def _mcp_named(config: Path, cwd: Path) -> list[HeldPath]:
    data, _ = read_json(config, max_bytes=SETTINGS_MAX_BYTES)  # bounded, never waits on a FIFO
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    out: list[HeldPath] = []
    for name, spec in servers.items() if isinstance(servers, dict) else []:
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


def held_at(root: Path) -> list[HeldPath]:
    """Everything held at one workspace root: the names of HELD, git's (the root's repository and those one level
    below it), and what the MCP file names."""
    out = [HeldPath(root / h.name, h.kind, h.why, h.strength) for h in HELD]
    out += git_held(root)
    out += nested_git_held(root)
    out += mcp_named(root / ".mcp.json", root)
    with contextlib.suppress(OSError):
        out += [
            HeldPath(root / name, "file", _CODE_WORKSPACE)
            for name in sorted(os.listdir(root))
            if name.endswith(".code-workspace")
        ]
    return out


_CODE_WORKSPACE = "VS Code runs the tasks and applies the settings of a workspace file when it is opened"


_BY_FIRST: dict[str, list[tuple[tuple[str, ...], Held]]] = {}


def _by_first() -> dict[str, list[tuple[tuple[str, ...], Held]]]:
    """RUNS_ON_OPEN by the first part of each name (case folded), in their order: a path is looked up part by part
    (checking every name at every depth took ~0.1 ms a path: `rm -r` of a folder of 60,000 files ran out of the
    permission check's time)."""
    if not _BY_FIRST:
        for held in RUNS_ON_OPEN:
            want = tuple(p.casefold() for p in held.parts)
            _BY_FIRST.setdefault(want[0], []).append((want, held))
    return _BY_FIRST


def name_reason(path: Path) -> str | None:
    """Why writing `path` asks by its name alone (a RUNS_ON_OPEN name at any depth, case folded), or None."""
    if path.name.casefold().endswith(".code-workspace"):
        return f"{path}: {_CODE_WORKSPACE}"
    parts = [p.casefold() for p in path.parts]
    index = _by_first()
    found: list[tuple[int, int, Held]] = []
    for i, part in enumerate(parts):
        for want, held in index.get(part, ()):
            n = len(want)
            if tuple(parts[i : i + n]) == want and (held.kind == "dir" or i + n == len(parts)):
                found.append((RUNS_ON_OPEN.index(held), i, held))
    if not found:
        return None
    _order, i, held = min(found, key=lambda f: (f[0], f[1]))  # the first name of RUNS_ON_OPEN, as before
    n = len(held.parts)
    if i + n == len(parts):
        return f"{path}: {held.why}"
    return f"{path} (in {'/'.join(path.parts[i : i + n])}/): {held.why}"


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
