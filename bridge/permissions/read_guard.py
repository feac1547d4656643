"""What the file tools may show of their results (Grep matches, Glob names), with the rules as they are now.

A result cannot be asked about one by one, so a path rule about reads that denies or asks for a result's path
(as found or resolved) hides it — rules without a path were judged on the call itself. So does a real path
outside the workspace and outside the call's scope (what the permission step allowed for it), unless an allow
rule names it or the mode is bypassPermissions. The bridge's own secrets (own_secrets.py) are never shown, whatever
the rules or the mode, nor are other names of their files (hard links), nor other names of the files a deny or ask
rule names. Called per result (thousands): plain
strings, no pathlib.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from bridge.permissions.linked_paths import file_key, linked_name
from bridge.permissions.matching import CallRules
from bridge.permissions.own_secrets import OwnSecrets

ReadGuard = Callable[[Path, Path | None], str | None]


def read_guard(
    rules: CallRules, roots: tuple[Path, ...], cwd: Path, *, bypass: bool, secrets: OwnSecrets | None = None
) -> ReadGuard:
    """`guard(path, scope)`: why `path` may not be shown, or None when it may (`rules`: any call's)."""
    own = secrets or OwnSecrets()
    patterns = [
        (r, r.path.regex, str(r.path.base).rstrip("/") + "/")
        for b in ("deny", "ask")
        for r in rules.about(b, "read")
        if r.path is not None
    ]
    shown_roots = [str(root) for root in roots]
    base = str(cwd)
    dirs: dict[str, str] = {}  # results share a few directories: resolve each once

    def real(written: str) -> str:
        head, name = os.path.split(written)
        resolved = dirs.get(head) or dirs.setdefault(head, os.path.realpath(head))
        full = os.path.join(resolved, name)
        return os.path.realpath(full) if os.path.islink(full) else full

    def under(path: str, root: str) -> bool:
        return path == root or path.startswith(root.rstrip("/") + "/")

    def check(path: Path, scope: Path | None) -> str | None:
        written = os.path.normpath(os.path.join(base, os.path.expanduser(os.fspath(path))))
        resolved = real(written)
        for either in (written, resolved):
            secret = own.of_path(Path(either))
            if secret is not None:
                return f"{written} is the bridge's own secret ({secret.what})"
        linked = own.linked(Path(resolved))
        if linked is not None:
            return f"{written} is the bridge's own secret ({linked}) under another name (a hard link)"
        for rule, pattern, prefix in patterns:
            # PathPattern.matches on strings: the part below the rule's base, matched by its regex
            if any(p.startswith(prefix) and pattern.match(p[len(prefix) :]) for p in (written, resolved)):
                return f"{written} is named by the {rule.behavior} rule {rule.text}"
        key = file_key(resolved) if patterns else None  # a file with one name is no other file's
        for rule, _, _ in patterns if key is not None else ():
            if rule.path is not None and (other := linked_name(rule.path, key)) is not None:
                return f"{written} is a hard link to {other}, which the {rule.behavior} rule {rule.text} names"
        if bypass or any(under(resolved, root) for root in shown_roots):
            return None
        if scope is not None:
            allowed = real(os.path.normpath(os.path.join(base, os.fspath(scope))))
            if under(resolved, allowed):
                return None
        if rules.allow_for_path(Path(resolved), "read") is not None:
            return None
        return f"{resolved} is outside the workspace"

    return check
