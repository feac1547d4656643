"""What a command does with its words, as data: the paths it reads (`Access`) and everything else the checker
found (`Effects`: writes, programs it runs, why it is not read-only). commands.py finds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge.permissions.shell_syntax import Word


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
