"""The commands judged by code of their own rather than by a table: `find` (its expression), `cd`, `git` (its
subcommands, revisions and pathspecs), `env` alone, and the builtins that print or set shell variables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from bridge.permissions.command_effects import Access, Effects
from bridge.permissions.command_options import Parsed, UnknownOption, runs, walk
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
    Opt,
    Spec,
    git_table,
)
from bridge.permissions.shell_syntax import Word


def _shell_variables(program: str) -> Callable[[Sequence[Word]], Effects]:
    """`export`, `declare`, `typeset`, `readonly`, `set`, `local`: shell builtins that print variables (the
    environment, secrets included) or change them. Neither is read-only; the reason says which it is."""

    def judge(args: Sequence[Word]) -> Effects:
        out = Effects(program)
        names = [w for w in args if not (w.static and w.value.startswith(("-", "+")))]
        printing = not names or (
            program in ("declare", "typeset", "readonly", "export")
            and any(w.static and w.value.startswith("-") and "p" in w.value for w in args)
        )
        if printing:
            out.refuse(f"`{program}` prints shell variables, the environment too (some may hold secrets)")
            out.environment = True
        else:
            out.refuse(f"`{program}` changes shell variables or options")
        return out

    return judge


# --- find ---------------------------------------------------------------------------------------------


def _find(args: Sequence[Word]) -> Effects:
    out = Effects("find")
    i = 0
    follow = False
    deletes = False
    while (
        i < len(args)
        and args[i].static
        and (args[i].value in ("-H", "-L", "-P") or args[i].value.startswith(("-D", "-O")))
    ):
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
            where = args[i + 1]
            if where.pattern is not None:
                out.refuse("`git -C` with a glob: which directory it names is not known before it runs")
                out.unknown_reads = True
                return out
            previous = out.git_dir
            if previous is not None and not where.tilde and not os.path.isabs(where.value):
                # each -C is taken from the one before it (`-C a -C b` is a/b): the repository is looked for there
                joined = os.path.join(previous.value, where.value)
                where = Word(joined, joined, tilde=previous.tilde)
            out.git_dir = where
            out.reads.append(Access(where, names_only=True))
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
    sub, rest = args[i].value, list(args[i + 1 :])
    known_sub = GIT_SUBCOMMANDS.get(sub)
    if sub in ("branch", "tag") and rest and any(not w.value.startswith("-") for w in rest if w.static):
        known_sub = None  # `git branch NAME` creates a branch
    elif sub == "branch":
        known_sub = (GIT_BRANCH_LIST, False)
    elif sub == "tag":
        known_sub = (GIT_TAG_LIST, False)
    elif sub == "config":
        known_sub = (
            (GIT_CONFIG_READ, False)
            if any(w.value in ("--get", "--get-all", "--get-regexp", "--list", "-l") for w in rest)
            else None
        )
    elif sub in ("stash", "worktree", "remote", "reflog"):
        first = rest[0].value if rest else ""
        reads = {
            "stash": {"list": False, "show": True},
            "worktree": {"list": False},
            "remote": {"": False, "-v": False, "--verbose": False, "get-url": False},
            "reflog": {"": False, "show": False},
        }[sub]
        if first in reads and (sub != "remote" or len(rest) <= 2):
            known_sub = (
                GIT_LOG if sub in ("stash", "reflog") else git_table("v verbose push all porcelain z"),
                reads[first],
            )
            rest = rest[1:] if first and not first.startswith("-") else rest
        else:
            known_sub = None
    if known_sub is None:
        out.refuse(f"`git {sub}` is not a read-only git command")
        return out
    table, content = known_sub
    spec = Spec(table, operands=("inert",), numeric=sub in ("log", "grep", "show", "whatchanged", "rev-list"))
    try:
        parsed = walk(spec, rest, None)
    except UnknownOption as exc:
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
                runs(out, f"git {sub} {key if key.startswith('-') else '-' + key}", opt, value_word)
        elif opt.role in ("read", "pattern_file") and value_word is not None:
            out.reads.append(Access(value_word))
    if sub == "config":
        _git_config_reads(out, parsed)
    else:
        _git_operands(out, sub, rest, parsed, content)
    return out


# `git config --get KEY` of these sections shows nothing secret; every other key, and a listing, may show a token the
# user keeps in their global configuration (`http.<url>.extraHeader`, `url.<token>@….insteadOf`, `credential.*`,
# `sendemail.smtpPass`).
_PLAIN_CONFIG_SECTIONS = frozenset(
    {"user", "core", "init", "color", "diff", "merge", "pull", "push", "branch", "status", "log", "format", "commit"}
    | {"tag", "rebase", "advice", "help", "alias", "gc", "fetch", "submodule", "safe", "remote"}
)


def _git_config_reads(out: Effects, parsed: Parsed) -> None:
    """What `git config`'s read shows beyond the repository's own file: the user's global configuration
    (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`) and the system's, outside the workspace (attack round 24:
    `git config --global --list` ran unasked and showed the model a token kept in `~/.gitconfig`)."""
    keys = {key.lstrip("-") for key, _, _ in parsed.options}
    if keys & {"local", "worktree"} and "includes" not in keys:  # (a file's `include.path` may lead anywhere)
        return
    listing = bool(keys & {"list", "l", "get-regexp"})
    names = [w.value for w in parsed.operands]
    if not listing and names and names[0].split(".", 1)[0].lower() in _PLAIN_CONFIG_SECTIONS:
        return
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [] if "system" in keys else [home / ".gitconfig", xdg / "git" / "config"]
    files += [Path("/etc/gitconfig")] if "global" not in keys else []
    for path in files:
        out.reads.append(Access(Word(str(path), str(path))))


def _git_operands(out: Effects, sub: str, rest: list[Word], parsed: Parsed, content: bool) -> None:
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


SPECIAL: dict[str, Callable[[Sequence[Word]], Effects]] = {
    "find": _find,
    "git": _git,
    "cd": _cd,
    "env": _env,
    **{name: _shell_variables(name) for name in ("export", "declare", "typeset", "readonly", "set", "local")},
}
