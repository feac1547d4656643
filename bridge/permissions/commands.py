"""What a known command does with its words: flag-exact tables of the read-only commands.

A command is read-only only when every word is understood: each option is in its table (short, bundled
short, long, `--opt=value`, and long-option abbreviations resolved as getopt resolves them — against the
table, which lists the dangerous options too, so `--outp` is `--output`), and each operand has a role
(input file, output file, pattern, plain data). An option that writes or runs something is listed with
that role and makes the command not read-only; an option not in the table makes it unknown.

`effects(words)` returns what the command reads (paths, recursively or not, file lists), what it writes,
and why it is not read-only (command_effects.py). The tables (command_tables.py) follow GNU coreutils,
findutils, grep, ripgrep and git; command_options.py walks a command's words against its table;
command_programs.py judges the few commands that need code of their own (find, cd, git, env).
"""

from __future__ import annotations

from collections.abc import Sequence

from bridge.permissions.command_effects import Effects
from bridge.permissions.command_options import generic
from bridge.permissions.command_programs import SPECIAL
from bridge.permissions.command_tables import SPECS
from bridge.permissions.shell_syntax import Word


def known(program: str) -> bool:
    return program in SPECS or program in ("find", "git", "cd")


def effects(program: str, args: Sequence[Word]) -> Effects:
    """What `program args…` does, judged flag by flag. Unknown programs are not read-only."""
    special = SPECIAL.get(program)
    if special is not None:
        return special(args)
    spec = SPECS.get(program)
    if spec is None:
        out = Effects(program, False, f"`{program}` is not a known read-only command")
        out.maybe_reads = _maybe_paths(args)
        return out
    return generic(program, spec, args)


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
