"""Glob: files whose path matches a glob, newest first.

ripgrep lists the files (`rg --files`: `.gitignore` respected, hidden files included except VCS
directories) and the pattern is matched by wcmatch against the path relative to the search root with
shell semantics: `*.py` is the root's own files, `**/*.py` any depth, `{a,b}` alternatives. (rg's own
`--glob` would also list files that .gitignore lists, and matches `*.py` at any depth.) The literal
leading directories of the pattern narrow the listing; an absolute pattern is split the same way.
Paths are shown relative to the session's cwd when under it, else absolute — as Grep does.

An absolute pattern (`/etc/*`) or one with `..` (`../*`) is resolved before anything is listed: its literal
directory is what the permission step judges (outside the workspace, it asks). Every listed file is checked
too, as Grep's results are: a name a Read deny or ask rule covers, or whose real path leaves the workspace and
the searched directory, is left out and counted. rg does not follow symlinks.

What is listed is what was checked: rg walks by name, and a directory flipped to a link while it walks would
list another place's names. So rg starts in the judged real directory, held open (`/proc/self/fd/N`), and
each name it lists is looked at again under that directory following no link (`bridge.safefs`): a name that
is not a regular file there now (a link appeared on its way, or it is gone) is left out — silently for the
model (a count would tell it how many names a flipped link showed rg); the editor sees `rawOutput.changed`.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.lowlevel
from pydantic import Field

from bridge import safefs
from bridge.permissions.facts import RuleForm
from bridge.tools.base import Location, ReadGuard, Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import opened_path, path_problem, read_guard_of
from bridge.tools.ripgrep import (
    VCS_EXCLUDES,
    argument_problem,
    display_path,
    hidden_note,
    rg_error,
    root_location,
    run_rg,
    search_root,
)

MAX_RESULTS = 100
MAX_LISTED = 500_000
_MAGIC = set("*?[]{}!()@+")


class GlobInput(ToolInput):
    pattern: str = Field(description='Glob, e.g. "**/*.py" or "src/**/*.{ts,tsx}"')
    path: str | None = Field(default=None, description="Directory to search (default: cwd)")


def split_pattern(pattern: str, root: Path) -> tuple[Path, str]:
    """Move the pattern's literal leading directories into the root: (`src/**/*.ts`, /r) -> (/r/src, `**/*.ts`)."""
    expanded = os.path.expanduser(pattern)
    if os.path.isabs(expanded):
        root, expanded = Path("/"), expanded.lstrip("/")
    parts = expanded.removeprefix("./").split("/")
    literal: list[str] = []
    while len(parts) > 1 and not (_MAGIC & set(parts[0])):
        literal.append(parts.pop(0))
    base = Path(os.path.normpath(root.joinpath(*literal))) if literal else root
    return base, "/".join(parts)


class GlobTool(Tool[GlobInput]):
    name = "Glob"
    input_model = GlobInput
    description = (
        'Find files by name pattern: "**/*.py" (any depth), "*.md" (top level of path), "src/**/*.{ts,tsx}". '
        f"Respects .gitignore; hidden files are included. Returns at most {MAX_RESULTS} paths, most recently "
        "modified first, relative to the working directory; narrow the pattern or path when capped. Use Grep "
        "to search file contents."
    )
    search_hint = "find files by name pattern wildcard list"
    kind = "search"
    interrupt_behavior = "cancel"
    max_result_chars = 30_000
    rule_form = RuleForm("path", "read")

    def is_read_only(self, data: GlobInput) -> bool:
        return True

    async def validate_input(self, data: GlobInput, ctx: ToolContext) -> str | None:
        if not data.pattern.strip():
            return "pattern is empty; give a glob such as **/*.py."
        return self._input_problem(data)

    async def validate_target(self, data: GlobInput, ctx: ToolContext) -> str | None:
        root = search_root(data.path, ctx.cwd)
        if not await anyio.to_thread.run_sync(_is_dir, root, ctx):
            return f"Directory does not exist: {root} (cwd is {ctx.cwd})."
        return None

    @staticmethod
    def _input_problem(data: GlobInput) -> str | None:
        if (problem := argument_problem(data.pattern, "pattern")) is not None:
            return problem
        if data.path is not None and (problem := path_problem(data.path, field="path")) is not None:
            return problem
        literal, _ = split_pattern(data.pattern, Path("/"))
        return path_problem(str(literal), field="pattern")

    def permission_paths(self, data: GlobInput, ctx: ToolContext) -> list[tuple[Path, Literal["read", "write"]]]:
        """The directory actually listed: the search root with the pattern's literal directories (an absolute
        pattern or `..` resolved), so `../*` and `/etc/*` are judged as reads of `..` and `/etc`."""
        if self._input_problem(data) is not None:
            return []  # validate_input has told the model
        base, _ = split_pattern(data.pattern, search_root(data.path, ctx.cwd))
        return [(base, "read")]

    def locations(self, data: GlobInput) -> list[Location]:
        return root_location(data.path)

    def user_facing_title(self, data: GlobInput) -> str:
        return f"Glob {data.pattern}" + (f" in {data.path}" if data.path else "")

    async def call(self, data: GlobInput, ctx: ToolContext) -> ToolResult:
        base, pattern = split_pattern(data.pattern, search_root(data.path, ctx.cwd))
        try:
            held = await anyio.to_thread.run_sync(_hold, base, ctx)
        except OSError:
            return ToolResult("No files found", raw_output={"count": 0})
        args = ["--no-config", "--no-follow", "--null", "--files", "--hidden"]
        for exclude in VCS_EXCLUDES:
            args += ["--glob", exclude]
        # rg runs in `base` (as held open), so it prints paths relative to it: what the pattern is matched against.
        try:
            # The portable back end (Windows: no descriptor handed to a child, a held directory has no fd) starts
            # rg by the real path: what it lists is only shown when found again under the held directory, below.
            by_fd = sys.platform.startswith("linux") and held.fd >= 0 and safefs.backend() != "portable"
            where = Path(f"/proc/self/fd/{held.fd}") if by_fd else Path(held.real)
            passed = (held.fd,) if held.fd >= 0 and safefs.backend() != "portable" else ()
            run = await run_rg(
                args, where, max_lines=MAX_LISTED, separator=b"\0", pass_fds=passed, ours=(Path(held.real), ctx.cwd)
            )
            if run.failed:
                raise rg_error(run)
            guard = read_guard_of(ctx)
            try:
                matched, hidden, changed = await anyio.to_thread.run_sync(
                    _match_and_sort, run.lines, base, held, pattern, guard, lambda: ctx.abort.aborted
                )
            except _Stopped:  # the abort cancelled this call's scope too (the executor's): it ends here
                await anyio.lowlevel.checkpoint()
                raise ToolError("Glob was cancelled") from None
        finally:
            held.close()
        note = "\n\n" + hidden_note(hidden, "Glob") if hidden else ""  # the changed count is not the model's:
        # what rg listed through a flipped link would show in it
        if not matched:
            return ToolResult("No files found" + note, raw_output={"count": 0, "hidden": hidden, "changed": changed})
        shown = [display_path(Path(path), ctx.cwd) for path in matched[:MAX_RESULTS]]
        text = "\n".join(shown)
        if len(matched) > MAX_RESULTS or not run.complete:
            total = f"{len(matched)}" if run.complete else f"more than {len(matched)}"
            text += (
                f"\n\n[Showing the {MAX_RESULTS} most recently modified of {total} matching files; "
                "narrow the pattern or path to see the others.]"
            )
        raw = {"count": len(matched), "shown": len(shown), "hidden": hidden, "changed": changed}
        return ToolResult(text + note, raw_output=raw)


def _is_dir(root: Path, ctx: ToolContext) -> bool:
    try:
        return stat.S_ISDIR(safefs.stat_exact(opened_path(root, ctx)).st_mode)
    except (OSError, ToolError):
        return False


def _hold(base: Path, ctx: ToolContext) -> safefs.Beneath:
    """The judged real directory, opened exactly (OSError: it is not a directory there now)."""
    try:
        return safefs.Beneath(opened_path(base, ctx))
    except ToolError as error:
        raise NotADirectoryError(str(error)) from None


class _Stopped(Exception):
    """The turn's cancel stopped the matching (on its worker thread)."""


def _match_and_sort(
    listed: list[str],
    base: Path,
    held: safefs.Beneath,
    pattern: str,
    guard: ReadGuard,
    stopped: Callable[[], bool] = lambda: False,
) -> tuple[list[str], int, int]:
    """Absolute paths (as named: under `base`) of the listed files that match `pattern`, that the guard lets
    through and that are regular files under the held directory now (looked at following no link), newest
    first; how many matches the guard hid; how many changed since rg listed them. `stopped` (the turn's abort,
    read from this worker thread) and the MATCH_SECONDS deadline are looked at before every alternative of every
    name matched: a cancel is not held by the matching, nor the deadline passed by much.

    Plain strings and one `fstatat` per match: pathlib per listed line cost 5x the matching itself.
    """
    matcher = _matcher(pattern)
    prefix = str(base).rstrip("/") + "/"
    real_prefix = held.real.rstrip("/") + "/"
    scope = Path(held.real)
    suffix = _literal_suffix(pattern)
    found: list[tuple[float, str]] = []
    hidden = changed = 0
    deadline = time.monotonic() + MATCH_SECONDS

    def check() -> None:
        if stopped():
            raise _Stopped
        if time.monotonic() > deadline:
            raise ToolError(
                f"Matching {pattern!r} against the {len(listed):,} files listed took over {MATCH_SECONDS:.0f} s; "
                "narrow the pattern or the path."
            )

    for line in listed:
        relative = line.removeprefix("./")
        if not relative or not relative.endswith(suffix) or not matcher.match(relative, check):
            continue
        path, real = prefix + relative, real_prefix + relative
        try:
            if guard(Path(real), scope) is not None or (path != real and guard(Path(path), scope) is not None):
                hidden += 1
                continue
        except OSError:  # the guard resolves names too: one changing under it is a name that changed
            changed += 1
            continue
        try:
            st = held.lstat(relative)
        except (OSError, ValueError):
            changed += 1
            continue
        if not stat.S_ISREG(st.st_mode):
            changed += 1
            continue
        found.append((st.st_mtime, path))
    found.sort(key=lambda item: (-item[0], item[1]))
    return [path for _, path in found], hidden, changed


MAX_ALTERNATIVES = 64
"""The most patterns a `{a,b}` pattern may expand to: each is matched against every listed name."""
MAX_SEGMENTS = 64
"""The most `/`-separated parts a pattern may have: a segment-at-a-time match costs parts x the name's parts."""
MATCH_SECONDS = 30.0
"""How long matching the listed names may take in all (a turn's cancel stops it sooner)."""


def glob_segments(pattern: str) -> list[str]:
    """`pattern`'s `/`-separated parts as wcmatch's glob reads them: a backslash escapes the next character, and
    an escaped `/` separates as a plain one does (attack round 16: `**\\/a/**\\/…` was counted as no `**` at all,
    and went to the regex that backtracks); empty parts dropped."""
    parts: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            if following == "/":
                parts.append("".join(current))
                current = []
            else:
                current.append(char + following)
            index += 2
            continue
        if char == "/":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return [part for part in parts if part]


_GLOBSTAR = object()  # a `**` segment
_ANY = object()  # a segment that is anything (the one a trailing `**` needs at least)


class SegmentMatcher:
    """A glob with shell semantics (`**`, `{a,b}`, dot files matched), never in more than polynomial time of low
    degree. wcmatch's whole-path regex gives each `**` a lazy repetition of its own: n^k for k of them (attack
    round 15: `**/a/**/a/**/a/**/a/z` against 500 nested `a` folders held the GIL for minutes, deaf to cancel and
    SIGTERM), and its extglob groups are exponential (round 14: not taken at all). So a pattern with two `**` or
    more is matched a segment at a time: `**` by walking the path's segments (a set of places in the pattern, at
    most as many as it has segments), every other segment by wcmatch's one-segment regex (a `*` there is an
    atomic group: linear): segments x segments tries at most. With one `**` at most, wcmatch's regex is linear
    and 3-5x faster on a big listing: it is used. Braces expand first (at most MAX_ALTERNATIVES patterns);
    tests/test_tool_glob.py holds the two equal to wcmatch's own matching."""

    def __init__(self, pattern: str) -> None:
        import bracex
        from wcmatch import fnmatch as wcfnmatch  # on the first Glob (~3 ms: no session's start waits for it)
        from wcmatch import glob as wcglob

        compiled: dict[str, Any] = {}

        def segment(text: str) -> Any:
            if text not in compiled:
                compiled[text] = wcfnmatch.compile([text], flags=wcfnmatch.DOTMATCH)
            return compiled[text]

        self.patterns: list[list[Any]] = []
        self.regexes: list[Any] = []  # patterns with one `**` at most: wcmatch's whole-path regex (linear), faster
        for expanded in bracex.expand(pattern, keep_escapes=True, limit=MAX_ALTERNATIVES):
            if expanded.endswith("/") and not expanded.endswith("\\/"):
                continue  # a folder: never one of the files listed
            parts = glob_segments(expanded)
            if not parts:
                continue
            if len(parts) > MAX_SEGMENTS:
                raise ValueError(f"more than {MAX_SEGMENTS} parts between slashes")
            if parts.count("**") <= 1:  # (wcmatch is given the very parts counted here)
                self.regexes.append(wcglob.compile(["/".join(parts)], flags=wcglob.GLOBSTAR | wcglob.DOTGLOB))
                continue
            items = [_GLOBSTAR if part == "**" else segment(part) for part in parts]
            if items[-1] is _GLOBSTAR:  # `a/**`: what is in a, at any depth (not `a` itself)
                items[-1:] = [_ANY, _GLOBSTAR]
            self.patterns.append(items)

    def match(self, path: str, check: Callable[[], None] = lambda: None) -> bool:
        """Whether `path` matches; `check` is called before each alternative (it raises to stop: one name against
        64 alternatives of 63 parts may take most of a second)."""
        for regex in self.regexes:
            check()
            if regex.match(path):
                return True
        if not self.patterns:
            return False
        segments = [part for part in path.split("/") if part]
        for pattern in self.patterns:
            check()
            if _matches(pattern, segments):
                return True
        return False


def _matches(pattern: list[Any], segments: list[str]) -> bool:
    end = len(pattern)

    def closed(places: set[int]) -> set[int]:  # a `**` may match no segment at all
        out = set(places)
        for place in sorted(places):
            while place < end and pattern[place] is _GLOBSTAR:
                place += 1
                out.add(place)
        return out

    places = closed({0})
    for part in segments:
        after: set[int] = set()
        for place in places:
            if place == end:
                continue
            item = pattern[place]
            if item is _GLOBSTAR:
                after.add(place)
            elif item is _ANY or item.match(part):
                after.add(place + 1)
        if not after:
            return False
        places = closed(after)
    return end in places


def _matcher(pattern: str) -> SegmentMatcher:
    try:
        return SegmentMatcher(pattern)
    except Exception as error:  # ValueError, bracex's ExpansionLimitException (not a ValueError)
        raise ToolError(f"Invalid glob pattern {pattern!r}: {error}") from None


def _literal_suffix(pattern: str) -> str:
    """What every match ends with, when the last segment is stars then a literal (`*.py` -> `.py`), else ''.

    A cheap `endswith` then spares the translated regex (the slow part) most of the listed files.
    """
    last = pattern.rsplit("/", 1)[-1]
    tail = last.lstrip("*")
    return tail if tail != last and not (_MAGIC & set(tail)) else ""
