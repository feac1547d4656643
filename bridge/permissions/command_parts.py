"""A simple command as the permission layer sees it (`Part`): its words behind wrappers, the forms deny and ask
rules are matched on, what it reads and writes, why it is not read-only. shell.py's verdict is a list of these;
shell_build.py makes them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from bridge.environment import PROGRAM_ENV
from bridge.permissions.command_effects import Access, Effects
from bridge.permissions.shell_syntax import Command, Word

DANGEROUS_ENV = PROGRAM_ENV  # (bridge/environment.py: settings `env` may not set them either)
# The variables an allow rule is matched without (`CI=1 npm test` is `npm test` to `Bash(npm test *)`): they change
# how output looks or name a mode, never what runs. Any other `NAME=value` before the command, or given to it by
# `env`, must be in the rule itself (attack round 24: `NPM_Config_node_options=--import=… npm test`, npm reading
# its configuration from the environment in any case, and `MAKEFILES=/dev/stdin make test` ran code under rules
# that named only the command — a list of the dangerous names is never complete).
RULE_ENV = re.compile(
    r"^(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLUMNS|LINES|TERM|COLORTERM|"
    r"POSIXLY_CORRECT|CI|NODE_ENV|RUST_BACKTRACE|RUST_LOG|PYTHONUNBUFFERED|PYTHONDONTWRITEBYTECODE|PYTHONIOENCODING|"
    r"PYTHONHASHSEED|GOOS|GOARCH|CGO_ENABLED|GO111MODULE|PYTEST_DISABLE_PLUGIN_AUTOLOAD|DEBUG|VERBOSE)$"
)
SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/stdin", "/dev/zero"})
FD_DEVICE = re.compile(r"/dev/fd/[0-9]+")
UNKNOWN = Word("…", "…", why="computed at run time")


@dataclass(frozen=True)
class WriteTarget:
    word: Word | None  # None: a path computed at run time
    recursive: bool = False  # the whole tree below (rm -r, mv): a protected path inside counts
    redirect: bool = False  # an output redirection's (`> out.txt`): no command rule covers it, only a path rule


@dataclass
class Part:
    """One simple command as the permission layer sees it."""

    command: Command
    argv: tuple[Word, ...]  # the words after `NAME=value` prefixes
    effective: tuple[Word, ...]  # behind wrappers that run it unchanged (`timeout 5 npm test` is `npm test`)
    deny_forms: list[tuple[Word, ...]] = field(default_factory=list)  # what deny and ask rules are matched on
    nested: bool = False  # parsed out of `bash -c '…'`, `xargs`, `find -exec`…: for deny and ask rules only
    hazard: str | None = None  # why it must ask even under a broad allow rule
    hazard_command: str | None = None  # a rule naming this command lets the hazard run (`Bash(sudo apt update)`)
    unknown_program: str | None = None  # why its program can't be known before it runs
    opaque: str | None = None  # why what it finally runs can't be known (code given as text, recipes): deny
    # and ask rules count it as matching, nothing else changes (`python3 -c …` is judged as python3 otherwise)
    probe_forms: list[tuple[Word, ...]] = field(default_factory=list)  # its arguments read as commands
    effects: Effects | None = None  # what its program does, flag by flag (None: no program)
    read_only: bool = False
    why: str = ""  # why it is not read-only
    reads_only: bool = False  # read-only but for its output redirections (`ls > out.txt`)
    reads: list[Access] = field(default_factory=list)
    writes: list[WriteTarget] = field(default_factory=list)
    unknown_reads: bool = False  # may read paths that can't be known here
    cd: Word | None = None  # `cd DIR`: where later parts run
    env_set: list[str] = field(default_factory=list)  # variables a wrapper sets for it (`env CI=1 …`)
    span: tuple[int, int] = (0, 0)  # where it is in the command text (a nested part: the part that runs it)
    environment: bool = False  # it reads environment variables that may hold secrets
    exported: list[str] = field(default_factory=list)  # what earlier parts exported for it (`export FOO=1; …`)
    # The `NAME=value` settings it may run with, which deny and ask rules that name a setting look for
    # (`Bash(RAILS_ENV=production *)`): its own, `env NAME=value`'s and `sudo NAME=value`'s (`setting_words`), those
    # of the commands that start it (`NAME=value bash -c …`: `started_by`), and what the whole command line exports
    # anywhere (`settings`, shared: a loop or a trap runs its parts in another order than written).
    setting_words: list[Word] = field(default_factory=list)
    started_by: Part | None = None
    settings: ScriptSettings | None = None
    probed: list[Part] = field(default_factory=list)  # the commands read in its arguments (`probe_forms`'), whole

    def all_settings(self, limit: int) -> list[Word] | None:
        """Every setting it may run with (see `setting_words`); None: more than `limit`, or a name computed at
        run time (any setting at all)."""
        found: list[Word] = []
        part: Part | None = self
        while part is not None and len(found) <= limit:
            found += part.setting_words
            part = part.started_by
        if self.settings is not None:
            if self.settings.computed is not None:
                return None
            found += self.settings.words()
        return found if len(found) <= limit else None

    @property
    def text(self) -> str:
        return self.command.text

    @property
    def static(self) -> bool:
        return all(w.static for w in self.effective)

    @property
    def canonical(self) -> str:
        return shlex.join(w.value for w in self.argv)

    def forms(self, *, for_deny: bool) -> list[tuple[Word, ...]]:
        if for_deny:  # (and with its settings: `Bash(FOO=1 rm *)` is about `FOO=1 rm x` too)
            settings = [(*self.command.assignments, *self.argv)] if self.command.assignments and self.argv else []
            return self.deny_forms + self.probe_forms + settings
        return [f for f in (self.argv, self.effective) if f]

    def unruled_settings(self) -> list[str]:
        """The variables set for it (`NAME=value` before it, `env NAME=value` in front) that an allow rule must name
        to allow it: all but `RULE_ENV`'s."""
        names = [re.split(r"\+?=", word.text, maxsplit=1)[0] for word in self.command.assignments] + self.env_set
        return [name for name in [*names, *self.exported] if not RULE_ENV.match(name)]

    @property
    def settings_elsewhere(self) -> bool:
        """A setting another part of the command made for it (`export FOO=1 && npm test`): no rule for this part
        can name it, so only a rule for every command (`Bash`, `Bash(*)`) allows it."""
        return any(not RULE_ENV.match(name) for name in self.exported)

    def allow_forms(self) -> list[tuple[Word, ...]]:
        """What allow rules are matched on: its words, and behind wrappers — or, with `unruled_settings`, only its
        whole text with the settings (`Bash(npm test *)` does not allow `NPM_CONFIG_X=… npm test`)."""
        if not self.unruled_settings():
            return self.forms(for_deny=False)
        if self.settings_elsewhere:
            return []
        whole = (*self.command.assignments, *self.argv)
        return [whole] if whole else []

    @property
    def ruled_text(self) -> str:
        """The text a rule for exactly this command names (`canonical`, with the settings it must name)."""
        return (
            shlex.join(w.value for w in (self.allow_forms() or [self.argv])[0])
            if self.unruled_settings()
            else self.canonical
        )


class ScriptSettings:
    """The variables a whole command line sets and exports, read without regard to order (a loop or a `trap` runs
    later parts first) and failing closed where the checker does not follow a value: `+=`, `read`, `printf -v`,
    `declare -l`, a name computed at run time. What every part of the command may run with, for deny and ask rules
    that name a setting (the one use: an allow rule never counts on it)."""

    def __init__(self) -> None:
        self.exports: list[Word] = []  # `export NAME=value`, `declare -x NAME=value`
        self.bare: list[Word] = []  # `NAME=value` as a shell variable (alone, `declare NAME=value`, before `:`)
        self.export_names: set[str] = set()  # exported somewhere (`export NAME`)
        self.unknown: set[str] = set()  # given a value the checker does not follow
        self.allexport = False  # `set -a`, `shopt -so allexport`, `bash -a`: every variable set is exported
        self.computed: str | None = None  # why any name at all may be set (`export $(cat .env)`)
        self._words: tuple[Word, ...] | None = None

    def assigned(self, name: str, word: Word, *, bare: bool) -> None:
        self._words = None
        if word.text[len(name) :].startswith("+="):
            self.unknown.add(name)
        elif bare:
            self.bare.append(word)

    def unknown_value(self, name: str) -> None:
        self._words = None
        self.unknown.add(name)

    def declared(self, builtin: str, args: Sequence[Word], *, exported: bool) -> None:
        """`export`/`declare`/`typeset`/`local`/`readonly` with these arguments (`exported`: they are exported)."""
        self._words = None
        case = builtin != "export" and any(
            a.static and re.fullmatch(r"[-+][a-zA-Z]*[luc][a-zA-Z]*", a.value) for a in args
        )
        for arg in args:
            if not arg.static or arg.pattern is not None or "{" in arg.text:
                self.computed = f"`{builtin} {arg.text}` sets a variable whose name is known only at run time"
                continue
            if arg.value.startswith(("-", "+")):
                continue
            name, has_value = arg.value.split("=", 1)[0], "=" in arg.value
            if name.endswith("+"):  # `NAME+=value`
                name = name[:-1]
                self.unknown.add(name)
            if case:  # `declare -l NAME`: every value it is given is changed
                self.unknown.add(name)
            if exported:
                self.export_names.add(name)
            if has_value and name not in self.unknown:
                (self.exports if exported else self.bare).append(arg)

    def words(self) -> tuple[Word, ...]:
        if self._words is None:
            names = self.export_names
            found = [*self.exports]
            found += [w for w in self.bare if self.allexport or re.split(r"\+?=", w.text, maxsplit=1)[0] in names]
            found += [Word(f"{n}=…", f"{n}=…", why="its value is set at run time") for n in sorted(self.unknown)]
            self._words = tuple(found)
        return self._words


def safe_device(target: str) -> bool:
    """A device a command may read or write without it counting as a path (`/dev/null`, `/dev/fd/3`)."""
    return target in SAFE_DEVICES or FD_DEVICE.fullmatch(target) is not None
