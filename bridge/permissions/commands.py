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
from typing import Literal

from bridge.permissions.shellparse import Word

Role = Literal["inert", "read", "list", "write", "exec", "forbid", "pattern", "pattern_file", "recursive",
               "follow", "check", "dir", "two_values"]


@dataclass(frozen=True)
class Opt:
    value: Literal["none", "required", "optional"] = "none"
    role: Role = "inert"  # the role of its value, or of the option itself (recursive, follow, forbid…)
    why: str = ""  # for write / exec / forbid: what it does


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

    def refuse(self, why: str) -> None:
        if self.read_only:
            self.read_only, self.why = False, why


def _opts(flags: str = "", values: str = "", long: str = "", **roles: Opt) -> dict[str, Opt]:
    """`flags`: short options without a value; `values`: short options taking one; `long`: names, `name=`
    takes a value, `name=?` an optional one. `roles` override by name (`o=Opt(...)`, `output=Opt(...)`)."""
    table: dict[str, Opt] = {c: Opt() for c in flags}
    table.update({c: Opt("required") for c in values})
    for name in long.split():
        if name.endswith("=?"):
            table["--" + name[:-2]] = Opt("optional")
        elif name.endswith("="):
            table["--" + name[:-1]] = Opt("required")
        else:
            table["--" + name] = Opt()
    for name, opt in roles.items():
        key = name.replace("_", "-")
        table[key if len(key) == 1 else "--" + key] = opt
    return table


def _write(why: str, value: Literal["none", "required", "optional"] = "required") -> Opt:
    return Opt(value, "write", why)


def _exec(why: str, value: Literal["none", "required", "optional"] = "required") -> Opt:
    return Opt(value, "exec", why)


def _read(value: Literal["none", "required", "optional"] = "required") -> Opt:
    return Opt(value, "read")


def _list() -> Opt:
    return Opt("required", "list")


@dataclass(frozen=True)
class Spec:
    options: dict[str, Opt]
    operands: tuple[Role, ...] = ("read",)  # roles by position; the last repeats
    max_operands: int | None = None
    numeric: bool = False  # `-5` (head, tail, grep context) is an option
    names_only: bool = False
    recursive: bool = False  # reads its operands recursively by default (rg)
    default_operand: str | None = None  # what it reads when given no operand (rg: `.`); None: stdin
    dynamic_ok: int | None = None  # operands from this index on may be computed at run time (echo: 0)
    permute: bool = True  # options may follow operands (GNU)
    single_dash_long: bool = False  # xxd: `-ps`, `-cols` are whole options
    pattern_option: frozenset[str] = frozenset()  # options that give the pattern (then no operand is one)
    no_options: bool = False  # every word is an operand (echo, true)


_LS = _opts("1aAbBcCdDfFgGhHiklLmnNopqQrsStuUvwxXZ", "ITw",
            "all almost-all author escape block-size= ignore-backups color=? directory dired classify=? file-type "
            "format= full-time group-directories-first no-group human-readable si dereference-command-line "
            "dereference-command-line-symlink-to-dir hide= hyperlink=? indicator-style= inode ignore= kibibytes "
            "literal numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse size "
            "sort= time= time-style= tabsize= width= context zero help version",
            R=Opt(role="recursive"), recursive=Opt(role="recursive"), L=Opt(role="follow"),
            dereference=Opt(role="follow"))
_GREP = _opts("EFGPiywxvcLlqsbHhnTZzUaIrR", "ABCmdD",
              "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case word-regexp "
              "line-regexp count color=? colour=? files-without-match files-with-matches max-count= only-matching "
              "quiet silent no-messages byte-offset with-filename no-filename label= line-number initial-tab null "
              "null-data after-context= before-context= context= text binary-files= devices= exclude= "
              "exclude-dir= include= line-buffered binary help version invert-match",
              e=Opt("required", "pattern"), regexp=Opt("required", "pattern"), f=Opt("required", "pattern_file"),
              file=Opt("required", "pattern_file"), exclude_from=_read(), r=Opt(role="recursive"),
              recursive=Opt(role="recursive"), R=Opt(role="follow"), dereference_recursive=Opt(role="follow"),
              d=Opt("required", "dir"), directories=Opt("required", "dir"))
_RG = _opts("abcFhHiIlLnNopqsSuUvVwxz0", "ABCEgjmMtTd",
            "after-context= before-context= context= binary block-buffered byte-offset case-sensitive color= "
            "colors= column context-separator= count count-matches crlf debug dfa-size-limit= encoding= engine= "
            "field-context-separator= field-match-separator= files files-with-matches files-without-match "
            "fixed-strings glob= glob-case-insensitive heading no-heading hidden iglob= ignore-case ignore-file-"
            "case-insensitive include-zero invert-match json line-buffered line-number no-line-number line-regexp "
            "max-columns= max-columns-preview max-count= max-depth= maxdepth= max-filesize= mmap multiline "
            "multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude no-ignore-files no-ignore-global "
            "no-ignore-messages no-ignore-parent no-ignore-vcs no-messages no-mmap no-pcre2-unicode no-require-git "
            "no-unicode null null-data one-file-system only-matching passthru path-separator= pcre2 "
            "pcre2-version quiet regex-size-limit= replace= smart-case sort= sortr= stats text threads= trace "
            "trim type= type-add= type-clear= type-list type-not= unrestricted vimgrep with-filename "
            "no-filename word-regexp auto-hybrid-regex no-auto-hybrid-regex no-binary no-block-buffered "
            "no-byte-offset no-column no-context-separator no-crlf no-encoding no-fixed-strings no-follow "
            "no-glob-case-insensitive no-hidden no-ignore-file-case-insensitive no-include-zero no-invert-match "
            "no-json no-line-buffered no-max-columns-preview no-multiline no-multiline-dotall no-one-file-system "
            "no-pcre2 no-search-zip no-sort-files no-stats no-text no-trim sort-files help version",
            e=Opt("required", "pattern"), regexp=Opt("required", "pattern"), f=Opt("required", "pattern_file"),
            file=Opt("required", "pattern_file"), ignore_file=_read(), L=Opt(role="follow"), follow=Opt(role="follow"),
            pre=_exec("runs a preprocessor program on every file"), pre_glob=Opt("required"),
            z=_exec("runs decompression programs", "none"), search_zip=_exec("runs decompression programs", "none"),
            hostname_bin=_exec("runs a program to get the host name"), hyperlink_format=Opt("required"),
            r=Opt("required"), generate=Opt("required"))
_SORT = _opts("bdfgiMhnRrVcCmsuz", "ktS",
              "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
              "month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check=? merge stable "
              "unique zero-terminated key= field-separator= buffer-size= parallel= debug sort= batch-size= help "
              "version",
              o=_write("writes its output to a file"), output=_write("writes its output to a file"),
              T=_write("writes temporary files into a directory"),
              temporary_directory=_write("writes temporary files into a directory"),
              compress_program=_exec("runs a program to compress temporary files"),
              random_source=_read(), files0_from=_list())
_UNIQ = _opts("cdDiuz", "fsw", "count repeated all-repeated=? group=? ignore-case unique zero-terminated "
              "skip-fields= skip-chars= check-chars= help version")
_HEAD = _opts("qvz", "nc", "lines= bytes= quiet silent verbose zero-terminated help version")
_TAIL = _opts("qvzfF", "ncs", "lines= bytes= quiet silent verbose zero-terminated follow=? retry pid= "
              "sleep-interval= max-unchanged-stats= help version")
_CAT = _opts("AbeEnstTuv", "", "show-all number-nonblank show-ends number squeeze-blank show-tabs "
             "show-nonprinting help version")
_WC = _opts("clmwL", "", "bytes chars lines words max-line-length total= help version", files0_from=_list())
_SUMS = _opts("btzw", "", "binary text tag zero ignore-missing quiet status strict warn help version",
              c=Opt(role="check"), check=Opt(role="check"))
_FILE = _opts("bcdEhiIkLlnNprsSvzZ0", "eFP",
              "brief checking-printout debug exclude= exclude-quiet= extension dereference no-dereference mime "
              "mime-type mime-encoding keep-going list no-buffer no-pad print0 preserve-date raw special-files "
              "no-sandbox uncompress uncompress-noreport separator= parameter= help version",
              f=_list(), files_from=_list(), m=_read(), magic_file=_read(),
              C=_write("compiles a magic file (writes it)", "none"), compile=_write("compiles a magic file", "none"))
_STAT = _opts("tL", "c", "format= printf= terse dereference cached= help version", f=Opt(), file_system=Opt())
_DU = _opts("0abcDhHklmsSxP", "BdtX",
            "null all apparent-size block-size= bytes total dereference-args human-readable inodes max-depth= "
            "si summarize separate-dirs threshold= time=? time-style= one-file-system no-dereference exclude= "
            "count-links help version",
            L=Opt(role="follow"), dereference=Opt(role="follow"), files0_from=_list(), exclude_from=_read())
_DIFF = _opts("abBdeEfinNpPqrsstTuwyZ", "CUDFIxSWX",
              "normal brief report-identical-files context=? unified=? ed rcs side-by-side width= left-column "
              "suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab "
              "tabsize= suppress-blank-empty new-file unidirectional-new-file ignore-case ignore-file-name-case "
              "no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change "
              "ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr minimal "
              "speed-large-files horizon-lines= exclude= starting-file= no-dereference color=? palette= "
              "line-format= old-line-format= new-line-format= unchanged-line-format= old-group-format= "
              "new-group-format= unchanged-group-format= changed-group-format= ifdef= help version",
              r=Opt(role="recursive"), recursive=Opt(role="recursive"), exclude_from=_read(), from_file=_read(),
              to_file=_read(), l=_exec("runs pr on its output", "none"), paginate=_exec("runs pr", "none"))
_CMP = _opts("blsz", "in", "print-bytes verbose quiet silent ignore-initial= bytes= zero help version")
_COMM = _opts("123z", "", "check-order nocheck-order output-delimiter= total zero-terminated help version")
_CUT = _opts("nsz", "bcdf", "bytes= characters= delimiter= fields= complement only-delimited "
             "output-delimiter= zero-terminated help version")
_NL = _opts("p", "bdfhilnsvw", "body-numbering= section-delimiter= footer-numbering= header-numbering= "
            "line-increment= join-blank-lines= number-format= no-renumber number-separator= "
            "starting-line-number= number-width= help version")
_TAC = _opts("br", "s", "before regex separator= help version")
_OD = _opts("abcdfilosxv", "AjNStw", "address-radix= endian= skip-bytes= read-bytes= strings=? format= "
            "output-duplicates width=? traditional help version")
_HEXDUMP = _opts("bcCdoxvL", "enfs", "help version", f=_read())
_STRINGS = _opts("adfwD", "ntesT", "all data print-file-name bytes= radix= encoding= target= "
                 "output-separator= include-all-whitespace unicode= help version")
_COLUMN = _opts("tnexJLRdTH", "cosNORWlEr", "table separator= output-separator= columns= fillrows "
                "table-columns= table-right= table-truncate= table-noextreme= table-wrap= table-hide= "
                "table-order= table-name= table-noheadings table-header-repeat json keep-empty-lines "
                "tree= tree-id= tree-parent= output-width= use-spaces= help version")
_BASE64 = _opts("di", "w", "decode ignore-garbage wrap= help version")
_PASTE = _opts("sz", "d", "delimiters= serial zero-terminated help version")
_JOIN = _opts("iz", "aevo12jt", "ignore-case check-order nocheck-order header zero-terminated help version")
_FOLD = _opts("bs", "w", "bytes spaces width= help version")
_EXPAND = _opts("ia", "t", "initial tabs= all first-only help version")
_REV = _opts("0", "", "zero help version")
_REALPATH = _opts("emLPqsz", "", "canonicalize-existing canonicalize-missing logical physical quiet strip "
                  "no-symlinks zero relative-to= relative-base= help version")
_READLINK = _opts("femnqsvz", "", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet "
                  "silent verbose zero help version")
_XXD = {"-" + n: Opt() for n in ("a", "b", "C", "E", "e", "i", "p", "ps", "plain", "postscript", "u", "autoskip",
                                   "bits", "capitalize", "EBCDIC", "include", "uppercase", "h", "help", "v",
                                   "version")}
_XXD.update({"-" + n: Opt("required") for n in ("c", "cols", "g", "groupsize", "l", "len", "o", "offset", "s",
                                                  "seek", "n", "name", "R")})
_XXD.update({"-r": _write("converts a dump back to binary", "none"),
             "-revert": _write("converts a dump back to binary", "none")})
_DATE = _opts("uRI", "d", "date= debug iso-8601=? resolution rfc-email rfc-3339= utc universal help version",
              f=_read(), file=_read(), r=_read(), reference=_read(),
              s=_write("sets the system clock"), set=_write("sets the system clock"))
_JQ = _opts("nRsrjacCSeM0", "", "null-input raw-input slurp raw-output join-output raw-output0 ascii-output "
            "compact-output color-output monochrome-output sort-keys exit-status tab indent= stream "
            "stream-errors seq unbuffered jsonargs args help version",
            f=Opt("required", "pattern_file"), from_file=Opt("required", "pattern_file"),
            rawfile=Opt("required", "two_values"), slurpfile=Opt("required", "two_values"),
            arg=Opt("required", "two_values"), argjson=Opt("required", "two_values"),
            L=Opt("required", "forbid", "loads jq modules"))
_SED = _opts("nEsuzr", "", "quiet silent regexp-extended separate unbuffered null-data posix debug sandbox "
             "help version", e=Opt("required", "pattern"), expression=Opt("required", "pattern"),
             i=_write("edits files in place", "optional"), in_place=_write("edits files in place", "optional"),
             f=Opt("required", "forbid", "reads a sed script from a file"),
             file=Opt("required", "forbid", "reads a sed script from a file"))
_TREE = _opts("adfilsxhpugDFqNQrtvUcACnSJX", "LPI",
              "noreport dirsfirst filesfirst gitignore matchdirs ignore-case prune du si charset= filelimit= "
              "timefmt= sort= inodes device help version", l=Opt(role="follow"), o=_write("writes to a file"),
              R=_write("writes 00Tree.html files", "none"), fromfile=_list(), H=Opt("required"), T=Opt("required"))
_NO_OPTS: dict[str, Opt] = {"--help": Opt(), "--version": Opt()}

_SPECS: dict[str, Spec] = {
    "ls": Spec(_LS, names_only=True),
    "dir": Spec(_LS, names_only=True),
    "vdir": Spec(_LS, names_only=True),
    "cat": Spec(_CAT),
    "tac": Spec(_TAC),
    "nl": Spec(_NL),
    "head": Spec(_HEAD, numeric=True),
    "tail": Spec(_TAIL, numeric=True),
    "wc": Spec(_WC),
    "md5sum": Spec(_SUMS), "sha1sum": Spec(_SUMS), "sha224sum": Spec(_SUMS), "sha256sum": Spec(_SUMS),
    "sha384sum": Spec(_SUMS), "sha512sum": Spec(_SUMS), "b2sum": Spec(_SUMS), "cksum": Spec(_SUMS),
    "file": Spec(_FILE),
    "stat": Spec(_STAT, names_only=True),
    "du": Spec(_DU, names_only=True, recursive=True, default_operand="."),
    "diff": Spec(_DIFF),
    "cmp": Spec(_CMP),
    "comm": Spec(_COMM, max_operands=2),
    "cut": Spec(_CUT),
    "sort": Spec(_SORT),
    "uniq": Spec(_UNIQ, operands=("read", "write"), max_operands=2),
    "od": Spec(_OD),
    "hexdump": Spec(_HEXDUMP),
    "strings": Spec(_STRINGS),
    "xxd": Spec(_XXD, operands=("read", "write"), max_operands=2, single_dash_long=True, permute=False),
    "column": Spec(_COLUMN),
    "base64": Spec(_BASE64, max_operands=1),
    "paste": Spec(_PASTE),
    "join": Spec(_JOIN, max_operands=2),
    "fold": Spec(_FOLD),
    "expand": Spec(_EXPAND), "unexpand": Spec(_EXPAND),
    "rev": Spec(_REV),
    "realpath": Spec(_REALPATH, names_only=True),
    "readlink": Spec(_READLINK, names_only=True),
    "grep": Spec(_GREP, operands=("pattern", "read"), numeric=True, pattern_option=frozenset({"e", "--regexp", "f",
                                                                                            "--file"})),
    "egrep": Spec(_GREP, operands=("pattern", "read"), numeric=True,
                  pattern_option=frozenset({"e", "--regexp", "f", "--file"})),
    "fgrep": Spec(_GREP, operands=("pattern", "read"), numeric=True,
                  pattern_option=frozenset({"e", "--regexp", "f", "--file"})),
    "rg": Spec(_RG, operands=("pattern", "read"), recursive=True, default_operand=".",
               pattern_option=frozenset({"e", "--regexp", "f", "--file", "--files", "--type-list"})),
    "jq": Spec(_JQ, operands=("pattern", "read"), pattern_option=frozenset({"f", "--from-file"})),
    "tree": Spec(_TREE, names_only=True, recursive=True, default_operand="."),
    "date": Spec(_DATE, operands=("inert",), max_operands=1),
    "sed": Spec(_SED, operands=("pattern", "read"), pattern_option=frozenset({"e", "--expression"})),
    "echo": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "printf": Spec({"--help": Opt(), "--version": Opt(), "v": Opt("required", "forbid", "assigns a variable")},
                   operands=("inert",), dynamic_ok=1, permute=False),
    "true": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "false": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    ":": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "sleep": Spec(_NO_OPTS, operands=("inert",)),
    "pwd": Spec(_opts("LP"), operands=("inert",), max_operands=0),
    "whoami": Spec(_NO_OPTS, operands=("inert",), max_operands=0),
    "id": Spec(_opts("agGnruzZ", "", "group groups name real user zero context help version"), operands=("inert",)),
    "uname": Spec(_opts("asnrvmpio", "", "all kernel-name nodename kernel-release kernel-version machine "
                        "processor hardware-platform operating-system help version"), operands=("inert",),
                  max_operands=0),
    "nproc": Spec(_opts("", "", "all ignore= help version"), operands=("inert",), max_operands=0),
    "printenv": Spec(_opts("0", "", "null help version"), operands=("inert",)),
    "which": Spec(_opts("as"), operands=("inert",)),
    "type": Spec(_opts("afpPt"), operands=("inert",), permute=False),
    "basename": Spec(_opts("az", "s", "multiple suffix= zero help version"), operands=("inert",)),
    "dirname": Spec(_opts("z", "", "zero help version"), operands=("inert",)),
    "seq": Spec(_opts("w", "fs", "format= separator= equal-width help version"), operands=("inert",)),
    "tr": Spec(_opts("cCdst", "", "complement delete squeeze-repeats truncate-set1 help version"),
               operands=("inert",)),
    "test": Spec({}, operands=("read",), no_options=True),
    "[": Spec({}, operands=("read",), no_options=True),
}

_TEST_OPERATORS = frozenset({
    "!", "(", ")", "-a", "-o", "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot",
    "-ef", "-b", "-c", "-d", "-e", "-f", "-g", "-G", "-h", "-k", "-L", "-N", "-O", "-p", "-r", "-s", "-S", "-t",
    "-u", "-w", "-x", "-z", "-n", "]",
})
_SED_SCRIPT = r"(?:[0-9]+|\$)(?:,(?:[0-9]+|\$))?p"


def known(program: str) -> bool:
    return program in _SPECS or program in ("find", "git", "cd")


def effects(program: str, args: Sequence[Word]) -> Effects:
    """What `program args…` does, judged flag by flag. Unknown programs are not read-only."""
    special = _SPECIAL.get(program)
    if special is not None:
        return special(args)
    spec = _SPECS.get(program)
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
    if not file_operands and spec.default_operand is not None and (recursive or spec.recursive):
        out.reads.append(Access(Word(spec.default_operand, spec.default_operand), recursive=True, follow=follow,
                                names_only=spec.names_only))
    elif not file_operands and recursive and program in ("grep", "egrep", "fgrep"):
        out.reads.append(Access(Word(".", "."), recursive=True, follow=follow))
    return out


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
    if not quiet or not scripts or not all(re.fullmatch(_SED_SCRIPT, s.strip()) for s in scripts):
        out.refuse("`sed` runs only as `sed -n 'N,Mp'` without asking (its scripts can write and run commands)")


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
        if word.value not in _TEST_OPERATORS and word.value:
            out.reads.append(Access(word, names_only=True))


# --- find ---------------------------------------------------------------------------------------------

_FIND_TESTS_WITH_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-regextype", "-type",
    "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used", "-perm", "-user", "-group",
    "-uid", "-gid", "-links", "-inum", "-lname", "-ilname", "-maxdepth", "-mindepth", "-fstype", "-printf",
    "-context",
})
_FIND_READ_VALUE = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
_FIND_FLAGS = frozenset({
    "-empty", "-nouser", "-nogroup", "-readable", "-writable", "-executable", "-depth", "-d", "-mount", "-xdev",
    "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-true", "-false", "-prune", "-quit",
    "-print", "-print0", "-ls", "-o", "-or", "-a", "-and", "-not", "!", "(", ")", ",", "-warn", "-nowarn", "-help",
    "--help", "-version", "--version",
})
_FIND_ACTIONS = {
    "-exec": "runs a command on each file", "-execdir": "runs a command on each file",
    "-ok": "runs a command on each file", "-okdir": "runs a command on each file",
    "-delete": "deletes files", "-fprint": "writes a file", "-fprint0": "writes a file", "-fprintf": "writes a file",
    "-fls": "writes a file",
}


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
        if value in _FIND_ACTIONS:
            out.refuse(f"`find {value}` {_FIND_ACTIONS[value]}")
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
        elif value in _FIND_READ_VALUE or (value.startswith("-newer") and len(value) == 8):
            if i + 1 < len(args):
                out.reads.append(Access(args[i + 1], names_only=True))
            i += 2
            continue
        elif value in _FIND_TESTS_WITH_VALUE:
            if i + 1 >= len(args) or not args[i + 1].static:
                out.refuse(f"`find {value}` has no fixed value")
            i += 2
            continue
        elif value not in _FIND_FLAGS:
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

_GIT_DIFF_OPTS = (
    "p u patch no-patch s raw patch-with-raw stat=? numstat shortstat dirstat=? cumulative summary "
    "patch-with-stat name-only name-status submodule=? color=? no-color color-moved=? no-color-moved "
    "color-moved-ws= word-diff=? word-diff-regex= color-words=? no-renames rename-empty no-rename-empty check "
    "ws-error-highlight= full-index binary abbrev=? B break-rewrites=? M find-renames=? C find-copies=? "
    "find-copies-harder D irreversible-delete l= diff-filter= S= G= find-object= pickaxe-all pickaxe-regex "
    "R a text ignore-cr-at-eol ignore-space-at-eol b ignore-space-change w ignore-all-space ignore-blank-lines "
    "I= ignore-matching-lines= inter-hunk-context= W function-context exit-code quiet no-ext-diff textconv "
    "no-textconv ignore-submodules=? src-prefix= dst-prefix= no-prefix default-prefix line-prefix= "
    "ita-invisible-in-index ita-visible-in-index U= unified= minimal patience histogram anchored= "
    "diff-algorithm= indent-heuristic no-indent-heuristic relative=? z compact-summary stat-width= "
    "stat-name-width= stat-count= stat-graph-width= cached staged merge-base no-relative 1 2 3 0 base ours "
    "theirs output-indicator-new= output-indicator-old= output-indicator-context= no-stat follow"
)
_GIT_LOG_OPTS = (
    "oneline pretty=? format= abbrev-commit no-abbrev-commit encoding= expand-tabs=? no-expand-tabs notes=? "
    "no-notes show-notes=? standard-notes no-standard-notes show-signature relative-date date= parents children "
    "left-right graph show-linear-break=? n= max-count= skip= since= after= until= before= author= committer= "
    "grep-reflog= grep= all-match invert-grep i regexp-ignore-case basic-regexp E extended-regexp F "
    "fixed-strings P perl-regexp remove-empty merges no-merges min-parents= max-parents= no-min-parents "
    "no-max-parents first-parent exclude-first-parent-only not all branches=? tags=? remotes=? glob= exclude= "
    "reflog alternate-refs single-worktree ignore-missing bisect stdin cherry-mark cherry-pick left-only "
    "right-only cherry walk-reflogs g merge boundary simplify-by-decoration full-history dense sparse "
    "simplify-merges ancestry-path=? date-order author-date-order topo-order reverse no-walk=? do-walk "
    "decorate=? no-decorate decorate-refs= decorate-refs-exclude= source mailmap no-mailmap use-mailmap "
    "log-size L= c cc dd m diff-merges= no-diff-merges combined-all-paths t since-as-filter= clear-decorations "
    "count"
)
def _git_table(long: str, **roles: Opt) -> dict[str, Opt]:
    table = _opts("", "", long, **roles)
    for key, opt in list(table.items()):
        name = key[2:]
        if len(name) == 1:
            table[name] = opt
            del table[key]
    return table


_GIT_LOG = _git_table(_GIT_DIFF_OPTS + " " + _GIT_LOG_OPTS, output=_write("writes its output to a file"),
                      ext_diff=_exec("runs an external diff program", "none"), O=Opt("required", "read"),
                      no_index=Opt(role="forbid", why="compares files outside git"))
_GIT_STATUS = _git_table("s short b branch show-stash porcelain=? long v verbose u= untracked-files=? "
                         "ignore-submodules=? ignored=? z column=? no-column ahead-behind no-ahead-behind "
                         "renames no-renames find-renames=? null")
_GIT_GREP = _git_table("cached untracked no-exclude-standard exclude-standard recurse-submodules a text "
                       "textconv no-textconv i ignore-case I max-depth= r recursive no-recursive w word-regexp "
                       "v invert-match h H full-name E extended-regexp G basic-regexp P perl-regexp F "
                       "fixed-strings n line-number column l files-with-matches name-only L files-without-match "
                       "z null o only-matching c count color=? no-color break heading p show-function "
                       "A= after-context= B= before-context= C= context= W function-context m= max-count= "
                       "threads= and or not all-match q quiet e=",
                       f=Opt("required", "pattern_file"), O=_exec("opens the files in a pager program", "optional"),
                       open_files_in_pager=_exec("opens the files in a pager program", "optional"),
                       no_index=Opt(role="forbid", why="searches files outside git"))
_GIT_LS_FILES = _git_table("c cached d deleted m modified o others i ignored s stage u unmerged k killed "
                           "z t v f full-name recurse-submodules abbrev=? debug eol deduplicate directory "
                           "no-empty-directory error-unmatch exclude= x= exclude-standard sparse format=",
                           X=_read(), exclude_from=_read(), exclude_per_directory=Opt("required"),
                           with_tree=Opt("required"))
_GIT_REV_PARSE = _git_table("abbrev-ref=? short=? verify q quiet sq not symbolic symbolic-full-name "
                            "show-toplevel show-prefix show-cdup git-dir git-common-dir absolute-git-dir "
                            "is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository "
                            "show-superproject-working-tree shared-index-path all branches=? tags=? remotes=? "
                            "glob= exclude= default= prefix= local-env-vars since= after= until= before= "
                            "flags no-flags revs-only no-revs disambiguate= path-format= resolve-git-dir= "
                            "show-object-format=? show-ref-format")
_GIT_BLAME = _git_table("b root show-stats s show-name n show-number e show-email l t c p porcelain "
                        "line-porcelain incremental w M=? C=? f score-debug L= date= abbrev=? reverse= "
                        "first-parent progress no-progress color-lines color-by-age ignore-rev= since= "
                        "encoding=", S=_read(), contents=_read(), ignore_revs_file=_read())
_GIT_BRANCH_LIST = _git_table("a all r remotes v vv verbose l list show-current no-color color=? column=? "
                              "no-column contains=? no-contains=? merged=? no-merged=? points-at= sort= format= "
                              "abbrev=? no-abbrev i ignore-case omit-empty")
_GIT_TAG_LIST = _git_table("l list n= contains=? no-contains=? merged=? no-merged=? points-at= sort= format= "
                           "column=? no-column i ignore-case color=? omit-empty")
_GIT_DESCRIBE = _git_table("all tags contains abbrev= candidates= exact-match debug long match= exclude= "
                           "always first-parent dirty=? broken=?")
_GIT_SHORTLOG = _git_table("n numbered s summary e email c committer group= format=? w=? all since= until= "
                           "no-merges merges")
_GIT_SIMPLE = _git_table("")
_GIT_CAT_FILE = _git_table("t s e p textconv filters path= allow-unknown-type mailmap no-mailmap use-mailmap")
_GIT_LS_TREE = _git_table("d r t l long z name-only name-status object-only full-name full-tree abbrev=? "
                          "format=")
_GIT_REV_LIST = _git_table(_GIT_LOG_OPTS + " objects objects-edge count quiet disk-usage=?")
_GIT_CONFIG_READ = _git_table("get get-all get-regexp list l show-origin show-scope name-only null z type= "
                              "bool int bool-or-int path expiry-date default= local global system worktree "
                              "includes no-includes")

_GIT_SUBCOMMANDS: dict[str, tuple[dict[str, Opt], bool]] = {  # table, shows file content
    "status": (_GIT_STATUS, False),
    "diff": (_GIT_LOG, True),
    "log": (_GIT_LOG, True),
    "show": (_GIT_LOG, True),
    "whatchanged": (_GIT_LOG, True),
    "grep": (_GIT_GREP, True),
    "blame": (_GIT_BLAME, True),
    "annotate": (_GIT_BLAME, True),
    "ls-files": (_GIT_LS_FILES, False),
    "rev-parse": (_GIT_REV_PARSE, False),
    "describe": (_GIT_DESCRIBE, False),
    "shortlog": (_GIT_SHORTLOG, False),
    "ls-tree": (_GIT_LS_TREE, False),
    "rev-list": (_GIT_REV_LIST, False),
    "merge-base": (_git_table("a all octopus independent is-ancestor fork-point"), False),
    "name-rev": (_git_table("tags refs= exclude= all annotate-stdin name-only no-undefined always"), False),
    "show-ref": (_git_table("head heads tags branches d dereference s hash=? abbrev=? q quiet verify exists "
                            "exclude-existing=?"), False),
    "count-objects": (_git_table("v verbose H human-readable"), False),
    "cat-file": (_GIT_CAT_FILE, True),
    "version": (_git_table("build-options"), False),
}
_GIT_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
                               "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version",
                               "--no-advice", "--bare"})


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
        if value in _GIT_GLOBAL_FLAGS:
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
    known_sub = _GIT_SUBCOMMANDS.get(sub)
    if sub in ("branch", "tag") and rest and any(not w.value.startswith("-") for w in rest if w.static):
        known_sub = None  # `git branch NAME` creates a branch
    elif sub == "branch":
        known_sub = (_GIT_BRANCH_LIST, False)
    elif sub == "tag":
        known_sub = (_GIT_TAG_LIST, False)
    elif sub == "config":
        known_sub = (_GIT_CONFIG_READ, False) if any(w.value in ("--get", "--get-all", "--get-regexp", "--list",
                                                                  "-l") for w in rest) else None
    elif sub in ("stash", "worktree", "remote", "reflog"):
        first = rest[0].value if rest else ""
        reads = {"stash": {"list": False, "show": True}, "worktree": {"list": False},
                 "remote": {"": False, "-v": False, "--verbose": False, "get-url": False},
                 "reflog": {"": False, "show": False}}[sub]
        if first in reads and (sub != "remote" or len(rest) <= 2):
            known_sub = (_GIT_LOG if sub in ("stash", "reflog") else _git_table("v verbose push all porcelain z"),
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


_SPECIAL: dict[str, Callable[[Sequence[Word]], Effects]] = {"find": _find, "git": _git, "cd": _cd}
