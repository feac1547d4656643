"""What a known command does with its words: flag-exact tables of the read-only commands.

A command is read-only only when every word is understood: each option is in its table (short, bundled
short, long, `--opt=value`, and long-option abbreviations resolved as getopt resolves them — against the
table, which lists the dangerous options too, so `--outp` is `--output`), and each operand has a role
(input file, output file, pattern, plain data). An option that writes or runs something is listed with
that role and makes the command not read-only; an option not in the table makes it unknown.

`effects(words)` returns what the command reads (paths, recursively or not, file lists), what it writes,
and why it is not read-only. The tables follow GNU coreutils, findutils, grep, ripgrep and git.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bridge.permissions.command_tables import (
    FIND_ACTIONS,
    FIND_FLAGS,
    FIND_READ_VALUE,
    FIND_TESTS_WITH_VALUE,
    GIT_BRANCH_LIST,
    GIT_CONFIG_READ,
    GIT_GLOBAL_FLAGS,
    GIT_LOG,
    GIT_SUBCOMMANDS,
    GIT_TAG_LIST,
    SED_SCRIPT,
    SPECS,
    TEST_OPERATORS,
    Opt,
    Spec,
    git_table,
)
from bridge.permissions.shellparse import Word
from bridge.secrets import looks_secret


@dataclass(frozen=True)
class Access:
    """A path the command reads."""

    word: Word
    recursive: bool = False  # everything below a directory is read (grep -r, rg)
    follow: bool = False  # ... following symlinks (grep -R, rg -L)
    names_only: bool = False  # only names and metadata (ls, find, stat): containment, no content
    list_file: bool = False  # a file naming more files to read (`--files0-from`, `md5sum -c`)
    repo_path: bool = False  # `REV:path` in git: relative to the repository's top directory
    repo: bool = False  # the whole repository's content (git diff/log/show/grep without a pathspec)


@dataclass
class Effects:
    program: str
    read_only: bool = True
    why: str = ""  # why not read-only
    reads: list[Access] = field(default_factory=list)
    writes: list[Word] = field(default_factory=list)  # output files it names
    write_trees: list[Word] = field(default_factory=list)  # directories it writes below (find -delete)
    unknown_reads: bool = False  # it may read paths that can't be known here (a computed operand…)
    maybe_reads: list[Word] = field(default_factory=list)  # an unknown program's words: for Read deny rules only
    git_dir: Word | None = None  # git -C DIR: where the repository is looked for
    git: bool = False  # a git command: the repository it reads must be inside the workspace
    runs: list[Word] = field(default_factory=list)  # values of options that name a program it runs (`--pre P`)
    run_programs: list[str] = field(default_factory=list)  # fixed programs an option runs (`diff -l`: pr)
    runs_configured: str | None = None  # why it runs a program named by configuration (`git log --ext-diff`)
    environment: bool = False  # it prints environment variables (printenv, env, export -p, jq's env)

    def refuse(self, why: str) -> None:
        if self.read_only:
            self.read_only, self.why = False, why


def known(program: str) -> bool:
    return program in SPECS or program in ("find", "git", "cd")


def effects(program: str, args: Sequence[Word]) -> Effects:
    """What `program args…` does, judged flag by flag. Unknown programs are not read-only."""
    special = _SPECIAL.get(program)
    if special is not None:
        return special(args)
    spec = SPECS.get(program)
    if spec is None:
        out = Effects(program, False, f"`{program}` is not a known read-only command")
        out.maybe_reads = _maybe_paths(args)
        return out
    return _generic(program, spec, args)


def _maybe_paths(args: Sequence[Word]) -> list[Word]:
    """Words of a program the checker does not know that could name a file it reads (`awk 1 secret.txt`,
    `dd if=secret.txt`): Read deny rules match them, so a denied file is not read by another name."""
    out: list[Word] = []
    for word in args:
        if not word.static:
            continue
        value = word.value
        if value.startswith("-") or "=" in value:
            value = value.split("=", 1)[1] if "=" in value else ""
            if value:
                out.append(Word(value, value))
        elif value:
            out.append(word)
    return out


# --- the generic option walk --------------------------------------------------------------------------


class _Unknown(Exception):
    pass


def _resolve_long(table: dict[str, Opt], name: str) -> str:
    """`--outp` is `--output` when it is the only long option that starts so (getopt's rule)."""
    if name in table:
        return name
    found = [key for key in table if key.startswith("--") and key.startswith(name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise _Unknown(f"the option {name} is ambiguous")
    raise _Unknown(f"the option {name} is not one the checker knows")


@dataclass
class _Parsed:
    options: list[tuple[str, str | None, Word | None]] = field(default_factory=list)  # (key, value, value word)
    operands: list[Word] = field(default_factory=list)
    after_dashdash: list[bool] = field(default_factory=list)  # per operand: it came after `--`

    def add(self, word: Word, after: bool) -> None:
        self.operands.append(word)
        self.after_dashdash.append(after)


def _walk(spec: Spec, args: Sequence[Word], first_dynamic: int | None) -> _Parsed:
    parsed = _Parsed()
    table = spec.options
    i = 0
    only_operands = dashdash = False
    while i < len(args):
        word = args[i]
        text = word.value
        dynamic_here = (first_dynamic is not None and i >= first_dynamic) or word.pipe
        if not word.static and not dynamic_here:
            raise _Unknown(f"`{word.text}` is computed at run time")
        if word.pattern is not None and text.startswith("-") and not only_operands and not spec.no_options and (
                not text.startswith("--") or "=" not in text or _has_glob_chars(word.pattern.split("=", 1)[0])):
            raise _Unknown(f"the option word `{word.text}` is a glob")  # only a `--opt=*.txt` value may be one
        if spec.no_options or only_operands or not word.static or not text.startswith("-") or text == "-":
            parsed.add(word, dashdash)
            if not spec.permute and word.static:
                only_operands = True
            i += 1
            continue
        if text == "--":
            only_operands = dashdash = True
            i += 1
            continue
        if spec.single_dash_long or text.startswith("--"):
            name, eq, value = text.partition("=")
            key = name if spec.single_dash_long and name in table else (
                _resolve_long(table, name) if text.startswith("--") else "")
            if not key:
                raise _Unknown(f"the option {name} is not one the checker knows")
            opt = table[key]
            if opt.role == "two_values":
                raise _Unknown(f"the option {key} takes two values")
            if eq:
                if opt.value == "none":
                    raise _Unknown(f"the option {key} takes no value")
                glob = word.pattern.split("=", 1)[1] if word.pattern is not None else None
                parsed.options.append((key, value, Word(value, value, pattern=glob)))
            elif opt.value == "required":
                if i + 1 >= len(args):
                    raise _Unknown(f"the option {key} needs a value")
                i += 1
                if not args[i].static:
                    raise _Unknown(f"the value of {key} is computed at run time")
                parsed.options.append((key, args[i].value, args[i]))
            else:
                parsed.options.append((key, None, None))
            i += 1
            continue
        if spec.numeric and text[1:].isdigit():
            parsed.options.append(("numeric", text[1:], None))
            i += 1
            continue
        j = 1
        while j < len(text):
            letter = text[j]
            opt_or_none = table.get(letter)
            if opt_or_none is None:
                raise _Unknown(f"the option -{letter} is not one the checker knows")
            if opt_or_none.value == "none":
                parsed.options.append((letter, None, None))
                j += 1
                continue
            rest = text[j + 1:]
            if rest:
                parsed.options.append((letter, rest, Word(rest, rest)))
            elif opt_or_none.value == "optional":
                parsed.options.append((letter, None, None))
            else:
                if i + 1 >= len(args):
                    raise _Unknown(f"the option -{letter} needs a value")
                i += 1
                if not args[i].static:
                    raise _Unknown(f"the value of -{letter} is computed at run time")
                parsed.options.append((letter, args[i].value, args[i]))
            break
        i += 1
    return parsed


def _has_glob_chars(text: str) -> bool:
    return any(c in text for c in "*?[")


def _generic(program: str, spec: Spec, args: Sequence[Word]) -> Effects:
    out = Effects(program)
    first_dynamic = spec.dynamic_ok
    try:
        parsed = _walk(spec, args, first_dynamic)
    except _Unknown as exc:
        out.refuse(f"`{program}`: {exc}")
        _fail_closed_reads(out, spec, args)
        return out
    recursive = spec.recursive
    follow = False
    check = False
    pattern_given = False
    for key, value, value_word in parsed.options:
        opt = spec.options.get(key, Opt())
        role = opt.role
        if key in spec.pattern_option:
            pattern_given = True
        if role in ("write", "exec", "forbid"):
            out.refuse(f"`{program} {key if key.startswith('-') else '-' + key}` {opt.why or 'is not read-only'}")
            if role == "write" and value_word is not None:
                out.writes.append(value_word)
            if role == "exec":
                _runs(out, f"{program} {key if key.startswith('-') else '-' + key}", opt, value_word)
        elif role == "recursive":
            recursive = True
        elif role == "follow":
            recursive = recursive or program in ("grep", "egrep", "fgrep")
            follow = True
        elif role == "check":
            check = True
        elif role == "dir" and value is not None:
            if value == "recurse":
                recursive = True
            elif value not in ("read", "skip"):
                out.refuse(f"`{program}`: -d {value} is not one the checker knows")
        elif role in ("read", "pattern_file") and value_word is not None:
            out.reads.append(Access(value_word))
        elif role == "list" and value_word is not None:
            if value_word.value == "-":
                out.refuse(f"`{program}` reads the names of files to read from standard input")
                out.unknown_reads = True
            else:
                out.reads.append(Access(value_word, list_file=True))
    if follow and program in ("ls", "du", "tree"):
        out.refuse(f"`{program}` follows symbolic links (they may lead out of the workspace)")
    roles = list(spec.operands)
    if pattern_given and roles and roles[0] == "pattern":
        roles = roles[1:] or ["read"]
    if spec.max_operands is not None and len(parsed.operands) > spec.max_operands:
        out.refuse(f"`{program}` takes at most {spec.max_operands} operand(s)")
    operands = parsed.operands
    if program == "sed":
        _sed(out, operands, parsed, pattern_given)
    if program in ("test", "["):
        _test(out, args)
        return out
    if program == "printenv":
        _printenv(out, operands)
    if program == "jq":
        _jq(out, parsed)
    file_operands = 0
    for index, word in enumerate(operands):
        role = roles[min(index, len(roles) - 1)] if roles else "inert"
        if role in ("inert", "pattern"):
            continue
        if role == "write":
            out.refuse(f"`{program}` writes its output operand {word.value}")
            out.writes.append(word)
            continue
        if word.pipe or word.value == "-":
            if check:  # the names of the files to check come from a pipe: they can't be known
                _names_from_input(out, program)
            continue  # a pipe (`<(…)`, whose commands are parts of their own) or standard input
        if not word.static:
            out.refuse(f"`{program}` reads a path computed at run time (`{word.text}`)")
            out.unknown_reads = True
            continue
        if word.value.startswith("@") and program == "strings":
            out.refuse("`strings` reads options from an @file")
            continue
        file_operands += 1
        out.reads.append(Access(word, recursive=recursive, follow=follow, names_only=spec.names_only,
                                list_file=check))
    if check and not operands:
        _names_from_input(out, program)
    if not file_operands and spec.default_operand is not None and (recursive or spec.recursive):
        out.reads.append(Access(Word(spec.default_operand, spec.default_operand), recursive=True, follow=follow,
                                names_only=spec.names_only))
    elif not file_operands and recursive and program in ("grep", "egrep", "fgrep"):
        out.reads.append(Access(Word(".", "."), recursive=True, follow=follow))
    return out


def _names_from_input(out: Effects, program: str) -> None:
    out.refuse(f"`{program} -c` reads the list of files to check from its input (each check tells whether a "
               "guess of a file's content is right, so it is a read of that file)")
    out.unknown_reads = True


def _runs(out: Effects, option: str, opt: Opt, value: Word | None) -> None:
    """What an option that runs a program runs: its value, its fixed programs, or one configuration names."""
    if value is not None:
        out.runs.append(value)
    elif opt.programs:
        out.run_programs.extend(opt.programs)
    else:
        out.runs_configured = out.runs_configured or f"`{option}` runs a program its configuration names"


def _fail_closed_reads(out: Effects, spec: Spec, args: Sequence[Word]) -> None:
    """An option not understood: any word may be a file it reads (for deny rules)."""
    for word in args:
        if not word.static:
            out.unknown_reads = True
        elif not word.value.startswith("-") or word.value == "-":
            out.reads.append(Access(word, recursive=spec.recursive, names_only=spec.names_only))
        elif "=" in word.value:
            value = word.value.split("=", 1)[1]
            if value:
                out.reads.append(Access(Word(value, value)))


def _sed(out: Effects, operands: list[Word], parsed: _Parsed, pattern_given: bool) -> None:
    quiet = any(key in ("n", "--quiet", "--silent") for key, _, _ in parsed.options)
    scripts = [value or "" for key, value, _ in parsed.options if key in ("e", "--expression")]
    if not pattern_given:
        scripts = [operands[0].value] if operands and operands[0].static else ["?"]
    if not quiet or not scripts or not all(re.fullmatch(SED_SCRIPT, s.strip()) for s in scripts):
        out.refuse("`sed` runs only as `sed -n 'N,Mp'` without asking (its scripts can write and run commands)")


def _printenv(out: Effects, operands: list[Word]) -> None:
    """`printenv` prints every variable (API keys, tokens) unless given names; a secret-looking name asks."""
    if not operands:
        out.refuse("`printenv` prints every environment variable (some may hold secrets)")
        out.environment = True
        return
    secret = next((w.value for w in operands if looks_secret(w.value)), None)
    if secret is not None:
        out.refuse(f"`printenv {secret}` prints an environment variable that may hold a secret")
        out.environment = True


_JQ_ENVIRONMENT = re.compile(r"\$ENV\b|(?<![.\w$])env\b|\$__loc__|\binput_filename\b|\bget_search_list\b")


_JQ_MODULES = re.compile(r"\b(import|include|modulemeta)\b")


def _jq(out: Effects, parsed: _Parsed) -> None:
    """jq's `env` and `$ENV` are the environment (API keys, tokens); a program read from a file may use them."""
    if any(key in ("f", "--from-file") for key, _, _ in parsed.options):
        out.refuse("`jq -f` runs a jq program from a file (it may read the environment)")
        return
    filters = [value or "" for key, value, _ in parsed.options if key in ("e", "--regexp")]
    filters += [w.value for w in parsed.operands[:1]]
    if any(_JQ_ENVIRONMENT.search(text) for text in filters):
        out.refuse("`jq` reads the environment (`env`, `$ENV`), which may hold secrets")
        out.environment = True
    elif any(_JQ_MODULES.search(text) for text in filters):
        out.refuse("`jq` loads modules or data files its program names (`import`, `include`)")


def _shell_variables(program: str) -> Callable[[Sequence[Word]], Effects]:
    """`export`, `declare`, `typeset`, `readonly`, `set`, `local`: shell builtins that print variables (the
    environment, secrets included) or change them. Neither is read-only; the reason says which it is."""
    def judge(args: Sequence[Word]) -> Effects:
        out = Effects(program)
        names = [w for w in args if not (w.static and w.value.startswith(("-", "+")))]
        printing = not names or (program in ("declare", "typeset", "readonly", "export") and any(
            w.static and w.value.startswith("-") and "p" in w.value for w in args))
        if printing:
            out.refuse(f"`{program}` prints shell variables, the environment too (some may hold secrets)")
            out.environment = True
        else:
            out.refuse(f"`{program}` changes shell variables or options")
        return out
    return judge


def _test(out: Effects, args: Sequence[Word]) -> None:
    words = list(args)
    if out.program == "[" and (not words or words[-1].value != "]"):
        out.refuse("`[` without its closing `]`")
    for word in words:
        if not word.static:
            out.refuse(f"`{out.program}` tests a value computed at run time")
            return
        if word.value == "-v" or word.value == "-R":
            out.refuse(f"`{out.program} {word.value}` evaluates a variable name")
            return
    for word in words:
        if word.value not in TEST_OPERATORS and word.value:
            out.reads.append(Access(word, names_only=True))


# --- find ---------------------------------------------------------------------------------------------

def _find(args: Sequence[Word]) -> Effects:
    out = Effects("find")
    i = 0
    follow = False
    deletes = False
    while i < len(args) and args[i].static and (args[i].value in ("-H", "-L", "-P")
                                                 or args[i].value.startswith(("-D", "-O"))):
        if args[i].value == "-L":
            follow = True
        i += 2 if args[i].value == "-D" else 1
    starts: list[Word] = []
    while i < len(args) and not (args[i].static and args[i].value.startswith(("-", "(", "!", ")", ","))):
        starts.append(args[i])
        i += 1
    while i < len(args):
        word = args[i]
        if not word.static:
            out.refuse(f"`find`: `{word.text}` is computed at run time")
            out.unknown_reads = True
            i += 1
            continue
        value = word.value
        if value in FIND_ACTIONS:
            out.refuse(f"`find {value}` {FIND_ACTIONS[value]}")
            deletes = deletes or value == "-delete"
            if (value.startswith("-fprint") or value == "-fls") and i + 1 < len(args):
                out.writes.append(args[i + 1])
            i += 1
            if value.startswith(("-exec", "-ok")):
                while i < len(args) and args[i].value not in (";", "+"):
                    i += 1
            elif value in ("-fprint", "-fprint0", "-fls"):
                i += 1
            elif value == "-fprintf":
                i += 2
            i += 1
            continue
        if value in ("-follow",):
            follow = True
        elif value == "-files0-from":
            if i + 1 < len(args) and args[i + 1].static and args[i + 1].value != "-":
                out.reads.append(Access(args[i + 1], list_file=True, names_only=True))
            else:
                out.refuse("`find -files0-from` reads its starting points from standard input")
                out.unknown_reads = True
            i += 2
            continue
        elif value in FIND_READ_VALUE or (value.startswith("-newer") and len(value) == 8):
            if i + 1 < len(args):
                out.reads.append(Access(args[i + 1], names_only=True))
            i += 2
            continue
        elif value in FIND_TESTS_WITH_VALUE:
            if i + 1 >= len(args) or not args[i + 1].static:
                out.refuse(f"`find {value}` has no fixed value")
            i += 2
            continue
        elif value not in FIND_FLAGS:
            out.refuse(f"`find`: {value} is not an option the checker knows")
        i += 1
    if follow:
        out.refuse("`find -L` follows symbolic links (they may lead out of the workspace)")
    if deletes:
        out.write_trees.extend(starts or [Word(".", ".")])
    for word in starts or [Word(".", ".")]:
        if not word.static:
            out.refuse(f"`find` starts from a path computed at run time (`{word.text}`)")
            out.unknown_reads = True
        else:
            out.reads.append(Access(word, recursive=True, follow=follow, names_only=True))
    return out


# --- cd -----------------------------------------------------------------------------------------------


def _cd(args: Sequence[Word]) -> Effects:
    out = Effects("cd")
    operands = [w for w in args if not (w.static and w.value in ("-L", "-P", "-e", "-@", "--"))]
    if len(operands) != 1 or not operands[0].static or operands[0].value == "-":
        out.refuse("`cd` without one fixed target")
        return out
    out.reads.append(Access(operands[0], names_only=True))
    return out


# --- git ----------------------------------------------------------------------------------------------

def _git(args: Sequence[Word]) -> Effects:
    out = Effects("git", git=True)
    i = 0
    while i < len(args):
        word = args[i]
        if not word.static:
            out.refuse(f"`git`: `{word.text}` is computed at run time")
            out.unknown_reads = True
            return out
        value = word.value
        if value == "-C":
            if i + 1 >= len(args) or not args[i + 1].static:
                out.refuse("`git -C` without a fixed directory")
                out.unknown_reads = True
                return out
            out.git_dir = args[i + 1]
            out.reads.append(Access(args[i + 1], names_only=True))
            i += 2
            continue
        if value in GIT_GLOBAL_FLAGS:
            if value == "--bare":
                out.refuse("`git --bare` reads a repository named by its location")
            if value == "--version":
                return out
            i += 1
            continue
        if value.startswith("-"):
            out.refuse(f"`git {value}` changes which repository, configuration or programs git uses")
            out.unknown_reads = True
            return out
        break
    if i >= len(args):
        return out
    sub, rest = args[i].value, list(args[i + 1:])
    known_sub = GIT_SUBCOMMANDS.get(sub)
    if sub in ("branch", "tag") and rest and any(not w.value.startswith("-") for w in rest if w.static):
        known_sub = None  # `git branch NAME` creates a branch
    elif sub == "branch":
        known_sub = (GIT_BRANCH_LIST, False)
    elif sub == "tag":
        known_sub = (GIT_TAG_LIST, False)
    elif sub == "config":
        known_sub = (GIT_CONFIG_READ, False) if any(w.value in ("--get", "--get-all", "--get-regexp", "--list",
                                                                  "-l") for w in rest) else None
    elif sub in ("stash", "worktree", "remote", "reflog"):
        first = rest[0].value if rest else ""
        reads = {"stash": {"list": False, "show": True}, "worktree": {"list": False},
                 "remote": {"": False, "-v": False, "--verbose": False, "get-url": False},
                 "reflog": {"": False, "show": False}}[sub]
        if first in reads and (sub != "remote" or len(rest) <= 2):
            known_sub = (GIT_LOG if sub in ("stash", "reflog") else git_table("v verbose push all porcelain z"),
                         reads[first])
            rest = rest[1:] if first and not first.startswith("-") else rest
        else:
            known_sub = None
    if known_sub is None:
        out.refuse(f"`git {sub}` is not a read-only git command")
        return out
    table, content = known_sub
    spec = Spec(table, operands=("inert",), numeric=sub in ("log", "grep", "show", "whatchanged", "rev-list"))
    try:
        parsed = _walk(spec, rest, None)
    except _Unknown as exc:
        out.refuse(f"`git {sub}`: {exc}")
        out.unknown_reads = True
        return out
    for key, _value, value_word in parsed.options:
        opt = table.get(key, Opt())
        if opt.role in ("write", "exec", "forbid"):
            out.refuse(f"`git {sub} {key if key.startswith('-') else '-' + key}` {opt.why or 'is not read-only'}")
            if opt.role == "write" and value_word is not None:
                out.writes.append(value_word)
            if opt.role == "exec":
                _runs(out, f"git {sub} {key if key.startswith('-') else '-' + key}", opt, value_word)
        elif opt.role in ("read", "pattern_file") and value_word is not None:
            out.reads.append(Access(value_word))
    _git_operands(out, sub, rest, parsed, content)
    return out


def _git_operands(out: Effects, sub: str, rest: list[Word], parsed: _Parsed, content: bool) -> None:
    """Revisions, `REV:path` blobs and pathspecs. A content command with no pathspec reads the repository."""
    pathspecs: list[Word] = []
    operands = list(zip(parsed.operands, parsed.after_dashdash, strict=True))
    if sub == "grep" and not any(k in ("e", "f") for k, _, _ in parsed.options) and operands:
        operands = operands[1:]  # the pattern
    for word, after in operands:
        if ":" in word.value and not after and not word.value.startswith(":("):
            _rev, _, path = word.value.partition(":")
            if path.startswith("/"):  # `:/message` searches commits, `REV:/x` is odd: read the repository
                out.reads.append(Access(Word(".", "."), recursive=True, repo=True))
            elif path:
                out.reads.append(Access(Word(path, path), repo_path=not path.startswith(("./", "../"))))
            continue
        if after or sub in ("ls-files", "blame", "annotate"):
            pathspecs.append(word)
        elif content:
            # a revision or a path (git decides by what exists): read it as a path too, recursively
            out.reads.append(Access(word, recursive=True))
    for spec in pathspecs:
        if spec.value.startswith(":"):
            out.reads.append(Access(Word(".", "."), recursive=content, repo=True, names_only=not content))
        else:
            out.reads.append(Access(spec, recursive=content, names_only=not content))
    if content and not pathspecs and sub != "cat-file":
        out.reads.append(Access(Word(".", "."), recursive=True, repo=True))
    if sub == "cat-file" and not any(":" in w.value for w, _ in operands):
        mode = {k for k, _, _ in parsed.options}
        if not mode & {"t", "s", "e"}:
            out.unknown_reads = True  # an object by hash: any file's content, whatever its path


def _env(args: Sequence[Word]) -> Effects:
    """`env` with no command to run (the runner peels `env … CMD`): it prints the environment."""
    out = Effects("env", environment=True)
    out.refuse("`env` prints every environment variable (some may hold secrets)")
    return out


_SPECIAL: dict[str, Callable[[Sequence[Word]], Effects]] = {
    "find": _find, "git": _git, "cd": _cd, "env": _env,
    **{name: _shell_variables(name) for name in ("export", "declare", "typeset", "readonly", "set", "local")},
}
