#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The kernel facts a shared UDP 4791 endpoint would rest on (issue #16,
docs/interop.md "A standard RoCE v2 endpoint"), checked on this kernel
without privilege (as root it re-runs itself as an ordinary useradd user):

1. Several sockets of one user share a port with SO_REUSEPORT, and a
   classic BPF program attached with SO_ATTACH_REUSEPORT_CBPF (no
   capability needed) reads the UDP payload: a datagram whose BTH
   destination QPN (payload bytes 5..7) is N lands on socket N mod 3.
2. The program's answer is an index into the group's socket array, and
   that index is not stable: when a socket leaves, the last one takes its
   place (and an index past the end falls back to the hash).
3. Another user cannot join the group (EADDRINUSE).
Exit 0 when all hold, 1 when one does not (the design must then change).
"""
import ctypes
import errno
import os
import select
import socket
import struct
import subprocess
import sys

SO_ATTACH_REUSEPORT_CBPF = 51


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8),
                ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16),
                ("filter", ctypes.POINTER(SockFilter))]


def qpn_mod(n):
    """cBPF: A = payload[4..7] (big-endian) & 0xffffff (the BTH's
    destination QPN); return A mod n."""
    BPF_LD_W_ABS, BPF_ALU_AND_K, BPF_ALU_MOD_K, BPF_RET_A = \
        0x20, 0x54, 0x94, 0x16
    insns = [(BPF_LD_W_ABS, 4), (BPF_ALU_AND_K, 0xFFFFFF),
             (BPF_ALU_MOD_K, n), (BPF_RET_A, 0)]
    arr = (SockFilter * len(insns))(*[SockFilter(c, 0, 0, k)
                                       for c, k in insns])
    return SockFprog(len(insns), arr), arr


def member(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    return s


def bth(qpn):
    return struct.pack("!BBHI I", 0x64, 0, 0xFFFF, qpn, 0) + b"x" * 16


def who_gets(socks, port, qpn):
    """Index in socks of the socket a datagram to QPN qpn reaches."""
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.sendto(bth(qpn), ("127.0.0.1", port))
    tx.close()
    ready, _, _ = select.select(socks, [], [], 5)
    if len(ready) != 1:
        return None
    ready[0].recv(100)
    return socks.index(ready[0])


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    return cond


def as_user(*args):
    # An ordinary account made with useradd, as tests/users.sh makes it
    # (never nobody, whose uid is the kernel's overflow id).  The source on
    # stdin and / as the working directory: the user may not be able to
    # read the checkout.
    user = os.environ.get("SV_TEST_USER1", "svtest1")
    if subprocess.run(["id", "-u", user], capture_output=True).returncode:
        subprocess.run(["flock", "/tmp/softverbs-useradd.lock", "useradd",
                        "-m", "-s", "/bin/sh", user], check=True)
    with open(os.path.abspath(__file__)) as src:
        return subprocess.run(["setpriv", f"--reuid={user}",
                               f"--regid={user}", "--init-groups",
                               sys.executable, "-"] + list(args),
                              stdin=src, cwd="/").returncode


def join(port):
    """Exit 0 if this user can join the group on port, else the errno."""
    try:
        member(port)
        return 0
    except OSError as e:
        return e.errno


def main(argv):
    if len(argv) > 2 and argv[1] == "--join":
        return join(int(argv[2]))
    if os.geteuid() == 0:
        # The point is that no privilege is needed: run as an ordinary
        # user.  First, the user tries to join a group root made.
        mine = member(0)
        err = as_user("--join", str(mine.getsockname()[1]))
        ok = check(err == errno.EADDRINUSE, "another user cannot join the "
                   f"group: {errno.errorcode.get(err, err)}")
        mine.close()
        return as_user() or (0 if ok else 1)
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    socks = [member(port) for _ in range(3)]
    prog, keep = qpn_mod(3)
    socks[0].setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF,
                        ctypes.string_at(ctypes.addressof(prog),
                                         ctypes.sizeof(prog)))
    ok = True
    # Each socket seen a few times: QPN n to socket n mod 3.
    got = [who_gets(socks, port, q) for q in range(12)]
    ok &= check(got == [q % 3 for q in range(12)],
                f"unprivileged cBPF reads the BTH: QPN n -> socket n mod 3: "
                f"{got}")
    # Socket 0 leaves: the last one (socket 2) moves into index 0, so
    # QPN 0 now reaches the old socket 2; QPN 2 (index 2, past the end)
    # goes by the hash to one of the two.
    socks[0].close()
    rest = [socks[2], socks[1]]  # the kernel's array after the move
    got = [who_gets(rest, port, q) for q in (0, 3, 1, 4)]
    ok &= check(got == [0, 0, 1, 1],
                "indices are not stable: after socket 0 leaves, the last "
                f"socket answers for index 0: {got} (0 = the old socket 2)")
    idx = who_gets(rest, port, 2)
    ok &= check(idx in (0, 1), "an index past the end falls back to the "
                "hash: QPN 2 delivered to "
                + ("nobody" if idx is None else
                   ["the old socket 2", "socket 1"][idx]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
