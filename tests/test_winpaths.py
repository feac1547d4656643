"""Windows paths where the bridge judges paths (bridge/winpaths.py), proven here with `PureWindowsPath` and `ntpath`:
drive letters and backslashes, Git Bash's `/c/...`, Claude Code's rule syntax (`//c/**/.env`: a Windows path is
matched in POSIX form, `/c/Users/alice`), containment without case. Each Windows case has its POSIX control."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

import pytest
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from bridge.permissions.containment import Workspace
from bridge.winpaths import inside, native_form, posix_form, rule_base, rule_regex, rule_relative

W = PureWindowsPath


@pytest.mark.parametrize(
    ("windows", "posix"),
    [
        ("C:\\Users\\alice\\proj\\.env", "/c/Users/alice/proj/.env"),
        ("c:/Users/alice", "/c/Users/alice"),
        ("D:\\", "/d"),
        ("\\\\server\\share\\x.txt", "//server/share/x.txt"),
        ("/already/posix", "/already/posix"),
    ],
)
def test_the_posix_form_rules_see(windows: str, posix: str) -> None:
    assert posix_form(windows) == posix


@pytest.mark.parametrize(
    ("given", "native"),
    [
        ("/c/Users/alice/x.py", "C:\\Users\\alice\\x.py"),  # Git Bash's form, after a Bash call
        ("/d", "D:\\"),
        ("C:/Users/alice/../bob", "C:\\Users\\bob"),
        ("C:\\Users\\alice", "C:\\Users\\alice"),
        ("/cd/x", "\\cd\\x"),  # not a drive: one letter only
    ],
)
def test_paths_the_model_sends_become_what_windows_knows(given: str, native: str) -> None:
    assert native_form(given, windows=True) == native
    assert native_form(given, windows=False) == given  # the control: elsewhere nothing changes


def compile_rule(spec: str, *, windows: bool) -> tuple[PureWindowsPath | PurePosixPath, GitIgnoreSpecPattern]:
    """An absolute `//` rule as rules.compile_path_specifier compiles it (base from rule_base, gitignore pattern)."""
    base, pattern = rule_base(spec.removeprefix("//"), windows=windows)
    anchored = pattern if "/" not in pattern or pattern.startswith("**/") else "/" + pattern
    return base, GitIgnoreSpecPattern(anchored)  # type: ignore[return-value]


def matches(spec: str, path: PureWindowsPath | PurePosixPath, *, windows: bool) -> bool:
    base, compiled = compile_rule(spec, windows=windows)
    relative = rule_relative(path, base)
    assert compiled.regex is not None
    return relative is not None and rule_regex(compiled.regex, windows=windows).match(relative) is not None


def test_claude_codes_rule_syntax_for_a_drive() -> None:
    assert rule_base("c/Users/alice/**", windows=True) == (W("C:\\"), "Users/alice/**")
    assert matches("//c/**/.env", W("C:\\Users\\alice\\proj\\.env"), windows=True)
    assert matches("//c/**/.env", W("c:/work/.env"), windows=True)  # the drive letter's case does not matter
    assert not matches("//c/**/.env", W("D:\\work\\.env"), windows=True)  # another drive
    assert matches("//c/Users/alice/secrets/**", W("C:\\USERS\\Alice\\secrets\\key.pem"), windows=True)


def test_a_rule_without_a_drive_holds_on_every_drive() -> None:
    assert rule_base("**/.env", windows=True) == (W("\\"), "**/.env")
    for path in (W("C:\\a\\.env"), W("E:\\deep\\down\\.env")):
        assert matches("//**/.env", path, windows=True)
    assert not matches("//**/.env", W("C:\\a\\env"), windows=True)


def test_on_posix_the_same_rules_are_what_they_were() -> None:
    """The control: `//` is the file system's root, and paths compare with case."""
    assert rule_base("c/x", windows=False) == (PurePosixPath("/"), "c/x")
    assert matches("//home/**/.env", PurePosixPath("/home/alice/.env"), windows=False)
    assert not matches("//home/**/.env", PurePosixPath("/HOME/alice/.env"), windows=False)
    assert rule_relative(PurePosixPath("/a/b"), PurePosixPath("/a/b")) is None  # the base itself: no match


@pytest.mark.parametrize(
    ("path", "root", "inside_it"),
    [
        ("C:\\Users\\alice\\proj\\src\\x.py", "C:\\Users\\alice\\proj", True),
        ("c:/users/ALICE/proj", "C:\\Users\\alice\\proj", True),  # case and separators don't matter
        ("C:\\Users\\alice\\project", "C:\\Users\\alice\\proj", False),  # a prefix is not a parent
        ("D:\\Users\\alice\\proj", "C:\\Users\\alice\\proj", False),  # another drive
        ("\\\\srv\\share\\proj\\x", "\\\\srv\\share\\proj", True),  # UNC
    ],
)
def test_containment_with_drive_letters(path: str, root: str, inside_it: bool) -> None:
    assert inside(path, root, windows=True) is inside_it
    roots = (W(root),)
    assert Workspace(roots).contains(W(path)) is inside_it  # type: ignore[arg-type]  # the engine's own check


def test_containment_on_posix_keeps_case() -> None:
    assert inside("/home/alice/proj/x", "/home/alice/proj", windows=False)
    assert not inside("/home/alice/PROJ/x", "/home/alice/proj", windows=False)
    assert not inside("/home/alice/project", "/home/alice/proj", windows=False)
