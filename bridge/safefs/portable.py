"""The check-after-open back end, for platforms whose `os.open` takes no `dir_fd` (Windows).

Without `openat` nothing can be opened relative to a directory already checked: every open is by full name,
and the OS follows whatever symlinks and junctions are on the way at that moment. So this back end judges the
path, opens it by name, then proves that what it opened is what it judged, and refuses (`Changed`) otherwise:

1. every directory on the way is looked at (`lstat`): it must be a directory, not a symlink or a junction (a
   name-surrogate reparse point), and its identity (`st_dev`, `st_ino`; Windows fills them from the volume
   serial number and the file index) is kept;
2. the final name is looked at: a link there is refused before anything is opened;
3. it is opened by name: `O_NOFOLLOW` where the OS has it (Windows has not: there the open follows, and the
   checks below catch it; forced on Linux, it is left out too, so the tests here run what Windows runs);
   `O_TRUNC` is held back until the proof is done, so a victim reached through a link is never truncated;
   `O_CREAT` only with `O_EXCL` for a name that did not exist (POSIX fails it on a link rather than create
   through one);
4. the handle's identity (`fstat`) must be the identity the final name had before the open and has after it
   (`lstat`), and the directories on the way are looked at again, once before and once after that `lstat`,
   and must be the same directories, still not links.

A write (and every step that changes a name: `replace_file`, and the checkpoint restore's unlink, rmdir and link)
runs in the parent directory proven and *held* (`Pinned.hold`): where the OS has `dir_fd` (this back end forced on
POSIX) the steps take the proven directory's fd; on Windows every directory on the way is opened, root first,
sharing read and write but not delete, so none of them can be renamed, deleted or swapped for a junction until
the step is done, and the steps by name reach those directories only. The temp file is created there (`O_EXCL`),
proven to be where it was judged, written, proven again and renamed over the name; the name is proven to hold it
after (`WrittenElsewhere` when the directory was moved meanwhile: the content is in that directory, renamed).
Before, the rename was by name, and a rename looks its two paths up one after the other: a directory swapped in
between sent a proven temp file over a same-named file outside (7 in 203,224 writes under a flipping directory,
measured here; since, 0 in 169,191, and 0 in 583,826 with a CPU-bound process beside it, and no temp file left).

Every look and open of a name under directories is taken with those directories kept from moving (`_through`,
`_held`): by name between two looks at them, as this back end first did, a directory swapped for a link and
back between the looks passed the step through the link while both looks saw the directory. A look (`lstat`:
Glob's check of what rg listed, `stat_exact`) has no handle to prove anything by, and Glob reported a name
outside the workspace that way (once in 40 calls under load, in CI); an open needed the swap twice, in step with
the checks, which an attacker that sees each call coming does every time (tests/test_safefs_portable.py). On
POSIX (this back end forced) the step goes through the directories, each opened from the last following no link,
and only the final name is judged by the proof above; on Windows the directories on the way are held as a
write's are (opened sharing read and write but not delete: none can be renamed, deleted or replaced until the
step is done) and looked at again.

What this guarantees: a link (or junction) at the final name, there before the open or after it, is never read
through or written through (its identity is not the name's); a directory on the way that is a link when it is
looked at, or that is a different directory after the open than before, refuses the open; what the caller gets
is a handle to the file that the judged path named, as far as anyone looking at that path between the checks
could tell.

What it cannot guarantee (the residual): the Windows hold (`_hold_windows`, ctypes `CreateFileW`) has not run:
nothing here is Windows; the tests run the POSIX way (`dir_fd`). Were the hold to fail open there, the looks
around each step would be all that stood in the way (the window described above). `make_dirs` is by name under
the way proven before and after: a directory made while one above was swapped may be left, empty, where the link
led. While a directory on the way keeps flipping, nearly every write is refused (each look must find it in
place), and a write that did land may be reported as `WrittenElsewhere`: refusals, never a write outside. Hard
links are out of scope here as in the other back ends.
On Windows, `O_CREAT | O_EXCL` (CreateFile's `CREATE_NEW`) on a name that became a dangling symlink between the
look and the open may create the link's target (POSIX refuses it), and a directory cannot be opened with
`os.open` at all, so `Pinned.fd` is -1 there (its identities, kept, are what pin it). `NtCreateFile` relative
to a directory handle (its `RootDirectory`: Windows' `openat`) would do without the hold; not used here.
"""

from __future__ import annotations

import contextlib
import errno
import ntpath
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

from bridge.safefs.errors import Changed, UnsafePath, Unverifiable, WrittenElsewhere


def _flag(name: str) -> int:
    return int(getattr(os, name, 0))


# O_NOFOLLOW where the OS has it and chose this back end (no dir_fd). Where the back end is only forced (Linux,
# `AGENT_BRIDGE_SAFEFS=portable`), it is left out, so what runs there is what Windows runs: the proof alone.
NOFOLLOW = 0 if os.open in os.supports_dir_fd else _flag("O_NOFOLLOW")
ALWAYS = _flag("O_CLOEXEC") | _flag("O_NOINHERIT") | _flag("O_BINARY")  # Windows' os.open is text mode without
DIRECTORY = _flag("O_DIRECTORY")
_NOFOLLOW_ALWAYS = _flag("O_NOFOLLOW")  # for a directory opened to pass through (POSIX only: `_through`)
CAN_OPEN_DIRS = os.name != "nt"  # Windows' os.open (the CRT's _wopen) refuses a directory
AT = os.open in os.supports_dir_fd and os.rename in os.supports_dir_fd
"""POSIX (this back end forced): a step in a held directory (`Pinned.hold`) takes its proven fd (`openat`,
`renameat`, ...). Windows has no `dir_fd`: there the held directories are kept from moving instead."""
_REPARSE_POINT = int(getattr(stat, "FILE_ATTRIBUTE_REPARSE_POINT", 0x400))
_NAME_SURROGATE = 0x20000000  # IsReparseTagNameSurrogate: symlinks, junctions (not OneDrive or dedup files)

Identity = tuple[int, int]
Chain = list[tuple[str, Identity]]


def is_link(st: os.stat_result) -> bool:
    """A symlink, or a Windows reparse point that names another path (a junction, a mount point): what must not
    be passed through. Other reparse points (cloud placeholders, deduplicated files) are files."""
    if stat.S_ISLNK(st.st_mode):
        return True
    if not getattr(st, "st_file_attributes", 0) & _REPARSE_POINT:
        return False
    tag = getattr(st, "st_reparse_tag", None)
    return tag is None or bool(tag & _NAME_SURROGATE)


def identity(st: os.stat_result, path: str, *, windows: bool = os.name == "nt") -> Identity:
    """(device, file) as a stat result says. On Windows the device is the volume serial number, which the OS
    gives as 64 bits on one path and 32 on another (`GetFileInformationByName` and `FileIdInfo` against the
    older calls: libuv and Node met `fstat` and `lstat` disagreeing on it); its low 32 bits are what both carry.
    A file without an index (`st_ino` 0) has no identity to prove anything by: `Unverifiable`."""
    if st.st_ino == 0:
        raise Unverifiable(path)
    return (st.st_dev & 0xFFFFFFFF if windows else st.st_dev, st.st_ino)


# ---- paths: POSIX's and Windows' (the functions take the flavour, so Windows paths are tested here) ----------


def _separators(flavour: ModuleType) -> str:
    both: str = flavour.sep + (flavour.altsep or "")
    return re.escape(both)


def split_absolute(real: str, flavour: ModuleType = os.path) -> tuple[str, list[str]]:
    """(anchor, components) of an absolute, normalized path: `/` or `C:\\` or `\\\\server\\share\\`, then names
    without `.` or `..`. ValueError for anything else (a caller's bug: these are judged real paths)."""
    drive, rest = flavour.splitdrive(real)
    if flavour is ntpath and drive.startswith("\\\\?\\") and re.fullmatch(r"\\\\\?\\[A-Za-z]:", drive):
        drive = drive[4:]  # the extended-length form of a drive path names the same place
    if (flavour is ntpath and not drive) or not rest or rest[0] not in flavour.sep + (flavour.altsep or ""):
        raise ValueError(f"not an absolute path: {real!r}")
    parts = [p for p in re.split(f"[{_separators(flavour)}]", rest) if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError(f"not a normalized path: {real!r}")
    return drive + flavour.sep, parts


def split_named(path: str, flavour: ModuleType = os.path) -> tuple[str, list[str]]:
    """(anchor, components) of a path as named or as a link's target, `.` and `..` kept: anchor `` when
    relative, the root (`/`, `C:\\`, `\\\\server\\share\\`) when absolute, and on Windows a bare separator for
    a path rooted on the current drive (`\\x`). ValueError for Windows' drive-relative `C:x`."""
    drive, rest = flavour.splitdrive(path)
    if flavour is ntpath and re.fullmatch(r"\\\\\?\\[A-Za-z]:", drive):
        drive = drive[4:]
    rooted = rest[:1] in (flavour.sep, flavour.altsep or flavour.sep)
    if drive and not rooted:
        raise ValueError(f"a drive-relative path: {path!r}")
    parts = re.split(f"[{_separators(flavour)}]", rest)
    return (drive + flavour.sep if rooted else ""), parts


def split_relative(relative: str, flavour: ModuleType = os.path) -> list[str]:
    """The components of a plain relative path (no `..`, not absolute, no drive)."""
    parts = [p for p in re.split(f"[{_separators(flavour)}]", relative) if p and p != "."]
    if any(p == ".." for p in parts) or flavour.isabs(relative) or flavour.splitdrive(relative)[0]:
        raise ValueError(f"not a plain relative path: {relative!r}")
    return parts


# ---- the chain of directories ------------------------------------------------------------------------------


def chain_of(base: str, parts: list[str], shown: str) -> Chain:
    """Look at each directory `base/parts[0]`, `base/parts[0]/parts[1]`, …: each must be a directory and not a
    link (`Changed`); missing: `FileNotFoundError`; a file: `NotADirectoryError`. Their identities."""
    out: Chain = []
    path = base
    for name in parts:
        path = os.path.join(path, name)
        out.append(_link(path, os.lstat(path), shown))
    return out


def _link(path: str, st: os.stat_result, shown: str) -> tuple[str, Identity]:
    """One directory of a chain, with its identity: not a link (`Changed(shown)`), a directory."""
    if is_link(st):
        raise Changed(shown)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return path, identity(st, path)


def same_chain(chain: Chain, shown: str) -> None:
    """The directories looked at before are the same directories now, and still not links (else `Changed`)."""
    for path, known in chain:
        try:
            st = os.lstat(path)
        except OSError:
            raise Changed(shown) from None
        if is_link(st) or not stat.S_ISDIR(st.st_mode) or identity(st, path) != known:
            raise Changed(shown)


def _lstat(path: str, at: int | None) -> os.stat_result:
    """`lstat` of `path`, or of the name `path` in the directory `at` (an fd)."""
    return os.lstat(path) if at is None else os.stat(path, dir_fd=at, follow_symlinks=False)


def _holds(chain: Chain, path: str, known: Identity, shown: str, at: int | None = None) -> None:
    """`path` (in the last directory of `chain`) is the file `known`, looked at between two looks at the chain."""
    same_chain(chain, shown)
    try:
        st = _lstat(path, at)
    except OSError:
        raise Changed(shown) from None
    if is_link(st) or identity(st, path) != known:
        raise Changed(shown)
    same_chain(chain, shown)


# ---- opens -----------------------------------------------------------------------------------------------


def open_in(chain: Chain, path: str, flags: int, mode: int, shown: str, at: int | None = None) -> int:
    """Open `path`, whose directories `chain` were looked at just now, and prove the handle is the file there.
    `at`: `path` is a name in the directory open as `at` (POSIX: `_through`), which no swap can move."""
    try:
        before: os.stat_result | None = _lstat(path, at)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
        before = None
    exclusive = flags & os.O_CREAT and flags & os.O_EXCL  # the caller's: a name that exists is its error
    flags |= NOFOLLOW | ALWAYS
    if before is not None:
        if is_link(before):
            raise Changed(shown)
        if exclusive:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
        if DIRECTORY and flags & DIRECTORY and not stat.S_ISDIR(before.st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
        if stat.S_ISDIR(before.st_mode) and not CAN_OPEN_DIRS:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        expected: Identity | None = identity(before, path)
        flags &= ~(os.O_CREAT | os.O_EXCL)
    else:
        expected = None
        flags |= os.O_EXCL  # never create through a link that appears meanwhile (POSIX fails it with EEXIST)
    truncate = flags & os.O_TRUNC
    try:
        fd = os.open(path, flags & ~os.O_TRUNC, mode, dir_fd=at)
    except OSError as error:
        # ELOOP (EMLINK on FreeBSD): O_NOFOLLOW met a link; EEXIST/ENOENT: the name changed since it was looked at
        if error.errno == errno.EEXIST and exclusive:
            raise
        if error.errno in (errno.ELOOP, errno.EMLINK, errno.EEXIST if before is None else errno.ENOENT):
            raise Changed(shown) from None
        raise
    got: Identity | None = None
    try:
        got = identity(os.fstat(fd), path)
        if expected is not None and got != expected:
            raise Changed(shown)
        _holds(chain, path, got, shown, at)
        if truncate:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        if before is None:  # the file this open created, when it is where it was meant to be
            if at is None:
                remove_if(path, got)
            else:
                remove_if(path, got, lambda name: _lstat(name, at), lambda name: os.unlink(name, dir_fd=at))
        raise
    return fd


def remove_if(
    path: str,
    known: Identity | None,
    lstat: Callable[[str], os.stat_result] = os.lstat,
    unlink: Callable[[str], None] = os.unlink,
) -> None:
    """Unlink `path` only while it is the file `known` (what we created), never something that took its name;
    `lstat`/`unlink`: in a held directory, its own (`Pinned.lstat_name`, `Pinned.unlink`)."""
    if known is None:
        return
    with contextlib.suppress(OSError):
        st = lstat(path)
        if not is_link(st) and identity(st, path) == known:
            unlink(path)


def open_path(real: str, flags: int, mode: int) -> int:
    anchor, parts = split_absolute(real)
    if not parts:
        if not CAN_OPEN_DIRS:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), real)
        return os.open(anchor, (flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC)) | ALWAYS)
    if AT:
        root = os.open(anchor, os.O_RDONLY | DIRECTORY | ALWAYS)
        try:
            with _through(root, parts[:-1], real) as at:
                return open_in([], parts[-1], flags, mode, real, at)
        finally:
            os.close(root)
    chain = chain_of(anchor, parts[:-1], real)
    with _held(chain):
        return open_in(chain, real, flags, mode, real)


def stat_path(real: str) -> os.stat_result:
    """`lstat` of `real`, its directories passed following no link (a link on the way: `Changed`); see `_look`."""
    anchor, parts = split_absolute(real)
    if not parts:
        return os.stat(anchor)
    if AT:
        root = os.open(anchor, os.O_RDONLY | DIRECTORY | ALWAYS)
        try:
            with _through(root, parts[:-1], real) as at:
                return _lstat(parts[-1], at)
        finally:
            os.close(root)
    chain = chain_of(anchor, parts[:-1], real)
    with _held(chain):
        return _look(chain, real, real)


# ---- the directories on the way, kept from being swapped while a name in them is looked at or opened ----------
#
# Looked at by name between two looks at the directories (as this back end first did), a name proves nothing
# about where it was reached: a directory swapped for a link and back between the looks passes the step in the
# middle through the link while both looks see the directory. An open's handle carries an identity, so the swap
# had to come twice, in step with the checks; a look (`lstat`) has none, and Glob reported a name outside the
# workspace that way (1 in 40 calls under load, in CI); an attacker that sees each call coming defeats both,
# every time (tests/test_safefs_portable.py). So the directories do not move while the step runs: on POSIX (this
# back end forced) it is taken through them, each opened from the last following no link (`_through`); on
# Windows they are held (`_held`: opened sharing read and write but not delete, so none can be renamed, deleted
# or replaced until the step is done) and looked at again: the same directories, not links.


@contextlib.contextmanager
def _through(fd: int, names: list[str], shown: str) -> Iterator[int]:
    """POSIX (`dir_fd`): the directory `names` under the directory `fd`, each opened from the last following no
    link (a link on the way: `Changed`), for the step to take as its `dir_fd`. An error of the step or of the way
    names the whole path `shown`, as a step by name would."""
    current = fd
    try:
        for name in names:
            try:
                opened = os.open(name, os.O_RDONLY | DIRECTORY | _NOFOLLOW_ALWAYS | ALWAYS, dir_fd=current)
            except OSError as error:
                # O_NOFOLLOW met a link: ELOOP (EMLINK on FreeBSD), or ENOTDIR with O_DIRECTORY (Linux)
                if error.errno in (errno.ELOOP, errno.EMLINK) or (
                    error.errno == errno.ENOTDIR and _link_at(current, name)
                ):
                    raise Changed(shown) from None
                raise
            if current != fd:
                os.close(current)
            current = opened
        yield current
    except OSError as error:
        if error.filename is not None and not isinstance(error, UnsafePath):
            error.filename = shown
        raise
    finally:
        if current != fd:
            os.close(current)


def _link_at(fd: int, name: str) -> bool:
    try:
        return is_link(os.stat(name, dir_fd=fd, follow_symlinks=False))
    except OSError:
        return False


@contextlib.contextmanager
def _held(chain: Chain) -> Iterator[None]:
    """Windows: the directories of `chain` kept from being renamed, deleted or replaced meanwhile (elsewhere,
    without `dir_fd`, no platform is known: the looks around the step are all there is)."""
    handles = _hold_windows([p for p, _ in chain]) if os.name == "nt" else []
    try:
        yield
    finally:
        _release_windows(handles)


def _look(way: Chain, path: str, shown: str) -> os.stat_result:
    """`lstat` of `path`, a name in the last directory of `way`, between two looks at `way` (held meanwhile)."""
    same_chain(way, shown)
    st = os.lstat(path)
    same_chain(way, shown)
    return st


class Pinned:
    """A directory, checked: the identities of it and of every directory on its way. What is opened under it
    must be reached through those same directories (a directory renamed away and replaced refuses the open:
    without `dir_fd` there is no following it, unlike the `dir_fd` back ends). `fd`: the directory open
    read-only where the OS opens directories (POSIX), for callers that list it; -1 on Windows."""

    def __init__(self, real: str) -> None:
        self.real = real
        anchor, parts = split_absolute(real)
        self.chain: Chain = [(anchor, identity(os.lstat(anchor), anchor)), *chain_of(anchor, parts, real)]
        self.fd = -1
        if CAN_OPEN_DIRS:
            self.fd = os.open(real, os.O_RDONLY | DIRECTORY | NOFOLLOW | ALWAYS)
            try:
                if identity(os.fstat(self.fd), real) != self.chain[-1][1]:
                    raise Changed(real)
                same_chain(self.chain, real)
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _way(self, parts: list[str], shown: str) -> Chain:
        same_chain(self.chain, shown)
        return self.chain + chain_of(self.real, parts, shown)

    def open(self, parts: list[str], flags: int, mode: int, shown: str) -> int:
        if not parts:
            fd = open_in(self.chain[:-1], self.real, flags & ~(os.O_CREAT | os.O_EXCL | os.O_TRUNC), 0, shown)
            if identity(os.fstat(fd), self.real) != self.chain[-1][1]:
                os.close(fd)
                raise Changed(shown)
            return fd
        if AT and self.fd >= 0:
            same_chain(self.chain, shown)  # moved or replaced: refused, as on Windows (which has no fd to follow)
            with _through(self.fd, parts[:-1], shown) as at:
                return open_in([], parts[-1], flags, mode, shown, at)
        way = self._way(parts[:-1], shown)
        with _held(way):
            return open_in(way, os.path.join(self.real, *parts), flags, mode, shown)

    def lstat(self, parts: list[str], shown: str) -> os.stat_result:
        if parts and AT and self.fd >= 0:
            same_chain(self.chain, shown)  # moved or replaced: refused, as on Windows (which has no fd to follow)
            with _through(self.fd, parts[:-1], shown) as at:
                return _lstat(parts[-1], at)
        way = self._way(parts[:-1], shown)
        with _held(way):
            return _look(way, os.path.join(self.real, *parts), shown)

    # -- steps on one name in this directory, inside `hold()` ------------------------------------------------

    @contextlib.contextmanager
    def hold(self, shown: str) -> Iterator[None]:
        """Keep this directory where it was judged for a few steps on names in it (create a temp file, rename it
        over a name, unlink, make a link): the window a by-name rename leaves (its two paths are looked up one
        after the other, so a directory swapped between the lookups sent a temp file proven inside over a
        same-named file outside) is closed, not narrowed:
        - POSIX (this back end forced): the steps take this directory's proven fd (`AT`): they happen in it
          wherever it is moved meanwhile;
        - Windows: every directory on the way, root first, is opened sharing read and write but not delete, so
          until they are released none can be renamed, deleted or replaced (a junction swapped in for it needs
          exactly that), then all are looked at again by name: the same directories, not links (`Changed`
          otherwise). The steps by name then reach these directories and no others.
        Elsewhere (no `dir_fd` and not Windows: no such platform is known) the steps are by name, proven after."""
        handles = _hold_windows([path for path, _ in self.chain]) if os.name == "nt" else []
        try:
            same_chain(self.chain, shown)
            yield
        finally:
            _release_windows(handles)

    def _at(self, name: str) -> tuple[str, int | None]:
        """How a step names `name`: relative to the fd (POSIX), or by its full path under the held way."""
        if AT and self.fd >= 0:
            return name, self.fd
        return os.path.join(self.real, name), None

    def create(self, name: str, flags: int, mode: int) -> int:
        """A new file `name` here (`O_CREAT | O_EXCL`: never an existing file, never through a link)."""
        named, at = self._at(name)
        return os.open(named, flags | os.O_CREAT | os.O_EXCL | NOFOLLOW | ALWAYS, mode, dir_fd=at)

    def lstat_name(self, name: str) -> os.stat_result:
        named, at = self._at(name)
        return os.stat(named, follow_symlinks=False, dir_fd=at)

    def readlink(self, name: str) -> str:
        named, at = self._at(name)
        return os.readlink(named, dir_fd=at)

    def symlink(self, target: str, name: str) -> None:
        named, at = self._at(name)
        os.symlink(target, named, dir_fd=at)

    def unlink(self, name: str) -> None:
        named, at = self._at(name)
        os.unlink(named, dir_fd=at)

    def rmdir(self, name: str) -> None:
        named, at = self._at(name)
        os.rmdir(named, dir_fd=at)

    def rename(self, src: str, dst: str) -> None:
        """`src` over `dst`, both names in this directory (replacing a file or a link at `dst`, never following)."""
        if AT and self.fd >= 0:
            os.rename(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(os.path.join(self.real, src), os.path.join(self.real, dst))


# ---- Windows: directories kept in place while a step runs in them --------------------------------------------

if sys.platform == "win32":
    import ctypes
    from ctypes import wintypes

    _FILE_READ_ATTRIBUTES = 0x80
    _FILE_SHARE_READ, _FILE_SHARE_WRITE = 0x1, 0x2  # and not FILE_SHARE_DELETE (0x4): no rename, no delete
    _OPEN_EXISTING = 3
    _FILE_FLAG_BACKUP_SEMANTICS = 0x02000000  # needed to open a directory
    _FILE_FLAG_OPEN_REPARSE_POINT = 0x00200000  # a junction is held as itself, not followed
    _INVALID = ctypes.c_void_p(-1).value

    def _hold_windows(paths: list[str]) -> list[int]:
        """Each of `paths` opened in order (so each lookup passes only through directories already held)."""
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        create = kernel32.CreateFileW
        create.argtypes = [
            wintypes.LPCWSTR,
            wintypes.DWORD,
            wintypes.DWORD,
            ctypes.c_void_p,
            wintypes.DWORD,
            wintypes.DWORD,
            wintypes.HANDLE,
        ]
        create.restype = wintypes.HANDLE
        handles: list[int] = []
        try:
            for path in paths:
                handle = create(
                    path,
                    _FILE_READ_ATTRIBUTES,
                    _FILE_SHARE_READ | _FILE_SHARE_WRITE,
                    None,
                    _OPEN_EXISTING,
                    _FILE_FLAG_BACKUP_SEMANTICS | _FILE_FLAG_OPEN_REPARSE_POINT,
                    None,
                )
                if not handle or handle == _INVALID:
                    raise ctypes.WinError(ctypes.get_last_error())
                handles.append(int(handle))
        except BaseException:
            _release_windows(handles)
            raise
        return handles

    def _release_windows(handles: list[int]) -> None:
        close = ctypes.WinDLL("kernel32", use_last_error=True).CloseHandle
        close.argtypes = [wintypes.HANDLE]
        for handle in reversed(handles):
            close(handle)

else:

    def _hold_windows(paths: list[str]) -> list[int]:
        raise OSError(errno.ENOSYS, "Windows only")

    def _release_windows(handles: list[int]) -> None:
        return None


# ---- writes ------------------------------------------------------------------------------------------------


def make_dirs(real: str, mode: int) -> None:
    """`mkdir -p`, each directory looked at (not a link) and the ones above it looked at again after each
    `mkdir`. A directory made while one above was swapped may be left where the link led (empty)."""
    anchor, parts = split_absolute(real)
    chain: Chain = []
    path = anchor
    for name in parts:
        path = os.path.join(path, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            same_chain(chain, path)
            with contextlib.suppress(FileExistsError):  # made meanwhile: looked at below
                os.mkdir(path, mode)
            st = os.lstat(path)
        chain.append(_link(path, st, path))
    same_chain(chain, real)


def replace_file(
    real: str, data: bytes, *, mode: int | None, create_only: bool, new_mode: int
) -> tuple[os.stat_result, bool]:
    """`write_exact` here: in the parent directory, proven and held (`Pinned`, `Pinned.hold`), a temp file is
    created (`O_EXCL`), proven to be where it was judged, written, proven again and renamed over the name; the
    name is proven to hold it after (`WrittenElsewhere` when the directory was moved meanwhile: the content is
    then in that directory under its new name, not outside). (stat written, replaced)."""
    anchor, parts = split_absolute(real)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), real)
    name = parts[-1]
    parent = Pinned(os.path.join(anchor, *parts[:-1]))
    try:
        with parent.hold(real):
            return _replace_in(parent, name, real, data, mode=mode, create_only=create_only, new_mode=new_mode)
    finally:
        parent.close()


def _replace_in(
    parent: Pinned, name: str, real: str, data: bytes, *, mode: int | None, create_only: bool, new_mode: int
) -> tuple[os.stat_result, bool]:
    chain = parent.chain
    try:
        existing: os.stat_result | None = parent.lstat_name(name)
    except FileNotFoundError:
        existing = None
    if existing is not None:
        if create_only:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), real)
        if is_link(existing):
            raise Changed(real)
        if stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), real)
    keep = stat.S_IMODE(existing.st_mode) if existing is not None and stat.S_ISREG(existing.st_mode) else None
    final_mode = mode if mode is not None else keep if keep is not None else new_mode
    tmp, fd = _temp_in(parent, name)
    tmp_path = os.path.join(parent.real, tmp)
    ours: Identity | None = None
    try:
        with os.fdopen(fd, "wb", closefd=True) as fh:
            ours = identity(os.fstat(fh.fileno()), tmp_path)
            _holds(chain, tmp_path, ours, real)  # the temp file is in the judged directory, at its judged name
            fh.write(data)
            fh.flush()
            _chmod(fh.fileno(), tmp_path, final_mode)
            _chown_like(fh.fileno(), existing)
            os.fsync(fh.fileno())
            written = os.fstat(fh.fileno())
        if create_only and _exists(parent, name):  # made meanwhile: not ours to replace
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), real)
        _holds(chain, tmp_path, ours, real)
        parent.rename(tmp, name)
    except BaseException:
        remove_if(tmp, ours, parent.lstat_name, parent.unlink)
        raise
    try:
        _holds(chain, real, ours, real)
    except Changed:
        raise WrittenElsewhere(real) from None
    if CAN_OPEN_DIRS:
        with contextlib.suppress(OSError):  # not every file system lets a directory be synced
            dfd = os.open(parent.real, os.O_RDONLY | DIRECTORY | ALWAYS)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    return written, existing is not None


def _exists(parent: Pinned, name: str) -> bool:
    try:
        parent.lstat_name(name)
    except FileNotFoundError:
        return False
    return True


def _chmod(fd: int, path: str, mode: int) -> None:
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:  # Windows: only the read-only bit, set by name on the temp file just proved to be ours
        os.chmod(path, mode)


def _chown_like(fd: int, existing: os.stat_result | None) -> None:
    if existing is None or not stat.S_ISREG(existing.st_mode) or not hasattr(os, "fchown"):
        return
    if (existing.st_uid, existing.st_gid) != (os.getuid(), os.getgid()):
        with contextlib.suppress(OSError):  # only root may give a file away; keep what we can
            os.fchown(fd, existing.st_uid, existing.st_gid)


def _temp_in(parent: Pinned, name: str) -> tuple[str, int]:
    """A new temp file beside `name` in the held `parent` (`O_EXCL`: never an existing file or a link); its name."""
    for _ in range(100):
        tmp = f".{name[:200]}.{os.urandom(6).hex()}.tmp"
        try:
            fd = parent.create(tmp, os.O_WRONLY, 0o600)
        except FileExistsError:
            continue
        return tmp, fd
    raise FileExistsError(errno.EEXIST, "no free temp file name", name)
