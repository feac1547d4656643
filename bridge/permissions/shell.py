"""The one verdict on a Bash command: what it runs, reads and writes, and whether it is read-only.

`verdict(command)` parses once (cached) and judges every simple command of it — those in substitutions,
groups and loop bodies too — as a `Part`. The permission engine matches rules against parts, plan mode
and the auto-allow ask `ShellVerdict.read_only`, and the Bash tool runs read-only commands in parallel:
all three read the same verdict, so "read-only" means one thing.

Read-only is flag-exact (see `commands.py`): a part is read-only only when every word is understood and
nothing it does writes or runs anything. Wrappers are seen through: `timeout 5 cat x` is `cat x` for every
question; `sudo`, `xargs`, `find -exec`, `env -S`, `sh -c`, `eval`, `watch`, `trap` run commands that
become parts of their own (`nested`), matched by deny and ask rules. A part whose program can't be known
before it runs (`$(echo rm) x`, `{rm,x}`, `rm${IFS}x`, a shell reading a script) has `unknown_program`
set: deny and ask rules count it as matching. A command too large or too odd to read has `error` set:
it asks, and every deny and ask rule that could apply matches it.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from bridge.permissions.code_runners import runs_code
from bridge.permissions.command_tables import GIT_SUBCOMMANDS
from bridge.permissions.commands import Access, Effects, effects, known
from bridge.permissions.shellparse import Command, Script, ShellSyntaxError, Word, parse_into
from bridge.secrets import looks_secret

MAX_COMMAND_CHARS = 100_000
ANALYSIS_DEADLINE_S = 5.0  # the bound on reading one command off the event loop (it takes well under 1 s)
MAX_NESTING = 16  # `bash -c "bash -c '…'"` levels read for deny rules
MAX_PROBES = 100  # arguments of an unknown program read as the start of a command it may run
MAX_PROBE_PARTS = 2_000  # commands one probe reads (its arguments as commands, values as programs)
MAX_VALUES = 8  # values one word is read for (`a=b:c` is `b:c` and `c`)
_CACHE_SIZE = 512

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
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "rbash", "yash"})
# Environment variables that change which program runs or make one run code.
_DANGEROUS_ENV = re.compile(
    r"^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|CDPATH|HOME|GIT_\w+|"
    r"PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|NODE_OPTIONS|"
    r"PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|BASH_FUNC_\w+.*|GLOBIGNORE|RIPGREP_CONFIG_PATH|TMPDIR|SHELL|"
    # files whose content says what runs: configuration homes, loader and plugin paths, debugger hooks
    r"XDG_CONFIG_HOME|XDG_CONFIG_DIRS|GCONV_PATH|OPENSSL_CONF|OPENSSL_ENGINES|OPENSSL_MODULES|JAVA_TOOL_OPTIONS|"
    r"_JAVA_OPTIONS|JDK_JAVA_OPTIONS|LESSKEY\w*|LESSEDIT|MANOPT|TAR_OPTIONS|RSYNC_RSH|RSYNC_CONNECT_PROG|"
    r"SSH_ASKPASS|SUDO_ASKPASS|ZDOTDIR|PERL5DB|PERLDB_OPTS|PYTHONBREAKPOINT|PYTHONWARNINGS|NODE_PATH|"
    r"NPM_CONFIG_\w+|npm_config_\w+|FZF_DEFAULT_\w+|SYSTEMD_PAGER|GH_PAGER|AWS_PAGER|PSQL_PAGER|BROWSER|"
    r"KUBECONFIG|DOCKER_CONFIG|AWS_CONFIG_FILE|CARGO_HOME|RUSTC_WRAPPER|GOFLAGS|MAKEFLAGS|INPUTRC)$"
)
# The only variables a read-only command may be given (`LANG=C sort x`): they change how output looks.
_INERT_ENV = re.compile(r"^(LANG|LANGUAGE|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|CLICOLOR|CLICOLOR_FORCE|COLUMNS|LINES|"
                        r"TERM|POSIXLY_CORRECT)$")
_COMMAND_LINE = re.compile(r"[\s;&|<>()`$]")  # a word that may hold a command line (`ssh host 'rm x'`)
_LOOKALIKE_OPERATORS = frozenset(";|&<>$`()\n{}[]*?~'\"\\")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\u0085]")
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_SUBSCRIPT_EVALUATORS = _DECLARATIONS | {"read", "mapfile", "readarray", "unset", "getopts"}
_SHELL_STATE = frozenset({"shopt", "set"})  # change how later words are expanded (globstar, dotglob, noglob…)
_REDEFINERS = frozenset({"alias", "enable", "hash"})  # later command names may run something else
SAFE_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/stdin", "/dev/zero"})
_FD_DEVICE = re.compile(r"/dev/fd/[0-9]+")
# `git -c` keys that run nothing whatever their value (lower case); `pager.*` and signing only as booleans
_GIT_INERT_KEYS = re.compile(
    r"(user|author|committer)\.(name|email)|color\.[a-z.]+|column\.[a-z]+|advice\.[a-z]+|i18n\.[a-z]+|"
    r"init\.defaultbranch|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase|abbrev|eol|whitespace|"
    r"precomposeunicode|longpaths|symlinks|logallrefupdates|compression|bigfilethreshold|checkstat|trustctime|"
    r"untrackedcache|preloadindex|commentchar|commentstring)|diff\.(noprefix|mnemonicprefix|renames|renamelimit|"
    r"algorithm|context|interhunkcontext|indentheuristic|colormoved|colormovedws|relative|statgraphwidth|"
    r"statnamewidth|suppressblankempty|submodule|ignoresubmodules|dirstat|wserrorhighlight)|log\.(date|decorate|"
    r"abbrevcommit|follow|graphcolors|showroot|mailmap)|pull\.(rebase|ff)|merge\.(ff|conflictstyle|log|renames|"
    r"renamelimit|stat|verbosity|autostash)|rebase\.(autosquash|autostash|stat|updaterefs|abbreviatecommands)|"
    r"fetch\.(prune|prunetags|parallel|writecommitgraph|showforcedupdates)|push\.(default|autosetupremote|"
    r"followtags)|branch\.(autosetupmerge|autosetuprebase|sort)|commit\.(verbose|cleanup|status)|tag\.sort|"
    r"gc\.auto|maintenance\.auto|status\.(short|branch|showuntrackedfiles|relativepaths|showstash|aheadbehind|"
    r"renames|renamelimit|submodulesummary)|grep\.(linenumber|column|patterntype|extendedregexp|fullname)|"
    r"blame\.(date|coloring|showemail|blankboundary|showroot)|protocol\.version|http\.(version|postbuffer)")
_GIT_BOOLEAN_KEYS = re.compile(r"pager\.[a-z0-9.-]+|(commit|tag)\.gpgsign")
_DESTRUCTIVE = frozenset({"rm", "rmdir", "shred", "dd", "truncate", "mv", "kill", "pkill", "killall", "wipefs",
                          "fdisk"})
_WRITERS = frozenset({"tee", "cp", "mv", "ln", "install", "touch", "truncate", "rm", "rmdir", "mkdir", "shred",
                      "chmod", "chown", "chgrp", "dd", "sed", "rsync", "unlink", "link", "mkfifo", "mknod"})
_LAST_IS_TARGET = frozenset({"cp", "ln", "install", "rsync", "link"})
_RECURSIVE_WRITERS = frozenset({"rm", "mv", "chmod", "chown", "chgrp", "rsync"})
UNKNOWN = Word("…", "…", why="computed at run time")


@dataclass(frozen=True)
class WriteTarget:
    word: Word | None  # None: a path computed at run time
    recursive: bool = False  # the whole tree below (rm -r, mv): a protected path inside counts


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
        return self.deny_forms + self.probe_forms if for_deny else [f for f in (self.argv, self.effective) if f]


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
        return ShellVerdict(command[:200], error=f"is {len(command):,} characters long: the permission check reads at "
                                                 f"most {MAX_COMMAND_CHARS:,} (MAX_COMMAND_CHARS)")
    return _cached_verdict(command)


def call_verdict(command: str, *, background: bool = False) -> ShellVerdict:
    """The verdict on a Bash call: its command, run in the background when the call says so
    (`run_in_background`). Plan mode, the allow decision and the Bash tool's concurrency all ask this."""
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
    builder = _Builder(script)
    for cmd in script.commands:
        builder.add(cmd, nested=False, depth=0)
    builder.finish()
    return ShellVerdict(command, tuple(builder.parts), background=script.background,
                        globs_unreliable=builder.globs_unreliable)


# --- building parts -----------------------------------------------------------------------------------


class _Builder:
    def __init__(self, script: Script, *, probing: bool = False) -> None:
        self.script = script
        self.probing = probing  # reading another program's arguments as commands (see `probe_arguments`)
        self.parts: list[Part] = []
        self.globs_unreliable = False
        self.programs_unreliable: str | None = None  # `PATH=…` / `export GIT_…` earlier: later programs unknown
        self.span = (0, 0)  # the span of the top-level part being read (nested parts share it)
        self.overflow = False  # a probe read more than MAX_PROBE_PARTS commands

    def add(self, cmd: Command, *, nested: bool, depth: int) -> None:
        argv = cmd.words
        if not nested:
            self.span = cmd.span
        part = Part(cmd, argv, argv, nested=nested, span=self.span)
        self.parts.append(part)
        for word in cmd.assignments:
            name = re.split(r"\+?=", word.text, maxsplit=1)[0]
            if argv:
                self.probe_setting(word, part, depth)
            if _DANGEROUS_ENV.match(name):
                if argv:
                    part.unknown_program = f"sets {name}, which changes what the command runs"
                else:
                    self.programs_unreliable = f"an earlier `{name}=…` changes what commands run"
                    if name == "GLOBIGNORE":
                        self.globs_unreliable = True
        inner = _peel(argv, part, self, depth)
        part.effective = inner.effective
        part.deny_forms = inner.deny_forms
        self._judge(part, cmd, depth)

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
            part.opaque = part.opaque or (f"`{words[0].value}` has more than {MAX_PROBES} arguments that could be "
                                          "a command it runs")
            return
        probe = _Builder(Script(), probing=True)
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
        probe = _Builder(Script(), probing=True)
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
        probe = _Builder(Script(), probing=True)
        probe.probe_word(value, depth, whole=True)
        if "/" in value and not _COMMAND_LINE.search(value):
            probe.add(Command((Word(value, value), UNKNOWN), text=value), nested=True, depth=depth + 1)
        self._take_probes(probe, part, word.value.split("=", 1)[0])

    def _take_probes(self, probe: _Builder, part: Part, program: str) -> None:
        for found in probe.parts:
            part.probe_forms.extend(found.deny_forms)
            why = found.unknown_program or found.opaque
            if why is not None and part.opaque is None:
                part.opaque = f"`{program}` may run `{found.text}`, which {why}"
        if probe.overflow and part.opaque is None:
            part.opaque = f"`{program}` has more possible commands in its arguments than the checker reads " \
                          f"({MAX_PROBE_PARTS}, MAX_PROBE_PARTS)"

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
                self.add(Command((Word(candidate, candidate), UNKNOWN), text=candidate), nested=True,
                         depth=depth + 1)

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
                if target.static and _safe_device(target.value):
                    continue
                part.writes.append(WriteTarget(target if target.static else None))
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
        for name in names:
            if part.argv and not _INERT_ENV.match(name):
                reasons.append(f"`{part.text}` sets {name} for the command")
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
            if not found.read_only:
                reasons.append(found.why)
            if name in _SHELL_STATE:
                self.globs_unreliable = True
            if name in _REDEFINERS:
                self.programs_unreliable = f"an earlier `{name}` changes what command names run"
            if name in _DECLARATIONS:
                for arg in words[1:]:
                    var = arg.value.split("=", 1)[0]
                    if _DANGEROUS_ENV.match(var):
                        self.programs_unreliable = f"an earlier `{name} {var}` changes what commands run"
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
            out.append(text[index + 1:])
    return list(dict.fromkeys(v for v in out if v))


@dataclass
class _Peeled:
    effective: tuple[Word, ...]
    deny_forms: list[tuple[Word, ...]]


def _peel(argv: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Peeled:
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
                f"the program name `{head.text}` is computed at run time ({head.why or 'a glob'})")
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
        step = _RUNNERS.get(name)
        if step is None:
            why = runs_code(name, words[1:])
            if why is not None:
                part.opaque = part.opaque or why
            elif not known(name):
                builder.probe_arguments(words, part, depth)
            break
        result = step(words, part, builder, depth)
        if result is None:
            break
        if isinstance(result, _Unknown):
            part.unknown_program = part.unknown_program or result.why
            break
        inner, is_safe = result
        if not is_safe:
            # what an unsafe runner runs (`sudo rm x`, `xargs cat`) is a part of its own, judged in full
            builder.nested_argv(inner, part, depth)
            break
        effective = words = inner
    return _Peeled(effective, forms)


@dataclass(frozen=True)
class _Unknown:
    why: str


_Step = tuple[tuple[Word, ...], bool] | _Unknown | None
Step = Callable[[tuple[Word, ...], Part, "_Builder", int], _Step]


def _options(words: tuple[Word, ...], start: int, *, flags: str = "", values: str = "", long_flags: str = "",
             long_values: str = "", stop_at_operand: bool = True) -> int | _Unknown:
    """Index of the first operand after getopt-style options; _Unknown when an option is not understood."""
    longs = {"--" + n: False for n in long_flags.split()} | {"--" + n: True for n in long_values.split()}
    i = start
    while i < len(words):
        word = words[i]
        if not word.static:
            return _Unknown(f"an option of `{words[0].value}` is computed at run time")
        text = word.value
        if text == "--":
            return i + 1
        if not text.startswith("-") or text == "-":
            return i
        if text.startswith("--"):
            name, eq, _ = text.partition("=")
            found = [k for k in longs if k == name] or [k for k in longs if k.startswith(name)]
            if len(found) != 1:
                return _Unknown(f"`{words[0].value} {name}` is not an option the checker knows")
            if longs[found[0]] and not eq:
                i += 1
            i += 1
            continue
        j = 1
        while j < len(text):
            letter = text[j]
            if letter in flags:
                j += 1
                continue
            if letter in values:
                if j + 1 == len(text):
                    i += 1
                break
            return _Unknown(f"`{words[0].value} -{letter}` is not an option the checker knows")
        i += 1
    return i


def _after(words: tuple[Word, ...], at: int | _Unknown, *, safe: bool) -> _Step:
    if isinstance(at, _Unknown):
        return at
    if at >= len(words):
        return None  # the wrapper alone (`nohup`, `env`): nothing more to see
    return words[at:], safe


def _simple_runner(flags: str = "", values: str = "", long_flags: str = "", long_values: str = "", *,
                   safe: bool = False, skip: int = 0) -> Step:
    def step(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
        at = _options(words, 1, flags=flags, values=values, long_flags=long_flags, long_values=long_values)
        if not isinstance(at, _Unknown):
            at += skip
        return _after(words, at, safe=safe)
    return step


def _command(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    if len(words) > 1 and words[1].static and words[1].value in ("-v", "-V"):
        return None  # a lookup, nothing runs
    return _after(words, _options(words, 1, flags="p"), safe=True)


def _timeout(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="v", values="sk", long_flags="preserve-status foreground verbose help version",
                  long_values="signal kill-after")
    if isinstance(at, _Unknown):
        return at
    return _after(words, at + 1, safe=True)  # the duration


def _time(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="pavq", values="fo", long_flags="portability append verbose quiet help version",
                  long_values="format output")
    writes = any(w.static and (w.value.startswith(("-o", "--o")) or w.value == "-a") for w in words[1:3])
    return _after(words, at, safe=not writes)


def _env(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    i = 1
    safe = True
    split: list[Word] = []
    while i < len(words):
        word = words[i]
        if not word.static:
            return _Unknown("an argument of `env` is computed at run time")
        text = word.value
        if text in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
            i += 1
        elif text in ("-u", "--unset"):
            i += 2
        elif text.startswith(("--unset=", "-u")):
            i += 1
        elif text in ("-S", "--split-string") or text.startswith(("--split-string=", "-S")):
            value = text.split("=", 1)[1] if text.startswith("--split-string=") else text[2:]
            if text in ("-S", "--split-string"):
                if i + 1 >= len(words) or not words[i + 1].static:
                    return _Unknown("the string given to `env -S` is computed at run time")
                value = words[i + 1].value
                i += 1
            if "$" in value or "\\" in value:
                return _Unknown("the string given to `env -S` expands variables or escapes")
            try:
                split.extend(Word(w, w) for w in shlex.split(value))
            except ValueError:
                return _Unknown("the string given to `env -S` can't be split")
            safe = False
            i += 1
        elif text in ("-C", "--chdir") or text.startswith(("--chdir=", "-C")):
            safe = False  # another directory: relative paths change meaning
            i += 2 if text in ("-C", "--chdir") else 1
        elif text == "--":
            i += 1
            break
        elif text.startswith("-"):
            return _Unknown(f"`env {text}` is not an option the checker knows")
        elif "=" in text:
            name = text.split("=", 1)[0]
            if _DANGEROUS_ENV.match(name):
                part.unknown_program = part.unknown_program or f"`env {name}=…` changes what the command runs"
                safe = False
            part.env_set.append(name)
            builder.probe_setting(word, part, depth)
            i += 1
        else:
            break
    inner = (*split, *words[i:])
    if not inner:
        return None
    return tuple(inner), safe


def _sudo(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="AbEHKklnPSVv", values="CDghpRrtTUu",
                  long_flags="askpass background preserve-env set-home login non-interactive preserve-groups stdin "
                             "shell version validate remove-timestamp reset-timestamp list",
                  long_values="close-from chdir group host prompt chroot role type command-timeout other-user user")
    if isinstance(at, _Unknown):
        return at
    if any(w.static and w.value in ("-s", "--shell", "-i", "--login", "-e", "--edit") for w in words[1:at]):
        return _Unknown("`sudo -s/-i/-e` runs a shell or an editor")
    while at < len(words) and words[at].static and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", words[at].value):
        if _DANGEROUS_ENV.match(words[at].value.split("=", 1)[0]):
            part.unknown_program = part.unknown_program or "sudo sets a variable that changes what runs"
        at += 1
    return _after(words, at, safe=False)


def _xargs(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="0prtxoiel", values="adEILnPs",
                  long_flags="null interactive no-run-if-empty verbose exit open-tty show-limits help version "
                             "eof replace max-lines",
                  long_values="arg-file delimiter max-args max-procs max-chars process-slot-var")
    if isinstance(at, _Unknown):
        return at
    replace = None
    for w in words[1:at]:
        if w.value.startswith("-I") and len(w.value) > 2:
            replace = w.value[2:]
        elif w.value.startswith(("-i", "--replace")):
            replace = "{}"
    for i, w in enumerate(words[1:at], 1):
        if w.value == "-I" and i + 1 < at:
            replace = words[i + 1].value
    inner = list(words[at:]) or [Word("echo", "echo")]
    inner = [UNKNOWN if replace and replace in w.value else w for w in inner]
    return (*inner, UNKNOWN), False  # xargs adds the words it reads


def _find_exec(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    if not all(w.static for w in words[1:]):
        return _Unknown("`find` has words computed at run time (one could be -exec)")
    i = 1
    while i < len(words):
        if words[i].static and words[i].value in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            inner: list[Word] = []
            while j < len(words) and not (words[j].static and words[j].value in (";", "+")):
                inner.append(UNKNOWN if "{}" in words[j].value else words[j])
                j += 1
            builder.nested_argv(inner, part, depth)
            i = j
        i += 1
    return None


def _shell(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    name = words[0].value.rsplit("/", 1)[-1]
    if len(words) == 2 and words[1].static and words[1].value in ("--version", "--help"):
        return None
    if part.hazard is None:
        part.hazard, part.hazard_command = f"{name} runs a command string or standard input as a script", name
    i = 1
    command_string = False
    while i < len(words):
        word = words[i]
        if not word.static:
            return _Unknown(f"an argument of `{name}` is computed at run time")
        text = word.value
        if text == "--":
            i += 1
            break
        if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if text.startswith("--"):
            i += 1
            continue
        if text.startswith(("-", "+")) and len(text) > 1:
            command_string = command_string or "c" in text[1:]
            i += 1
            continue
        break
    if command_string:
        if i >= len(words):
            return _Unknown(f"`{name} -c` without a command string")
        builder.nested_string(words[i].value if words[i].static else None, part, depth, f"the string `{name} -c` runs")
        return None
    return _Unknown(f"`{name}` runs a script or its standard input, which the checker can't see")


def _eval(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    static = all(w.static for w in words[1:])
    builder.nested_string(" ".join(w.value for w in words[1:]) if static else None, part, depth, "the string eval runs")
    return None


def _trap(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    args = [w for w in words[1:] if not (w.static and w.value in ("-p", "-l", "--"))]
    if len(args) >= 2:
        builder.nested_string(args[0].value if args[0].static else None, part, depth, "the string trap runs")
    return None


def _watch(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="tbegcxpwdhv", values="nq",
                  long_flags="no-title beep errexit chgexit color no-color exec precise no-wrap differences help "
                             "version", long_values="interval equexit")
    if isinstance(at, _Unknown):
        return at
    rest = words[at:]
    if not rest:
        return None
    if any(w.static and w.value in ("-x", "--exec") for w in words[1:at]):
        return rest, False
    static = all(w.static for w in rest)
    builder.nested_string(" ".join(w.value for w in rest) if static else None, part, depth, "the command watch runs")
    return None


def _flock(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    at = _options(words, 1, flags="sxunoFhV", values="wEc",
                  long_flags="shared exclusive unlock nonblock close no-fork verbose help version",
                  long_values="timeout conflict-exit-code command")
    if isinstance(at, _Unknown):
        return at
    for i, w in enumerate(words[1:], 1):
        if w.static and w.value in ("-c", "--command") and i + 1 < len(words):
            builder.nested_string(words[i + 1].value if words[i + 1].static else None, part, depth,
                                  "the command flock runs")
            return None
    return _after(words, at + 1, safe=False)  # the lock file


def _git(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    """git runs programs its configuration names: `-c` may set only keys known to run nothing; options that
    name another configuration, and `ext::` remotes, make what runs unknown. A subcommand that is not a
    read-only one may run its arguments (`rebase -x CMD`, `ls-remote --upload-pack=CMD`, `bisect run CMD`,
    `submodule foreach CMD`): they are probed like an unknown program's."""
    if any(w.static and "ext::" in w.value for w in words[1:]):
        return _Unknown("a git `ext::` remote runs a command")
    for i, word in enumerate(words[1:], 1):
        if not word.static:
            return None
        value = word.value
        if value == "-c":
            pair = words[i + 1] if i + 1 < len(words) else None
            if pair is None or not pair.static or not _inert_git_setting(pair.value):
                shown = pair.value if pair is not None else ""
                return _Unknown(f"`git -c {shown}` sets a configuration the checker does not know to be inert "
                                "(it could run a program)")
        elif value.startswith(("--config-env", "--exec-path", "--git-dir", "--work-tree")):
            return _Unknown(f"`git {value}` changes which configuration or programs git uses")
        elif not value.startswith("-") and words[i - 1].value not in ("-c", "-C"):
            if value not in GIT_SUBCOMMANDS:
                builder.probe_arguments(words[i:], part, depth)
            return None
    return None


def _inert_git_setting(pair: str) -> bool:
    """`key=value` of `git -c`: a key known to change only how git shows or records things (an allowlist: git
    has too many keys that run programs to list those)."""
    key, _, value = pair.partition("=")
    key = key.lower()
    if _GIT_BOOLEAN_KEYS.fullmatch(key):
        return value.lower() in ("", "true", "false", "yes", "no", "on", "off", "1", "0")
    return _GIT_INERT_KEYS.fullmatch(key) is not None


def _unknown_runner(words: tuple[Word, ...], part: Part, builder: _Builder, depth: int) -> _Step:
    return _Unknown(f"`{words[0].value}` runs another command the checker can't pick out")


_RUNNERS: dict[str, Step] = {
    "command": _command,
    "builtin": _simple_runner(safe=False),
    "exec": _simple_runner("cl", "a", safe=False),
    "nice": _simple_runner("", "n", long_values="adjustment", safe=True),
    "nohup": _simple_runner(long_flags="help version", safe=True),
    "timeout": _timeout,
    "time": _time,
    "stdbuf": _simple_runner("", "ioe", long_values="input output error", safe=True),
    "setsid": _simple_runner("cfw", long_flags="ctty fork wait help version"),
    "ionice": _simple_runner("tP", "cnp", long_values="class classdata pid pgid uid", long_flags="ignore"),
    "env": _env,
    "sudo": _sudo,
    "doas": _simple_runner("nsL", "uC"),
    "xargs": _xargs,
    "find": _find_exec,
    "eval": _eval,
    "trap": _trap,
    "watch": _watch,
    "flock": _flock,
    "git": _git,
    **{name: _shell for name in _SHELLS},
    **{name: _unknown_runner for name in (
        "chrt", "taskset", "unshare", "nsenter", "strace", "ltrace", "parallel", "su", "runuser", "script",
        "pkexec", "busybox", "chroot", "firejail", "bwrap", "systemd-run", "dbus-launch", "xvfb-run", "gdb",
        "valgrind", "perf", "numactl", "cgexec", "sg", "newgrp", "caffeinate", "fakeroot", "proot", "tsp",
        "nq", "batch", "at", "source", ".")},
}


def _evaluates_subscript(name: str, args: Sequence[Word]) -> bool:
    """`declare 'a[$(id)]'`, `printf -v 'a[$(id)]'`, `test -v …`: bash evaluates the subscript, running code."""
    if name in _SUBSCRIPT_EVALUATORS:
        return any("[" in w.value for w in args)
    if name in ("printf", "test", "["):
        return any(w.value == "-v" or (w.value.startswith("-v") and name == "printf") for w in args)
    return False


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
        target_dir = next((args[i + 1] for i, w in enumerate(args[:-1]) if w.static and w.value in
                           ("-t", "--target-directory")), None)
        operands = [target_dir] if target_dir is not None else operands[-1:]
    recursive = name in _RECURSIVE_WRITERS
    for word in operands:
        part.writes.append(WriteTarget(word if word.static else None, recursive))


def _safe_device(target: str) -> bool:
    return target in SAFE_DEVICES or _FD_DEVICE.fullmatch(target) is not None


def safe_device(target: str) -> bool:
    return _safe_device(target)


def _destructive(part: Part) -> bool:
    if any(r.op in (">", ">|") and r.target is not None and not (r.target.static and _safe_device(r.target.value))
           and not r.target.pipe for r in part.command.redirects):
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
    rest = args[args.index(sub) + 1:] if sub else []
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

