"""The seccomp filter bubblewrap loads under every sandboxed command (`bwrap --seccomp FD`): no Unix socket.

A Unix socket on the host's file system is a door out of the sandbox that no mount closes: `connect()` to a socket
file works through a read-only bind (the kernel checks write permission on the socket, not the mount), and
`--unshare-net` covers only network sockets (abstract ones included: they belong to the network namespace). Behind
such doors: the Docker daemon (a container with `/` mounted is the host), systemd (`systemd-run`), the user's D-Bus
session bus, ssh-agent and gpg-agent, an editor's IPC socket. Attack round 20: an allowed `python3 build.py` had a
daemon on `/run/…sock` write outside the workspace and hand back a file's secret.

So, as Claude Code's sandbox does on Linux, the filter refuses (EPERM):
- `socket(AF_UNIX, …)`, and `socketpair(AF_UNIX, …)` but a stream or seqpacket one: a pair's ends are connected to
  each other, but a datagram one may still `sendto()` any socket file (attack round 21: journald's, a daemon's
  control socket; round 33: `SOCK_RAW`, which the kernel makes a datagram one). Stream and seqpacket pairs stay:
  pipes, `multiprocessing`'s default start, test runners need them;
- `socket(AF_VSOCK, …)`: the hypervisor's door, which no network namespace closes;
- `io_uring_setup`: io_uring makes sockets and connects them without these calls (IORING_OP_SOCKET);
- always, whatever the sockets setting (ENOSYS): the kernel keyrings (`add_key`, `request_key`, `keyctl`), which
  belong to the user id, not to a namespace (attack round 33 read the session's keys and added its own), and the
  kernel log, `perf_event_open` and `userfaultfd`, which only a machine's sysctls keep from an unprivileged caller;
- on x86-64, the 32-bit entry's `socketcall` (the filter can't read its arguments) and the same checks on its
  `socket` and `socketpair`; the x32 ABI's calls are filtered as the 64-bit ones (their numbers carry bit 30). Any
  other architecture a process could switch to is killed.
What needs a Unix socket of its own fails in the sandbox (EPERM): `multiprocessing.Manager()`, its `forkserver`
start (Python 3.14's default on Linux), a test that listens on a socket file. `sandbox.network.allowAllUnixSockets:
true` (a widening: a folder's own settings need its trust) turns the filter off; the command's result says so
(sandbox_notes.py).

The program is classic BPF (`struct sock_filter`), assembled here with labels: eight bytes per instruction, jumps
only forward. Architectures: x86-64 and aarch64; elsewhere no filter (logged once), the rest of the sandbox as
before.
"""

from __future__ import annotations

import errno
import logging
import os
import platform
import struct

log = logging.getLogger(__name__)

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24  # (the args' low halves: little-endian)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_AND_K = 0x54
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000 | errno.EPERM
_NOSYS = 0x00050000 | errno.ENOSYS  # (as if the kernel had no such call: what uses it falls back)
_KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS
AF_UNIX = 1

_X86_64 = 0xC000003E
_I386 = 0x40000003
_AARCH64 = 0xC00000B7
_X32_BIT = 0x40000000

AF_VSOCK = 40
SOCK_STREAM, SOCK_SEQPACKET = 1, 5
_TYPE_MASK = 0xF  # the socket type without SOCK_NONBLOCK / SOCK_CLOEXEC

# The calls no namespace of bwrap's isolates, refused whatever the sockets setting (ENOSYS): the kernel keyrings
# (`add_key`, `request_key`, `keyctl`: they belong to the user id, so a sandboxed command read and added keys in the
# user's and the session's keyrings, attack round 33), the kernel log (`syslog`), `perf_event_open` and
# `userfaultfd` (closed here only by the machine's sysctls, which another machine may not set).
_UNISOLATED = {
    "x86_64": (248, 249, 250, 103, 298, 323),
    "aarch64": (217, 218, 219, 116, 241, 282),
    "i386": (286, 287, 288, 103, 336, 374),
}

# arch -> (its audit number, socket, socketpair, io_uring_setup)
_ARCHES = {
    "x86_64": (_X86_64, 41, 53, 425),
    "amd64": (_X86_64, 41, 53, 425),
    "aarch64": (_AARCH64, 198, 199, 425),
    "arm64": (_AARCH64, 198, 199, 425),
}
_I386_SOCKETCALL, _I386_SOCKET, _I386_SOCKETPAIR, _I386_IO_URING_SETUP = 102, 359, 360, 425

Op = tuple[int, int, str | None, str | None]  # code, k, the label to jump to when true / false (None: the next)


def _assemble(ops: list[Op | str]) -> bytes:
    """Classic BPF from instructions and labels (a str is a label: the position of the next instruction)."""
    at: dict[str, int] = {}
    code: list[Op] = []
    for op in ops:
        if isinstance(op, str):
            at[op] = len(code)
        else:
            code.append(op)

    def jump(here: int, label: str | None) -> int:
        offset = 0 if label is None else at[label] - here - 1
        if not 0 <= offset <= 255:
            raise ValueError(f"jump to {label} out of range")
        return offset

    return b"".join(
        struct.pack("=HBBI", op, jump(n, jt) if op == _JEQ_K else 0, jump(n, jf) if op == _JEQ_K else 0, k)
        for n, (op, k, jt, jf) in enumerate(code)
    )


def _load(offset: int) -> Op:
    return (_LD_W_ABS, offset, None, None)


def _is(value: int, then: str | None, otherwise: str | None = None) -> Op:
    return (_JEQ_K, value, then, otherwise)


def _ret(value: int) -> Op:
    return (_RET_K, value, None, None)


def _sockets(socket: str, socketpair: str) -> list[Op | str]:
    """The checks of `socket`'s and `socketpair`'s arguments (each ends at allow or refuse; BPF jumps only forward,
    so each entry has its own copy)."""
    return [
        # socket(AF_UNIX | AF_VSOCK, ...): a host socket file's door; the hypervisor's (vsock is no namespace's)
        socket,
        _load(_ARG0),
        _is(AF_UNIX, "refuse"),
        _is(AF_VSOCK, "refuse", "allow"),
        # socketpair(AF_UNIX, …): its ends are connected to each other, but a datagram one may still sendto() any
        # socket file (journald's, a daemon's control socket), and the kernel makes SOCK_RAW a datagram one (attack
        # round 33). Only stream and seqpacket pairs (pipes, multiprocessing, test runners).
        socketpair,
        _load(_ARG0),
        _is(AF_UNIX, None, "allow"),
        _load(_ARG1),
        (_AND_K, _TYPE_MASK, None, None),
        _is(SOCK_STREAM, "allow"),
        _is(SOCK_SEQPACKET, "allow", "refuse"),
    ]


def _unisolated(numbers: tuple[int, ...], then: str) -> list[Op | str]:
    """A = the call's number: each of `numbers` to `nosys`, anything else to `then`."""
    return [*(_is(n, "nosys") for n in numbers[:-1]), _is(numbers[-1], "nosys", then)]


def program(machine: str | None = None, *, sockets: bool = True) -> bytes | None:
    """The compiled filter for this machine's architecture; None where there is none. `sockets`: the Unix socket
    checks too (off where `allowAllUnixSockets` allows them; the calls no namespace isolates are refused always)."""
    name = (machine or platform.machine()).lower()
    found = _ARCHES.get(name)
    if found is None:
        return None
    native, socket_nr, socketpair_nr, io_uring_nr = found
    unisolated = _UNISOLATED["x86_64" if native == _X86_64 else "aarch64"]
    ops: list[Op | str] = [
        _load(_ARCH),
        _is(native, None, "compat"),
        _load(_NR),
        (_AND_K, ~_X32_BIT & 0xFFFFFFFF, None, None),  # x32's calls are the 64-bit ones with bit 30 set
        *_unisolated(unisolated, "native sockets" if sockets else "allow"),
    ]
    if sockets:
        ops += [
            "native sockets",
            _is(io_uring_nr, "refuse"),  # io_uring makes and connects sockets without the calls below
            _is(socket_nr, "socket"),
            _is(socketpair_nr, "socketpair", "allow"),
            *_sockets("socket", "socketpair"),
        ]
    ops += ["compat"]
    if native == _X86_64:  # A = the arch: the 32-bit entry's calls (socketcall's arguments are beyond the filter)
        ops += [
            _is(_I386, None, "kill"),
            _load(_NR),
            *_unisolated(_UNISOLATED["i386"], "i386 sockets" if sockets else "allow"),
        ]
        if sockets:
            ops += [
                "i386 sockets",
                _is(_I386_SOCKETCALL, "refuse"),
                _is(_I386_IO_URING_SETUP, "refuse"),
                _is(_I386_SOCKET, "i386 socket"),
                _is(_I386_SOCKETPAIR, "i386 socketpair", "allow"),
                *_sockets("i386 socket", "i386 socketpair"),
            ]
    ops += ["kill", _ret(_KILL), "allow", _ret(_ALLOW), "refuse", _ret(_ERRNO), "nosys", _ret(_NOSYS)]
    return _assemble(ops)


_warned = False


def filter_fd(*, sockets: bool = True) -> int | None:
    """A fresh file holding the filter, at its start, for one bwrap to read (the caller passes it on and closes
    it); None where there is no filter for this architecture. `sockets`: as `program`'s."""
    global _warned
    code = program(sockets=sockets)
    if code is None:
        if not _warned:
            _warned = True
            log.warning(
                "no seccomp filter for %s: sandboxed commands can connect to the host's Unix sockets",
                platform.machine(),
            )
        return None
    fd = os.memfd_create("agent-bridge-seccomp")  # close-on-exec: only the bwrap it is passed to gets it
    try:
        os.write(fd, code)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
