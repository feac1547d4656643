"""The class behind the file-tool races, beyond flipping a name: `..` after a link, a link to a `/proc/self/fd`
magic link, O_CREAT through a dangling link, a link to a directory outside met by Glob and Grep, a hard link
to a protected file, a hard link to a file outside made from the sandbox. Each through the real executor and
engine (a question is refused, as a user would), each proven by its side effect, with a control where the
effect needs one."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from bridge.abort import Abort
from bridge.execution.sandbox import Sandbox, probe
from bridge.execution.supervisor import ProcessSupervisor
from bridge.loop.executor import ToolEnvironment, ToolExecutor
from bridge.permissions.engine import PermissionEngine
from bridge.permissions.modes import Mode
from bridge.permissions.rules import RuleSet
from bridge.permissions.settings import SettingsStore
from bridge.permissions.types import PermissionAnswer, PermissionRequest
from bridge.tools.base import AnyTool, DocumentSource, FileSnapshot, Services, ToolContext
from bridge.tools.bash import BashInput, BashTool
from bridge.tools.registry import core_tools
from tests.permission_calls import GRAMMAR

SECRET = "SECRET-KEY-MATERIAL"


class Arena:
    def __init__(self, tmp: Path, mode: Mode = "default") -> None:
        tmp = Path(os.path.realpath(tmp))
        self.tmp, self.ws, self.outside = tmp, tmp / "ws", tmp / "outside"
        (self.ws / "sub").mkdir(parents=True)
        (self.outside / "dir").mkdir(parents=True)
        (self.outside / "id_rsa").write_text(SECRET + "\n")
        (self.outside / "dir" / "hidden-name.txt").write_text(SECRET + "\n")
        store = SettingsStore(self.ws, user_config_dir=tmp / "cfg", claude_home=tmp / "home" / ".claude")
        self.engine = PermissionEngine(cwd=self.ws, settings=store, grammar=GRAMMAR, mode=mode, session_rules=RuleSet())
        self.asked: list[str] = []
        self.read_files: dict[Path, FileSnapshot] = {}
        self.tools: dict[str, AnyTool] = {t.name: t for t in core_tools()}
        self.documents = DocumentSource()

    async def call(self, name: str, raw: dict[str, Any]) -> str:
        async def refuse(request: PermissionRequest) -> PermissionAnswer:
            self.asked.append(request.reason)
            return PermissionAnswer("reject_once")

        env = ToolEnvironment(
            tools=self.tools,
            policy=self.engine,
            prompter=refuse,
            emit=lambda _event: None,
            context=lambda _id: ToolContext(
                cwd=self.ws,
                abort=Abort(),
                data_dir=self.tmp / "data",
                read_files=self.read_files,
                read_guard=self.engine.read_guard(),
                documents=self.documents,
            ),
        )
        async with anyio.create_task_group() as group:
            executor = ToolExecutor(env, Abort(), group)
            executor.add({"type": "tool_use", "id": "toolu_1", "name": name, "input": raw})
            [result] = await executor.results()
        return json.dumps(result["content"]) if not isinstance(result["content"], str) else result["content"]


async def test_dotdot_after_a_link_out_never_reads_outside(tmp_path: Path) -> None:
    """`ws/esc/../id_rsa` with esc -> outside/dir: the kernel would open outside/id_rsa. The path is judged and
    opened as the same folded path (ws/id_rsa, which does not exist): nothing outside is read."""
    arena = Arena(tmp_path)
    (arena.ws / "esc").symlink_to(arena.outside / "dir", target_is_directory=True)
    named = f"{arena.ws}/esc/../id_rsa"
    assert Path(named).read_text() == SECRET + "\n"  # the control: by name, it is the secret
    said = await arena.call("Read", {"file_path": named})
    assert SECRET not in said and "does not exist" in said


async def test_a_link_to_a_magic_proc_link_is_judged_by_where_it_leads(tmp_path: Path) -> None:
    arena = Arena(tmp_path)
    fd = os.open(arena.outside / "id_rsa", os.O_RDONLY)  # the bridge holds some file open
    try:
        (arena.ws / "m").symlink_to(f"/proc/self/fd/{fd}")
        assert (arena.ws / "m").read_text() == SECRET + "\n"  # the control
        said = await arena.call("Read", {"file_path": str(arena.ws / "m")})
        assert SECRET not in said and "Permission denied" in said
        assert arena.asked and "outside the workspace" in arena.asked[0]
    finally:
        os.close(fd)


async def test_o_creat_through_a_dangling_link_plants_nothing(tmp_path: Path) -> None:
    arena = Arena(tmp_path, "acceptEdits")
    planted = arena.outside / "planted.sh"
    (arena.ws / "new.sh").symlink_to(planted)
    said = await arena.call("Write", {"file_path": str(arena.ws / "new.sh"), "content": "echo pwned\n"})
    assert "Permission denied" in said and str(planted) in arena.asked[0], arena.asked
    assert not planted.exists()


async def test_a_link_inside_the_workspace_is_followed_and_kept(tmp_path: Path) -> None:
    """The legitimate case: a link to a workspace file is written through (its target replaced, the link
    kept), with no question in acceptEdits."""
    arena = Arena(tmp_path, "acceptEdits")
    (arena.ws / "sub" / "real.txt").write_text("old\n")
    (arena.ws / "alias.txt").symlink_to("sub/real.txt")
    assert "old" in await arena.call("Read", {"file_path": str(arena.ws / "alias.txt")})
    said = await arena.call("Write", {"file_path": str(arena.ws / "alias.txt"), "content": "new\n"})
    assert "has been overwritten" in said or "created" in said, said
    assert (arena.ws / "alias.txt").is_symlink() and (arena.ws / "sub" / "real.txt").read_text() == "new\n"
    assert arena.asked == []


async def test_glob_and_grep_do_not_list_or_search_a_linked_directory_outside(tmp_path: Path) -> None:
    arena = Arena(tmp_path)
    (arena.ws / "sub" / "mine.txt").write_text(SECRET + " (a workspace copy)\n")
    (arena.ws / "linked").symlink_to(arena.outside / "dir", target_is_directory=True)
    listed = await arena.call("Glob", {"pattern": "**/*.txt"})
    assert "hidden-name" not in listed and "mine.txt" in listed
    found = await arena.call("Grep", {"pattern": "SECRET", "output_mode": "content"})
    assert "hidden-name" not in found and "mine.txt" in found
    rooted = await arena.call("Glob", {"pattern": "*.txt", "path": str(arena.ws / "linked")})
    assert "hidden-name" not in rooted and "Permission denied" in rooted, "the root itself leads out: asked"


async def test_a_hard_link_to_a_protected_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    """The file tools write by replacing the name (temp file + rename): another name of the same inode — a
    settings file a write would have to ask about — keeps its content."""
    arena = Arena(tmp_path, "acceptEdits")
    settings = arena.ws / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": []}}\n')
    os.link(settings, arena.ws / "notes.json")
    st = os.stat(arena.ws / "notes.json")
    arena.read_files[arena.ws / "notes.json"] = FileSnapshot(st.st_mtime_ns, st.st_size)
    said = await arena.call(
        "Write", {"file_path": str(arena.ws / "notes.json"), "content": '{"permissions": {"allow": ["Bash"]}}\n'}
    )
    assert "overwritten" in said, said
    assert settings.read_text() == '{"permissions": {"allow": []}}\n'
    assert os.stat(arena.ws / "notes.json").st_ino != os.stat(settings).st_ino


SANDBOX = probe()


@pytest.fixture
def secret_outside_tmp() -> Iterator[Path]:
    """A secret outside /tmp (the sandbox has a private /tmp) on the workspace's file system if it can be."""
    where = Path.home() / f".fsrace-{uuid.uuid4().hex}"
    where.mkdir()
    (where / "id_rsa").write_text(SECRET + "\n")
    try:
        yield where / "id_rsa"
    finally:
        shutil.rmtree(where, ignore_errors=True)


@pytest.mark.skipif(not SANDBOX.ok, reason=f"bubblewrap cannot run here: {SANDBOX.reason}")
async def test_the_sandbox_cannot_hard_link_a_file_from_outside_into_the_workspace(
    tmp_path: Path, secret_outside_tmp: Path
) -> None:
    """A hard link is the file itself, so the file tools could not tell it from a workspace file: it must not
    be made. In the sandbox the workspace is a mount of its own, and link(2) does not cross mounts."""
    ws = Path.home() / f".fsrace-ws-{uuid.uuid4().hex}"  # beside the secret: the same file system
    ws.mkdir()
    supervisor = ProcessSupervisor(data_dir=tmp_path / "data")
    store = SettingsStore(ws, user_config_dir=tmp_path / "cfg", claude_home=tmp_path / "claude-home")
    sandbox = Sandbox.for_engine(PermissionEngine(cwd=ws, settings=store, grammar=GRAMMAR, mode="bypassPermissions"))
    ctx = ToolContext(
        cwd=ws, abort=Abort(), data_dir=tmp_path / "data", services=Services(processes=supervisor, sandbox=sandbox)
    )
    try:
        result = await BashTool().call(BashInput(command=f"ln {secret_outside_tmp} {ws}/hl; echo rc=$?"), ctx)
        assert "cross-device" in str(result.content) and not (ws / "hl").exists(), result.content
        os.link(secret_outside_tmp, ws / "control")  # the control: outside the sandbox the same link works
        assert (ws / "control").read_text() == SECRET + "\n"
    finally:
        await supervisor.shutdown()
        sandbox.close()
        shutil.rmtree(ws, ignore_errors=True)


# ---- the editor's fs/* path: the editor resolves names itself ------------------------------------------------


class ByNameEditor(DocumentSource):
    """An ACP editor (Zed): a buffer's text when it has one, else the disk by name; a write changes the file by
    name. `during_write` runs inside the write, as an attacker's flip would."""

    asks_editor = True

    def __init__(self, buffers: dict[Path, str]) -> None:
        self.buffers = buffers
        self.asked: list[tuple[str, Path]] = []
        self.during_write: Any = None

    async def read_text(self, path: Path) -> str | None:
        self.asked.append(("read", path))
        return self.buffers.get(path) if path in self.buffers else path.read_text()

    async def write_text(self, path: Path, text: str) -> bool:
        self.asked.append(("write", path))
        if self.during_write is not None:
            self.during_write()
        path.write_text(text)  # by name: it follows whatever the name is now
        self.buffers[path] = text
        return True


async def test_a_clean_file_is_written_to_the_disk_exactly_not_through_the_editor(tmp_path: Path) -> None:
    arena = Arena(tmp_path, "acceptEdits")
    target = arena.ws / "app.py"
    target.write_text("a = 1\n")
    editor = ByNameEditor({})
    arena_ctx_documents(arena, editor)
    assert "a = 1" in await arena.call("Read", {"file_path": str(target)})
    said = await arena.call("Edit", {"file_path": str(target), "old_string": "a = 1", "new_string": "a = 2"})
    assert "has been updated" in said and target.read_text() == "a = 2\n"
    assert ("write", target) not in editor.asked, "no unsaved changes: nothing to write through the editor"


async def test_unsaved_changes_go_through_the_editor_and_a_flip_during_its_write_is_reported(tmp_path: Path) -> None:
    """The residual: an editor writes by name, so a name flipped while it writes sends its write elsewhere. Only
    files with unsaved changes go that way, the names are watched while it writes, and the model is told."""
    arena = Arena(tmp_path, "acceptEdits")
    target = arena.ws / "app.py"
    target.write_text("a = 1\n")
    editor = ByNameEditor({target: "a = 1\n# typed\n"})
    arena_ctx_documents(arena, editor)
    assert "typed" in await arena.call("Read", {"file_path": str(target)})

    def flip() -> None:
        os.replace(target, arena.ws / "app.py.bak")
        target.symlink_to(arena.outside / "victim.py")

    editor.during_write = flip
    said = await arena.call("Edit", {"file_path": str(target), "old_string": "a = 1", "new_string": "a = 2"})
    assert ("write", target) in editor.asked
    assert "changed while the editor wrote the file" in said, said


def arena_ctx_documents(arena: Arena, documents: DocumentSource) -> None:
    arena.documents = documents
