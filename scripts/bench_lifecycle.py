"""Start and stop (issue 12), each figure beside a baseline measured in the same run (the machine may be
loaded: compare ratios, not absolute times). Runs are interleaved (baseline, ours, baseline, ours, ...). The
start-up matrix of issue 26 (HOME x NO_PROXY x front end) is scripts/bench_startup.py.

- `python -c pass`                                   the cost of a Python process at all
- bare-httpx floor: python + `import httpx2` + one streaming POST (sync), spawn -> request at the server
- `agent-bridge run`: spawn -> first model request, wall and CPU of a one-answer run, peak RSS
- `run`: the answer's last line printed -> process gone (exit without interpreter teardown)
- `run`: SIGINT while text streams -> process gone
- `run`: SIGINT while a command ignores SIGINT and SIGTERM -> process gone, and which signals it saw
- `serve`: spawn -> `initialize` answered; RSS after initialize and after one turn; spawn -> first
  model request with `session/new` and `session/prompt` sent as soon as possible; SIGTERM after a turn
  -> process gone
- `serve` and `acp`: SIGINT/SIGTERM while text streams -> process gone; the cancelled turn's answer -> gone
- two `sleep 2; echo x` Bash calls in one response: the turn's wall time (parallel: ~2 s)
- what holds `serve`'s RSS: the growth of each import step of what it has loaded after a turn
- at the end, issue 12's done-when: each limit against its figure

Every child gets its own data dir and HOME; the model is an OfflineServer in this process (a thread).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.offline import OfflineServer  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
PY = sys.executable
# BENCH_BRIDGE: another checkout's `agent-bridge` to measure (a before/after pair: run the bench once with each).
BRIDGE = os.environ.get("BENCH_BRIDGE") or str(Path(PY).parent / "agent-bridge")
MIB = 1024 * 1024


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Child:
    """A spawned process: when it started, what it printed (with arrival times), its rusage at exit."""

    proc: subprocess.Popen[bytes]
    started: float
    lines: list[tuple[float, str]] = field(default_factory=list)
    ended: float = 0.0
    cpu: float = 0.0
    maxrss: int = 0
    _reader: threading.Thread | None = None

    @classmethod
    def spawn(
        cls,
        argv: list[str],
        env: dict[str, str],
        *,
        stdin: int | None = None,
        read_stdout: bool = True,
        cwd: Path | None = None,
    ) -> Child:
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        child = cls(proc, started)
        if read_stdout:
            child._reader = threading.Thread(target=child._read, args=(proc.stdout,), daemon=True)
            child._reader.start()
        return child

    def _read(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            self.lines.append((time.monotonic(), raw.decode("utf-8", "replace")))

    def wait_line(self, predicate: Callable[[str], bool], timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if predicate(line):
                    return at
            if self.proc.poll() is not None and (self._reader is None or not self._reader.is_alive()):
                break
            time.sleep(0.001)
        raise TimeoutError(f"no such line; got {[line for _, line in self.lines][-5:]}")

    def reap(self, timeout: float = 60) -> float:
        """Wait for the exit (os.wait4: the child's own CPU and peak RSS); the time it was seen gone."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                self.ended = time.monotonic()
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu = usage.ru_utime + usage.ru_stime
                self.maxrss = usage.ru_maxrss * 1024
                if self._reader is not None:
                    self._reader.join(5)
                return self.ended
            if time.monotonic() > deadline:
                self.proc.kill()
                raise TimeoutError(f"{self.proc.args!r} did not exit")
            time.sleep(0.0005)


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def env_for(model: OfflineServer, home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_"))}
    env.update(
        ANTHROPIC_BASE_URL=model.base_url,
        ANTHROPIC_API_KEY="bench-key",
        HOME=str(home),
        AGENT_BRIDGE_DATA_DIR=str(home / "data"),
        AGENT_BRIDGE_CONFIG_DIR=str(home / "config"),
        AGENT_BRIDGE_LOG="ERROR",
        # the generated methods' kept code (bridge/codecache.py), written as a first start writes it wherever
        # Python writes bytecode (the machines this runs on set PYTHONDONTWRITEBYTECODE)
        AGENT_BRIDGE_CODE_CACHE="write",
        **extra,
    )
    # BENCH_ENV: more of the bridge's variables, `K=V,K=V` (AGENT_BRIDGE_CHECKPOINTS=0: a feature's part of a figure).
    for item in os.environ.get("BENCH_ENV", "").split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            env[key] = value
    return env


def text(answer: str, *, chunks: int = 1, delay_ms: int = 0) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": answer, "chunks": chunks, "delay_ms": delay_ms}],
        "stop_reason": "end_turn",
    }


FLOOR = """\
import sys, httpx2
body = {"model": "m", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
with httpx2.stream("POST", sys.argv[1] + "/v1/messages", json=body, headers={"x-api-key": "k"}) as r:
    for _ in r.iter_bytes():
        pass
"""


# ---- process start ------------------------------------------------------------------------------------


def bench_start(root: Path) -> dict[str, float]:
    """python -c pass, the bare-httpx floor and `run`, interleaved, against one server."""
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "python_pass_s",
            "python_pass_cpu_s",
            "floor_first_request_s",
            "floor_wall_s",
            "floor_cpu_s",
            "run_first_request_s",
            "run_wall_s",
            "run_cpu_s",
            "run_peak_rss_mib",
            "run_done_to_exit_s",
        )
    }
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    with OfflineServer({"responses": [], "after_last": "end_turn_text"}) as model:
        env = env_for(model, root / "home")  # one data dir: the tool schemas are cached after the first run
        Child.spawn([BRIDGE, "run", "warm up", "--non-interactive", "--cwd", str(ws)], env).reap()
        for _ in range(RUNS):
            child = Child.spawn([PY, "-c", "pass"], env, read_stdout=False)
            child.reap()
            out["python_pass_s"].append(child.ended - child.started)
            out["python_pass_cpu_s"].append(child.cpu)

            n = len(model.requests)
            child = Child.spawn([PY, "-c", FLOOR, model.base_url], env, read_stdout=False)
            child.reap()
            out["floor_first_request_s"].append(model.wait_for_requests_sync(n + 1)[n].received_at - child.started)
            out["floor_wall_s"].append(child.ended - child.started)
            out["floor_cpu_s"].append(child.cpu)

            n = len(model.requests)
            child = Child.spawn([BRIDGE, "run", "hi", "--non-interactive", "--cwd", str(ws)], env)
            done = child.wait_line(lambda line: line.startswith("[end_turn]"))
            child.reap()
            out["run_first_request_s"].append(model.wait_for_requests_sync(n + 1)[n].received_at - child.started)
            out["run_wall_s"].append(child.ended - child.started)
            out["run_cpu_s"].append(child.cpu)
            out["run_peak_rss_mib"].append(child.maxrss / MIB)
            out["run_done_to_exit_s"].append(child.ended - done)
    figures = {k: median(v) for k, v in out.items()}
    figures["run_first_request_vs_floor"] = figures["run_first_request_s"] / figures["floor_first_request_s"]
    figures["run_first_request_vs_python"] = figures["run_first_request_s"] / figures["python_pass_s"]
    figures["run_cpu_vs_floor_cpu"] = figures["run_cpu_s"] / figures["floor_cpu_s"]
    return figures


# ---- stopping -------------------------------------------------------------------------------------------


def bench_sigint(root: Path) -> dict[str, float]:
    """SIGINT while the answer streams, and while a command that traps SIGINT and SIGTERM runs."""
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    streaming, command, signals_seen = [], [], []
    slow = {
        "content": [{"type": "text", "text": "word " * 400, "chunks": 400, "delay_ms": 10}],
        "stop_reason": "end_turn",
    }
    with OfflineServer({"responses": [slow], "after_last": "repeat_last"}) as model:
        for i in range(RUNS):
            env = env_for(model, root / f"sig{i}")
            child = Child.spawn([BRIDGE, "run", "talk", "--non-interactive", "--cwd", str(ws)], env)
            child.wait_line(lambda line: "word word" in line)
            sent = time.monotonic()
            child.proc.send_signal(signal.SIGINT)
            child.reap()
            streaming.append(child.ended - sent)
    log, ready = ws / "signals.log", ws / "ready"
    # an executable run by its path: the permission layer asks about `trap` in a command line and `sh FILE`
    script = ws / "traps.sh"
    script.write_text(
        f"#!/bin/sh\ntrap 'echo INT >> {log}' INT\ntrap 'echo TERM >> {log}' TERM\n"
        f"touch {ready}\nwhile true; do sleep 0.02; done\n"
    )
    script.chmod(0o755)
    tool = {
        "content": [{"type": "tool_use", "name": "Bash", "input": {"command": str(script)}}],
        "stop_reason": "tool_use",
    }
    with OfflineServer({"responses": [tool], "after_last": "repeat_last"}) as model:
        for i in range(max(3, RUNS // 2)):
            log.unlink(missing_ok=True)
            ready.unlink(missing_ok=True)
            env = env_for(model, root / f"cmd{i}")
            child = Child.spawn([BRIDGE, "run", "go", "--non-interactive", "--cwd", str(ws), "--allow", "Bash"], env)
            deadline = time.monotonic() + 60
            while not ready.exists():  # the traps are set
                if time.monotonic() > deadline or child.proc.poll() is not None:
                    raise TimeoutError("the command never started")
                time.sleep(0.002)
            sent = time.monotonic()
            child.proc.send_signal(signal.SIGINT)
            child.reap()
            command.append(child.ended - sent)
            seen = log.read_text().split() if log.exists() else []
            signals_seen.append(float(("INT" in seen) + ("TERM" in seen)))
    return {
        "sigint_streaming_to_exit_s": median(streaming),
        "sigint_command_to_exit_s": median(command),
        "command_signals_seen_of_2": median(signals_seen),
    }


# ---- serve ----------------------------------------------------------------------------------------------


def frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Lsp:
    """A minimal LSP client over a child's pipes: send frames, read framed answers with arrival times."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout
        stream = self.proc.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length is not None
            self.messages.append((time.monotonic(), json.loads(stream.read(length))))

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(frame(obj))
        self.proc.stdin.flush()

    def answer(self, msg_id: int, timeout: float = 60) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, message in list(self.messages):
                if message.get("id") == msg_id and "method" not in message:
                    return at, message
            time.sleep(0.0005)
        raise TimeoutError(f"no answer to {msg_id}")


def bench_serve(root: Path) -> dict[str, float]:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[float]] = {
        k: []
        for k in (
            "python_pass_s",
            "initialize_s",
            "rss_after_initialize_mib",
            "first_request_s",
            "prompt_to_request_s",
            "rss_after_turn_mib",
            "sigterm_to_exit_s",
            "eof_to_exit_s",
        )
    }
    with OfflineServer({"responses": [], "after_last": "end_turn_text"}) as model:
        env = env_for(model, root / "serve")  # one data dir: what an editor's starts share
        for i in range(RUNS + 1):

            def add(key: str, value: float, counted: bool = i > 0) -> None:
                if counted:  # the first start is the cold one (nothing cached yet): not counted
                    out[key].append(value)

            child = Child.spawn([PY, "-c", "pass"], env, read_stdout=False)
            child.reap()
            add("python_pass_s", child.ended - child.started)

            n = len(model.requests)
            lsp = Lsp([BRIDGE, "serve"], env)
            lsp.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            at, _ = lsp.answer(1)
            add("initialize_s", at - lsp.started)
            add("rss_after_initialize_mib", rss(lsp.proc.pid) / MIB)
            lsp.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
            lsp.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}})
            _, new = lsp.answer(2)
            sid = new["result"]["sessionId"]
            sent = time.monotonic()
            lsp.send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
                }
            )
            lsp.answer(3)
            request = model.wait_for_requests_sync(n + 1)[n]
            add("first_request_s", request.received_at - lsp.started)
            add("prompt_to_request_s", request.received_at - sent)
            add("rss_after_turn_mib", rss(lsp.proc.pid) / MIB)
            if i % 2 == 0:
                sent = time.monotonic()
                lsp.proc.send_signal(signal.SIGTERM)
                lsp.proc.wait(30)
                add("sigterm_to_exit_s", time.monotonic() - sent)
            else:
                sent = time.monotonic()
                assert lsp.proc.stdin
                lsp.proc.stdin.close()
                lsp.proc.wait(30)
                add("eof_to_exit_s", time.monotonic() - sent)
    figures = {k: median(v) for k, v in out.items()}
    figures["initialize_vs_python"] = figures["initialize_s"] / figures["python_pass_s"]
    return figures


# ---- signals in serve and acp ----------------------------------------------------------------------------


class Ndjson(Lsp):
    """The same client over ACP's framing: one JSON message per line."""

    def _read(self) -> None:
        assert self.proc.stdout
        for line in iter(self.proc.stdout.readline, b""):
            if line.strip():
                self.messages.append((time.monotonic(), json.loads(line)))

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
        self.proc.stdin.flush()


def bench_signals(root: Path) -> dict[str, float]:
    """`serve` and `acp`: SIGINT or SIGTERM (alternating) while the answer streams -> process gone, and the
    cancelled turn's answer -> process gone (the issue's "within 50 ms of the turn's end")."""
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    slow = {
        "content": [{"type": "text", "text": "word " * 400, "chunks": 400, "delay_ms": 10}],
        "stop_reason": "end_turn",
    }
    out: dict[str, list[float]] = {}
    with OfflineServer({"responses": [slow], "after_last": "repeat_last"}) as model:
        for mode in ("serve", "acp"):
            for i in range(RUNS):
                env = env_for(model, root / f"{mode}{i}")
                client = (Lsp if mode == "serve" else Ndjson)([BRIDGE, mode], env)
                init = {"capabilities": {}} if mode == "serve" else {"protocolVersion": 1, "clientCapabilities": {}}
                client.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
                client.answer(1)
                if mode == "serve":
                    client.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                client.send(
                    {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(ws), "mcpServers": []}}
                )
                sid = client.answer(2)[1]["result"]["sessionId"]
                client.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 3,
                        "method": "session/prompt",
                        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "talk"}]},
                    }
                )
                deadline = time.monotonic() + 60
                while not any(
                    m.get("method") == "session/update"
                    and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
                    for _, m in list(client.messages)
                ):
                    if time.monotonic() > deadline:
                        raise TimeoutError("no text streamed")
                    time.sleep(0.001)
                sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
                sent = time.monotonic()
                client.proc.send_signal(sig)
                client.proc.wait(30)
                gone = time.monotonic()
                out.setdefault(f"{mode}_signal_streaming_to_exit_s", []).append(gone - sent)
                answered = [at for at, m in client.messages if m.get("id") == 3 and "method" not in m]
                if answered:
                    out.setdefault(f"{mode}_turn_end_to_exit_s", []).append(gone - answered[0])
    return {key: median(values) for key, values in out.items()}


# ---- parallel commands ----------------------------------------------------------------------------------


def bench_parallel(root: Path) -> dict[str, float]:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    call = {"type": "tool_use", "name": "Bash", "input": {"command": "sleep 2; echo x"}}
    scenario = {"responses": [{"content": [call, dict(call)], "stop_reason": "tool_use"}, text("done")]}
    turns = []
    for i in range(max(2, RUNS // 3)):
        with OfflineServer(scenario) as model:
            env = env_for(model, root / f"par{i}")
            child = Child.spawn([BRIDGE, "run", "go", "--non-interactive", "--cwd", str(ws), "--allow", "Bash"], env)
            child.reap()
            first, second = model.wait_for_requests_sync(2)[:2]
            turns.append(second.received_at - first.received_at)
    return {"two_sleep_2_calls_s": median(turns)}


# ---- what the memory after a turn is ------------------------------------------------------------------

# What `serve` has loaded after one turn, in import order: each step's RSS growth is what it holds.
RSS_STEPS = """\
import importlib, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
before = rss()
print("interpreter", before)
for step in sys.argv[1:]:
    for name in step.split(","):
        importlib.import_module(name)
    now = rss()
    print(step, now - before)
    before = now
"""
STEPS = {
    "asyncio + ssl (OpenSSL)": "asyncio,ssl",
    "httpx2 (HTTP, h11, certifi)": "httpx2",
    "pydantic (core)": "pydantic",
    "lsprotocol + pygls": "lsprotocol.types,pygls.lsp.server",
    "bridge server": "bridge.server.app",
    "bridge domain (agent, loop, permissions)": "bridge.agent,bridge.permissions.engine",
    "tools": "bridge.tools.registry",
    "model direct transport": "bridge.model.direct",
}


def bench_rss(root: Path) -> dict[str, float]:
    """Where `serve`'s RSS after a turn goes (the anthropic SDK is not among it: it is not imported)."""
    out = subprocess.run(
        [PY, "-c", RSS_STEPS, *STEPS.values()], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.splitlines()
    names = {v: k for k, v in STEPS.items()}
    figures = {}
    for line in out:
        step, mib = line.rsplit(" ", 1)
        figures[f"MiB {names.get(step, step)}"] = float(mib)
    sdk = subprocess.run([PY, "-c", RSS_STEPS, "anthropic"], capture_output=True, text=True, check=True).stdout
    figures["MiB sum of the above"] = sum(figures.values())
    figures["MiB anthropic SDK with its deps, alone (not loaded)"] = float(sdk.splitlines()[-1].rsplit(" ", 1)[1])
    return figures


# ---- the done-when of issue 12 --------------------------------------------------------------------------

CHECKS = (  # (group, figure, limit, what)
    ("start", "run_first_request_s", 0.6, "start -> first request <= 0.6 s"),
    ("start", "run_first_request_vs_floor", 1.5, "start -> first request <= 1.5x bare httpx"),
    ("stop", "sigint_streaming_to_exit_s", 0.1, "SIGINT while streaming -> exit <= 0.1 s"),
    ("signals", "serve_signal_streaming_to_exit_s", 0.1, "serve: SIGINT/TERM while streaming -> exit <= 0.1 s"),
    ("signals", "acp_signal_streaming_to_exit_s", 0.1, "acp: SIGINT/TERM while streaming -> exit <= 0.1 s"),
    ("signals", "serve_turn_end_to_exit_s", 0.05, "serve: turn's end -> exit <= 50 ms"),
    ("signals", "acp_turn_end_to_exit_s", 0.05, "acp: turn's end -> exit <= 50 ms"),
    ("serve", "initialize_s", 0.15, "serve: initialize answered <= 0.15 s"),
    ("serve", "rss_after_turn_mib", 90.0, "serve: RSS after one turn <= 90 MiB"),
    ("parallel", "two_sleep_2_calls_s", 2.3, "two sleep 2; echo calls <= 2.3 s"),
)


def main() -> None:
    groups = {
        "start": bench_start,
        "stop": bench_sigint,
        "signals": bench_signals,
        "serve": bench_serve,
        "parallel": bench_parallel,
        "rss": bench_rss,
    }
    only = sys.argv[1:] or list(groups)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {RUNS} runs, medians")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in only:
            results[name] = figures = groups[name](Path(tmp) / name)
            for key, value in figures.items():
                print(f"{name:>9}  {key:<48} {value:>10.3f}", flush=True)
    print(f"done when (issue 12), load average now {os.getloadavg()[0]:.1f}:")
    for group, key, limit, what in CHECKS:
        if key in results.get(group, {}):
            value = results[group][key]
            print(f"  {'ok  ' if value <= limit else 'FAIL'} {what:<45} {value:.3f}")


if __name__ == "__main__":
    main()
