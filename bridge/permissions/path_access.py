"""A path a call reads or writes, as named and as it really is, and whether a path rule speaks about it.

Rules are matched against both forms (`PathAccess.written`: `~` and `..` folded, links not followed; `real`: links
resolved), and against the other names of the file (hard links), so neither a symlink, a hard link nor a detour
through `..` walks past a deny rule.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bridge.permissions.containment import normalize, resolve
from bridge.permissions.linked_paths import file_key, linked_name
from bridge.permissions.rules import CompiledRule

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class PathAccess:
    written: Path  # normalized, symlinks not followed
    real: Path  # resolved
    named: str = ""  # as the call names it
    base: Path | None = None  # what `named` is relative to

    @classmethod
    def of(cls, path: str | Path, base: Path) -> PathAccess:
        return cls(normalize(path, base), resolve(path, base), str(path), base)

    def differs(self) -> bool:
        """Whether the path leads somewhere its name doesn't say: through a symlink, `..` or `~` (a relative
        name, `./` and doubled slashes say where they lead)."""
        if not self.named or self.base is None:
            return False
        plain = os.path.join(str(self.base), self.named)
        plain = re.sub(r"/(\./)+", "/", re.sub(r"/+", "/", plain + "/")).rstrip("/") or "/"
        return plain != str(self.real)


def path_hit(rule: CompiledRule, access: PathAccess) -> bool:
    """Whether the (deny or ask) path rule names the access: as written, as resolved, or as another name of a file
    it names (a hard link, linked_paths.py)."""
    if rule.matches_path(access.real) or rule.matches_path(access.written):
        return True
    return rule.path is not None and linked_name(rule.path, file_key(access.real)) is not None


def may_hold(rule: CompiledRule, root: PathAccess) -> bool:
    """Whether a path below `root` could match the rule: the rule's fixed directory and `root` are on one
    branch (a slash-free pattern like `.env` matches at any depth below its base)."""
    pattern = rule.path
    if pattern is None:
        return False
    fixed = pattern.base
    if "/" in pattern.pattern.strip("/"):
        for component in pattern.pattern.split("/"):
            if _GLOB_CHARS.search(component) or not component:
                break
            fixed = fixed / component
    for candidate in (root.real, root.written):
        if candidate == fixed or fixed.is_relative_to(candidate) or candidate.is_relative_to(fixed):
            return True
    return False
