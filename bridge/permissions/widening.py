"""What a folder's own settings file says that widens what runs or what is allowed, as the `TrustItem`s a trust
question shows and `FolderTrust` remembers (bridge/permissions/trust.py). The settings store loads; this names.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridge.permissions.command_limits import ram_bytes, widening_limits
from bridge.permissions.named_files import UNBINDABLE, binding
from bridge.permissions.own_hooks import MAX_COMMAND_CHARS, own_runs_folder_code
from bridge.permissions.trust import TrustItem, TrustKind

if TYPE_CHECKING:
    from bridge.permissions.rules import Rule
    from bridge.permissions.settings import LoadedSettings

WIDENING_MODES = frozenset({"acceptEdits", "bypassPermissions"})
SANDBOX_OFF = "enabled: false (commands run without the OS sandbox)"
SANDBOX_NETWORK = 'network.allowedDomains: ["*"] (commands get the network)'
SANDBOX_UNIX_SOCKETS = (
    "network.allowAllUnixSockets: true (commands may connect to the host's Unix sockets: Docker, D-Bus, agents)"
)


def sandbox_allow_write(spec: str) -> str:
    return f"filesystem.allowWrite: {spec} (commands may write there)"


def sandbox_widening(raw: Any) -> list[str]:
    """The parts of a `sandbox` settings object that loosen it, as the texts a trust question shows (the sandbox
    policy asks `SettingsStore.admits_sandbox` with the same texts). Invalid parts are the policy's to report."""
    if not isinstance(raw, dict):
        return []
    out: list[str] = []
    if raw.get("enabled") is False:
        out.append(SANDBOX_OFF)
    network = raw.get("network")
    if (
        isinstance(network, dict)
        and isinstance(network.get("allowedDomains"), list)
        and "*" in network["allowedDomains"]
    ):
        out.append(SANDBOX_NETWORK)
    if isinstance(network, dict) and network.get("allowAllUnixSockets") is True:
        out.append(SANDBOX_UNIX_SOCKETS)
    filesystem = raw.get("filesystem")
    if isinstance(filesystem, dict) and isinstance(filesystem.get("allowWrite"), list):
        out += [sandbox_allow_write(spec) for spec in filesystem["allowWrite"] if isinstance(spec, str)]
    out += [text for _key, text in widening_limits(raw.get("limits"), ram=ram_bytes())]
    return out


def relative_text(path: Path, cwd: Path) -> str:
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return str(path)


def hook_text(event: str, matcher: str, command: str) -> str:
    return f"{event}{f' ({matcher})' if matcher not in ('', '*') else ''}: {command}"


def trust_item(loaded: LoadedSettings, cwd: Path, kind: TrustKind, text: str, binds: str = "") -> TrustItem:
    return TrustItem(relative_text(loaded.file.path, cwd), kind, text, binds)


def rule_binding(rule: Rule, cwd: Path) -> str:
    """What a folder's allow rule for one exact command runs of the workspace (`Bash(sh scripts/deploy.sh)`), as
    its trust item's binding: trusting the rule is trusting that script as it is, and a pull that changes it asks
    again. A rule that matches many commands (`Bash(npm run test:*)`) or whose files can't be bound is trusted
    as its text alone: it names no one script to bind, and the command it lets run still runs in the sandbox."""
    if rule.tool != "Bash" or not rule.specifier or "*" in rule.specifier:
        return ""
    bound = binding(rule.specifier, cwd)
    return "" if bound.startswith(UNBINDABLE) else bound


def hook_item(loaded: LoadedSettings, cwd: Path, event: str, matcher: str, command: str) -> TrustItem:
    """A hook's item: its text, and the workspace files its command runs as they are now (a pulled change to
    the script is another item, asked about again)."""
    return trust_item(loaded, cwd, "hook", hook_text(event, matcher, command), binding(command, cwd))


def own_hook_item(loaded: LoadedSettings, cwd: Path, event: str, matcher: str, command: str) -> TrustItem | None:
    """A hook of the user's own (their settings, an installed plugin's) that runs this folder's files: the item
    it waits for, as the folder's own hooks do; None when it runs nothing of the folder's."""
    if len(command) > MAX_COMMAND_CHARS:  # (read at every event: a long one is not read, and waits for trust)
        binds = f"{UNBINDABLE}the command is over {MAX_COMMAND_CHARS // 1024} KiB, too long to read for what it runs"
    else:
        binds = binding(command, cwd)
        if not own_runs_folder_code(command, cwd, binds):
            return None
    return TrustItem(relative_text(loaded.file.path, cwd), "hook", hook_text(event, matcher, command), binds, own=True)


def own_hook_items(loaded: LoadedSettings, cwd: Path) -> list[TrustItem]:
    found = (
        own_hook_item(loaded, cwd, event, m.matcher, h.command)
        for event, matchers in loaded.hooks.items()
        for m in matchers
        for h in m.hooks
    )
    return list(dict.fromkeys(item for item in found if item is not None))


def directory_item(written: str, joined: Path) -> tuple[str, Path]:
    """An additional directory as its trust item's text and the real path it is now: the text is what was written
    when no symlink is on its way, else `written → real`. The item binds the resolution: a link swapped in later
    (after a pull) makes another text, which no answer admitted yet."""
    real = Path(os.path.realpath(joined))
    return (written if real == Path(os.path.normpath(joined)) else f"{written} → {real}"), real


def too_wide(real: Path, kept: Sequence[tuple[Path, str]]) -> str | None:
    """Why the real directory `real` may not join the workspace from a folder's file: it is a file system's root,
    or it holds one of `kept` (the home directory, the bridge's own config and data): all the user keeps would
    be the folder's to read and, through the sandbox's writable roots, to write."""
    if real == Path(real.anchor):
        return "it is the root of the file system"
    for path, what in kept:
        if path == real or path.is_relative_to(real):
            return f"it holds {what} ({path})"
    return None


def folder_directories(loaded: LoadedSettings, kept: Sequence[tuple[Path, str]]) -> list[tuple[str, Path, str | None]]:
    """Each additional directory of `loaded` resolved now: (its item text, its real path, why it is refused from
    a folder's own file or None)."""
    out: list[tuple[str, Path, str | None]] = []
    for written, joined in loaded.additional_directories:
        text, real = directory_item(written, joined)
        out.append((text, real, too_wide(real, kept) if loaded.file.project else None))
    return out


def widening_items(loaded: LoadedSettings, cwd: Path, kept: Sequence[tuple[Path, str]] = ()) -> list[TrustItem]:
    """What a folder's own file says that widens what runs or what is allowed (sandbox keys: see sandbox_policy).
    Additional directories as they resolve now, those `too_wide` left out (never offered)."""
    if not loaded.file.project:
        return own_hook_items(loaded, cwd)  # the user's own file: only its hooks that run the folder's files
    rules = [
        trust_item(loaded, cwd, "allow", r.text, rule_binding(r, cwd))
        for behavior, r in loaded.rules
        if behavior == "allow"
    ]
    texts: list[tuple[TrustKind, str]] = []
    if loaded.default_mode in WIDENING_MODES:
        texts.append(("defaultMode", loaded.default_mode))
    texts += [("additionalDirectories", text) for text, _, why in folder_directories(loaded, kept) if why is None]
    hooks = [
        hook_item(loaded, cwd, event, m.matcher, h.command)
        for event, matchers in loaded.hooks.items()
        for m in matchers
        for h in m.hooks
    ]
    rest: list[tuple[TrustKind, str]] = [("env", f"{k}={v}") for k, v in loaded.env.items()]
    rest += [("passEnv", name) for name in loaded.pass_env]
    rest += [("sandbox", text) for text in loaded.sandbox_widening]
    items = [
        *rules,
        *(trust_item(loaded, cwd, kind, text) for kind, text in texts),
        *hooks,
        *(trust_item(loaded, cwd, kind, text) for kind, text in rest),
    ]
    return list(dict.fromkeys(items))
