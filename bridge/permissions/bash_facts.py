"""What a shell command touches, set against the file system: the facts the engine judges a command by.

`BashFacts.of` resolves what each part of the command's verdict (`shell.py`) reads and writes: globs expanded as
bash would (bounded), `~` and `..` folded, symlinks resolved, the git repository a git command reads located,
the files a file list names read. Rules match fail-closed: a part whose program or paths can't be known matches
every deny and ask rule that could apply; a recursive read (`grep -r`, `rg`, `git diff`) matches a path rule
about reads when any file below it does (the tree is walked, bounded; past the bound it matches).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from pathlib import Path

from bridge import safefs
from bridge.permissions.command_effects import Access
from bridge.permissions.command_parts import Part, safe_device
from bridge.permissions.containment import InvalidPath, Workspace, resolve
from bridge.permissions.git_reading import reading_risks
from bridge.permissions.linked_paths import any_linked, file_key, linked_name
from bridge.permissions.path_access import PathAccess, may_hold, path_hit
from bridge.permissions.rules import CompiledRule, Setting
from bridge.permissions.shell import ShellVerdict
from bridge.permissions.shell_paths import Budget, checksum_names, expand_glob
from bridge.permissions.shell_syntax import Word
from bridge.permissions.types import NamedPath

MAX_LIST_BYTES = 1_000_000


@dataclass
class Tree:
    """A directory whose files are all read (grep -r, rg, git diff)."""

    root: PathAccess
    follow: bool
    entries: list[PathAccess] | None = None  # walked on demand
    too_many: bool = False
    escapes: list[Path] = field(default_factory=list)  # symlinks followed out of the workspace


@dataclass
class PartFacts:
    part: Part
    reads: list[PathAccess] = field(default_factory=list)
    trees: list[Tree] = field(default_factory=list)
    writes: list[PathAccess] = field(default_factory=list)
    write_trees: list[PathAccess] = field(default_factory=list)  # rm -r, mv: everything below is written
    redirected: list[PathAccess] = field(default_factory=list)  # those of `writes` its output redirections write
    maybe_reads: list[PathAccess] = field(default_factory=list)  # an unknown program's words, for Read deny
    unknown_reads: str | None = None
    unknown_writes: str | None = None
    problems: list[str] = field(default_factory=list)  # why it could not be checked: it asks
    lists: list[PathAccess] = field(default_factory=list)  # files naming files it reads (`md5sum -c L`)


@dataclass
class BashFacts:
    verdict: ShellVerdict
    bases: list[Path]  # the cwd, then every directory a `cd` moves into
    parts: list[PartFacts]
    workspace: Workspace
    budget: Budget = field(default_factory=Budget)
    forms: tuple[dict[str, list[_Form]], list[_Form]] | None = None  # see `_forms`

    @classmethod
    def of(cls, verdict: ShellVerdict, cwd: Path, workspace: Workspace) -> BashFacts:
        facts = cls(verdict, [cwd], [], workspace)
        for part in verdict.parts:
            if part.cd is not None and not part.nested:
                for base in list(facts.bases):
                    for target in facts._expand(part.cd, base) or []:
                        resolved = resolve(target, base)
                        if resolved not in facts.bases:
                            facts.bases.append(resolved)
        for part in verdict.parts:
            facts.parts.append(facts._part(part))
        facts._lists_written()
        facts._globs_after_writes()
        return facts

    def _globs_after_writes(self) -> None:
        """A glob in a part after one that writes files (`echo > --output=zz; git shortlog *`): bash expands it
        when its part runs, after the write, and the names the check listed before are not what it gets (a file
        named like an option, made by the command itself)."""
        for index, facts in enumerate(self.parts):
            earlier = self.parts[:index]
            if not any(f.writes or f.write_trees or f.unknown_writes is not None for f in earlier):
                continue
            glob = next((w for w in facts.part.effective[1:] if w.pattern is not None), None)
            if glob is not None:
                facts.problems.append(
                    f"`{facts.part.text}`: `{glob.text}` is expanded after an earlier part of the command writes "
                    "files, so what it names can't be known"
                )

    def _lists_written(self) -> None:
        """A file list the command itself writes (`echo … > l; md5sum -c l`) names what the check never saw."""
        written = [a.real for f in self.parts for a in f.writes + f.write_trees]
        unknown = next((f.unknown_writes for f in self.parts if f.unknown_writes is not None), None)
        for facts in self.parts:
            for listed in facts.lists:
                if unknown is not None or any(listed.real == w or listed.real.is_relative_to(w) for w in written):
                    facts.problems.append(
                        f"`{facts.part.text}`: its file list {listed.written} may be written by "
                        "the command itself, so what it names can't be known"
                    )

    # --- resolving one part ------------------------------------------------------------------------

    def _part(self, part: Part) -> PartFacts:
        out = PartFacts(part)
        if part.unknown_program is not None:
            out.unknown_reads = out.unknown_writes = part.unknown_program
        if part.unknown_reads:
            out.unknown_reads = out.unknown_reads or f"`{part.text}` reads a path computed at run time"
        found = part.effects
        for base in self.bases:
            self._option_names(part, base, out)
            top = None
            if found is not None and found.git:
                top = self._repository(part, base, out)
            for access in part.reads:
                self._read(access, base, top, out)
            for word in found.maybe_reads if found is not None else ():
                maybe = self._expand(word, base)
                if maybe is None:
                    out.unknown_reads = (
                        out.unknown_reads or f"`{part.text}` may read paths that can't be listed ({word.text})"
                    )
                    continue
                for path in maybe:
                    try:
                        out.maybe_reads.append(PathAccess.of(path, base))
                    except InvalidPath:
                        continue
            for target in part.writes:
                if target.word is None:
                    out.unknown_writes = out.unknown_writes or f"`{part.text}` writes a path computed at run time"
                    continue
                paths = self._expand(target.word, base)
                if paths is None:
                    out.unknown_writes = f"`{part.text}` writes paths that can't be listed ({target.word.text})"
                    continue
                for path in paths:
                    written = PathAccess.of(path, base)
                    (out.write_trees if target.recursive else out.writes).append(written)
                    if target.redirect:
                        out.redirected.append(written)
        return out

    def _option_names(self, part: Part, base: Path, out: PartFacts) -> None:
        """A glob bash expands to a name that starts with `-` hands the program an option the checker never saw
        (`rg TODO *` beside a file named `--pre=sh` is `rg TODO --pre=sh notes.txt`)."""
        for word in part.effective[1:]:
            if word.pattern is None or word.pattern[:1] not in ("*", "?", "["):
                continue
            names = self._expand(word, base)
            if names is None:  # a class the checker can't list (`[[:punct:]]*`), or too many: any could be one
                out.problems.append(
                    f"`{part.text}`: what `{word.text}` expands to can't be listed, and a name in it could be an option"
                )
                continue
            named = [n for n in names if n.startswith("-")]  # as bash passes it
            if named:
                out.problems.append(
                    f"`{part.text}`: `{word.text}` expands to {named[0]!r}, which the program would take as an option"
                )

    def _read(self, access: Access, base: Path, top: Path | None, out: PartFacts) -> None:
        if access.repo:
            out.trees.append(Tree(PathAccess.of(top or base, base), follow=False))
            return
        paths = self._expand(access.word, base)
        if paths is None:
            out.unknown_reads = (
                out.unknown_reads or f"`{out.part.text}` reads paths that can't be listed ({access.word.text})"
            )
            return
        where = top if access.repo_path and top is not None else base
        for path in paths:
            if safe_device(path):
                if access.list_file:  # `sha256sum -c /dev/stdin`: the names come from a pipe
                    out.unknown_reads = (
                        out.unknown_reads or f"`{out.part.text}` reads the names of the files it reads from {path}"
                    )
                continue
            resolved = PathAccess.of(path, where)
            if access.recursive and not access.names_only:
                out.trees.append(Tree(resolved, access.follow))
            else:
                out.reads.append(resolved)
            if access.list_file:
                self._list(resolved, where, out)

    def _expand(self, word: Word, base: Path) -> list[str] | None:
        """What bash makes of a path word: its value, `~` expanded, or a glob's matches (bounded)."""
        if not word.static:
            return None
        value = word.value
        if word.tilde:
            value = os.path.expanduser(value)
        elif value.startswith("~"):
            value = "./" + value  # a quoted `~` is a file named `~`
        if word.pattern is None:
            return [value]
        if self.verdict.globs_unreliable:
            return None
        pattern = os.path.expanduser(word.pattern) if word.tilde else word.pattern
        matches = expand_glob(pattern, base, self.budget)
        if matches is None:
            return None
        return matches or [value]

    def _list(self, listed: PathAccess, base: Path, out: PartFacts) -> None:
        """A file naming more files (`wc --files0-from`, `md5sum -c`): each name is read too. A checksum list is
        a content oracle (`OK` says a guess of the file's content was right), so its names count as reads of
        those files; a line that can't be read for certain makes the command ask. Only a regular file is read
        (opened without blocking: a FIFO or a terminal can't stall the check or take the bridge's input)."""
        text = self._list_text(listed, out)
        if text is None:
            out.lists.append(listed)
            return
        out.lists.append(listed)
        checksums = out.part.effects is not None and out.part.effects.program.endswith("sum")
        names = text.split("\0") if "\0" in text else text.splitlines()
        for line in names:
            found = checksum_names(line) if checksums else [line]
            if found is None:
                out.problems.append(
                    f"`{out.part.text}`: a line of its checklist {listed.written} can't be read "
                    f"for certain ({line[:80]!r})"
                )
                return
            for name in found:
                try:
                    out.reads.append(PathAccess.of(name, base))
                except InvalidPath:
                    out.problems.append(f"`{out.part.text}`: its file list names an invalid path")

    def _list_text(self, listed: PathAccess, out: PartFacts) -> str | None:
        where = f"`{out.part.text}`: its file list {listed.written}"
        try:
            fd = os.open(listed.real, safefs.READ_FLAGS)  # O_NONBLOCK, O_NOCTTY where the OS has them
        except FileNotFoundError:
            out.problems.append(f"{where} does not exist yet (what it will name can't be known)")
            return None
        except OSError as exc:
            out.problems.append(f"{where} can't be read ({exc.strerror})")
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                out.problems.append(f"{where} is not a regular file (what it names can't be known)")
                return None
            data = os.read(fd, MAX_LIST_BYTES + 1)
        except OSError as exc:
            out.problems.append(f"{where} can't be read ({exc.strerror})")
            return None
        finally:
            os.close(fd)
        if len(data) > MAX_LIST_BYTES:
            out.problems.append(f"{where} is over {MAX_LIST_BYTES:,} bytes")
            return None
        return data.decode("utf-8", errors="surrogateescape")

    def _repository(self, part: Part, base: Path, out: PartFacts) -> Path | None:
        """The top directory of the repository git will read, found as git finds it. A repository outside the
        workspace, a directory that looks like a bare repository, or one whose settings, hooks or submodules
        could make git run a program or read elsewhere (git_reading.py) asks."""
        effects = part.effects
        start = resolve(effects.git_dir.value, base) if effects is not None and effects.git_dir else base
        for directory in (start, *start.parents):
            dot_git = directory / ".git"
            # git takes a `.git` folder only when it is a git directory itself; past one that isn't, it asks
            # whether the folder is a bare repository, then goes on up (attack round 14: a junk `.git/` beside a
            # bare repository's files hid them, and `git log -p` ran the folder's textconv program)
            if dot_git.exists() and (dot_git.is_file() or _maybe_bare(dot_git)):
                if not self.workspace.contains(directory):
                    out.problems.append(f"`{part.text}` reads the git repository at {directory}, outside the workspace")
                elif (directory / ".git").is_file():
                    out.problems.append(f"`{part.text}`: {directory}/.git points to a repository elsewhere")
                else:
                    risks = reading_risks(directory, self.workspace.contains)
                    out.problems += [f"`{part.text}`: {why}" for why in risks]
                return directory
            if _maybe_bare(directory):
                out.problems.append(
                    f"`{part.text}`: {directory} looks like a bare git repository; its configuration could run programs"
                )
                return directory
        return None

    # --- trees -------------------------------------------------------------------------------------

    def walk(self, tree: Tree) -> None:
        if tree.entries is not None:
            return
        tree.entries = []
        seen: set[tuple[int, int]] = set()
        stack = [(tree.root.written, tree.root.real)]
        while stack:
            written, real = stack.pop()
            try:
                st = os.stat(real)
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                entries = list(os.scandir(real))
            except OSError:
                continue
            if not self.budget.spend(len(entries)):
                tree.too_many = True
                return
            for entry in entries:
                if entry.name == ".git":
                    continue
                seen_path, real_path = written / entry.name, Path(entry.path)
                if entry.is_symlink():
                    if not tree.follow:
                        continue
                    real_path = Path(os.path.realpath(entry.path))
                    if not self.workspace.contains(real_path):
                        tree.escapes.append(real_path)
                tree.entries.append(PathAccess(seen_path, real_path))
                try:
                    is_dir = entry.is_dir(follow_symlinks=tree.follow)
                except OSError:
                    is_dir = False
                if is_dir:
                    stack.append((seen_path, real_path))

    def tree_hit(self, tree: Tree, rule: CompiledRule) -> bool:
        if not may_hold(rule, tree.root):
            # no path below the tree is one the rule names; a hard link to a file it names may still be there
            if rule.path is None or not any_linked(rule.path):
                return False
            self.walk(tree)
            return tree.too_many or any(linked_name(rule.path, file_key(e.real)) for e in tree.entries or [])
        if rule.matches_path(tree.root.real) or rule.matches_path(tree.root.written):
            return True
        self.walk(tree)
        if tree.too_many:
            return True
        return any(path_hit(rule, e) for e in tree.entries or [])

    # --- rule matching (deny and ask) ---------------------------------------------------------------

    def fail_closed(self) -> str | None:
        """Why the command may match rules it does not name (it can't be read in full), if it may."""
        if not self.verdict.ok:
            return f"the command {self.verdict.error}"
        for facts in self.parts:
            for why in (facts.part.unknown_program, facts.part.opaque, facts.unknown_reads, facts.unknown_writes):
                if why is not None:
                    return why
        return None

    def bash_rule_hits(self, rule: CompiledRule) -> bool:
        if not self.verdict.ok or any(f.part.unknown_program or f.part.opaque for f in self.parts):
            return True
        if rule.settings and any(settings_hit(facts.part, rule) for facts in self.parts):
            return True
        by_head, headless = self._forms()
        candidates = (
            headless + by_head.get(rule.command_head, [])
            if rule.command_head is not None
            else [form for forms in by_head.values() for form in forms] + headless
        )
        return any(form.hits(rule) for form in candidates)

    def _forms(self) -> tuple[dict[str, list[_Form]], list[_Form]]:
        """Every part's forms, once per decision, by first word (a form whose first word is unknown: apart)."""
        if self.forms is None:
            by_head: dict[str, list[_Form]] = {}
            headless: list[_Form] = []
            for facts in self.parts:
                for raw in facts.part.forms(for_deny=True):
                    form = _Form.of(raw)
                    if form.head is None:
                        headless.append(form)
                    else:
                        by_head.setdefault(form.head, []).append(form)
            self.forms = (by_head, headless)
        return self.forms

    def read_rule_hits(self, rule: CompiledRule) -> bool:
        if not self.verdict.ok:
            return True
        for facts in self.parts:
            if facts.unknown_reads is not None:
                return True
            if any(path_hit(rule, a) for a in facts.reads + facts.maybe_reads):
                return True
            if any(self.tree_hit(tree, rule) for tree in facts.trees):
                return True
        return False

    def write_rule_hits(self, rule: CompiledRule) -> bool:
        if not self.verdict.ok:
            return True
        for facts in self.parts:
            if facts.unknown_writes is not None:
                return True
            if any(path_hit(rule, a) for a in facts.writes):
                return True
            if any(path_hit(rule, a) or may_hold(rule, a) for a in facts.write_trees):
                return True
        return False

    def protected_part(self, *, memory_too: bool) -> tuple[str, Part | None] | None:
        """`protected`, with the part that writes (None: the command can't be read)."""
        if not self.verdict.ok:
            return f"The command {self.verdict.error}: it can't be checked for writes to protected files", None
        for facts in self.parts:
            if facts.unknown_writes is not None:
                return f"{facts.unknown_writes}: it can't be checked for writes to protected files", facts.part
            for access in facts.writes:
                found = self.workspace.protected_reason(access.written)
                if found is not None and (found[1] == "settings" or memory_too):
                    return f"Writing {found[0]}", facts.part
            for access in facts.write_trees:
                found = self.workspace.protected_below(access.written)
                if found is not None and (found[1] == "settings" or memory_too):
                    return f"Writing {found[0]}", facts.part
        return None

    # --- what the question shows ------------------------------------------------------------------------

    def parts_matching(self, rule: CompiledRule) -> list[tuple[Part, str]]:
        """The parts a deny or ask rule speaks about (the question marks them): by their forms for a command rule,
        their reads for a path rule about reads, their writes for one about writes; a part that can't be read in
        full matches (it failed closed)."""
        why = f"the rule {rule.text} speaks about it"
        out: list[tuple[Part, str]] = []
        for facts in self.parts:
            part = facts.part
            if rule.rule.specifier is None:
                hit = True
            elif rule.command is not None:
                hit = (
                    bool(part.unknown_program or part.opaque)
                    or settings_hit(part, rule)
                    or any(_Form.of(form).hits(rule) for form in part.forms(for_deny=True))
                )
            elif rule.path is not None and rule.form.access == "read":
                hit = (
                    facts.unknown_reads is not None
                    or any(path_hit(rule, a) for a in facts.reads + facts.maybe_reads)
                    or any(self.tree_hit(tree, rule) for tree in facts.trees)
                )
            elif rule.path is not None:
                hit = (
                    facts.unknown_writes is not None
                    or any(path_hit(rule, a) for a in facts.writes)
                    or any(path_hit(rule, a) or may_hold(rule, a) for a in facts.write_trees)
                )
            else:
                hit = False
            if hit:
                out.append((part, why))
        return out

    def named_paths(self, limit: int = 20) -> tuple[NamedPath, ...]:
        """Paths the command names that lead somewhere else (a symlink, `..`, `~`): named and resolved."""
        out: dict[str, NamedPath] = {}
        for facts in self.parts:
            for access in [*facts.reads, *facts.writes, *facts.write_trees, *(t.root for t in facts.trees)]:
                if access.named and access.differs() and access.named not in out:
                    out[access.named] = NamedPath(access.named, str(access.real))
                if len(out) >= limit:
                    return tuple(out.values())
        return tuple(out.values())


_SPACE = re.compile(r"\s")


MAX_SETTINGS = 256  # settings a part may run with that are compared with a rule's; past it, it fails closed


def settings_hit(part: Part, rule: CompiledRule) -> bool:
    """A deny or ask rule that names settings (`Bash(RAILS_ENV=production rails *)`) and a part that runs with each
    of them, however they reach it (Part.setting_words), whose command behind its wrappers is the rest of the rule.
    Before, only the literal form (`RAILS_ENV=production rails x`) matched: `env RAILS_ENV=production rails x`, a
    setting before it, or an earlier `export` ran in bypass mode."""
    rest = rule.rest
    if rest is None:
        return False
    for candidate in _with_probed(part):  # (a command in its arguments: `setarch x86_64 env RAILS_ENV=… rails`)
        words = candidate.all_settings(MAX_SETTINGS)
        if words is not None and not all(any(_is_setting(s, word) for word in words) for s in rule.settings):
            continue
        # (more settings than that, or a name computed at run time: it may have the rule's, it fails closed) The
        # rest is matched as any deny rule is: behind wrappers, and in what a runner may start (`bundle exec rails`)
        if any(_Form.of(form).hits(rest) for form in candidate.forms(for_deny=True)):
            return True
    return False


def _with_probed(part: Part) -> list[Part]:
    """`part` and the commands read in its arguments, and in theirs (`setarch x86_64 tar --checkpoint-action=…`)."""
    found, stack = [part], list(part.probed)
    while stack:
        each = stack.pop()
        found.append(each)
        stack.extend(each.probed)
    return found


def _is_setting(setting: Setting, word: Word) -> bool:
    """`word` (`NAME=value`) is a setting the rule names; one computed at run time of the rule's name may be."""
    if not word.static:
        return setting.name.fullmatch(word.text.split("=", 1)[0]) is not None
    return setting.word.fullmatch(word.value) is not None


@dataclass(frozen=True)
class _Form:
    """A command form as rules read it: the words known before it runs, what stops them, the joined text."""

    known: tuple[str, ...]
    stop: Word | None  # the first word computed at run time (or a glob); None: every word is known
    head: str | None  # the shell-quoted first word, when known
    text: str | None  # `shlex.join` of the words, when all are known
    plain: str | None = None  # the words unquoted, joined by spaces (theirs made NULs): deny and ask rules' 2nd reading

    @classmethod
    def of(cls, form: tuple[Word, ...]) -> _Form:
        known: list[str] = []
        stop = None
        for word in form:
            if not word.static or word.pattern is not None:
                stop = word
                break
            known.append(word.value)
        head = shlex.quote(known[0]) if known else None
        whole = stop is None
        plain = " ".join(_SPACE.sub("\0", word) for word in known) if whole else None
        return cls(tuple(known), stop, head, shlex.join(known) if whole else None, plain)

    def hits(self, rule: CompiledRule) -> bool:
        if self.stop is not None:
            return rule.could_match(self.known, None if not self.stop.static else self.stop.pattern)
        if rule.command_head is not None and self.head != rule.command_head:
            return False
        # Deny and ask rules only (what these forms are for): a command also matches as its words read unquoted
        # (a word's own spaces made NULs, so that a `*` inside a word still stays in it). A pattern is matched over
        # `shlex.join`, which quotes a word with `!`, `&`, `$`, a space...: `Bash(echo tok*)` missed `echo 'tok!'`,
        # `Bash(curl https://evil.com/* *)` missed `curl 'https://evil.com/x&y=1'` (attack round 22). Matching
        # more is what a deny rule should do; allow rules keep the quoted reading.
        if self.text is None:
            return False
        return rule.matches_command(self.text) or (self.plain != self.text and rule.matches_command(self.plain or ""))


def _maybe_bare(directory: Path) -> bool:
    """Whether git could take `directory` for a bare repository (and read its `config`): git's own test is loose
    (a `HEAD` that is a link into `refs/`, even one leading nowhere; `objects` and `refs` that only need to pass
    `access(X_OK)`, which an executable file does; both of them from `commondir` instead), so anything of those
    names counts, whatever kind of file it is."""

    def there(name: str) -> bool:
        return os.path.lexists(directory / name)

    if not there("HEAD"):
        return False
    common = there("commondir")
    return (there("objects") or common) and (there("refs") or common)
