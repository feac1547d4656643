"""The option walk shared by every command in the tables (command_tables.py): each word of `program args…` given
a role by its spec, flag by flag — short, bundled, long, `--opt=value`, and long-option abbreviations resolved as
getopt resolves them against the table (which lists the dangerous options too, so `--outp` is `--output`) —
then what the roles mean: paths read, outputs written, programs run, and why the command is not read-only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bridge.permissions.command_effects import Access, Effects
from bridge.permissions.command_tables import SED_SCRIPT, TEST_OPERATORS, Opt, Spec
from bridge.permissions.shell_syntax import Word
from bridge.secrets import looks_secret


class UnknownOption(Exception):
    pass


def _resolve_long(table: dict[str, Opt], name: str) -> str:
    """`--outp` is `--output` when it is the only long option that starts so (getopt's rule)."""
    if name in table:
        return name
    found = [key for key in table if key.startswith("--") and key.startswith(name)]
    if len(found) == 1:
        return found[0]
    if found:
        raise UnknownOption(f"the option {name} is ambiguous")
    raise UnknownOption(f"the option {name} is not one the checker knows")


@dataclass
class Parsed:
    options: list[tuple[str, str | None, Word | None]] = field(default_factory=list)  # (key, value, value word)
    operands: list[Word] = field(default_factory=list)
    after_dashdash: list[bool] = field(default_factory=list)  # per operand: it came after `--`

    def add(self, word: Word, after: bool) -> None:
        self.operands.append(word)
        self.after_dashdash.append(after)


def walk(spec: Spec, args: Sequence[Word], first_dynamic: int | None) -> Parsed:
    parsed = Parsed()
    table = spec.options
    i = 0
    only_operands = dashdash = False
    while i < len(args):
        word = args[i]
        text = word.value
        dynamic_here = (first_dynamic is not None and i >= first_dynamic) or word.pipe
        if not word.static and not dynamic_here:
            raise UnknownOption(f"`{word.text}` is computed at run time")
        if (
            word.pattern is not None
            and text.startswith("-")
            and not only_operands
            and not spec.no_options
            and (not text.startswith("--") or "=" not in text or _has_glob_chars(word.pattern.split("=", 1)[0]))
        ):
            raise UnknownOption(f"the option word `{word.text}` is a glob")  # only a `--opt=*.txt` value may be one
        if spec.no_options or only_operands or not word.static or not text.startswith("-") or text == "-":
            roles = spec.operands
            if word.pattern is not None and len(set(roles)) > 1 and len(parsed.operands) < len(roles) - 1:
                # `uniq *.txt` is `uniq a.txt b.txt`: the second name is its output; `jq *`: a name is the program
                raise UnknownOption(f"`{word.text}` is a glob where each name's place gives it its meaning")
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
            key = (
                name
                if spec.single_dash_long and name in table
                else (_resolve_long(table, name) if text.startswith("--") else "")
            )
            if not key:
                raise UnknownOption(f"the option {name} is not one the checker knows")
            opt = table[key]
            if opt.role == "two_values":
                raise UnknownOption(f"the option {key} takes two values")
            if eq:
                if opt.value == "none":
                    raise UnknownOption(f"the option {key} takes no value")
                glob = word.pattern.split("=", 1)[1] if word.pattern is not None else None
                parsed.options.append((key, value, Word(value, value, pattern=glob)))
            elif opt.value == "required":
                i += 1
                parsed.options.append((key, *_value_at(args, i, key)))
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
                raise UnknownOption(f"the option -{letter} is not one the checker knows")
            if opt_or_none.value == "none":
                parsed.options.append((letter, None, None))
                j += 1
                continue
            rest = text[j + 1 :]
            if rest:
                parsed.options.append((letter, rest, Word(rest, rest)))
            elif opt_or_none.value == "optional":
                parsed.options.append((letter, None, None))
            else:
                i += 1
                parsed.options.append((letter, *_value_at(args, i, f"-{letter}")))
            break
        i += 1
    return parsed


def _has_glob_chars(text: str) -> bool:
    return any(c in text for c in "*?[")


def generic(program: str, spec: Spec, args: Sequence[Word]) -> Effects:
    out = Effects(program)
    first_dynamic = spec.dynamic_ok
    try:
        parsed = walk(spec, args, first_dynamic)
    except UnknownOption as exc:
        out.refuse(f"`{program}`: {exc}")
        _fail_closed_reads(out, spec, args)
        return out
    recursive = spec.recursive
    follow = False
    check = False
    pattern_given = False
    dereferencing = spec.dereferences and all(key != "--no-dereference" for key, _, _ in parsed.options)
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
                runs(out, f"{program} {key if key.startswith('-') else '-' + key}", opt, value_word)
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
        elif role == "read" and value_word is not None and spec.dereferences:
            # `diff --from-file=DIR b`: a directory there is compared as the operands are (links followed)
            out.reads.append(Access(value_word, recursive=True, follow=dereferencing))
        elif role in ("read", "pattern_file") and value_word is not None:
            out.reads.append(Access(value_word))
        elif role == "list" and value_word is not None:
            if value_word.value == "-":
                out.refuse(f"`{program}` reads the names of files to read from standard input")
                out.unknown_reads = True
            else:
                out.reads.append(Access(value_word, list_file=True))
    if spec.dereferences:
        recursive = True  # (one level without -r: the whole tree is looked at, which asks no less)
        follow = dereferencing
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
        out.reads.append(Access(word, recursive=recursive, follow=follow, names_only=spec.names_only, list_file=check))
    if check and not operands:
        _names_from_input(out, program)
    if not file_operands and spec.default_operand is not None and (recursive or spec.recursive):
        out.reads.append(
            Access(
                Word(spec.default_operand, spec.default_operand),
                recursive=True,
                follow=follow,
                names_only=spec.names_only,
            )
        )
    elif not file_operands and recursive and program in ("grep", "egrep", "fgrep"):
        out.reads.append(Access(Word(".", "."), recursive=True, follow=follow))
    return out


def _names_from_input(out: Effects, program: str) -> None:
    out.refuse(
        f"`{program} -c` reads the list of files to check from its input (each check tells whether a "
        "guess of a file's content is right, so it is a read of that file)"
    )
    out.unknown_reads = True


def runs(out: Effects, option: str, opt: Opt, value: Word | None) -> None:
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


def _sed(out: Effects, operands: list[Word], parsed: Parsed, pattern_given: bool) -> None:
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


# `$ ENV` is `$ENV` to jq (`'$' IDENT` is its grammar: blanks and comments may sit between them)
_JQ_ENVIRONMENT = re.compile(
    r"\$(\s|#[^\n]*\n)*(ENV|__loc__)\b|(?<![.\w$])env\b|\binput_filename\b|\bget_search_list\b"
)


_JQ_MODULES = re.compile(r"\b(import|include|modulemeta)\b")


def _jq(out: Effects, parsed: Parsed) -> None:
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


def _value_at(args: Sequence[Word], i: int, option: str) -> tuple[str, Word]:
    """The word after `option` as its value: there must be one, and it must be known before the command runs."""
    if i >= len(args):
        raise UnknownOption(f"the option {option} needs a value")
    if not args[i].static:
        raise UnknownOption(f"the value of {option} is computed at run time")
    if args[i].pattern is not None:  # `grep -e *`: bash makes it one word per name, and the rest are operands
        raise UnknownOption(f"the value of {option} is a glob (`{args[i].text}`): it may become several words")
    return args[i].value, args[i]
