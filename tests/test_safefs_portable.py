"""bridge/safefs's portable back end (check after open, for Windows, where `os.open` takes no `dir_fd`), and
races that matter most to it: a truncating open, and a directory on the way swapped for a link and back.

Forced here with `AGENT_BRIDGE_SAFEFS=portable`, it leaves `O_NOFOLLOW` out as Windows must, so the open does
follow a link flipped in and only the proof after it stands in the way. Windows' own path syntax and reparse
points are tested through the pure functions (`ntpath`, stat results as Windows fills them); nothing here ran on
Windows. The races run on every back end; each has a control (the by-name way, in the same race) that must do
the damage, so the race is real."""

from __future__ import annotations

import contextlib
import ntpath
import os
import posixpath
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bridge import safefs
from bridge.safefs import Changed, portable
from tests.file_races import BACKENDS, Flipper, use_backend

SECRET = b"SECRET-KEY-MATERIAL\n"
VICTIM = b"precious content outside\n"
WRITE_ROUNDS = int(os.environ.get("SAFEFS_WRITE_ROUNDS", "20000"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(str(request.param), monkeypatch)


@dataclass
class Arena:
    ws: Path
    outside: Path


@pytest.fixture
def arena(tmp_path: Path) -> Arena:
    root = Path(os.path.realpath(tmp_path))
    ws, outside = root / "ws", root / "outside"
    (ws / "d").mkdir(parents=True)
    (outside / "dir").mkdir(parents=True)
    (ws / "d" / "f").write_bytes(b"harmless\n")
    (outside / "dir" / "f").write_bytes(SECRET)
    (ws / ".real").write_bytes(b"harmless\n")
    (outside / "victim").write_bytes(VICTIM)
    return Arena(ws, outside)


def _rounds(at_least: int, done: Callable[[], bool], seconds: float = 20.0) -> Iterator[int]:
    """At least `at_least` rounds, then on (bounded) until `done()`: a loaded machine may deschedule the flipper
    with the name in one state through a whole run of quick refusals."""
    end = time.monotonic() + seconds
    i = 0
    while i < at_least or (not done() and time.monotonic() < end):
        yield i
        i += 1


def _until(attempt: Callable[[], bool], seconds: float = 30.0) -> int:
    """Tries of `attempt` until it did the damage (the control); 0 when it never did within `seconds`."""
    tries = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        tries += 1
        if attempt():
            return tries
    return 0


# ---- the switch ------------------------------------------------------------------------------------------------


def test_the_back_end_is_chosen_by_capability_and_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(safefs.FORCE_ENV, raising=False)
    monkeypatch.delenv("AGENT_BRIDGE_PORTABLE", raising=False)
    here = safefs.backend()
    assert here == ("portable" if os.open not in os.supports_dir_fd else here)
    assert here in ("openat2", "walk", "portable")
    monkeypatch.setenv("AGENT_BRIDGE_PORTABLE", "1")  # the bridge-wide portable run takes it too
    assert safefs.backend() == "portable"
    monkeypatch.setenv(safefs.FORCE_ENV, "walk")  # unless safefs's own switch names another
    assert safefs.backend() == ("walk" if os.open in os.supports_dir_fd else "portable")
    monkeypatch.setenv(safefs.FORCE_ENV, "portable")
    monkeypatch.delenv("AGENT_BRIDGE_PORTABLE")
    assert safefs.backend() == "portable" and not safefs.openat2_available()


# ---- Windows' paths and reparse points, as pure functions ----------------------------------------------------------


def test_windows_paths_split_into_their_root_and_names() -> None:
    split = portable.split_absolute
    assert split("C:\\Users\\alice\\x.txt", ntpath) == ("C:\\", ["Users", "alice", "x.txt"])
    assert split("c:/Users/alice", ntpath) == ("c:\\", ["Users", "alice"])
    assert split("\\\\srv\\share\\x", ntpath) == ("\\\\srv\\share\\", ["x"])
    assert split("\\\\?\\C:\\x", ntpath) == ("C:\\", ["x"])  # the extended-length form names the same place
    assert split("C:\\", ntpath) == ("C:\\", [])
    assert split("/a/b", posixpath) == ("/", ["a", "b"])
    for bad in ("relative\\x", "\\x", "C:x", "C:\\a\\..\\b", "C:\\a\\.\\b"):
        with pytest.raises(ValueError):
            split(bad, ntpath)
    for bad in ("a/b", "/a/../b"):
        with pytest.raises(ValueError):
            split(bad, posixpath)


def test_windows_link_targets_and_relative_names_split_as_windows_reads_them() -> None:
    assert portable.split_named("..\\x", ntpath) == ("", ["..", "x"])
    assert portable.split_named("\\x\\y", ntpath) == ("\\", ["", "x", "y"])  # rooted on the current drive
    assert portable.split_named("D:\\t", ntpath) == ("D:\\", ["", "t"])
    assert portable.split_named("\\\\?\\D:\\t", ntpath) == ("D:\\", ["", "t"])
    with pytest.raises(ValueError):  # relative to D:'s current directory: not a place
        portable.split_named("D:t", ntpath)
    assert portable.split_relative("a\\b/c", ntpath) == ["a", "b", "c"]
    for bad in ("..\\x", "C:x", "\\x", "C:\\x"):
        with pytest.raises(ValueError):
            portable.split_relative(bad, ntpath)


def _windows_stat(mode: int, attributes: int = 0, tag: int | None = None) -> Any:
    """A stat result as Python fills it on Windows (st_file_attributes, st_reparse_tag)."""
    fields: dict[str, int] = {"st_mode": mode, "st_file_attributes": attributes}
    if tag is not None:
        fields["st_reparse_tag"] = tag
    return SimpleNamespace(**fields)


def test_symlinks_and_junctions_are_links_cloud_files_are_not(tmp_path: Path) -> None:
    reparse = 0x400  # FILE_ATTRIBUTE_REPARSE_POINT
    assert portable.is_link(_windows_stat(stat.S_IFLNK, reparse, 0xA000000C))  # IO_REPARSE_TAG_SYMLINK
    assert portable.is_link(_windows_stat(stat.S_IFDIR, reparse | 0x10, 0xA0000003))  # a junction (mount point)
    assert portable.is_link(_windows_stat(stat.S_IFDIR, reparse | 0x10))  # a reparse point of unknown kind
    assert not portable.is_link(_windows_stat(stat.S_IFREG, reparse, 0x9000001A))  # a OneDrive placeholder
    assert not portable.is_link(_windows_stat(stat.S_IFREG, reparse, 0x80000013))  # a deduplicated file
    assert not portable.is_link(_windows_stat(stat.S_IFDIR, 0x10))
    (tmp_path / "l").symlink_to("nowhere")
    assert portable.is_link(os.lstat(tmp_path / "l"))  # and a real one here


def test_windows_identities_agree_on_the_volume_serials_low_32_bits() -> None:
    """Windows gives a volume's serial number as 64 bits on one path and 32 on another: a file is the same file
    whichever `fstat` and `lstat` took; on POSIX the device number is compared whole."""
    wide = os.stat_result((stat.S_IFREG, 5, 0xABCD_1234_5678, 1, 0, 0, 0, 0, 0, 0))
    narrow = os.stat_result((stat.S_IFREG, 5, 0x1234_5678, 1, 0, 0, 0, 0, 0, 0))
    other_file = os.stat_result((stat.S_IFREG, 6, 0x1234_5678, 1, 0, 0, 0, 0, 0, 0))
    assert portable.identity(wide, "x", windows=True) == portable.identity(narrow, "x", windows=True)
    assert portable.identity(other_file, "x", windows=True) != portable.identity(narrow, "x", windows=True)
    assert portable.identity(wide, "x", windows=False) != portable.identity(narrow, "x", windows=False)


def test_a_file_without_identity_is_refused() -> None:
    """A file system that gives no file index (st_ino 0) leaves nothing to prove an open by: refused."""
    with pytest.raises(safefs.Unverifiable) as caught:
        portable.identity(os.stat_result((stat.S_IFREG, 0, 7, 1, 0, 0, 0, 0, 0, 0)), "x")
    assert "no identity" in str(caught.value)


# ---- opens that create and truncate ----------------------------------------------------------------------------


def test_creating_and_truncating_opens_do_what_open_does(backend: str, arena: Arena) -> None:
    """The portable back end rewrites the flags (`O_EXCL` for a new name, `O_TRUNC` after the proof): what the
    caller sees is still `open(2)`'s answer."""
    new = arena.ws / "d" / "new.txt"
    fd = safefs.open_exact(new, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"made\n")
    os.close(fd)
    assert new.read_bytes() == b"made\n"
    os.close(safefs.open_exact(new, os.O_WRONLY | os.O_CREAT))  # exists: opened, not recreated
    assert new.read_bytes() == b"made\n"
    with pytest.raises(FileExistsError):
        safefs.open_exact(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.close(safefs.open_exact(new, os.O_WRONLY | os.O_TRUNC))
    assert new.read_bytes() == b""
    with pytest.raises(FileNotFoundError):
        safefs.open_exact(arena.ws / "d" / "missing.txt", os.O_WRONLY)
    assert sorted(p.name for p in (arena.ws / "d").iterdir()) == ["f", "new.txt"]


# ---- races -----------------------------------------------------------------------------------------------------


def test_a_truncating_open_never_truncates_what_a_flipped_link_leads_to(backend: str, arena: Arena) -> None:
    """`ws/flip` flips between a regular file and a link to a victim outside. An open with `O_TRUNC` through the
    link would empty the victim before any check after it could object: the portable back end holds `O_TRUNC`
    back until its proof is done, so the victim keeps its content; the by-name way (look, then open) empties it."""
    name, victim = arena.ws / "flip", arena.outside / "victim"
    n: Counter[str] = Counter()
    with Flipper("file", name, victim, arena.ws / ".real"):
        for _ in _rounds(1500, lambda: n["opened"] > 0):
            try:
                fd = safefs.open_exact(name, os.O_WRONLY | os.O_TRUNC)
            except (Changed, FileNotFoundError):
                continue
            os.close(fd)
            n["opened"] += 1
        assert victim.read_bytes() == VICTIM and n["opened"] > 0, n

        def by_name() -> bool:
            try:
                if not stat.S_ISLNK(os.lstat(name).st_mode):
                    os.close(os.open(name, os.O_WRONLY | os.O_TRUNC))
            except OSError:
                pass
            return victim.read_bytes() != VICTIM

        assert _until(by_name), "the control never truncated the victim: the race did not happen"


class _SwapEveryCall:
    """The attacker at its best: `ws/d` is swapped for a link to `outside/dir` (and back) right before every
    `lstat`, `stat` and `open` the back end makes of `ws/d` or a name in it, so each look finds the other state
    from the last. A by-name look at `ws/d/f` between two looks at `ws/d` then passes through the link while
    both looks see the directory."""

    def __init__(
        self, arena: Arena, monkeypatch: pytest.MonkeyPatch, *, start_as_link: bool, oracle: bool = False
    ) -> None:
        self.d, self.parked, self.target = arena.ws / "d", arena.ws / ".d-parked", arena.outside / "dir"
        self.link = False
        self.oracle = oracle
        if start_as_link:
            self.flip()
        for name in ("lstat", "stat", "open"):
            monkeypatch.setattr(os, name, self._swapping(getattr(os, name)))

    def flip(self) -> None:
        if self.link:
            os.unlink(self.d)
            os.rename(self.parked, self.d)
        else:
            os.rename(self.d, self.parked)
            os.symlink(self.target, self.d)
        self.link = not self.link

    def _swapping(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def swapped(*args: Any, **kwargs: Any) -> Any:
            named = os.fspath(args[0]) if args and isinstance(args[0], (str, Path)) else ""
            if self.oracle:
                # as if it saw each call coming: the directory to a look at it, the link to a look inside it
                inside = named.startswith(f"{self.d}{os.sep}") or (kwargs.get("dir_fd") is not None and named == "f")
                if named == str(self.d) or (kwargs.get("dir_fd") is not None and named == "d"):
                    if self.link:
                        self.flip()
                elif inside and not self.link:
                    self.flip()
            elif named.startswith(str(self.d)) or (kwargs.get("dir_fd") is not None and named in ("d", "f")):
                self.flip()
            return call(*args, **kwargs)

        return swapped


def _checked_by_name(arena: Arena) -> os.stat_result | None:
    """The control: the directory looked at, the name looked at by name, the directory looked at again."""
    d = arena.ws / "d"
    if not stat.S_ISDIR(os.lstat(d).st_mode):
        return None
    st = os.lstat(d / "f")
    return st if stat.S_ISDIR(os.lstat(d).st_mode) else None


@pytest.mark.parametrize("start_as_link", [False, True])
@pytest.mark.parametrize("how", ["stat_exact", "Beneath.lstat"])
def test_a_look_at_a_name_never_passes_a_directory_swapped_between_its_checks(
    backend: str, arena: Arena, monkeypatch: pytest.MonkeyPatch, how: str, *, start_as_link: bool
) -> None:
    """Glob's check of each name rg listed (`Beneath.lstat`) and `stat_exact` must not report a file that the
    swap showed: that is a name outside leaked (CI met it once in 40 Globs with the race test). The portable
    back end looked by name between two looks at the directories, which a swap and back between them defeats;
    now its look is taken through the directories themselves (opened following no link, POSIX), or with them held
    in place (Windows). Every back end; the control (the by-name way) leaks under the same attacker."""
    outside = (arena.outside / "dir" / "f").stat()
    with safefs.Beneath(arena.ws) as held:
        swap = _SwapEveryCall(arena, monkeypatch, start_as_link=start_as_link)
        seen: list[os.stat_result] = []
        for _ in range(20):
            with contextlib.suppress(Changed, FileNotFoundError, NotADirectoryError):
                seen.append(safefs.stat_exact(arena.ws / "d" / "f") if how == "stat_exact" else held.lstat("d/f"))
        controls = [_checked_by_name(arena) for _ in range(2)]
        monkeypatch.undo()
        if swap.link:
            swap.flip()
    leaked = [st for st in seen if (st.st_dev, st.st_ino) == (outside.st_dev, outside.st_ino)]
    assert not leaked, f"{backend}: {len(leaked)} of {len(seen)} looks reported the file outside"
    assert any(st is not None and st.st_ino == outside.st_ino for st in controls), "the control never leaked"


def test_opens_under_a_flipping_directory_never_return_the_secret(backend: str, arena: Arena) -> None:
    """`ws/d` swaps (atomically) with a link to a directory outside holding a same-named secret. The `dir_fd` back
    ends never pass through the link; the portable one proves the directories before and after its look at the
    file. None returns the secret; the by-name way (resolve, check, open) does in the same race."""
    named = arena.ws / "d" / "f"
    n: Counter[str] = Counter()
    with Flipper("dir", arena.ws / "d", arena.outside / "dir"):
        for _ in _rounds(3000, lambda: n["read"] > 0):
            try:
                fd = safefs.open_exact(named)
            except (Changed, FileNotFoundError, NotADirectoryError):
                continue
            try:
                data = os.read(fd, 100)
            finally:
                os.close(fd)
            n["read"] += 1
            n["leaked"] += data == SECRET

        def by_name() -> bool:
            try:
                return os.path.realpath(named).startswith(f"{arena.ws}/") and named.read_bytes() == SECRET
            except OSError:
                return False

        control = _until(by_name)
    assert n["leaked"] == 0 and n["read"] > 0, n
    assert control, "the control never leaked: the race did not happen"


def test_writes_under_a_flipping_directory_change_nothing_outside(backend: str, arena: Arena) -> None:
    """The same swap under `write_exact`: nothing outside changes or appears, ever: the file out there keeps its
    content and no temp file is left beside it. The `dir_fd` back ends create and rename in the opened parent;
    the portable one (forced here: what Windows runs, but for the held parent's steps) creates its temp file and
    renames it in the parent it proved and holds (`portable.Pinned.hold`): a rename by name looks its two paths up
    one after the other, and a directory swapped in between once sent a proven temp file over the file outside
    (7 of 203,224 writes here, before). The portable back end runs `WRITE_ROUNDS` writes (a few seconds), the
    rest 600. Two controls in the same race must do the damage: a write by name after a check, and the old
    portable step (the parent proven by name just before a rename by name)."""
    named = arena.ws / "d" / "f"
    victim = arena.outside / "dir" / "f"
    n: Counter[str] = Counter()
    rounds = WRITE_ROUNDS if backend == "portable" else 600
    chain = portable.chain_of(str(arena.ws), ["d"], str(named))  # the directory the flipper swaps in and out
    with Flipper("dir", arena.ws / "d", arena.outside / "dir"):
        for i in _rounds(rounds, lambda: n["refused"] > 0 and (n["wrote"] > 0 or backend == "portable")):
            try:
                safefs.write_exact(named, b"ours %d\n" % i)
            except (Changed, safefs.WrittenElsewhere, FileNotFoundError, NotADirectoryError):
                n["refused"] += 1
                continue
            n["wrote"] += 1
        assert victim.read_bytes() == SECRET, n  # before the controls touch it
        planted = arena.outside / "dir" / "g"

        def by_name() -> bool:
            try:
                if os.path.realpath(arena.ws / "d" / "g").startswith(f"{arena.ws}/"):
                    (arena.ws / "d" / "g").write_bytes(b"planted\n")
            except OSError:
                pass
            return planted.exists()

        control = _until(by_name)

        def proven_then_renamed_by_name() -> bool:
            temp = arena.ws / "d" / ".control.tmp"
            try:
                temp.write_bytes(b"renamed\n")
                portable.same_chain(chain, str(named))
                os.replace(temp, named)
            except OSError:
                # the temp file may have landed through the link, outside: the control's own file, not the write's
                for left in (temp, arena.ws / ".flip-other" / ".control.tmp", arena.outside / "dir" / ".control.tmp"):
                    left.unlink(missing_ok=True)
            return victim.read_bytes() != SECRET

        renamed = _until(proven_then_renamed_by_name)
    assert control, "the control never wrote outside: the race did not happen"
    assert renamed, "the rename control never landed outside: the race did not happen"
    planted.unlink()
    (arena.outside / "dir" / ".control.tmp").unlink(missing_ok=True)  # a control's temp left by its last round
    victim.write_bytes(SECRET)
    # the race reached the writes; the dir_fd back ends wrote whenever the directory was in place at the open,
    # the portable one only when it was in place at each of its looks (rare here: it refuses instead)
    assert n["refused"] > 0 and (n["wrote"] > 0 or backend == "portable"), n
    if (arena.ws / "d").is_symlink():  # the flipper stopped with the link in place: put the directory back
        (arena.ws / "d").unlink()
        (arena.ws / ".flip-other").rename(arena.ws / "d")
    safefs.write_exact(named, b"after\n")  # and it writes once the tree holds still
    assert named.read_bytes() == b"after\n"
    extra = {p.name: p.read_bytes() for p in (arena.outside / "dir").iterdir() if p.name != "f"}
    assert extra == {}, (n, extra)


@pytest.mark.parametrize("how", ["open_exact", "Beneath.open", "stat_exact", "Beneath.lstat"])
def test_an_attacker_that_sees_each_call_coming_gets_nothing_outside(
    backend: str, arena: Arena, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The strongest attacker: the directory whenever the directory is looked at, the link whenever a name in it
    is. Against the looks by name it won every time, opens too (the proof of the handle's identity: it showed the
    link to the look before the open, to the open and to the look after). Through the directories, or with them
    held, it gets nothing; the control (the by-name way) does."""
    outside = (arena.outside / "dir" / "f").stat()
    got: list[tuple[int, int]] = []
    with safefs.Beneath(arena.ws) as held:
        swap = _SwapEveryCall(arena, monkeypatch, start_as_link=False, oracle=True)
        for _ in range(5):
            with contextlib.suppress(Changed, FileNotFoundError, NotADirectoryError):
                if how in ("open_exact", "Beneath.open"):
                    fd = safefs.open_exact(arena.ws / "d" / "f") if how == "open_exact" else held.open("d/f")
                    st = os.fstat(fd)
                    os.close(fd)
                else:
                    st = safefs.stat_exact(arena.ws / "d" / "f") if how == "stat_exact" else held.lstat("d/f")
                got.append((st.st_dev, st.st_ino))
        control = _checked_by_name(arena)
        monkeypatch.undo()
        if swap.link:
            swap.flip()
    leaked = got.count((outside.st_dev, outside.st_ino))
    assert not leaked, f"{backend} {how}: {leaked} of {len(got)} reached the file outside"
    inside = (arena.ws / "d" / "f").stat()
    assert (inside.st_dev, inside.st_ino) in got, f"{backend} {how}: never reached the file inside"
    assert control is not None and control.st_ino == outside.st_ino
