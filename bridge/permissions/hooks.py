"""Hooks in Claude Code's settings format, run as real subprocesses.

```json
{"hooks": {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "...", "timeout": 30}]}]}}
```
A hook gets the event as JSON on stdin. Exit 0: success; stdout may be JSON (below). Exit 2: blocks, and
stderr is the reason (for the model on PreToolUse/PostToolUse/Stop, for the user on UserPromptSubmit).
Any other exit, a timeout or a hook that cannot start: reported in `HookOutcome.errors`, never fatal.

JSON output: `{"continue": false, "stopReason": ...}`, `{"decision": "block"|"approve", "reason": ...}`,
`{"hookSpecificOutput": {"permissionDecision": "allow"|"deny"|"ask", "permissionDecisionReason": ...,
"updatedInput": {...}, "additionalContext": ...}}`, `{"systemMessage": ...}`.
Matching hooks of one event run in parallel; deny beats ask beats allow among their answers.

The hooks of the folder's own settings files (`.agent-bridge/settings*.json`, `.claude/settings*.json` in the
workspace) run in the OS sandbox the agent's commands run in (`HookSandbox`: bridge/execution/sandbox.py), once the
user trusted them: whatever a pulled file makes such a hook run can write only the workspace and its private /tmp
(never the folder's settings, `.git/hooks` and the other protected files), reads nothing of the user's home folder
but the workspace and the installed tools' folders (`HOME_TOOLS`: no settings, histories, tokens, transcripts or
other projects), nothing else of the machine but its system folders, nor the machine's secrets, and reaches the
network only if the sandbox settings allow it. What such a hook answers may narrow what happens, never widen it: its
`allow` is not taken (the call is judged as if no hook had spoken), and a call whose input it rewrote is judged as
rewritten, with no hook's `allow` (the user's own hooks allowed the call they saw, not the rewrite) — else a
sandboxed hook would steer the bridge's own tools, which run outside the sandbox, to read a key or write outside the
workspace. The trust binding (bridge/permissions/named_files.py) still decides when the user is asked again. The
user's own hooks (their settings, the plugins they installed) run as they are — one that runs the folder's files
(`make lint`, `"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`) only once the folder's trust admits it
(bridge/permissions/widening.py `own_hook_item`). `"sandbox": {"folderHooks": false}`
in the user's settings runs the folder's hooks outside too; a folder's own settings cannot say so.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from bridge.environment import handed_out, without_secrets
from bridge.execution.host import CannotRun
from bridge.execution.managed import CommandWrapper, Launch
from bridge.execution.shell import sh_argv
from bridge.execution.signals import kill_tree, own_group

log = logging.getLogger(__name__)

HOOK_EVENTS: tuple[str, ...] = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SubagentStop")
_TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
DEFAULT_TIMEOUT_S = 60.0
_MAX_OUTPUT = 64 * 1024
SANDBOXED_NOTE = (
    " (It ran in the OS sandbox, as the folder's own hooks do: it may write only the workspace and /tmp, read nothing"
    " but the workspace, the installed tools' folders and the system's own, and reach the network only as the"
    ' sandbox settings allow. "sandbox": {"folderHooks": false} in your user settings runs this folder\'s hooks'
    " outside it.)"
)


@dataclass(frozen=True)
class HookCommand:
    command: str
    timeout: float = DEFAULT_TIMEOUT_S
    source_file: Path | None = None
    folder: bool = False  # from the folder's own settings: runs in the sandbox (`HookSandbox`)


@dataclass(frozen=True)
class HookMatcher:
    matcher: str
    hooks: tuple[HookCommand, ...]

    def matches(self, tool_name: str | None) -> bool:
        """Claude Code's matcher: empty or `*` is every tool; `A|B` names tools; anything else is a regex."""
        if self.matcher in ("", "*") or tool_name is None:
            return True
        if re.fullmatch(r"[\w|\-]+", self.matcher):
            return tool_name in self.matcher.split("|")
        try:
            return re.fullmatch(self.matcher, tool_name) is not None
        except re.error:
            return False


@dataclass(frozen=True)
class HookRun:
    """One hook's process: what it said and how it ended."""

    command: str
    exit_code: int | None  # None: timed out or could not start
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None
    sandboxed: bool = False
    notes: tuple[str, ...] = ()  # what the sandbox refused it, in words (bridge/execution/sandbox_notes.py)
    folder: bool = False  # the folder's own hook (`HookCommand.folder`): what it answers may only narrow
    cut: bool = False  # its stdout was longer than the bridge keeps (`_MAX_OUTPUT`)


@dataclass
class HookOutcome:
    """What the hooks of one event decided, merged."""

    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""
    blocked: bool = False  # exit 2 or `decision: block`: the tool (or prompt, or stop) does not go ahead
    stop: bool = False  # `continue: false`: the turn ends
    stop_reason: str = ""
    updated_input: dict[str, Any] | None = None
    folder_rewrite: bool = False  # a folder's hook rewrote the input: no hook's `allow` holds for the rewrite
    additional_context: list[str] = field(default_factory=list)
    system_messages: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # failed hooks: shown to the user, not fatal
    runs: list[HookRun] = field(default_factory=list)

    @property
    def denied(self) -> bool:
        return self.blocked or self.decision == "deny"

    @property
    def allows(self) -> bool:
        """A hook allowed the call as it will run (a folder's hook never allows: `_apply_json`)."""
        return self.decision == "allow" and not self.folder_rewrite


_RANK = {"allow": 0, "ask": 1, "deny": 2}


FolderView = Mapping[str, Any] | Callable[[], Mapping[str, Any] | None] | None
"""Fields of a payload the folder's own hooks get instead (what they must not see); a function: worked out only when
one of them runs (a tool's result: whether it holds only the workspace's files)."""


class HookRunner(Protocol):
    """What the loop needs to run hooks (every event: PreToolUse, PostToolUse, UserPromptSubmit, Stop).
    `folder_view`: fields of the payload the folder's own hooks get instead (what they must not see)."""

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        tool_name: str | None = None,
        folder_view: FolderView = None,
    ) -> HookOutcome: ...


class NoHooks:
    """The runner with no hooks configured."""

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        tool_name: str | None = None,
        folder_view: FolderView = None,
    ) -> HookOutcome:
        return HookOutcome()


class HookSandbox(Protocol):
    """The session's sandbox as hooks see it (bridge.execution.sandbox.Sandbox)."""

    def for_hook(self, timeout_s: float) -> CommandWrapper | None:
        """What a folder's hook runs in, or None: as it is (no sandbox wanted, or the user's settings say so)."""


class HookSource(Protocol):
    """Where hooks are configured (`SettingsStore`), re-read when its files change."""

    def refresh(self, *, force: bool = False) -> bool: ...

    def hooks(self, event: str) -> list[HookMatcher]: ...

    @property
    def env(self) -> dict[str, str]: ...

    @property
    def pass_env(self) -> list[str]: ...


class SettingsHooks:
    """Runs the hooks the settings files configure, with Claude Code's payload fields."""

    def __init__(self, source: HookSource, cwd: Path, mode: Callable[[], str]) -> None:
        self.source, self.cwd, self.mode = source, cwd, mode
        self.sandbox: HookSandbox | None = None  # the session's (bridge/session_setup.py); None: none

    async def run(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        tool_name: str | None = None,
        folder_view: FolderView = None,
    ) -> HookOutcome:
        self.source.refresh()
        hooks = matching_hooks(self.source.hooks(event), event, tool_name)
        full = {"cwd": str(self.cwd), "hook_event_name": event, "permission_mode": self.mode(), **payload}
        if tool_name is not None:
            full.setdefault("tool_name", tool_name)
        return await run_hooks(
            hooks,
            event,
            full,
            cwd=self.cwd,
            env=self.source.env,
            pass_env=self.source.pass_env,
            sandbox=self.sandbox,
            folder_view=folder_view,
        )


def matching_hooks(matchers: Sequence[HookMatcher], event: str, tool_name: str | None) -> list[HookCommand]:
    found: dict[str, HookCommand] = {}
    for matcher in matchers:
        if event in _TOOL_EVENTS and not matcher.matches(tool_name):
            continue
        for hook in matcher.hooks:
            # the same command from two settings files runs once; as the user's own if the user's file has it too
            # (its text is then the user's, whatever the folder copies)
            first = found.setdefault(hook.command, hook)
            if first.folder and not hook.folder:
                found[hook.command] = dataclasses.replace(first, folder=False)
    return list(found.values())


async def run_hooks(
    hooks: Sequence[HookCommand],
    event: str,
    payload: Mapping[str, Any],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    pass_env: Sequence[str] = (),
    sandbox: HookSandbox | None = None,
    folder_view: FolderView = None,
) -> HookOutcome:
    """Run `hooks` for `event`. Their environment is ours as commands see it (bridge/environment.py: never the
    bridge's credentials) plus the settings' `env` in effect. The folder's own hooks run in `sandbox`, and get the
    payload with `folder_view`'s fields in place of its own (a tool's result they must not see)."""
    outcome = HookOutcome()
    if not hooks:
        return outcome
    data = json.dumps(dict(payload)).encode()
    view = folder_view() if callable(folder_view) and any(h.folder for h in hooks) else folder_view
    folder_data = json.dumps({**payload, **view}).encode() if view and not callable(view) else data
    project = {"CLAUDE_PROJECT_DIR": str(cwd), "AGENT_BRIDGE_PROJECT_DIR": str(cwd)}
    hook_env = {**handed_out(os.environ, pass_env=pass_env), **(env or {}), **project}
    # the folder's own hooks run unasked: in the sandbox, none of the secrets the user's settings hand their commands
    # (`passEnv`, a token in `env`), as it hides the files that hold them (outside it, where the user took them out
    # or none can start, they run as before)
    folder_env = {**handed_out(os.environ), **without_secrets(env or {}), **project}
    runs = await asyncio.gather(
        *(
            _run_one(hook, folder_data, cwd=cwd, env=hook_env, sandbox=sandbox, contained_env=folder_env)
            if hook.folder
            else _run_one(hook, data, cwd=cwd, env=hook_env, sandbox=None)
            for hook in hooks
        )
    )
    for run in runs:
        _merge(outcome, run, event)
    return outcome


async def _run_one(
    hook: HookCommand,
    data: bytes,
    *,
    cwd: Path,
    env: dict[str, str],
    sandbox: HookSandbox | None,
    contained_env: dict[str, str] | None = None,
) -> HookRun:
    """One hook; in `sandbox` (a folder's own), with `contained_env` when it does run in it."""
    wrapper = sandbox.for_hook(hook.timeout) if sandbox is not None else None
    sandboxed = wrapper is not None
    if sandboxed and contained_env is not None:
        env = contained_env
    try:
        launch = Launch(sh_argv(hook.command), env)  # `sh -c`; Git Bash on Windows (bridge/execution/shell.py)
        if wrapper is not None:
            launch = await wrapper.prepare(launch.argv, cwd=cwd, env=env, registry=None)
    except (OSError, CannotRun) as exc:
        return HookRun(hook.command, None, "", "", error=f"could not start: {exc}", sandboxed=sandboxed)
    try:
        return await _run_launched(hook, launch, data, cwd=cwd, sandboxed=sandboxed)
    finally:
        if launch.release is not None:
            launch.release()


async def _run_launched(hook: HookCommand, launch: Launch, data: bytes, *, cwd: Path, sandboxed: bool) -> HookRun:
    try:
        proc = await asyncio.create_subprocess_exec(
            *launch.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env=launch.env,
            pass_fds=launch.pass_fds,
            **own_group(),  # its own process group, so a timeout kills the whole tree
        )
    except (OSError, CannotRun) as exc:
        return HookRun(hook.command, None, "", "", error=f"could not start: {exc}", sandboxed=sandboxed)
    finally:
        for fd in launch.pass_fds:  # the child has its own (the sandbox's seccomp filter)
            with contextlib.suppress(OSError):
                os.close(fd)
    if launch.run is not None:  # the sandbox's watch over held paths ends a hook that makes one
        loop = asyncio.get_running_loop()

        def stop() -> None:  # (from the watcher's thread)
            loop.call_soon_threadsafe(_kill_group, proc)

        launch.run.started(stop, lambda: _kill_group(proc))
    try:
        stdout, stderr = await asyncio.wait_for(_exchange(proc, data), timeout=hook.timeout)
    except TimeoutError:
        _kill_group(proc)
        with contextlib.suppress(Exception):
            await proc.wait()
        error = f"timed out after {hook.timeout:g} s"
        return HookRun(hook.command, None, "", "", timed_out=True, error=error, sandboxed=sandboxed)
    except BaseException:
        _kill_group(proc)  # cancelled with the turn: never leave the hook running
        with contextlib.suppress(Exception):
            await asyncio.shield(proc.wait())
        raise
    out, err = _text(stdout), _text(stderr)
    notes = () if launch.run is None else tuple(launch.run.notes(f"{out}\n{err}", proc.returncode))
    cut = len(stdout) > _MAX_OUTPUT
    return HookRun(
        hook.command, proc.returncode, out, err, sandboxed=sandboxed, notes=notes, folder=hook.folder, cut=cut
    )


async def _exchange(proc: asyncio.subprocess.Process, data: bytes) -> tuple[bytes, bytes]:
    """`communicate`, keeping at most `_MAX_OUTPUT` bytes of each stream: the rest is read and dropped, so a hook
    that writes gigabytes fills no memory of the bridge's (its own limits bound only what it holds itself)."""

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a hook that reads none of it
            proc.stdin.write(data)
            await proc.stdin.drain()
        proc.stdin.close()

    async def kept(stream: asyncio.StreamReader | None) -> bytes:
        assert stream is not None
        out = bytearray()
        while chunk := await stream.read(1 << 16):
            out += chunk[: max(0, _MAX_OUTPUT + 1 - len(out))]  # (one byte more: to tell it was cut)
        return bytes(out)

    _, stdout, stderr = await asyncio.gather(feed(), kept(proc.stdout), kept(proc.stderr))
    await proc.wait()
    return stdout, stderr


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    kill_tree(proc.pid)


def _text(raw: bytes) -> str:
    return raw[:_MAX_OUTPUT].decode("utf-8", errors="replace")


def _merge(outcome: HookOutcome, run: HookRun, event: str) -> None:
    outcome.runs.append(run)
    if run.error is not None:
        message = f"hook `{run.command}` {run.error}"
        log.info("%s", message)  # (the loop shows it: `errors`, a warning notice)
        outcome.errors.append(message)
        return
    # it went on: what the sandbox refused it or set aside, said (once: hooks of one event run at once, and each
    # one's watch sees what another made)
    fresh = [note for note in run.notes if not any(note in said for said in outcome.errors)]
    if run.exit_code == 0 and fresh:
        message = f"hook `{run.command}`: " + " ".join(fresh) + SANDBOXED_NOTE
        log.info("%s", message)  # (the loop shows it: `errors`, a warning notice)
        outcome.errors.append(message)
    if run.exit_code == 2:
        outcome.blocked = True
        reason = run.stderr.strip() or f"blocked by hook `{run.command}`"
        if run.notes:  # (`sh` exits 2 when it can't open a redirection: the sandbox refused, the hook meant nothing)
            reason += "".join(f" {note}" for note in run.notes) + SANDBOXED_NOTE
        _add_reason(outcome, reason)
        if event == "PreToolUse":
            _decide(outcome, "deny")
        return
    if run.exit_code != 0:
        message = f"hook `{run.command}` failed with exit code {run.exit_code}: {run.stderr.strip()}"
        if run.sandboxed:
            message += "".join(f" {note}" for note in run.notes) + SANDBOXED_NOTE
        log.info("%s", message)  # (the loop shows it: `errors`, a warning notice)
        outcome.errors.append(message)
        return
    if run.cut and run.stdout.lstrip().startswith("{"):
        # a JSON answer too long to read whole: what it said (a deny, `continue: false`) is not known, so the call or
        # prompt it was asked about does not go ahead on a guess (after the fact, PostToolUse and Stop: only said)
        message = f"hook `{run.command}` answered with more than {_MAX_OUTPUT // 1024} KiB of JSON; it was not read"
        log.info("%s", message)
        outcome.errors.append(message)
        if event in ("PreToolUse", "UserPromptSubmit"):
            outcome.blocked = True
            _add_reason(outcome, f"{message}, so this does not go ahead")
            if event == "PreToolUse":
                _decide(outcome, "deny")
        return
    parsed = _json_output(run.stdout)
    if parsed is None:
        if run.stdout.strip() and event == "UserPromptSubmit":
            outcome.additional_context.append(run.stdout.strip())
        return
    _apply_json(outcome, parsed, event, folder=run.folder, command=run.command)


def _json_output(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _apply_json(outcome: HookOutcome, data: dict[str, Any], event: str, *, folder: bool, command: str) -> None:
    if data.get("continue") is False:
        outcome.stop = True
        outcome.stop_reason = str(data.get("stopReason", ""))
    if isinstance(data.get("systemMessage"), str):
        outcome.system_messages.append(data["systemMessage"])
    legacy = data.get("decision")
    if legacy in ("block", "deny"):
        outcome.blocked = True
        _add_reason(outcome, str(data.get("reason", "blocked by hook")))
        if event == "PreToolUse":
            _decide(outcome, "deny")
    elif legacy in ("approve", "allow") and event == "PreToolUse" and not _widens(folder, command):
        _decide(outcome, "allow")
        _add_reason(outcome, str(data.get("reason", "")))
    specific = data.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    permission = specific.get("permissionDecision")
    if permission in ("allow", "deny", "ask") and not (permission == "allow" and _widens(folder, command)):
        _decide(outcome, permission)
        _add_reason(outcome, str(specific.get("permissionDecisionReason", "")))
        if permission == "deny":
            outcome.blocked = True
    updated = specific.get("updatedInput")
    if isinstance(updated, dict):
        outcome.updated_input = updated
        outcome.folder_rewrite = folder
    context = specific.get("additionalContext")
    if isinstance(context, str) and context:
        outcome.additional_context.append(context)


def _widens(folder: bool, command: str) -> bool:
    """A folder's hook said `allow`: not taken (logged)."""
    if folder:
        log.info(
            "hook `%s` (the folder's own) allowed a call; a folder's hook may only narrow: judged as usual", command
        )
    return folder


def _decide(outcome: HookOutcome, decision: Literal["allow", "deny", "ask"]) -> None:
    if outcome.decision is None or _RANK[decision] > _RANK[outcome.decision]:
        outcome.decision = decision


def _add_reason(outcome: HookOutcome, reason: str) -> None:
    if reason:
        outcome.reason = f"{outcome.reason}\n{reason}" if outcome.reason else reason
