"""What the OS sandbox under every Bash command allows, derived from the permission engine (one place, so the
rules and the sandbox never disagree). bridge/execution/sandbox.py turns it into bubblewrap mounts.

- writable: the workspace roots (cwd + additionalDirectories), `sandbox.filesystem.allowWrite`, and the
  literal part of allow rules about writes (`Edit(...)`, as Claude Code does); everything else is read-only;
- protected: inside those, what stays read-only whether it exists yet or not — what runs later
  (runs_later.py: at each root its names and git's, the files hooks and MCP servers name) and the settings
  files the engine protects;
- read-only: deny rules about writes and `sandbox.filesystem.denyWrite`;
- masked (unreadable): deny rules about reads (`Read(...)`) and `sandbox.filesystem.denyRead`, and the user's
  credentials for other services under their home folder (`CREDENTIALS`: ~/.ssh, ~/.aws, ~/.netrc, a browser's
  profile…) unless a Read allow rule covers one (the user let the agent read it);
- network: off unless `sandbox.network.allowedDomains` holds "*" (filtering by domain would need a proxy);
- Unix sockets: refused (a seccomp filter) unless `sandbox.network.allowAllUnixSockets` is true.

The keys follow Claude Code's `sandbox` settings object (`enabled`, `failIfUnavailable`,
`network.allowedDomains`, `filesystem.allowWrite|denyWrite|denyRead`), plus the bridge's own `limits`
(`memory`, `processes`, `fileSize`, `cpuSeconds`: bridge/execution/limits.py), read from the bridge's own settings
files only (Claude Code's default is off, ours on). Scalars: the highest-precedence file that sets one wins;
lists merge across files. `AGENT_BRIDGE_SANDBOX=0` turns the sandbox off (tests, one-off runs).
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import time
import weakref
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from bridge.errors import validation_problems
from bridge.permissions.command_limits import LimitSettings, LimitsModel, ram_bytes, widening_limits
from bridge.permissions.held import HeldPath, PathKind
from bridge.permissions.settings import SettingsFile, SettingsStore
from bridge.permissions.specifiers import PathPattern, RuleSyntaxError, compile_path_specifier
from bridge.permissions.widening import SANDBOX_NETWORK, SANDBOX_OFF, SANDBOX_UNIX_SOCKETS, sandbox_allow_write

if TYPE_CHECKING:
    from bridge.permissions.engine import PermissionEngine
    from bridge.permissions.rules import CompiledRule

SANDBOX_ENV = "AGENT_BRIDGE_SANDBOX"

# Where the user's credentials for other services live, under the home folder. Masked for every command the sandbox
# runs: a command may compute a path no checker sees (`python3 -c "open(os.path.expanduser('~/.ssh/id_ed25519'))"`
# under an allowed `Bash(python3 *)`), and its output goes to the model. A Read allow rule that covers one (the user
# let the agent read it: `Read(~/.aws/**)`) leaves it readable; the Read tool asks for each as for any path outside
# the workspace.
CREDENTIALS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".config/pip/pip.conf",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".boto",
    ".s3cfg",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    "Library/Keychains",
    "Library/Cookies",
)

# Secrets a machine keeps outside any home folder, for whatever runs on it: Docker's and Kubernetes' (a pod's service
# account token). Masked as the user's credentials are.
SYSTEM_SECRETS = ("/run/secrets", "/var/run/secrets")

# What a folder's own hooks may read of the home folder (`private_home`): the places installed tools live (and a
# few files of settings that hold no secret), read-only. The rest of the home folder is hidden from them: the
# agent's and other tools' transcripts and tokens (~/.claude/.credentials.json, ~/.config/github-copilot), shell
# histories, other projects, the user's settings (their `env` may hold keys): a list of credentials misses the next
# one (a trusted folder's hook read shell histories, Copilot's token, rclone's, another project's `.env`). The
# user's own hooks and the model's commands (each asked or allowed by a rule) see the home folder as before,
# credentials masked.
HOME_TOOLS = (
    ".local/bin",
    ".local/lib",
    ".local/share/pipx",
    ".local/share/uv/tools",
    ".local/share/uv/python",
    ".local/share/pnpm",
    ".local/share/mise",
    ".local/share/fnm",
    ".local/share/nvim/mason",
    ".nvm",
    ".volta",
    ".fnm",
    ".bun",
    ".deno",
    ".cargo/bin",
    ".rustup",
    ".pyenv",
    ".rbenv",
    ".nodenv",
    ".goenv",
    ".asdf",
    ".sdkman",
    ".nix-profile",
    ".npm-global",
    ".dotnet/tools",
    "go/bin",
    ".config/git/ignore",
    ".config/git/attributes",
    ".editorconfig",
)
"""(Not git's own settings, ~/.gitconfig: they can hold a token, `url."https://<token>@github.com/".insteadOf` or an
`http.extraHeader`; git runs without them. Not uv's folder whole: `uv auth login` keeps credentials in it. Not Go's
module cache (other projects' sources), pre-commit's clones, .NET's folder whole (its certificate store).)"""

# What the tools' folders hold that is a secret: a version manager's Node keeps npm's global settings (`<prefix>/etc/
# npmrc`: registry tokens), a Python its `pip.conf` (an index URL with a password), a Maven its `conf/settings.xml`
# (server passwords). Masked for a folder's hook (attack round 30 read each).
TOOL_SECRETS = (
    ".nvm/versions/node/*/etc/npmrc",
    ".nodenv/versions/*/etc/npmrc",
    ".volta/tools/image/node/*/etc/npmrc",
    ".fnm/node-versions/*/installation/etc/npmrc",
    ".local/share/fnm/node-versions/*/installation/etc/npmrc",
    ".npm-global/etc/npmrc",
    ".asdf/installs/*/*/etc/npmrc",
    ".local/share/mise/installs/*/*/etc/npmrc",
    ".pyenv/versions/*/pip.conf",
    ".asdf/installs/*/*/pip.conf",
    ".local/share/mise/installs/*/*/pip.conf",
    ".local/share/uv/python/*/pip.conf",
    ".local/share/uv/tools/*/pip.conf",
    ".local/share/pipx/venvs/*/pip.conf",
    ".sdkman/candidates/*/*/conf/settings.xml",
    ".asdf/installs/*/*/conf/settings.xml",
    ".local/share/mise/installs/*/*/conf/settings.xml",
    # and where round 31 found more: npm's own builtin settings, virtualenvs of a version manager, shared venvs,
    # Gradle's init scripts, bun's global settings, the user's site-packages
    ".nvm/versions/node/*/lib/node_modules/npm/npmrc",
    ".local/share/mise/installs/*/*/lib/node_modules/npm/npmrc",
    ".asdf/installs/*/*/lib/node_modules/npm/npmrc",
    ".nodenv/versions/*/lib/node_modules/npm/npmrc",
    ".volta/tools/image/npm/*/npmrc",
    ".bun/install/global/.npmrc",
    ".bun/install/global/bunfig.toml",
    ".pyenv/versions/*/envs/*/pip.conf",
    ".asdf/installs/*/*/envs/*/pip.conf",
    ".local/share/pipx/shared/pip.conf",
    ".local/lib/python*/site-packages/pip.conf",
    ".sdkman/candidates/*/*/init.d",
    ".sdkman/candidates/*/*/gradle.properties",
)

# The system's own settings of the same tools, which `SYSTEM_VIEW` shows a folder's hook (round 32): git's (a token in
# an `insteadOf` URL), npm's global, pip's, Maven's, Docker's and podman's logins.
SYSTEM_TOOL_SECRETS = (
    "/etc/gitconfig",
    "/etc/npmrc",
    "/usr/etc/npmrc",
    "/usr/local/etc/npmrc",
    "/usr/lib/node_modules/npm/npmrc",
    "/usr/local/lib/node_modules/npm/npmrc",
    "/etc/pip.conf",
    "/etc/xdg/pip/pip.conf",
    "/etc/maven/settings.xml",
    "/usr/share/maven/conf/settings.xml",
    "/etc/docker",
    "/etc/containers/auth.json",
)
ROOT_ONLY_SCAN = ("/etc", "/run")  # run as root, what of these others can't read is masked for a folder's hook
_ROOT_ONLY_ENTRIES = 20_000
_ROOT_ONLY_TTL_S = 30.0
_root_only_cache: tuple[float, tuple[Path, ...]] | None = None

# Where a home folder's link may lead that is the machine's, not the user's: not hidden from a folder's hook
# (`~/.nix-profile` into /nix, `~/bin` into /usr/local/bin).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/nix", "/etc", "/snap")

EXPAND_ENTRIES = 20_000  # bound on the directory entries one command's deny patterns may visit ...
EXPAND_SECONDS = 0.1  # ... and on the time it may take
_GLOB = frozenset("*?[\\")


# -- settings ----------------------------------------------------------------------------------------------


class _Network(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    allowedDomains: list[str] | None = None
    allowLocalBinding: bool | None = None
    allowAllUnixSockets: bool | None = None
    allowUnixSockets: list[str] | None = None


class _Filesystem(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    allowWrite: list[str] | None = None
    denyWrite: list[str] | None = None
    denyRead: list[str] | None = None


class _SandboxModel(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)
    enabled: bool | None = None
    failIfUnavailable: bool | None = None
    allowUnsandboxedCommands: bool | None = None
    folderHooks: bool | None = None
    network: _Network | None = None
    filesystem: _Filesystem | None = None
    limits: LimitsModel | None = None


@dataclass(frozen=True)
class SandboxSettings:
    enabled: bool = True
    fail_if_unavailable: bool = False
    network: bool = False
    unix_sockets: bool = False  # `network.allowAllUnixSockets`: no seccomp filter (bridge/execution/seccomp.py)
    # `folderHooks`: the hooks of the folder's own settings run in the sandbox; off only by the user's own settings
    # (`folderHooks: false`, or `enabled: false` in theirs: a folder's own, trusted, turns it off for commands alone)
    folder_hooks: bool = True
    allow_write: tuple[PathPattern, ...] = ()
    deny_write: tuple[PathPattern, ...] = ()
    deny_read: tuple[PathPattern, ...] = ()
    problems: tuple[str, ...] = ()
    limits: LimitSettings = field(default_factory=LimitSettings)


# Per store, weakly: an id() key would be reused by a later store (another project, a test) and hand it
# the sandbox settings of one that is gone.
_settings_cache: weakref.WeakKeyDictionary[SettingsStore, tuple[int, SandboxSettings]] = weakref.WeakKeyDictionary()


def sandbox_settings(store: SettingsStore) -> SandboxSettings:
    """The `sandbox` objects of the bridge's settings files, merged; invalid parts are problems, skipped."""
    store.refresh()
    cached = _settings_cache.get(store)
    if cached is not None and cached[0] == store.generation:
        return cached[1]
    scalars: dict[str, bool] = {}
    said_paths = False
    lists: dict[str, list[PathPattern]] = {"allowWrite": [], "denyWrite": [], "denyRead": []}
    limits = LimitSettings()
    problems: list[str] = []
    for loaded in store.loaded():  # highest precedence first
        if loaded.file.claude or not loaded.exists:
            continue
        raw = loaded.sandbox  # as the settings loader read it (once, bounded; it reports what it could not)
        if raw is None:
            continue
        try:
            model = _SandboxModel.model_validate(raw)
        except ValidationError as error:
            where = "; ".join(validation_problems(error, whole="value", limit=3))
            problems.append(f"{loaded.file.path}: sandbox is invalid ({where}); it is skipped")
            continue

        def admitted(text: str, file: SettingsFile = loaded.file) -> bool:
            return store.admits_sandbox(file, text)

        if model.enabled is not None and (model.enabled or admitted(SANDBOX_OFF)):
            scalars.setdefault("enabled", model.enabled)
            if not loaded.file.project:  # the user's own word on it: a folder's own hooks follow only theirs
                scalars.setdefault("userEnabled", model.enabled)
        # a folder may ask for it, never drop what the user asked for (there is no question to trust it by)
        if model.failIfUnavailable is not None and (model.failIfUnavailable or not loaded.file.project):
            scalars.setdefault("failIfUnavailable", model.failIfUnavailable)
        if model.folderHooks is not None:
            if model.folderHooks or not loaded.file.project:
                scalars.setdefault("folderHooks", model.folderHooks)
            else:  # what a folder's hooks may do is never the folder's to widen, trusted or not
                problems.append(
                    f"{loaded.file.path}: sandbox.folderHooks: a folder's own settings cannot take its hooks out of "
                    'the sandbox; it is skipped (your user settings can say "folderHooks": false)'
                )
        found = LimitSettings.of(model.limits, problems, str(loaded.file.path), ram=ram_bytes())
        held = [key for key, text in widening_limits(raw.get("limits"), ram=ram_bytes()) if not admitted(text)]
        limits = limits.merged_over(found.without(held))
        if model.network is not None and model.network.allowedDomains is not None:
            network = "*" in model.network.allowedDomains
            if not network or admitted(SANDBOX_NETWORK):
                scalars.setdefault("network", network)
            if "*" not in model.network.allowedDomains and model.network.allowedDomains:
                problems.append(
                    f"{loaded.file.path}: sandbox.network.allowedDomains: the sandbox cannot filter "
                    'by domain; the network stays off (list "*" to allow all of it)'
                )
        if model.network is not None and model.network.allowAllUnixSockets is not None:
            sockets = model.network.allowAllUnixSockets
            if not sockets or admitted(SANDBOX_UNIX_SOCKETS):
                scalars.setdefault("unixSockets", sockets)
        if model.network is not None and model.network.allowUnixSockets and not said_paths:
            said_paths = True
            problems.append(
                f"{loaded.file.path}: sandbox.network.allowUnixSockets: the sandbox cannot tell Unix sockets apart "
                "by path on Linux; they stay refused (set allowAllUnixSockets to allow every one)"
            )
        root = loaded.file.root or store.cwd
        for key in lists:
            for spec in getattr(model.filesystem, key, None) or []:
                if key == "allowWrite" and not admitted(sandbox_allow_write(spec)):
                    continue
                try:
                    lists[key].append(compile_path_specifier(spec, cwd=store.cwd, root=root))
                except RuleSyntaxError as error:
                    problems.append(f"{loaded.file.path}: sandbox.filesystem.{key}: {error}; skipped")
    settings = SandboxSettings(
        enabled=scalars.get("enabled", True),
        fail_if_unavailable=scalars.get("failIfUnavailable", False),
        network=scalars.get("network", False),
        unix_sockets=scalars.get("unixSockets", False),
        folder_hooks=scalars.get("folderHooks", scalars.get("userEnabled", True)),
        allow_write=tuple(lists["allowWrite"]),
        deny_write=tuple(lists["denyWrite"]),
        deny_read=tuple(lists["denyRead"]),
        problems=tuple(problems),
        limits=limits,
    )
    _settings_cache[store] = (store.generation, settings)
    return settings


def folder_hooks_wanted(settings: SandboxSettings) -> bool:
    """Whether the folder's own hooks run in the sandbox: unless the user's settings or `AGENT_BRIDGE_SANDBOX`
    (theirs too) say otherwise, whatever a folder's own settings say of the sandbox."""
    override = os.environ.get(SANDBOX_ENV, "").strip().lower()
    if override in ("0", "off", "false", "no"):
        return False
    return settings.folder_hooks


def sandbox_wanted(settings: SandboxSettings) -> bool:
    """On unless the settings or `AGENT_BRIDGE_SANDBOX` (0/off/false/no) turn it off."""
    override = os.environ.get(SANDBOX_ENV, "").strip().lower()
    if override in ("0", "off", "false", "no"):
        return False
    if override in ("1", "on", "true", "yes"):
        return True
    return settings.enabled


# -- the policy --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SandboxPolicy:
    cwd: Path
    writable: tuple[Path, ...]
    protected: tuple[HeldPath, ...]  # with why each is held (the sandbox's notes say it)
    read_only: tuple[PathPattern, ...]  # expanded against the filesystem at each command
    masked: tuple[PathPattern, ...]
    network: bool
    unix_sockets: bool = False  # commands may create Unix sockets (`sandbox.network.allowAllUnixSockets`)
    credentials: tuple[Path, ...] = ()  # the user's credentials among `masked` (`CREDENTIALS`), for the notes
    roots: tuple[Path, ...] = ()  # the workspace's own roots among `writable` (cwd + additionalDirectories)
    private_home: Path | None = None  # a folder's hook: this home folder is hidden but for `home_tools`
    home_tools: tuple[Path, ...] = ()  # what of `private_home` stays readable (`HOME_TOOLS` that exist)
    home_masked: tuple[Path, ...] = ()  # hidden too: secrets in the tools' folders, where home's links lead out
    system_view: bool = False  # a folder's hook: of what lies outside the roots and tools, only the system's folders


def masks(policy: SandboxPolicy, path: Path, *, below: bool = False) -> bool:
    """Whether the policy masks `path` (or a folder it lies in): a Read deny rule, `denyRead`, a credential;
    `below`: or anything in it (a search of the folder reads what is masked there)."""
    if any(pattern.matches(place) for pattern in policy.masked for place in (path, *path.parents)):
        return True
    return below and any(literal_root(pattern)[0].is_relative_to(path) for pattern in policy.masked)


def home_hides(policy: SandboxPolicy, path: Path) -> bool:
    """Whether `path` lies in the policy's private home folder, outside what of it is shown (tools, roots)."""
    home = policy.private_home
    shown = (*policy.home_tools, *policy.writable)
    return home is not None and path.is_relative_to(home) and not any(path.is_relative_to(p) for p in shown)


def with_private_home(policy: SandboxPolicy, home: Path | None = None) -> SandboxPolicy:
    """`policy` for a folder's own hook, which runs unasked: it writes only the workspace's roots (not what allow
    rules or `allowWrite` open to the model's commands: `Edit(~/**/*.ts)` would open the whole home folder), makes
    no Unix socket, and sees the home folder hidden but for the installed tools (`HOME_TOOLS`, without the secrets
    in them: `TOOL_SECRETS`) and the roots in it; where the home folder's links lead out of it is hidden too. Of the
    rest of the machine it sees the system's folders only (`system_view`, bwrap: bridge/execution/sandbox_plan.py),
    not another disk, /var/tmp or a runtime folder's logins. The home folder stays as it is when a workspace root
    is it or holds it (the user opened it)."""
    roots = policy.roots or policy.writable
    contained = replace(policy, writable=roots, unix_sockets=False, system_view=True)
    home = Path(os.path.realpath(home or Path.home()))
    if home == Path(home.anchor) or not home.is_dir() or any(home.is_relative_to(root) for root in roots):
        return contained  # (a home that isn't there hides nothing: a mount point can't be made for it)
    tools = tuple(home / name for name in HOME_TOOLS if os.path.lexists(home / name))
    tools += _linked_programs(home, tools)
    masked = [Path(found) for pattern in TOOL_SECRETS for found in glob.glob(str(home / pattern))]
    masked += _links_out(home, (*roots, *(Path(os.path.realpath(t)) for t in tools)))
    masked += _system_secrets()
    return replace(contained, private_home=home, home_tools=tools, home_masked=tuple(dict.fromkeys(masked)))


def _linked_programs(home: Path, tools: tuple[Path, ...]) -> tuple[Path, ...]:
    """The programs a tools' `bin` folder links to elsewhere in the home folder (`~/.local/bin/claude ->
    ~/.local/share/claude/versions/…`, a JetBrains script): each shown itself, never a credential's."""
    found: list[Path] = []
    for tool in tools:
        if tool.name != "bin" or not os.path.isdir(tool):
            continue
        with contextlib.suppress(OSError):
            for entry in os.scandir(tool):
                if not entry.is_symlink():
                    continue
                real = Path(os.path.realpath(entry.path))
                inside = real.is_relative_to(home) and real.is_file()
                secret = any(real.is_relative_to(home / name) for name in CREDENTIALS)
                if inside and not secret and not any(real.is_relative_to(os.path.realpath(t)) for t in tools):
                    found.append(real)
    return tuple(dict.fromkeys(found))


def _system_secrets() -> list[Path]:
    """What a folder's hook must not read of the system's folders: the tools' system-wide settings, and run as root
    (whom no file's mode stops), what others can't read in /etc and /run (the shadow files, ssh's host keys, saved
    network passwords), found by a bounded look, kept a while."""
    # (where they lead: bwrap mounts the mask there, and a link on the way, `/usr/share/maven/conf -> /etc/maven`,
    # made it fail)
    found = [Path(os.path.realpath(p)) for p in SYSTEM_TOOL_SECRETS if os.path.exists(p)]
    if os.getuid() != 0:
        return found
    global _root_only_cache
    now = time.monotonic()
    if _root_only_cache is None or now - _root_only_cache[0] > _ROOT_ONLY_TTL_S:
        _root_only_cache = (now, tuple(_root_only()))
    return found + list(_root_only_cache[1])


def _root_only() -> list[Path]:
    out: list[Path] = []
    budget = _ROOT_ONLY_ENTRIES
    stack = [Path(p) for p in ROOT_ONLY_SCAN if os.path.isdir(p)]
    while stack and budget > 0:
        folder = stack.pop()
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                budget -= 1
                with contextlib.suppress(OSError):
                    if entry.is_symlink() or entry.path.startswith("/run/user/"):
                        continue
                    mode = entry.stat(follow_symlinks=False).st_mode
                    if entry.is_dir(follow_symlinks=False):
                        if mode & 0o005 != 0o005:  # others can't list it or go in: hidden whole
                            out.append(Path(entry.path))
                        else:
                            stack.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False) and not mode & 0o004:
                        out.append(Path(entry.path))
    if stack or budget <= 0:  # cut short: what was not looked at is hidden whole
        out += stack
    return out


def _links_out(home: Path, shown: tuple[Path, ...]) -> list[Path]:
    """Where the home folder's links lead out of it (a dotfiles or persistent folder: `~/.ssh -> /persist/ssh`):
    its entries and those of its settings and data folders, resolved. Not the machine's folders, nor one that holds
    or lies in what is shown (the workspace, the tools), nor the home folder itself."""
    out: list[Path] = []
    for folder in (home, home / ".config", home / ".local" / "share", home / ".local" / "state"):
        try:
            names = os.listdir(folder) if not os.path.islink(folder) else [""]
        except OSError:
            continue
        for name in names:
            path = folder / name if name else folder
            if not os.path.islink(path):
                continue
            real = Path(os.path.realpath(path))
            if real.is_relative_to(home) or home.is_relative_to(real) or not os.path.exists(real):
                continue
            if any(str(real) == s or str(real).startswith(s + "/") for s in _SYSTEM):
                continue
            if any(real.is_relative_to(p) or p.is_relative_to(real) for p in shown):
                continue
            out.append(real)
    return out


def literal_root(pattern: PathPattern) -> tuple[Path, bool]:
    """The directory a pattern's matches all lie under, and whether the pattern is exactly that path (or
    everything under it: `dir/**`)."""
    text = pattern.pattern
    if "/" not in text.rstrip("/") and not text.startswith("**"):
        # slash-free: gitignore matches it at any depth below the base (a literal name too)
        return pattern.base, False
    parts = text.split("/")
    literal: list[str] = []
    for part in parts:
        if any(c in _GLOB for c in part):
            break
        literal.append(part)
    rest = parts[len(literal) :]
    path = pattern.base.joinpath(*[p for p in literal if p])
    return path, not rest or rest == ["**"]


def _through_link_in(path: Path, roots: list[Path]) -> bool:
    """Whether reaching `path` passes a symlink that lies in one of `roots` (resolved directories)."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        if os.path.islink(current):
            parent = os.path.realpath(current.parent)
            if any(parent == str(root) or parent.startswith(os.path.join(root, "")) for root in roots):
                return True
            current = Path(os.path.realpath(current))
    return False


def credential_masks(
    rules: list[CompiledRule], roots: list[Path], home: Path | None = None
) -> list[tuple[Path, PathPattern]]:
    """The masks of the user's credentials (`CREDENTIALS`) and the machine's (`SYSTEM_SECRETS`) that exist, but for
    those a Read allow rule of the user's own covers (their settings, or what they allowed in the session) and those
    a workspace root lies in (the user opened that folder)."""
    home = Path(os.path.realpath(home or Path.home()))
    allowed = [
        rule.path
        for rule in rules
        if rule.behavior == "allow"
        and rule.path is not None
        and rule.form.access == "read"
        and rule.origin.source in _USERS_OWN  # (a folder's settings, trusted or not, never open them)
    ]
    masks: list[tuple[Path, PathPattern]] = []
    for path in [home / name for name in CREDENTIALS] + [Path(name) for name in SYSTEM_SECRETS]:
        if not os.path.lexists(path) or any(root.is_relative_to(path) for root in roots):
            continue
        if any(pattern.matches(path) or pattern.matches(path / "x") for pattern in allowed):
            continue
        masks.append((path, compile_path_specifier("/" + _GLOB_CHARS.sub(r"\\\1", str(path)), cwd=home, root=home)))
    return masks


_GLOB_CHARS = re.compile(r"([*?\[\\])")
_USERS_OWN = frozenset({"session", "userSettings", "claudeUserSettings"})


def policy_from_engine(engine: PermissionEngine, settings: SandboxSettings) -> SandboxPolicy:
    """The policy over the engine's own compiled rules (the path rules, by whether they speak about reads or
    writes), so the sandbox and the rules never read the same text two ways."""
    workspace = engine.workspace
    rules = engine.rules()
    writable: list[Path] = []
    for pattern in settings.allow_write:
        writable.append(literal_root(pattern)[0])
    for rule in rules:
        if rule.behavior == "allow" and rule.path is not None and rule.form.access == "write":
            writable.append(literal_root(rule.path)[0])
    # The workspace's roots were resolved when it was made (what the user trusted): one swapped for a link since
    # (`assets -> /` by a command or a pull) is left out, never followed, until the settings are read again.
    roots = [root for root in workspace.roots if os.path.isdir(root) and os.path.realpath(root) == str(root)]
    workspace_roots = tuple(roots)
    # A place a rule or `allowWrite` names is followed through the user's own links, never through one in the
    # workspace: a command may have put it there (`build -> ~`), and the next command's sandbox would follow it.
    roots += [Path(os.path.realpath(p)) for p in writable if os.path.exists(p) and not _through_link_in(p, roots)]
    # and where a link held by its name leads (bwrap follows a root's own links; one below a root, found by the
    # workspace's look for links, is held here: attack round 9's `frontend/.husky -> ../hk`)
    protected = [*workspace.held(), *workspace.aliases()]
    protected.append(HeldPath(engine.settings.user_config_dir / "settings.json", "file", "it is the user's settings"))
    read_only = list(settings.deny_write)
    # (the workspace's own roots: a folder's allow rule `Edit(~/.ssh/**)` opens a place to write, not the keys)
    credentials = credential_masks(rules, [r for r in roots if r in workspace_roots])
    masked = list(settings.deny_read) + [mask for _, mask in credentials]
    for rule in rules:
        if rule.behavior == "deny" and rule.path is not None:
            if rule.form.access == "read":
                masked.append(rule.path)
            elif rule.form.access == "write":
                read_only.append(rule.path)
    # A deny rule that names one path holds it like a held path, so that it is held when it doesn't exist yet too
    # (a read-only mount needs something to mount on): the sandbox watches it and sets aside what a command creates
    # there (attack round 8: `python3 -c "open('sub/new.txt','w')…"` created a file `Edit(sub/new.txt)` denies).
    # What a pattern matches (`Edit(**/*.pem)`) is looked for again after each command (sandbox.py).
    for pattern in read_only:
        path, exact = literal_root(pattern)
        if exact:
            kind: PathKind = "dir" if pattern.pattern.rstrip("/").endswith("**") else "file"
            protected.append(HeldPath(path, kind, "a deny rule forbids writing it"))
    return SandboxPolicy(
        cwd=engine.cwd,
        writable=tuple(dict.fromkeys(roots)),
        roots=workspace_roots,
        protected=tuple(dict.fromkeys(protected)),
        read_only=tuple(read_only),
        masked=tuple(masked),
        network=settings.network,
        unix_sockets=settings.unix_sockets,
        credentials=tuple(path for path, _ in credentials),
    )


# -- expanding deny patterns -------------------------------------------------------------------------------


@dataclass
class Expansion:
    paths: list[Path] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)  # patterns the bound cut short


def expand(
    patterns: tuple[PathPattern, ...], *, entries: int = EXPAND_ENTRIES, seconds: float = EXPAND_SECONDS
) -> Expansion:
    """The existing paths `patterns` match, breadth-first (the shallow ones first), a matching directory
    standing for everything below it; bounded in entries visited and time, shared by all patterns."""
    out = Expansion()
    budget = entries
    deadline = time.monotonic() + seconds
    for pattern in patterns:
        start, exact = literal_root(pattern)
        if exact or not os.path.isdir(start):
            if os.path.lexists(start) and (exact or pattern.matches(start)):
                out.paths.append(start)
            continue
        # strings, not Paths: this loop runs over every entry below `start`
        prefix = len(str(pattern.base).rstrip("/")) + 1
        match = pattern.regex.match
        # an anchored pattern (a `/` inside) without `**` matches only as deep as it is: no deeper folder holds one
        text = pattern.pattern.strip("/")
        depth = text.count("/") if "/" in text and "**" not in text else None
        queue: deque[str] = deque([str(start)])
        while queue:
            if budget <= 0 or time.monotonic() > deadline:
                out.truncated.append(f"{pattern.base}/{pattern.pattern}")
                break
            try:
                with os.scandir(queue.popleft()) as it:
                    found = list(it)
            except OSError:
                continue
            budget -= len(found)
            for entry in found:
                if match(entry.path[prefix:]) is not None:
                    out.paths.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False) and (depth is None or entry.path[prefix:].count("/") < depth):
                    queue.append(entry.path)
    out.paths = list(dict.fromkeys(out.paths))
    return out


def describe(policy: SandboxPolicy) -> dict[str, Any]:
    """For logs and tests."""
    return {
        "writable": [str(p) for p in policy.writable],
        "network": policy.network,
        "protected": [str(h.path) for h in policy.protected],
    }
