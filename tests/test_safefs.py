"""bridge/safefs: exact opens that a symlink flipped in cannot redirect, on both back ends (the kernel's
`openat2` and the `O_NOFOLLOW` walk), and resolution that follows links only while they stay inside the roots.

Every refusal is checked against its side effect: the secret outside is not returned, nothing is created
outside, and the control (plain `open`, which follows links) shows the effect is real."""

from __future__ import annotations

import errno
import ntpath
import os
import posixpath
import stat
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge import safefs
from bridge.safefs import Beneath, Changed, LinkOut, NotRegular, Outside, TooBig
from tests.file_races import BACKENDS, Flipper, use_backend

SECRET = b"SECRET-KEY-MATERIAL\n"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    return use_backend(str(request.param), monkeypatch)


@dataclass
class Tree:
    ws: Path
    outside: Path
    secret: Path


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "sub").mkdir(parents=True)
    outside.mkdir()
    secret = outside / "id_rsa"
    secret.write_bytes(SECRET)
    (ws / "a.txt").write_text("alpha\n")
    (ws / "sub" / "b.txt").write_text("beta\n")
    return Tree(Path(os.path.realpath(ws)), Path(os.path.realpath(outside)), Path(os.path.realpath(secret)))


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


# ---- open_exact ---------------------------------------------------------------------------------------------


def test_open_exact_opens_a_link_free_path(backend: str, tree: Tree) -> None:
    assert _read(safefs.open_exact(tree.ws / "sub" / "b.txt")) == b"beta\n"


def test_open_exact_refuses_a_final_symlink_that_plain_open_follows(backend: str, tree: Tree) -> None:
    link = tree.ws / "key"
    link.symlink_to(tree.secret)
    assert link.read_bytes() == SECRET  # the control: by name, the link leads to the secret
    with pytest.raises(Changed):
        safefs.open_exact(link)
    with pytest.raises(Changed):  # a handle-only open of a link names the link: refused too
        safefs.open_exact(link, safefs.O_PATH or os.O_RDONLY)


def test_open_exact_refuses_a_directory_that_became_a_symlink(backend: str, tree: Tree) -> None:
    (tree.outside / "b.txt").write_bytes(SECRET)
    os.rename(tree.ws / "sub", tree.ws / "sub.old")
    (tree.ws / "sub").symlink_to(tree.outside, target_is_directory=True)
    assert (tree.ws / "sub" / "b.txt").read_bytes() == SECRET  # the control
    with pytest.raises(Changed):
        safefs.open_exact(tree.ws / "sub" / "b.txt")


def test_o_creat_on_a_dangling_symlink_creates_nothing_outside(backend: str, tree: Tree) -> None:
    planted = tree.outside / "planted"
    (tree.ws / "new.txt").symlink_to(planted)
    with pytest.raises(Changed):
        safefs.open_exact(tree.ws / "new.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    assert not planted.exists()
    os.close(os.open(tree.ws / "new.txt", os.O_WRONLY | os.O_CREAT, 0o644))  # the control: open(2) creates it
    assert planted.exists()


def test_magic_links_in_proc_are_not_followed(backend: str, tree: Tree) -> None:
    fd = os.open(tree.secret, os.O_RDONLY)
    try:
        magic = f"/proc/self/fd/{fd}"
        assert Path(magic).read_bytes() == SECRET  # the control
        with pytest.raises(Changed):
            safefs.open_exact(magic)
        (tree.ws / "m").symlink_to(magic)
        with pytest.raises(LinkOut):
            safefs.resolve(tree.ws / "m", [tree.ws])
    finally:
        os.close(fd)


def test_open_exact_takes_only_normalized_absolute_paths(backend: str, tree: Tree) -> None:
    for bad in ("relative/x", f"{tree.ws}/../outside/id_rsa", f"{tree.ws}/./a.txt"):
        with pytest.raises(ValueError):
            safefs.open_exact(bad)


# ---- Beneath --------------------------------------------------------------------------------------------------


def test_beneath_opens_relative_paths_and_refuses_links_and_dotdot(backend: str, tree: Tree) -> None:
    (tree.ws / "sub" / "k").symlink_to(tree.secret)
    with Beneath(tree.ws) as ws:
        assert _read(ws.open("sub/b.txt")) == b"beta\n"
        assert stat.S_ISREG(ws.lstat("a.txt").st_mode)
        assert stat.S_ISLNK(ws.lstat("sub/k").st_mode)  # reported as a link, not followed
        with pytest.raises(Changed):
            ws.open("sub/k")
        with pytest.raises(ValueError):
            ws.open("../outside/id_rsa")
        with pytest.raises(ValueError):
            ws.open("/etc/passwd")


def test_beneath_pins_the_directory_it_opened(backend: str, tree: Tree) -> None:
    """The directory is held by fd: renaming it and putting a link in its place does not move what opens. The
    portable back end has no fd to open from (no `dir_fd`): it cannot follow the moved directory, so it refuses
    (the directory named is not the one pinned) — and still never reads through the link."""
    with Beneath(tree.ws / "sub") as sub:
        os.rename(tree.ws / "sub", tree.ws / "moved")
        (tree.ws / "sub").symlink_to(tree.outside, target_is_directory=True)
        (tree.outside / "b.txt").write_bytes(SECRET)
        assert (tree.ws / "sub" / "b.txt").read_bytes() == SECRET  # the control: by name, the link leads out
        if backend != "portable":
            assert _read(sub.open("b.txt")) == b"beta\n"
        else:
            with pytest.raises(Changed):
                sub.open("b.txt")
            with pytest.raises(Changed):
                sub.lstat("b.txt")


# ---- resolve / open_beneath -----------------------------------------------------------------------------------


def test_links_inside_the_roots_are_followed(backend: str, tree: Tree) -> None:
    (tree.ws / "alias").symlink_to("sub/b.txt")
    (tree.ws / "d").symlink_to("sub", target_is_directory=True)
    assert safefs.resolve(tree.ws / "alias", [tree.ws]) == str(tree.ws / "sub" / "b.txt")
    opened = safefs.open_beneath(tree.ws / "d" / "b.txt", [tree.ws])
    assert opened.real == str(tree.ws / "sub" / "b.txt") and _read(opened.fd) == b"beta\n"


def test_a_link_out_is_refused_and_the_secret_not_returned(backend: str, tree: Tree) -> None:
    (tree.ws / "key").symlink_to(tree.secret)
    (tree.ws / "esc").symlink_to(tree.outside, target_is_directory=True)
    for named in (tree.ws / "key", tree.ws / "esc" / "id_rsa"):
        with pytest.raises(LinkOut) as caught:
            safefs.open_beneath(named, [tree.ws])
        assert "leads outside" in str(caught.value)


def test_dotdot_after_a_link_is_the_parent_of_the_target_as_the_kernel_says(backend: str, tree: Tree) -> None:
    (tree.ws / "sub" / "deep").mkdir()
    (tree.ws / "l").symlink_to(tree.ws / "sub" / "deep", target_is_directory=True)
    assert safefs.resolve(f"{tree.ws}/l/../b.txt", [tree.ws]) == os.path.realpath(f"{tree.ws}/l/../b.txt")
    (tree.ws / "o").symlink_to(tree.outside, target_is_directory=True)
    with pytest.raises(LinkOut):  # o/.. is the outside's parent: the walk never goes there
        safefs.resolve(f"{tree.ws}/o/../ws/a.txt", [tree.ws])


def test_a_path_named_outside_is_refused_untouched(backend: str, tree: Tree) -> None:
    with pytest.raises(Outside):
        safefs.resolve(tree.secret, [tree.ws])
    with pytest.raises(Outside):  # the same answer whether it exists or not: nothing was looked at
        safefs.resolve(tree.outside / "missing", [tree.ws])


def test_a_missing_tail_is_kept_like_realpath(backend: str, tree: Tree) -> None:
    named = tree.ws / "new" / "dir" / "f.txt"
    assert safefs.resolve(named, [tree.ws]) == str(named)
    assert safefs.resolve(f"{tree.ws}/new/../a.txt", [tree.ws]) == str(tree.ws / "a.txt")
    below_a_file = tree.ws / "a.txt" / "x"
    assert safefs.resolve(below_a_file, [tree.ws]) == os.path.realpath(below_a_file) == str(below_a_file)
    with pytest.raises(NotADirectoryError):
        safefs.open_exact(below_a_file)


def test_a_link_loop_ends(backend: str, tree: Tree) -> None:
    (tree.ws / "l1").symlink_to("l2")
    (tree.ws / "l2").symlink_to("l1")
    with pytest.raises(OSError) as caught:
        safefs.resolve(tree.ws / "l1", [tree.ws])
    assert caught.value.errno == errno.ELOOP


def test_a_root_named_through_a_link_is_reached(backend: str, tree: Tree, tmp_path: Path) -> None:
    alias = tmp_path / "alias-of-ws"
    alias.symlink_to(tree.ws, target_is_directory=True)
    assert safefs.resolve(alias / "a.txt", [alias]) == str(tree.ws / "a.txt")


def test_anywhere_allows_every_place_and_no_empty_list_does(backend: str, tree: Tree) -> None:
    """The file tools resolve with `ANYWHERE` (their containment is the permission step's): a link anywhere is
    followed to its real path. An empty list of roots is not that: it allows nothing."""
    (tree.ws / "key").symlink_to(tree.secret)
    assert safefs.resolve(tree.ws / "key", safefs.ANYWHERE) == str(tree.secret)
    opened = safefs.open_beneath(tree.ws / "key", safefs.ANYWHERE)
    assert opened.real == str(tree.secret) and _read(opened.fd) == SECRET
    with pytest.raises(Outside):
        safefs.resolve(tree.ws / "a.txt", [])


def test_windows_drives_are_judged_by_drive_and_anywhere_holds_them_all() -> None:
    """Windows' `/` is the current drive's root (`os.path.realpath("/")` is `C:\\` there): roots of `["/"]`
    would call `D:\\x` outside. `ANYWHERE` holds every drive and share; a real root holds its own drive only,
    names compared ignoring case. (Windows' rules as pure functions: nothing here ran on Windows.)"""
    assert safefs.inside("D:\\data\\x.txt", safefs.ANYWHERE, ntpath)
    assert safefs.inside("\\\\srv\\share\\x", safefs.ANYWHERE, ntpath)
    assert not safefs.inside("D:\\data\\x.txt", ["C:\\"], ntpath)  # the control: one drive's root
    assert safefs.inside("d:\\DATA\\x.txt", ["D:\\"], ntpath)
    assert safefs.inside("C:\\Work\\App\\x", ["c:\\work\\app"], ntpath)
    assert not safefs.inside("C:\\Work\\Apple", ["C:\\Work\\App"], ntpath)
    assert not safefs.inside("D:\\Work\\App\\x", ["C:\\Work\\App"], ntpath)
    assert safefs.inside("/anything", safefs.ANYWHERE, posixpath) and not safefs.inside("/x", [], posixpath)


# ---- read_regular ---------------------------------------------------------------------------------------------


def test_read_regular_reads_a_small_regular_file(backend: str, tree: Tree) -> None:
    assert safefs.read_regular(tree.ws, tree.ws / "a.txt", 100) == b"alpha\n"


def test_read_regular_refusals(backend: str, tree: Tree) -> None:
    (tree.ws / "key").symlink_to(tree.secret)
    os.mkfifo(tree.ws / "fifo")  # no writer: a plain open would wait forever
    (tree.ws / "big").write_bytes(b"x" * 101)
    with pytest.raises(LinkOut):
        safefs.read_regular(tree.ws, tree.ws / "key", 100)
    with pytest.raises(NotRegular):
        safefs.read_regular(tree.ws, tree.ws / "fifo", 100)
    with pytest.raises(NotRegular):
        safefs.read_regular(tree.ws, tree.ws / "sub", 100)
    with pytest.raises(TooBig):
        safefs.read_regular(tree.ws, tree.ws / "big", 100)
    with pytest.raises(FileNotFoundError):
        safefs.read_regular(tree.ws, tree.ws / "nope", 100)
    with pytest.raises(Outside):
        safefs.read_regular(tree.ws, tree.secret, 100)


# ---- writes ---------------------------------------------------------------------------------------------------


def test_write_exact_creates_and_replaces_keeping_the_mode(backend: str, tree: Tree) -> None:
    target = tree.ws / "a.txt"
    target.chmod(0o751)
    done = safefs.write_exact(target, b"new\n")
    assert target.read_bytes() == b"new\n" and stat.S_IMODE(target.stat().st_mode) == 0o751 and done.replaced
    fresh = tree.ws / "sub" / "c.txt"
    assert not safefs.write_exact(fresh, b"c", new_mode=0o640).replaced
    assert fresh.read_bytes() == b"c" and stat.S_IMODE(fresh.stat().st_mode) == 0o640
    with pytest.raises(FileExistsError):
        safefs.write_exact(fresh, b"again", create_only=True)
    with pytest.raises(IsADirectoryError):
        safefs.write_exact(tree.ws / "sub", b"x")
    assert [p.name for p in (tree.ws / "sub").iterdir() if p.name.endswith(".tmp")] == []


def test_write_exact_never_writes_through_a_link(backend: str, tree: Tree) -> None:
    target = tree.ws / "a.txt"
    target.unlink()
    target.symlink_to(tree.secret)
    with pytest.raises(Changed):
        safefs.write_exact(target, b"pwned")
    assert tree.secret.read_bytes() == SECRET


def test_write_exact_in_a_parent_that_became_a_link_writes_nothing_outside(backend: str, tree: Tree) -> None:
    os.rename(tree.ws / "sub", tree.ws / "sub.old")
    (tree.ws / "sub").symlink_to(tree.outside, target_is_directory=True)
    with pytest.raises(Changed):
        safefs.write_exact(tree.ws / "sub" / "planted", b"pwned")
    with pytest.raises(Changed):
        safefs.make_dirs_exact(tree.ws / "sub" / "deeper")
    assert sorted(p.name for p in tree.outside.iterdir()) == ["id_rsa"]


def test_make_dirs_exact_makes_the_missing_chain(backend: str, tree: Tree) -> None:
    safefs.make_dirs_exact(tree.ws / "x" / "y" / "z")
    assert (tree.ws / "x" / "y" / "z").is_dir()
    safefs.make_dirs_exact(tree.ws / "x" / "y" / "z")  # idempotent


# ---- a real race ------------------------------------------------------------------------------------------------


def test_reads_under_a_flipping_name_never_return_the_secret(backend: str, tree: Tree) -> None:
    """A separate process flips `ws/flip` between a regular file and a link to the secret; `read_regular` never
    returns the secret, while check-then-open-by-name does in the same race (tried until it leaks)."""
    name = tree.ws / "flip"
    (tree.ws / ".real").write_text("harmless\n")
    leaked = read = 0
    with Flipper("file", name, tree.secret, tree.ws / ".real"):
        for _ in range(1500):
            try:
                data = safefs.read_regular(tree.ws, name, 1000)
            except (LinkOut, Changed, FileNotFoundError):
                continue
            read += 1
            leaked += data == SECRET
        by_name = 0
        deadline = time.monotonic() + 20
        while not by_name and time.monotonic() < deadline:  # the control, in the same race
            try:
                if os.path.realpath(name).startswith(str(tree.ws) + "/"):
                    by_name += name.read_bytes() == SECRET
            except OSError:
                pass
    assert leaked == 0 and read > 0, (leaked, read)
    assert by_name > 0, "the control never leaked: the race did not happen, so this proved nothing"


# ---- NameWatch -------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not safefs.NameWatch.available(), reason="inotify is Linux's")
def test_a_name_watch_sees_its_names_change_and_nothing_else(tree: Tree) -> None:
    trail: list[tuple[str, str]] = []
    assert safefs.resolve(tree.ws / "sub" / "b.txt", [tree.ws], trail=trail) == str(tree.ws / "sub" / "b.txt")
    assert (str(tree.ws), "sub") in trail and (str(tree.ws / "sub"), "b.txt") in trail
    with safefs.NameWatch(trail) as watch:
        (tree.ws / "sub" / "other.txt").write_text("x")  # another name in a watched directory
        (tree.ws / "a.txt").write_text("changed")
        assert not watch.changed()
        os.replace(tree.ws / "sub" / "other.txt", tree.ws / "sub" / "b.txt")  # the watched name replaced
        assert watch.changed()
    with safefs.NameWatch(trail) as watch:
        os.rename(tree.ws / "sub", tree.ws / "moved")  # a directory on the way
        assert watch.changed()
