"""What bash makes of the path words of a command, done as bash does it but bounded: pathname expansion
(globs) against the file system, and the names in a checksum list (`sha256sum -c LIST` reads every file the
list names). Past a bound the answer is "can't be listed", and the command asks.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

MAX_GLOB_MATCHES = 1_000
MAX_SCAN_ENTRIES = 20_000  # directory entries one decision may look at (globs and recursive checks together)
_GLOB_CHARS = re.compile(r"[*?\[]")


class Budget:
    """Directory entries one decision may still look at (globs and recursive checks together)."""

    def __init__(self) -> None:
        self.entries = MAX_SCAN_ENTRIES

    def spend(self, n: int = 1) -> bool:
        self.entries -= n
        return self.entries >= 0


_TAGGED = re.compile(r"[A-Za-z0-9_-]+ ?\((.*)\) ?= ?[0-9a-fA-F]+")
_UNTAGGED = re.compile(r"[0-9a-fA-F]+[ \t](.*)")


def checksum_names(line: str) -> list[str] | None:
    """The file a checksum line names, in every way a `*sum -c` may read it (GNU is lenient: leading blanks,
    one or two separators, `*`, a `\\` marking escapes, a CR at the end, the BSD `ALGO (name) = hash` form).
    [] for a blank or comment line; None for a line this can't read (the command asks)."""
    text = line.lstrip(" \t").removesuffix("\r")
    if not text or text.startswith("#"):
        return []
    escaped = text.startswith("\\")
    if escaped:
        text = text[1:]
    match = _TAGGED.fullmatch(text) or _UNTAGGED.fullmatch(text)
    if match is None:
        return None
    rest = match.group(1)
    names = [rest, rest.lstrip(" \t*"), rest[1:] if rest[:1] in (" ", "*", "\t") else rest]
    if escaped:
        names += [n.replace("\\\\", "\0").replace("\\n", "\n").replace("\\r", "\r").replace("\0", "\\") for n in names]
    return [n for n in dict.fromkeys(names) if n]


def expand_glob(pattern: str, base: Path, budget: Budget) -> list[str] | None:
    """Bash's pathname expansion of `pattern` (quoted characters escaped as `[c]`), relative to `base`.
    None when it can't be done faithfully or in bounds (bash classes like `[[:alpha:]]`, too many matches)."""
    if "[[:" in pattern or "[=" in pattern or "[." in pattern.replace("[.]", ""):
        return None
    absolute = pattern.startswith("/")
    current: list[tuple[str, Path]] = [("/" if absolute else "", Path("/") if absolute else base)]
    components = pattern.split("/")
    for index, component in enumerate(components):
        if not component:
            continue
        last = index == len(components) - 1
        if not _GLOB_CHARS.search(component.replace("[*]", "").replace("[?]", "").replace("[[]", "")):
            literal = re.sub(r"\[(.)\]", r"\1", component)
            current = [(_join(text, literal), path / literal) for text, path in current]
            continue
        translated = re.sub(r"\[\^", "[!", component)
        dotted = component.startswith((".", "["))
        matched: list[tuple[str, Path]] = []
        for text, path in current:
            try:
                names = os.listdir(path)
            except OSError:
                continue
            if not budget.spend(len(names)):
                return None
            if dotted:
                names += [".", ".."]
            for name in names:
                if name.startswith(".") and not dotted:
                    continue
                if fnmatch.fnmatchcase(name, translated):
                    if not last and not (path / name).is_dir():
                        continue
                    matched.append((_join(text, name), path / name))
                    if len(matched) > MAX_GLOB_MATCHES:
                        return None
        current = matched
    return sorted(text for text, path in current if os.path.lexists(path))


def _join(text: str, name: str) -> str:
    if not text:
        return name
    return text + name if text.endswith("/") else f"{text}/{name}"
