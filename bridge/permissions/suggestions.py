"""The always-rules a permission question offers: narrow enough to be safe, broad enough to be useful.

A command gets a prefix rule for each part not yet allowed (`Bash(npm run test *)`, `Bash(make *)`), or an
exact rule for risky ones (`rm`, `sudo …`); a path tool gets the file's directory under the name the grammar
gives rules about such paths (`Edit(src/**)`); a fetch its host (`WebFetch(domain:example.com)`).
One question offers one allow option (all its rules together) and, for a single rule, a deny option.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from bridge.permissions.command_parts import Part
from bridge.permissions.containment import Workspace
from bridge.permissions.facts import RuleForm
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.types import RuleSuggestion
from bridge.visible import has_hidden

_SUBCOMMAND_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9:_.-]*$")
_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun", "uv", "poetry", "pdm", "hatch"})
# commands whose second word is a subcommand or target worth keeping in a suggested prefix
_SUBCOMMAND_TOOLS = _RUNNERS | frozenset(
    {
        "git",
        "cargo",
        "go",
        "make",
        "docker",
        "kubectl",
        "pip",
        "pip3",
        "gh",
        "dotnet",
        "mvn",
        "gradle",
        "just",
        "terraform",
        "helm",
        "brew",
        "apt",
        "conda",
        "rustup",
        "deno",
        "swift",
        "python",
        "python3",
        "pytest",
        "tox",
        "nox",
        "ruff",
        "mypy",
    }
)
_EXACT_SUGGESTION = frozenset(
    {
        "rm",
        "rmdir",
        "dd",
        "shred",
        "truncate",
        "chmod",
        "chown",
        "chgrp",
        "kill",
        "pkill",
        "killall",
        "mkfs",
        # programs that run what they are given (a command, a script, code): `Bash(flock *)` would run anything
        "flock",
        "watch",
        "ionice",
        "chronic",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "xargs",
        "parallel",
        "find",
        "unbuffer",
        "script",
        "strace",
        "ltrace",
        "taskset",
        "chrt",
        "numactl",
        "setsid",
        "nohup",
        "firejail",
        "busybox",
        "expect",
        "socat",
        "ssh",
        "gdb",
        "valgrind",
    }
)


class Suggester:
    """Suggestions for one engine: rules go to its local settings file; `command_tool` names the rules of
    commands (the tool whose call is being asked about)."""

    def __init__(self, destination: Path, workspace: Workspace, grammar: RuleGrammar, command_tool: str = "") -> None:
        self.destination = str(destination)
        self.workspace = workspace
        self.grammar = grammar
        self.command_tool = command_tool

    def rules(self, rules: Iterable[str], *, deny_too: bool = True) -> list[RuleSuggestion]:
        unique = list(dict.fromkeys(rules))
        if not unique or any(has_hidden(rule) for rule in unique):
            return []  # a rule no one can read as written is not offered: what is saved must be what is shown
        out = [RuleSuggestion(unique[0], "allow", self.destination, tuple(unique[1:]))]
        if deny_too and len(unique) == 1:
            out.append(RuleSuggestion(unique[0], "deny", self.destination))
        return out

    def bash(self, parts: Sequence[Part], *, exact: bool = False) -> list[RuleSuggestion]:
        """One rule per part; none when a part has a word computed at run time (`echo $X`): no rule can allow
        what can't be read, so an always-option would not do what it says."""
        if not all(p.static for p in parts):
            return []
        return self.rules(f"{self.command_tool}({command_pattern(p, exact=exact)})" for p in parts)

    def command(self, parts: Sequence[Part], writes: Sequence[Path]) -> list[RuleSuggestion]:
        """A rule for each part that needs one, and a path rule for each file the command's redirections write
        (`npm test > log.txt`: `Bash(npm test *)` and `Write(log.txt)`): a command rule never covers its
        redirections, so an always-option without the path rule would not do what it says."""
        if not all(p.static for p in parts):
            return []
        name = self.grammar.rule_name(self.command_tool, self.grammar.form(self.command_tool), "write")
        rules = [f"{self.command_tool}({command_pattern(p, exact=False)})" for p in parts]
        return self.rules([*rules, *(f"{name}({self.path_spec(path)})" for path in writes)])

    def tool(
        self, tool: str, form: RuleForm, writes: Sequence[Path], outside_reads: Sequence[Path], host: str | None
    ) -> list[RuleSuggestion]:
        if form.specifier == "domain":
            return self.rules([f"{tool}(domain:{host})"] if host else [])
        rules = [f"{self.grammar.rule_name(tool, form, 'write')}({self.path_spec(p)})" for p in writes]
        rules += [f"{self.grammar.rule_name(tool, form, 'read')}({self.path_spec(p)})" for p in outside_reads]
        return self.rules(rules or [tool])

    def path_spec(self, path: Path) -> str:
        """The narrow place to allow: the file's directory (`src/**`), or the file itself at the root."""
        directory = path.parent
        cwd = self.workspace.cwd
        if self.workspace.contains(path):
            root = next(r for r in self.workspace.roots if path == r or path.is_relative_to(r))
            if root == cwd:
                if directory == cwd:
                    return escape_glob(path.name)
                return escape_glob(directory.relative_to(cwd).as_posix()) + "/**"
        return "/" + escape_glob(directory.as_posix()) + "/**"


def escape_glob(text: str) -> str:
    return re.sub(r"([*?\[\]!#\\])", r"\\\1", text)


# Interpreters: `python3 *` would let any code run (`python3 -c '…'`); a rule keeps the script or module asked about
_INTERPRETER = re.compile(r"python[\d.]*|node|nodejs|ruby[\d.]*|perl[\d.]*|php[\d.]*|Rscript|lua[\d.]*")
_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--require", "--import", "-i"})
_VALUE_OPTIONS = frozenset({"-W", "-X", "-I"})  # an option whose value is the next word (not code)


def _interpreter_pattern(part: Part, words: list[str]) -> str:
    """`python3 scripts/x.py *` (the script, any arguments), `python3 -m pytest *` (the module); the exact command
    for code given inline or a program with no script (`python3 -c …`, `node -e …`, a bare `python3`)."""
    n = 1
    while n < len(words) and words[n].startswith("-") and words[n] != "-":
        if words[n] in _CODE_OPTIONS:
            return part.canonical
        if words[n] == "-m":
            return f"{shlex.join(words[: n + 2])} *" if n + 1 < len(words) else part.canonical
        n += 2 if words[n] in _VALUE_OPTIONS else 1
    return f"{shlex.join(words[: n + 1])} *" if n < len(words) and words[n] != "-" else part.canonical


def command_pattern(part: Part, *, exact: bool) -> str:
    """A prefix pattern for a part, or the exact command where a prefix would allow far more than was asked: a
    risky command, one that reads the environment, one that asks only for what it reads (outside the
    workspace, a process's environment): `Bash(cat *)` would let `cat` read anything."""
    words = [w.value for w in part.effective]
    if (
        exact
        or not words
        or words[0] in _EXACT_SUGGESTION
        or part.hazard is not None
        or part.environment
        or part.reads_only
    ):
        return part.canonical
    if _INTERPRETER.fullmatch(words[0]):
        return _interpreter_pattern(part, words)
    depth = 1
    if words[0] in _SUBCOMMAND_TOOLS:
        depth = 3 if words[0] in _RUNNERS and len(words) > 1 and words[1] in ("run", "exec", "x") else 2
    prefix = [words[0]]
    for word in words[1:depth]:
        if not _SUBCOMMAND_WORD.match(word):
            break
        prefix.append(word)
    return f"{shlex.join(prefix)} *"
