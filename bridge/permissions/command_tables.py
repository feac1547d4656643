"""The option tables of the read-only commands (data for `commands.py`): GNU coreutils, findutils, grep,
ripgrep, jq, sed and git, each option with what it does with its value. Dangerous options are listed too
(role write / exec / forbid), so a getopt-style abbreviation of one resolves to it, never to a safe one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal[
    "inert",
    "read",
    "list",
    "write",
    "exec",
    "forbid",
    "pattern",
    "pattern_file",
    "recursive",
    "follow",
    "check",
    "dir",
    "two_values",
]


@dataclass(frozen=True)
class Opt:
    value: Literal["none", "required", "optional"] = "none"
    role: Role = "inert"  # the role of its value, or of the option itself (recursive, follow, forbid…)
    why: str = ""  # for write / exec / forbid: what it does
    programs: tuple[str, ...] = ()  # exec without a value: the programs it runs (none: named by configuration)


def opts(flags: str = "", values: str = "", long: str = "", **roles: Opt) -> dict[str, Opt]:
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


def write_opt(why: str, value: Literal["none", "required", "optional"] = "required") -> Opt:
    return Opt(value, "write", why)


def exec_opt(
    why: str, value: Literal["none", "required", "optional"] = "required", programs: tuple[str, ...] = ()
) -> Opt:
    """An option that runs a program: its value names it (a command line, for some), or `programs` are run;
    with neither, configuration names it (`git log --ext-diff`). Deny and ask rules see what it runs."""
    return Opt(value, "exec", why, programs)


def read_opt(value: Literal["none", "required", "optional"] = "required") -> Opt:
    return Opt(value, "read")


def list_opt() -> Opt:
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
    # reads what a directory operand holds, following its links unless told not to (`diff a b`, GNU diff's default:
    # `--no-dereference` turns it off): its operands are looked at as trees, links followed
    dereferences: bool = False


# Hand-laid tables: one command per line reads better than the formatter's one option per line.
# fmt: off
DECOMPRESSORS = ("gzip", "bzip2", "xz", "lz4", "lzma", "brotli", "zstd", "uncompress")  # what `rg -z` runs
LS = opts("1aAbBcCdDfFgGhHiklLmnNopqQrsStuUvwxXZ", "ITw",
            "all almost-all author escape block-size= ignore-backups color=? directory dired classify=? file-type "
            "format= full-time group-directories-first no-group human-readable si dereference-command-line "
            "dereference-command-line-symlink-to-dir hide= hyperlink=? indicator-style= inode ignore= kibibytes "
            "literal numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse size "
            "sort= time= time-style= tabsize= width= context zero help version",
            R=Opt(role="recursive"), recursive=Opt(role="recursive"), L=Opt(role="follow"),
            dereference=Opt(role="follow"))
GREP = opts("EFGPiywxvcLlqsbHhnTZzUaIrR", "ABCmdD",
              "extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case word-regexp "
              "line-regexp count color=? colour=? files-without-match files-with-matches max-count= only-matching "
              "quiet silent no-messages byte-offset with-filename no-filename label= line-number initial-tab null "
              "null-data after-context= before-context= context= text binary-files= devices= exclude= "
              "exclude-dir= include= line-buffered binary help version invert-match",
              e=Opt("required", "pattern"), regexp=Opt("required", "pattern"), f=Opt("required", "pattern_file"),
              file=Opt("required", "pattern_file"), exclude_from=read_opt(), r=Opt(role="recursive"),
              recursive=Opt(role="recursive"), R=Opt(role="follow"), dereference_recursive=Opt(role="follow"),
              d=Opt("required", "dir"), directories=Opt("required", "dir"))
RG = opts("abcFhHiIlLnNopqsSuUvVwxz0", "ABCEgjmMtTd",
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
            file=Opt("required", "pattern_file"), ignore_file=read_opt(), L=Opt(role="follow"),
            follow=Opt(role="follow"),
            pre=exec_opt("runs a preprocessor program on every file"), pre_glob=Opt("required"),
            z=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
            search_zip=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
            hostname_bin=exec_opt("runs a program to get the host name"), hyperlink_format=Opt("required"),
            r=Opt("required"), generate=Opt("required"))
SORT = opts("bdfgiMhnRrVcCmsuz", "ktS",
              "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
              "month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check=? merge stable "
              "unique zero-terminated key= field-separator= buffer-size= parallel= debug sort= batch-size= help "
              "version",
              o=write_opt("writes its output to a file"), output=write_opt("writes its output to a file"),
              T=write_opt("writes temporary files into a directory"),
              temporary_directory=write_opt("writes temporary files into a directory"),
              compress_program=exec_opt("runs a program to compress temporary files"),
              random_source=read_opt(), files0_from=list_opt())
UNIQ = opts("cdDiuz", "fsw", "count repeated all-repeated=? group=? ignore-case unique zero-terminated "
              "skip-fields= skip-chars= check-chars= help version")
HEAD = opts("qvz", "nc", "lines= bytes= quiet silent verbose zero-terminated help version")
TAIL = opts("qvzfF", "ncs", "lines= bytes= quiet silent verbose zero-terminated follow=? retry pid= "
              "sleep-interval= max-unchanged-stats= help version")
CAT = opts("AbeEnstTuv", "", "show-all number-nonblank show-ends number squeeze-blank show-tabs "
             "show-nonprinting help version")
WC = opts("clmwL", "", "bytes chars lines words max-line-length total= help version", files0_from=list_opt())
SUMS = opts("btzw", "", "binary text tag zero ignore-missing quiet status strict warn help version",
              c=Opt(role="check"), check=Opt(role="check"))
FILE = opts("bcdEhiIkLlnNprsSv0", "eFP",
              "brief checking-printout debug exclude= exclude-quiet= extension dereference no-dereference mime "
              "mime-type mime-encoding keep-going list no-buffer no-pad print0 preserve-date raw special-files "
              "no-sandbox separator= parameter= help version",
              z=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
              Z=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
              uncompress=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
              uncompress_noreport=exec_opt("runs decompression programs", "none", DECOMPRESSORS),
              f=list_opt(), files_from=list_opt(), m=read_opt(), magic_file=read_opt(),
              C=write_opt("compiles a magic file (writes it)", "none"),
              compile=write_opt("compiles a magic file", "none"))
STAT = opts("tL", "c", "format= printf= terse dereference cached= help version", f=Opt(), file_system=Opt())
DU = opts("0abcDhHklmsSxP", "BdtX",
            "null all apparent-size block-size= bytes total dereference-args human-readable inodes max-depth= "
            "si summarize separate-dirs threshold= time=? time-style= one-file-system no-dereference exclude= "
            "count-links help version",
            L=Opt(role="follow"), dereference=Opt(role="follow"), files0_from=list_opt(), exclude_from=read_opt())
DIFF = opts("abBdeEfinNpPqrsstTuwyZ", "CUDFIxSWX",
              "normal brief report-identical-files context=? unified=? ed rcs side-by-side width= left-column "
              "suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab "
              "tabsize= suppress-blank-empty new-file unidirectional-new-file ignore-case ignore-file-name-case "
              "no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change "
              "ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr minimal "
              "speed-large-files horizon-lines= exclude= starting-file= no-dereference color=? palette= "
              "line-format= old-line-format= new-line-format= unchanged-line-format= old-group-format= "
              "new-group-format= unchanged-group-format= changed-group-format= ifdef= help version",
              r=Opt(role="recursive"), recursive=Opt(role="recursive"), exclude_from=read_opt(), from_file=read_opt(),
              to_file=read_opt(), l=exec_opt("runs pr on its output", "none", ("pr",)),
              paginate=exec_opt("runs pr", "none", ("pr",)))
CMP = opts("blsz", "in", "print-bytes verbose quiet silent ignore-initial= bytes= zero help version")
COMM = opts("123z", "", "check-order nocheck-order output-delimiter= total zero-terminated help version")
CUT = opts("nsz", "bcdf", "bytes= characters= delimiter= fields= complement only-delimited "
             "output-delimiter= zero-terminated help version")
NL = opts("p", "bdfhilnsvw", "body-numbering= section-delimiter= footer-numbering= header-numbering= "
            "line-increment= join-blank-lines= number-format= no-renumber number-separator= "
            "starting-line-number= number-width= help version")
TAC = opts("br", "s", "before regex separator= help version")
OD = opts("abcdfilosxv", "AjNStw", "address-radix= endian= skip-bytes= read-bytes= strings=? format= "
            "output-duplicates width=? traditional help version")
HEXDUMP = opts("bcCdoxvL", "enfs", "help version", f=read_opt())
STRINGS = opts("adfwD", "ntesT", "all data print-file-name bytes= radix= encoding= target= "
                 "output-separator= include-all-whitespace unicode= help version")
COLUMN = opts("tnexJLRdTH", "cosNORWlEr", "table separator= output-separator= columns= fillrows "
                "table-columns= table-right= table-truncate= table-noextreme= table-wrap= table-hide= "
                "table-order= table-name= table-noheadings table-header-repeat json keep-empty-lines "
                "tree= tree-id= tree-parent= output-width= use-spaces= help version")
BASE64 = opts("di", "w", "decode ignore-garbage wrap= help version")
PASTE = opts("sz", "d", "delimiters= serial zero-terminated help version")
JOIN = opts("iz", "aevo12jt", "ignore-case check-order nocheck-order header zero-terminated help version")
FOLD = opts("bs", "w", "bytes spaces width= help version")
EXPAND = opts("ia", "t", "initial tabs= all first-only help version")
REV = opts("0", "", "zero help version")
REALPATH = opts("emLPqsz", "", "canonicalize-existing canonicalize-missing logical physical quiet strip "
                  "no-symlinks zero relative-to= relative-base= help version")
READLINK = opts("femnqsvz", "", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet "
                  "silent verbose zero help version")
XXD = {"-" + n: Opt() for n in ("a", "b", "C", "E", "e", "i", "p", "ps", "plain", "postscript", "u", "autoskip",
                                   "bits", "capitalize", "EBCDIC", "include", "uppercase", "h", "help", "v",
                                   "version")}
XXD.update({"-" + n: Opt("required") for n in ("c", "cols", "g", "groupsize", "l", "len", "o", "offset", "s",
                                                  "seek", "n", "name", "R")})
XXD.update({"-r": write_opt("converts a dump back to binary", "none"),
             "-revert": write_opt("converts a dump back to binary", "none")})
DATE = opts("uRI", "d", "date= debug iso-8601=? resolution rfc-email rfc-3339= utc universal help version",
              f=read_opt(), file=read_opt(), r=read_opt(), reference=read_opt(),
              s=write_opt("sets the system clock"), set=write_opt("sets the system clock"))
JQ = opts("nRsrjacCSeM0", "", "null-input raw-input slurp raw-output join-output raw-output0 ascii-output "
            "compact-output color-output monochrome-output sort-keys exit-status tab indent= stream "
            "stream-errors seq unbuffered jsonargs args help version",
            f=Opt("required", "pattern_file"), from_file=Opt("required", "pattern_file"),
            rawfile=Opt("required", "two_values"), slurpfile=Opt("required", "two_values"),
            arg=Opt("required", "two_values"), argjson=Opt("required", "two_values"),
            L=Opt("required", "forbid", "loads jq modules"))
SED = opts("nEsuzr", "", "quiet silent regexp-extended separate unbuffered null-data posix debug sandbox "
             "help version", e=Opt("required", "pattern"), expression=Opt("required", "pattern"),
             i=write_opt("edits files in place", "optional"), in_place=write_opt("edits files in place", "optional"),
             f=Opt("required", "forbid", "reads a sed script from a file"),
             file=Opt("required", "forbid", "reads a sed script from a file"))
TREE = opts("adfilsxhpugDFqNQrtvUcACnSJX", "LPI",
              "noreport dirsfirst filesfirst gitignore matchdirs ignore-case prune du si charset= filelimit= "
              "timefmt= sort= inodes device help version", l=Opt(role="follow"), o=write_opt("writes to a file"),
              R=write_opt("writes 00Tree.html files", "none"), fromfile=list_opt(), H=Opt("required"),
              T=Opt("required"))
NO_OPTS: dict[str, Opt] = {"--help": Opt(), "--version": Opt()}

SPECS: dict[str, Spec] = {
    "ls": Spec(LS, names_only=True),
    "dir": Spec(LS, names_only=True),
    "vdir": Spec(LS, names_only=True),
    "cat": Spec(CAT),
    "tac": Spec(TAC),
    "nl": Spec(NL),
    "head": Spec(HEAD, numeric=True),
    "tail": Spec(TAIL, numeric=True),
    "wc": Spec(WC),
    "md5sum": Spec(SUMS), "sha1sum": Spec(SUMS), "sha224sum": Spec(SUMS), "sha256sum": Spec(SUMS),
    "sha384sum": Spec(SUMS), "sha512sum": Spec(SUMS), "b2sum": Spec(SUMS), "cksum": Spec(SUMS),
    "file": Spec(FILE),
    "stat": Spec(STAT, names_only=True),
    "du": Spec(DU, names_only=True, recursive=True, default_operand="."),
    "diff": Spec(DIFF, dereferences=True),
    "cmp": Spec(CMP),
    "comm": Spec(COMM, max_operands=2),
    "cut": Spec(CUT),
    "sort": Spec(SORT),
    "uniq": Spec(UNIQ, operands=("read", "write"), max_operands=2),
    "od": Spec(OD),
    "hexdump": Spec(HEXDUMP),
    "strings": Spec(STRINGS),
    "xxd": Spec(XXD, operands=("read", "write"), max_operands=2, single_dash_long=True, permute=False),
    "column": Spec(COLUMN),
    "base64": Spec(BASE64, max_operands=1),
    "paste": Spec(PASTE),
    "join": Spec(JOIN, max_operands=2),
    "fold": Spec(FOLD),
    "expand": Spec(EXPAND), "unexpand": Spec(EXPAND),
    "rev": Spec(REV),
    "realpath": Spec(REALPATH, names_only=True),
    "readlink": Spec(READLINK, names_only=True),
    "grep": Spec(GREP, operands=("pattern", "read"), numeric=True, pattern_option=frozenset({"e", "--regexp", "f",
                                                                                            "--file"})),
    "egrep": Spec(GREP, operands=("pattern", "read"), numeric=True,
                  pattern_option=frozenset({"e", "--regexp", "f", "--file"})),
    "fgrep": Spec(GREP, operands=("pattern", "read"), numeric=True,
                  pattern_option=frozenset({"e", "--regexp", "f", "--file"})),
    "rg": Spec(RG, operands=("pattern", "read"), recursive=True, default_operand=".",
               pattern_option=frozenset({"e", "--regexp", "f", "--file", "--files", "--type-list"})),
    "jq": Spec(JQ, operands=("pattern", "read"), pattern_option=frozenset({"f", "--from-file"})),
    "tree": Spec(TREE, names_only=True, recursive=True, default_operand="."),
    "date": Spec(DATE, operands=("inert",), max_operands=1),
    "sed": Spec(SED, operands=("pattern", "read"), pattern_option=frozenset({"e", "--expression"})),
    "echo": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "printf": Spec({"--help": Opt(), "--version": Opt(), "v": Opt("required", "forbid", "assigns a variable")},
                   operands=("inert",), dynamic_ok=1, permute=False),
    "true": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "false": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    ":": Spec({}, operands=("inert",), dynamic_ok=0, no_options=True),
    "sleep": Spec(NO_OPTS, operands=("inert",)),
    "pwd": Spec(opts("LP"), operands=("inert",), max_operands=0),
    "whoami": Spec(NO_OPTS, operands=("inert",), max_operands=0),
    "id": Spec(opts("agGnruzZ", "", "group groups name real user zero context help version"), operands=("inert",)),
    "uname": Spec(opts("asnrvmpio", "", "all kernel-name nodename kernel-release kernel-version machine "
                        "processor hardware-platform operating-system help version"), operands=("inert",),
                  max_operands=0),
    "nproc": Spec(opts("", "", "all ignore= help version"), operands=("inert",), max_operands=0),
    "printenv": Spec(opts("0", "", "null help version"), operands=("inert",)),
    "which": Spec(opts("as"), operands=("inert",)),
    "type": Spec(opts("afpPt"), operands=("inert",), permute=False),
    "basename": Spec(opts("az", "s", "multiple suffix= zero help version"), operands=("inert",)),
    "dirname": Spec(opts("z", "", "zero help version"), operands=("inert",)),
    "seq": Spec(opts("w", "fs", "format= separator= equal-width help version"), operands=("inert",)),
    "tr": Spec(opts("cCdst", "", "complement delete squeeze-repeats truncate-set1 help version"),
               operands=("inert",)),
    "test": Spec({}, operands=("read",), no_options=True),
    "[": Spec({}, operands=("read",), no_options=True),
}

TEST_OPERATORS = frozenset({
    "!", "(", ")", "-a", "-o", "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot",
    "-ef", "-b", "-c", "-d", "-e", "-f", "-g", "-G", "-h", "-k", "-L", "-N", "-O", "-p", "-r", "-s", "-S", "-t",
    "-u", "-w", "-x", "-z", "-n", "]",
})
SED_SCRIPT = r"(?:[0-9]+|\$)(?:,(?:[0-9]+|\$))?p"


FIND_TESTS_WITH_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-regextype", "-type",
    "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-used", "-perm", "-user", "-group",
    "-uid", "-gid", "-links", "-inum", "-lname", "-ilname", "-maxdepth", "-mindepth", "-fstype", "-printf",
    "-context",
})
FIND_READ_VALUE = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})
FIND_FLAGS = frozenset({
    "-empty", "-nouser", "-nogroup", "-readable", "-writable", "-executable", "-depth", "-d", "-mount", "-xdev",
    "-noleaf", "-ignore_readdir_race", "-noignore_readdir_race", "-daystart", "-true", "-false", "-prune", "-quit",
    "-print", "-print0", "-ls", "-o", "-or", "-a", "-and", "-not", "!", "(", ")", ",", "-warn", "-nowarn", "-help",
    "--help", "-version", "--version",
})
FIND_ACTIONS = {
    "-exec": "runs a command on each file", "-execdir": "runs a command on each file",
    "-ok": "runs a command on each file", "-okdir": "runs a command on each file",
    "-delete": "deletes files", "-fprint": "writes a file", "-fprint0": "writes a file", "-fprintf": "writes a file",
    "-fls": "writes a file",
}


GIT_DIFF_OPTS = (
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
GIT_LOG_OPTS = (
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
# fmt: on
def git_table(long: str, **roles: Opt) -> dict[str, Opt]:
    table = opts("", "", long, **roles)
    for key, opt in list(table.items()):
        name = key[2:]
        if len(name) == 1:
            table[name] = opt
            del table[key]
    return table


# fmt: off
GIT_LOG = git_table(GIT_DIFF_OPTS + " " + GIT_LOG_OPTS, output=write_opt("writes its output to a file"),
                      ext_diff=exec_opt("runs an external diff program", "none"), O=Opt("required", "read"),
                      no_index=Opt(role="forbid", why="compares files outside git"))
GIT_STATUS = git_table("s short b branch show-stash porcelain=? long v verbose u= untracked-files=? "
                         "ignore-submodules=? ignored=? z column=? no-column ahead-behind no-ahead-behind "
                         "renames no-renames find-renames=? null")
GIT_GREP = git_table("cached untracked no-exclude-standard exclude-standard recurse-submodules a text "
                       "textconv no-textconv i ignore-case I max-depth= r recursive no-recursive w word-regexp "
                       "v invert-match h H full-name E extended-regexp G basic-regexp P perl-regexp F "
                       "fixed-strings n line-number column l files-with-matches name-only L files-without-match "
                       "z null o only-matching c count color=? no-color break heading p show-function "
                       "A= after-context= B= before-context= C= context= W function-context m= max-count= "
                       "threads= and or not all-match q quiet e=",
                       f=Opt("required", "pattern_file"), O=exec_opt("opens the files in a pager program", "optional"),
                       open_files_in_pager=exec_opt("opens the files in a pager program", "optional"),
                       no_index=Opt(role="forbid", why="searches files outside git"))
GIT_LS_FILES = git_table("c cached d deleted m modified o others i ignored s stage u unmerged k killed "
                           "z t v f full-name recurse-submodules abbrev=? debug eol deduplicate directory "
                           "no-empty-directory error-unmatch exclude= x= exclude-standard sparse format=",
                           X=read_opt(), exclude_from=read_opt(), exclude_per_directory=Opt("required"),
                           with_tree=Opt("required"))
GIT_REV_PARSE = git_table("abbrev-ref=? short=? verify q quiet sq not symbolic symbolic-full-name "
                            "show-toplevel show-prefix show-cdup git-dir git-common-dir absolute-git-dir "
                            "is-inside-git-dir is-inside-work-tree is-bare-repository is-shallow-repository "
                            "show-superproject-working-tree shared-index-path all branches=? tags=? remotes=? "
                            "glob= exclude= default= prefix= local-env-vars since= after= until= before= "
                            "flags no-flags revs-only no-revs disambiguate= path-format= "
                            "show-object-format=? show-ref-format", resolve_git_dir=read_opt())
GIT_BLAME = git_table("b root show-stats s show-name n show-number e show-email l t c p porcelain "
                        "line-porcelain incremental w M=? C=? f score-debug L= date= abbrev=? reverse= "
                        "first-parent progress no-progress color-lines color-by-age ignore-rev= since= "
                        "encoding=", S=read_opt(), contents=read_opt(), ignore_revs_file=read_opt())
GIT_BRANCH_LIST = git_table("a all r remotes v vv verbose l list show-current no-color color=? column=? "
                              "no-column contains=? no-contains=? merged=? no-merged=? points-at= sort= format= "
                              "abbrev=? no-abbrev i ignore-case omit-empty")
GIT_TAG_LIST = git_table("l list n= contains=? no-contains=? merged=? no-merged=? points-at= sort= format= "
                           "column=? no-column i ignore-case color=? omit-empty")
GIT_DESCRIBE = git_table("all tags contains abbrev= candidates= exact-match debug long match= exclude= "
                           "always first-parent dirty=? broken=?")
GIT_SHORTLOG = git_table("n numbered s summary e email c committer group= format=? w=? all since= until= "
                           "no-merges merges")
GIT_CAT_FILE = git_table("t s e p textconv filters path= allow-unknown-type mailmap no-mailmap use-mailmap")
GIT_LS_TREE = git_table("d r t l long z name-only name-status object-only full-name full-tree abbrev=? "
                          "format=")
GIT_REV_LIST = git_table(GIT_LOG_OPTS + " objects objects-edge count quiet disk-usage=?")
GIT_CONFIG_READ = git_table("get get-all get-regexp list l show-origin show-scope name-only null z type= "
                              "bool int bool-or-int path expiry-date default= local global system worktree "
                              "includes no-includes")

GIT_SUBCOMMANDS: dict[str, tuple[dict[str, Opt], bool]] = {  # table, shows file content
    "status": (GIT_STATUS, False),
    "diff": (GIT_LOG, True),
    "log": (GIT_LOG, True),
    "show": (GIT_LOG, True),
    "whatchanged": (GIT_LOG, True),
    "grep": (GIT_GREP, True),
    "blame": (GIT_BLAME, True),
    "annotate": (GIT_BLAME, True),
    "ls-files": (GIT_LS_FILES, False),
    "rev-parse": (GIT_REV_PARSE, False),
    "describe": (GIT_DESCRIBE, False),
    "shortlog": (GIT_SHORTLOG, False),
    "ls-tree": (GIT_LS_TREE, False),
    "rev-list": (GIT_REV_LIST, False),
    "merge-base": (git_table("a all octopus independent is-ancestor fork-point"), False),
    "name-rev": (git_table("tags refs= exclude= all annotate-stdin name-only no-undefined always"), False),
    "show-ref": (git_table("head heads tags branches d dereference s hash=? abbrev=? q quiet verify exists "
                            "exclude-existing=?"), False),
    "count-objects": (git_table("v verbose H human-readable"), False),
    "cat-file": (GIT_CAT_FILE, True),
    "version": (git_table("build-options"), False),
}
GIT_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
                               "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects", "--version",
                               "--no-advice", "--bare"})
