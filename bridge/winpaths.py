"""Windows paths where the bridge judges paths: drive letters, backslashes, Git Bash's `/c/...`, and Claude Code's
rule syntax for them. Pure string and PurePath logic (no file system), so it is tested here with
`PureWindowsPath` and `ntpath`, and every function takes the platform as an argument (default: this one's).

- Rules: Claude Code normalizes a Windows path to POSIX form before matching it against a rule: `C:\\Users\\alice`
  is `/c/Users/alice`. So `//c/**/.env` is every `.env` on drive C, `//**/.env` every `.env` on any drive; `~/`,
  `/project-relative` and `relative` patterns work as everywhere (`rule_base`, `rule_relative`). Matching ignores
  case there, as Windows' file systems do: a deny rule for `secrets/` holds for `SECRETS\\` too (`rule_regex`).
- Paths the model sends: after a Bash call it may write Git Bash's `/c/Users/alice/x.py` for `C:\\Users\\alice\\x.py`;
  `native_form` turns that into the path Windows knows, so containment judges the real file.
- Containment: a path is inside a root when its drive and every component match, ignoring case (`inside`).
"""

from __future__ import annotations

import ntpath
import re
import sys
from pathlib import PurePath, PurePosixPath, PureWindowsPath

_MSYS_DRIVE = re.compile(r"^/([A-Za-z])(?=/|$)")
_DRIVE = re.compile(r"^([A-Za-z]):[\\/]?")


def on_windows() -> bool:
    return sys.platform == "win32"


def posix_form(path: str) -> str:
    """The POSIX form rules match a Windows path in: `C:\\a\\b` → `/c/a/b`, `\\\\srv\\share\\x` → `//srv/share/x`."""
    text = path.replace("\\", "/")
    drive = _DRIVE.match(text)
    if drive is not None:
        return f"/{drive[1].lower()}/{text[drive.end() :]}".rstrip("/") or "/"
    return text


def native_form(path: str, *, windows: bool | None = None) -> str:
    """`path` as Windows takes it: Git Bash's `/c/x` is `C:\\x`, forward slashes become backslashes. Elsewhere (and for
    anything else) `path` unchanged."""
    if not (on_windows() if windows is None else windows):
        return path
    drive = _MSYS_DRIVE.match(path)
    if drive is not None:
        path = f"{drive[1].upper()}:\\{path[drive.end() :].lstrip('/')}"
    return ntpath.normpath(path) if path else path


def rule_base(rest: str, *, windows: bool | None = None) -> tuple[PurePath, str]:
    """The base and pattern of an absolute rule `//rest`. On Windows the first segment is the drive (`//c/src/**`:
    `C:\\`, `src/**`); a pattern that names no drive (`//**/.env`) is matched on every drive, from the bare root."""
    if not (on_windows() if windows is None else windows):
        return PurePosixPath("/"), rest
    head, _, tail = rest.partition("/")
    if len(head) == 1 and head.isalpha():
        return PureWindowsPath(f"{head.upper()}:\\"), tail
    return PureWindowsPath("\\"), rest


def rule_relative(path: PurePath, base: PurePath) -> str | None:
    """`path` below `base` as the `/`-separated text a rule's pattern is matched against; None when it is not below.
    Windows paths compare without case; a bare-root base (a drive-less `//` rule) takes every drive, the drive
    letter being the first segment (`/c/Users/alice` → `c/Users/alice`)."""
    if isinstance(base, PureWindowsPath) and not base.drive and str(base) == "\\":
        if not isinstance(path, PureWindowsPath) or not path.drive:
            return None
        return posix_form(str(path)).lstrip("/") or None
    try:
        relative = path.relative_to(base)
    except ValueError:
        return None
    text = relative.as_posix()
    return None if text == "." else text


def rule_regex(regex: re.Pattern[str], *, windows: bool | None = None) -> re.Pattern[str]:
    """A rule's pattern as it matches here: on Windows without case, as the file system names files."""
    if not (on_windows() if windows is None else windows):
        return regex
    return re.compile(regex.pattern, regex.flags | re.IGNORECASE)


def inside(path: str, root: str, *, windows: bool | None = None) -> bool:
    """`path` is `root` or below it (both absolute and normalized); on Windows without regard to case, separators or
    the drive letter's case."""
    if not (on_windows() if windows is None else windows):
        return path == root or path.startswith(root.rstrip("/") + "/")
    return PureWindowsPath(path).is_relative_to(PureWindowsPath(root))
