"""Where a session's MCP servers come from, as Claude Code users keep them, and which may start.

Sources, highest precedence first (a name defined twice is taken from the first):
  editor   the editor's `mcpServers` (ACP `session/new`: `{name, command, args, env: [{name, value}]}`,
           `{type: "http"|"sse", name, url, headers: [{name, value}]}`)
  local    `.agent-bridge/settings.local.json` (when it is the user's: see below) and Claude Code's
           `~/.claude.json` `projects[<cwd>]` (private)
  project  `.mcp.json` and `.agent-bridge/settings.json` (checked in: need the user's approval)
  user     the user's `settings.json` (config dir) and Claude Code's `~/.claude.json` (top level)
Files use Claude Code's schema: `{"mcpServers": {NAME: {type: stdio|http|sse, command, args, env} or
{type, url, headers}}}`; `${VAR}` and `${VAR:-default}` expand from the bridge's environment in `command`,
`args`, `env`, `url` and `headers` (a project server may not expand the bridge's own secrets).

A repository must not start a process by being opened: a project server starts only once approved, by
Claude Code's keys (`enableAllProjectMcpServers: true`, `enabledMcpjsonServers: [names]`,
`disabledMcpjsonServers: [names]`; disabled wins) in a file the repository does not control: the bridge's
approval store (`mcp-approvals.json` in the user's config dir, `projects[<cwd>]`: where answers are saved),
the user's `settings.json`, `~/.claude/settings.json`, `~/.claude.json` `projects[<cwd>]` — and the
in-workspace `.agent-bridge/settings.local.json` and `.claude/settings.local.json` only when they are the
user's: git does not track them and they are not reached through a symbolic link. A clone only ever creates
tracked files, so a committed "local" file is the repository's: its servers are treated as project servers
(they need approval) and its approval keys are ignored. Outside a git work tree nothing tells a file the user
wrote from one that came with a download (an archive, a shared folder), so in-workspace local files are not
trusted there at all; the cost is one approval question, whose answer is then kept in the store.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["editor", "local", "project", "user"]
Approval = Literal["approved", "pending", "rejected"]

LOCAL_SETTINGS = Path(".agent-bridge") / "settings.local.json"
PROJECT_SETTINGS = Path(".agent-bridge") / "settings.json"
CLAUDE_LOCAL_SETTINGS = Path(".claude") / "settings.local.json"
MCP_JSON = ".mcp.json"
APPROVAL_STORE = "mcp-approvals.json"
APPROVAL_KEYS = ("enableAllProjectMcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers")
# The bridge's own credentials: a project's config cannot pass them to its servers by `${...}`.
SECRETS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"})
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True)
class ServerSpec:
    """One server as configured. Two specs with the same `identity` and cwd share one process."""

    name: str
    transport: Transport
    scope: Scope
    source: str  # the file it came from, or "the editor"
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def identity(self) -> str:
        fields = [self.transport, self.command, list(self.args), sorted(self.env), self.url, sorted(self.headers)]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]

    def describe(self) -> str:
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return f"{self.transport} {self.url}"


@dataclass(frozen=True)
class ServerEntry:
    """A configured server as the session sees it: usable (`spec`), or not, with the reason."""

    name: str
    scope: Scope
    source: str
    spec: ServerSpec | None
    problem: str | None = None
    approval: Approval = "approved"


@dataclass(frozen=True)
class ConfigFiles:
    cwd: Path
    user_config_dir: Path
    claude_home: Path  # ~/.claude (or CLAUDE_CONFIG_DIR)

    @property
    def claude_json(self) -> Path:
        """Claude Code's state file: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`."""
        override = os.environ.get("CLAUDE_CONFIG_DIR")
        return Path(override) / ".claude.json" if override else Path.home() / ".claude.json"

    @property
    def local_settings(self) -> Path:
        return self.cwd / LOCAL_SETTINGS

    @property
    def approval_store(self) -> Path:
        """Where the user's answers are saved: outside every workspace, keyed by the project's path."""
        return self.user_config_dir / APPROVAL_STORE

    def approval_files(self) -> list[Path]:
        """The files outside the workspace that may hold approvals (the store is read by project)."""
        return [self.user_config_dir / "settings.json", self.claude_home / "settings.json"]


def default_files(cwd: Path) -> ConfigFiles:
    from bridge.permissions.settings import default_claude_home, default_user_config_dir

    return ConfigFiles(Path(os.path.realpath(cwd)), default_user_config_dir(), default_claude_home())


def discover(
    files: ConfigFiles, editor: list[Any], *, environ: Mapping[str, str] | None = None
) -> tuple[list[ServerEntry], list[str]]:
    """Every configured server (editor's first), one entry per name, and the problems with the files."""
    env = os.environ if environ is None else environ
    problems: list[str] = []
    found: list[ServerEntry] = list(parse_acp(editor, env))
    claude_json, claude_problem = _read_json(files.claude_json)
    if claude_problem:
        problems.append(claude_problem)
    project_state = _project_state(claude_json, files.cwd)
    untrusted = workspace_local_files(files, problems)
    sources: list[tuple[Scope, str, Any]] = []
    for scope, path in (("local", files.local_settings), ("project", files.cwd / MCP_JSON),
                        ("project", files.cwd / PROJECT_SETTINGS), ("user", files.user_config_dir / "settings.json")):
        data, problem = _read_json(path)
        if scope == "local" and path in untrusted:
            scope = "project"  # the repository's, not the user's: its servers need approval
        if problem:
            problems.append(problem)
        elif isinstance(data, dict) and "mcpServers" in data:
            sources.append((scope, str(path), data["mcpServers"]))  # type: ignore[arg-type]
        if scope == "local" and "mcpServers" in project_state:
            sources.append(("local", f"{files.claude_json} (projects[{files.cwd}])", project_state["mcpServers"]))
    if isinstance(claude_json, dict) and "mcpServers" in claude_json:
        sources.append(("user", str(files.claude_json), claude_json["mcpServers"]))
    for scope, source, servers in sources:
        if not isinstance(servers, dict):
            problems.append(f"{source}: mcpServers must be an object of servers by name; it is skipped")
            continue
        for name, raw in servers.items():
            found.append(parse_claude(str(name), raw, scope, source, env))
    approvals = read_approvals(files, project_state, untrusted=untrusted)
    entries: dict[str, ServerEntry] = {}
    for entry in found:
        if entry.name in entries:
            continue  # a higher-precedence source defined it
        if entry.scope == "project" and entry.spec is not None:
            entry = ServerEntry(entry.name, entry.scope, entry.source, entry.spec, entry.problem,
                                approvals.state(entry.name))
        entries[entry.name] = entry
    return list(entries.values()), problems


def parse_acp(raw: list[Any], environ: Mapping[str, str]) -> list[ServerEntry]:
    """The editor's servers in ACP's shape (`env`/`headers` as `[{name, value}]`; a dict is taken too)."""
    entries: list[ServerEntry] = []
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(name, str) or not name.strip():
            entries.append(ServerEntry(f"mcpServers.{index}", "editor", "the editor", None, "needs a non-empty name"))
            continue
        shaped = dict(item)
        for key in ("env", "headers"):
            pairs = item.get(key)
            if isinstance(pairs, list):
                if not all(isinstance(p, dict) and isinstance(p.get("name"), str)
                           and isinstance(p.get("value"), str) for p in pairs):
                    entries.append(ServerEntry(name.strip(), "editor", "the editor", None,
                                               f"{key} must be a list of {{name, value}} strings"))
                    break
                shaped[key] = {p["name"]: p["value"] for p in pairs}
        else:
            entries.append(parse_claude(name.strip(), shaped, "editor", "the editor", environ, expand=False))
    return entries


def parse_claude(
    name: str, raw: Any, scope: Scope, source: str, environ: Mapping[str, str], *, expand: bool = True
) -> ServerEntry:
    """One server in Claude Code's schema; an entry with the problem when it cannot be used."""

    def bad(problem: str) -> ServerEntry:
        return ServerEntry(name, scope, source, None, problem)

    if not isinstance(raw, dict):
        return bad("must be an object")
    kind = raw.get("type") or ("stdio" if "command" in raw else "http" if "url" in raw else "stdio")
    if kind == "streamable-http":
        kind = "http"
    if kind not in ("stdio", "http", "sse"):
        return bad(f"type {kind!r} is not one of stdio, http, sse")
    missing: list[str] = []
    refused: list[str] = []

    def text(value: str) -> str:
        return _expand(value, environ, missing, refused, project=scope == "project") if expand else value

    try:
        if kind == "stdio":
            command, args, env = raw.get("command"), raw.get("args", []), raw.get("env", {})
            if not isinstance(command, str) or not command.strip():
                return bad("needs a command")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                return bad("args must be a list of strings")
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                return bad("env must be an object of strings")
            spec = ServerSpec(name, "stdio", scope, source, command=text(command), args=tuple(text(a) for a in args),
                              env=tuple((str(k), text(v)) for k, v in env.items()))
        else:
            url, headers = raw.get("url"), raw.get("headers", {})
            if not isinstance(url, str) or not url.strip():
                return bad(f"a {kind} server needs a url")
            if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
                return bad("headers must be an object of strings")
            spec = ServerSpec(name, "sse" if kind == "sse" else "http", scope, source, url=text(url),
                              headers=tuple((str(k), text(v)) for k, v in headers.items()))
            if not spec.url.startswith(("http://", "https://")):
                return bad(f"url {spec.url!r} is not an http(s) URL")
    except ValueError as error:
        return bad(str(error))
    if refused:
        return bad(f"a project's server may not use the bridge's secret {', '.join(sorted(set(refused)))}")
    if missing:
        return bad(f"environment variable(s) not set: {', '.join(sorted(set(missing)))}")
    return ServerEntry(name, scope, source, spec)


def _expand(value: str, environ: Mapping[str, str], missing: list[str], refused: list[str], *, project: bool) -> str:
    def one(match: re.Match[str]) -> str:
        var, default = match.group(1), match.group(2)
        if project and var in SECRETS:
            refused.append(var)
            return ""
        if var in environ:
            return environ[var]
        if default is not None:
            return default
        missing.append(var)
        return ""

    return _VAR.sub(one, value)


@dataclass(frozen=True)
class Approvals:
    enable_all: bool
    enabled: frozenset[str]
    disabled: frozenset[str]

    def state(self, name: str) -> Approval:
        if name in self.disabled:
            return "rejected"
        if self.enable_all or name in self.enabled:
            return "approved"
        return "pending"


def read_approvals(
    files: ConfigFiles, project_state: dict[str, Any] | None = None, *, untrusted: dict[Path, str] | None = None
) -> Approvals:
    """Claude Code's approval keys, from the files a repository does not control (module docstring)."""
    if project_state is None:
        claude_json, _ = _read_json(files.claude_json)
        project_state = _project_state(claude_json, files.cwd)
    if untrusted is None:
        untrusted = workspace_local_files(files, [])
    store, _ = _read_json(files.approval_store)
    datas = [_read_json(path)[0] for path in files.approval_files()] + [project_state, _project_state(store, files.cwd)]
    datas += [_read_json(path)[0] for path in _workspace_locals(files) if path not in untrusted]
    enable_all = False
    enabled: set[str] = set()
    disabled: set[str] = set()
    for data in datas:
        if not isinstance(data, dict):
            continue
        enable_all = enable_all or data.get("enableAllProjectMcpServers") is True
        for key, into in (("enabledMcpjsonServers", enabled), ("disabledMcpjsonServers", disabled)):
            names = data.get(key)
            if isinstance(names, list):
                into.update(n for n in names if isinstance(n, str))
    return Approvals(enable_all, frozenset(enabled), frozenset(disabled))


def save_approval(files: ConfigFiles, name: str | None, approve: bool) -> Path:
    """Record the user's answer in the approval store (outside the workspace, under `projects[<cwd>]`): approve
    or reject `name`, or (name None) approve every project server. Raises OSError/ValueError when the store
    cannot be updated; an unreadable store is never overwritten."""
    path = files.approval_store
    with _locked(path):
        store, problem = _read_json(path)
        if problem:
            raise ValueError(f"{problem}; not overwriting it")
        store = store if isinstance(store, dict) else {}
        projects = store.get("projects")
        if not isinstance(projects, dict):
            projects = store["projects"] = {}
        data = projects.get(str(files.cwd))
        data = projects[str(files.cwd)] = data if isinstance(data, dict) else {}
        if name is None:
            data["enableAllProjectMcpServers"] = True
        else:
            add, drop = ("enabledMcpjsonServers", "disabledMcpjsonServers") if approve else \
                ("disabledMcpjsonServers", "enabledMcpjsonServers")
            kept = [n for n in data.get(drop, []) if n != name] if isinstance(data.get(drop), list) else []
            if kept or drop in data:
                data[drop] = kept
            found = data.get(add)
            names: list[Any] = found if isinstance(found, list) else []
            data[add] = [*names, name] if name not in names else names
        _write_json(path, store)
    return path


def workspace_local_files(files: ConfigFiles, problems: list[str]) -> dict[Path, str]:
    """The in-workspace `*.local.json` files that hold MCP keys but are not the user's, with why (a problem is
    added for each). Git runs only when such a file exists."""
    held: dict[Path, dict[str, Any]] = {}
    for path in _workspace_locals(files):
        data, _ = _read_json(path)
        if isinstance(data, dict) and any(key in data for key in ("mcpServers", *APPROVAL_KEYS)):
            held[path] = data
    if not held:
        return {}
    why = _not_the_users(files.cwd, list(held))
    for path, reason in why.items():
        servers = " and its servers need approval like .mcp.json's" if "mcpServers" in held[path] else ""
        problems.append(f"{path}: {reason}, so it may be the repository's rather than yours: its MCP approvals "
                        f"are ignored{servers}")
    return why


def _workspace_locals(files: ConfigFiles) -> list[Path]:
    return [files.cwd / LOCAL_SETTINGS, files.cwd / CLAUDE_LOCAL_SETTINGS]


def _not_the_users(cwd: Path, paths: list[Path]) -> dict[Path, str]:
    """Which of `paths` (in the workspace) git does not vouch for as the user's own, and why."""
    why: dict[Path, str] = {}
    for path in paths:
        relative = path.relative_to(cwd)
        if any((cwd / part).is_symlink() for part in [*reversed(relative.parents), relative][1:]):
            why[path] = "it is reached through a symbolic link"
    asked = [path for path in paths if path not in why]
    if not asked:
        return why
    # The bridge's own GIT_* variables must not point git elsewhere; no fsmonitor hook runs from the repo's config.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", "-c", "core.fsmonitor=false", "-C", str(cwd), "ls-files", "-z", "--",
             *(str(p.relative_to(cwd)) for p in asked)],
            capture_output=True, timeout=5, env=env, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return why | {path: f"git could not tell whether it is tracked ({error})" for path in asked}
    if done.returncode != 0:
        stderr = done.stderr.decode(errors="replace")
        reason = ("the workspace is not a git repository" if "not a git repository" in stderr
                  else f"git could not tell whether it is tracked ({stderr.strip()[:200]})")
        return why | {path: reason for path in asked}
    tracked = {cwd / name for name in done.stdout.decode(errors="replace").split("\0") if name}
    return why | {path: "git tracks it" for path in asked if path in tracked}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One writer of `path` at a time across bridge processes (a lock file beside it)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _project_state(claude_json: Any, cwd: Path) -> dict[str, Any]:
    projects = claude_json.get("projects") if isinstance(claude_json, dict) else None
    state = projects.get(str(cwd)) if isinstance(projects, dict) else None
    return state if isinstance(state, dict) else {}


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except OSError as error:
        return None, f"{path}: cannot be read ({error}); skipped"
    if not text.strip():
        return None, None
    try:
        return json.loads(text), None
    except json.JSONDecodeError as error:
        return None, f"{path}: not valid JSON (line {error.lineno}: {error.msg}); skipped"


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
