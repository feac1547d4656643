"""The bridge's API key can't be read out of its process by what it starts outside the sandbox (F5), end to end,
as an ordinary user: hooks, and commands with the sandbox off, run as the bridge's own user, and
/proc/<bridge>/environ — the environment the bridge was started with, whatever it later removes from
`os.environ` — is theirs to read unless the bridge is not dumpable (prctl PR_SET_DUMPABLE 0).

Root reads any process's environ, so the bridge runs as uid 1000 (`setpriv`, as a user runs it) in a folder of
that user's under /var/tmp. A user hook (UserPromptSubmit and Stop) and an approved command each scan every
/proc/*/environ for the key's value. The controls show the scan can find what it looks for: a sibling process of
the same user (a `sleep` it starts, dumpable) shows its marker, and the scanner's own environment shows the
variable the bridge hands out (PLAIN_MARK)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import text_response, tool_response

UID = 1000
KEY = "sk-ant-api03-BRIDGE-KEY-e2e-4d1f9c"
SIBLING = "sibling-c0ffee"
PLAIN = "plain-7f3a"
REPO = str(Path(__file__).resolve().parents[2])
AS_USER = ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]

SCAN = f"""#!/bin/sh
# $1: where to write one line per finding: key|sibling|plain|unreadable PID
SIBLING_MARK={SIBLING} sleep 60 &
sib=$!
i=0  # until the sibling has exec'd (its environ is the one it was started with): at most ~5 s
until tr '\\0' '\\n' < /proc/$sib/environ 2>/dev/null | grep -q {SIBLING}; do
  i=$((i + 1)); [ $i -gt 500 ] && break; sleep 0.01
done
for p in /proc/[0-9]*; do
  pid=${{p#/proc/}}
  if ! env=$(tr '\\0' '\\n' < $p/environ 2>/dev/null); then echo "unreadable $pid"; continue; fi
  case "$env" in *{KEY}*) echo "key $pid";; esac
  case "$env" in *{SIBLING}*) echo "sibling $pid";; esac
  case "$env" in *{PLAIN}*) echo "plain $pid";; esac
done > "$1.part"
kill $sib
mv "$1.part" "$1"
"""


def user_python() -> tuple[str, str] | None:
    """An interpreter the unprivileged user can run with the bridge and its libraries importable: (python,
    PYTHONPATH). Ours, or the system's of the same version when ours sits where that user can't go (/root)."""
    path = os.pathsep.join(dict.fromkeys([REPO, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        done = subprocess.run(
            # through sh: setpriv itself execs with root's access still (a 0700 /root), the bridge's children don't
            [*AS_USER, "/bin/sh", "-c", 'exec "$0" -c "import bridge.cli.main, bridge.agent"', python],
            env={"PATH": os.environ["PATH"], "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1"},
            cwd="/",
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return python, path
    return None


def give_to_user(base: Path) -> None:
    for folder, _, names in os.walk(base):
        for path in (folder, *(os.path.join(folder, name) for name in names)):
            os.chown(path, UID, UID)


@pytest.fixture
def user_dir() -> Iterator[Path]:
    """A folder the unprivileged user owns (the tests' tmp_path is root's, 0700)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to start the bridge as an ordinary user (root reads every /proc/*/environ)")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux) to start the bridge as an ordinary user")
    base = Path(tempfile.mkdtemp(prefix="bridge-environ-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_hooks_and_unsandboxed_commands_cannot_read_the_key_out_of_the_bridge(user_dir: Path) -> None:
    found = user_python()
    if found is None:
        pytest.skip(f"no Python {sys.version_info[:2]} that uid {UID} can run with the bridge's libraries")
    python, pythonpath = found
    base, out, scan = user_dir, user_dir / "out", user_dir / "scan.sh"
    for name in ("home", "cfg", "data", "claude", "project", "out"):
        (base / name).mkdir()
    scan.write_text(SCAN)
    settings = {
        "hooks": {
            event: [{"matcher": "", "hooks": [{"type": "command", "command": f"sh {scan} {out}/{event}"}]}]
            for event in ("UserPromptSubmit", "Stop")
        },
        "sandbox": {"enabled": False},  # as where the OS sandbox can't start: the command runs as the user
    }
    (base / "cfg" / "settings.json").write_text(json.dumps(settings))
    scenario = base / "scenario.json"
    responses = [tool_response(("Bash", {"command": f"sh {scan} {out}/command"})), text_response("done")]
    scenario.write_text(json.dumps({"responses": responses}))
    give_to_user(base)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(base / "home"),
        "AGENT_BRIDGE_CONFIG_DIR": str(base / "cfg"),
        "AGENT_BRIDGE_DATA_DIR": str(base / "data"),
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "PYTHONPATH": pythonpath,
        "PYTHONDONTWRITEBYTECODE": "1",
        "ANTHROPIC_API_KEY": KEY,
        "PLAIN_MARK": PLAIN,
    }
    process = await asyncio.create_subprocess_exec(
        *AS_USER,
        python,
        "-m",
        "bridge.cli.main",
        "run",
        "--offline",
        str(scenario),
        "--dangerously-approve-all",
        "hello",
        cwd=base / "project",
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    bridge = str(process.pid)  # setpriv execs the bridge: the same process
    output = (await asyncio.wait_for(process.communicate(), 120))[0].decode()
    assert process.returncode == 0 and "done" in output, output
    for scanner in ("UserPromptSubmit", "command", "Stop"):
        assert (out / scanner).exists(), f"{scanner} ran its scan\n{output}"
        lines = (out / scanner).read_text().splitlines()
        hits = {kind: {line.split()[1] for line in lines if line.split()[0] == kind} for kind in ("key", "sibling")}
        assert hits["sibling"], f"the control: {scanner} read a same-user process's environment\n{lines}"
        assert any(line.startswith("plain ") for line in lines), f"the control: {scanner} read its own\n{lines}"
        assert hits["key"] == set(), f"{scanner} read the key in process(es) {hits['key']} (the bridge: {bridge})"
        assert f"unreadable {bridge}" in lines, f"{scanner} read the bridge's environment\n{lines}"


ROOT_SCAN = f"""#!/bin/sh
# $1: where to write one line per process: key PID (the key's value), named PID (the variable, value or not)
for p in /proc/[0-9]*; do
  env=$(tr '\\0' '\\n' < $p/environ 2>/dev/null) || continue
  case "$env" in *{KEY}*) echo "key ${{p#/proc/}}";; esac
  case "$env" in *ANTHROPIC_API_KEY=*) echo "named ${{p#/proc/}}";; esac
done > "$1"
"""


async def test_run_as_root_the_key_is_wiped_from_the_bridges_environ_and_its_proc_is_no_tools(tmp_path: Path) -> None:
    """Found by an attack round: as root (Docker, CI), what the bridge starts reads any /proc/*/environ, whatever
    PR_SET_DUMPABLE says: a user hook found the key in the bridge's, and with every question answered yes, Grep
    over /proc/<bridge pid>/environ told the key character by character. Now the key's value is wiped from the
    environment block the bridge started with, and /proc/<bridge pid> (and /proc/self, as the file tools see it)
    is one of its own secrets. The control: the scan sees the variable's name in the bridge's environ."""
    if os.geteuid() != 0:
        pytest.skip("the root case: what root starts reads any process's environ")
    out, scan, cfg = tmp_path / "scan-out", tmp_path / "scan.sh", tmp_path / "cfg"
    cfg.mkdir()
    scan.write_text(ROOT_SCAN)
    hook = [{"matcher": "", "hooks": [{"type": "command", "command": f"sh {scan} {out}"}]}]
    (cfg / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": hook}}))
    pattern = {"pattern": "API_KEY=sk-ant", "output_mode": "files_with_matches"}
    responses = [
        tool_response(("Grep", {**pattern, "path": "/proc/self/environ"})),
        tool_response(("Read", {"file_path": "/proc/self/environ"})),
        text_response("done"),
    ]
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"responses": responses}))
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "AGENT_BRIDGE_CONFIG_DIR": str(cfg),
        "AGENT_BRIDGE_DATA_DIR": str(data),
        "ANTHROPIC_API_KEY": KEY,
    }
    bridge = str(Path(sys.executable).parent / "agent-bridge")
    process = await asyncio.create_subprocess_exec(
        *(bridge, "run", "--offline", str(scenario), "--dangerously-approve-all", "hello"),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await asyncio.wait_for(process.communicate(), 120))[0].decode()
    assert process.returncode == 0 and "done" in output, output
    lines = out.read_text().splitlines()
    assert f"named {process.pid}" in lines, f"the control: the scan read the bridge's environ\n{lines}"
    assert f"key {process.pid}" not in lines, "the key's value is gone from the bridge's environ"
    transcript = "".join(p.read_text() for p in (data / "sessions").glob("*.jsonl"))
    assert transcript.count("the bridge's own process") == 2, transcript[-2000:]
    assert "Found 1 file" not in transcript and KEY not in transcript


CLOSED_FIRST = """
import ctypes, sys
seen = {}
class Watch:
    def find_spec(self, name, path=None, target=None):
        if name not in seen and name in ("bridge.codecache", "bridge.environment", "logging", "argparse"):
            libc = ctypes.CDLL(None)
            block = open("/proc/self/environ", "rb").read()
            seen[name] = (libc.prctl(3, 0, 0, 0, 0), b"KEY-FIRST-0001" in block, b"gw-PASS-0002" in block)
        return None
sys.meta_path.insert(0, Watch())
import bridge.cli.main
print(sorted(seen.items()))
"""


def test_the_command_closes_itself_before_it_loads_anything_else() -> None:
    """Attack round 24: a process of the same user read the key from /proc/<pid>/environ of a starting bridge, 3 of
    3 times: the close came after the command line's modules (0.1–0.17 s after exec). The command's module closes
    the process and wipes the key, and a gateway's password in ANTHROPIC_BASE_URL, from the environment block before
    the rest of the bridge, logging or argparse load (the installed command and `python -m bridge.cli.main`)."""
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "sk-ant-KEY-FIRST-0001",
        "ANTHROPIC_BASE_URL": "https://u:gw-PASS-0002@gw.example/",
    }
    done = subprocess.run([sys.executable, "-c", CLOSED_FIRST], env=env, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    seen = dict(eval(done.stdout))  # (name, (dumpable, key in block, password in block))
    assert seen.keys() >= {"bridge.codecache", "argparse"}, seen
    assert all(value == (0, False, False) for value in seen.values()), seen
