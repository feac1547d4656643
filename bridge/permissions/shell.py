"""The one verdict on a shell command: what it runs, reads and writes, and whether it is read-only.

`verdict(command)` parses once (cached) and judges every simple command of it — those in substitutions,
groups and loop bodies too — as a `Part` (command_parts.py; shell_build.py builds them). The permission engine
matches rules against parts, plan mode and the auto-allow ask `ShellVerdict.read_only`, and the tool that runs
commands runs read-only ones in parallel: all three read the same verdict, so "read-only" means one thing.

Read-only is flag-exact (see `commands.py`): a part is read-only only when every word is understood and
nothing it does writes or runs anything. Wrappers are seen through (shell_runners.py): `timeout 5 cat x` is
`cat x` for every question; `sudo`, `xargs`, `find -exec`, `env -S`, `sh -c`, `eval`, `watch`, `trap` run
commands that become parts of their own (`nested`), matched by deny and ask rules. A part whose program can't be
known before it runs (`$(echo rm) x`, `{rm,x}`, `rm${IFS}x`, a shell reading a script) has `unknown_program`
set: deny and ask rules count it as matching. A command too large or too odd to read has `error` set:
it asks, and every deny and ask rule that could apply matches it.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from bridge.permissions.command_parts import Part, safe_device
from bridge.permissions.shell_build import Builder
from bridge.permissions.shell_syntax import Script, ShellSyntaxError
from bridge.permissions.shellparse import parse_into

MAX_COMMAND_CHARS = 100_000
ANALYSIS_DEADLINE_S = 5.0  # the bound on reading one command off the event loop (it takes well under 1 s)
_CACHE_SIZE = 512
_LOOKALIKE_OPERATORS = frozenset(";|&<>$`()\n{}[]*?~'\"\\")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\u0085]")
_DESTRUCTIVE = frozenset(
    {"rm", "rmdir", "shred", "dd", "truncate", "mv", "kill", "pkill", "killall", "wipefs", "fdisk"}
)


@dataclass(frozen=True)
class ShellVerdict:
    source: str
    parts: tuple[Part, ...] = ()
    error: str | None = None  # could not be read: it asks, and deny/ask rules that could apply match
    background: bool = False
    globs_unreliable: bool = False  # `shopt`/`set` may change how globs expand: glob operands are unknown

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def read_only(self) -> bool:
        """Nothing written, nothing run beyond read-only commands, every word understood. Paths are not
        judged here (the engine checks them against the workspace and Read rules)."""
        return self.why_not_read_only is None

    @property
    def why_not_read_only(self) -> str | None:
        whole = self.why_not_read_only_as_a_whole
        if whole is not None:
            return whole
        for part in self.parts:
            if not part.nested and not part.read_only:
                return part.why or f"`{part.text}` is not read-only"
        return None

    @property
    def why_not_read_only_as_a_whole(self) -> str | None:
        """What makes the command not read-only whatever its parts are: it can't be read, or it starts a
        background job (which outlives the call and runs beside whatever comes next). The allow decision asks
        this for every part it would let run as read-only."""
        if self.error is not None:
            return f"The command {self.error}"
        if self.background:
            return "The command starts a background job"
        return None

    def in_background(self) -> ShellVerdict:
        return self if self.background else dataclasses.replace(self, background=True)

    @property
    def destructive(self) -> bool:
        """Deletes or overwrites irreversibly (rm, mv, dd, `> file`, git reset --hard, …)."""
        if self.error is not None:
            return bool(re.search(r"\b(rm|mv|dd|shred|truncate)\b", self.source))
        return any(_destructive(part) for part in self.parts)


def verdict(command: str) -> ShellVerdict:
    """The verdict on `command`, parsed once however often it is asked (cached by text)."""
    if len(command) > MAX_COMMAND_CHARS:
        return ShellVerdict(
            command[:200],
            error=f"is {len(command):,} characters long: the permission check reads at "
            f"most {MAX_COMMAND_CHARS:,} (MAX_COMMAND_CHARS)",
        )
    return _cached_verdict(command)


def call_verdict(command: str, *, background: bool = False) -> ShellVerdict:
    """The verdict on a call's command, run in the background when the call says so (`run_in_background`).
    Plan mode, the allow decision and the concurrency of the tool running it all ask this."""
    found = verdict(command)
    return found.in_background() if background else found


@lru_cache(maxsize=_CACHE_SIZE)
def _cached_verdict(command: str) -> ShellVerdict:
    try:
        return _analyze(command)
    except ShellSyntaxError as exc:
        return ShellVerdict(command, error=str(exc))
    except RecursionError:
        return ShellVerdict(command, error="nests too deeply to be checked")


def _analyze(command: str) -> ShellVerdict:
    if not command.strip():
        return ShellVerdict(command, error="is empty")
    if _CONTROL_CHARS.search(command):
        return ShellVerdict(command, error="contains control characters")
    if not command.isascii():
        folded = unicodedata.normalize("NFKC", command)
        if any(c in _LOOKALIKE_OPERATORS for c in set(folded) - set(command)):
            return ShellVerdict(command, error="contains look-alikes of shell operators")
    script = Script()
    parse_into(command, script)
    builder = Builder(script)
    for cmd in script.commands:
        builder.add(cmd, nested=False, depth=0)
    builder.finish()
    return ShellVerdict(
        command, tuple(builder.parts), background=script.background, globs_unreliable=builder.globs_unreliable
    )


def _destructive(part: Part) -> bool:
    if any(
        r.op in (">", ">|")
        and r.target is not None
        and not (r.target.static and safe_device(r.target.value))
        and not r.target.pipe
        for r in part.command.redirects
    ):
        return True
    for form in part.deny_forms:
        if not form or not form[0].static:
            continue
        name = form[0].value.rsplit("/", 1)[-1]
        args = [w.value for w in form[1:] if w.static]
        if name in _DESTRUCTIVE or name.startswith("mkfs"):
            return True
        if name == "find" and "-delete" in args:
            return True
        if name == "git" and _git_destructive(args):
            return True
    return False


def _git_destructive(args: list[str]) -> bool:
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
