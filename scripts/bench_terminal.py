"""`run` on a terminal against `run` piped (issue 28 item 3): the terminal loads rich for the markdown and draws
a live area; the pipe does neither. Runs interleaved (piped, terminal, piped, ...), the same markdown answer,
one offline server in this process; medians.

- spawn -> the first model request at the server (rich must load after it: the two should match)
- spawn -> process gone (wall), and the child's CPU (user + system)
- bytes written to the terminal (the live area's redraws included)

Run it with another tree's python (`/other/.venv/bin/python scripts/bench_terminal.py`) to measure that tree's
`agent-bridge` (it is taken from beside the interpreter) with the same server and answer.
"""

from __future__ import annotations

import fcntl
import os
import pty
import resource
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bridge.offline import OfflineServer  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
BRIDGE = str(Path(sys.executable).parent / "agent-bridge")
ANSWER = (
    "# Notes\n\nThe **parser** is faster:\n\n- one\n- two\n\n```python\ndef f(x):\n    return x * 2\n```\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\nDone."
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one(argv: list[str], env: dict[str, str], cwd: Path, *, tty: bool) -> tuple[float, float, int]:
    """Wall time, CPU and bytes written of one run."""
    cpu = children_cpu()
    started = time.monotonic()
    if not tty:
        done = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, check=True)
        return time.monotonic() - started, children_cpu() - cpu, len(done.stdout)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    process = subprocess.Popen(argv, env=env, cwd=cwd, stdin=slave, stdout=slave, stderr=subprocess.DEVNULL)
    os.close(slave)
    written = 0
    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            written += len(data)
        elif process.poll() is not None:
            break
    process.wait()
    os.close(master)
    return time.monotonic() - started, children_cpu() - cpu, written


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {RUNS} runs, medians; {BRIDGE}")
    figures: dict[str, list[float]] = {}
    scenario = {
        "responses": [{"content": [{"type": "text", "text": ANSWER, "chunks": 20}], "stop_reason": "end_turn"}],
        "after_last": "repeat_last",
    }
    with tempfile.TemporaryDirectory() as tmp, OfflineServer(scenario) as model:
        root = Path(tmp)
        (root / "ws").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "AGENT_BRIDGE_", "NO_COLOR"))}
        env |= {
            "HOME": str(root),
            "AGENT_BRIDGE_DATA_DIR": str(root / "data"),
            "TERM": "xterm",
            "AGENT_BRIDGE_CONFIG_DIR": str(root / "cfg"),
            "ANTHROPIC_BASE_URL": model.base_url,
            "ANTHROPIC_API_KEY": "bench",
            "COLUMNS": "80",
            "LINES": "24",
        }
        argv = [BRIDGE, "run", "hi", "--non-interactive"]
        one(argv, env, root / "ws", tty=False)  # warm the page cache
        for _ in range(RUNS):
            for kind in ("piped", "terminal"):
                n = len(model.requests)
                started = time.monotonic()
                wall, cpu, written = one(argv, env, root / "ws", tty=kind == "terminal")
                first = model.wait_for_requests_sync(n + 1)[n].received_at - started
                for key, value in (
                    ("first_request_s", first),
                    ("wall_s", wall),
                    ("cpu_s", cpu),
                    ("bytes", float(written)),
                ):
                    figures.setdefault(f"{kind}_{key}", []).append(value)
    medians = {key: statistics.median(values) for key, values in figures.items()}
    for key in ("first_request_s", "wall_s", "cpu_s"):
        medians[f"terminal_vs_piped_{key}"] = medians[f"terminal_{key}"] / medians[f"piped_{key}"]
    for key, value in medians.items():
        print(f"  {key:<36} {value:>10.3f}")


if __name__ == "__main__":
    main()
