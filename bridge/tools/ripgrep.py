"""ripgrep as the search tools (Grep, Glob) run it: the binary, a bounded run killed on cancellation, the search
root and how paths are shown, the arguments' checks and the errors in words."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

from bridge.execution import programs
from bridge.execution.pipes import UNNAMED, devices_read, open_for, pipes_waited
from bridge.tools.base import Location, ToolError
from bridge.tools.paths import path_problem

MAX_SCAN_LINES = 200_000  # files / count entries read from rg before we stop it
MAX_LINE_COLUMNS = 500
MAX_STDERR = 8192
VCS_EXCLUDES = ("!.git", "!.svn", "!.hg", "!.jj", "!.bzr")
PIPE_POLL_S = 0.05  # how often a running rg is looked at for a named pipe it waits to open
MAX_PIPES = 64  # pipes opened for one rg run; with more, rg is stopped


def rg_binary() -> str:
    """ripgrep from PATH (never the folder's: bridge/execution/programs.py), else the `ripgrep` wheel's binary
    next to our interpreter."""
    found = programs.helper("rg") or str(Path(sys.executable).parent / "rg")
    if not os.access(found, os.X_OK):
        raise ToolError("ripgrep (rg) is not installed; use Bash with grep/find instead.")
    return found


@dataclass
class RgRun:
    lines: list[str]
    complete: bool  # rg ran to its end; False when we stopped it after `max_lines`
    returncode: int | None
    stderr: str

    @property
    def failed(self) -> bool:
        """rg could not give its answer: errors and nothing found (2), or it died (a signal: out of memory). A
        dead rg's empty output is no "nothing found" (attack round 14: a 3 GB ignore file, "No files found")."""
        if not self.complete:
            return False  # we stopped it, with what it had found
        return (self.returncode == 2 and not any(self.lines)) or self.returncode not in (0, 1, 2)


MAX_RG_MEMORY = 1024 * 1024 * 1024
"""The memory rg may write to (RLIMIT_DATA; the files it maps to read them don't count): it reads each ignore file
whole, so a 3 GB `.gitignore` a cloned folder ships (zeros compress to nothing in git) took 9 GB."""


def _bound_memory(pid: int) -> None:
    prlimit = getattr(resource, "prlimit", None) if resource is not None else None
    if prlimit is None:
        return
    with contextlib.suppress(OSError, ValueError):  # (gone already, or a limit it may not lower)
        hard = prlimit(pid, resource.RLIMIT_DATA)[1]
        limit = MAX_RG_MEMORY if hard == resource.RLIM_INFINITY else min(MAX_RG_MEMORY, hard)
        prlimit(pid, resource.RLIMIT_DATA, (limit, hard))


async def run_rg(
    args: list[str],
    cwd: Path,
    *,
    max_lines: int,
    separator: bytes = b"\n",
    pass_fds: tuple[int, ...] = (),
    ours: tuple[Path, ...] = (),
) -> RgRun:
    """Run rg; collect at most `max_lines` stdout lines (then kill it). Cancellation kills it too.
    `separator` ends a line (NUL for the path lists of `--files --null` and `--files-with-matches --null`).
    `pass_fds`: open files rg reads as `/proc/self/fd/N` (the exact second pass).
    rg opens `.gitignore`, `.ignore` and `.rgignore` in every folder it walks: a named pipe there would hold it
    for ever, a link to a device (`/dev/zero`) would fill the memory. A pipe under `cwd` or `ours` is opened for
    it (it reads as empty: bridge/execution/pipes.py); a pipe elsewhere, or a device read, stops rg, and the
    ToolError names it."""
    process = await anyio.open_process(
        # --no-ignore-messages: an ignore file rg can't parse is quoted in its error, and rg reads ignore files
        # through links (attack rounds 14, 15: a linked token file's contents in Grep's error)
        [rg_binary(), "--no-ignore-messages", *args],
        cwd=str(cwd),
        stdin=subprocess.DEVNULL,
        pass_fds=pass_fds,
        env=programs.helper_env(),  # not the bridge's key: its environ is readable to same-user processes
    )
    _bound_memory(process.pid)
    lines: list[str] = []
    err = bytearray()
    complete = True
    held: list[str] = []
    watching = anyio.CancelScope()
    try:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as group:
            group.start_soon(_collect_stderr, process.stderr, err)
            group.start_soon(_free_pipes, process, (cwd, *ours), held, watching)
            partial = b""
            async for chunk in process.stdout:
                parts = (partial + chunk).split(separator)
                partial = parts.pop()
                lines.extend(p.decode("utf-8", errors="replace") for p in parts)
                if len(lines) > max_lines:
                    complete = False
                    del lines[max_lines:]
                    break
            if complete and partial:
                lines.append(partial.decode("utf-8", errors="replace"))
            watching.cancel()
            if not complete:
                _kill(process)
                group.cancel_scope.cancel()
        await process.wait()
    except BaseException:
        _kill(process)  # cancelled (or failed): rg only reads, no grace needed
        raise
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await process.aclose()
    if held:
        raise ToolError(
            f"ripgrep was stopped reading {held[0]}: ripgrep reads the ignore files (.gitignore, .ignore, "
            ".rgignore) of every folder it walks and of the folders above. Search a folder that does not reach "
            "it, or use Bash."
        )
    return RgRun(lines, complete, process.returncode, err.decode("utf-8", errors="replace"))


async def _free_pipes(
    process: anyio.abc.Process, ours: tuple[Path, ...], held: list[str], scope: anyio.CancelScope
) -> None:
    """While rg runs: a pipe it waits to open under `ours` is opened for it; any other stops it (in `held`)."""
    opened = 0
    devices: set[str] = set()
    with scope:
        while process.returncode is None:
            await anyio.sleep(PIPE_POLL_S)
            for pipe in pipes_waited(process.pid):
                if pipe != UNNAMED and opened < MAX_PIPES and open_for(pipe, ours):
                    opened += 1
                    continue
                held.append(
                    f"the named pipe (FIFO) {pipe or '(its name could not be read)'}, outside the folders searched"
                )
                _kill(process)
                return
            seen, devices = devices, devices_read(process.pid)
            if reading := sorted(seen & devices):
                held.append(
                    f"the device {reading[0].split(':', 1)[1]} through a link (an ignore file that links to it)"
                )
                _kill(process)
                return


def _kill(process: anyio.abc.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


async def _collect_stderr(stream: ByteReceiveStream, into: bytearray) -> None:
    async for chunk in stream:
        if len(into) < MAX_STDERR:
            into += chunk[: MAX_STDERR - len(into)]


def display_path(path: Path, cwd: Path) -> str:
    try:
        rel = path.relative_to(cwd)
    except ValueError:
        return str(path)
    return str(rel) if str(rel) != "." else "."


def search_root(raw: str | None, cwd: Path) -> Path:
    """The directory or file to search (relative to cwd), `~` expanded and `..` folded, symlinks kept.
    `raw` must have passed `path_problem`."""
    if not raw:
        return cwd
    expanded = Path(os.path.expanduser(raw))
    return Path(os.path.normpath(expanded if expanded.is_absolute() else cwd / expanded))


def root_args(root: Path, cwd: Path) -> list[str]:
    """What to pass rg so that it prints paths relative to cwd (it runs in cwd), else absolute."""
    if root == cwd:
        return []
    shown = display_path(root, cwd)
    return ["--", shown]


def root_location(raw: str | None) -> list[Location]:
    """The editor's follow-along location of an absolute search root (none for an invalid one)."""
    if not raw or path_problem(raw, field="path") is not None:
        return []
    expanded = os.path.expanduser(raw)
    return [Location(os.path.normpath(expanded))] if os.path.isabs(expanded) else []


def split_globs(raw: str) -> list[str]:
    """`*.ts *.tsx`, `*.ts,*.tsx` or `*.{ts,tsx}`: split on blanks and on commas outside braces."""
    parts: list[str] = []
    current = ""
    depth = 0
    for ch in raw:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                parts.append(current)
            current = ""
            continue
        current += ch
    if current:
        parts.append(current)
    return parts


def argument_problem(value: str | None, field: str) -> str | None:
    """Why a text field cannot be passed to rg (an argument is a C string), or None."""
    if value is None:
        return None
    if "\x00" in value:
        escape = " (to match a NUL byte, write the regex escape \\x00)" if field == "pattern" else ""
        return f"{field} contains a NUL byte, which cannot be passed to ripgrep{escape}."
    try:
        os.fsencode(value)
    except UnicodeEncodeError as error:
        return f"{field} contains {value[error.start : error.end]!r}, a lone UTF-16 surrogate; send plain text."
    return None


def hidden_note(count: int, tool: str) -> str:
    """What the model is told of results left out by the guard (never their names)."""
    files = "1 file was" if count == 1 else f"{count} files were"
    return (
        f"[{files} left out: the permission rules do not let {tool} show them (a Read deny or ask rule "
        "names them, they are outside the workspace, or they hold the bridge's own sign-in or transcripts).]"
    )


_OS_ERROR = re.compile(r"\(os error \d+\)\s*$")
_OWN_LINES = (
    re.compile(r"unrecognized file type: [A-Za-z0-9_+.-]*"),  # the model's `type`: no `/`, no quote
    re.compile(r"memory allocation of \d+ bytes failed"),
)


def shown_errors(stderr: str, limit: int = 12) -> list[str]:
    """rg's error lines as the model may read them. rg quotes the lines of an ignore file it can't parse, and it
    reads `.ignore`/`.gitignore` through links, outside any sandbox: a link to a one-line token file (an
    OAuth token's JSON) put the token in the error (attack round 14). So a line is shown whole only when it is
    rg's own words whole (the pattern's parse error, an unknown type, memory) or an OS error about a path: the
    test is on the whole line, never its start, which may be a path the folder named (round 15: a folder named
    `unrecognized file type`). Any other line shows its first part (the path rg names) and no more. Lines are
    split at `\n` only: rg's own line breaks (a quoted line may hold a `\r` or a form feed)."""
    lines = [line.removeprefix("rg: ") for line in stderr.strip().split("\n")]
    if lines and lines[0].rstrip("\r") == "regex parse error:":  # the pattern, echoed: the model's own input
        return lines[:limit]
    shown: list[str] = []
    for line in lines[:limit]:
        if _OS_ERROR.search(line) or any(own.fullmatch(line.rstrip("\r")) for own in _OWN_LINES):
            shown.append(line)
        else:
            where = line.split(": ", 1)[0] if ": " in line else "rg"
            shown.append(f"{where}: an error rg reported (not shown: it may quote a file's contents)")
    return shown


def rg_error(run: RgRun) -> ToolError:
    message = "\n".join(shown_errors(run.stderr))
    if run.returncode is not None and run.returncode < 0:
        message = f"rg was ended by signal {-run.returncode} (out of memory?)" + (f"\n{message}" if message else "")
    message = message or f"rg exited with status {run.returncode}"
    hint = ""
    if "regex parse error" in message:
        hint = (
            "\nThe pattern is a Rust regex: escape literal ( ) [ ] { } . * + ? | \\ with a backslash "
            "(e.g. `interface\\{\\}` for `interface{}`)."
        )
    elif "unrecognized file type" in message:
        hint = "\nUse a ripgrep type name such as py, js, ts, rust, go, java, cpp, or use glob instead."
    return ToolError(f"Search failed: {message}{hint}")
