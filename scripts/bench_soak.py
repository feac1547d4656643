"""Soak (issue 11): 3 sessions x 100 turns with tools, through the real `agent-bridge serve` and the real
protocol (the tests' editor, tests/e2e/harness.py), the model the embedded offline API playing a reactive
scenario (below). The tools are real: Bash commands (sandboxed when bubblewrap runs here), Read, Grep, Glob,
Edit and Write of real temp files, an MCP server per session (tests/fixtures/mcp_server.py).

Seeded cancels at random points — mid-stream, mid-command, mid-permission, mid-MCP-call and after a random
delay — and, at turn 50, `kill -9` of the bridge while every session runs a command tree that escapes the
easy kills; a new bridge starts on the same data dir, `session/load`s the three sessions and goes on.

Figures, each against a baseline of the same run (the first sample after warm-up is the baseline):
RSS, open fds (/proc/PID/fd) and asyncio tasks (`_bridge/stats`, on with AGENT_BRIDGE_DEBUG_STATS=1) of each
bridge, from after warm-up to its end; processes left after the kill -9 and after the end (everything the
bridges start carries a SOAK_MARK in its environment, found in /proc independently of the bridge); requests
the offline API rejected (its validator: must be 0) and `history_errors` of each session's final history;
the process registry's files and the sandbox's private /tmp dirs left (the bridges' TMPDIR is the run's own).
Open fds are split into the HTTP client's keep-alive connections to the model (they come and go with the
turns in flight, at most one per session) and all others (which must not grow).

    .venv/bin/python scripts/bench_soak.py [--sessions 3] [--turns 100] [--seed 11] [--kinds a,b,...] [--no-mcp]

Each goal is marked PASS or FAIL in the table and in the last line (one JSON object); the exit status is 0
either way (a benchmark reports, it does not gate).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.parse
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bridge.execution.sandbox import probe
from bridge.offline import OfflineServer, Scenario
from bridge.offline.builtins.common import compaction_summary, current_turn, text_response, working_directory
from bridge.offline.scenario import Json, RecordedRequest
from bridge.offline.validation import history_errors
from tests.e2e.harness import Editor, running_editor

SAMPLE_EVERY = 10
SETTLE_TIMEOUT = 10.0  # how long a sample waits for cancelled commands' background termination to end
TURN_TIMEOUT = 120.0
GOALS = {"rss_growth_pct": 10.0}
FIXTURE = str(Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mcp_server.py")
PLAN = "soak-plan "
ESCAPING = (
    "setsid sleep 300 & (trap '' TERM INT; sleep 300; sleep 300) & (nohup sleep 300 >/dev/null 2>&1 &) ; "
    "echo started; sleep 300"
)
COUNTER = re.compile(r"counter = (\d+)")

# -- the model: a reactive scenario that plays the plan written in the prompt ----------------------------
#
# A prompt `soak-plan {"steps": [[call, ...], ...]}` makes the model call each step's tools (one assistant
# message per step, its calls in parallel), then answer with a short text; `{"long": true}` streams a long
# answer; anything else is echoed. An Edit call `{"bump": path}` is written when it is played, from the file
# on disk (`counter = N` -> N+1), so it always matches what a cancelled turn did or did not change.


def _call(spec: Json) -> Json:
    if "bump" in spec:
        path = Path(spec["bump"])
        found = COUNTER.search(path.read_text()) if path.exists() else None
        old = found.group(0) if found else "counter = 0"
        new = f"counter = {int(found.group(1)) + 1 if found else 1}"
        return {
            "type": "tool_use",
            "name": "Edit",
            "input": {"file_path": str(path), "old_string": old, "new_string": new},
        }
    return {"type": "tool_use", "name": spec["name"], "input": spec["input"]}


def respond(request: RecordedRequest) -> Json:
    if (summary := compaction_summary(request.body)) is not None:
        return summary
    turn = current_turn(request.body)
    if not turn.prompt.startswith(PLAN):
        return text_response(f"You said: {turn.prompt[:100]}", delay_ms=2)
    plan = json.loads(turn.prompt[len(PLAN) :])
    if plan.get("long"):
        deltas = [f"Part {i + 1} of a long answer. " for i in range(400)]
        return {"content": [{"type": "text", "deltas": deltas}], "stop_reason": "end_turn", "delay_ms": 5}
    done = len(turn.calls)
    for step in plan["steps"]:
        if done < len(step):
            return {
                "content": [{"type": "text", "text": "On it."}, *map(_call, step)],
                "stop_reason": "tool_use",
                "delay_ms": 2,
            }
        done -= len(step)
    results = [f"{c.name}: {'error' if c.is_error else 'ok'} ({len(c.result or '')} chars)" for c in turn.calls]
    return text_response("Done. " + "; ".join(results or ["no tools"]), delay_ms=2)


# -- the editor's side --------------------------------------------------------------------------------------


@dataclass
class SoakSession:
    index: int
    workspace: Path
    rng: random.Random
    id: str = ""
    hold: bool = False  # answer no permission question until `release`
    asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    mcp_log: Path = Path()
    prompts_sent: int = 0
    played: int = 0  # turns run by `run_turn`


@dataclass(frozen=True)
class Size:
    sessions: int = 3
    turns: int = 100
    seed: int = 11
    kinds: tuple[str, ...] = ()  # when given, every session plays these kinds of turn in order (else: drawn)
    mcp: bool = True  # an MCP server per session (the MCP kinds of turn need it)

    @property
    def kill_at(self) -> int:
        """This turn of every session is running a command when the bridge is killed."""
        return self.turns // 2

    @property
    def warm_up(self) -> int:
        """Turns of each bridge before its baseline sample."""
        return min(10, max(1, self.kill_at // 5))


@dataclass
class Sample:
    label: str
    turn: int
    rss_kb: int
    fds: int
    tasks: int
    threads: int
    task_names: dict[str, int]
    thread_names: dict[str, int]  # by name without its trailing number (ThreadPoolExecutor-0_3 -> ThreadPoolExecutor)
    fd_kinds: dict[str, int]  # open fds by what they are (socket, pipe, a file's path, ...)
    model_sockets: int  # of the fds: the HTTP client's pooled connections to the model (bounded, come and go)
    processes: int  # live processes carrying the bridge's SOAK_MARK (itself, watchdog, MCP servers, commands)
    settle_s: float  # how long the sample waited for background terminations to end


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    asked: Counter[str] = field(default_factory=Counter)
    turn_seconds: list[float] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    requests: int = 0
    last_request: dict[str, Json] = field(default_factory=dict)  # cwd -> the last valid request's body


def make_workspace(root: Path, index: int) -> Path:
    ws = root / f"ws{index}"
    (ws / "src").mkdir(parents=True)
    (ws / "out").mkdir()
    for j in range(20):
        body = "\n".join(f"def f_{j}_{k}(x):\n    return x * {k} + {j}\n" for k in range(25))
        (ws / "src" / f"mod{j}.py").write_text(f'"""Module {j}."""\n\n{body}')
    lines = [f"note {k}: {['alpha', 'beta', 'gamma'][k % 3]}" for k in range(40)]
    (ws / "notes.txt").write_text("counter = 0\n" + "\n".join(lines) + "\n")
    (ws / "data.csv").write_text("".join(f"{(k * 7919) % 101},{k}\n" for k in range(300)))
    return ws


def mcp_server(session: SoakSession, mark: str) -> dict[str, Any]:
    return {
        "name": "fixture",
        "command": sys.executable,
        "args": [FIXTURE],
        "env": [{"name": "MCP_FIXTURE_LOG", "value": str(session.mcp_log)}, {"name": "SOAK_MARK", "value": mark}],
    }


KINDS = {  # weight of each kind of turn
    "text": 8,
    "bash": 20,
    "read": 10,
    "grep": 10,
    "edit": 10,
    "parallel": 8,
    "write": 4,
    "mcp": 6,
    "cancel-stream": 5,
    "cancel-command": 6,
    "cancel-permission": 5,
    "cancel-mcp": 3,
    "cancel-random": 5,
}


def bash(command: str) -> Json:
    return {"name": "Bash", "input": {"command": command, "description": "soak"}}


def plan_for(kind: str, s: SoakSession, turn: int) -> Json:
    rng, ws = s.rng, s.workspace
    src = str(ws / "src" / f"mod{rng.randrange(20)}.py")
    notes = str(ws / "notes.txt")
    commands = [
        "ls -la src | head -5",
        "wc -l src/*.py | tail -1",
        "grep -c note notes.txt",
        "python3 -c 'print(sum(range(10**5)))'",
        f"echo turn {turn} >> log.txt && tail -n 2 log.txt",
        "sort -n data.csv | head -3",
        "find . -name '*.py' | wc -l",
        "seq 1 3000",
        "cat notes.txt | head -3",
    ]
    read: Json = {
        "name": "Read",
        "input": {"file_path": src, **({"offset": 5, "limit": 20} if rng.random() < 0.5 else {})},
    }
    grep: Json = {
        "name": "Grep",
        "input": {
            "pattern": f"def f_{rng.randrange(20)}_",
            "path": str(ws),
            "output_mode": rng.choice(["content", "files_with_matches", "count"]),
        },
    }
    glob: Json = {"name": "Glob", "input": {"pattern": "src/*.py", "path": str(ws)}}
    steps: list[list[Json]]
    if kind in ("text",):
        return {"text": f"hello {turn}, how are things?"}
    if kind == "cancel-stream":
        return {"long": True}
    if kind in ("bash", "cancel-random"):
        steps = [[bash(rng.choice(commands))]]
        if kind == "cancel-random":
            steps += [[read], [{"name": "Read", "input": {"file_path": notes}}], [{"bump": notes}]]
    elif kind == "read":
        steps = [[read]]
    elif kind == "grep":
        steps = [[grep], [glob]]
    elif kind in ("edit", "cancel-permission"):
        steps = [[{"name": "Read", "input": {"file_path": notes}}], [{"bump": notes}]]
    elif kind == "parallel":
        steps = [[read, grep, glob], [bash(rng.choice(commands))]]
    elif kind == "write":
        path = str(ws / "out" / f"t{turn}.txt")
        steps = [
            [{"name": "Write", "input": {"file_path": path, "content": f"turn {turn}\n" * 50}}],
            [bash(f"wc -c out/t{turn}.txt")],
        ]
    elif kind == "mcp":
        steps = [[{"name": "mcp__fixture__echo", "input": {"text": f"turn {turn}"}}]]
    elif kind == "cancel-command":
        steps = [[bash(ESCAPING if rng.random() < 0.5 else "echo started; sleep 30")]]
    elif kind == "cancel-mcp":
        steps = [[{"name": "mcp__fixture__wait", "input": {}}]]
    else:
        raise ValueError(kind)
    return {"steps": steps}


def prompt_text(plan: Json) -> str:
    return plan["text"] if "text" in plan else PLAN + json.dumps(plan)


def session_updates(editor: Editor, sid: str, start: int) -> list[Json]:
    return [u["update"] for u in editor.updates[start:] if u["sessionId"] == sid]


async def until(predicate: Any, done: asyncio.Future[Any], timeout: float = 60.0) -> bool:
    """Wait until `predicate()` (True) or the turn ended / the deadline passed first (False)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if done.done() or time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


async def run_turn(editor: Editor, s: SoakSession, turn: int, tally: Tally, size: Size) -> None:
    s.played += 1
    drawn = {kind: weight for kind, weight in KINDS.items() if size.mcp or "mcp" not in kind}
    kind = (
        size.kinds[(s.played - 1) % len(size.kinds)]
        if size.kinds
        else s.rng.choices(list(drawn), weights=list(drawn.values()))[0]
    )
    plan = plan_for(kind, s, turn)
    chunks_wanted = s.rng.randint(1, 30)
    delay = s.rng.uniform(0.0, 0.5)
    start = len(editor.updates)
    s.hold = kind == "cancel-permission"
    s.asked.clear()
    s.release.clear()
    waits_before = s.mcp_log.read_text().count("wait ") if s.mcp_log.exists() else 0
    began = time.monotonic()
    future = editor.start_prompt(s.id, prompt_text(plan))
    s.prompts_sent += 1
    reached = True
    if kind == "cancel-stream":
        reached = await until(
            lambda: (
                sum(u["sessionUpdate"] == "agent_message_chunk" for u in session_updates(editor, s.id, start))
                >= chunks_wanted
            ),
            future,
        )
    elif kind == "cancel-command":
        reached = await until(
            lambda: any(
                "started" in json.dumps(u.get("content"))
                for u in session_updates(editor, s.id, start)
                if u["sessionUpdate"] == "tool_call_update"
            ),
            future,
        )
    elif kind == "cancel-permission":
        reached = await until(s.asked.is_set, future)
    elif kind == "cancel-mcp":
        reached = await until(
            lambda: s.mcp_log.exists() and s.mcp_log.read_text().count("wait ") > waits_before, future
        )
    elif kind == "cancel-random":
        await asyncio.sleep(delay)
    if kind.startswith("cancel"):
        editor.cancel(s.id)
    try:
        result = await asyncio.wait_for(future, TURN_TIMEOUT)
        outcome = result["stopReason"]
    except Exception as error:  # a turn that fails is a finding: count it, go on
        outcome = "error"
        tally.errors.append(f"session {s.index} turn {turn} ({kind}): {error!r}"[:300])
    finally:
        s.hold = False
        s.release.set()
    tally.turn_seconds.append(time.monotonic() - began)
    tally.outcomes[f"{kind}: {outcome}{'' if reached else ' (the cancel point was not reached)'}"] += 1


def permission_handler(editor: Editor, sessions: dict[str, SoakSession], tally: Tally) -> Any:
    async def answer(params: Json) -> Json:
        title = str(params.get("toolCall", {}).get("title", "?"))
        tally.asked["Bash" if title.startswith("`") else title.split(" ")[0]] += 1
        s = sessions.get(params["sessionId"])
        if s is not None and s.hold:
            s.asked.set()
            await s.release.wait()  # the bridge withdrew the question by then: this answer is ignored
            return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    return answer


def collect(model: OfflineServer, seen: int, tally: Tally) -> int:
    """Account for the requests `model` received since `seen`, and let go of their bodies (the history of a
    100-turn session in every request would be hundreds of MB in this process)."""
    records = model.requests
    for record in records[seen:]:
        tally.requests += 1
        if record.status == 400:
            tally.rejected.append("; ".join(record.errors)[:300])
        elif 200 <= record.status < 300:
            tally.last_request[working_directory(record.body) or "?"] = record.body
        else:
            tally.unanswered.append(f"status {record.status}: {'; '.join(record.errors)[:200]}")
        record.body, record.raw = {}, b""
    return len(records)


# -- /proc ---------------------------------------------------------------------------------------------


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def marked(mark: str) -> dict[int, str]:
    """Live (non-zombie) processes whose environment carries SOAK_MARK=mark: pid -> command line."""
    wanted = f"SOAK_MARK={mark}".encode()
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                env = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if wanted in env and state not in (b"Z", b"X"):
            found[int(name)] = cmdline[:100]
    return found


async def gone_within(mark: str, timeout: float) -> tuple[float | None, dict[int, str]]:
    """(seconds until no process of `mark` is left, or None; what is left at the deadline)."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not (left := marked(mark)):
            return time.monotonic() - started, {}
        await asyncio.sleep(0.01)
    return None, left


SETTLING = ("ProcessSupervisor._escalate",)  # background terminations of cancelled commands: they end


def model_sockets(pid: int, port: int) -> int:
    """How many of `pid`'s fds are TCP connections to `port` (the offline API): /proc/PID/net/tcp* by inode."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as fh:
            for line in fh.readlines()[1:]:
                fields = line.split()
                if int(fields[2].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}") in inodes
    return count


async def sample(editor: Editor, label: str, turn: int, mark: str) -> Sample:
    """The bridge's figures while every session is idle, once the terminations cancels started have ended
    (a command that ignores SIGINT/SIGTERM is killed after its grace, seconds after the turn answered)."""
    began = time.monotonic()
    while True:
        stats = await editor.request("_bridge/stats", {})
        if not any(name in stats["taskNames"] for name in SETTLING) or time.monotonic() - began > SETTLE_TIMEOUT:
            break
        await asyncio.sleep(0.05)
    pid = int(stats["pid"])
    kinds = fd_kinds(pid)
    port = urllib.parse.urlsplit(editor.model.base_url).port or 80
    threads = Counter(re.sub(r"[-_\d]+$", "", name) for name in stats["threadNames"])
    return Sample(
        label,
        turn,
        rss_kb(pid),
        sum(kinds.values()),
        int(stats["tasks"]),
        int(stats["threads"]),
        dict(stats["taskNames"]),
        dict(threads),
        kinds,
        model_sockets(pid, port),
        len(marked(mark)),
        time.monotonic() - began,
    )


def fd_kinds(pid: int) -> dict[str, int]:
    kinds: Counter[str] = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        kinds[target.split(":")[0] if ":" in target and not target.startswith("/") else target] += 1
    return dict(kinds)


def registry_entries(data: Path) -> list[str]:
    """What the process registry still holds: one file per bridge with processes written down."""
    running = data / "running"
    return sorted(p.name for p in running.iterdir()) if running.is_dir() else []


# -- the run --------------------------------------------------------------------------------------------


@dataclass
class Bridge:
    label: str
    mark: str
    first: int  # its first turn
    last: int  # one past its last turn
    base: int  # the turn after which its baseline is sampled


async def rounds(
    editor: Editor,
    sessions: list[SoakSession],
    bridge: Bridge,
    tally: Tally,
    samples: list[Sample],
    size: Size,
    seen: int,
) -> int:
    """Turns `first`..`last - 1` of every session (the sessions side by side, turn by turn); a sample every
    SAMPLE_EVERY turns from the baseline turn, and at the end, while every session is idle."""
    for turn in range(bridge.first, bridge.last):
        await asyncio.gather(*(run_turn(editor, s, turn, tally, size) for s in sessions))
        seen = collect(editor.model, seen, tally)
        editor.updates.clear()
        done = turn + 1
        if (done >= bridge.base and (done - bridge.base) % SAMPLE_EVERY == 0) or done == bridge.last:
            samples.append(await sample(editor, bridge.label, done, bridge.mark))
    return seen


def bridge_env(mark: str, tmp: Path) -> dict[str, str]:
    """`tmp`: the bridges' TMPDIR (the sandbox's private /tmp is made there), so that what is left is ours."""
    return {
        "SOAK_MARK": mark,
        "AGENT_BRIDGE_DEBUG_STATS": "1",
        "AGENT_BRIDGE_LOG": "WARNING",
        "TMPDIR": str(tmp),
        "AGENT_BRIDGE_SANDBOX": "1",
    }  # soak with the sandbox on, whatever the caller's environment says


async def soak(root: Path, size: Size) -> dict[str, Any]:
    data, tmp = root / "data", root / "tmp"
    data.mkdir()
    tmp.mkdir()
    run = uuid.uuid4().hex[:12]
    one = Bridge("bridge 1", f"{run}-1", 0, size.kill_at, size.warm_up)
    two = Bridge("bridge 2", f"{run}-2", size.kill_at + 1, size.turns, min(size.turns, size.kill_at + 1 + size.warm_up))
    sessions = [
        SoakSession(i, make_workspace(root, i), random.Random(size.seed * 1000 + i)) for i in range(size.sessions)
    ]
    by_id: dict[str, SoakSession] = {}
    tally = Tally()
    samples: list[Sample] = []
    report: dict[str, Any] = {"loadavg": [os.getloadavg()]}
    scenario = Scenario.from_responder(respond, name="soak")
    options = {"mcp": {"turnWait": 120}}

    # bridge 1: turns 0 .. kill_at-1, then every session runs an escaping command tree and the bridge is killed
    async with running_editor(
        scenario, root, data, env=bridge_env(one.mark, tmp), initialization_options=options
    ) as editor:
        editor.on_permission = permission_handler(editor, by_id, tally)
        for s in sessions:
            s.mcp_log = root / f"mcp{s.index}-1.log"
            s.id = await editor.new_session(s.workspace, mcp_servers=[mcp_server(s, one.mark)] if size.mcp else [])
            by_id[s.id] = s
        samples.append(await sample(editor, "start", 0, one.mark))  # cold: sessions made, no turn yet
        seen = await rounds(editor, sessions, one, tally, samples, size, 0)
        start = len(editor.updates)
        killed_turns = [editor.start_prompt(s.id, prompt_text({"steps": [[bash(ESCAPING)]]})) for s in sessions]
        for s in sessions:
            s.prompts_sent += 1
        never = asyncio.get_running_loop().create_future()
        for s in sessions:
            await until(
                lambda s=s: any(
                    "started" in json.dumps(u.get("content"))
                    for u in session_updates(editor, s.id, start)
                    if u["sessionUpdate"] == "tool_call_update"
                ),
                never,
            )
        report["before_kill"] = marked(one.mark)
        report["tmp_before_kill"] = sorted(p.name for p in tmp.iterdir())
        assert editor.client._server is not None
        editor.kill_server()
        await asyncio.wait_for(editor.client._server.wait(), 10)
        report["kill_gone_s"], report["kill_left"] = await gone_within(one.mark, 10.0)
        await asyncio.gather(*killed_turns, return_exceptions=True)  # they end with the connection
        collect(editor.model, seen, tally)
    report["registry_after_kill"] = registry_entries(data)
    report["tmp_after_kill"] = sorted(p.name for p in tmp.iterdir())

    # bridge 2, on the same data dir: load the sessions, turns kill_at+1 .. turns-1, then one last prompt each
    # (its request carries the whole history to the validator)
    async with running_editor(
        scenario, root, data, env=bridge_env(two.mark, tmp), initialization_options=options
    ) as editor:
        editor.on_permission = permission_handler(editor, by_id, tally)
        report["left_of_1_after_2_started"] = marked(one.mark)
        loaded = time.monotonic()
        for s in sessions:
            s.mcp_log = root / f"mcp{s.index}-2.log"
            await editor.request(
                "session/load",
                {
                    "sessionId": s.id,
                    "cwd": str(s.workspace),
                    "mcpServers": [mcp_server(s, two.mark)] if size.mcp else [],
                },
            )
        report["load_s"] = time.monotonic() - loaded
        report["after_load"] = await sample(editor, "after load", size.kill_at + 1, two.mark)
        seen = await rounds(editor, sessions, two, tally, samples, size, 0)
        await asyncio.gather(*(editor.prompt(s.id, "that is all, thanks") for s in sessions))
        for s in sessions:
            s.prompts_sent += 1
        collect(editor.model, seen, tally)
    report["end_gone_s"], report["end_left"] = await gone_within(two.mark, 10.0)
    report["end_left_of_1"] = marked(one.mark)
    report["registry_at_end"] = registry_entries(data)
    report["tmp_at_end"] = sorted(p.name for p in tmp.iterdir())
    report["loadavg"].append(os.getloadavg())

    histories = {}
    for s in sessions:
        body = tally.last_request.get(str(s.workspace), {})
        messages = body.get("messages", [])
        prompts = sum(
            1
            for m in messages
            if m.get("role") == "user"
            for b in m.get("content", [])
            if isinstance(b, dict)
            and b.get("type") == "text"
            and (b["text"].startswith(PLAN) or b["text"].startswith("hello ") or "that is all" in b["text"])
        )
        histories[s.index] = (
            len(messages),
            history_errors(messages),
            prompts,
            s.prompts_sent,
            len(json.dumps(messages)),
        )
    report.update(tally=tally, samples=samples, histories=histories, bridges=[one, two])
    return report


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def print_report(report: dict[str, Any], size: Size, seconds: float) -> dict[str, Any]:
    """Print the table; return the JSON summary (figures, and PASS/FAIL per goal and per check)."""
    tally: Tally = report["tally"]
    samples: list[Sample] = report["samples"]
    sandbox = probe()
    cancels = sum(n for kind, n in tally.outcomes.items() if kind.startswith("cancel"))
    turns_run = sum(tally.outcomes.values())
    print(
        f"soak: {size.sessions} sessions x {size.turns} turns (seed {size.seed}), kill -9 + restart at turn "
        f"{size.kill_at}, sandbox {'on' if sandbox.ok else 'off (' + sandbox.reason + ')'}; {seconds:.0f} s wall"
    )
    la = report["loadavg"]
    print(
        f"load average (1/5/15 min) at start {la[0][0]:.2f} {la[0][1]:.2f} {la[0][2]:.2f}, "
        f"at end {la[1][0]:.2f} {la[1][1]:.2f} {la[1][2]:.2f} on {os.cpu_count()} cores"
    )
    cold = samples[0]
    print(
        f"bridge 1 cold (sessions made, no turn yet): RSS {cold.rss_kb / 1024:.1f} MB, {cold.fds} fds, "
        f"{cold.tasks} tasks, {cold.processes} processes"
    )
    after_load = report["after_load"]
    print(
        f"bridge 2 right after session/load x{size.sessions} ({report['load_s'] * 1000:.0f} ms): "
        f"RSS {after_load.rss_kb / 1024:.1f} MB, {after_load.fds} fds, {after_load.tasks} tasks"
    )
    print(f"{'':34}{'baseline':>12}{'end':>12}{'growth':>12}   goal")
    summary: dict[str, Any] = {
        "bench": "soak",
        "sessions": size.sessions,
        "turns": size.turns,
        "seed": size.seed,
        "turns_run": turns_run + size.sessions * 2,
        "cancels": cancels,
        "killed_turns": size.sessions,
        "wall_s": round(seconds, 1),
        "sandbox": sandbox.ok,
    }
    goals: dict[str, bool] = {"rss_growth": True, "fds_flat": True, "tasks_flat": True}
    bridges: list[Bridge] = report["bridges"]
    for bridge in bridges:
        mine = [x for x in samples if x.label == bridge.label]
        base = next(x for x in mine if x.turn >= bridge.base)
        end = mine[-1]
        rss_pct = (end.rss_kb - base.rss_kb) / base.rss_kb * 100
        # fds: the HTTP client's keep-alive connections to the model come and go with the turns in flight (at
        # most one per session); every other fd must not grow
        own_base, own_end = base.fds - base.model_sockets, end.fds - end.model_sockets
        pool_max = max(x.model_sockets for x in mine)
        rss_ok, tasks_ok = rss_pct <= GOALS["rss_growth_pct"], end.tasks <= base.tasks
        fds_ok = own_end <= own_base and pool_max <= size.sessions
        goals["rss_growth"] &= rss_ok
        goals["fds_flat"] &= fds_ok
        goals["tasks_flat"] &= tasks_ok
        print(f"{f'{bridge.label} (turn {base.turn} -> {end.turn})':34}")
        print(
            f"{'  RSS':34}{base.rss_kb / 1024:>9.1f} MB{end.rss_kb / 1024:>9.1f} MB{rss_pct:>+10.1f} %   "
            f"<= 10 %  {verdict(rss_ok)}"
        )
        print(f"{'  open fds':34}{base.fds:>12}{end.fds:>12}{end.fds - base.fds:>+12}")
        print(
            f"{'    model connections (pool)':34}{base.model_sockets:>12}{end.model_sockets:>12}"
            f"{end.model_sockets - base.model_sockets:>+12}   <= {size.sessions} (max seen {pool_max})"
        )
        print(f"{'    all others':34}{own_base:>12}{own_end:>12}{own_end - own_base:>+12}   flat     {verdict(fds_ok)}")
        print(
            f"{'  asyncio tasks':34}{base.tasks:>12}{end.tasks:>12}{end.tasks - base.tasks:>+12}   flat     "
            f"{verdict(tasks_ok)}"
        )
        print(f"{'  threads':34}{base.threads:>12}{end.threads:>12}{end.threads - base.threads:>+12}")
        print(f"{'  processes (idle)':34}{base.processes:>12}{end.processes:>12}{end.processes - base.processes:>+12}")
        trace = "  ".join(f"{x.turn}:{x.rss_kb / 1024:.0f}MB/{x.fds}fd/{x.tasks}t" for x in mine)
        print(f"  trace (turn:RSS/fds/tasks) {trace}")
        print(f"  longest wait for terminations to settle before a sample: {max(x.settle_s for x in mine):.2f} s")
        if end.tasks != base.tasks:
            print(
                f"  tasks that grew: {dict(Counter(end.task_names) - Counter(base.task_names))}, "
                f"shrank: {dict(Counter(base.task_names) - Counter(end.task_names))}"
            )
        if end.threads != base.threads:
            print(
                f"  threads that grew: {dict(Counter(end.thread_names) - Counter(base.thread_names))}, "
                f"at the end: {end.thread_names}"
            )
        if own_end != own_base:
            print(
                f"  fds that grew: {dict(Counter(end.fd_kinds) - Counter(base.fd_kinds))}, "
                f"shrank: {dict(Counter(base.fd_kinds) - Counter(end.fd_kinds))}"
            )
        key = bridge.label.replace(" ", "")
        summary[key] = {
            "turn_base": base.turn,
            "turn_end": end.turn,
            "rss_base_kb": base.rss_kb,
            "rss_end_kb": end.rss_kb,
            "rss_growth_pct": round(rss_pct, 2),
            "fds_base": base.fds,
            "fds_end": end.fds,
            "fds_other_base": own_base,
            "fds_other_end": own_end,
            "model_sockets_base": base.model_sockets,
            "model_sockets_end": end.model_sockets,
            "model_sockets_max": pool_max,
            "tasks_base": base.tasks,
            "tasks_end": end.tasks,
            "threads_base": base.threads,
            "threads_end": end.threads,
        }
    before = report["before_kill"]
    gone = report["kill_gone_s"]
    print(
        f"kill -9 of bridge 1 with {len(before)} processes of it running (bridge, watchdog, shells, "
        f"escaping trees, MCP servers): "
        + (f"all gone in {gone:.2f} s" if gone is not None else f"LEFT after 10 s: {report['kill_left']}")
        + f"; left when bridge 2 started: {len(report['left_of_1_after_2_started'])}; "
        f"registry files after the kill: {len(report['registry_after_kill'])}; temp dirs before the kill "
        f"{len(report['tmp_before_kill'])}, when bridge 2 started: {report['tmp_after_kill'] or 'none'}"
    )
    end_gone = report["end_gone_s"]
    left = {**report["end_left"], **report["end_left_of_1"]}
    print(
        "after the end: "
        + (
            f"every process of bridge 2 gone in {end_gone:.2f} s"
            if end_gone is not None
            else f"LEFT after 10 s: {report['end_left']}"
        )
        + f"; of bridge 1: {len(report['end_left_of_1'])} left; registry files left: "
        f"{report['registry_at_end'] or 'none'}; temp dirs left: {report['tmp_at_end'] or 'none'}"
    )
    goals["no_processes_left"] = not left and not report["left_of_1_after_2_started"] and not report["registry_at_end"]
    summary.update(
        processes_before_kill=len(before),
        kill_gone_s=None if gone is None else round(gone, 2),
        processes_left=len(left),
        registry_left=len(report["registry_at_end"]),
    )
    print(
        f"model requests: {tally.requests}, rejected by the offline API's validator: {len(tally.rejected)}"
        + (f" (first: {tally.rejected[0]})" if tally.rejected else "")
        + (f"; unanswered/failed: {len(tally.unanswered)} ({tally.unanswered[0]})" if tally.unanswered else "")
    )
    histories_ok = True
    for index, (count, errors, prompts, sent, size_bytes) in report["histories"].items():
        print(
            f"session {index}: final history {count} messages ({size_bytes / 1024:.0f} KB as JSON), "
            f"history_errors: {errors or 'none'}; prompts kept {prompts} of {sent} sent"
        )
        histories_ok &= not errors and count > 0
    times = tally.turn_seconds
    window = SAMPLE_EVERY * size.sessions
    print(
        f"turn time: median {statistics.median(times) * 1000:.0f} ms; first {window} turns "
        f"{statistics.median(times[:window]) * 1000:.0f} ms, last {statistics.median(times[-window:]) * 1000:.0f} ms"
    )
    print(f"permission questions by tool: {dict(tally.asked)}")
    print("turns by kind and stop reason: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.outcomes.items())))
    if tally.errors:
        print(f"turns that failed: {len(tally.errors)}")
        for error in tally.errors[:10]:
            print(f"  {error}")
    checks = {
        "kill_gone_within_2s": gone is not None and gone <= 2.0,
        "no_request_rejected": not tally.rejected,
        "histories_valid": histories_ok,
        "no_turn_failed": not tally.errors,
        "no_temp_dir_left": not report["tmp_at_end"],
    }
    print("goals:  " + "  ".join(f"{name} {verdict(ok)}" for name, ok in goals.items()))
    print("checks: " + "  ".join(f"{name} {verdict(ok)}" for name, ok in checks.items()))
    summary["goals"] = {name: verdict(ok) for name, ok in goals.items()}
    summary["checks"] = {name: verdict(ok) for name, ok in checks.items()}
    return summary


def parse_args(argv: list[str] | None = None) -> Size:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", type=int, default=100, help="per session, the killed one included (>= 3)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--kinds", default="", help=f"comma-separated, played in turn: {', '.join(KINDS)}")
    parser.add_argument("--no-mcp", action="store_true", help="no MCP server (a cheaper run; no MCP kinds of turn)")
    args = parser.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if args.no_mcp and (mcp_kinds := [k for k in kinds if "mcp" in k]):
        parser.error(f"--no-mcp leaves no MCP server for {mcp_kinds}")
    if unknown := [k for k in kinds if k not in KINDS]:
        parser.error(f"unknown kinds: {unknown}")
    if args.turns < 3 or args.sessions < 1:
        parser.error("at least 1 session and 3 turns (one before the kill, the killed one, one after)")
    return Size(args.sessions, args.turns, args.seed, kinds, mcp=not args.no_mcp)


async def run(size: Size) -> dict[str, Any]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        report = await soak(Path(tmp), size)
    summary = print_report(report, size, time.monotonic() - started)
    print(json.dumps(summary), flush=True)
    return summary


if __name__ == "__main__":
    asyncio.run(run(parse_args()))
