"""Bash: run a shell command in the session's cwd; stream its output; never leave a process behind.

Each call is a fresh `bash -c` (a `cd` does not persist) under the `ProcessSupervisor`. Results:
the merged stdout+stderr, then `Exit code N` when it is not 0 — and `is_error` exactly then (a failing
test run is an error the model should look at; its output is the useful part either way). Processes the
command leaves running after the shell exits are stopped (servers belong in `run_in_background`).

Cancellation: the loop cancels `call`; we hand the tree to the supervisor (SIGINT -> SIGTERM -> SIGKILL in
the background, or SIGKILL at once for `force`), report the output so far through `ctx.progress`, and
re-raise without waiting, so the editor's prompt answers at once.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import shlex
import signal
import time
import uuid
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import anyio
from pydantic import Field

from bridge.abort import AbortReason
from bridge.tools.base import Tool, ToolContext, ToolInput, ToolResult, required
from bridge.tools.processes import command_environment, shell_argv

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
HEAD_CHARS = 10_000  # the start of a long output (what ran, first errors) ...
TAIL_CHARS = 20_000  # ... and its end (the summary, the last error) are what the model needs
PROGRESS_INTERVAL = 0.05
LEFTOVER_WAIT = 3.0  # bound on waiting for leftovers / a timed-out tree to die (escalation takes ~1 s)


class BashInput(ToolInput):
    command: str = Field(description="The command to run")
    timeout: float | None = Field(
        default=None, gt=0, le=MAX_TIMEOUT_MS, description=f"Timeout in ms (default {DEFAULT_TIMEOUT_MS}, max 600000)"
    )
    description: str | None = Field(default=None, description="What the command does, in 5-10 words")
    run_in_background: bool | None = Field(
        default=None, description="Run without waiting; read output with TaskOutput, stop with TaskStop"
    )


# -- output -----------------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]")
_OVERWRITTEN = re.compile(r"[^\n]*\r(?!\n)")  # progress bars: keep what a terminal would show last


def clean_output(text: str) -> str:
    return _OVERWRITTEN.sub("", _ANSI.sub("", text)).replace("\r\n", "\n")


class OutputBuffer:
    """Head and rolling tail of a stream in bounded memory. Once anything would be dropped, the whole
    stream goes to `spill_path` as well, so nothing is lost: the note tells the model where it is."""

    def __init__(self, head: int = HEAD_CHARS, tail: int = TAIL_CHARS, spill_path: Path | None = None) -> None:
        self._head_cap, self._tail_cap = head, tail
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total_chars = 0
        self.total_lines = 0
        self._spill_path = spill_path
        self._spill: IO[str] | None = None
        self.spilled: Path | None = None

    def append(self, text: str) -> None:
        if not text:
            return
        self.total_chars += len(text)
        self.total_lines += text.count("\n")
        if self._spill is not None:
            self._spill.write(text)
        room = self._head_cap - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        if self._tail_len > self._tail_cap:
            self._open_spill()
            while self._tail_len - len(self._tail[0]) >= self._tail_cap:
                self._tail_len -= len(self._tail.popleft())
            excess = self._tail_len - self._tail_cap
            if excess > 0:
                self._tail[0] = self._tail[0][excess:]
                self._tail_len -= excess

    def _open_spill(self) -> None:
        if self._spill is not None or self._spill_path is None or self.spilled is not None:
            return
        try:
            self._spill_path.parent.mkdir(parents=True, exist_ok=True)
            self._spill = open(self._spill_path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
            self._spill.write("".join(self._head) + "".join(self._tail))
            self.spilled = self._spill_path
        except OSError:
            self._spill = None
            self.spilled = None
            self._spill_path = None

    @property
    def truncated(self) -> bool:
        return self.total_chars > self._head_len + self._tail_len

    def render(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if not self.truncated:
            return clean_output(head + tail)
        # Cut at line boundaries so no half line is shown.
        if "\n" in head[-2000:]:
            head = head[: head.rfind("\n") + 1]
        if "\n" in tail[:2000]:
            tail = tail[tail.find("\n") + 1 :]
        cut_chars = self.total_chars - len(head) - len(tail)
        cut_lines = max(0, self.total_lines - head.count("\n") - tail.count("\n"))
        where = f"; the full output is in {self.spilled} (Read it with offset/limit)" if self.spilled else ""
        note = f"\n[… {cut_lines} lines ({cut_chars} characters) cut from the middle{where} …]\n\n"
        return clean_output(head) + note + clean_output(tail)

    def close(self) -> None:
        if self._spill is not None:
            with contextlib.suppress(OSError):
                self._spill.close()
            self._spill = None


class Throttle:
    """Calls `emit(render())` at most every `interval` s while `poke`d, with a trailing call so the last
    output is never held back; `flush` sends one now."""

    def __init__(self, emit: Callable[[str], None], render: Callable[[], str], interval: float) -> None:
        self._emit, self._render, self._interval = emit, render, interval
        self._last = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def poke(self) -> None:
        wait = self._last + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
        elif self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(wait, self.flush)

    def flush(self) -> None:
        self.close()
        self._last = time.monotonic()
        with contextlib.suppress(Exception):
            self._emit(self._render())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def exit_note(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Exit code {128 - code} (killed by {name})"
    return f"Exit code {code}"


# -- what a command does (conservative; the permission engine has the full shell analysis) ---------------

_READ_ONLY = frozenset(
    [
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "pwd",
        "echo",
        "printf",
        "which",
        "type",
        "file",
        "stat",
        "du",
        "df",
        "diff",
        "cmp",
        "cut",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "uname",
        "whoami",
        "id",
        "printenv",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "true",
        "false",
        "test",
        "[",
        "nl",
        "od",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "column",
        "jq",
        "tr",
        "comm",
        "seq",
        "cd",
        "sort",
        "find",
        "sed",
        "git",
        "tree",
        "uniq",
        "date",
        "ps",
    ]
)
_PREFIXES = frozenset(["sudo", "nice", "nohup", "time", "command", "exec", "env", "timeout", "xargs"])
_KEYWORDS = frozenset(
    ["{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "case", "esac"]
)
_DESTRUCTIVE = frozenset(
    ["rm", "rmdir", "shred", "dd", "truncate", "mv", "kill", "pkill", "killall", "mkfs", "wipefs", "fdisk"]
)
_SAFE_REDIRECT = re.compile(r"(?:(?<=\s)|^)(?:\d?>&\d|&>\s*/dev/null|\d?>>?\s*/dev/null)(?=\s|$|[;|&)])")
_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ";;", "(", ")", "|&"})
_GIT_READ = frozenset(
    [
        "status",
        "log",
        "diff",
        "show",
        "rev-parse",
        "ls-files",
        "ls-tree",
        "blame",
        "grep",
        "describe",
        "shortlog",
        "cat-file",
        "rev-list",
        "merge-base",
        "name-rev",
        "show-ref",
        "whatchanged",
        "count-objects",
        "--version",
        "version",
        "help",
    ]
)


def _segments(command: str) -> list[list[str]] | None:
    """Simple commands of `command` split at operators, each with its redirect tokens; None if unparsable.
    Newlines separate commands (shlex would treat them as blanks)."""
    text = _SAFE_REDIRECT.sub(" ", command.replace("\n", " ; "))
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return None
    segments: list[list[str]] = [[]]
    for token in tokens:
        if token in _OPERATORS:
            segments.append([])
        else:
            segments[-1].append(token)
    return [seg for seg in segments if seg]


def _command_words(segment: list[str]) -> list[str]:
    """The segment from its command name on (keywords, prefixes like `sudo`/`xargs -n1` dropped)."""
    words = list(segment)
    while words:
        head = words[0]
        if head in _KEYWORDS:
            words.pop(0)
        elif head in _PREFIXES:
            words.pop(0)
            while words and (words[0].startswith("-") or "=" in words[0]):
                flag = words.pop(0)
                if flag in ("-n", "-I", "-P", "-L", "-d", "-s", "-u", "-k") and words:
                    words.pop(0)
            if head == "timeout" and words:
                words.pop(0)  # the duration
        else:
            break
    return words


def _read_only_simple(words: list[str]) -> bool:
    if not words or any(set(w) <= set("<>&|") for w in words):
        return False
    if "=" in words[0]:  # FOO=bar cmd: an environment change (LD_PRELOAD, PATH) is not a read
        return False
    name, args = words[0], words[1:]
    if name not in _READ_ONLY:
        return False
    if name == "find":
        return not any(a in ("-exec", "-execdir", "-ok", "-okdir", "-delete") or a.startswith("-fprint") for a in args)
    if name == "sed":
        scripts = [a for a in args if not a.startswith("-")]
        return "-n" in args and bool(scripts) and re.fullmatch(r"[\d$]+(,[\d$]+)?p", scripts[0]) is not None
    if name in ("sort", "tree"):
        return not any(a == "-o" or a.startswith("--output") for a in args)
    if name == "uniq":
        return len([a for a in args if not a.startswith("-")]) <= 1
    if name == "date":
        return not any(a in ("-s",) or a.startswith("--set") for a in args)
    if name == "rg":
        return not any(a.startswith("--pre") for a in args)
    if name == "git":
        return _git_read_only(args)
    return True


def _git_read_only(args: list[str]) -> bool:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag == "-C" and rest:
            rest.pop(0)
        elif flag not in ("--no-pager", "-P", "--version"):
            return False  # e.g. -c diff.external=...: runs a program
    if not rest:
        return True
    sub, tail = rest[0], rest[1:]
    if any(a.startswith("--output") or a == "--ext-diff" for a in tail):
        return False
    if sub in _GIT_READ:
        return True
    if sub in ("branch", "tag"):  # listing only: a positional argument creates one
        allowed = {"-a", "-r", "-v", "-vv", "--list", "-l", "--all", "--show-current"}
        return all(a in allowed for a in tail)
    if sub in ("remote", "reflog"):
        return not tail or tail[0] in {"-v", "--verbose", "show", "get-url"}
    firsts = {"stash": {"list", "show"}, "worktree": {"list"}, "config": {"--get", "--get-all", "--list", "-l"}}
    return bool(tail) and tail[0] in firsts.get(sub, set())


def is_read_only_command(command: str) -> bool:
    """True only for commands that certainly change nothing: allowlisted simple commands joined by
    pipes and `&&`/`||`/`;`, no redirects to files, no substitutions, no background jobs."""
    if not command.strip() or any(s in command for s in ("$(", "`", "<(", ">(")):
        return False
    if re.search(r"(?<![&>|])&(?![&>])", _SAFE_REDIRECT.sub(" ", command)):
        return False  # a background job outlives the command
    segments = _segments(command)
    if not segments:
        return False
    return all(_read_only_simple(_command_words(seg)) for seg in segments)


def is_destructive_command(command: str) -> bool:
    """Commands that delete or overwrite irreversibly (rm, mv, dd, git reset --hard, > onto a file...)."""
    segments = _segments(command)
    if segments is None:
        return bool(re.search(r"\b(rm|mv|dd|shred|truncate)\b", command))
    for seg in segments:
        words = _command_words(seg)
        if not words:
            continue
        name, args = os.path.basename(words[0]), words[1:]
        if name in _DESTRUCTIVE or name.startswith("mkfs"):
            return True
        if ">" in words[1:] or any(w == ">|" for w in words):
            return True  # truncates a file (`>>` appends and is not)
        if name == "find" and "-delete" in args:
            return True
        if name == "git" and _git_destructive(args):
            return True
    return False


def _git_destructive(args: list[str]) -> bool:
    if not args:
        return False
    sub = next((a for a in args if not a.startswith("-")), "")
    rest = args[args.index(sub) + 1 :] if sub else []
    if sub == "reset" and "--hard" in rest:
        return True
    if sub in ("clean", "restore"):
        return True
    if sub == "checkout" and ("--" in rest or "-f" in rest or "." in rest):
        return True
    if sub == "push" and any(a in ("-f", "--force", "--delete", "-d") or a.startswith("--force") for a in rest):
        return True
    if sub == "branch" and any(a in ("-D", "-d", "--delete") for a in rest):
        return True
    return sub == "stash" and bool(rest) and rest[0] in ("drop", "clear")


# -- the tool ---------------------------------------------------------------------------------------------


class BashTool(Tool[BashInput]):
    name = "Bash"
    input_model = BashInput
    description = (
        "Run a bash command (`bash -c`) in the working directory; stdin is /dev/null, stdout and stderr are "
        "merged. Each call is a fresh shell: `cd` and variables do not persist; chain with `&&`. Returns the "
        "output and `Exit code N` when non-zero. Timeout: 120000 ms by default, max 600000. Long output keeps "
        "its start and end; the full text is saved to a file named in the result. Processes still running "
        "when the command ends are stopped: for servers and watchers set run_in_background and use "
        "TaskOutput/TaskStop. Prefer Read, Grep and Glob over cat, grep and find. Quote paths with spaces."
    )
    search_hint = "shell terminal run command execute script"
    kind = "execute"
    interrupt_behavior = "block"
    max_result_chars = 40_000  # the output bounds itself to ~30k; beyond that it is spilled to a file

    def is_read_only(self, data: BashInput) -> bool:
        return not data.run_in_background and is_read_only_command(data.command)

    def is_destructive(self, data: BashInput) -> bool:
        return is_destructive_command(data.command)

    async def validate_input(self, data: BashInput, ctx: ToolContext) -> str | None:
        if not data.command.strip():
            return "command is empty; send the shell command to run."
        if not ctx.cwd.is_dir():
            return f"The working directory {ctx.cwd} does not exist."
        return None

    def user_facing_title(self, data: BashInput) -> str:
        first = data.command.strip().splitlines()[0] if data.command.strip() else ""
        shown = first if len(first) <= 80 else first[:79] + "…"
        more = " …" if "\n" in data.command.strip() and len(first) <= 80 else ""
        return f"`{shown}{more}`" + (" (background)" if data.run_in_background else "")

    async def call(self, data: BashInput, ctx: ToolContext) -> ToolResult:
        if data.run_in_background:
            shells = required(ctx.services.background, "background shells")
            shell = await shells.start(data.command, cwd=ctx.cwd, env=settings_environment(ctx))
            text = (
                f"Command running in background with ID: {shell.id}. "
                f"Read its output with TaskOutput(task_id={shell.id!r}); stop it with TaskStop(task_id={shell.id!r})."
            )
            return ToolResult(text, raw_output={"background_id": shell.id, "pid": shell.process.pid})
        return await run_command(data.command, ctx, timeout_s=(data.timeout or DEFAULT_TIMEOUT_MS) / 1000)


def settings_environment(ctx: ToolContext) -> dict[str, str]:
    """Our environment plus the settings files' `env` (`services.settings_env`, read at each call, so an
    edited settings file applies to the next command), plus the supervisor's tracking token."""
    return command_environment({**os.environ, **ctx.services.settings_env()})


async def run_command(command: str, ctx: ToolContext, *, timeout_s: float) -> ToolResult:
    supervisor = required(ctx.services.processes, "a process supervisor")
    spill = ctx.data_dir / "bash-output" / f"{ctx.tool_use_id or uuid.uuid4().hex}.log"
    output = OutputBuffer(spill_path=spill)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    progress = Throttle(ctx.progress, output.render, PROGRESS_INTERVAL)

    proc = await supervisor.spawn(shell_argv(command), cwd=ctx.cwd, env=settings_environment(ctx))

    def on_output(chunk: bytes) -> None:
        output.append(decoder.decode(chunk))
        progress.poke()

    proc.on_output = on_output

    def on_abort(reason: AbortReason) -> None:
        if reason is AbortReason.FORCE:  # a second cancel while the first unwinds: no grace left
            supervisor.terminate(proc, force=True)

    unsubscribe = ctx.abort.on_abort(on_abort)
    started = time.monotonic()
    try:
        with anyio.move_on_after(timeout_s) as deadline:
            await proc.wait()
        timed_out = deadline.cancelled_caught
        leftovers = bool(supervisor.tree_pids(proc))
        if timed_out or leftovers:
            supervisor.terminate(proc)
        if not await supervisor.wait_gone(proc, LEFTOVER_WAIT):
            proc.on_output = None  # something escaped tracking and holds the pipe; stop listening
    except anyio.get_cancelled_exc_class():
        proc.on_output = None
        output.append(decoder.decode(b"", final=True))
        progress.flush()  # the loop keeps the output so far for the synthesized result
        supervisor.terminate(proc, force=ctx.abort.reason is AbortReason.FORCE)
        # the abort listener stays: a later `force` must still cut the grace short
        progress.close()
        output.close()
        raise
    unsubscribe()
    output.append(decoder.decode(b"", final=True))
    progress.flush()
    progress.close()
    output.close()
    return _result(
        output, proc.returncode, timed_out=timed_out, timeout_s=timeout_s, elapsed=time.monotonic() - started
    )


def _result(output: OutputBuffer, code: int | None, *, timed_out: bool, timeout_s: float, elapsed: float) -> ToolResult:
    text = output.render().rstrip("\n")
    raw: dict[str, Any] = {
        "exit_code": code,
        "timed_out": timed_out,
        "truncated": output.truncated,
        "duration_ms": round(elapsed * 1000),
    }
    if output.spilled:
        raw["output_file"] = str(output.spilled)
    if timed_out:
        head = f"Command timed out after {timeout_s:g} s and was stopped."
        body = f"{head} Output so far:\n{text}" if text else f"{head} It printed nothing."
        return ToolResult(body, is_error=True, raw_output=raw)
    if code:
        return ToolResult(f"{text}\n\n{exit_note(code)}" if text else exit_note(code), is_error=True, raw_output=raw)
    return ToolResult(text or "(no output)", raw_output=raw)
