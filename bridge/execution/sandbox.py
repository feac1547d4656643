"""The OS sandbox under every Bash command: bubblewrap (`bwrap`) on Linux, as Claude Code's own sandbox.

What it allows comes from the permission engine (bridge/permissions/sandbox_policy.py); the plan of mounts is
bridge/execution/sandbox_plan.py, bubblewrap's command line and its order of mounts bridge/execution/bwrap.py,
macOS's Seatbelt profile bridge/execution/seatbelt.py.

The workspace looks exactly as it is: a held path that does not exist yet gets no placeholder (`ls`, git and
`git add -A` would see it); it is watched instead, and what a command creates there is set aside at once
(bridge/execution/sandbox_watch.py). What the user allowed the call to write (`ToolContext.grants`) is left
writable — `git config user.name x`, once allowed, rewrites `.git/config` as it would outside.

Each command also runs in its own resource limits (bridge/execution/limits.py): memory, processes, file size and
CPU time, with cgroups where the machine lets us and rlimits otherwise; a breach ends the command, and its
result says which limit and how to raise it. When the sandbox refuses something (a read-only file system, a
busy mount point, no network), the result says it was the sandbox, what is held there and why, and what to do.

Where bwrap cannot start (not Linux, not installed, no namespaces), the session says so once and
the permission engine asks for every Bash command that is not read-only (`engine.unsandboxed`, step 10 of
its order); `sandbox.failIfUnavailable` makes such commands fail instead. `sandbox.enabled: false` (or
`AGENT_BRIDGE_SANDBOX=0`) turns it all off, limits included.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bridge.execution import host
from bridge.execution.bwrap import bwrap_argv, probe_bwrap
from bridge.execution.limits import Bounds, backend, bounds_for, limits_for
from bridge.execution.managed import Launch
from bridge.execution.quarantine import quarantine
from bridge.execution.registry import ProcessRegistry
from bridge.execution.sandbox_notes import refusal_notes
from bridge.execution.sandbox_plan import Availability, MountPlan, empty_file_made, plan_mounts
from bridge.execution.sandbox_watch import WATCHER, SetAside, Watch
from bridge.execution.seatbelt import probe_seatbelt, profile, seatbelt_argv
from bridge.execution.seccomp import filter_fd
from bridge.execution.shell import NoShell, git_bash
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.runs_later import GRANTS
from bridge.permissions.sandbox_policy import (
    SandboxPolicy,
    SandboxSettings,
    expand,
    folder_hooks_wanted,
    literal_root,
    policy_from_engine,
    sandbox_settings,
    sandbox_wanted,
    with_private_home,
)
from bridge.permissions.sandbox_policy import masks as policy_masks
from bridge.permissions.specifiers import compile_path_specifier

log = logging.getLogger(__name__)

REPLANS = 3  # a held path that appears while the mounts are planned: plan again, at most this often


class SandboxError(host.CannotRun):
    """The command cannot run sandboxed (and must not run otherwise). The message is for the model: the Bash tool
    hands it on as the call's error."""


# -- which sandbox, and can it start here? --------------------------------------------------------------


def probe() -> Availability:
    """The platform's sandbox, and whether it can start a sandbox like ours (checked once per process)."""
    if host.macos():
        return probe_seatbelt()
    if host.windows():
        return Availability(False, None, "Windows has no OS sandbox the bridge can use", "none")
    return probe_bwrap()


def warm_up() -> None:
    """Make ahead the once-per-process checks the first command would make: which resource limits this machine
    has (cgroup probes) and whether the sandbox can start (a trial `bwrap`). Tens of milliseconds, mostly spent
    waiting on the kernel: a front end runs this on a worker thread while the rest of the bridge loads, so they
    overlap the load instead of adding to the first tool call. Both answers are kept for the process; whatever
    fails here is met again, and reported, by the first command that needs it."""
    try:
        backend()
        probe()
    except Exception:
        log.info("checking the sandbox ahead failed; the first command checks again", exc_info=True)


# -- one command -----------------------------------------------------------------------------------------


AFTER_ENTRIES = 100_000  # what the look for new files a deny pattern forbids may visit after a command
AFTER_SECONDS = 1.0
_UNCHECKED: set[tuple[str, Path]] = set()  # (deny patterns, workspace) whose look could not be made, told once


class SandboxRun:
    """One command in the sandbox, from its start until its whole tree is gone: its watch over the held
    paths that don't exist, its resource bounds, and what its result should say."""

    def __init__(
        self,
        policy: SandboxPolicy,
        plan: MountPlan,
        watch: Watch | None,
        bounds: Bounds | None,
        grants: tuple[Path, ...] = (),
        registry: ProcessRegistry | None = None,
        quarantine: Path | None = None,
    ) -> None:
        self.registry = registry
        self.quarantine = quarantine  # where what the command made against a deny rule is set aside
        self.policy = policy
        self.plan = plan
        self.watch = watch
        self.bounds = bounds
        self._stop: Callable[[], None] = lambda: None
        self._released = False
        self._grants = contextlib.ExitStack()  # while it runs, other commands' watches leave its grants alone
        self._grants.enter_context(GRANTS.hold(grants))
        self._set_aside: list[Path] = []
        self.notes_shown = 0

    def started(self, stop: Callable[[], None], kill: Callable[[], None]) -> None:
        """The command runs; `stop` ends it (callable from any thread), `kill` kills its tree now (on the event
        loop's thread)."""
        self._stop = stop
        if self.watch is not None:
            self.watch.on_strike = stop
            self.watch.kill_now = kill

    def check(self, members: int) -> bool:
        """At each sweep of the supervisor: True when the command met a limit and must end."""
        if self.bounds is None:
            return False
        return self.bounds.breach() is not None or self.bounds.note_processes(members)

    def output_seen(self, text: str) -> None:
        """Each chunk of output: a process killed for its file size or CPU time ends the whole command."""
        named = "File size limit exceeded" in text or "CPU time limit exceeded" in text
        if self.bounds is not None and named and self.bounds.from_exit(None, text) is not None:
            self._stop()

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        if self.watch is not None:
            WATCHER.remove(self.watch)
        if self.bounds is not None:
            for folder in self.bounds.release():  # removed (the rest wait in the pool for the next command)
                if self.registry is not None:
                    self.registry.drop_cleanup(folder)
        self._grants.close()

    def breach(self, output: str, code: int | None) -> str | None:
        """The limit the command met, in words (with the setting to raise), or None."""
        if self.bounds is None:
            return None
        name = self.bounds.from_exit(code, output)
        return self.bounds.message(name) if name is not None else None

    def notes(self, output: str, code: int | None) -> list[str]:
        """What the command's result should say about the sandbox: a limit it met, what was set aside, and
        why writes or the network were refused."""
        if self.watch is not None:
            WATCHER.check(self.watch)
        out = []
        breach = self.breach(output, code)
        if breach is not None:
            out.append(breach)
        if self.watch is not None:
            out += self.watch.notes()
        out += self._denied_made()
        out += refusal_notes(output, self.policy, self.plan)
        return out

    def _denied_made(self) -> list[str]:
        """What the command made that an Edit deny pattern matches (`Edit(**/*.pem)`: a new `sub/x.pem`), set
        aside as the watch sets aside a held path: a read-only mount holds only what existed when it started, and
        code a command runs (`python3 -c "open('x.pem','w')"`) writes what no checker sees. A path that one names
        exactly is held and watched instead (sandbox_policy.py). Nothing is judged when either search was cut short
        (a path beyond the bound is not new)."""
        before = self.plan.denied_before
        patterns = tuple(p for p in self.policy.read_only if not literal_root(p)[1])
        if not patterns or self.quarantine is None:
            return []
        after = expand(patterns, entries=AFTER_ENTRIES, seconds=AFTER_SECONDS)
        if before is None or after.truncated:
            # a workspace too big to look through (or made so by the command: attack round 9): said, not hidden
            # (once per process and workspace: in a big one every command would say it)
            named = ", ".join(f"Edit({p.pattern})" for p in patterns)
            if (named, self.policy.cwd) in _UNCHECKED:
                return []
            _UNCHECKED.add((named, self.policy.cwd))
            return [
                f"The sandbox could not look through the whole workspace for files that {named} forbids (more "
                "entries than it checks per command): one this command made may be left; check before relying "
                "on it."
            ]
        notes = []
        for path in sorted(set(after.paths) - before, key=lambda p: len(p.parts)):
            if any(path.is_relative_to(done) for done in self._set_aside):
                continue  # inside what was set aside already
            real = Path(os.path.realpath(path.parent)) / path.name
            if not any(real.is_relative_to(root) for root in self.policy.writable):
                continue
            try:  # (where it really is: quarantine follows no link on the way)
                moved = quarantine(real, self.quarantine)
            except OSError as error:  # a link appeared on its way since (`Changed`)
                notes.append(f"The sandbox could not set aside {path}, which a deny rule forbids writing: {error}")
                continue
            if moved is False:
                continue
            self._set_aside.append(path)
            to = moved if isinstance(moved, Path) else None
            notes.append(SetAside(path, "a deny rule forbids writing it", to).note())
        return notes


# -- the session's sandbox -------------------------------------------------------------------------------

_sandboxes: weakref.WeakSet[Sandbox] = weakref.WeakSet()


class Sandbox:
    """A session's sandbox (`ctx.services.sandbox`): its policy, its private /tmp, its warning."""

    def __init__(
        self, policy: Callable[[SandboxSettings], SandboxPolicy], settings: Callable[[], SandboxSettings]
    ) -> None:
        self._policy = policy
        self._settings = settings
        self._tmp: Path | None = None
        self._hook_tmp: Path | None = None  # the folder's hooks' own (never the commands': round 32)
        self._warned: set[str] = set()
        # where what it makes for a call that names no registry (a folder's hook) is written down, so that a
        # killed bridge's watchdog removes it too: the session's (bridge/agent.py)
        self.registry: ProcessRegistry | None = None
        _sandboxes.add(self)

    @classmethod
    def for_engine(cls, engine: PermissionEngine) -> Sandbox:
        """Over the engine's rules; what commands must not read whatever the rules say — the bridge's own secrets
        (`engine.secrets`, bridge/permissions/own_secrets.py) — masked like a Read deny rule's paths."""
        masks = engine.secrets.patterns

        def policy(settings: SandboxSettings) -> SandboxPolicy:
            found = policy_from_engine(engine, settings)
            # and the other names of their files (hard links) in the workspace, while there are any: a command
            # may read a file no checker sees it name (`python3 -c "open('sub/c.json')"`)
            links, cut = engine.secrets.inodes.links_under([found.cwd, *found.writable])
            if cut:
                log.warning("a file of the bridge's own secrets has another name; the workspace is too big to find it")
            linked = tuple(
                compile_path_specifier("/" + re.sub(r"([*?\[\\])", r"\\\1", path), cwd=found.cwd, root=found.cwd)
                for path in links
            )
            extra = (*masks, *linked)
            return dataclasses.replace(found, masked=(*found.masked, *extra)) if extra else found

        return cls(policy, lambda: sandbox_settings(engine.settings))

    @property
    def wanted(self) -> bool:
        return sandbox_wanted(self._settings())

    def masks(self, path: Path, *, below: bool = False) -> bool:
        """Whether the sandbox hides `path` from what it runs (a Read deny rule, `denyRead`, a credential, the
        bridge's own secrets), so that nothing hands it to a folder's hook another way; `below`: or what is in it."""
        return policy_masks(self._policy(self._settings()), path, below=below)

    @property
    def enforced(self) -> bool:
        """Commands run sandboxed (wanted, and bwrap can start here)."""
        return self.wanted and probe().ok

    @property
    def unavailable(self) -> bool:
        """Wanted but bwrap cannot start: every Bash command that is not read-only must ask."""
        return self.wanted and not probe().ok

    def problems(self) -> list[str]:
        """What the user should hear at session start: invalid `sandbox` settings, an unavailable sandbox, no shell
        to run commands in (Windows without Git Bash)."""
        settings = self._settings()
        found = list(settings.problems)
        if host.windows():
            try:
                git_bash()
            except NoShell as missing:
                found.append(str(missing))
        if sandbox_wanted(settings) and not (availability := probe()).ok:
            then = (
                "Bash commands and this folder's own hooks will fail (sandbox.failIfUnavailable)"
                if settings.fail_if_unavailable
                else "every Bash command that is not read-only will ask first, and this folder's own hooks (once "
                "trusted) run outside it"
            )
            found.append(
                f"OS sandbox unavailable — {availability.reason}; {then}. "
                'Set "sandbox": {"enabled": false} in .agent-bridge/settings.json to run without it.'
            )
        return found

    def for_call(
        self, *, grants: tuple[Path, ...] = (), timeout_s: float | None = None, data_dir: Path | None = None
    ) -> CallSandbox:
        """This sandbox for one call: what it was allowed to write, its timeout (for the CPU bound; None for a
        background shell) and where set-aside files go."""
        return CallSandbox(self, grants, timeout_s, data_dir)

    @property
    def holds_folder_hooks(self) -> bool:
        """The folder's own hooks will run in the sandbox (wanted, not taken out by the user, and it can start)."""
        settings = self._settings()
        return folder_hooks_wanted(settings) and probe().ok

    def for_hook(self, timeout_s: float) -> CallSandbox | None:
        """What a hook of the folder's own settings runs in (bridge/permissions/hooks.py), or None: as it is (no
        sandbox wanted by the user's settings, `folderHooks: false` in them, or no sandbox can start here: the
        session's notice says so, `problems`). With `failIfUnavailable`, the hook fails to start instead. A folder's
        own `enabled: false` (trusted) turns the sandbox off for commands, not for its own hooks. It sees none of the
        home folder but the installed tools (`with_private_home`): a hook runs unasked."""
        settings = self._settings()
        if not folder_hooks_wanted(settings):
            return None
        if not probe().ok and not settings.fail_if_unavailable:
            return None
        return CallSandbox(self, (), timeout_s, None, always=True, private_home=True)

    async def prepare(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch:
        return await self.for_call().prepare(argv, cwd=cwd, env=env, registry=registry)

    async def _prepare(
        self, call: CallSandbox, argv: list[str], env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch:
        settings = self._settings()
        if not sandbox_wanted(settings) and not call.always:
            return Launch(argv, env)
        registry = registry if registry is not None else self.registry
        bounds = bounds_for(limits_for(settings.limits, timeout_s=call.timeout_s))
        prefix = _bounds_prefix(bounds, registry)
        availability = probe()
        if not availability.ok or availability.binary is None:
            if settings.fail_if_unavailable:
                if bounds is not None:
                    bounds.release()
                raise SandboxError(
                    f"The OS sandbox cannot start ({availability.reason}) and "
                    "sandbox.failIfUnavailable is set: the command was not run."
                )
            run = (
                SandboxRun(self._policy(settings), MountPlan(), None, bounds, registry=registry)
                if bounds is not None
                else None
            )
            return Launch([*prefix, *argv], env, run=run)
        policy = self._policy(settings)
        if call.private_home:
            policy = with_private_home(policy)
        # a folder's hook gets a /tmp of its own: the model's commands put what they copy from elsewhere in theirs
        tmp = self._private_tmp(registry) if not call.private_home else self._folder_hooks_tmp(registry)
        quarantine = (call.data_dir or Path(tempfile.gettempdir()) / f"agent-bridge-{os.getuid()}") / "quarantine"
        plan, watch = await asyncio.to_thread(self._plan_and_watch, policy, tmp, call.grants, quarantine)
        for pattern in plan.truncated:
            if pattern not in self._warned:
                self._warned.add(pattern)
                log.warning(
                    "deny rule %s matches more paths than the sandbox checks per command; it masks only "
                    "the first ones found",
                    pattern,
                )
        if registry is not None and (empty := empty_file_made()) is not None:
            registry.add_cleanup(empty, "file")  # (noted once: the same entry is not written again)
        run = SandboxRun(policy, plan, watch, bounds, call.grants, registry, quarantine)
        if availability.backend == "seatbelt":
            plan.backend = "seatbelt"
            wrapper = seatbelt_argv(availability.binary, await asyncio.to_thread(profile, policy, plan, tmp))
            return Launch(
                [*prefix, *wrapper, *argv],
                {**env, "TMPDIR": str(tmp), "AGENT_BRIDGE_SANDBOXED": "1"},
                release=run.release,
                run=run,
            )
        seccomp_fd = filter_fd(sockets=not policy.unix_sockets)  # (the keyrings are refused either way)
        wrapped = [*prefix, *bwrap_argv(availability.binary, policy, plan, seccomp_fd), *argv]
        return Launch(
            wrapped,
            {**env, "TMPDIR": "/tmp", "AGENT_BRIDGE_SANDBOXED": "1"},
            wrapped=True,
            release=run.release,
            run=run,
            pass_fds=() if seccomp_fd is None else (seccomp_fd,),
        )

    @staticmethod
    def _plan_and_watch(
        policy: SandboxPolicy, tmp: Path, grants: tuple[Path, ...], quarantine: Path
    ) -> tuple[MountPlan, Watch | None]:
        """Plan the mounts and watch what is missing; a held path that appears meanwhile is planned again
        (it can be mounted read-only after all)."""
        for _ in range(REPLANS):
            plan = plan_mounts(policy, tmp, grants)
            if not plan.missing:
                return plan, None
            watch = Watch(list(plan.missing), grants, quarantine, plan.expect, plan.links, policy.writable)
            appeared = WATCHER.add(watch)
            if not [h for h in appeared if not h.new_repository]:
                return plan, watch
            WATCHER.discard(watch)
        raise SandboxError(
            "The sandbox cannot hold the workspace's protected files: they keep appearing while the "
            "command is prepared. Try again."
        )

    def _folder_hooks_tmp(self, registry: ProcessRegistry | None) -> Path:
        if self._hook_tmp is None or not self._hook_tmp.is_dir():
            self._hook_tmp = Path(tempfile.mkdtemp(prefix=f"agent-bridge-hooks-tmp-{os.getuid()}-"))
            if registry is not None:
                registry.add_cleanup(self._hook_tmp, "tree")
        return self._hook_tmp

    def _private_tmp(self, registry: ProcessRegistry | None) -> Path:
        if self._tmp is None or not self._tmp.is_dir():
            self._tmp = Path(tempfile.mkdtemp(prefix=f"agent-bridge-tmp-{os.getuid()}-"))  # 0700, ours
            if registry is not None:
                registry.add_cleanup(self._tmp, "tree")
        return self._tmp

    def close(self) -> None:
        """Remove the private /tmp folders (the bridge's exit; also done at interpreter exit)."""
        tmps, self._tmp, self._hook_tmp = (self._tmp, self._hook_tmp), None, None
        for tmp in tmps:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)


def _bounds_prefix(bounds: Bounds | None, registry: ProcessRegistry | None) -> list[str]:
    """The prologue that puts a command in its bounds; a cgroup that can't be made falls back to rlimits."""
    if bounds is None:
        return []
    try:
        prefix = bounds.prepare()
    except OSError as error:
        log.warning("cannot make a cgroup for a command (%s); it runs with rlimits only", error)
        bounds.release()
        bounds.fallback()
        prefix = bounds.prepare()
    if registry is not None:
        for folder in bounds.cgroups:
            registry.add_cleanup(folder, "cgroup")
    return prefix


@dataclass
class CallSandbox:
    """The session's sandbox for one call (`Sandbox.for_call`): a CommandWrapper for the supervisor."""

    sandbox: Sandbox
    grants: tuple[Path, ...]
    timeout_s: float | None
    data_dir: Path | None
    always: bool = False  # whatever the settings say of the sandbox (a folder's hook: `Sandbox.for_hook`)
    private_home: bool = False  # the home folder hidden but for its tools (a folder's hook: `with_private_home`)

    async def prepare(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], registry: ProcessRegistry | None
    ) -> Launch:
        return await self.sandbox._prepare(self, argv, env, registry)


@atexit.register
def _remove_tmps() -> None:
    for sandbox in list(_sandboxes):
        sandbox.close()
