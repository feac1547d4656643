"""Folder trust: what a folder's own files say that widens what runs or what is allowed waits for the user.

A cloned repository is a stranger. Its `.agent-bridge/` and `.claude/` settings files (tracked or not) may
hold hooks, `env`, allow rules, a permissive `defaultMode`, `additionalDirectories`, sandbox switches: each of
these is a `TrustItem`, inert until the user has approved exactly that item for this folder. Deny and ask
rules (they only tighten) apply at once. Items are remembered one by one, verbatim, in the user's store
(`trusted-folders.json` in the user's config dir, outside every repository): when a pull brings a new hook,
only the new hook is pending and the user is asked about it — the folder is never trusted forever.

How a front end asks is its own business (the terminal asks on its screen, ACP editors get a permission
request, VS Code honours its Workspace Trust); the policy says whether it may:
- `ask` (default): pending items are inert until answered; the answer is remembered;
- `restricted`: never ask, everything of the folder's stays inert (VS Code's Restricted Mode);
- `trusted`: every item is admitted without asking (CI: `--trust-folder` or `AGENT_BRIDGE_TRUST_FOLDER=1`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from bridge.jsonfile import keyed_entry, read_json, stat_key
from bridge.permissions.named_files import UNBINDABLE, bound_paths
from bridge.visible import MAX_SHOWN_CHARS, fits, one_line, visible

log = logging.getLogger(__name__)

TrustKind = Literal["hook", "env", "passEnv", "allow", "defaultMode", "additionalDirectories", "sandbox", "plugin"]
TrustPolicy = Literal["ask", "restricted", "trusted"]
TRUST_ENV = "AGENT_BRIDGE_TRUST_FOLDER"  # "1"/"yes"/"true": trust every folder's configuration (CI)
STORE_NAME = "trusted-folders.json"
# the MCP servers the user approved (bridge/mcp/config.py): like this store, in the user's config dir, where no tool
# writes without asking (the engine protects both: each makes something run in later sessions)
MCP_APPROVAL_STORE = "mcp-approvals.json"

_LABELS: dict[TrustKind, str] = {
    "hook": "runs the hook command",
    "env": "sets the environment variable",
    "passEnv": "passes your secret variable to commands",
    "allow": "allows without asking",
    "defaultMode": "starts in the permission mode",
    "additionalDirectories": "adds to the workspace the directory",
    "sandbox": "changes the sandbox",
    "plugin": "turns on your installed plugin",
}


@dataclass(frozen=True)
class TrustItem:
    """One thing a folder's file says that widens what runs or what is allowed, verbatim."""

    file: str  # the settings file, relative to the folder (posix)
    kind: TrustKind
    text: str  # exactly what would take effect: a hook command, `NAME=value`, a rule...
    binds: str = ""  # the workspace files the command runs, by digest (named_files.py): trust is in those too
    # a hook of the user's own (their settings, a plugin they installed) whose command runs this folder's files
    # (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/lint.sh`, `make lint`, `pytest`): the folder's code, so it waits for
    # trust like the folder's own hooks; trusted, it runs as the user's hooks do (`file` is the user's file)
    own: bool = False

    @property
    def bindable(self) -> bool:
        return not self.binds.startswith(UNBINDABLE)

    def describe(self, *, contained: bool = False) -> str:
        """`contained`: an unbindable hook that may be trusted all the same, since it will run in the sandbox."""
        note = self.note(contained=contained)
        label = "your hook runs this folder's files:" if self.own else _LABELS[self.kind]
        return f"{self.file}: {label} {self.text}" + (f" ({note})" if note else "")

    def note(self, *, contained: bool = False) -> str:
        """What the binding says of it: the files it runs, why it stays off, or why a change won't be asked about."""
        if not self.binds:
            return ""
        if self.own and not self.bindable:
            why = self.binds.removeprefix(UNBINDABLE)
            return f"{why}; trusted, it runs outside the sandbox, as your hooks do, and a change is not asked about"
        if self.own:
            return f"running {self.binds}; trusted, it runs outside the sandbox, as your hooks do"
        if not self.bindable and contained:
            why = self.binds.removeprefix(UNBINDABLE)
            return (
                f"what it runs can't be pinned — {why} — so a change to it is not asked about; it runs only in the "
                "sandbox"
            )
        if not self.bindable:
            return f"it stays off: {self.binds}"
        return f"running {self.binds}"

    def as_json(self) -> dict[str, str]:
        out = {"file": self.file, "kind": self.kind, "text": self.text}
        if self.binds:
            out["binds"] = self.binds
        return {**out, "own": "yes"} if self.own else out

    @staticmethod
    def from_json(value: Any) -> TrustItem | None:
        if not isinstance(value, dict):
            return None
        file, kind, text, binds = value.get("file"), value.get("kind"), value.get("text"), value.get("binds", "")
        if isinstance(file, str) and kind in _LABELS and isinstance(text, str) and isinstance(binds, str):
            return TrustItem(file, kind, text, binds, own=value.get("own") == "yes")
        return None


def policy_from_environment() -> TrustPolicy | None:
    """`AGENT_BRIDGE_TRUST_FOLDER`: 1/yes/true trusts, 0/no/false/restricted keeps folders restricted."""
    value = os.environ.get(TRUST_ENV, "").strip().lower()
    if value in ("1", "yes", "true", "on", "trusted"):
        return "trusted"
    if value in ("0", "no", "false", "off", "restricted"):
        return "restricted"
    return None


class FolderTrust:
    """The user's answers about one folder's own configuration, and the policy of whoever serves it.

    Shared by every session on the folder (through its `SettingsStore`); `version` changes whenever what is
    admitted may have changed (an answer here, the store file changed by another bridge, a new policy)."""

    def __init__(self, folder: Path, user_config_dir: Path, policy: TrustPolicy | None = None) -> None:
        self.folder = Path(os.path.realpath(folder))
        self.path = user_config_dir / STORE_NAME
        self._policy: TrustPolicy = policy or policy_from_environment() or "ask"
        self._lock = threading.Lock()
        self._stat: tuple[int, int, int] | None = None
        self._approved: frozenset[TrustItem] = frozenset()
        self._declined: frozenset[TrustItem] = frozenset()
        self._session_approved: set[TrustItem] = set()  # "just this time": this process only
        # whether the folder's hooks run in the OS sandbox (bridge/session_setup.py): then one whose files can't be
        # pinned may be trusted all the same (what it runs is held to the sandbox, not to what the user saw)
        self.hooks_contained: Callable[[], bool] = lambda: False
        self.version = 0
        self._load()

    @property
    def policy(self) -> TrustPolicy:
        return self._policy

    def set_policy(self, policy: TrustPolicy) -> None:
        """The front end's policy (VS Code's Workspace Trust, a flag); the environment's CI switch wins."""
        policy = policy_from_environment() or policy
        with self._lock:
            if policy != self._policy:
                self._policy = policy
                self.version += 1

    def refresh(self) -> bool:
        """Re-read the store when another process changed it; True when anything may now be admitted differently."""
        with self._lock:
            if stat_key(self.path) == self._stat:
                return False
            before = (self._approved, self._declined)
            self._load_locked()
            if before == (self._approved, self._declined):
                return False
            self.version += 1
            return True

    def askable(self, item: TrustItem) -> bool:
        """Whether the user can trust `item`: what it runs is pinned to what they saw, or it is a hook the sandbox
        holds."""
        return item.bindable or item.own or (item.kind == "hook" and self.hooks_contained())

    def admits(self, item: TrustItem) -> bool:
        if not self.askable(item):  # what it runs can't be pinned to what the user saw: off under every policy but CI's
            return self._policy == "trusted"
        if self._policy == "trusted":
            return True
        if self._policy == "restricted":
            return False
        return item in self._approved or item in self._session_approved

    def declined(self, item: TrustItem) -> bool:
        return item in self._declined

    def changed_files(self, item: TrustItem) -> list[str]:
        """The files `item` runs that changed since the user trusted the same command (a pull changed the script,
        or added one it reads)."""
        now = bound_paths(item.binds)
        before = [
            bound_paths(a.binds)
            for a in (*self._approved, *self._session_approved)
            if (a.file, a.kind, a.text) == (item.file, item.kind, item.text) and a.binds != item.binds
        ]
        return sorted({p for old in before for p in old.keys() | now.keys() if now.get(p) != old.get(p)})

    def approve(self, items: Iterable[TrustItem], *, remember: bool = True) -> str | None:
        """Admit `items` (remembered in the user's store, or for this process only); the problem when the
        answer could not be saved (the items are admitted for this process all the same)."""
        return self._decide(list(items), approve=True, remember=remember)

    def decline(self, items: Iterable[TrustItem]) -> str | None:
        """Remember that the user keeps `items` off (they are not asked about again until they change)."""
        return self._decide(list(items), approve=False, remember=True)

    def _decide(self, items: list[TrustItem], *, approve: bool, remember: bool) -> str | None:
        if not items:
            return None
        if approve:
            with self._lock:
                self._session_approved.update(items)
                self.version += 1
        if not remember:
            return None
        try:
            with keyed_entry(self.path, "folders", str(self.folder)) as entry:
                add, drop = ("approved", "declined") if approve else ("declined", "approved")
                chosen = set(items)
                kept = (
                    [v for v in entry.get(drop, []) if TrustItem.from_json(v) not in chosen]
                    if isinstance(entry.get(drop), list)
                    else []
                )
                entry[drop] = kept
                found = entry.get(add)
                present: list[Any] = found if isinstance(found, list) else []
                known = {TrustItem.from_json(v) for v in present}
                entry[add] = [*present, *(i.as_json() for i in items if i not in known)]
        except (OSError, ValueError) as error:  # not remembered: still honoured for this process
            log.warning("could not save the folder trust answer: %s", error)
            return f"the answer could not be saved ({error}); it holds until the bridge exits"
        with self._lock:
            self._load_locked()
            self.version += 1
        return None

    def _load(self) -> None:
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        self._stat = stat_key(self.path)
        data, problem = read_json(self.path)
        if problem:
            log.warning("folder trust store: %s (nothing in it is trusted until it is fixed)", problem)
        folders = data.get("folders") if isinstance(data, dict) else None
        entry = folders.get(str(self.folder)) if isinstance(folders, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        self._approved = _items(entry.get("approved"))
        self._declined = _items(entry.get("declined"))


def _items(value: Any) -> frozenset[TrustItem]:
    if not isinstance(value, list):
        return frozenset()
    return frozenset(item for item in map(TrustItem.from_json, value) if item is not None)


# -- asking ------------------------------------------------------------------------------------------------

TrustAnswer = Literal["trust", "session", "keep_off", "not_now"]
TRUST_CHOICES: tuple[tuple[TrustAnswer, str], ...] = (
    ("trust", "Trust and enable them (remembered for this folder)"),
    ("session", "Enable them until the bridge exits"),
    ("not_now", "Not now (they stay off; asked again next time)"),
    ("keep_off", "Keep them off (remembered; asked again only when they change)"),
)


@dataclass(frozen=True)
class TrustQuestion:
    """What a front end asks: may these items of the folder's own files take effect?"""

    folder: Path
    items: tuple[TrustItem, ...]
    changed: tuple[tuple[TrustItem, list[str]], ...] = ()  # items trusted before whose files have changed since
    hooks_sandboxed: bool = False  # the folder's hooks will run in the OS sandbox (bridge/permissions/hooks.py)

    @property
    def title(self) -> str:
        return f"Trust this folder's own settings? ({visible(str(self.folder))})"

    @property
    def text(self) -> str:
        if all(item.own for item in self.items):
            intro = (
                f"{visible(str(self.folder))} has files your own hooks would run. Until you trust them they stay off:"
            )
        else:
            intro = (
                f"{visible(str(self.folder))} has settings of its own that would widen what runs or what is "
                "allowed. Until you trust them they stay off (their deny and ask rules apply already):"
            )
        lines = [intro, ""]
        lines += [
            f"  • {one_line(item.describe(contained=self.hooks_sandboxed), MAX_SHOWN_CHARS)}" for item in self.items
        ]
        for item, files in self.changed:
            names = ", ".join(visible(name) for name in files)  # names the folder chose (attack round 17)
            lines.append(f"  ! {names} changed since you trusted `{one_line(item.text, 200)}`")
        if self.sandbox_line:
            lines += ["", self.sandbox_line]
        if self.own_line:
            lines += ["", self.own_line]
        lines += ["", "Trust them only if you trust where this folder came from."]
        return "\n".join(lines)

    @property
    def sandbox_line(self) -> str:
        """What the sandbox lets the folder's hooks do, when they will run in it; else empty."""
        if not (self.hooks_sandboxed and any(item.kind == "hook" and not item.own for item in self.items)):
            return ""
        return (
            "Its hooks run in the OS sandbox: they may write only this folder (never its settings or git's hooks), "
            "read nothing but this folder, your installed tools and the system's own folders (no keys, tokens, "
            "history, other projects or disks), get none of the secrets your settings give commands, reach no "
            "network the sandbox settings don't allow, and what they answer can refuse a call, never allow one."
        )

    @property
    def own_line(self) -> str:
        """What trusting a hook of the user's own that runs the folder's files means; else empty."""
        if not any(item.own for item in self.items):
            return ""
        return (
            "Your own hooks listed run files of this folder: trusted, they run them as your hooks run, outside the "
            "sandbox, with your permissions. A change to a file named here is asked about again."
        )

    def as_meta(self) -> dict[str, Any]:
        """The question as data for an editor that renders it (`_meta.trust`): all the text says, item by item,
        and as the text shows it: a hiding character escaped (a folder's hook with bidi controls in it read as a
        comment on the card while the text showed them; attack round 34)."""
        items = []
        for item in self.items:
            note = item.note(contained=self.hooks_sandboxed)
            items.append({**_shown(item.as_json()), **({"note": visible(note, keep_newlines=True)} if note else {})})
        meta: dict[str, Any] = {"folder": visible(str(self.folder)), "items": items}
        if self.changed:
            meta["changed"] = [
                {"text": visible(item.text, keep_newlines=True), "files": [visible(file) for file in files]}
                for item, files in self.changed
            ]
        if self.sandbox_line:
            meta["sandbox"] = self.sandbox_line
        if self.own_line:
            meta["own"] = self.own_line
        return meta


def _shown(item: dict[str, str]) -> dict[str, str]:
    """A trust item's fields as a person is shown them (the text keeps its line breaks)."""
    return {key: visible(value, keep_newlines=key == "text") for key, value in item.items()}


class TrustSource(Protocol):
    """What asking needs of the settings (a `SettingsStore`)."""

    trust: FolderTrust

    def pending_trust(self) -> list[TrustItem]: ...

    def inert_trust(self) -> list[TrustItem]: ...


Ask = Callable[[TrustQuestion], Awaitable[TrustAnswer | None]]
Tell = Callable[[str], None]


class TrustPrompt:
    """One session's side of folder trust: before each turn, ask once about items nobody answered yet (a pull
    may bring new ones mid-session), and say once what stays off and why."""

    def __init__(
        self,
        source: TrustSource,
        folder: Path,
        extra: Callable[[], list[TrustItem]] = list,
        hooks_sandboxed: Callable[[], bool] = lambda: False,
    ) -> None:
        """`extra`: the folder's widening items that are not in its settings files (a project skill's
        `allowed-tools`): asked and told with them. `hooks_sandboxed`: whether the folder's hooks will run in the
        OS sandbox (the question says so)."""
        self.source, self.folder, self.extra, self.hooks_sandboxed = source, folder, extra, hooks_sandboxed
        self._asked: set[TrustItem] = set()
        self._told: set[TrustItem] = set()

    def admits(self, item: TrustItem) -> bool:
        return self.source.trust.admits(item)

    def _pending(self) -> list[TrustItem]:
        trust = self.source.trust
        return self.source.pending_trust() + [i for i in self.extra() if not trust.admits(i) and not trust.declined(i)]

    def _inert(self) -> list[TrustItem]:
        return self.source.inert_trust() + [i for i in self.extra() if not self.source.trust.admits(i)]

    async def before_turn(self, ask: Ask | None, tell: Tell) -> list[TrustItem]:
        """Ask (or tell); returns the items admitted by this answer."""
        policy = self.source.trust.policy
        pending = [i for i in self._pending() if i not in self._asked]
        unshowable = [i for i in pending if not fits(i.describe(), MAX_SHOWN_CHARS)]
        unbindable = [i for i in pending if not self.source.trust.askable(i) and i not in unshowable]
        if unshowable or unbindable:  # what the user is asked is what runs: what can't be shown or pinned stays off
            self._asked.update(unshowable + unbindable)
            self._told.update(unshowable + unbindable)
            pending = [i for i in pending if i not in unshowable and i not in unbindable]
            for item in unshowable:
                tell(
                    f"This folder's own setting is too long to show in full ({len(item.describe()):,} characters), "
                    f"so it can't be trusted and stays off: {one_line(item.describe(), 200)}"
                )
            for item in unbindable:
                tell(f"This folder's own setting can't be trusted: {one_line(item.describe(), 2000)}")
        admitted: list[TrustItem] = []
        if pending and policy == "ask" and ask is not None:
            self._asked.update(pending)
            self._told.update(pending)  # the question said they stay off until trusted
            trust = self.source.trust
            changed = tuple((i, files) for i in pending if (files := trust.changed_files(i)))
            answer = await ask(TrustQuestion(self.folder, tuple(pending), changed, self.hooks_sandboxed()))
            problem = None
            if answer in ("trust", "session"):
                problem = self.source.trust.approve(pending, remember=answer == "trust")
                admitted = pending
            elif answer == "keep_off":
                problem = self.source.trust.decline(pending)
            if problem:
                tell(f"Folder trust: {problem}")
        inert = [i for i in self._inert() if i not in self._told]
        if inert:
            self._told.update(inert)
            tell(self._why_off(inert, policy, can_ask=ask is not None))
        return admitted

    def _why_off(self, items: list[TrustItem], policy: TrustPolicy, *, can_ask: bool) -> str:
        listed = "\n".join(f"  • {one_line(item.describe(), 2000)}" for item in items)  # off: a glimpse will do
        if policy == "restricted":
            return (
                f"Restricted Mode: this folder's own settings stay off:\n{listed}\n"
                "Trust the folder (in VS Code: Manage Workspace Trust) to be asked about them."
            )
        if not can_ask:
            return (
                f"This folder's own settings stay off until you trust them:\n{listed}\n"
                "To trust them, run in a terminal and answer the question, or pass --trust-folder "
                f"(CI: {TRUST_ENV}=1)."
            )
        return f"These settings of this folder stay off (as you answered):\n{listed}"
