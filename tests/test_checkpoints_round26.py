"""Attack round 26 on checkpoints: a folder's own files made a snapshot slow, and a cancel waited for it.

A `.gitignore` of 100,000 costly patterns (`**/*a*b*c*d*e*f*g*h*i*j*N`) over 2,000 files makes a snapshot of the
workspace take half a minute. A Ctrl-C while the first one was taken said "cancelling…" at once, but the turn
ended, and `run` exited, only when the snapshot was done (35 s in the helper's run); after the call, a cancel waited
for the after-snapshot too (46 s). Now a cancel ends the waits (tests/test_checkpoints.py: the turn answers while
the snapshot still runs), and a session that closes with no step recorded stops its first snapshot's git.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

AGENT_BRIDGE = str(Path(sys.executable).parent / "agent-bridge")


def _descendants(pid: int) -> list[tuple[int, str]]:
    """The processes below `pid` (pid, command name), from /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        names[int(entry)] = name
        children.setdefault(int(rest[1]), []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append((child, names.get(child, "")))
            stack.append(child)
    return found


def test_ctrl_c_during_a_slow_first_snapshot_ends_run_at_once_and_stops_its_git(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(2000):
        folder = ws / f"d{i % 40}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text("x")
    (ws / ".gitignore").write_text("".join(f"**/*a*b*c*d*e*f*g*h*i*j*{n}\n" for n in range(100_000)))
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "AGENT_BRIDGE_DATA_DIR": str(tmp_path / "data"),
        "AGENT_BRIDGE_CONFIG_DIR": str(tmp_path / "cfg"),
    }
    process = subprocess.Popen(
        [AGENT_BRIDGE, "run", "--offline", "playground", "--dangerously-approve-all", "--cwd", str(ws), "run: touch x"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # polling the process tree until the snapshot's slow git has been running for a second (a snapshot runs a
        # few quick ones first)
        deadline, seen, gits = time.monotonic() + 60, dict[int, float](), list[int]()
        while time.monotonic() < deadline and not gits:
            now = time.monotonic()
            running = {pid for pid, name in _descendants(process.pid) if name == "git"}
            seen = {pid: seen.get(pid, now) for pid in running}
            gits = [pid for pid, since in seen.items() if now - since >= 1.0]
            time.sleep(0.02)
        assert gits, "no git of the snapshot ran for a second"
        process.send_signal(signal.SIGINT)
        sent = time.monotonic()
        output, _ = process.communicate(timeout=120)
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, output
    assert "[cancelled]" in output
    assert not (ws / "x").exists(), "the call never started"
    # the snapshot takes ~30 s here; the session closing waited up to CLOSE_WAIT (10 s) for it before
    assert took < 5, f"run exited {took:.1f} s after Ctrl-C"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in gits):
        time.sleep(0.02)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in gits), "its git goes on after the bridge"
