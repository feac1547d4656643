"""Grep: ripgrep with Claude Code's fields.

Choices (so the model and the tests know what to expect):
- Paths in the output are relative to the session's cwd when under it (shorter prompts), else absolute.
- `.gitignore` is respected (rg's default); hidden files are searched (`--hidden`, as Claude Code does)
  except VCS directories. As in rg, an explicit `glob` also matches files that `.gitignore` lists (ignored
  directories are still skipped).
- `files_with_matches` lists newest first (mtime); `content` and `count` are sorted by path, so paging
  with `offset` is stable. `head_limit` defaults to 250 entries (lines in content mode); 0 means no limit,
  still bounded by `MAX_CONTENT_CHARS` and the scan caps. Every cut says what was cut and how to page.
- rg runs as a subprocess killed on cancellation; reading stops (and rg is killed) once enough is read.
- Every result path is checked, not only the search root: a file that a Read deny or ask rule names, or whose
  real path leaves the workspace and the search root, is left out (and counted in a note). rg never follows
  symlinks (`--no-follow`; `--no-config` keeps a config file from turning it on). rg prints each path
  followed by a NUL (`--null`), so any file name is parsed exactly.
- What is shown is what was checked. rg opens files by name, and a sandboxed command may flip a name to a
  link between rg's look at the directory and its open (rg then searches the link's target). So rg's first
  pass only names the files; each of them is then opened exactly under the judged real search root
  (`bridge.safefs`: no link followed), checked by the guard on that real path, and searched again by a second
  rg reading those open files (`/proc/self/fd/N`; on the portable back end, Windows', copies made through those
  open files in a private temp directory: no descriptor can be handed to rg there). Only the second pass's lines,
  counts and names are shown; a file that changed in between is left out silently: the model is not told how
  many (what the first pass saw through a link would show in that count, a bit at a time). The editor sees it
  in `rawOutput.changed`.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
from pydantic import Field

from bridge import safefs
from bridge.permissions.facts import RuleForm
from bridge.tools.base import Location, ReadGuard, Tool, ToolContext, ToolError, ToolInput, ToolResult
from bridge.tools.paths import opened_path, path_problem, read_error, read_guard_of
from bridge.tools.ripgrep import (
    MAX_LINE_COLUMNS,
    MAX_SCAN_LINES,
    VCS_EXCLUDES,
    argument_problem,
    hidden_note,
    rg_error,
    root_args,
    root_location,
    run_rg,
    search_root,
    shown_errors,
    split_globs,
)

DEFAULT_HEAD_LIMIT = 250
MAX_CONTENT_CHARS = 30_000


class GrepInput(ToolInput):
    pattern: str = Field(description="Regex to search for (ripgrep/Rust syntax)")
    path: str | None = Field(default=None, description="File or directory to search (default: cwd)")
    glob: str | None = Field(default=None, description='Only files matching, e.g. "*.js" or "*.{ts,tsx}"')
    type: str | None = Field(default=None, description="ripgrep file type, e.g. py, js, rust")
    output_mode: Literal["content", "files_with_matches", "count"] | None = Field(
        default=None, description="files_with_matches (default), content (matching lines), count"
    )
    after: int | None = Field(default=None, ge=0, alias="-A", description="Lines after each match (content)")
    before: int | None = Field(default=None, ge=0, alias="-B", description="Lines before each match (content)")
    around: int | None = Field(default=None, ge=0, alias="-C", description="Lines around each match (content)")
    context: int | None = Field(default=None, ge=0, description="Same as -C")
    line_numbers: bool | None = Field(default=None, alias="-n", description="Line numbers (content; default true)")
    case_insensitive: bool | None = Field(default=None, alias="-i", description="Ignore case")
    only_matching: bool | None = Field(default=None, alias="-o", description="Only the matched parts (content)")
    head_limit: int | None = Field(default=None, ge=0, description="Max entries/lines (default 250; 0: no limit)")
    offset: int | None = Field(default=None, ge=0, description="Skip this many entries/lines first")
    multiline: bool | None = Field(default=None, description="Let . and patterns span lines")


def build_args(data: GrepInput, root: Path, cwd: Path) -> list[str]:
    mode = data.output_mode or "files_with_matches"
    args = ["--no-config", "--no-follow", "--null", "--color", "never", "--hidden"]
    args += ["--max-columns", str(MAX_LINE_COLUMNS), "--max-columns-preview"]
    for exclude in VCS_EXCLUDES:
        args += ["--glob", exclude]
    if data.case_insensitive:
        args.append("--ignore-case")
    if data.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if data.type:
        args += ["--type", data.type]
    for pattern in split_globs(data.glob or ""):
        args += ["--glob", pattern]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args += ["--count", "--with-filename", "--sort", "path"]
    else:
        # Always numbered: the number's separator (`:` match, `-` context) is how lines are told apart.
        args += ["--with-filename", "--no-heading", "--sort", "path", "--line-number"]
        args += _line_args(data)
    args += ["--regexp", data.pattern]
    return args + root_args(root, cwd)


def _line_args(data: GrepInput) -> list[str]:
    """Content mode's options for which lines are shown: only the matches, and the context around them."""
    args = ["--only-matching"] if data.only_matching else []
    around = data.context if data.context is not None else data.around
    if around is not None:
        args += ["--context", str(around)]
    if data.after is not None:
        args += ["--after-context", str(data.after)]
    if data.before is not None:
        args += ["--before-context", str(data.before)]
    return args


class GrepTool(Tool[GrepInput]):
    name = "Grep"
    input_model = GrepInput
    description = (
        "Search file contents with ripgrep (Rust regex; escape literal braces: `interface\\{\\}`). Respects "
        ".gitignore; hidden files are included. output_mode: files_with_matches (default; newest first), "
        "content (matching lines as path:line:text, with -A/-B/-C context, -n, -o), or count. Filter with glob "
        "or type. Results are capped at head_limit (default 250; page with offset). multiline lets a match "
        "span lines. Paths are relative to the working directory. Use this instead of grep/rg in Bash."
    )
    search_hint = "search code regex find text in files ripgrep"
    kind = "search"
    interrupt_behavior = "cancel"
    max_result_chars = 40_000
    rule_form = RuleForm("path", "read")

    def is_read_only(self, data: GrepInput) -> bool:
        return True

    async def validate_input(self, data: GrepInput, ctx: ToolContext) -> str | None:
        if not data.pattern:
            return "pattern is empty; give a regex to search for."
        for name, value in (("pattern", data.pattern), ("glob", data.glob), ("type", data.type)):
            if (problem := argument_problem(value, name)) is not None:
                return problem
        if data.path is not None and (problem := path_problem(data.path, field="path")) is not None:
            return problem
        return None

    async def validate_target(self, data: GrepInput, ctx: ToolContext) -> str | None:
        root = search_root(data.path, ctx.cwd)
        return await anyio.to_thread.run_sync(_root_problem, root, ctx)

    def permission_paths(self, data: GrepInput, ctx: ToolContext) -> list[tuple[Path, Literal["read", "write"]]]:
        if data.path is not None and path_problem(data.path, field="path") is not None:
            return []  # validate_input has told the model
        return [(search_root(data.path, ctx.cwd), "read")]

    def locations(self, data: GrepInput) -> list[Location]:
        return root_location(data.path)

    def user_facing_title(self, data: GrepInput) -> str:
        where = f" in {data.path}" if data.path else ""
        scope = "".join(f" ({x})" for x in (data.glob, data.type) if x)
        return f'Grep "{data.pattern}"{where}{scope}'

    async def call(self, data: GrepInput, ctx: ToolContext) -> ToolResult:
        root = search_root(data.path, ctx.cwd)
        real_root = await anyio.to_thread.run_sync(opened_path, root, ctx)
        mode = data.output_mode or "files_with_matches"
        skip = data.offset or 0
        limit = DEFAULT_HEAD_LIMIT if data.head_limit is None else data.head_limit
        want = MAX_SCAN_LINES if mode != "content" or limit == 0 else skip + limit
        separator = b"\0" if mode == "files_with_matches" else b"\n"
        args = build_args(data, root, ctx.cwd)
        run = await run_rg(
            args, ctx.cwd, max_lines=min(want, MAX_SCAN_LINES), separator=separator, ours=(Path(real_root),)
        )
        if run.failed:
            raise rg_error(run)
        numbered = data.line_numbers is not False
        checked = await confirmed(run.lines, data, root, real_root, ctx, read_guard_of(ctx))
        lines = _shown_lines(checked.lines, mode, numbered)
        hidden = checked.hidden
        note = "\n\n" + hidden_note(hidden, "Grep") if hidden else ""
        if not lines:
            raw_none: dict[str, object] = {"matches": 0, "hidden": hidden}
            if checked.changed:
                raw_none["changed"] = checked.changed
            return ToolResult("No matches found" + note, raw_output=raw_none)
        if mode == "files_with_matches":
            lines = sorted(lines, key=lambda p: (-checked.mtimes.get(p, 0.0), p))
        text, shown = _page(lines, mode, skip, limit, complete=run.complete)
        if run.returncode == 2:
            first = shown_errors(run.stderr, limit=1)
            text += f"\n[Some files could not be searched: {first[0] if first else 'errors'}]"
        raw = {"mode": mode, "entries": shown, "complete": run.complete, "hidden": hidden}
        if checked.changed:
            raw["changed"] = checked.changed
        return ToolResult(text + note, raw_output=raw)


def _root_problem(root: Path, ctx: ToolContext) -> str | None:
    """The search root must be a directory or a regular file (rg would wait forever on a FIFO with no writer)."""
    try:
        real = opened_path(root, ctx)
        st = safefs.stat_exact(real)  # not an open: Windows' os.open cannot open a directory
        if stat.S_ISLNK(st.st_mode):  # the judged real path has no link: one there now is a flip
            raise safefs.Changed(real)
    except (FileNotFoundError, NotADirectoryError):
        return f"Path does not exist: {root} (cwd is {ctx.cwd})."
    except ToolError as error:
        return str(error)
    except OSError as error:
        return str(read_error(root, error))
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return f"{root} is {safefs.describe_mode(st.st_mode)}; Grep searches files and directories."
    return None


# ---- the exact second pass ---------------------------------------------------------------------------------

FD_DIR = "/proc/self/fd" if sys.platform.startswith("linux") else "/dev/fd"


@dataclass
class Confirmed:
    """The second pass: rg's lines again (same format, the first pass's paths), from the files opened exactly;
    the files' mtimes; how many the guard hid; how many changed between the passes."""

    lines: list[str] = field(default_factory=list)
    mtimes: dict[str, float] = field(default_factory=dict)
    hidden: int = 0
    changed: int = 0


def _batch_size() -> int:
    """How many files one second-pass rg reads at once: half the free descriptors, within bounds."""
    try:
        import resource  # POSIX; Windows has no descriptor limit to ask
    except ImportError:
        return 256
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(16, min(1024, (soft if soft > 0 else 1024) // 4))


def _second_pass_args(data: GrepInput) -> list[str]:
    """The first pass's output options without its file selection (the files are given)."""
    mode = data.output_mode or "files_with_matches"
    args = [
        "--no-config",
        "--null",
        "--color",
        "never",
        "--max-columns",
        str(MAX_LINE_COLUMNS),
        "--max-columns-preview",
    ]
    if data.case_insensitive:
        args.append("--ignore-case")
    if data.multiline:
        args += ["--multiline", "--multiline-dotall"]
    if mode == "files_with_matches":
        args.append("--files-with-matches")
    elif mode == "count":
        args += ["--count", "--with-filename"]
    else:
        args += ["--with-filename", "--no-heading", "--line-number"]
        args += _line_args(data)
    return [*args, "--regexp", data.pattern]


def _named_files(lines: list[str], mode: str) -> list[str]:
    """The files the first pass named, in its order, each once."""
    seen: dict[str, None] = {}
    for line in lines:
        if not line:
            continue
        if mode == "files_with_matches":
            seen.setdefault(line, None)
            continue
        path, nul, _rest = line.partition("\0")
        if nul:
            seen.setdefault(path, None)
    return list(seen)


def _open_checked(
    shown: list[str], root: Path, real_root: str, cwd: Path, guard: ReadGuard, result: Confirmed
) -> dict[str, int]:
    """Open each file exactly under the judged real root (regular files only), after the guard allowed its real
    path; {shown path: fd}. The caller closes the fds."""
    fds: dict[str, int] = {}
    scope = Path(real_root)
    try:
        base = safefs.Beneath(real_root) if root_is_dir(real_root) else None
    except OSError:
        result.changed += len(shown)
        return fds
    try:
        for path in shown:
            named = os.path.normpath(os.path.join(cwd, path))
            if base is None:
                if named != os.fspath(root):
                    result.changed += 1
                    continue
                real, relative = real_root, ""
            else:
                relative = os.path.relpath(named, root)
                if relative == ".." or relative.startswith("../"):
                    result.changed += 1
                    continue
                real = os.path.normpath(os.path.join(real_root, relative))
            try:
                if guard(Path(real), scope) is not None or (named != real and guard(Path(named), scope) is not None):
                    result.hidden += 1
                    continue
            except OSError:  # the guard resolves names too: one changing under it is a name that changed
                result.changed += 1
                continue
            try:
                fd = (
                    base.open(relative, safefs.READ_FLAGS)
                    if base is not None
                    else safefs.open_exact(real_root, safefs.READ_FLAGS)
                )
            except (OSError, ValueError):
                result.changed += 1
                continue
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                result.changed += 1
                continue
            fds[path] = fd
            result.mtimes[path] = st.st_mtime
    except BaseException:
        for fd in fds.values():
            os.close(fd)
        raise
    finally:
        if base is not None:
            base.close()
    return fds


def _copied(fds: dict[str, int], into: str) -> dict[str, str]:
    """The portable back end's second pass (Windows: no `/dev/fd`, no descriptors handed to a child): each file
    as opened exactly is copied, through its fd, into a private temp directory, and rg reads the copies. Nothing
    rg reads was reached by a name that a command could flip: what is shown is what the proven handles held. It
    costs one more read and write of each file the first pass named. {copy path: shown path}."""
    out: dict[str, str] = {}
    for i, (path, fd) in enumerate(fds.items()):
        copy = os.path.join(into, str(i))
        with open(copy, "xb") as sink:
            while chunk := os.read(fd, 1 << 20):
                sink.write(chunk)
        out[copy] = path
    return out


def root_is_dir(real: str) -> bool:
    try:
        return stat.S_ISDIR(safefs.stat_exact(real).st_mode)
    except OSError:
        return False


async def confirmed(
    lines: list[str], data: GrepInput, root: Path, real_root: str, ctx: ToolContext, guard: ReadGuard
) -> Confirmed:
    """The first pass's result, searched again in the files as opened exactly (see the module docstring)."""
    mode = data.output_mode or "files_with_matches"
    result = Confirmed()
    named = _named_files(lines, mode)
    if not named:
        return result
    separator = b"\0" if mode == "files_with_matches" else b"\n"
    args = _second_pass_args(data)
    by_file: dict[str, list[str]] = {}
    size = _batch_size()
    for start in range(0, len(named), size):
        batch = named[start : start + size]
        fds = await anyio.to_thread.run_sync(_open_checked, batch, root, real_root, ctx.cwd, guard, result)
        try:
            if not fds:
                continue
            if safefs.backend() == "portable":
                with tempfile.TemporaryDirectory(prefix="bridge-grep-") as copies:
                    shown_of = await anyio.to_thread.run_sync(_copied, fds, copies)
                    run = await run_rg([*args, "--", *shown_of], ctx.cwd, max_lines=MAX_SCAN_LINES, separator=separator)
            else:
                shown_of = {f"{FD_DIR}/{fd}": path for path, fd in fds.items()}
                run = await run_rg(
                    [*args, "--", *shown_of],
                    ctx.cwd,
                    max_lines=MAX_SCAN_LINES,
                    separator=separator,
                    pass_fds=tuple(fds.values()),
                )
        finally:
            for fd in fds.values():
                os.close(fd)
        _collect_by_file(run.lines, mode, shown_of, by_file)
    for path in named:
        kept = by_file.get(path)
        if kept is None:  # the first pass named it, the file as opened exactly says otherwise: it changed
            result.changed += path in result.mtimes
            continue
        if result.lines and mode == "content" and _has_context(data):
            result.lines.append("--")
        result.lines.extend(kept)
    return result


def _has_context(data: GrepInput) -> bool:
    return any(v for v in (data.context, data.around, data.after, data.before))


def _collect_by_file(lines: list[str], mode: str, shown_of: dict[str, str], into: dict[str, list[str]]) -> None:
    """The second pass's lines, each under the first pass's path of its file (`--` separators kept inside a
    file, dropped at its end)."""
    current: list[str] | None = None
    for line in lines:
        if mode == "files_with_matches":
            path = shown_of.get(line)
            if path is not None:
                into[path] = [path]
            continue
        fd_path, nul, rest = line.partition("\0")
        if not nul:
            if line == "--" and current is not None:
                current.append(line)
            continue  # a "binary file matches" notice: nothing of the file is shown
        path = shown_of.get(fd_path)
        if path is None:
            current = None
            continue
        current = into.setdefault(path, [])
        current.append(f"{path}\0{rest}")
    for kept in into.values():
        while kept and kept[-1] == "--":
            kept.pop()


def _shown_lines(lines: list[str], mode: str, numbered: bool) -> list[str]:
    """rg's `--null` output as Grep shows it (`path:12:text`, `path-13-text` for context, `path:3` counts)."""
    out: list[str] = []
    for line in lines:
        if not line:
            continue
        if mode == "files_with_matches":  # NUL-separated paths
            path, nul, rest = line, "\0", ""
        else:
            path, nul, rest = line.partition("\0")
        if not nul:  # `--` between context groups (or a path with no NUL: never shown unchecked)
            if mode == "content" and line == "--" and out and out[-1] != "--":
                out.append(line)
            continue
        if mode == "files_with_matches":
            out.append(path)
        elif mode == "count":
            out.append(f"{path}:{rest}")
        else:
            out.append(_content_line(path, rest, numbered))
    if out and out[-1] == "--":
        out.pop()
    return out


def _content_line(path: str, rest: str, numbered: bool) -> str:
    """`rest` is `12:text` (a match) or `12-text` (context), as rg prints it after the path's NUL."""
    digits = len(rest) - len(rest.lstrip("0123456789"))
    number, sep, text = rest[:digits], rest[digits : digits + 1], rest[digits + 1 :]
    if not number or sep not in (":", "-"):
        return f"{path}:{rest}"
    return f"{path}{sep}{number}{sep}{text}" if numbered else f"{path}{sep}{text}"


def _page(lines: list[str], mode: str, skip: int, limit: int, *, complete: bool) -> tuple[str, int]:
    """The requested page and notes that say what was left out and how to get it."""
    total = len(lines)
    page = lines[skip:] if limit == 0 else lines[skip : skip + limit]
    chars = 0
    kept: list[str] = []
    for line in page:
        if chars + len(line) + 1 > MAX_CONTENT_CHARS and kept:
            break
        kept.append(line)
        chars += len(line) + 1
    char_cut = len(kept) < len(page)
    more = skip + len(kept) < total or not complete
    body = "\n".join(kept)
    unit = {"files_with_matches": "files", "count": "files", "content": "lines"}[mode]
    notes: list[str] = []
    if not kept:
        return f"No results at offset {skip}: there are {total}{'' if complete else '+'} {unit}.", 0
    span = f"{skip + 1}-{skip + len(kept)}"
    of = f"{total}" if complete else f"more than {total}"
    if mode == "files_with_matches":
        head = f"Found {of} files" + (f" (showing {span}, newest first)" if more or skip else "")
        body = head + "\n" + body
    elif mode == "count":
        matches = sum(int(line.rsplit(":", 1)[1]) for line in lines if line.rsplit(":", 1)[-1].isdigit())
        body += f"\n\nFound {matches} matching lines in {of} files" + (f" (showing {span})" if more or skip else "")
    if more:
        reason = f"output capped at {MAX_CONTENT_CHARS} characters" if char_cut else f"showing {unit} {span} of {of}"
        notes.append(f"[Results truncated: {reason}. Pass offset={skip + len(kept)} for more, or narrow the search.]")
    return body + ("\n\n" + "\n".join(notes) if notes else ""), len(kept)
