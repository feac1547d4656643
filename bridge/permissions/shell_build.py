"""How a parsed command becomes the verdict's parts: each simple command — those in substitutions, groups, loop
bodies and the strings other commands run — seen through its wrappers (shell_runners.py) and judged flag by flag
(commands.py): what it reads, what it writes, whether it is read-only and why not. A program the checker doesn't
know may run its arguments: they are probed as commands, and what a probe finds are forms deny and ask rules
match (never reads or writes).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.permissions.code_runners import runs_code
from bridge.permissions.command_effects import Access
from bridge.permissions.command_parts import (
    DANGEROUS_ENV,
    RULE_ENV,
    UNKNOWN,
    Part,
    ScriptSettings,
    WriteTarget,
    safe_device,
)
from bridge.permissions.commands import effects, known
from bridge.permissions.shell_runners import RUNNERS, Unknown, code_option
from bridge.permissions.shell_syntax import Command, Script, ShellSyntaxError, Word
from bridge.permissions.shellparse import parse_into
from bridge.secrets import looks_secret

MAX_NESTING = 16  # `bash -c "bash -c '…'"` levels read for deny rules
MAX_PROBES = 100  # arguments of an unknown program read as the start of a command it may run
MAX_PROBE_PARTS = 2_000  # commands one probe reads (its arguments as commands, values as programs)
MAX_VALUES = 8  # values one word is read for (`a=b:c` is `b:c` and `c`)

# Commands that run other code or change who runs it: always ask unless a rule names them explicitly.
_HAZARD_COMMANDS = {
    "eval": "eval runs a string as a command",
    "exec": "exec replaces the shell",
    "source": "source runs a script in this shell",
    ".": "`.` runs a script in this shell",
    "sudo": "sudo runs a command as another user",
    "doas": "doas runs a command as another user",
    "su": "su switches user",
    "pkexec": "pkexec runs a command as another user",
    "alias": "alias changes what a command name runs",
    "unalias": "unalias changes what a command name runs",
    "trap": "trap runs a string on a signal",
    "enable": "enable changes the shell's builtins",
    "builtin": "builtin bypasses functions",
    "hash": "hash changes which program a name runs",
    "let": "let evaluates arithmetic (it can run commands through variables)",
}
# The only variables a read-only command may be given (`LANG=C sort x`): they change how output looks.
_INERT_ENV = re.compile(
    r"^(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLUMNS|LINES|"
    r"TERM|POSIXLY_CORRECT)$"
)
_COMMAND_LINE = re.compile(r"[\s;&|<>()`$]")  # a word that may hold a command line (`ssh host 'rm x'`)
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_SUBSCRIPT_EVALUATORS = _DECLARATIONS | {"read", "mapfile", "readarray", "unset", "getopts"}
_SHELL_STATE = frozenset({"shopt", "set"})  # change how later words are expanded (globstar, dotglob, noglob…)
_REDEFINERS = frozenset({"alias", "enable", "hash"})  # later command names may run something else
_WRITERS = frozenset(
    {
        "tee",
        "cp",
        "mv",
        "ln",
        "install",
        "touch",
        "truncate",
        "rm",
        "rmdir",
        "mkdir",
        "shred",
        "chmod",
        "chown",
        "chgrp",
        "dd",
        "sed",
        "rsync",
        "unlink",
        "link",
        "mkfifo",
        "mknod",
    }
)
_LAST_IS_TARGET = frozenset({"cp", "ln", "install", "rsync", "link"})
_RECURSIVE_WRITERS = frozenset({"rm", "mv", "chmod", "chown", "chgrp", "rsync"})
# pytest's options that name what it writes, and whether it is a tree: `--basetemp` is removed whole before the run
# (attack round 24: `pytest --basetemp=.git` under `Bash(pytest *)` deleted the repository's history), the cache
# dir too with `--cache-clear`. Named here, they are judged as any command's writes: outside the workspace asks,
# a protected path asks in every mode.
_PYTEST_WRITES = {
    "--basetemp": True,
    "--junitxml": False,
    "--junit-xml": False,
    "--junit_xml": False,
    "--result-log": False,
    "--resultlog": False,
    "--report-log": False,
    "--log-file": False,
    "--html": False,
    "--json-report-file": False,
}
_SPECIAL_BUILTINS = frozenset(  # POSIX's: an assignment before one stays set after it (in sh, `set -o posix`)
    {":", ".", "break", "continue", "eval", "exec", "exit", "export", "readonly", "return", "set", "shift", "times"}
    | {"trap", "unset"}
)
_VALUE_READERS = frozenset({"read", "mapfile", "readarray", "getopts"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PYTEST_INI_WRITES = {"cache_dir": True, "log_file": False, "junit_logging_file": False}


class Builder:
    def __init__(self, script: Script, *, probing: bool = False) -> None:
        self.script = script
        self.probing = probing  # reading another program's arguments as commands (see `probe_arguments`)
        self.parts: list[Part] = []
        self.globs_unreliable = False
        self.programs_unreliable: str | None = None  # `PATH=…` / `export GIT_…` earlier: later programs unknown
        self.span = (0, 0)  # the span of the top-level part being read (nested parts share it)
        self.overflow = False  # a probe read more than MAX_PROBE_PARTS commands
        self.allexport = False  # an earlier `set -a`: a bare `NAME=value` is exported
        self.exported: list[str] = []  # variables earlier parts exported that change no program by name (`FOO`)
        self.settings = ScriptSettings()  # what variables the whole command sets and exports (`Part.settings`)
        self.starter: Part | None = None  # the part whose nested commands are being read

    def add(self, cmd: Command, *, nested: bool, depth: int) -> None:
        argv = cmd.words
        if not nested:
            self.span = cmd.span
        part = Part(
            cmd,
            argv,
            argv,
            nested=nested,
            span=self.span,
            exported=list(self.exported),
            setting_words=list(cmd.assignments),
            started_by=self.starter,
            settings=self.settings,
        )
        self.parts.append(part)
        special = bool(argv) and argv[0].static and argv[0].value in _SPECIAL_BUILTINS
        for word in cmd.assignments:
            name = re.split(r"\+?=", word.text, maxsplit=1)[0]
            self.settings.assigned(name, word, bare=not argv or special)
            if argv:
                self.probe_setting(word, part, depth)
            if DANGEROUS_ENV.match(name):
                if argv:
                    part.unknown_program = f"sets {name}, which changes what the command runs"
                else:
                    self.programs_unreliable = f"an earlier `{name}=…` changes what commands run"
                    if name == "GLOBIGNORE":
                        self.globs_unreliable = True
            elif not argv and self.allexport and not RULE_ENV.match(name):
                self.exported.append(name)  # (`set -a`: exported)
        outer, self.starter = self.starter, part  # what it starts runs with its settings
        try:
            inner = _peel(argv, part, self, depth)
            part.effective = inner.effective
            part.deny_forms = inner.deny_forms
            self._judge(part, cmd, depth)
        finally:
            self.starter = outer

    def finish(self) -> None:
        if self.programs_unreliable is not None:
            for part in self.parts:
                if part.argv and part.unknown_program is None:
                    part.unknown_program = self.programs_unreliable
                    part.read_only = part.reads_only = False
                    part.why = part.why or f"`{part.text}`: {self.programs_unreliable}"
        if self.globs_unreliable:
            for part in self.parts:
                if any(a.word.pattern is not None for a in part.reads):
                    part.unknown_reads = True
                    part.read_only = part.reads_only = False
                    part.why = part.why or f"`{part.text}`: an earlier `shopt`/`set` changes how globs expand"

    def nested_string(self, text: str | None, part: Part, depth: int, what: str) -> None:
        """Commands inside a string another command runs (`bash -c STR`): parts of their own."""
        if text is None:
            part.unknown_program = part.unknown_program or f"{what} is computed at run time"
            return
        if depth >= MAX_NESTING:
            part.unknown_program = f"{what} nests more than {MAX_NESTING} levels"
            return
        inner = Script()
        try:
            parse_into(text, inner)
        except ShellSyntaxError as exc:
            part.unknown_program = f"{what} can't be read ({exc})"
            return
        for cmd in inner.commands:
            self.add(cmd, nested=True, depth=depth + 1)
        if inner.background:
            self.script.background = True

    def probe_arguments(self, words: tuple[Word, ...], part: Part, depth: int) -> None:
        """A program the checker doesn't know may run its arguments as a command (`unbuffer rm x`, `ssh host
        'rm x'`, `tar --checkpoint-action=exec='rm x'`, `ssh -o ProxyCommand='rm x'`, `man --pager=prog`):
        every tail of its words that starts at an operand, every word read as a command line, and every value
        inside a word read as a program (see `probe_word`) add forms deny and ask rules match. What such a
        command can't name (`./runner sh` reading its input) makes the part opaque. Probes are only forms:
        their reads, writes and shell state count for nothing else. A tail starting at a word computed at run
        time is not probed (else every `python3 x.py "$f"` would match every deny rule)."""
        if self.probing:
            return  # the tails of a probe are tails of the words probed already
        heads = [i for i in range(1, len(words)) if words[i].static and not words[i].value.startswith("-")]
        if len(heads) > MAX_PROBES:
            part.opaque = part.opaque or (
                f"`{words[0].value}` has more than {MAX_PROBES} arguments that could be a command it runs"
            )
            return
        probe = self._probe(part)
        for i in heads:
            probe.add(Command(words[i:], text=part.text), nested=True, depth=depth + 1)
        for word in words[1:]:
            if word.static:
                probe.probe_word(word.value, depth, whole=not word.value.startswith("-"))
        self._take_probes(probe, part, words[0].value)

    def probe_program(self, value: Word, part: Part, depth: int, program: str) -> None:
        """The value of an option that names a program a known command runs (`rg --pre PROG`, `sort
        --compress-program=PROG`, `git grep -O'CMD'`): the program with arguments unknown here, and the value
        read as a command line. Forms for deny and ask rules, like `probe_arguments`."""
        if not value.static or depth >= MAX_NESTING:
            part.opaque = part.opaque or f"`{program}` runs a program computed at run time"
            return
        probe = self._probe(part)
        probe.add(Command((value, UNKNOWN), text=value.value), nested=True, depth=depth + 1)
        if _COMMAND_LINE.search(value.value):
            probe.probe_string(value.value, depth)
        self._take_probes(probe, part, program)

    def probe_setting(self, word: Word, part: Part, depth: int) -> None:
        """`NAME=value cmd`: a program may run what a variable names (`RSYNC_RSH=./x`, `FZF_DEFAULT_COMMAND='rm
        x'`, `TAR_OPTIONS=--use-compress-program=./x`): the value is probed like an option's."""
        if self.probing or not word.static:
            return
        value = word.value.split("=", 1)[1] if "=" in word.value else ""
        if not value:
            return
        probe = self._probe(part)
        probe.probe_word(value, depth, whole=True)
        if "/" in value and not _COMMAND_LINE.search(value):
            probe.add(Command((Word(value, value), UNKNOWN), text=value), nested=True, depth=depth + 1)
        self._take_probes(probe, part, word.value.split("=", 1)[0])

    def _probe(self, part: Part) -> Builder:
        """A builder for the commands in `part`'s arguments: they run with its settings, and what they export
        counts for the whole command (deny rules that name a setting: round 25's second verification)."""
        probe = Builder(Script(), probing=True)
        probe.settings, probe.starter = self.settings, part
        return probe

    def _take_probes(self, probe: Builder, part: Part, program: str) -> None:
        part.probed.extend(probe.parts)
        for found in probe.parts:
            part.probe_forms.extend(found.deny_forms)
            why = found.unknown_program or found.opaque
            if why is not None and part.opaque is None:
                part.opaque = f"`{program}` may run `{found.text}`, which {why}"
        if probe.overflow and part.opaque is None:
            part.opaque = (
                f"`{program}` has more possible commands in its arguments than the checker reads "
                f"({MAX_PROBE_PARTS}, MAX_PROBE_PARTS)"
            )

    def probe_word(self, text: str, depth: int, *, whole: bool) -> None:
        """A word that may hold a command (`whole`: the word itself is an operand, not an option): read as a
        command line when it looks like one, and each value inside it — after a `=` or a `:`, or attached to a
        short option — as a program run with arguments unknown here (`--rsh=prog`, `ProxyCommand=cmd`,
        `SYSTEM:cmd`, `-Pprog`)."""
        candidates = [(text, True)] if whole else []
        candidates += [(value, False) for value in _values_in(text)]
        for candidate, is_word in candidates:
            if self._full():
                return
            if _COMMAND_LINE.search(candidate):
                self.probe_string(candidate, depth)
            elif not is_word and (not whole or "/" in candidate):
                # an option's value may be any program (`--rsh=rm`); an operand's (`-v x=rm`, `NAME=value`) one
                # named by its path (`ProxyCommand=./x`). A whole word: a tail of `probe_arguments` reads it.
                self.add(Command((Word(candidate, candidate), UNKNOWN), text=candidate), nested=True, depth=depth + 1)

    def probe_string(self, text: str, depth: int) -> None:
        """A word read as a command line; one that isn't shell syntax can't be run by a shell: it is skipped.
        Each of its commands is read from every operand on too (`ProxyCommand rm x` runs `rm x`)."""
        if self._full():
            return
        inner = Script()
        try:
            parse_into(text, inner)
        except ShellSyntaxError:
            return
        for cmd in inner.commands:
            self.add(cmd, nested=True, depth=depth + 1)
            words = cmd.words
            for i in range(1, min(len(words), MAX_PROBES)):
                if self._full():
                    return
                if words[i].static and not words[i].value.startswith("-"):
                    self.add(Command(words[i:], text=cmd.text), nested=True, depth=depth + 1)

    def _full(self) -> bool:
        """A probe reads at most MAX_PROBE_PARTS commands (a bound on time); past it, the part is opaque."""
        if len(self.parts) >= MAX_PROBE_PARTS:
            self.overflow = True
        return self.overflow

    def nested_argv(self, words: Sequence[Word], part: Part, depth: int) -> None:
        """A command another command runs with these words (`xargs rm`, `find -exec rm {} ;`)."""
        if not words:
            return
        self.add(Command(tuple(words), text=part.text), nested=True, depth=depth + 1)

    def _judge(self, part: Part, cmd: Command, depth: int) -> None:
        for redirect in cmd.redirects:
            if redirect.kind == "write":
                target = redirect.target
                if target is None or target.pipe:
                    continue
                if target.static and safe_device(target.value):
                    continue
                part.writes.append(WriteTarget(target if target.static else None, redirect=True))
            elif redirect.kind == "read" and redirect.target is not None and not redirect.target.pipe:
                if redirect.target.static:
                    part.reads.append(Access(redirect.target))
                else:
                    part.unknown_reads = True
        reasons: list[str] = []
        redirected = bool(part.writes)
        if part.unknown_reads:
            reasons.append(f"`{part.text}` reads a path computed at run time")
        names = [re.split(r"\+?=", word.text, maxsplit=1)[0] for word in cmd.assignments] + part.env_set
        for name in names + part.exported if part.argv else ():
            if not _INERT_ENV.match(name):  # (the first is the reason: a thousand exports cost no more)
                how = "sets {} for it" if name in names else "gets {} from an earlier export"
                reasons.append(f"`{part.text}` {how.format(name)}")
                break
        if part.hazard is not None:
            reasons.append(f"`{part.text}`: {part.hazard}")
        if part.unknown_program is not None:
            reasons.append(f"`{part.text}`: {part.unknown_program}")
        secrets = [name for name in dict.fromkeys(cmd.expands) if looks_secret(name)]
        if secrets:
            reasons.append(f"`{part.text}` reads the environment variable {secrets[0]}, which may hold a secret")
            part.environment = True
        words = part.effective
        if words and part.unknown_program is None:
            program = words[0]
            name = program.value
            found = effects(name, words[1:])
            part.effects = found
            part.environment = part.environment or found.environment
            part.reads.extend(found.reads)
            part.unknown_reads = part.unknown_reads or found.unknown_reads
            part.writes.extend(WriteTarget(w if w.static else None) for w in found.writes)
            part.writes.extend(WriteTarget(w if w.static else None, recursive=True) for w in found.write_trees)
            if name == "cd" and found.read_only:
                part.cd = found.reads[0].word
            for value in found.runs:
                self.probe_program(value, part, depth, name)
            part.probe_forms.extend((Word(p, p), UNKNOWN) for p in found.run_programs)
            if found.runs_configured is not None:
                part.opaque = part.opaque or found.runs_configured
            _writer_targets(part, name, words[1:])
            _option_targets(part, name, words[1:])
            if not found.read_only:
                reasons.append(found.why)
            if name in _SHELL_STATE:
                self.globs_unreliable = True
            if name in _REDEFINERS:
                self.programs_unreliable = f"an earlier `{name}` changes what command names run"
            if name == "set" and any(
                re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", a.value) or a.value == "allexport" for a in words[1:]
            ):
                self.allexport = True  # (`set -a`: every later `NAME=value` is exported)
            if name == "set" and any(
                re.fullmatch(r"-[a-zA-Z]*k[a-zA-Z]*", a.value) or a.value == "keyword" for a in words[1:]
            ):
                # `set -k`: a `NAME=value` anywhere in a later command's words is a setting, not an argument (round
                # 24's second verification: `set -k; git status GIT_CONFIG_KEY_0=core.fsmonitor …` ran code)
                self.programs_unreliable = "an earlier `set -k` makes later `NAME=value` words settings"
            if name in _VALUE_READERS or (name == "printf" and any(a.value.startswith("-v") for a in words[1:])):
                for arg in words[1:]:  # (`read NAME`, `printf -v NAME`: values the checker does not follow)
                    if arg.static and _IDENTIFIER.fullmatch(arg.value):
                        self.settings.unknown_value(arg.value)
            if name in ("set", "shopt") and any(
                a.value == "allexport" or (name == "set" and re.fullmatch(r"-[a-zA-Z]*a[a-zA-Z]*", a.value))
                for a in words[1:]
            ):
                self.settings.allexport = True
            if name in _DECLARATIONS:
                exported = (
                    name == "export"
                    or self.allexport
                    or any(re.fullmatch(r"-[a-zA-Z]*x[a-zA-Z]*", a.value) for a in words[1:])
                )
                self.settings.declared(name, words[1:], exported=exported)
                for arg in words[1:]:
                    var = arg.value.split("=", 1)[0]
                    if re.fullmatch(r"[-+][a-zA-Z]*n[a-zA-Z]*", arg.value) and name != "export":
                        # `declare -n r=PATH`: a name that stands for another variable, whatever it is called
                        self.programs_unreliable = f"an earlier `{name} {arg.value}` makes a name stand for another"
                    if DANGEROUS_ENV.match(var):
                        self.programs_unreliable = f"an earlier `{name} {var}` changes what commands run"
                    elif exported and not var.startswith(("-", "+")) and not RULE_ENV.match(var):
                        # what a rule for a later command does not name (round 24's verification: `export
                        # PYTEST='touch x'; make test` under `Bash(export *)` and `Bash(make test *)`)
                        self.exported.append(var)
        part.reads_only = not reasons
        if redirected and not reasons:
            shown = part.writes[0].word
            reasons.append(f"`{part.text}` writes {shown.value if shown else 'a path computed at run time'}")
        part.read_only = not reasons
        part.why = reasons[0] if reasons else ""


def _values_in(text: str) -> list[str]:
    """The values a word may carry for a program to run: what follows each `=` or `:` (`--rsh=ssh`,
    `exec=cmd`, `EXEC:cmd`), and the rest of a short option (`-Pless`)."""
    out: list[str] = []
    if len(text) > 2 and text[0] == "-" and text[1] != "-":
        out.append(text[2:])
    for index, char in enumerate(text):
        if len(out) >= MAX_VALUES:
            break
        if char in "=:" and index + 1 < len(text) and text[index + 1] not in "=:":
            out.append(text[index + 1 :])
    return list(dict.fromkeys(v for v in out if v))


@dataclass
class _Peeled:
    effective: tuple[Word, ...]
    deny_forms: list[tuple[Word, ...]]


def _peel(argv: tuple[Word, ...], part: Part, builder: Builder, depth: int) -> _Peeled:
    """See through wrappers: what the command really runs (`effective`, safe wrappers only), every form deny
    rules must see, and the commands run by runners (as nested parts). Sets hazard / unknown_program."""
    forms: list[tuple[Word, ...]] = []
    effective = argv
    words = argv
    for _ in range(16):
        if not words:
            break
        forms.append(words)
        head = words[0]
        if not head.static or head.pattern is not None:
            part.unknown_program = part.unknown_program or (
                f"the program name `{head.text}` is computed at run time ({head.why or 'a glob'})"
            )
            break
        name = head.value
        if "/" in name:
            base = name.rsplit("/", 1)[-1]
            if base:
                forms.append((Word(base, base), *words[1:]))
                name = base
        if name in _HAZARD_COMMANDS and part.hazard is None:
            part.hazard = _HAZARD_COMMANDS[name]
            part.hazard_command = name
        if _evaluates_subscript(name, words[1:]):
            part.unknown_program = part.unknown_program or f"`{name}` evaluates an array subscript (it can run code)"
        step = RUNNERS.get(name)
        if step is None:
            why = runs_code(name, words[1:])
            if why is not None:
                part.opaque = part.opaque or why
            elif not known(name):
                builder.probe_arguments(words, part, depth)
            if (option := code_option(name, words[1:])) is not None:
                part.unknown_program = part.unknown_program or option
            break
        result = step(words, part, builder, depth)
        if result is None:
            break
        if isinstance(result, Unknown):
            part.unknown_program = part.unknown_program or result.why
            break
        inner, is_safe = result
        if not is_safe:
            # what an unsafe runner runs (`sudo rm x`, `xargs cat`) is a part of its own, judged in full
            builder.nested_argv(inner, part, depth)
            break
        effective = words = inner
    return _Peeled(effective, forms)


def _evaluates_subscript(name: str, args: Sequence[Word]) -> bool:
    """`declare 'a[$(id)]'`, `printf -v 'a[$(id)]'`, `test -v …`: bash evaluates the subscript, running code."""
    if name in _SUBSCRIPT_EVALUATORS:
        return any("[" in w.value for w in args)
    if name in ("printf", "test", "["):
        return any(w.value == "-v" or (w.value.startswith("-v") and name == "printf") for w in args)
    return False


def _option_targets(part: Part, name: str, args: Sequence[Word]) -> None:
    """Files and trees pytest's options name for it to write (`_PYTEST_WRITES`), however pytest is started
    (`pytest`, `pytest-3`, `python -B -m pytest`, `python -mpytest`, `coverage run -m pytest`, `uv run pytest`: its
    own options are distinctive enough to be looked for in any command), and inside `-o addopts=…` too (round 24's
    verification: `-o addopts=--basetemp=.git` removed the history). A value computed at run time is a write that
    can't be listed."""
    words = [name, *(w.value for w in args if w.static)]
    pytest = any(
        _PYTEST_PROGRAM.fullmatch(value.rsplit("/", 1)[-1])
        or _PYTEST_MODULE.fullmatch(value)
        or (value == "-m" and _PYTEST_MODULE.fullmatch("-m" + "".join(words[i + 1 : i + 2])))
        for i, value in enumerate(words)
    )
    _pytest_options(part, list(args), pytest, 0)


_PYTEST_PROGRAM = re.compile(r"(pytest|py\.test)[-0-9.]*|tox|nox|hatch")  # (the runners pass options on to it)
_PYTEST_MODULE = re.compile(r"-[a-zA-Z]*m(pytest|py\.test)(\.__main__)?")  # `-m pytest`, `-Bmpytest`
_PYTEST_VALUED = "ckmprWn"  # its short options that take a value (`-o` is looked at on its own)
_PYTEST_GENERIC = frozenset({"--log-file", "--html", "--debug"})  # (options other programs have: only for pytest)


def _pytest_options(part: Part, args: list[Word], pytest: bool, depth: int) -> None:
    for i, word in enumerate(args):
        if not word.static:
            continue
        option, eq, value = word.value.partition("=")
        following = args[i + 1] if i + 1 < len(args) else None
        given: Word | None = Word(value, value) if eq else following
        tree: bool | None = None
        if pytest and not option.startswith("--") and option.startswith("-") and "o" in option[1:]:
            at = next((i for i, c in enumerate(option[1:], 1) if c == "o" or c in _PYTEST_VALUED), 0)
            if option[at] == "o" and at > 1:  # `-xo cache_dir=…`, `-xocache_dir=…`: a bundled `-o`
                rest = word.value[at + 1 :]
                option, eq, given = "-o", "=" if rest else "", Word(rest, rest) if rest else following
        if option in _PYTEST_WRITES and (pytest or option not in _PYTEST_GENERIC):
            tree = _PYTEST_WRITES[option]
        elif option == "--debug" and pytest and (eq or (given is not None and not given.value.startswith("-"))):
            tree = False  # (its value is optional: the next word when it is no option)
        elif option == "--rootdir" and pytest and given is not None and given.static:
            given, tree = Word(f"{given.value}/.pytest_cache", f"{given.value}/.pytest_cache"), True
        elif option == "--cov-report" and given is not None and given.static and ":" in given.value:
            kind, _, path = given.value.partition(":")
            given, tree = Word(path, path), kind.startswith("html")
        elif pytest and (option in ("-o", "--override-ini") or (option.startswith("-o") and len(option) > 2)):
            if option == "-o" and eq:  # (a bundled one, above)
                setting = given.value if given is not None else ""
            elif option.startswith("-o") and option != "-o":
                setting = word.value[2:]
            else:
                setting = given.value if given else ""
            key, has, path = setting.partition("=")
            key = key.strip()
            if has and key in _PYTEST_INI_WRITES:
                given, tree = Word(path, path), _PYTEST_INI_WRITES[key]
            elif has and key == "addopts":  # more of pytest's own options
                try:
                    more = shlex.split(path)
                except ValueError:
                    more = None
                if more is None or depth >= 3:
                    part.writes.append(WriteTarget(None))
                else:
                    _pytest_options(part, [Word(m, m) for m in more], True, depth + 1)
        if tree is None:
            continue
        part.writes.append(WriteTarget(given if given is not None and given.static else None, tree))


def _writer_targets(part: Part, name: str, args: Sequence[Word]) -> None:
    """Files a writing command names (for protected paths, Edit deny rules and containment)."""
    if name not in _WRITERS:
        return
    operands: list[Word] = []
    only = False
    for word in args:
        if not only and word.static and word.value == "--":
            only = True
        elif only or not (word.static and word.value.startswith("-") and word.value != "-"):
            operands.append(word)
    if name == "dd":
        operands = [Word(w.value[3:], w.value[3:]) for w in args if w.static and w.value.startswith("of=")]
    elif name == "sed":
        if not any(w.static and (w.value.startswith("-i") or w.value.startswith("--in-place")) for w in args):
            return
        operands = operands[1:] if not any(w.static and w.value in ("-e", "--expression") for w in args) else operands
    elif name in _LAST_IS_TARGET:
        target_dir = next(
            (args[i + 1] for i, w in enumerate(args[:-1]) if w.static and w.value in ("-t", "--target-directory")), None
        )
        operands = [target_dir] if target_dir is not None else operands[-1:]
    recursive = name in _RECURSIVE_WRITERS
    for word in operands:
        part.writes.append(WriteTarget(word if word.static else None, recursive))
