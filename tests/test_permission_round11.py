"""Attack round 11: read-only commands that were not (each found allowed unasked in `default` mode with no rules, and
proven by its effect in a real run; here each is decided, with its control beside it, and the first is run).

- GNU `time -o FILE` wrote FILE (with a format the model chose) when the option was not among the first two words;
- a bare repository committed into a clone (`config` with `core.fsmonitor`) was not seen as one when its `HEAD` was a
  link leading nowhere or its `refs` a file: git's test is looser than the checker's was, and `git status` ran it;
- `diff a b` follows the links in the directories it compares (GNU diff's default): `a/x -> /etc/passwd` was read;
- a glob the checker can't list (`[[:punct:]]*`) hid a file named `--output=Makefile` from the option check:
  `git shortlog HEAD [[:punct:]]*` wrote the Makefile.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.attacks.workspace import Workspace, engine
from tests.permission_calls import decide
from tests.scripted_run import scripted_run


def behavior(found: Workspace, command: str) -> str:
    return decide(engine(found, "default"), "Bash", {"command": command}).behavior


@pytest.mark.parametrize(
    "command",
    [
        r"\time -q -f 'touch PWNED' -o build.sh ls",
        "command time -p -v --output=out.txt ls",
        "command time -p -v --out=out.txt ls",
        "env time -q -p -a -o out.txt ls",
        "command time -qo out.txt ls",
        "command time -pvoout.txt ls",
        "command time --append --quiet --output out.txt ls",
    ],
)
def test_time_writing_its_report_anywhere_among_its_options_asks(found: Workspace, command: str) -> None:
    assert behavior(found, command) == "ask", command


@pytest.mark.parametrize(
    "command", ["command time -p ls", "command time -q -p -v ls", "command time -f '%e -o' ls", r"\time -qp ls"]
)
def test_time_without_an_output_file_is_still_read_only(found: Workspace, command: str) -> None:
    assert behavior(found, command) == "allow", command


def bare(where: Path, *, head: str, refs: str) -> None:
    """What a clone checks out as plain files: a bare repository's `config`, with git's test passed loosely."""
    where.mkdir()
    (where / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch PWNED; false"\n'
    )
    (where / "objects").mkdir()
    if head == "dangling-link":
        (where / "HEAD").symlink_to("refs/heads/nope")
    else:
        (where / "HEAD").write_text("ref: refs/heads/main\n")
    if refs == "executable-file":
        (where / "refs").write_text("")
        (where / "refs").chmod(0o755)
    else:
        (where / "refs").mkdir()


@pytest.mark.parametrize(
    ("head", "refs"), [("dangling-link", "dir"), ("file", "executable-file"), ("dangling-link", "executable-file")]
)
@pytest.mark.parametrize("command", ["git -C b status", "cd b && git status --short"])
def test_a_bare_repository_git_would_take_for_one_asks(found: Workspace, head: str, refs: str, command: str) -> None:
    bare(found.ws / "b", head=head, refs=refs)
    assert behavior(found, command) == "ask"
    # git does take it for one (the side effect the question prevents)
    subprocess.run(["git", "status"], cwd=found.ws / "b", capture_output=True, timeout=30, check=False)
    assert (found.ws / "b" / "PWNED").exists() or (found.ws / "PWNED").exists()


def test_a_folder_that_only_has_a_head_file_is_no_repository(found: Workspace) -> None:
    (found.ws / "notes").mkdir()
    (found.ws / "notes" / "HEAD").write_text("top of the notes\n")
    assert behavior(found, "cat notes/HEAD") == "allow"


def linked_out(found: Workspace) -> None:
    """Two folders to compare: `a/x` a link to a file outside the workspace, `b/x` a plain file."""
    (found.ws / "a").mkdir()
    (found.ws / "b").mkdir()
    (found.ws / "a" / "x").symlink_to(found.outside / "x.txt")
    (found.ws / "b" / "x").write_text("x\n")


def test_diff_of_folders_asks_when_a_link_in_them_leads_out(found: Workspace) -> None:
    linked_out(found)
    for command in ("diff a b", "diff -r a b", "diff -q a b"):
        assert behavior(found, command) == "ask", command
    assert behavior(found, "diff --no-dereference -r a b") == "allow"  # the link compared as a link
    done = subprocess.run(["diff", "a", "b"], cwd=found.ws, capture_output=True, text=True, timeout=30, check=False)
    assert (found.outside / "x.txt").read_text().strip() in done.stdout  # what it read (the question's reason)


def test_diff_of_folders_inside_the_workspace_is_read_only(found: Workspace) -> None:
    (found.ws / "a").mkdir()
    (found.ws / "b").mkdir()
    (found.ws / "a" / "x").symlink_to(found.ws / "a.txt")
    (found.ws / "b" / "x").write_text("x\n")
    assert behavior(found, "diff -r a b") == "allow"


@pytest.mark.parametrize(
    "command",
    [
        "git rev-list HEAD [[:punct:]]*",
        "git shortlog HEAD [[:punct:]]*",
        "git status [[:punct:]]*",
        "ls [[=-=]]*",
        "wc -l [[.-.]]*",
    ],
)
def test_a_glob_that_cant_be_listed_may_hide_an_option_and_asks(found: Workspace, command: str) -> None:
    (found.ws / "--output=Makefile").write_text("")
    assert behavior(found, command) == "ask", command


def test_time_o_in_a_real_run_writes_nothing(found: Workspace, tmp_path: Path) -> None:
    """End to end, non-interactive (what asks is refused): the file the option names is not written."""
    data = tmp_path / "data"
    env = {
        "HOME": str(found.home),
        "AGENT_BRIDGE_DATA_DIR": str(data),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    command = r"\time -q -f 'touch PWNED' -o build.sh ls"
    done = scripted_run(
        found.ws,
        [("Bash", {"command": command}), ("Bash", {"command": "command time -p ls"})],
        "--non-interactive",
        env=env,
        scenario=tmp_path / "scenario.json",
    )
    assert not (found.ws / "build.sh").exists(), done.stdout
    assert "a.txt" in done.stdout  # the control ran


# --- attack round 12: round 11's fixes attacked again ----------------------------------------------------------


def test_git_C_twice_looks_for_the_repository_where_git_does(found: Workspace) -> None:
    (found.ws / "a").mkdir()
    bare(found.ws / "a" / "b", head="file", refs="dir")
    for command in ("git -C a -C b status", "git -C a -C b log --oneline", "cd a && git -C b -C . status"):
        assert behavior(found, command) == "ask", command
    assert behavior(found, "git -C a* status") == "ask"  # a glob: which directory is not known
    assert behavior(found, "git -C src -C .. status") == "allow"  # src/.. is the workspace: no bare repository


def test_diff_from_file_is_compared_as_the_operands_are(found: Workspace) -> None:
    linked_out(found)
    for command in ("diff --from-file=a b", "diff --to-file a b", "diff -q --from-file=a --to-file=b"):
        assert behavior(found, command) == "ask", command
    (found.ws / "a" / "x").unlink()
    (found.ws / "a" / "x").write_text("y\n")
    assert behavior(found, "diff --from-file=a b") == "allow"


@pytest.mark.parametrize(
    "command", ["grep -v -e *", "head -n *", "tail -n * a.txt", "cut -f * a.txt", "grep -e ? a.txt"]
)
def test_a_glob_as_an_options_value_asks(found: Workspace, command: str) -> None:
    (found.ws / "100").write_text("")
    (found.ws / "zz").symlink_to(found.outside / "x.txt")
    assert behavior(found, command) == "ask", command


def test_a_glob_after_a_part_that_writes_asks(found: Workspace) -> None:
    """In acceptEdits (a write in the workspace is not asked about) the part that writes makes the next one's `*`
    name an option the check never saw: git wrote its output through a link."""

    def accept_edits(command: str) -> str:
        return decide(engine(found, "acceptEdits"), "Bash", {"command": command}).behavior

    (found.ws / "pages").mkdir()
    assert accept_edits("echo > pages/--output=zz; git shortlog HEAD pages/*") == "ask"
    assert accept_edits("echo hi > pages/out.md && ls pages/*") == "ask"
    assert accept_edits("echo hi > pages/out.md") == "allow"  # the write alone: acceptEdits'
    (found.ws / "notes").mkdir()
    (found.ws / "notes" / "one.md").write_text("1\n")
    assert behavior(found, "ls pages/*.md; wc -l pages/*.md") == "allow"  # nothing written before: listed as is
