"""Bash commands split into the simple commands that will run, with what each reads and writes.

Parsing is bashlex's (a port of bash's own grammar). Anything it cannot parse, and every construct this
module does not model (functions, `$'…'` quoting, parameter expansions with operators, here-documents
that expand), is an `error`: the engine then asks. The walk is closed-world: a node kind it does not know
is an error too, never ignored.

Each `SimpleCommand` is judged on its own by the engine: rules match its quote-removed words; a small
set of read-only commands runs without asking when every path it names lies in the workspace.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import bashlex

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
}
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
# Environment variables that change what a command does or which binary runs.
_DANGEROUS_ENV = re.compile(
    r"^(PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|IFS|PS4|PROMPT_COMMAND|SHELLOPTS|BASHOPTS|CDPATH|HOME|GIT_\w+|"
    r"PAGER|MANPAGER|EDITOR|VISUAL|LESSOPEN|LESSCLOSE|PYTHONPATH|PYTHONSTARTUP|PYTHONHOME|NODE_OPTIONS|"
    r"PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|BASH_FUNC_\w+.*)$"
)
_OVERRIDABLE = frozenset(_HAZARD_COMMANDS) | _SHELLS
_LOOKALIKE_OPERATORS = frozenset(";|&<>$`()\n")
_DECLARATIONS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_SIMPLE_PARAMETER = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-]|#[A-Za-z_][A-Za-z0-9_]*)$")
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


@dataclass(frozen=True)
class Redirect:
    kind: Literal["read", "write"]
    target: str | None  # None: computed at run time (`> $f`), so unknowable


@dataclass(frozen=True)
class SimpleCommand:
    argv: tuple[str, ...]  # quote-removed words, without the `NAME=value` prefixes
    assignments: tuple[str, ...] = ()
    text: str = ""
    redirects: tuple[Redirect, ...] = ()
    dynamic: frozenset[int] = frozenset()  # indexes of argv words that contain expansions
    pipes: frozenset[int] = frozenset()  # indexes of words that are just `<(…)`: a pipe, not a file
    hazard: str | None = None  # why this part must ask
    hazard_command: str | None = None  # a rule naming this command lets the hazard run (`Bash(sudo apt update)`)
    nested: bool = False  # parsed out of `bash -c '…'` / `eval`: matched by deny and ask rules only

    @property
    def canonical(self) -> str:
        return shlex.join(self.argv)

    @property
    def effective(self) -> tuple[str, ...]:
        """The real command behind harmless wrappers (`timeout 5 npm test` is `npm test`)."""
        return strip_wrappers(self.argv, aggressive=False)

    def leading_words(self, *, for_deny: bool) -> frozenset[str]:
        """The command names `match_forms` start with: a cheap filter before any regex runs."""
        return self._deny_leading if for_deny else self._allow_leading

    def match_forms(self, *, for_deny: bool) -> list[str]:
        return self._deny_forms if for_deny else self._allow_forms

    @cached_property
    def _deny_forms(self) -> list[str]:
        return self._forms(for_deny=True)

    @cached_property
    def _allow_forms(self) -> list[str]:
        return self._forms(for_deny=False)

    @cached_property
    def _deny_leading(self) -> frozenset[str]:
        return frozenset(form.split(" ", 1)[0] for form in self._deny_forms)

    @cached_property
    def _allow_leading(self) -> frozenset[str]:
        return frozenset(form.split(" ", 1)[0] for form in self._allow_forms)

    def _forms(self, *, for_deny: bool) -> list[str]:
        """Canonical strings a rule is matched against. Deny and ask rules also see through `sudo`,
        `xargs`, `exec` and an absolute program path (`/bin/rm` is `rm`), so they are hard to dodge."""
        forms: list[tuple[str, ...]] = [self.argv, self.effective]
        if for_deny:
            forms.append(strip_wrappers(self.argv, aggressive=True))
        out: list[str] = []
        for argv in forms:
            if not argv:
                continue
            variants = [argv]
            if for_deny and "/" in argv[0]:
                variants.append((argv[0].rsplit("/", 1)[-1], *argv[1:]))
            for variant in variants:
                text = shlex.join(variant)
                if text not in out:
                    out.append(text)
        return out

    @property
    def writes(self) -> list[str | None]:
        return [r.target for r in self.redirects if r.kind == "write"]

    @property
    def reads(self) -> list[str | None]:
        return [r.target for r in self.redirects if r.kind == "read"]


@dataclass(frozen=True)
class ShellAnalysis:
    source: str
    commands: tuple[SimpleCommand, ...] = ()
    error: str | None = None  # the command could not be understood: ask
    cd_targets: tuple[str, ...] = ()  # directories the command moves into, in order

    @property
    def ok(self) -> bool:
        return self.error is None


class _Unsupported(Exception):
    pass


@dataclass
class _Walker:
    source: str
    nested: bool = False
    commands: list[SimpleCommand] = field(default_factory=list)
    cd_targets: list[str] = field(default_factory=list)

    def visit(self, node: Any) -> None:
        kind = node.kind
        if kind in ("list", "pipeline"):
            for part in node.parts:
                if part.kind not in ("operator", "pipe", "reservedword"):
                    self.visit(part)
        elif kind == "compound":
            for part in node.list:
                if part.kind != "reservedword":
                    self.visit(part)
            for redirect in getattr(node, "redirects", None) or []:
                # a redirect on a group applies to every command inside; record it as a command of its own
                judged = self._redirect(redirect)
                if judged is not None:
                    self.commands.append(SimpleCommand((), text=self._text(redirect), redirects=(judged,),
                                                       nested=self.nested))
        elif kind in ("for", "while", "until", "if"):
            for part in node.parts:
                if part.kind == "reservedword":
                    continue
                if part.kind == "word":
                    self._word(part)
                else:
                    self.visit(part)
        elif kind == "command":
            self._command(node)
        elif kind == "function":
            raise _Unsupported("defines a shell function (it could shadow any command)")
        else:
            raise _Unsupported(f"uses a shell construct the checker does not model ({kind})")

    def _text(self, node: Any) -> str:
        start, end = node.pos
        return str(self.source[start:end])

    def _word(self, node: Any) -> bool:
        """Visit the commands a word substitutes; True when the word's value is computed at run time."""
        dynamic = False
        for part in getattr(node, "parts", None) or []:
            if part.kind in ("commandsubstitution", "processsubstitution"):
                self.visit(part.command)
                dynamic = True
            elif part.kind == "parameter":
                value = getattr(part, "value", None)
                if not isinstance(value, str) or not _SIMPLE_PARAMETER.match(value):
                    raise _Unsupported("uses a parameter expansion with operators (it can run or hide commands)")
                dynamic = True
            elif part.kind == "tilde":
                continue
            else:
                raise _Unsupported(f"uses a word part the checker does not model ({part.kind})")
        return dynamic

    def _redirect(self, node: Any) -> Redirect | None:
        """What a redirection reads or writes; None for here-documents and here-strings (no file)."""
        rtype = node.type
        output = node.output
        if rtype in ("<<", "<<-"):
            body = getattr(node.heredoc, "value", "") if node.heredoc is not None else ""
            if "$" in body or "`" in body:
                raise _Unsupported("has a here-document that expands `$` or backticks")
            return None
        if isinstance(output, int) or output == "-":
            return Redirect("write", "/dev/null")  # fd duplication or closing: no file
        dynamic = self._word(output)
        target = None if dynamic else str(output.word)
        if rtype == "<<<":
            return None
        if rtype == ">&" and target is not None and target.isdigit():
            return Redirect("write", "/dev/null")
        if rtype in _WRITE_REDIRECTS:
            return Redirect("write", target)
        if rtype == "<":
            return Redirect("read", target)
        raise _Unsupported(f"uses a redirection the checker does not model ({rtype})")

    def _command(self, node: Any) -> None:
        assignments: list[str] = []
        argv: list[str] = []
        dynamic: set[int] = set()
        pipes: set[int] = set()
        redirects: list[Redirect] = []
        for part in node.parts:
            if part.kind == "assignment" and not argv:
                self._word(part)
                assignments.append(str(part.word))
            elif part.kind in ("word", "assignment"):
                if self._word(part):
                    subparts = getattr(part, "parts", None) or []
                    if (len(subparts) == 1 and subparts[0].kind == "processsubstitution"
                            and str(part.word).startswith("<(")):
                        pipes.add(len(argv))
                    else:
                        dynamic.add(len(argv))
                argv.append(str(part.word))
            elif part.kind == "redirect":
                judged = self._redirect(part)
                if judged is not None:
                    redirects.append(judged)
            else:
                raise _Unsupported(f"uses a command part the checker does not model ({part.kind})")
        hazard = self._hazard(tuple(argv), assignments, dynamic)
        real = strip_wrappers(tuple(argv), aggressive=False)
        hazard_command = real[0] if hazard is not None and real and real[0] in _OVERRIDABLE else None
        command = SimpleCommand(tuple(argv), tuple(assignments), self._text(node), tuple(redirects),
                                frozenset(dynamic), frozenset(pipes), hazard, hazard_command, self.nested)
        self.commands.append(command)
        self._nested_strings(command)

    def _hazard(self, argv: tuple[str, ...], assignments: list[str], dynamic: set[int]) -> str | None:
        for assignment in assignments:
            name = assignment.split("=", 1)[0]
            if _DANGEROUS_ENV.match(name):
                return f"sets {name}, which changes what commands run"
        if not argv:
            return None
        if 0 in dynamic:
            return "the command name is computed at run time"
        real = strip_wrappers(argv, aggressive=False)
        if not real:
            return None
        name = real[0]
        if name in _HAZARD_COMMANDS:
            return _HAZARD_COMMANDS[name]
        if name.rsplit("/", 1)[-1] in _SHELLS and (len(real) == 1 or real[1].startswith("-")):
            return f"{name} runs a command string or standard input as a script"
        if name in _DECLARATIONS:
            for arg in real[1:]:
                var = arg.split("=", 1)[0]
                if _DANGEROUS_ENV.match(var):
                    return f"{name} {var} changes what commands run"
        if name in ("cd", "pushd"):
            args = [a for a in real[1:] if not a.startswith("-") or a == "-"]
            if not args or args[0] == "-" or any(i in dynamic for i in range(1, len(argv))):
                return f"{name} without a fixed target leaves the workspace"
            self.cd_targets.append(args[0])
        return None

    def _nested_strings(self, command: SimpleCommand) -> None:
        """Parse the string given to `bash -c` / `eval`, so deny rules see the commands inside it."""
        real = strip_wrappers(command.argv, aggressive=True)
        if not real:
            return
        name = real[0].rsplit("/", 1)[-1]
        inner: str | None = None
        if name == "eval":
            inner = " ".join(real[1:])
        elif name in _SHELLS and "-c" in real[1:]:
            at = real.index("-c")
            inner = real[at + 1] if at + 1 < len(real) else None
        if not inner:
            return
        nested = analyze(inner, _nested=True)
        self.commands.extend(nested.commands)


def analyze(command: str, *, _nested: bool = False) -> ShellAnalysis:
    if not command.strip():
        return ShellAnalysis(command, error="empty command")
    if _CONTROL_CHARS.search(command):
        return ShellAnalysis(command, error="contains control characters")
    if not command.isascii():
        folded = unicodedata.normalize("NFKC", command)
        if any(c in _LOOKALIKE_OPERATORS for c in set(folded) - set(command)):
            return ShellAnalysis(command, error="contains look-alikes of shell operators")
    if "$'" in command or '$"' in command:
        return ShellAnalysis(command, error="uses $'…' or $\"…\" quoting")
    try:
        trees = bashlex.parse(command)
    except Exception as exc:  # bashlex raises ParsingError, NotImplementedError, and more
        return ShellAnalysis(command, error=f"could not be parsed ({type(exc).__name__}: {exc})")
    walker = _Walker(command, nested=_nested)
    try:
        for tree in trees:
            walker.visit(tree)
    except _Unsupported as exc:
        return ShellAnalysis(command, tuple(walker.commands), error=str(exc))
    except Exception as exc:  # an unexpected tree shape is a reason to ask, never a crash
        return ShellAnalysis(command, tuple(walker.commands), error=f"could not be analyzed ({exc})")
    return ShellAnalysis(command, tuple(walker.commands), cd_targets=tuple(walker.cd_targets))


# --- wrappers ----------------------------------------------------------------------------------------

# wrapper -> options that take a value
_SAFE_WRAPPERS: dict[str, frozenset[str]] = {
    "nohup": frozenset(),
    "time": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "command": frozenset(),
}
_AGGRESSIVE_WRAPPERS: dict[str, frozenset[str]] = {
    **_SAFE_WRAPPERS,
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "exec": frozenset({"-a"}),
    "xargs": frozenset({"-n", "-I", "-L", "-P", "-d", "-s", "-E", "-a", "--max-args", "--delimiter"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "builtin": frozenset(),
}


def strip_wrappers(argv: tuple[str, ...], *, aggressive: bool) -> tuple[str, ...]:
    """Drop leading wrapper commands and their options. Safe mode only strips wrappers that run the rest
    unchanged; `env` only when it just sets variables; `command -v` (a lookup) is kept."""
    table = _AGGRESSIVE_WRAPPERS if aggressive else _SAFE_WRAPPERS
    out = argv
    for _ in range(8):
        if not out:
            return out
        name = out[0]
        if name == "env":
            rest = list(out[1:])
            while rest and ("=" in rest[0] and not rest[0].startswith("-")):
                rest.pop(0)
            if rest and rest[0].startswith("-") and not aggressive:
                return out
            if aggressive:
                rest = _skip_options(rest, table["env"])
            if not rest:
                return out
            out = tuple(rest)
            continue
        if name not in table:
            return out
        if name == "command" and len(out) > 1 and out[1] in ("-v", "-V"):
            return out
        rest = _skip_options(list(out[1:]), table[name])
        if name == "timeout" and rest:
            rest = rest[1:]  # the duration
        if not rest:
            return out
        out = tuple(rest)
    return out


def _skip_options(args: list[str], with_value: frozenset[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return args[i + 1 :]
        if args[i] in with_value:
            i += 1
        elif args[i][:2] in with_value and len(args[i]) > 2:
            pass  # -n5 form
        i += 1
    return args[i:]


# --- read-only commands ------------------------------------------------------------------------------

_PLAIN_READERS = frozenset({
    "ls", "cat", "head", "tail", "wc", "file", "stat", "du", "tree", "diff", "cmp", "nl", "cut",
    "realpath", "readlink", "sort", "uniq", "tac", "md5sum", "sha1sum", "sha256sum", "strings", "od",
    "hexdump", "xxd", "column", "comm",
})
_NO_PATH_COMMANDS = frozenset({
    "pwd", "echo", "printf", "true", "false", "whoami", "uname", "basename", "dirname", "which", "id",
    "tr", "seq", "cd", "pushd", "popd", "type",
})
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg"})
_GIT_READ_SUBCOMMANDS = frozenset({
    "status", "diff", "log", "show", "rev-parse", "ls-files", "blame", "shortlog", "describe", "grep",
})
# options that make an otherwise read-only command write, or run a program
_FORBIDDEN_OPTIONS: dict[str, tuple[str, ...]] = {
    "sort": ("-o", "--output", "--compress-program"),
    "tree": ("-o",),
    "file": ("-C", "--compile"),
    "rg": ("--pre", "--hostname-bin"),
    "xxd": ("-r",),
    "uniq": (),
    "git": ("--output", "--ext-diff", "-O", "--open-files-in-pager", "--exec", "--no-index"),
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
}
_GLOB_CHARS = re.compile(r"[*?\[]")


def read_only_paths(command: SimpleCommand) -> list[str] | None:
    """The paths a read-only command reads, or None when the command is not one of the known read-only
    commands used in a read-only way (the engine then needs a rule or a person). Redirections are
    judged by the engine, not here."""
    if command.hazard is not None:
        return None
    argv = command.effective
    if not argv:
        return []  # only assignments or redirections
    offset = len(command.argv) - len(argv)
    dynamic = {i - offset for i in command.dynamic if i >= offset}
    pipes = {i - offset for i in command.pipes if i >= offset}
    name, args = argv[0], [a for i, a in enumerate(argv) if i > 0 and i not in pipes]
    if name in _NO_PATH_COMMANDS:
        if name in ("cd", "pushd"):
            return None if dynamic else []
        return []
    if dynamic:
        return None  # a computed argument could name any path
    forbidden = _FORBIDDEN_OPTIONS.get(name, ())
    if any(arg == bad or arg.startswith(bad + "=") or (len(bad) == 2 and arg.startswith(bad)) for arg in args
           for bad in forbidden):
        return None
    if name == "uniq" and len([a for a in args if not a.startswith("-")]) > 1:
        return None  # `uniq in out` writes out
    if name in _PLAIN_READERS:
        return _path_words(args)
    if name in _SEARCHERS:
        words = _path_words(args)
        if words is None:
            return None
        # the first positional is the pattern, unless one came with -e / -f
        explicit_pattern = any(a.startswith(("-e", "-f", "--regexp", "--file")) for a in args)
        first = next((a for a in args if not a.startswith("-")), None)
        if not explicit_pattern and first is not None and first in words:
            words.remove(first)
        return words
    if name == "find":
        paths: list[str] = []
        for arg in args:
            if arg.startswith(("-", "(", "!", ")", ",")) and arg not in ("-H", "-L", "-P"):
                break
            if arg not in ("-H", "-L", "-P"):
                paths.append(arg)
        checked = _path_words(paths)
        return None if checked is None else checked or ["."]
    if name == "git":
        if not args:
            return None
        if args[0] == "--no-pager":
            args = args[1:]
        if not args or args[0] not in _GIT_READ_SUBCOMMANDS:
            return None  # global options (`-c`, `-C`, `--git-dir`) and other subcommands
        return _path_words(args[1:])
    return None


def _path_words(args: list[str]) -> list[str] | None:
    """Non-option words as paths to check; None when one cannot be checked statically."""
    out: list[str] = []
    after_dashdash = False
    for arg in args:
        if arg == "--" and not after_dashdash:
            after_dashdash = True
            continue
        if arg.startswith("-") and not after_dashdash and arg != "-":
            if ("/" in arg or "~" in arg) and "=" not in arg:
                return None  # a short option with an attached path (`-f/etc/x`): not worth guessing
            if "=" in arg:
                value = arg.split("=", 1)[1]
                if "/" in value or value.startswith(("~", ".")):
                    out.append(value)
            continue
        if arg == "-":
            continue  # standard input
        checked = _static_path(arg)
        if checked is None:
            return None
        out.append(checked)
    return out


def _static_path(word: str) -> str | None:
    """The directory a glob can expand within, or the word itself; None for braces and globs that could
    match `..` (a leading `.` or bracket), which could step out of a directory."""
    if "{" in word and ("," in word or ".." in word):
        return None
    if not _GLOB_CHARS.search(word):
        return word
    kept: list[str] = []
    for component in word.split("/"):
        if _GLOB_CHARS.search(component):
            if component.startswith((".", "[", "?")):
                return None
            break
        kept.append(component)
    prefix = "/".join(kept)
    if word.startswith("/") and not prefix:
        return "/"
    return prefix or "."
