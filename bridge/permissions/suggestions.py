"""The always-rules a permission question offers: narrow enough to be safe, broad enough to be useful.

A command gets a prefix rule for each part not yet allowed (`Bash(npm run test *)`, `Bash(cargo build *)`), or
an exact rule for risky ones (`rm`, `sudo …`) and for programs whose arguments can make them run anything (`sed`,
`tar`, `make`); a path tool gets the file's directory under the name the grammar gives rules about such paths
(`Edit(src/**)`), a file at the root the file alone; a fetch its host (`WebFetch(domain:example.com)`).
One question offers one allow option (all its rules together) and, for a single rule, a deny option. A rule is
offered in the text it is saved as (`Rule.text`), so the option's label is the rule the settings file gets.
"""

from __future__ import annotations

import contextlib
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path, PureWindowsPath

from bridge.permissions.command_parts import Part
from bridge.permissions.containment import Workspace
from bridge.permissions.facts import RuleForm
from bridge.permissions.grammar import RuleGrammar
from bridge.permissions.rules import Rule
from bridge.permissions.specifiers import RuleSyntaxError, command_tokens
from bridge.permissions.types import RuleSuggestion
from bridge.visible import has_hidden
from bridge.winpaths import posix_form

_SUBCOMMAND_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9:_.-]*$")
_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun", "uv", "poetry", "pdm", "hatch"})
# commands whose second word is a subcommand worth keeping in a suggested prefix; their bare name would allow
# every subcommand, those that run anything too (`npm exec`, `go run`, `docker run`): kept, or the exact command
_SUBCOMMAND_TOOLS = _RUNNERS | frozenset(
    {
        "git",
        "cargo",
        "go",
        "docker",
        "podman",
        "kubectl",
        "pip",
        "pip3",
        "gh",
        "dotnet",
        "mvn",
        "gradle",
        "terraform",
        "helm",
        "brew",
        "conda",
        "rustup",
        "deno",
        "swift",
    }
)
# commands whose second word names what they check, worth keeping when it is a plain word (`ruff check *`)
_TARGET_TOOLS = frozenset({"pytest", "tox", "nox", "ruff", "mypy"})
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
        # Programs whose arguments can make them run a command or code of the arguments' choosing — a command, a
        # script, a program for a hook, a library to load — or write files no one checks (an archive's): a prefix
        # (`Bash(sed *)`) would let `sed -n '1e touch x' f` run anything, so the rule is the command asked about.
        # runners of the command they are given
        "flock",
        "watch",
        "ionice",
        "chronic",
        "xargs",
        "parallel",
        "find",
        "fd",
        "fdfind",
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
        "gdb",
        "valgrind",
        "tmux",
        "screen",
        "hyperfine",
        "entr",
        "watchexec",
        "nodemon",
        "rlwrap",
        "dbus-run-session",
        "ssh-agent",
        "crontab",  # what it installs runs later
        "xdg-open",  # a file's handler may be the file itself
        "open",
        "ansible",  # `-m shell -a …`
        # stream editors and text tools with a command language or a helper program
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "sed",  # `e`, `s///e`
        "gsed",
        "sort",  # --compress-program
        "rg",  # --pre
        "sdiff",  # --diff-program
        "diff3",
        "m4",  # syscmd
        "dc",  # `!`
        "pandoc",  # --filter
        "fzf",  # --bind …:execute
        # archivers: an option runs a program (--checkpoint-action=exec, -TT, --rsh-command), the archive says
        # which files are written where
        "tar",
        "gtar",
        "bsdtar",
        "zip",
        "unzip",
        "cpio",
        # remote shells and what copies over them (-o ProxyCommand, -e, -S)
        "ssh",
        "scp",
        "sftp",
        "rsync",
        "sshfs",
        "mosh",
        "autossh",
        "socat",
        "nc",  # -e, --exec
        "ncat",
        "netcat",
        # editors and pagers (`-c '!cmd'`, --eval, --speller, `+!cmd`, man's -P and --html)
        "vi",
        "vim",
        "nvim",
        "view",
        "vimdiff",
        "gvim",
        "ex",
        "ed",
        "emacs",
        "emacsclient",
        "nano",
        "less",
        "more",
        "most",
        "man",
        # tools with a hook, a script or a library option (-z, --script, -X lua_script, -engine, --photo-viewer,
        # --use-askpass, -D pkcs11)
        "tcpdump",
        "tshark",
        "nmap",
        "openssl",
        "gpg",
        "gpg2",
        "wget",
        "ssh-keygen",
        "magick",  # a file name `|cmd`
        "convert",
        # build tools that take code on the command line (--eval, -f, `SHELL=…`), package tools that run a
        # package's scripts or hooks (-o APT::…::Pre-Invoke, --pre-invoke), runners of any package
        "make",
        "gmake",
        "just",
        "dpkg",
        "apt",
        "apt-get",
        "aptitude",
        "npx",
        "pnpx",
        "bunx",
        "uvx",
        "pipx",
        "bundle",  # exec
        # interpreters and consoles the interpreter rule below does not know
        "sqlite3",  # .shell
        "psql",  # \!
        "mysql",  # system
        "java",
        "jshell",
        "julia",
        "R",
        "tclsh",
        "wish",
        "ghci",
        "runghc",
        "osascript",
        "pwsh",
    }
)
# subcommands of a `_SUBCOMMAND_TOOLS` command that run a command given in their options or arguments
# (`git rebase -x …`, `git fetch --upload-pack=…`, `git grep -O…`, `docker run …`): the exact command too
_EXACT_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset(
        {
            "rebase",
            "bisect",
            "submodule",
            "fetch",
            "pull",
            "push",
            "clone",
            "ls-remote",
            "archive",
            "grep",
            "difftool",
            "mergetool",
            "filter-branch",
            "send-email",
        }
    ),
    "docker": frozenset({"run", "exec", "create"}),
    "podman": frozenset({"run", "exec", "create"}),
    "kubectl": frozenset({"exec", "run", "debug"}),
    # attack round 10: `Bash(rustup run *)` ran `rustup run stable sh -c …`; `conda run` is the same
    "rustup": frozenset({"run"}),
    "conda": frozenset({"run"}),
    # a goal or task is a plugin it runs (`mvn validate org.codehaus.mojo:exec-maven-plugin:…:exec`), an init
    # script a program (`gradle test -I x.gradle`): every maven and gradle command is exact
    "mvn": frozenset({"*"}),
    "gradle": frozenset({"*"}),
}


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
        what can't be read, so an always-option would not do what it says (nor for a setting another part made)."""
        if not all(p.static and not p.settings_elsewhere for p in parts):
            return []
        patterns = [command_pattern(p, exact=exact) for p in parts]
        if any(_wider_than_written(pattern) for pattern in patterns):
            return []
        return self.rules(rule_text(self.command_tool, pattern) for pattern in patterns)

    def command(self, parts: Sequence[Part], writes: Sequence[Path]) -> list[RuleSuggestion]:
        """A rule for each part that needs one, and a path rule for each file the command's redirections write
        (`npm test > log.txt`: `Bash(npm test *)` and `Write(log.txt)`): a command rule never covers its
        redirections, so an always-option without the path rule would not do what it says."""
        if not all(p.static and not p.settings_elsewhere for p in parts):
            return []
        name = self.grammar.rule_name(self.command_tool, self.grammar.form(self.command_tool), "write")
        patterns = [command_pattern(p, exact=False) for p in parts]
        if any(_wider_than_written(pattern) for pattern in patterns):
            return []
        rules = [rule_text(self.command_tool, pattern) for pattern in patterns]
        return self.rules([*rules, *(rule_text(name, self.path_spec(path)) for path in writes)])

    def tool(
        self, tool: str, form: RuleForm, writes: Sequence[Path], outside_reads: Sequence[Path], host: str | None
    ) -> list[RuleSuggestion]:
        if form.specifier == "domain":
            return self.rules([rule_text(tool, f"domain:{host}")] if host else [])
        rules = [rule_text(self.grammar.rule_name(tool, form, "write"), self.path_spec(p)) for p in writes]
        rules += [rule_text(self.grammar.rule_name(tool, form, "read"), self.path_spec(p)) for p in outside_reads]
        return self.rules(rules or [tool])

    def path_spec(self, path: Path) -> str:
        """The narrow place to allow, in a pattern that means only it: the file's directory below the cwd
        (`src/**`: a pattern with a slash is anchored at its base), else by its absolute path — a file at the
        root the file alone (`//home/me/proj/notes.txt`), anything outside the cwd its directory (`//etc/**`).
        Not `notes.txt` nor `/notes.txt`: a slash-free name matches at any depth below its base (gitignore,
        specifiers.py), so `deep/x/notes.txt` would be allowed too."""
        cwd = self.workspace.cwd
        directory = path.parent
        if directory != cwd and directory.is_relative_to(cwd):
            return escape_glob(directory.relative_to(cwd).as_posix()) + "/**"
        if directory == cwd or path == cwd or directory.parent == directory:  # `//**` would be every file
            return "/" + escape_glob(_absolute(path))
        return "/" + escape_glob(_absolute(directory)) + "/**"


def _wider_than_written(pattern: str) -> bool:
    """A command pattern with a `*` inside one of its words (`rm -f 'x*.tmp'`, `sed 's/a*/b/' f`): the rule language
    reads every `*` as a wildcard and has no escape, so saved it would allow far more than the command (`rm -f
    x/../important.tmp`). No always-option is offered for it (attack round 8's fixer)."""
    with contextlib.suppress(RuleSyntaxError):
        tokens, _tail = command_tokens(pattern)
        return any("*" in token for token in tokens)
    return True


def _absolute(path: Path) -> str:
    """An absolute path as a `//` rule names it: `/c/Users/…` on Windows (winpaths.py); a backslash elsewhere is
    part of a name."""
    return posix_form(str(path)) if isinstance(path, PureWindowsPath) else path.as_posix()


def rule_text(tool: str, specifier: str) -> str:
    """The rule as the settings file will hold it (parentheses escaped), so the label shows what is saved."""
    return Rule(tool, specifier).text


def escape_glob(text: str) -> str:
    """`text` as a path pattern naming only itself: pattern characters escaped, and trailing spaces, which
    gitignore drops unless escaped."""
    escaped = re.sub(r"([*?\[\]!#\\])", r"\\\1", text)
    stripped = escaped.rstrip(" ")
    return stripped + "\\ " * (len(escaped) - len(stripped))


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
    risky command, a program whose arguments can make it run anything, one that reads the environment, one that
    asks only for what it reads (outside the workspace, a process's environment): `Bash(cat *)` would let `cat`
    read anything."""
    words = [w.value for w in part.effective]
    if part.unruled_settings():
        return part.ruled_text  # (a prefix rule without them would not allow it: `Part.allow_forms`)
    if (
        exact
        or not words
        or words[0] in _EXACT_SUGGESTION
        or (len(words) > 1 and _EXACT_SUBCOMMANDS.get(words[0], frozenset()) & {words[1], "*"})
        or part.hazard is not None
        or part.environment
        or part.reads_only
    ):
        return part.canonical
    if _INTERPRETER.fullmatch(words[0]):
        return _interpreter_pattern(part, words)
    depth = 1
    if words[0] in _SUBCOMMAND_TOOLS or words[0] in _TARGET_TOOLS:
        depth = 3 if words[0] in _RUNNERS and len(words) > 1 and words[1] in ("run", "exec", "x") else 2
    prefix = [words[0]]
    for word in words[1:depth]:
        if not _SUBCOMMAND_WORD.match(word):
            break
        prefix.append(word)
    if words[0] in _SUBCOMMAND_TOOLS and len(prefix) < depth:
        return part.canonical  # an option where the subcommand goes (`git -C src commit`): `git *` allows them all
    return f"{shlex.join(prefix)} *"
