"""Attack round 20: doors out of the sandbox that no mount closes. A Unix socket on the host's file system answers a
`connect()` through a read-only bind, and `--unshare-net` does not cover it: an allowed command had a host daemon
(Docker, systemd, D-Bus, an agent stand in for it) write outside the workspace. And without its own IPC namespace, a
command read a root-owned shared memory segment of the host's. Real bwrap, real commands; the daemon's side and the
host's segment tell what reached them."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.execution.seccomp import program
from tests.execution.test_sandbox import AVAILABLE, Project, output

pytestmark = pytest.mark.skipif(not AVAILABLE.ok, reason=f"bubblewrap cannot run here: {AVAILABLE.reason}")


class Daemon:
    """A host daemon on a Unix socket outside the workspace: what any client sends it is recorded."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.received: list[bytes] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(4)
        self.server.settimeout(0.2)
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                conn, _ = self.server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(1024))
                    conn.sendall(b"the host's secret")
                except OSError:
                    pass

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(5)
        self.server.close()


@pytest.fixture
def daemon() -> Iterator[Daemon]:
    """In /var/tmp: the sandbox sees it there (its /tmp is its own), as it sees /run's."""
    run = Path(tempfile.mkdtemp(prefix="agent-bridge-test-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    served = Daemon(run / "daemon.sock")
    yield served
    served.stop()
    shutil.rmtree(run, ignore_errors=True)


CLIENT = (
    "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); "
    "s.sendall(b'run this on the host'); print('GOT', s.recv(100))\""
)


@pytest.mark.skipif(program() is None, reason="no seccomp filter for this architecture")
async def test_a_command_cannot_connect_to_a_unix_socket_of_the_host(project: Project, daemon: Daemon) -> None:
    result = await project.run(CLIENT.format(path=daemon.path) + "; echo ran > control.txt; exit 0")
    assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
    assert daemon.received == [], output(result)
    assert "the host's secret" not in output(result)
    assert "Operation not permitted" in output(result), output(result)


@pytest.mark.skipif(program() is None, reason="no seccomp filter for this architecture")
async def test_io_uring_which_makes_sockets_without_the_syscall_is_refused(project: Project) -> None:
    probe = (
        'python3 -c "import ctypes; libc = ctypes.CDLL(None, use_errno=True); '
        "print('io_uring_setup', libc.syscall(425, 4, None), ctypes.get_errno())\""
    )
    result = await project.run(probe)
    assert "io_uring_setup -1 1" in output(result).splitlines(), output(result)  # EPERM: the filter's answer


async def test_socketpairs_and_network_sockets_still_work(project: Project) -> None:
    """What commands need of sockets stays: a pair's ends reach each other (pipes, multiprocessing), and an inet
    socket is made (the network itself is off: its own namespace)."""
    result = await project.run(
        "python3 -c \"import socket; a, b = socket.socketpair(); a.sendall(b'pair-ok'); print(b.recv(10).decode()); "
        "s = socket.socket(socket.AF_INET); s.bind(('127.0.0.1', 0)); s.listen(); print('inet-ok')\""
    )
    assert "pair-ok" in output(result) and "inet-ok" in output(result), output(result)


async def test_allow_all_unix_sockets_lets_them_through(project: Project, daemon: Daemon) -> None:
    project.settings({"sandbox": {"network": {"allowAllUnixSockets": True}}})
    result = await project.run(CLIENT.format(path=daemon.path))
    assert daemon.received == [b"run this on the host"], output(result)
    assert "the host's secret" in output(result)


@pytest.fixture
def host_segment() -> Iterator[str]:
    """A shared memory segment of the host's (root's, 0644: readable by every process that can see it)."""
    made = subprocess.run(["ipcmk", "-M", "4096"], capture_output=True, text=True, check=True).stdout
    shmid = made.strip().split()[-1]
    seen = subprocess.run(["ipcs", "-m"], capture_output=True, text=True, check=True).stdout
    assert f" {shmid} " in seen, "the host lists it"
    yield shmid
    subprocess.run(["ipcrm", "-m", shmid], check=False)


@pytest.mark.skipif(shutil.which("ipcmk") is None or shutil.which("ipcrm") is None, reason="no util-linux ipc tools")
async def test_the_hosts_shared_memory_is_not_visible(project: Project, host_segment: str) -> None:
    result = await project.run("ipcs -m; echo listed")
    assert "listed" in output(result), output(result)
    assert f" {host_segment} " not in output(result), output(result)


class DatagramDaemon:
    """A host daemon on a datagram socket file (journald, a control socket stand in for it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.server.bind(str(path))
        self.server.setblocking(False)

    def received(self) -> list[bytes]:
        got = []
        while True:
            try:
                got.append(self.server.recv(1024))
            except BlockingIOError:
                return got


@pytest.mark.skipif(program() is None, reason="no seccomp filter for this architecture")
async def test_a_datagram_socketpair_cannot_send_to_a_host_socket(project: Project) -> None:
    """Attack round 21: a socketpair's ends are connected to each other, but a datagram one may sendto() any socket
    file; stream pairs (pipes) stay allowed."""
    where = Path(tempfile.mkdtemp(prefix="agent-bridge-test-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    daemon = DatagramDaemon(where / "dgram.sock")
    try:
        result = await project.run(
            'python3 -c "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); '
            f"a.sendto(b'sent through a pair', '{daemon.path}')\"; "
            'python3 -c "import socket; s = socket.socket(40, socket.SOCK_STREAM)"; echo ran > control.txt; exit 0'
        )
        assert (project.ws / "control.txt").read_text() == "ran\n", output(result)
        assert daemon.received() == [], output(result)
        assert output(result).count("Operation not permitted") == 2, output(result)  # the pair; AF_VSOCK
        assert "The sandbox refuses Unix sockets" in output(result), "the result says why, and the way out"
    finally:
        daemon.server.close()
        shutil.rmtree(where, ignore_errors=True)


EXPLAINED = [
    pytest.param(  # a manager's server listens on a Unix socket; the pool (fork, pipes) still works
        "python3 -c \"import multiprocessing as mp; mp.set_start_method('fork'); "
        "print('pool', sum(mp.Pool(2).map(abs, [-1, -2])))\"; "
        'python3 -c "import multiprocessing as mp; mp.Manager()"; exit 0',
        "pool 3",
        id="multiprocessing",
    ),
    pytest.param(  # gpg signs through its agent's socket
        "export GNUPGHOME=$PWD/.gnupg-test; mkdir -p -m 700 $GNUPGHOME; echo x > f; git add f; "
        "git -c user.email=a@b -c user.name=n -c commit.gpgsign=true -c user.signingkey=nobody commit -qm signed; "
        "exit 0",
        "",
        id="gpg-signed-commit",
        marks=pytest.mark.skipif(shutil.which("gpg") is None, reason="no gpg"),
    ),
]


@pytest.mark.parametrize(("command", "also"), EXPLAINED)
async def test_what_needs_a_unix_socket_is_refused_and_explained(project: Project, command: str, also: str) -> None:
    """What the sandbox refuses (a Unix socket of the command's own) is said in the result, with the setting that
    allows it; what needs no such socket (a fork pool) still works."""
    result = await project.run(command)
    assert also in output(result), output(result)
    assert "allowAllUnixSockets" in output(result), output(result)


@pytest.mark.skipif(program() is None, reason="no seccomp filter for this architecture")
async def test_a_raw_socketpair_which_the_kernel_makes_a_datagram_one_is_refused_too(project: Project) -> None:
    """Attack round 33: the filter refused `SOCK_DGRAM` pairs only, and the kernel makes a `SOCK_RAW` Unix pair a
    datagram one: it sent to a host socket file. Only stream and seqpacket pairs are allowed now."""
    where = Path(tempfile.mkdtemp(prefix="agent-bridge-test-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    daemon = DatagramDaemon(where / "dgram.sock")
    try:
        send = (
            "import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW); "
            f"a.sendto(b'sent through a raw pair', '{daemon.path}')"
        )
        pairs = "import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); print('seqpacket-ok')"
        result = await project.run(f'python3 -c "{send}"; python3 -c "{pairs}"; exit 0')
        assert daemon.received() == [], output(result)
        assert "Operation not permitted" in output(result) and "seqpacket-ok" in output(result), output(result)
    finally:
        daemon.server.close()
        shutil.rmtree(where, ignore_errors=True)


KEYS = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL_READ, SESSION, USER = 11, -3, -4
def add(name, value, ring):
    return libc.syscall({add_key}, b"user", name, value, len(value), ring)
def read(key):
    buf = ctypes.create_string_buffer(256)
    n = libc.syscall({keyctl}, KEYCTL_READ, key, buf, 256)
    return buf.raw[:n] if n >= 0 else None
if sys.argv[1] == "plant":
    print(add(b"agent-bridge-test", sys.argv[2].encode(), USER))
elif sys.argv[1] == "read":
    print("READ", read(int(sys.argv[2])))
    print("ADD", add(b"agent-bridge-test-added", b"FROM-SANDBOX", USER), os.strerror(ctypes.get_errno()))
else:  # KEYCTL_REVOKE the planted key, and one the sandbox may have added (KEYCTL_SEARCH)
    libc.syscall({keyctl}, 3, int(sys.argv[2]))
    added = libc.syscall({keyctl}, 10, USER, b"user", b"agent-bridge-test-added", 0)
    if added >= 0:
        libc.syscall({keyctl}, 3, added)
"""
_KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}


@pytest.mark.skipif(program() is None, reason="no seccomp filter for this architecture")
@pytest.mark.parametrize("sockets_allowed", [False, True])
async def test_no_sandboxed_command_reads_or_adds_the_users_keys(project: Project, sockets_allowed: bool) -> None:
    """Attack round 33: the kernel keyrings belong to the user id, not to a namespace: a sandboxed command read a key
    the user's session holds (a Kerberos ticket, a cached passphrase) and added its own, which outlived it. Refused
    (ENOSYS), whatever the sockets setting. The control: the same script outside the sandbox reads the key."""
    import platform
    import sys

    calls = _KEY_CALLS.get(platform.machine().lower())
    if calls is None:
        pytest.skip("no syscall numbers for this machine here")
    script = project.ws / "keys.py"
    script.write_text(KEYS.format(add_key=calls[0], keyctl=calls[1]))
    planted = subprocess.run(  # noqa: ASYNC221
        [sys.executable, str(script), "plant", "K-KEYRING-SECRET"], capture_output=True, text=True
    )
    key = int(planted.stdout.strip() or -1)
    if key < 0:
        pytest.skip(f"the kernel keyrings can't be used here: {planted.stderr}")
    try:
        control = subprocess.run(  # noqa: ASYNC221
            [sys.executable, str(script), "read", str(key)], capture_output=True, text=True
        )
        assert "K-KEYRING-SECRET" in control.stdout, control  # reachable outside
        if sockets_allowed:
            project.settings({"sandbox": {"network": {"allowAllUnixSockets": True}}})
        result = await project.run(f"python3 keys.py read {key}")
        assert "K-KEYRING-SECRET" not in output(result) and "READ None" in output(result), output(result)
        assert "Function not implemented" in output(result), output(result)  # the add refused too
    finally:
        subprocess.run([sys.executable, str(script), "revoke", str(key)], check=False)  # noqa: ASYNC221
