"""The bridge's own secrets: the one list of the files the model must never see or change, whatever the rules,
the mode or the workspace (the user may open their home folder, or `~/.claude` to edit agents and skills).

- `<data dir>/mcp-auth/`: the MCP servers' sign-in tokens (bridge/mcp/oauth.py);
- `<data dir>/sessions/*.jsonl` and `sessions/*/agents/`: every session's transcript and its sub-agents', which
  hold what earlier tool calls returned, in any project;
- `<data dir>/checkpoints/`: the checkpoint store, copies of the files of every workspace the bridge edited, and
  each session's log of it (`sessions/*/checkpoints.jsonl`: what a rewind restores);
- `<data dir>/running/`: what the bridge has running (bridge/execution/registry.py) — not secret, but a file the
  model wrote there would have the next start kill the processes and delete the folders it names;
- the user's settings, `<config dir>/settings.json` and `<Claude home>/settings.json` (`settings.local.json`): their
  MCP servers' `env` and `headers`, an `env` with a gateway's token (attack round 24: Read and Grep showed them to
  the model after one "yes" to a read outside the workspace); and the bridge's `mcp-approvals.json` and
  `trusted-folders.json`, whose entries start servers and apply a folder's settings unasked;
- `<Claude home>/.credentials.json`: Claude Code's sign-in;
- Claude Code's state, `~/.claude.json` and `<Claude home>/.claude.json` (the one `CLAUDE_CONFIG_DIR` moves it to),
  with its backups (`.claude.json.backup` beside it, `<Claude home>/backups/`): the MCP servers it configures (their
  `env` and `headers`: tokens), the API key, the account. The bridge reads the MCP servers from it itself
  (bridge/mcp/config.py); only the model's tools are kept out;
- `<Claude home>/projects/`: Claude Code's transcripts, for the reason ours are;
- `/proc/<the bridge's pid>`'s `environ`, `mem`, `fd`, `map_files`… (and `/proc/self`'s, as the file tools, which
  run in the bridge, see it; its status or cgroup are not secret): its environment holds the API key, and a
  process of the same user — of root, for whom the bridge's closing itself does nothing (private_process.py) —
  may read it: Grep over `/proc/<pid>/environ` answered, character by character. Not a sandbox mask: a
  sandboxed command has a /proc of its own, where the bridge is not.

Names, not globs, where a glob's literal part is a large folder (the home folder): the sandbox walks below it to
find what a pattern matches (sandbox_policy.expand), within a budget the masks share.

Other projects' sessions' stored results (`sessions/<id>/tool-results/`, `bash-output/`: the whole text of earlier
tool results) are on it; those of the session's own folder are not (`exempt`): its own, which its model is told to
page through with Read, and those of the folder's earlier sessions it was forked or resumed from, which its history
names.

Who asks it: the OS sandbox masks these paths for commands (bridge/execution/sandbox.py); the permission engine
denies any call that names one, reading or writing, in every mode (engine step 1), and a command that would read
one through a folder it walks (secret_trees.py: the folder holds one or links to one while no sandbox masks them, or
holds a hard link to one); Grep and Glob leave them out of their results (read_guard.py). Paths are compared as
resolved, so a link in the workspace that leads to one is one; a file that is another name of one (a hard link: the
same inode, which no path comparison sees) is one too (`linked`).
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from bridge.permissions.path_access import PathAccess
from bridge.permissions.secret_inodes import SecretInodes
from bridge.permissions.specifiers import PathPattern, compile_path_specifier

_GLOB = re.compile(r"([*?\[\\])")


@dataclass(frozen=True)
class Secret:
    fixed: Path  # the directory (or file) all its paths lie under
    pattern: PathPattern
    what: str  # for the reason a call is denied
    masked: bool = True  # the sandbox masks it for commands (not the bridge's /proc: theirs is their own)
    exempt: Callable[[Path], bool] | None = field(default=None, compare=False)  # a path below it that is not one


@dataclass(frozen=True)
class OwnSecrets:
    secrets: tuple[Secret, ...] = ()
    inodes: SecretInodes = field(default_factory=SecretInodes, compare=False)

    @classmethod
    def of(
        cls,
        data_dir: Path,
        claude_home: Path,
        home: Path | None = None,
        cwd: Path | None = None,
        config_dir: Path | None = None,
    ) -> OwnSecrets:
        """`cwd`: the session's folder, whose sessions' stored results are not secret to it. `config_dir`: the
        bridge's user config dir (its settings, approvals and trusted folders)."""
        data, claude = Path(os.path.realpath(data_dir)), Path(os.path.realpath(claude_home))
        user = Path(os.path.realpath(home if home is not None else Path.home()))
        state = "Claude Code's state (its MCP servers' tokens, the API key, the account)"
        settings = "the user's settings (their MCP servers' tokens, env: keys)"
        mine = Path(os.path.realpath(config_dir)) if config_dir is not None else None
        config = (
            ()
            if mine is None
            else (
                (mine, "settings.json", settings),
                (mine, "mcp-approvals.json", "the user's MCP server approvals, which start servers unasked"),
                (mine, "trusted-folders.json", "the folders the user trusts, whose settings apply unasked"),
            )
        )
        entries = (
            *config,
            (claude, "settings.json", settings),
            (claude, "settings.local.json", settings),
            (data, "mcp-auth", "its MCP servers' sign-in tokens"),
            (data, "sessions/*.jsonl", "a session transcript"),
            (data, "sessions/*/agents", "a sub-agent's transcript"),
            (data, "checkpoints", "its checkpoint store"),
            (data, "sessions/*/checkpoints.jsonl", "a session's checkpoint log, which rewind restores from"),
            (data, "running", "its record of the processes it started, which the next start kills"),
            (claude, ".credentials.json", "Claude Code's sign-in"),
            (user, ".claude.json", state),
            (user, ".claude.json.backup", state),
            (claude, ".claude.json", state),
            (claude, ".claude.json.backup", state),
            (claude, "backups", state),
            (claude, "projects", "Claude Code's session transcripts"),
            (data, "sessions/*/tool-results", "another folder's session's stored tool results"),
            (data, "sessions/*/bash-output", "another folder's session's stored command output"),
        )
        own = () if os.name == "nt" else _process_secrets()
        ours = _same_folder(data / "sessions", str(cwd)) if cwd is not None else None
        found = tuple(
            _secret(base, below, what, ours if below.endswith(("/tool-results", "/bash-output")) else None)
            for base, below, what in entries
        )
        return cls((*found, *own), SecretInodes(entries))

    @property
    def patterns(self) -> tuple[PathPattern, ...]:
        """For the sandbox's masks."""
        return tuple(s.pattern for s in self.secrets if s.masked)

    def of_path(self, path: Path) -> Secret | None:
        """The secret `path` (absolute, normalized) is or lies in."""
        return next((s for s in self.secrets if s.pattern.matches(path) and not (s.exempt and s.exempt(path))), None)

    def named(self, accesses: Iterable[PathAccess]) -> tuple[PathAccess, str] | None:
        """The first access that reaches a secret, as named, as resolved (through links and `..`) or as another
        name of its file (a hard link); with what the secret is."""
        for access in accesses:
            for path in (access.real, access.written):
                secret = self.of_path(path)
                if secret is not None:
                    return access, secret.what
            linked = self.linked(access.real)
            if linked is not None:
                return access, linked
        return None

    def linked(self, path: Path) -> str | None:
        """What secret the file at `path` is a hard link to, if it is one (`path` resolved)."""
        return self.inodes.linked(str(path))

    def reached_by(self, path: Path) -> Secret | None:
        """The secret `path` (resolved) is, lies in or holds."""
        return self.of_path(path) or next((s for s in self.secrets if s.fixed.is_relative_to(path)), None)

    def held_in(self, roots: Iterable[PathAccess]) -> tuple[PathAccess, Secret] | None:
        """The first directory read as a whole (`grep -r`) that holds a secret."""
        for root in roots:
            for path in (root.real, root.written):
                secret = next((s for s in self.secrets if s.fixed.is_relative_to(path)), None)
                if secret is not None:
                    return root, secret
        return None


def _same_folder(sessions: Path, cwd: str) -> Callable[[Path], bool]:
    """Whether a path under `sessions/<id>/` is of a session of the folder `cwd` (its transcript's header says so);
    read once per session id."""

    @functools.cache
    def of_folder(session: str) -> bool:
        try:
            with open(sessions / f"{session}.jsonl", encoding="utf-8", errors="replace") as lines:
                header = json.loads(lines.readline(64 * 1024) or "null")
        except (OSError, ValueError):
            return False
        return isinstance(header, dict) and header.get("type") == "session" and header.get("cwd") == cwd

    def exempt(path: Path) -> bool:
        try:
            session = path.relative_to(sessions).parts[0]
        except (ValueError, IndexError):
            return False
        return of_folder(session)

    return exempt


def _secret(base: Path, below: str, what: str, exempt: Callable[[Path], bool] | None = None) -> Secret:
    literal = below.split("/")
    stop = next((i for i, p in enumerate(literal) if _GLOB.search(p)), len(literal))
    fixed = base.joinpath(*literal[:stop])
    spec = _absolute(base) + "/" + below
    return Secret(fixed, compile_path_specifier(spec, cwd=base, root=base), what, exempt=exempt)


# What of /proc/<pid> shows the key (its environment, its memory) or what it has open (open files, mapped files,
# its root and folder as links); its status, limits or cgroup do not.
_PROCESS_PARTS = ("environ", "mem", "fd", "fdinfo", "map_files", "root", "cwd", "auxv")


def _process_secrets() -> tuple[Secret, ...]:
    """`/proc/<pid>` of this process, where its environment (the API key), memory and open files show, and of
    each of its threads (`task/<tid>/…`)."""
    what = "the bridge's own process: its environment and memory hold the API key"
    found = []
    for below in (*_PROCESS_PARTS, *(f"task/*/{part}" for part in _PROCESS_PARTS)):
        secret = _secret(Path("/proc"), f"{os.getpid()}/{below}", what)
        found.append(Secret(secret.fixed, secret.pattern, secret.what, masked=False))
    return tuple(found)


def _absolute(path: Path) -> str:
    """`path` as the start of an absolute rule pattern (`//…`), its glob characters escaped."""
    if isinstance(path, PureWindowsPath):  # `//c/Users/…`: drive C (bridge/winpaths.py)
        rest = PurePosixPath(*path.parts[1:]).as_posix() if len(path.parts) > 1 else ""
        return f"//{path.drive[:1].lower()}/" + _GLOB.sub(r"\\\1", rest).rstrip("/")
    return "/" + _GLOB.sub(r"\\\1", path.as_posix()).rstrip("/")
