"""Where a session's MCP servers come from, as Claude Code users keep them, and which may start.

Sources, highest precedence first (a name defined twice is taken from the first):
  editor   the editor's `mcpServers` (ACP `session/new`: `{name, command, args, env: [{name, value}]}`,
           `{type: "http"|"sse", name, url, headers: [{name, value}]}`)
  local    `.agent-bridge/settings.local.json` and Claude Code's `~/.claude.json` `projects[<cwd>]` (private)
  project  `.mcp.json` and `.agent-bridge/settings.json` (checked in: need the user's approval)
  user     the user's `settings.json` (config dir) and Claude Code's `~/.claude.json` (top level)
Files use Claude Code's schema: `{"mcpServers": {NAME: {type: stdio|http|sse, command, args, env} or
{type, url, headers}}}`; `${VAR}` and `${VAR:-default}` expand from the bridge's environment in `command`,
`args`, `env`, `url` and `headers` (a project server may not expand the bridge's own secrets).

A repository must not start a process by being opened: a project server starts only once approved, by
Claude Code's keys in a file the repository does not control (`.agent-bridge/settings.local.json`, the
user's settings, `.claude/settings.local.json`, `~/.claude/settings.json`, `~/.claude.json` projects):
`enableAllProjectMcpServers: true`, `enabledMcpjsonServers: [names]`, `disabledMcpjsonServers: [names]`
(disabled wins). Approvals are saved to `.agent-bridge/settings.local.json`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["editor", "local", "project", "user"]
Approval = Literal["approved", "pending", "rejected"]

LOCAL_SETTINGS = Path(".agent-bridge") / "settings.local.json"
PROJECT_SETTINGS = Path(".agent-bridge") / "settings.json"
MCP_JSON = ".mcp.json"
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

    def approval_files(self) -> list[Path]:
        return [self.local_settings, self.user_config_dir / "settings.json",
                self.cwd / ".claude" / "settings.local.json", self.claude_home / "settings.json"]


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
    sources: list[tuple[Scope, str, Any]] = []
    for scope, path in (("local", files.local_settings), ("project", files.cwd / MCP_JSON),
                        ("project", files.cwd / PROJECT_SETTINGS), ("user", files.user_config_dir / "settings.json")):
        data, problem = _read_json(path)
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
    approvals = read_approvals(files, project_state)
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


def read_approvals(files: ConfigFiles, project_state: dict[str, Any] | None = None) -> Approvals:
    """Claude Code's approval keys, from the files a repository does not control."""
    if project_state is None:
        claude_json, _ = _read_json(files.claude_json)
        project_state = _project_state(claude_json, files.cwd)
    enable_all = False
    enabled: set[str] = set()
    disabled: set[str] = set()
    datas = [_read_json(path)[0] for path in files.approval_files()] + [project_state]
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
    """Record the user's answer in `.agent-bridge/settings.local.json`: approve or reject `name`, or (name None)
    approve every project server. Raises OSError/ValueError when the file cannot be updated."""
    path = files.local_settings
    data, problem = _read_json(path)
    if problem:
        raise ValueError(f"{problem}; not overwriting it")
    data = data if isinstance(data, dict) else {}
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
    _write_json(path, data)
    return path


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
