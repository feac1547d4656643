"""Grep with real ripgrep over a real git work tree: every field, the caps and their notes, errors."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from bridge.abort import Abort
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.tools.base import ToolContext, ToolError, ToolResult
from bridge.tools.grep import DEFAULT_HEAD_LIMIT, MAX_CONTENT_CHARS, GrepInput, GrepTool
from bridge.tools.paths import read_guard_of
from bridge.tools.ripgrep import split_globs
from tests.permission_calls import GRAMMAR, decide
from tests.poll import poll

GREP = GrepTool()


def make_repo(root: Path, files: dict[str, str]) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    make_repo(
        tmp_path,
        {
            "app.py": "import os\n\ndef main():\n    print('Hello')\n    return 0\n",
            "lib/util.py": "def helper():\n    return 'hello world'\n",
            "web/index.ts": "const hello = 1;\n",
            "web/view.tsx": "export const Hello = () => null;\n",
            "README.md": "# hello\n",
            ".github/ci.yml": "run: hello\n",
            ".gitignore": "build/\nsecret.py\n",
            "build/out.py": "hello = 'built'\n",
            "secret.py": "hello = 'ignored'\n",
        },
    )
    return tmp_path


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data")


async def grep(root: Path, **raw: Any) -> ToolResult:
    data = GrepInput.model_validate(raw)
    ctx = ctx_for(root)
    problem = await GREP.validate_input(data, ctx) or await GREP.validate_target(data, ctx)  # as the loop does
    if problem:
        raise ToolError(problem)
    return await GREP.call(data, ctx)


def text(result: ToolResult) -> str:
    assert isinstance(result.content, str)
    return result.content


def test_input_model_aliases_and_schema() -> None:
    data = GrepInput.model_validate({"pattern": "x", "-A": 1, "-B": 2, "-C": 3, "-n": False, "-i": True, "-o": True})
    assert (data.after, data.before, data.around, data.line_numbers, data.case_insensitive, data.only_matching) == (
        1,
        2,
        3,
        False,
        True,
        True,
    )
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"path": "."})
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"pattern": "x", "output_mode": "lines"})
    with pytest.raises(ValidationError):
        GrepInput.model_validate({"pattern": "x", "-A": -1})
    schema = GREP.schema()["input_schema"]
    assert {"-A", "-B", "-C", "-n", "-i", "-o", "context", "head_limit", "offset", "multiline"} <= set(
        schema["properties"]
    )
    assert "title" not in str(schema) and schema["required"] == ["pattern"]


def test_split_globs() -> None:
    assert split_globs("*.ts *.tsx") == ["*.ts", "*.tsx"]
    assert split_globs("*.ts,*.tsx") == ["*.ts", "*.tsx"]
    assert split_globs("*.{ts,tsx}") == ["*.{ts,tsx}"]


async def test_files_with_matches_newest_first_respecting_gitignore(repo: Path) -> None:
    os.utime(repo / "lib/util.py", (2_000_000_000, 2_000_000_000))
    os.utime(repo / "app.py", (1_000_000_000, 1_000_000_000))
    lines = text(await grep(repo, pattern="hello", **{"-i": True})).splitlines()
    assert lines[0] == "Found 6 files"
    assert lines[1] == "lib/util.py" and lines[-1] == "app.py"
    assert ".github/ci.yml" in lines  # hidden files are searched
    assert "secret.py" not in lines and "build/out.py" not in lines  # .gitignore is respected
    assert not any(line.startswith(".git/") for line in lines)


async def test_content_mode_with_line_numbers_by_default(repo: Path) -> None:
    assert text(await grep(repo, pattern="Hello", output_mode="content", glob="*.py")) == "app.py:4:    print('Hello')"
    no_numbers = await grep(repo, pattern="Hello", output_mode="content", glob="*.py", **{"-n": False})
    assert text(no_numbers) == "app.py:    print('Hello')"


async def test_context_lines(repo: Path) -> None:
    after = text(await grep(repo, pattern="def main", output_mode="content", **{"-A": 1}))
    assert after == "app.py:3:def main():\napp.py-4-    print('Hello')"
    before = text(await grep(repo, pattern="def main", output_mode="content", **{"-B": 1}))
    assert before == "app.py-2-\napp.py:3:def main():"
    around = text(await grep(repo, pattern="print", output_mode="content", **{"-C": 1}))
    assert around.splitlines() == ["app.py-3-def main():", "app.py:4:    print('Hello')", "app.py-5-    return 0"]
    assert text(await grep(repo, pattern="print", output_mode="content", context=1)) == around


async def test_case_insensitive_and_only_matching(repo: Path) -> None:
    assert "No matches" in text(await grep(repo, pattern="HELLO WORLD"))
    found = await grep(repo, pattern="HELLO WORLD", output_mode="content", **{"-i": True, "-o": True})
    assert text(found) == "lib/util.py:2:hello world"


async def test_glob_and_type_filters(repo: Path) -> None:
    braces = text(await grep(repo, pattern="ello", glob="*.{ts,tsx}", **{"-i": True})).splitlines()[1:]
    assert sorted(braces) == ["web/index.ts", "web/view.tsx"]
    several = text(await grep(repo, pattern="ello", glob="*.md *.ts", **{"-i": True})).splitlines()[1:]
    assert sorted(several) == ["README.md", "web/index.ts"]
    typed = text(await grep(repo, pattern="ello", type="py", **{"-i": True})).splitlines()[1:]
    assert sorted(typed) == ["app.py", "lib/util.py"]


async def test_count_mode(repo: Path) -> None:
    (repo / "many.txt").write_text("x\nx\nx\n")
    result = text(await grep(repo, pattern="x", output_mode="count", glob="*.txt"))
    assert result == "many.txt:3\n\nFound 3 matching lines in 1 files"


async def test_multiline(repo: Path) -> None:
    assert "No matches" in text(await grep(repo, pattern=r"main\(\):.*print"))
    result = await grep(repo, pattern=r"main\(\):.*print", multiline=True, output_mode="content")
    assert text(result).splitlines() == ["app.py:3:def main():", "app.py:4:    print('Hello')"]


async def test_file_list_is_capped_at_250_with_a_paging_note(tmp_path: Path) -> None:
    make_repo(tmp_path, {f"f{i:03}.txt": "needle\n" for i in range(300)})
    first = text(await grep(tmp_path, pattern="needle"))
    assert first.splitlines()[0] == "Found 300 files (showing 1-250, newest first)"
    assert len(first.splitlines()) == 1 + DEFAULT_HEAD_LIMIT + 2
    assert "Pass offset=250 for more" in first
    rest = text(await grep(tmp_path, pattern="needle", offset=250))
    assert len([line for line in rest.splitlines() if line.endswith(".txt")]) == 50
    assert "truncated" not in rest
    everything = text(await grep(tmp_path, pattern="needle", head_limit=0))
    assert len([line for line in everything.splitlines() if line.endswith(".txt")]) == 300


async def test_content_paging_is_stable_and_says_what_was_cut(tmp_path: Path) -> None:
    make_repo(tmp_path, {"a.txt": "".join(f"hit {i}\n" for i in range(1, 21))})
    page = text(await grep(tmp_path, pattern="hit", output_mode="content", head_limit=5, offset=5))
    assert page.splitlines()[:5] == [f"a.txt:{i}:hit {i}" for i in range(6, 11)]
    assert "Pass offset=10 for more" in page


async def test_content_is_bounded_in_characters(tmp_path: Path) -> None:
    make_repo(tmp_path, {"wide.txt": ("match " + "y" * 300 + "\n") * 500})
    result = text(await grep(tmp_path, pattern="match", output_mode="content", head_limit=0))
    assert len(result) < MAX_CONTENT_CHARS + 500
    assert f"output capped at {MAX_CONTENT_CHARS} characters" in result


async def test_long_lines_are_shortened_by_rg(tmp_path: Path) -> None:
    make_repo(tmp_path, {"min.js": "var a='needle';" + "x" * 5000 + "\n"})
    line = text(await grep(tmp_path, pattern="needle", output_mode="content"))
    assert len(line) < 700 and "omitted" in line


async def test_paths_relative_to_cwd_or_absolute_outside(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert text(await grep(repo, pattern="helper", path="lib")).splitlines()[1:] == ["lib/util.py"]
    assert text(await grep(repo, pattern="helper", path=str(repo / "lib/util.py"))).splitlines()[1:] == ["lib/util.py"]
    other = tmp_path_factory.mktemp("other")
    (other / "o.txt").write_text("helper\n")
    assert text(await grep(repo, pattern="helper", path=str(other))).splitlines()[1:] == [str(other / "o.txt")]


async def test_errors_the_model_can_act_on(repo: Path) -> None:
    with pytest.raises(ToolError, match="Path does not exist"):
        await grep(repo, pattern="x", path="missing")
    with pytest.raises(ToolError, match=r"regex parse error(.|\n)*escape literal"):
        await grep(repo, pattern="interface{")
    with pytest.raises(ToolError, match="unrecognized file type"):
        await grep(repo, pattern="x", type="nosuchtype")
    assert text(await grep(repo, pattern="zzz_not_there")) == "No matches found"


async def test_title_and_flags(repo: Path) -> None:
    data = GrepInput(pattern="TODO", path="/repo/src", glob="*.py")
    assert GREP.user_facing_title(data) == 'Grep "TODO" in /repo/src (*.py)'
    assert GREP.is_read_only(data) and GREP.is_concurrency_safe(data)
    assert GREP.kind == "search" and GREP.interrupt_behavior == "cancel"


def rg_pids(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(name))
            except OSError:
                continue
    return found


async def test_cancellation_kills_rg(tmp_path: Path) -> None:
    fifo = tmp_path / "blocking-fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # a writer that never writes: rg reads it for ever, a search that never ends
    data = GrepInput(pattern="x", path=str(fifo))
    ctx = ctx_for(tmp_path)
    try:
        async with anyio.create_task_group() as group:

            async def search() -> None:
                await GREP.call(data, ctx)

            group.start_soon(search)
            await poll(lambda: bool(rg_pids("blocking-fifo")))
            group.cancel_scope.cancel()
        await poll(lambda: not rg_pids("blocking-fifo"))
    finally:
        os.close(writer)


IGNORE_FILES = (".gitignore", ".ignore", ".rgignore", "lib/.gitignore", ".git/info/exclude")


@pytest.mark.parametrize("name", IGNORE_FILES)
async def test_a_named_pipe_as_an_ignore_file_does_not_hold_the_search(repo: Path, name: str) -> None:
    """rg opens the ignore files of every folder it walks: a named pipe there (an unpacked archive's, a
    command's) held Grep and Glob until cancelled. It now reads as an empty file, and is left as it was."""
    (repo / name).unlink(missing_ok=True)
    os.mkfifo(repo / name)

    with anyio.fail_after(20):
        found = text(await grep(repo, pattern="helper"))
        listed = await glob_in(repo, "**/*.py")

    assert "lib/util.py" in found
    assert "lib/util.py" in listed and "app.py" in listed
    assert stat.S_ISFIFO(os.lstat(repo / name).st_mode)


async def test_a_named_pipe_above_the_workspace_stops_the_search_and_is_named(tmp_path: Path) -> None:
    """rg also reads the ignore files of the folders above, up to the repository's top: a pipe there is not the
    bridge's to open. The search stops at once and says where."""
    make_repo(tmp_path, {"ws/a.py": "helper = 1\n"})
    os.mkfifo(tmp_path / ".gitignore")
    ws = tmp_path / "ws"

    with anyio.fail_after(20), pytest.raises(ToolError, match=rf"named pipe \(FIFO\) {tmp_path}/\.gitignore"):
        await grep(ws, pattern="helper")
    with anyio.fail_after(20), pytest.raises(ToolError, match="named pipe"):
        await glob_in(ws, "*.py")


async def glob_in(root: Path, pattern: str) -> str:
    from bridge.tools.glob import GlobInput, GlobTool

    tool, data = GlobTool(), GlobInput(pattern=pattern)
    result = await tool.call(data, ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data"))
    assert isinstance(result.content, str)
    return result.content


# --- every result path is checked (issue 9, layer 4) ------------------------------------------------------


def engine_for(root: Path, *, deny: tuple[str, ...] | list[str] = (), mode: Mode = "default") -> PermissionEngine:
    store = SettingsStore(root, user_config_dir=root.parent / f"{root.name}-cfg", claude_home=root.parent / "no-home")
    return PermissionEngine(
        cwd=root, settings=store, grammar=GRAMMAR, mode=mode, session_rules=RuleSet.of(deny=list(deny))
    )


async def guarded_grep(root: Path, engine: PermissionEngine, **raw: Any) -> ToolResult:
    data = GrepInput.model_validate(raw)
    ctx = ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data", read_guard=engine.read_guard())
    problem = await GREP.validate_input(data, ctx) or await GREP.validate_target(data, ctx)  # as the loop does
    if problem:
        raise ToolError(problem)
    decision = decide(engine, "Grep", raw, read_only=True, paths=GREP.permission_paths(data, ctx))
    assert decision.behavior == "allow", decision
    return await GREP.call(data, ctx)


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    make_repo(
        root,
        {
            "app.py": "token = 1\n",
            "secret.txt": "token = hunter2\n",
            "private/keys.txt": "token = k3y\n",
            "docs/a:b.md": "token in a name with a colon\n",
        },
    )
    return root


@pytest.mark.parametrize("mode", ["files_with_matches", "content", "count"])
async def test_read_deny_rules_hide_results_in_every_mode(secrets: Path, mode: str) -> None:
    engine = engine_for(secrets, deny=["Read(secret.txt)", "Read(private/**)"])
    result = await guarded_grep(secrets, engine, pattern="token", output_mode=mode)
    out = text(result)
    assert "app.py" in out and "a:b.md" in out
    assert "secret" not in out and "hunter2" not in out and "private" not in out and "k3y" not in out
    assert "2 files were left out" in out
    assert result.raw_output is not None and result.raw_output["hidden"] == 2


async def test_without_rules_the_same_search_shows_everything(secrets: Path) -> None:
    out = text(await guarded_grep(secrets, engine_for(secrets), pattern="token", output_mode="content"))
    assert "secret.txt:1:token = hunter2" in out and "private/keys.txt:1:token = k3y" in out
    assert "docs/a:b.md:1:token in a name" in out and "left out" not in out


async def test_a_search_of_only_denied_files_says_so(secrets: Path) -> None:
    engine = engine_for(secrets, deny=["Read(secret.txt)"])
    out = text(await guarded_grep(secrets, engine, pattern="hunter2"))
    assert out.startswith("No matches found") and "1 file was left out" in out and "secret" not in out


async def test_context_groups_of_hidden_files_leave_no_separators(secrets: Path) -> None:
    (secrets / "b.py").write_text("x\ntoken = 2\ny\n")
    engine = engine_for(secrets, deny=["Read(secret.txt)", "Read(private/**)"])
    out = text(await guarded_grep(secrets, engine, pattern="token", output_mode="content", **{"-C": 1}))
    body = out.split("\n\n[")[0].splitlines()
    assert body == [
        "app.py:1:token = 1",
        "--",
        "b.py-1-x",
        "b.py:2:token = 2",
        "b.py-3-y",
        "--",
        "docs/a:b.md:1:token in a name with a colon",
    ]
    unnumbered = text(
        await guarded_grep(secrets, engine, pattern="token", output_mode="content", **{"-C": 1, "-n": False})
    )
    assert "b.py-x" in unnumbered and "b.py:token = 2" in unnumbered


async def test_symlinks_out_of_the_workspace_are_not_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "loot.txt").write_text("token = stolen\n")
    root = tmp_path / "ws"
    make_repo(root, {"app.py": "token = 1\n"})
    (root / "link.txt").symlink_to(outside / "loot.txt")
    (root / "dir").symlink_to(outside, target_is_directory=True)
    config = tmp_path / "rgrc"
    config.write_text("--follow\n")  # a ripgrep config that would turn following on is ignored
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    for mode in ("files_with_matches", "content"):
        out = text(await guarded_grep(root, engine_for(root), pattern="token", output_mode=mode))
        assert "stolen" not in out and "loot" not in out and "link.txt" not in out and "app.py" in out


def test_results_whose_real_path_leaves_the_workspace_and_the_root_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link.txt").symlink_to(outside / "x.txt")
    guard = engine_for(root).read_guard()
    assert guard(root / "app.py", root) is None
    assert guard(root / "link.txt", root) == f"{outside / 'x.txt'} is outside the workspace"
    assert guard(outside / "x.txt", outside) is None, "a root the permission step allowed covers its files"
    assert engine_for(root, mode="bypassPermissions").read_guard()(root / "link.txt", root) is None
    denied = engine_for(root, deny=["Read(//" + str(outside).lstrip("/") + "/**)"]).read_guard()
    assert denied(root / "link.txt", root) is not None, "a deny rule matches the resolved path too"
    assert denied(outside / "x.txt", outside) is not None, "and applies inside an allowed root"


async def test_the_default_guard_keeps_results_in_the_workspace_or_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "ws"
    root.mkdir()
    (root / "link.txt").symlink_to(outside / "x.txt")
    guard = read_guard_of(ToolContext(cwd=root, abort=Abort(), data_dir=root / ".data"))
    assert guard(root / "a.py", None) is None and guard(outside / "x.txt", outside) is None
    assert guard(root / "link.txt", root) is not None and guard(outside / "x.txt", None) is not None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pattern", "a\x00b", r"pattern contains a NUL byte.*\\x00"),
        ("pattern", "a\ud800", "lone UTF-16 surrogate"),
        ("glob", "*.py\x00", "glob contains a NUL byte"),
        ("type", "py\x00", "type contains a NUL byte"),
        ("path", "src\x00", "path contains a NUL byte"),
        ("path", "~\x00/x", "path contains a NUL byte"),
        ("path", "/tmp/\udcff\ud800", "lone UTF-16 surrogate"),
        ("path", "/tmp/" + "n" * 300, "at most 255 bytes"),
    ],
)
async def test_invalid_fields_are_a_clear_error_not_an_exception(
    repo: Path, field: str, value: str, message: str
) -> None:
    raw = {"pattern": "x", field: value}
    data = GrepInput.model_validate(raw)
    ctx = ctx_for(repo)
    problem = await GREP.validate_input(data, ctx) or await GREP.validate_target(data, ctx)  # as the loop does
    assert problem is not None and re.search(message, problem), problem
    GREP.permission_paths(data, ctx)  # does not raise
    GREP.locations(data)
    GREP.user_facing_title(data)


def test_the_portable_second_pass_reads_what_the_proven_handle_holds(tmp_path: Path) -> None:
    """Where no descriptor can be handed to rg (Windows: the portable back end), the second pass copies each file
    through its exactly opened fd: a name replaced (by a link to a secret, here) after the open does not change
    what rg reads. The control: a copy by name reads the secret."""
    from bridge import safefs
    from bridge.tools.grep import _copied

    ws = Path(os.path.realpath(tmp_path))
    (ws / "a.txt").write_text("needle inside\n")
    (ws / "secret").write_text("needle SECRET\n")
    fd = safefs.open_exact(ws / "a.txt", safefs.READ_FLAGS)
    try:
        (ws / "flip").symlink_to(ws / "secret")
        os.replace(ws / "flip", ws / "a.txt")  # the name now leads to the secret
        copies = ws / "copies"
        copies.mkdir()
        shown_of = _copied({"a.txt": fd}, str(copies))
    finally:
        os.close(fd)
    [(copy, shown)] = shown_of.items()
    assert shown == "a.txt" and Path(copy).read_text() == "needle inside\n"
    assert (ws / "a.txt").read_text() == "needle SECRET\n"  # the control: by name, the secret


@pytest.mark.parametrize("name", [".gitignore", ".ignore", "lib/.rgignore"])
async def test_an_ignore_file_that_links_to_a_device_stops_the_search_and_says_so(repo: Path, name: str) -> None:
    """Git stores links, so a plain clone can bring `.gitignore -> /dev/zero`: rg read it for ever, gigabytes a
    second into the memory of a process outside the sandbox. Now the search stops at once and names it."""
    (repo / name).unlink(missing_ok=True)
    (repo / name).symlink_to("/dev/zero")

    with anyio.fail_after(20), pytest.raises(ToolError, match="the device /dev/zero through a link"):
        await grep(repo, pattern="helper")
    with anyio.fail_after(20), pytest.raises(ToolError, match="the device /dev/zero"):
        await glob_in(repo, "**/*.py")
