"""What `make GOAL` runs, read as make reads its files, for a trusted command's binding (named_files.py).

A hook or exact allow rule that runs `make lint` was bound to the makefile alone, so a recipe running `pytest` ran a
pulled conftest.py under the trust (round 26), and a first reading of the goal's recipes missed ~60 forms (round 27's
verification: conditionals, `define`, `.RECIPEPREFIX`, a `PATH :=`, computed names, wrappers, implicit rules…). So
the reading is strict: it follows what it models exactly and refuses the rest.

- Followed: the goals (the first target, or `.DEFAULT_GOAL`, when none is named), their prerequisites, with the
  makefile's variables, make's own, the automatic ones
  and the command line's `NAME=value` put in; literal includes (read from the working directory, as make does);
  `$(shell …)` wherever it is expanded. Each recipe line, so expanded, is read as a shell script line in strict
  mode (script_reads.shell_names): the files it names are bound, and a runner that finds the folder's code, a
  program or an interpreter's code computed when it runs, or a command run in another folder is unbindable; a
  `$(MAKE) other` in it is followed in turn. A target with no recipe of the file takes the pattern and suffix
  rules that match it (`%.o: %.c`, `.DEFAULT`), and binds the files make's built-in rules would make it from
  (`tool` from `tool.sh`): one that appears later changes the binding.
- Unbindable: a conditional, `eval`/`call`/`value`/`file`/`guile`/`let`, `load`, `undefine`, a variable or
  target named by a computed name, an assignment to what changes how make runs (`SHELL` but a shell,
  `.SHELLFLAGS`, `.RECIPEPREFIX`, `.EXTRA_PREREQS`, `MAKEFLAGS`, `MAKEFILES`, `VPATH`…) or, exported or from the
  environment, how its commands run (any `*PATH`, `BASH_ENV`, `ENV`, `LD_*`, `PYTHON*`, `NODE_*`…), a rule that
  remakes a makefile it read, a
  computed goal or prerequisite, line breaks make reads otherwise than Python (`\\v`, `\\f`, a lone `\\r`), a
  file that is not a regular file, more than `MAX_FILES` makefiles or `MAX_BYTES` in all, and make's options that
  read another makefile or work elsewhere it doesn't follow (`-f` is followed; `-C`, `-I`, `--eval` are not).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

from bridge.permissions.script_reads import SHELLS, Unbindable, _globbed, loads_by_setting, shell_names

MAKEFILES_READ = ("GNUmakefile", "makefile", "Makefile")
MAKES = frozenset({"make", "gmake"})
MAX_FILES = 32
MAX_BYTES = 2 * 1024 * 1024  # all the makefiles one command reads
MAX_DEPTH = 16  # variables within variables
MAX_EXPANSION = 1024 * 1024  # characters expanded for one command
MAX_RECURSION = 4  # `$(MAKE) other` within `$(MAKE) other`…
MAX_TARGETS = 2000  # targets one command's goals reach
MAX_RECIPE_LINES = 2000  # recipe lines read for one command
MAX_IMPLICIT = 500  # pattern and suffix rules
COMPUTED = "${MAKE_COMPUTED}"  # what make computes when it runs (a program named so is unbindable, as `$x` is)

_BUILTINS = {
    **dict.fromkeys(("MAKE", "MAKE_COMMAND"), "make"),
    **{"CC": "cc", "CXX": "g++", "CPP": "cc -E", "AR": "ar", "AS": "as", "LD": "ld", "RM": "rm -f", "FC": "f77"},
    **{"LEX": "lex", "YACC": "yacc", "MAKEINFO": "makeinfo", "TEX": "tex", "SHELL": "/bin/sh", "M2C": "m2c"},
    **{"PC": "pc", "CO": "co", "GET": "get", "TEXI2DVI": "texi2dvi", "WEAVE": "weave", "TANGLE": "tangle"},
    **dict.fromkeys(("CURDIR", "MAKEFILE_LIST", "MAKECMDGOALS", "MAKELEVEL"), "x"),
}
# functions whose result is their arguments' text, rearranged (what it may put into a line is seen)
_TEXT_FUNCTIONS = frozenset(
    {
        *("subst", "patsubst", "strip", "findstring", "filter", "filter-out", "sort", "word", "wordlist", "words"),
        *("firstword", "lastword", "dir", "notdir", "suffix", "basename", "addsuffix", "addprefix", "join"),
        *("wildcard", "realpath", "abspath", "error", "warning", "info", "origin", "flavor", "foreach", "if", "or"),
        *("and", "intcmp"),
    }
)
_REFUSED_FUNCTIONS = frozenset({"eval", "call", "value", "file", "guile", "let"})
_REFUSED_DIRECTIVES = frozenset(
    {"ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "load", "-load", "undefine", "vpath", "override"}
)
_MAKES_OWN = re.compile(
    r"\.(?:SHELLFLAGS|RECIPEPREFIX|EXTRA_PREREQS|ONESHELL|POSIX|LOADED|SECONDEXPANSION|EXPORT_ALL_VARIABLES)"
    r"|MAKEFLAGS|GNUMAKEFLAGS|MFLAGS|MAKEFILES|MAKEOVERRIDES|MAKE|VPATH"
)
# what a command's environment may hold that changes how it runs: a makefile's variable is in its commands'
# environment when it is exported, or when it came from the environment (PATH, HOME…)
_RUN_AFFECTING = re.compile(
    r"BASH_ENV|ENV|IFS|CDPATH|\w*PATH|LD_\w*|DYLD_\w*"
    r"|PYTHON\w*|NODE_\w*|NPM_CONFIG_\w*|PERL\w*|RUBY\w*|GEM_\w*|GIT_\w*|SHELLOPTS|BASHOPTS|PROMPT_COMMAND|JAVA_\w*"
    r"|_JAVA_OPTIONS|\w*_OPTIONS|CLASSPATH|ZDOTDIR|HOME|XDG_\w*"
)
_ASSIGN = re.compile(
    r"((?:(?:override|export|private)\s++)*+)([^\s:#=]++)\s*+(:::=|::=|:=|\?=|\+=|!=|=)\s*+(.*+)", re.S
)
_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]|\r(?!\n)")
_SPECIAL = frozenset(
    {".PHONY", ".SUFFIXES", ".PRECIOUS", ".INTERMEDIATE", ".SECONDARY", ".DELETE_ON_ERROR", ".IGNORE", ".SILENT"}
    | {".LOW_RESOLUTION_TIME", ".EXPORT_ALL_VARIABLES", ".NOTPARALLEL", ".NOTINTERMEDIATE", ".WAIT"}
)
_SUFFIX_RULE = re.compile(r"\.[^./%]+(?:\.[^./%]+)?")
# what make's built-in rules make a file from (`make -p`): a prerequisite no rule of the file makes is made from one
_BUILT_IN_SOURCES = (
    *(".sh", ".c", ".cc", ".C", ".cpp", ".f", ".F", ".r", ".s", ".S", ".mod", ".p", ".o", ".y", ".l", ".w"),
    *(".web", ".texinfo", ".texi", ".txinfo", ".tex", ".sym", ".def", ".ym", ".lm", ".m", ".v"),
)
_OPTIONS_WITH_VALUE = "fCIoWjlE"  # short options that take a value (j and l: an optional number)
_LONG_FILE = ("--file", "--makefile")
_LONG_ELSEWHERE = ("--directory", "--include-dir", "--eval")


class _Rule:
    __slots__ = ("path", "prerequisites", "recipe", "targets")

    def __init__(self, targets: list[str], prerequisites: list[str], path: str) -> None:
        self.targets, self.prerequisites, self.path = targets, prerequisites, path
        self.recipe: list[str] = []


class _Makefile:
    """The makefiles one `make` reads, as make reads them (or Unbindable)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.rules: list[_Rule] = []
        self.by_target: dict[str, list[_Rule]] = {}
        self.variables: dict[str, list[str]] = {}
        self.read_paths: list[str] = []
        self.shells: list[tuple[str, str]] = []  # (`$(shell …)`'s text, where) met while expanding
        self.parse_time: list[tuple[str, str]] = []  # (`X != …`'s command, where)
        self.bytes = 0
        self.spent = 0
        self.export_all = False  # `.EXPORT_ALL_VARIABLES:` or a bare `export`: every variable is in the environment

    def read(self, path: str, shown: str) -> None:
        if len(self.read_paths) >= MAX_FILES:
            raise Unbindable(f"{shown}: more than {MAX_FILES} makefiles are read")
        self.read_paths.append(path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return  # absent (`-include`): make reads nothing there either (it is bound by its absence)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Unbindable(f"{shown} is not a regular file")
            data = os.read(fd, MAX_BYTES - self.bytes + 1)
        finally:
            os.close(fd)
        self.bytes += len(data)
        if self.bytes > MAX_BYTES:
            raise Unbindable(f"the makefiles are over {MAX_BYTES // 1024} KiB in all")
        text = data.decode("utf-8", "replace")
        if _BREAKS.search(text):
            raise Unbindable(f"{shown} has line breaks make reads otherwise than a reading of it would")
        self._lines(text.replace("\r\n", "\n").split("\n"), path, shown)

    def _lines(self, lines: list[str], path: str, shown: str) -> None:
        rule: _Rule | None = None
        define: list[str] | None = None
        name = ""
        n = 0
        while n < len(lines):
            line = lines[n]
            n += 1
            recipe = line.startswith("\t") and rule is not None and define is None
            physical = [line]
            while _continued(physical[-1]) and n < len(lines):  # a recipe's backslash-newline goes to the shell,
                physical.append(lines[n])  # which joins the lines (not in a comment); elsewhere make joins them
                n += 1  # with a space
            if len(physical) > 1:
                line = _joined(physical, recipe)
                if recipe and rule is not None and define is None:  # both readings count: joined, and each line
                    rule.recipe.extend(p.removeprefix("\t").removesuffix("\\") for p in physical[1:])
            if define is not None:
                if line.split("#", 1)[0].strip() == "endef":
                    self._assign(name, "\n".join(define), shown)
                    define = None
                else:
                    define.append(line)
                continue
            if recipe:
                assert rule is not None
                rule.recipe.append(line[1:])
                continue
            text = line.strip()
            if not text or text.startswith("#"):
                continue  # (a comment or blank line keeps the rule's recipe going)
            words = text.split()
            head = words[0]
            if head in _REFUSED_DIRECTIVES:
                raise Unbindable(f"{shown} uses `{head}`, which a reading of the file can't follow")
            if head in ("define", "override", "export", "private") and "define" in words[:3]:
                name = words[words.index("define") + 1] if len(words) > words.index("define") + 1 else ""
                self._check_name(name.rstrip(":=!?+"), shown, exported="export" in words[: words.index("define")])
                name, define, rule = name.rstrip(":=!?+"), [], None
                continue
            if head in ("include", "-include", "sinclude"):
                for word in " ".join(words[1:]).split("#", 1)[0].split():
                    if "$" in word or _globbed(word):
                        raise Unbindable(f"{shown} includes `{word}`, a name computed when it runs")
                    self.read(os.path.join(self.root, word), word)
                rule = None
                continue
            if head in ("export", "unexport") and not _ASSIGN.fullmatch(text):
                if head == "export" and len(words) == 1:
                    self.export_all = True
                    for each in self.variables:
                        self._check_name(each, shown, exported=True)
                for each in words[1:]:
                    self._check_name(each, shown, exported=head == "export")
                continue
            colon = _rule_colon(text)
            assign = _ASSIGN.fullmatch(text)
            if assign is not None and (colon < 0 or text.find(assign.group(3)) <= colon):
                exported = "export" in assign.group(1).split()
                self._assign(assign.group(2), assign.group(4), shown, how=assign.group(3), exported=exported)
                rule = None
                continue
            if colon < 0:  # a line of its own (`$(info …)`, `$(shell …)`): expanded as make reads it
                self.expand(text, {}, {}, 0, where=shown)
                rule = None
                continue
            rest = text[colon:].lstrip(":")
            if rest.startswith("="):  # `t ::= x` read as a rule: not one
                raise Unbindable(f"{shown}: `{text[:60]}` can't be read for sure")
            target_variable = _ASSIGN.fullmatch(rest.strip())
            targets = [_target(t) for t in self.expand(text[:colon], {}, {}, 0).split()]
            if any(COMPUTED in t for t in targets):
                raise Unbindable(f"{shown}: the targets of `{text[:60]}` are computed when it runs")
            if rest.strip().startswith(("export ", "override ", "private ", "unexport ")):
                raise Unbindable(f"{shown}: `{text[:60]}` sets a variable for its targets' commands")
            if target_variable is not None and not rest.strip().startswith("|"):
                self._assign(target_variable.group(2), target_variable.group(4), shown, how=target_variable.group(3))
                rule = None
                continue
            prerequisites_text, _, inline = rest.partition(";")
            if inline:  # (the rest of the line, comments and all, is the recipe: the shell reads it)
                inline = text[text.index(";", colon) + 1 :]
            if ".ONESHELL" in targets:
                raise Unbindable(f"{shown} runs each recipe as one script (`.ONESHELL`), which a reading can't follow")
            if rest.strip().startswith(("export ", "override ", "private ")):
                raise Unbindable(f"{shown}: `{text[:60]}` sets a variable for its targets' commands")
            if ".EXPORT_ALL_VARIABLES" in targets:
                self.export_all = True
                for each in self.variables:
                    self._check_name(each, shown, exported=True)
            rule = _Rule(targets, prerequisites_text.split("#", 1)[0].replace("|", " ").split(), path)
            if inline.strip():
                rule.recipe.append(inline)
            self.rules.append(rule)
            for target in targets:
                self.by_target.setdefault(target, []).append(rule)
        if define is not None:
            raise Unbindable(f"{shown}: a `define` is never ended")

    def _check_name(self, name: str, shown: str, *, exported: bool = False) -> None:
        if "$" in name:
            raise Unbindable(f"{shown} names a variable computed when it runs (`{name[:40]}`)")
        environment = exported or name in os.environ or self.export_all
        if _MAKES_OWN.fullmatch(name) or (environment and _RUN_AFFECTING.fullmatch(name) and name != "SHELL"):
            raise Unbindable(f"{shown} sets `{name}`, which changes how make or the commands it runs work")
        if name == ".EXPORT_ALL_VARIABLES":
            self.export_all = True

    def _assign(self, name: str, value: str, shown: str, how: str = "=", *, exported: bool = False) -> None:
        self._check_name(name, shown, exported=exported)
        if "#" in value:
            kept, _, comment = value.partition("#")
            if "$" in comment:  # (whether make reads it as a comment depends on where it stands)
                raise Unbindable(f"{shown}: `{name}`'s value has a `#` before a reference")
            value = kept.rstrip()
        if name == "SHELL":
            program = value.split()
            shell = (
                program[1]
                if program[:1] and program[0].rsplit("/", 1)[-1] == "env" and len(program) > 1
                else (program[0] if program else "")
            )
            if shell.rsplit("/", 1)[-1] not in SHELLS:
                raise Unbindable(f"{shown} runs its recipes with `{value.strip()[:40]}`, not a shell")
        if how == "!=":
            self.parse_time.append((value, shown))
        self.expand(value, {}, {}, 0, where=shown)  # (its `$(shell …)` runs as make reads it, or when it is used)
        self.variables.setdefault(name, []).append(value)

    def expand(
        self, text: str, overrides: dict[str, str], automatic: dict[str, str], depth: int, where: str = ""
    ) -> str:
        """`text` with the variables put in as make would: each of a variable's values in turn (`;`-joined: a check
        sees every one); a function of text as COMPUTED and its arguments, each as a command of its own (what it
        could put into a line is seen); `$(shell …)`'s text kept to be read as a command."""
        if depth > MAX_DEPTH:
            raise Unbindable(f"a makefile's variables nest more than {MAX_DEPTH} deep")
        out: list[str] = []
        n = 0
        while (at := text.find("$", n)) >= 0:
            out.append(text[n:at])
            opener = text[at + 1 : at + 2]
            if opener in ("(", "{"):
                close, level, end = ")" if opener == "(" else "}", 1, at + 2
                while end < len(text) and level:  # (make counts only the parentheses of the reference's kind)
                    level += (text[end] == opener) - (text[end] == close)
                    end += 1
                if level:
                    raise Unbindable("a makefile has an unterminated variable reference")
                out.append(self._reference(text[at + 2 : end - 1], overrides, automatic, depth, where))
                n = end
            else:
                out.append("$" if opener in ("$", "") else self._named(opener, overrides, automatic, depth, where))
                n = at + 2
        out.append(text[n:])
        result = "".join(out)
        self.spent += len(result) + 1
        if self.spent > MAX_EXPANSION:
            raise Unbindable(f"a makefile's variables expand to more than {MAX_EXPANSION} characters")
        return result

    def _reference(
        self, inner: str, overrides: dict[str, str], automatic: dict[str, str], depth: int, where: str
    ) -> str:
        if len(inner) == 2 and inner[1] in "DF" and inner[0] in automatic:
            return automatic[inner[0]]
        function = re.match(r"([a-z-]++)\s", inner)
        if function is not None and function.group(1) in _REFUSED_FUNCTIONS:
            raise Unbindable(f"a makefile uses `$({function.group(1)} …)`, which a reading of it can't follow")
        if function is not None and function.group(1) == "shell":
            command = self.expand(inner[function.end() :], overrides, automatic, depth + 1, where)
            self.shells.append((command, where))
            return COMPUTED
        if function is not None and function.group(1) in _TEXT_FUNCTIONS:
            arguments = self.expand(inner[function.end() :], overrides, automatic, depth + 1, where)
            parts = arguments.replace(COMPUTED, "x").split(",")  # (an argument that could end a command is one)
            return COMPUTED + "".join(f" ; {p}" if re.search(r"[;&|()`\n]", p) else f" {p}" for p in parts)
        name, colon, replacement = inner.partition(":")
        if "$" in name:
            raise Unbindable(f"a makefile names a variable computed when it runs (`$({inner[:40]})`)")
        value = self._named(name.strip(), overrides, automatic, depth, where)
        if colon:  # `$(X:.c=.o)`: X's words with their ends replaced (a program named so is computed), and the
            # text the reference gives
            value = f"{COMPUTED} {value} {self.expand(replacement, overrides, automatic, depth + 1, where)}"
        return value

    def _named(self, name: str, overrides: dict[str, str], automatic: dict[str, str], depth: int, where: str) -> str:
        if name in automatic:
            return automatic[name]
        if name in "@<^?*+|%":
            return COMPUTED
        values = [overrides[name]] if name in overrides else self.variables.get(name)
        if values is None:
            return _BUILTINS.get(name, COMPUTED)  # (not the makefile's: the user's environment, or empty)
        return " ; ".join(self.expand(each, overrides, automatic, depth + 1, where) for each in values)


def _joined(physical: list[str], recipe: bool) -> str:
    """Lines continued with backslash-newline, joined as make (a space) or the shell (nothing, a recipe) does."""
    parts = [p.removesuffix("\\") for p in physical[:-1]] + [physical[-1]]
    if recipe:
        return parts[0] + "".join(p.removeprefix("\t") for p in parts[1:])
    return parts[0].rstrip() + " " + " ".join(p.strip() for p in parts[1:])


def _continued(line: str) -> bool:
    """A backslash-newline: an odd number of backslashes at the line's end."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _target(word: str) -> str:
    word = word.removesuffix("&")
    while word.startswith("./") and len(word) > 2:
        word = word[2:]
    return word


def _rule_colon(text: str) -> int:
    """Where a rule line's first colon is (not inside `$(…)`, not `:=`), or -1."""
    level = 0
    for n, char in enumerate(text):
        if char in "({":
            level += 1
        elif char in ")}":
            level -= 1
        elif char == ":" and level == 0 and not text.startswith("=", n + 1):
            return n
        elif char == "=" and level == 0:
            return -1
    return -1


def is_make(words: list[str]) -> bool:
    return bool(words) and words[0].rsplit("/", 1)[-1] in MAKES


def make_names(words: list[str], root: Path, depth: int = 0) -> Iterator[str]:
    """What `make …` (its words, the program first) runs of the workspace, to bind: the makefiles, the files its
    recipes name, the files make could build a prerequisite from; Unbindable when that can't be pinned."""
    if depth > MAX_RECURSION:
        raise Unbindable(f"`{' '.join(words)}`: make runs make more than {MAX_RECURSION} deep")
    files, goals, overrides = _arguments(words)
    if why := loads_by_setting([f"{name}={value}" for name, value in overrides.items()]):
        raise Unbindable(f"`{' '.join(words)}`: {why}")
    if not files:
        found = next((name for name in MAKEFILES_READ if os.path.isfile(os.path.join(root, name))), None)
        if found is None:
            yield from (os.path.join(root, name) for name in MAKEFILES_READ)  # bound by their absence
            return
        files = [found]
    makefile = _Makefile(root)
    for name in files:
        if "$" in name or "`" in name:
            raise Unbindable(f"`{' '.join(words)}` reads a makefile named when it runs")
        makefile.read(os.path.join(root, name), name)
    yield from makefile.read_paths
    yield from (os.path.join(root, name) for name in MAKEFILES_READ)
    for rule in makefile.rules:  # make remakes a makefile it read before anything else
        if any(
            os.path.normpath(os.path.join(root, t)) in map(os.path.normpath, makefile.read_paths) for t in rule.targets
        ):
            raise Unbindable(f"{files[0]} has a rule that remakes a makefile it reads (`{rule.targets[0]}`)")
    implicit = [r for r in makefile.rules if any(_always(t) for t in r.targets)]
    for read in makefile.read_paths:
        name = os.path.relpath(read, root)
        if any(_matches(t, name) for r in implicit for t in r.targets) or any(
            os.path.exists(read + suffix) for suffix in _BUILT_IN_SOURCES
        ):
            raise Unbindable(f"make could remake the makefile `{name}` by an implicit rule before it reads it")
    for command, where in makefile.parse_time:
        yield from _command_names(command, f"{where}, as make reads it", root, depth)
    yield from _goal_names(makefile, goals or _default_goal(makefile), overrides, root, depth, files[0])
    for command, where in makefile.shells:  # (`$(shell …)` met as lines and recipes were expanded)
        yield from _command_names(command, where, root, depth)


def _arguments(words: list[str]) -> tuple[list[str], list[str], dict[str, str]]:
    """make's command line: the makefiles (`-f`), the goals, the `NAME=value` overrides."""
    files: list[str] = []
    goals: list[str] = []
    overrides: dict[str, str] = {}
    n = 1
    while n < len(words):
        word = words[n]
        n += 1
        if word == "--":
            goals += words[n:]
            break
        if word.startswith("--"):
            option, has_value, value = word.partition("=")
            if len(option) > 3 and any(full.startswith(option) for full in _LONG_ELSEWHERE):
                raise Unbindable(f"`{' '.join(words)}`: make is told to read or work elsewhere (`{option}`)")
            if len(option) > 3 and any(full.startswith(option) for full in _LONG_FILE):
                if not has_value:
                    value, n = (words[n] if n < len(words) else ""), n + 1
                files.append(value)
            elif option in ("--what-if", "--new-file", "--assume-new", "--old-file", "--assume-old") and not has_value:
                n += 1
            continue
        if word.startswith("-") and len(word) > 1:
            for at, letter in enumerate(word[1:], 1):
                if letter in "CIE":
                    raise Unbindable(f"`{' '.join(words)}`: make is told to read or work elsewhere (`-{letter}`)")
                if letter in _OPTIONS_WITH_VALUE:
                    value = word[at + 1 :]
                    if not value and letter not in "jl":
                        value, n = (words[n] if n < len(words) else ""), n + 1
                    elif not value and n < len(words) and words[n].isdigit():
                        n += 1
                    if letter == "f":
                        files.append(value)
                    break
            continue
        if re.match(r"[^\s=:$]+\s*+:{0,3}=", word):
            key, _, value = word.partition("=")
            overrides[key.rstrip(":").strip()] = value
        else:
            goals.append(word)
    return files, goals, overrides


def _default_goal(makefile: _Makefile) -> list[str]:
    if ".DEFAULT_GOAL" in makefile.variables:
        goals = makefile.expand(makefile.variables[".DEFAULT_GOAL"][-1], {}, {}, 0).split()
        if len(makefile.variables[".DEFAULT_GOAL"]) > 1 or any(COMPUTED in g or "$" in g for g in goals):
            raise Unbindable("the makefile's `.DEFAULT_GOAL` is computed or set more than once")
        return goals
    for rule in makefile.rules:
        for target in rule.targets:
            if "%" not in target and (not target.startswith(".") or "/" in target):
                return [target]
    return []


def _always(target: str) -> bool:
    """A rule make may use to make any target: a pattern rule, a suffix rule (`.c.o`), `.DEFAULT`."""
    return "%" in target or target == ".DEFAULT" or (bool(_SUFFIX_RULE.fullmatch(target)) and target not in _SPECIAL)


def _matches(rule_target: str, target: str) -> bool:
    """Whether make may use an implicit rule of `rule_target` (`%.o`, `.c.o`, `.DEFAULT`) to make `target`."""
    if rule_target == ".DEFAULT":
        return True
    if "%" in rule_target:
        prefix, _, suffix = rule_target.partition("%")
        return len(target) >= len(prefix) + len(suffix) and target.startswith(prefix) and target.endswith(suffix)
    suffixes = re.findall(r"\.[^.]+", rule_target)  # `.c.o` makes `x.o`; `.sh` makes `x`
    return len(suffixes) == 1 or target.endswith(suffixes[-1])


def _goal_names(
    makefile: _Makefile, goals: list[str], overrides: dict[str, str], root: Path, depth: int, shown: str
) -> Iterator[str]:
    implicit = [r for r in makefile.rules if any(_always(t) for t in r.targets)]
    if len(implicit) > MAX_IMPLICIT:
        raise Unbindable(f"the makefile has more than {MAX_IMPLICIT} pattern or suffix rules")
    chosen: list[_Rule] = []
    wanted, seen = [_target(g) for g in goals], set[str]()
    listed: dict[str, set[str]] = {}
    while wanted:
        goal = wanted.pop()
        if goal in seen:
            continue
        seen.add(goal)
        if len(seen) > MAX_TARGETS:
            raise Unbindable(f"`make` reaches more than {MAX_TARGETS} targets")
        if "$" in goal or COMPUTED in goal:
            raise Unbindable(f"a goal of `make` is computed when it runs (`{goal}`)")
        rules = makefile.by_target.get(goal, [])
        if not any(rule.recipe for rule in rules):  # made, if at all, by an implicit rule: the file's that match,
            chosen += [r for r in implicit if any(_matches(t, goal) for t in r.targets)]
            folder, name = os.path.split(os.path.join(root, goal))  # or a built-in one, from a file beside it (the
            if folder not in listed:  # binding lists those there: one that appears later changes it)
                try:
                    listed[folder] = set(os.listdir(folder))
                except OSError:
                    listed[folder] = set()
            yield from (os.path.join(folder, name + s) for s in _BUILT_IN_SOURCES if name + s in listed[folder])
        for rule in rules:
            chosen.append(rule)
            for prerequisite in makefile.expand(" ".join(rule.prerequisites), overrides, {}, 0).split():
                if prerequisite != ";":
                    wanted.append(_target(prerequisite))
    done: set[int] = set()
    lines = 0
    for rule in chosen:
        if id(rule) in done:
            continue
        done.add(id(rule))
        prerequisites = [p for t in rule.targets for r in makefile.by_target.get(t, [rule]) for p in r.prerequisites]
        prerequisites = list(
            dict.fromkeys(rule.prerequisites + prerequisites)
        )  # (`$^`: every rule's, the recipe's first)
        first = prerequisites[0] if prerequisites else ""
        automatic = {
            "@": " ; ".join(rule.targets) if all("%" not in t for t in rule.targets) else COMPUTED,
            "<": first if "%" not in first else COMPUTED,
            "^": " ".join(prerequisites) if all("%" not in p for p in prerequisites) else COMPUTED,
            "*": COMPUTED,
        }
        automatic.update({"+": automatic["^"], "?": automatic["^"], "|": automatic["^"]})
        where = f"{shown}'s recipe for `{rule.targets[0] if rule.targets else '?'}`"
        lines += len(rule.recipe)
        if lines > MAX_RECIPE_LINES:
            raise Unbindable(f"`make` runs more than {MAX_RECIPE_LINES} recipe lines")
        for line in rule.recipe:
            for command in makefile.expand(line, overrides, automatic, 0, where).split("\n"):
                yield from _command_names(command.lstrip(" \t@-+"), where, root, depth)


def _command_names(command: str, where: str, root: Path, depth: int) -> Iterator[str]:
    """A recipe line (or `$(shell …)`'s text) read as a line of a shell script, strictly."""
    try:
        yield from shell_names(command, root / "Makefile", root, where, make_depth=depth + 1, posix=True)  # (/bin/sh)
    except RecursionError as exc:
        raise Unbindable(f"{where}: nested too deep to read") from exc
