"""Where a session's MCP servers come from, as Claude Code users keep them, and which may start.

Sources, highest precedence first (a name defined twice is taken from the first):
  editor   the editor's `mcpServers` (ACP `session/new`: `{name, command, args, env: [{name, value}]}`,
           `{type: "http"|"sse", name, url, headers: [{name, value}]}`)
  local    Claude Code's `~/.claude.json` `projects[<cwd>]` (the user's, outside the workspace)
  user     the user's `settings.json` (config dir), Claude Code's `~/.claude.json` (top level), plugins
  project  every file in the workspace: `.agent-bridge/settings.local.json`, `.mcp.json`,
           `.agent-bridge/settings.json` (a cloned repository's, tracked or not: they need the user's approval)
The folder's come last, unlike Claude Code's order (which puts them before the user's): a folder's server named
as one of the user's would take it over and run under the user's rules for that name. It is left out, said.
Files use Claude Code's schema: `{"mcpServers": {NAME: {type: stdio|http|sse, command, args, env} or
{type, url, headers}}}`; `${VAR}` and `${VAR:-default}` expand from the bridge's environment in `command`,
`args`, `env`, `url` and `headers` — never to the bridge's own credentials (bridge/environment.py), from any
source.

A repository must not start a process by being opened: a project server starts only once the user approved it,
and approvals are read only from files outside the workspace: the bridge's approval store
(`mcp-approvals.json` in the user's config dir, `projects[<cwd>]`, where answers are saved), and Claude Code's
answers for this folder (`enableAllProjectMcpServers`, `enabledMcpjsonServers` in `~/.claude.json`
`projects[<cwd>]`); `disabledMcpjsonServers` from there and from the user's `settings.json` and
`~/.claude/settings.json` too (disabled wins; a name approved there is no answer about a folder's server of that
name). Nothing in the workspace approves anything: no in-workspace "local" file, tracked or not (an archive can
ship a `.git` of its own that leaves any file untracked). An answer is bound to the server's configuration as
written (`ServerSpec.approval_key`; Claude Code's by name, bound the first time it approves): when a pull changes
the command, its arguments, env or headers, it asks again.
The question shows the configuration as written, every `${VAR}` it reads from the user's environment named.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bridge.environment import is_bridge_credential, refused_reason
from bridge.jsonfile import SETTINGS_MAX_BYTES, keyed_entry, read_json
from bridge.mcp.shown import shown_url
from bridge.mcp_names import server_part
from bridge.permissions.named_files import UNBINDABLE, binding
from bridge.permissions.trust import MCP_APPROVAL_STORE
from bridge.visible import visible

Transport = Literal["stdio", "http", "sse"]
Scope = Literal["editor", "local", "project", "user"]
Approval = Literal["approved", "pending", "rejected"]

LOCAL_SETTINGS = Path(".agent-bridge") / "settings.local.json"
PROJECT_SETTINGS = Path(".agent-bridge") / "settings.json"
CLAUDE_LOCAL_SETTINGS = Path(".claude") / "settings.local.json"
MCP_JSON = ".mcp.json"
APPROVAL_STORE = MCP_APPROVAL_STORE
APPROVED_CONFIGS = "approvedConfigs"  # in the store: {name: approval_key} of what the user approved
CLAUDE_CONFIGS = "claudeApprovedConfigs"  # in the store: {name: approval_key} Claude Code's answer approved, as seen
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_PART = _NAME_START | frozenset("0123456789")


def variables(text: str) -> Iterator[tuple[int, int, str, str | None]]:
    """Each `${NAME}` / `${NAME:-default}` in `text`, left to right, as (start, end, name, default or None): what
    `re.finditer(r"\\$\\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\\}", text)` finds, in linear time. That pattern
    scanned to the end of the text from every `${a:-` when no `}` followed: quadratic (attack round 20: a cloned
    folder's 100 KB `.mcp.json` held `serve` 29 s before `session/new` was answered; 1 MiB, most of an hour)."""
    at = text.find("${")
    while at >= 0:
        end = at + 2
        if end < len(text) and text[end] in _NAME_START:
            while end < len(text) and text[end] in _NAME_PART:
                end += 1
            name = text[at + 2 : end]
            if text.startswith("}", end):
                yield at, end + 1, name, None
                at = text.find("${", end + 1)
                continue
            if text.startswith(":-", end):
                close = text.find("}", end + 2)
                if close < 0:
                    return  # no `}` after this point: nothing further can match
                yield at, close + 1, name, text[end + 2 : close]
                at = text.find("${", close + 1)
                continue
        at = text.find("${", at + 1)


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
    approval_key: str = field(default="", compare=False)  # the configuration as written (what an approval binds)
    shown: str = field(default="", compare=False)  # the configuration as written, for a question
    # a folder's server: (workspace, the files it runs by digest) as approved; checked again before every start
    bound: tuple[str, str] | None = field(default=None, compare=False)

    @property
    def identity(self) -> str:
        fields = [self.transport, self.command, list(self.args), sorted(self.env), self.url, sorted(self.headers)]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16]

    def describe(self) -> str:
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return f"{self.transport} {shown_url(self.url)}"  # shown in /mcp: never the URL's credentials


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
    files: ConfigFiles,
    editor: list[Any],
    *,
    environ: Mapping[str, str] | None = None,
    plugins: Sequence[tuple[str, dict[str, Any]]] = (),
) -> tuple[list[ServerEntry], list[str]]:
    """Every configured server (editor's first), one entry per name, and the problems with the files."""
    env = os.environ if environ is None else environ
    problems: list[str] = []
    found: list[ServerEntry] = list(parse_acp(editor, env))
    claude_json, claude_problem = read_json(files.claude_json)
    if claude_problem:
        problems.append(claude_problem)
    project_state = _project_state(claude_json, files.cwd)
    sources: list[tuple[Scope, str, Any]] = []
    if "mcpServers" in project_state:
        sources.append(("local", f"{files.claude_json} (projects[{files.cwd}])", project_state["mcpServers"]))
    for scope, path in (
        ("project", files.local_settings),
        ("project", files.cwd / MCP_JSON),
        ("project", files.cwd / PROJECT_SETTINGS),
        ("user", files.user_config_dir / "settings.json"),
    ):
        within = files.cwd if scope == "project" else None  # the folder's own: never through a link out of it
        data, problem = read_json(path, within=within, max_bytes=SETTINGS_MAX_BYTES)
        if problem:
            problems.append(problem)
        elif isinstance(data, dict) and "mcpServers" in data:
            sources.append((scope, str(path), data["mcpServers"]))  # type: ignore[arg-type]
    if isinstance(claude_json, dict) and "mcpServers" in claude_json:
        sources.append(("user", str(files.claude_json), claude_json["mcpServers"]))
    sources += [("user", f"the plugin {name}", servers) for name, servers in plugins]  # the user enabled them
    for scope, source, servers in sources:
        if not isinstance(servers, dict):
            problems.append(f"{source}: mcpServers must be an object of servers by name; it is skipped")
            continue
        for name, raw in servers.items():
            found.append(parse_claude(str(name), raw, scope, source, env, workspace=files.cwd))
    approvals = read_approvals(files, project_state)
    # The user's own servers (the editor's, Claude Code's for this folder, the user's settings, plugins) before the
    # folder's: a folder's `.mcp.json` server named as the user's replaced it and ran under the user's allow rules
    # for that name (`mcp__github`), once approved for the folder's own command (attack round 35).
    found.sort(key=lambda entry: entry.scope == "project")
    entries: dict[str, ServerEntry] = {}
    parts: dict[str, str] = {}
    for entry in found:
        if entry.name in entries:  # a higher-precedence source defined it
            if entry.scope == "project" and entries[entry.name].scope != "project":
                problems.append(
                    f"{entry.source}: MCP server {entry.name!r} is left out: a server of your own has that name "
                    "(your rules for its tools are for yours); rename the folder's"
                )
            continue
        other = parts.setdefault(server_part(entry.name), entry.name)
        if other != entry.name:  # `git.hub` and `git_hub`: one name for the tools of both, one's rules the other's
            problems.append(
                f"{entry.source}: MCP server {entry.name!r} is left out: its tools would have the names of server "
                f"{other!r}'s (mcp__{server_part(other)}__…); rename one of them"
            )
            continue
        if entry.scope == "project" and entry.spec is not None:
            state = approvals.state(entry.name, entry.spec.approval_key)
            if approvals.unbound(entry.name):
                state = _bind(files, entry.spec, problems)
            entry = ServerEntry(entry.name, entry.scope, entry.source, entry.spec, entry.problem, state)
        entries[entry.name] = entry
    return list(entries.values()), problems


def _bind(files: ConfigFiles, spec: ServerSpec, problems: list[str]) -> Approval:
    """Claude Code's answer for this folder approves `spec` as it is now: kept in the store, so that a pull that
    changes it asks again (Claude Code's own answer is by name). Unkept, it is not trusted: it asks."""
    try:
        save_claude_binding(files, spec)
    except (OSError, ValueError) as error:
        problems.append(f"{files.approval_store}: {error}; MCP server {spec.name!r} asks for approval again")
        return "pending"
    return "approved"


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
                if not all(
                    isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("value"), str)
                    for p in pairs
                ):
                    entries.append(
                        ServerEntry(
                            name.strip(),
                            "editor",
                            "the editor",
                            None,
                            f"{key} must be a list of {{name, value}} strings",
                        )
                    )
                    break
                shaped[key] = {p["name"]: p["value"] for p in pairs}
        else:
            entries.append(parse_claude(name.strip(), shaped, "editor", "the editor", environ, expand=False))
    return entries


def parse_claude(
    name: str,
    raw: Any,
    scope: Scope,
    source: str,
    environ: Mapping[str, str],
    *,
    expand: bool = True,
    workspace: Path | None = None,
) -> ServerEntry:
    """One server in Claude Code's schema; an entry with the problem when it cannot be used. A folder's server
    (`project`) is approved together with the `workspace` files its command runs, by digest (named_files.py)."""

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
        return _expand(value, environ, missing, refused) if expand else value

    try:
        if kind == "stdio":
            command, args, env = raw.get("command"), raw.get("args", []), raw.get("env", {})
            if not isinstance(command, str) or not command.strip():
                return bad("needs a command")
            if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
                return bad("args must be a list of strings")
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                return bad("env must be an object of strings")
            if scope == "project":  # what changes how its program loads is not bound by its approval
                for variable in env:
                    if (why := refused_reason(str(variable), project=True)) is not None:
                        return bad(f"env.{variable} is refused for a folder's server: {why}")
            argv = [text(command), *(text(a) for a in args)]
            binds = binding(shlex.join(argv), workspace) if scope == "project" and workspace is not None else ""
            if binds.startswith(UNBINDABLE):
                return bad(f"what it runs can't be bound for approval ({binds.removeprefix(UNBINDABLE)})")
            shown = _shown(shlex.join([str(command), *(str(a) for a in args)]), env, "env", "=")
            spec = ServerSpec(
                name,
                "stdio",
                scope,
                source,
                command=argv[0],
                args=tuple(argv[1:]),
                env=tuple((str(k), text(v)) for k, v in env.items()),
                approval_key=_key(["stdio", command, args, env, *([binds] if binds else [])]),
                shown=f"{shown}\nruns {visible(binds)}" if binds else shown,
                bound=(str(workspace), binds) if binds and workspace is not None else None,
            )
        else:
            url, headers = raw.get("url"), raw.get("headers", {})
            if not isinstance(url, str) or not url.strip():
                return bad(f"a {kind} server needs a url")
            if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
                return bad("headers must be an object of strings")
            spec = ServerSpec(
                name,
                "sse" if kind == "sse" else "http",
                scope,
                source,
                url=text(url),
                headers=tuple((str(k), text(v)) for k, v in headers.items()),
                approval_key=_key([kind, url, headers]),
                shown=_shown(url, headers, "headers", ": "),
            )
            if not spec.url.startswith(("http://", "https://")):
                return bad(f"url {shown_url(spec.url)!r} is not an http(s) URL")
    except ValueError as error:
        return bad(str(error))
    if refused:
        return bad(
            f"it may not be given the bridge's own credentials ({', '.join(sorted(set(refused)))}): they "
            "never leave the bridge"
        )
    if missing:
        return bad(f"environment variable(s) not set: {', '.join(sorted(set(missing)))}")
    return ServerEntry(name, scope, source, spec)


def _expand(value: str, environ: Mapping[str, str], missing: list[str], refused: list[str]) -> str:
    def one(var: str, default: str | None) -> str:
        if var in environ and is_bridge_credential(var, environ[var]):
            refused.append(var)
            return ""
        if var in environ:
            return environ[var]
        if default is not None:
            return default
        missing.append(var)
        return ""

    out: list[str] = []
    done = 0
    for start, end, var, default in variables(value):
        out += [value[done:start], one(var, default)]
        done = end
    out.append(value[done:])
    return "".join(out)


def _key(raw: list[Any]) -> str:
    return hashlib.sha256(json.dumps(raw, sort_keys=True).encode()).hexdigest()[:16]


def _shown(head: str, pairs: Mapping[str, str], label: str, sep: str) -> str:
    """The configuration as written (nothing expanded), one line each, and the user's variables it reads. Every
    part escaped (`visible`) and the arguments quoted: a U+2028 or NEL in an argument made lines of its own in
    the question, a fake warning and a forged `runs … sha256:` binding line among them (attack round 35)."""
    lines = [visible(head)] + (
        [f"{label}: " + ", ".join(f"{visible(k)}{sep}{visible(v)}" for k, v in pairs.items())] if pairs else []
    )
    names = sorted({name for text in [head, *pairs.values()] for _s, _e, name, _d in variables(text)})
    if names:
        lines.append("reads from your environment: " + ", ".join(f"${{{n}}}" for n in names))
    return "\n".join(lines)


@dataclass(frozen=True)
class Approvals:
    """The user's answers: the bridge's store, bound to the configuration as written (`configs`: name ->
    approval_key), and Claude Code's by name for this folder (`~/.claude.json` `projects[<cwd>]`), bound by the
    store the first time they approve (`unbound`); `disabledMcpjsonServers` from every file of the user's."""

    enable_all: bool
    enabled: frozenset[str]
    disabled: frozenset[str]
    configs: Mapping[str, str] = field(default_factory=dict)
    claude_configs: Mapping[str, str] = field(default_factory=dict)  # what Claude Code's answer approved, as seen

    def state(self, name: str, key: str | None = None) -> Approval:
        if name in self.disabled:
            return "rejected"
        if name in self.configs:  # what was approved, as it was: a pull that changed it asks again
            return "approved" if key is None or self.configs[name] == key else "pending"
        if self.enable_all or name in self.enabled:  # while Claude Code's answer stands (taken back: it asks)
            seen = self.claude_configs.get(name)
            return "approved" if seen is None or key is None or seen == key else "pending"
        return "pending"

    def unbound(self, name: str) -> bool:
        """Approved by Claude Code's answer alone: the store does not hold what it approved yet."""
        return (
            name not in self.disabled
            and name not in self.configs
            and name not in self.claude_configs
            and (self.enable_all or name in self.enabled)
        )


def read_approvals(files: ConfigFiles, project_state: dict[str, Any] | None = None) -> Approvals:
    """The user's answers, from files outside the workspace only (module docstring). Claude Code's approving keys
    count only where it keeps its answers for this folder (`~/.claude.json` `projects[<cwd>]`): in the user's
    global settings (`enabledMcpjsonServers: ["playwright"]`) a name says nothing of what a cloned folder's server
    of that name runs (attack round 24: it ran `sh -c …` outside the sandbox when the folder was opened)."""
    if project_state is None:
        claude_json, _ = read_json(files.claude_json)
        project_state = _project_state(claude_json, files.cwd)
    store, _ = read_json(files.approval_store)
    ours = _project_state(store, files.cwd)
    enable_all = project_state.get("enableAllProjectMcpServers") is True
    names = project_state.get("enabledMcpjsonServers")
    enabled = {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()
    disabled: set[str] = set()
    for data in [read_json(path)[0] for path in files.approval_files()] + [project_state, ours]:
        names = data.get("disabledMcpjsonServers") if isinstance(data, dict) else None
        if isinstance(names, list):
            disabled.update(n for n in names if isinstance(n, str))
    configs, claude = (
        {k: v for k, v in found.items() if isinstance(v, str)} if isinstance(found, dict) else {}
        for found in (ours.get(APPROVED_CONFIGS), ours.get(CLAUDE_CONFIGS))
    )
    return Approvals(enable_all, frozenset(enabled), frozenset(disabled), configs, claude)


def save_claude_binding(files: ConfigFiles, spec: ServerSpec) -> Path:
    """Keep what Claude Code's answer for this folder approves (`spec` as it is now), apart from the user's own
    answers in the bridge: taken back in Claude Code, it approves nothing (a changed server asks again)."""
    with keyed_entry(files.approval_store, "projects", str(files.cwd)) as data:
        found = data.get(CLAUDE_CONFIGS)
        bound = data[CLAUDE_CONFIGS] = found if isinstance(found, dict) else {}
        bound[spec.name] = spec.approval_key
    return files.approval_store


def save_approval(files: ConfigFiles, specs: list[ServerSpec], approve: bool) -> Path:
    """Record the user's answer in the approval store (outside the workspace, under `projects[<cwd>]`): approve
    `specs` as configured now (bound to each one's `approval_key`), or reject them (by name). Raises
    OSError/ValueError when the store cannot be updated; an unreadable store is never overwritten."""
    path = files.approval_store
    with keyed_entry(path, "projects", str(files.cwd)) as data:
        configs = data.get(APPROVED_CONFIGS)
        configs = data[APPROVED_CONFIGS] = configs if isinstance(configs, dict) else {}
        found = data.get("disabledMcpjsonServers")
        disabled: list[Any] = found if isinstance(found, list) else []
        names = {spec.name for spec in specs}
        if approve:
            configs.update({spec.name: spec.approval_key for spec in specs})
            disabled = [n for n in disabled if n not in names]
        else:
            for name in names:
                configs.pop(name, None)
            disabled += [n for n in sorted(names) if n not in disabled]
        if disabled or "disabledMcpjsonServers" in data:
            data["disabledMcpjsonServers"] = disabled
    return path


def _project_state(claude_json: Any, cwd: Path) -> dict[str, Any]:
    projects = claude_json.get("projects") if isinstance(claude_json, dict) else None
    state = projects.get(str(cwd)) if isinstance(projects, dict) else None
    return state if isinstance(state, dict) else {}
