"""Programs that run code or commands handed to them as text: what finally runs can't be read here.

An interpreter's inline code (`python3 -c`, `perl -e`, `node -e`; its standard input when it is given no
script), awk's `system()` and pipes, sed's `e` command and `s///e` flag, an editor's command options
(`vim -c '!rm x'`; `ex` and `ed` read commands from standard input), make's recipes, a database shell's
dot-commands (`sqlite3 db '.shell rm x'`): the program these end up running can't be determined statically,
so the verdict marks such a part opaque and every Bash deny and ask rule that could apply matches it (issue 9).
The same programs given none of these (`awk '{print $1}' f`, `python3 x.py`, `sed s/a/b/ f`, `vim f`) are
judged by what they are. `runs_code` says which, and why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bridge.permissions.shell_syntax import Word

_INFO = frozenset({"--version", "--help", "-V", "-h"})  # print and exit: no code runs


@dataclass(frozen=True)
class _Interpreter:
    """How an interpreter takes code: short options whose value is code (bundled too: `-Sc`, `-le`), long ones,
    options that take some other value (spaced: `-W ignore`; `attached`: the rest of the word, `-Ilib`)."""

    inline: str
    long_inline: frozenset[str] = frozenset()
    values: str = ""
    long_values: frozenset[str] = frozenset()
    attached: str = ""
    digits: str = ""  # options followed by an optional number (`perl -l0`, `-0777`), then more of the bundle
    info: frozenset[str] = _INFO
    stdin_when_no_script: bool = True  # given no script it reads its code from standard input


_PYTHON = _Interpreter("c", values="WX", attached="", info=_INFO | {"-VV"})
_PERL = _Interpreter("eEMm", attached="IixdDCF", digits="l0", info=_INFO | {"-v"})
_RUBY = _Interpreter("e", values="IrECFKTx", info=frozenset({"--version", "--help", "-h"}))
_NODE = _Interpreter(
    "ep",
    frozenset({"--eval", "--print"}),
    values="rC",
    long_values=frozenset(
        {"--require", "--import", "--loader", "--experimental-loader", "--conditions", "--input-type", "--env-file"}
    ),
    info=_INFO | {"-v"},
)
_INTERPRETERS: dict[str, _Interpreter] = {
    "perl": _PERL,
    "ruby": _RUBY,
    "node": _NODE,
    "nodejs": _NODE,
    "bun": _Interpreter("ep", frozenset({"--eval", "--print"}), info=_INFO | {"-v"}),
    "php": _Interpreter("rRBE", values="cdfzt", info=_INFO | {"-v", "-i", "-m"}),
    "lua": _Interpreter("e", values="l", info=_INFO | {"-v"}),
    "luajit": _Interpreter("e", values="l", info=_INFO | {"-v"}),
    "Rscript": _Interpreter("e", stdin_when_no_script=False),
    "R": _Interpreter("e", values="f", long_inline=frozenset({"--file"})),
    "julia": _Interpreter("eE", frozenset({"--eval", "--print"}), values="JLp", info=_INFO | {"-v"}),
    "osascript": _Interpreter("e", values="l"),
    "expect": _Interpreter("c", values="f"),
    "tclsh": _Interpreter(""),
    "wish": _Interpreter(""),
    "irb": _Interpreter(""),
    "jshell": _Interpreter(""),
}
_PYTHON_NAME = re.compile(r"(python|pypy)[0-9.]*")
# Whatever they are given, they run commands from it (or from standard input): recipes, dot-commands, `!cmd`.
_ALWAYS = {
    **{name: "`{}` runs the recipes of a makefile (shell commands)" for name in ("make", "gmake", "bmake", "remake")},
    "just": "`just` runs the recipes of a justfile (shell commands)",
    "ninja": "`ninja` runs the commands of a build file",
    **{
        name: "`{}` runs editor commands from its standard input (`!cmd` runs a shell command)"
        for name in ("ex", "ed", "red")
    },
    **{
        name: "`{}` runs database commands given as text (`.shell`, `\\!` run shell commands)"
        for name in ("sqlite3", "psql", "mysql", "mariadb")
    },
    "dc": "`dc` runs its script (`!cmd` runs a shell command)",
    "m4": "`m4` runs its macros (`syscmd`, `esyscmd` run shell commands)",
    **{name: "`{}` runs a command string" for name in ("pwsh", "powershell")},
}
_VIM = frozenset({"vi", "vim", "nvim", "gvim", "view", "rvim", "rview", "vimdiff", "evim", "gview", "vimx", "nview"})
_EMACS = frozenset({"emacs", "emacsclient", "xemacs", "emacs-nox"})
_SSH = frozenset({"ssh", "scp", "sftp", "autossh", "slogin"})
_AWK = frozenset({"awk", "gawk", "mawk", "nawk", "original-awk"})
# awk runs a command through system(), `cmd | getline`, `print | cmd`, a coprocess (`|&`), or a loaded extension
_AWK_RUNS = re.compile(r"system\s*\(|\|\s*getline|\|&|\bprintf?\b[^;{}\n]*\||@load|@include")
_AWK_CODE_FILES = frozenset({"-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"})


def runs_code(program: str, args: Sequence[Word]) -> str | None:
    """Why `program args…` runs code or commands the checker can't read; None when it does not."""
    if program in _ALWAYS and not _only_info(args):
        return _ALWAYS[program].format(program)
    interpreter = _INTERPRETERS.get(program) or (_PYTHON if _PYTHON_NAME.fullmatch(program) else None)
    if interpreter is not None:
        return _interpreter_code(program, interpreter, args)
    if program in _VIM and any(not w.static or w.value.startswith(("-", "+")) for w in args):
        return f"`{program}` runs editor commands given as options (`-c '!cmd'` runs a shell command)"
    if program in _EMACS and any(not w.static or w.value.startswith("-") for w in args):
        return f"`{program}` runs Lisp given as options"
    if program in _AWK:
        return _awk_code(program, args)
    if program == "sed":
        return _sed_code(args)
    if program in _SSH and any(w.static and w.value.startswith("-F") for w in args):
        return f"`{program} -F` reads a configuration file whose commands (ProxyCommand, LocalCommand) it runs"
    return None


def _only_info(args: Sequence[Word]) -> bool:
    return bool(args) and all(w.static and w.value in _INFO | {"-version", "-help"} for w in args)


def _interpreter_code(program: str, spec: _Interpreter, args: Sequence[Word]) -> str | None:
    inline = f"`{program}` runs code given as text"
    i = 0
    info = False
    while i < len(args):
        word = args[i]
        if not word.static:
            return f"`{program}` has an option computed at run time (it could be code)"
        text = word.value
        if text == "--":
            return None if i + 1 < len(args) else inline
        if text == "-":
            return inline + " (its standard input)"
        if text in spec.info:
            info = True
            i += 1
            continue
        if text.startswith("--"):
            name = text.split("=", 1)[0]
            if name in spec.long_inline:
                return inline
            i += 2 if name in spec.long_values and "=" not in text else 1
            continue
        if not text.startswith("-") or len(text) == 1:
            return None  # the script: code in a file (like `bash script.sh`, left to the sandbox)
        j = 1
        while j < len(text):
            letter = text[j]
            j += 1
            if letter in spec.digits:
                while j < len(text) and text[j].isdigit():
                    j += 1
                continue
            if letter in spec.inline:
                return inline
            if letter in spec.attached:
                break
            if letter in spec.values:
                i += 1 if j == len(text) else 0
                break
        i += 1
    if info or not spec.stdin_when_no_script:
        return None
    return inline + " (its standard input)"


def _awk_code(program: str, args: Sequence[Word]) -> str | None:
    for word in args:
        if not word.static:
            return f"`{program}` has a word computed at run time (it could be its program)"
        name = word.value.split("=", 1)[0]
        if name in _AWK_CODE_FILES or (word.value[:2] in ("-f", "-E", "-i", "-l") and len(word.value) > 2):
            return f"`{program}` runs a program from a file"
        if _AWK_RUNS.search(word.value):
            return f"`{program}` runs commands from its program (system, pipes)"
    return None


def _sed_code(args: Sequence[Word]) -> str | None:
    scripts: list[str] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if not word.static:
            return "`sed` has a word computed at run time (it could be its script)"
        text = word.value
        i += 1
        if text == "--":
            operands += [w.value for w in args[i:]]
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if "--file".startswith(name) and len(name) > 3:
                return "`sed` runs a script from a file"
            if "--expression".startswith(name) and len(name) > 3:
                if not eq:
                    value, i = (args[i].value if i < len(args) and args[i].static else "e"), i + 1
                scripts.append(value)
            continue
        if not text.startswith("-") or text == "-":
            operands.append(text)
            continue
        for j, letter in enumerate(text[1:], 1):  # a bundle: `-ne SCRIPT`, `-nf FILE`, `-i.bak`
            if letter == "f":
                return "`sed` runs a script from a file"
            if letter in "el":
                rest = text[j + 1 :]
                if not rest:
                    rest, i = (args[i].value if i < len(args) and args[i].static else "e"), i + 1
                if letter == "e":
                    scripts.append(rest)
                break
            if letter == "i":
                break  # `-i[SUFFIX]`
            if letter not in "nrEsuzi":
                return f"`sed -{letter}` is not an option the checker knows (it could take a script)"
    if not scripts and operands:
        scripts.append(operands[0])
    for script in scripts:
        if _sed_runs(script):
            return "`sed` runs a command (its `e` command or the `e` flag of `s`)"
    return None


_SED_SIMPLE = frozenset("=dDgGhHlLnNpPqQxzFZ")  # commands without text arguments (q, l take a number)


def _sed_runs(script: str) -> bool:
    """GNU sed's `e` command or `s///e` flag in `script`, read command by command. What can't be read counts."""
    i, n = 0, len(script)

    def delimited(at: int) -> int:
        """The index after the text that ends with the delimiter `script[at]` (-1: it never ends)."""
        delimiter, j = script[at], at + 1
        while j < n and script[j] != delimiter:
            j += 2 if script[j] == "\\" else 1
        return j + 1 if j < n else -1

    def line_end(at: int) -> int:
        end = script.find("\n", at)
        return n if end < 0 else end

    while i < n:
        char = script[i]
        if char in " \t\n;{}!":
            i += 1
        elif char.isdigit() or char in "$,~+":
            i += 1  # an address: line numbers, ranges, steps
        elif char in "/\\":
            i = delimited(i + 1 if char == "\\" else i)  # a /regex/ or \cregexc address
            if i < 0:
                return True
            while i < n and script[i] in "IM":
                i += 1
        elif char in "sy":
            i = delimited(i + 1)
            i = delimited(i - 1) if i > 0 else -1  # the replacement shares the middle delimiter
            if i < 0:
                return True
            flags_end = i
            while flags_end < n and script[flags_end] not in ";}\n":
                flags_end += 1
            if char == "s" and "e" in script[i:flags_end].split("w", 1)[0]:
                return True
            i = line_end(i) if "w" in script[i:flags_end] else flags_end
        elif char == "e":
            return True
        elif char in "aic#":
            i = line_end(i)  # text or a comment, to the end of the line
        elif char in "btTrRwWv:":  # a label or a file name: read as ending at `;` too (what follows is judged)
            i += 1
            while i < n and script[i] not in ";\n}":
                i += 1
        elif char in _SED_SIMPLE:
            i += 1
        else:
            return True  # not a command this reader knows
    return False
