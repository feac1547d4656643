"""The seccomp filter bubblewrap loads under every sandboxed command (`bwrap --seccomp FD`): no Unix socket.

A Unix socket on the host's file system is a door out of the sandbox that no mount closes: `connect()` to a socket
file works through a read-only bind (the kernel checks write permission on the socket, not the mount), and
`--unshare-net` covers only network sockets (abstract ones included: they belong to the network namespace). Behind
such doors: the Docker daemon (a container with `/` mounted is the host), systemd (`systemd-run`), the user's D-Bus
session bus, ssh-agent and gpg-agent, an editor's IPC socket. Attack round 20: an allowed `python3 build.py` had a
daemon on `/run/…sock` write outside the workspace and hand back a file's secret.

So, as Claude Code's sandbox does on Linux, the filter refuses (EPERM) `socket(AF_UNIX, …)`; `socketpair` stays
(its two ends reach only each other: pipes, `multiprocessing`, test runners need it). Also refused:
- `io_uring_setup`: io_uring makes sockets and connects them without the `socket` syscall (IORING_OP_SOCKET);
- on x86-64, the 32-bit entry's `socketcall` and `socket` (the filter can't read `socketcall`'s arguments), and the
  x32 ABI's calls are filtered as the 64-bit ones (their numbers carry bit 30).
Any other architecture a process could switch to is refused entirely. `sandbox.network.allowAllUnixSockets: true`
(a widening: a folder's own settings need its trust) turns the filter off.

The program is classic BPF (`struct sock_filter`), written here: eight bytes per instruction. Architectures: x86-64
and aarch64; elsewhere no filter (logged once), the rest of the sandbox as before.
"""

from __future__ import annotations

import errno
import logging
import os
import platform
import struct

log = logging.getLogger(__name__)

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
_NR, _ARCH, _ARG0 = 0, 4, 16  # (args[0]'s low half: little-endian)
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_AND_K = 0x54
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000 | errno.EPERM
_KILL = 0x80000000  # SECCOMP_RET_KILL_PROCESS
AF_UNIX = 1

_X86_64 = 0xC000003E
_I386 = 0x40000003
_AARCH64 = 0xC00000B7
_X32_BIT = 0x40000000

# (native arch, socket, io_uring_setup, compat arch or None)
_ARCHES = {
    "x86_64": (_X86_64, 41, 425),
    "amd64": (_X86_64, 41, 425),
    "aarch64": (_AARCH64, 198, 425),
    "arm64": (_AARCH64, 198, 425),
}
_I386_SOCKETCALL, _I386_SOCKET, _I386_IO_URING_SETUP = 102, 359, 425


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The compiled filter for this machine's architecture; None where there is none."""
    found = _ARCHES.get((machine or platform.machine()).lower())
    if found is None:
        return None
    native, socket_nr, io_uring_nr = found
    x86 = native == _X86_64
    ops: list[bytes] = []
    # Labels are resolved by hand: jt/jf count the instructions skipped after the jump.
    # 0: arch
    ops.append(_op(_LD_W_ABS, _ARCH))
    # 1: native? else the compat branch (x86-64) or refuse
    compat_at = 10
    ops.append(_op(_JEQ_K, native, 0, compat_at - 2))
    # 2: nr, x32's bit cleared (on aarch64 the AND is harmless: no syscall number reaches bit 30)
    ops.append(_op(_LD_W_ABS, _NR))
    ops.append(_op(_AND_K, ~_X32_BIT & 0xFFFFFFFF))
    # 4: io_uring_setup -> refuse
    ops.append(_op(_JEQ_K, io_uring_nr, 0, 1))
    ops.append(_op(_RET_K, _ERRNO))
    # 6: socket? else allow
    ops.append(_op(_JEQ_K, socket_nr, 1, 0))
    ops.append(_op(_RET_K, _ALLOW))
    # 8: args[0] == AF_UNIX -> refuse, else allow
    ops.append(_op(_LD_W_ABS, _ARG0))
    ops.append(_op(_JEQ_K, AF_UNIX, len(_compat(x86)) + 1, len(_compat(x86))))
    assert len(ops) == compat_at
    ops += _compat(x86)
    ops.append(_op(_RET_K, _ALLOW))  # allow
    ops.append(_op(_RET_K, _ERRNO))  # refuse
    return b"".join(ops)


def _compat(x86: bool) -> list[bytes]:
    """After the native checks: the second architecture's (A holds the arch at entry), each ending by jumping to
    the final allow (the second last instruction) or refuse (the last)."""
    if not x86:  # any other architecture: killed (no such entry should exist)
        return [_op(_RET_K, _KILL)]
    # A = arch. Positions are relative to this block's start; the block is followed by [allow, refuse].
    block = [
        _op(_JEQ_K, _I386, 1, 0),  # 0: i386? else kill
        _op(_RET_K, _KILL),  # 1
        _op(_LD_W_ABS, _NR),  # 2
        _op(_JEQ_K, _I386_SOCKETCALL, 0, 0),  # 3: -> refuse (patched below)
        _op(_JEQ_K, _I386_IO_URING_SETUP, 0, 0),  # 4: -> refuse
        _op(_JEQ_K, _I386_SOCKET, 0, 0),  # 5: -> 6, else allow
        _op(_LD_W_ABS, _ARG0),  # 6
        _op(_JEQ_K, AF_UNIX, 0, 0),  # 7: -> refuse, else allow
    ]
    n = len(block)
    allow, refuse = n, n + 1

    def to(at: int, target: int) -> int:
        return target - at - 1

    block[3] = _op(_JEQ_K, _I386_SOCKETCALL, to(3, refuse), 0)
    block[4] = _op(_JEQ_K, _I386_IO_URING_SETUP, to(4, refuse), 0)
    block[5] = _op(_JEQ_K, _I386_SOCKET, 0, to(5, allow))
    block[7] = _op(_JEQ_K, AF_UNIX, to(7, refuse), to(7, allow))
    return block


_warned = False


def filter_fd() -> int | None:
    """A fresh file holding the filter, at its start, for one bwrap to read (the caller passes it on and closes
    it); None where there is no filter for this architecture."""
    global _warned
    code = program()
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
