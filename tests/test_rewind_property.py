"""The rewind's property (issue 23, "done when"): random sequences of the agent's file writes and commands (real
`bash -c`: creating, deleting, renaming, chmod, binary files, symbolic links), the user's edits in between, turns,
and rewinds to any earlier turn with random decisions for the conflicts — real git, real files. After each rewind
the workspace is what the test's own model says: every file the agent changed since that turn is back as it was
(unless the user changed it since, then it is theirs to decide), and no edit of the user's was lost.

The model shares nothing with the code under test: it is a dict of path -> (bytes, executable) that each
operation updates, and a history of who changed what. `AGENT_BRIDGE_PROPERTY_EXAMPLES` sets the number of examples
(CI runs 12, in a few seconds; thousands have passed locally).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.checkpoints.recorder import Checkpoints, StepCall
from bridge.checkpoints.rewind import apply_rewind, plan_rewind

EXAMPLES = int(os.environ.get("AGENT_BRIDGE_PROPERTY_EXAMPLES", "12"))
PATHS = ("a.txt", "b.bin", "run.sh", "sub/d.txt", "sub/deep/e.txt")
Version = tuple[bytes, bool] | None  # (content, executable), None: absent
State = dict[str, tuple[bytes, bool]]

path = st.sampled_from(PATHS)
content = st.one_of(st.binary(max_size=24), st.text(alphabet="ab\n", max_size=12).map(str.encode))
agent_write = st.tuples(st.just("write"), path, content)
LINK = "ln"  # only ever a symbolic link (to one of PATHS), made and removed by commands
command = st.one_of(
    st.tuples(st.just("create"), path, content),
    st.tuples(st.just("delete"), path),
    st.tuples(st.just("rename"), path, path),
    st.tuples(st.just("chmod"), path, st.booleans()),
    st.tuples(st.just("link"), path),
    st.tuples(
        st.just("unlink"),
    ),
)
user = st.one_of(
    st.tuples(st.just("write"), path, content),
    st.tuples(st.just("delete"), path),
    st.tuples(st.just("chmod"), path, st.booleans()),
)
operation = st.one_of(
    st.tuples(st.just("turn")),
    agent_write,
    st.tuples(st.just("cmd"), command),
    st.tuples(st.just("user"), user),
    st.tuples(st.just("rewind"), st.integers(0, 20), st.sampled_from(["keep", "overwrite"])),
)


@dataclass
class Model:
    """The test's own account: the files, and who changed each path after each turn started."""

    files: State = field(default_factory=dict)
    events: list[tuple[str, object]] = field(default_factory=list)  # ("mark", turn) | ("agent"|"user", changes)
    settled: State = field(default_factory=dict)  # the files after the agent's last step

    def note_user(self) -> None:
        """What changed since the agent's last step: the user's (recorded when the agent acts next)."""
        changed = _diff(self.settled, self.files)
        if changed:
            self.events.append(("user", changed))

    def note_agent(self, before: State) -> None:
        changed = _diff(before, self.files)
        self.events.append(("agent", changed))
        self.settled = dict(self.files)


def _diff(old: State, new: State) -> dict[str, tuple[Version, Version]]:
    return {p: (old.get(p), new.get(p)) for p in set(old) | set(new) if old.get(p) != new.get(p)}


def _apply_command(files: State, op: tuple[object, ...]) -> str:
    """The command's shell text, and its effect on the model."""
    kind = op[0]
    if kind == "create":
        target, data = str(op[1]), bytes(op[2])  # type: ignore[call-overload]
        keep_x = files[target][1] if target in files else False
        files[target] = (data, keep_x)
        escaped = "".join(f"\\x{b:02x}" for b in data)
        return f"mkdir -p {shlex.quote(os.path.dirname(target) or '.')} && printf '{escaped}' > {shlex.quote(target)}"
    if kind == "delete":
        files.pop(str(op[1]), None)
        return f"rm -f {shlex.quote(str(op[1]))}"
    if kind == "link":
        files[LINK] = (b"-> " + str(op[1]).encode(), False)
        return f"ln -sfn {shlex.quote(str(op[1]))} {LINK}"
    if kind == "unlink":
        files.pop(LINK, None)
        return f"rm -f {LINK}"
    if kind == "rename":
        source, target = str(op[1]), str(op[2])
        if source not in files or source == target:
            return "true"
        files[target] = files.pop(source)
        return (
            f"mkdir -p {shlex.quote(os.path.dirname(target) or '.')} && "
            f"mv -f {shlex.quote(source)} {shlex.quote(target)}"
        )
    target, executable = str(op[1]), bool(op[2])
    if target not in files:
        return "true"
    files[target] = (files[target][0], executable)
    return f"chmod {'+x' if executable else '-x'} {shlex.quote(target)}"


def _write(root: Path, files: State, target: str, data: bytes) -> None:
    full = root / target
    full.parent.mkdir(parents=True, exist_ok=True)
    executable = files[target][1] if target in files else False
    full.write_bytes(data)
    files[target] = (data, executable)


def _user(root: Path, files: State, op: tuple[object, ...]) -> None:
    kind, target = op[0], str(op[1])
    full = root / target
    if kind == "write":
        _write(root, files, target, bytes(op[2]))  # type: ignore[call-overload]
    elif kind == "delete":
        if full.exists():
            full.unlink()
        files.pop(target, None)
    elif target in files:
        executable = bool(op[2])
        full.chmod(0o755 if executable else 0o644)
        files[target] = (files[target][0], executable)


def _disk(root: Path) -> State:
    found: State = {}
    for item in root.rglob("*"):
        if item.is_symlink():
            found[item.relative_to(root).as_posix()] = (b"-> " + os.fsencode(os.readlink(item)), False)
        elif item.is_file():
            found[item.relative_to(root).as_posix()] = (item.read_bytes(), bool(item.stat().st_mode & 0o100))
    return found


def _expected(model: Model, turn: str, resolution: str) -> dict[str, list[Version]]:
    """For each path, the versions the rewind may leave (more than one only where either is safe)."""
    start = next(i for i, (kind, value) in enumerate(model.events) if kind == "mark" and value == turn)
    later = model.events[start + 1 :]
    before_first: dict[str, Version] = {}
    agent_last: dict[str, Version] = {}
    user_after: set[str] = set()
    for kind, value in later:
        if kind == "mark":
            continue
        assert isinstance(value, dict)
        for changed, (old, new) in value.items():
            if kind == "agent":
                before_first.setdefault(changed, old)
                agent_last[changed] = new
            elif changed in before_first:
                user_after.add(changed)
    allowed: dict[str, list[Version]] = {}
    for name in {*PATHS, LINK} | set(model.files):
        now = model.files.get(name)
        if name not in before_first:
            allowed[name] = [now]
        elif name not in user_after:
            allowed[name] = [before_first[name]]
        elif now == agent_last[name]:
            allowed[name] = [before_first[name], now]  # the user's change is gone already: either is safe
        else:
            allowed[name] = [before_first[name]] if resolution == "overwrite" else [now]
    return allowed


async def _scenario(root: Path, data_dir: Path, operations: list[tuple[object, ...]]) -> None:
    checkpoints = Checkpoints.open(data_dir, root, "prop", tell=lambda _text: None)
    model = Model()
    turns: list[str] = []
    calls = 0

    async def mark() -> None:
        turn = f"turn_{len(turns)}"
        turns.append(turn)
        checkpoints.turn_started(turn)
        model.events.append(("mark", turn))

    await mark()
    for op in operations:
        kind = op[0]
        if kind == "turn":
            await mark()
        elif kind == "user":
            _user(root, model.files, op[1])  # type: ignore[arg-type]
        elif kind in ("write", "cmd"):
            model.note_user()
            before = dict(model.files)
            calls += 1
            if kind == "write":
                target = str(op[1])
                call = StepCall(f"call_{calls}", "Write", f"Write {target}", "edit", [target])
                async with checkpoints.step(call):
                    _write(root, model.files, target, bytes(op[2]))  # type: ignore[call-overload]
            else:
                text = _apply_command(model.files, op[1])  # type: ignore[arg-type]
                call = StepCall(f"call_{calls}", "Bash", text, "execute")
                async with checkpoints.step(call):
                    await asyncio.to_thread(subprocess.run, ["bash", "-c", text], cwd=root, check=True)
            model.note_agent(before)
        else:
            turn = turns[int(op[1]) % len(turns)]  # type: ignore[call-overload]
            resolution = str(op[2])
            assert _disk(root) == model.files, "the model and the disk agree before the rewind"
            model.note_user()
            allowed = _expected(model, turn, resolution)
            before = dict(model.files)
            plan = await plan_rewind(checkpoints, turn)
            await apply_rewind(checkpoints, plan, {c.path: resolution for c in plan.conflicts})  # type: ignore[misc]
            after = _disk(root)
            for name, versions in allowed.items():
                assert after.get(name) in versions, (
                    f"{name} after rewinding to {turn} ({resolution}): {after.get(name)!r}, expected one of "
                    f"{versions!r}; events: {model.events!r}"
                )
            model.files = after
            model.note_agent(before)
    await checkpoints.close()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=os.environ.get("AGENT_BRIDGE_PROPERTY_EXAMPLES") is None,
)
@given(st.lists(operation, min_size=4, max_size=22))
def test_every_rewind_restores_the_recorded_state_and_loses_no_user_edit(
    operations: list[tuple[object, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "ws"
        root.mkdir()
        asyncio.run(_scenario(root, Path(scratch) / "data", operations))
