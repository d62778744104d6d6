#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Another user's attacks on standard mode's UDP 4791 (roce_users.sh):
#   roce_thief.py bind [ADDR...]  every bind of 4791 a process may try (the
#                             wildcard, loopback, a group and each ADDR;
#                             IPv4 and IPv6, with and without
#                             SO_REUSEADDR / SO_REUSEPORT): prints each
#                             outcome; exit 0 only if every one failed with
#                             EADDRINUSE, as against rxe's kernel socket
#   roce_thief.py name SECS   hold the abstract name the election used,
#                             @softverbs-roce-4791, for SECS seconds
#                             ("held" on stdout once bound)
#   roce_thief.py mad NAME N  send N datagrams of one GRH area and one MAD
#                             (296 bytes, a CM REQ's class and attribute) to
#                             the abstract name NAME, a CM's route; exit 1
#                             when no one has that name (nothing tested)
import errno
import socket
import sys
import time

SO_REUSEPORT = getattr(socket, "SO_REUSEPORT", 15)


def try_bind(fam, addr, v6only, reuseaddr, reuseport):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, v6only)
        if reuseaddr:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuseport:
            s.setsockopt(socket.SOL_SOCKET, SO_REUSEPORT, 1)
        s.bind((addr, 4791))
        return 0
    except OSError as e:
        return e.errno
    finally:
        s.close()


def bind_all(extra):
    places = [(socket.AF_INET6, "::", 0), (socket.AF_INET6, "::", 1),
              (socket.AF_INET, "0.0.0.0", 0), (socket.AF_INET, "127.0.0.1", 0),
              (socket.AF_INET6, "::1", 1), (socket.AF_INET6, "::ffff:127.0.0.1", 0),
              (socket.AF_INET6, "::ffff:239.1.2.3", 0), (socket.AF_INET, "239.1.2.3", 0)]
    for addr in extra:  # the namespace's own addresses
        places.append((socket.AF_INET6 if ":" in addr else socket.AF_INET, addr, 1 if ":" in addr else 0))
    bad = 0
    for fam, addr, v6only in places:
        for ra, rp in ((0, 0), (1, 0), (0, 1), (1, 1)):
            err = try_bind(fam, addr, v6only, ra, rp)
            what = "bound" if not err else errno.errorcode.get(err, str(err))
            print(f"bind {addr}:4791 v6only={v6only} SO_REUSEADDR={ra} SO_REUSEPORT={rp}: {what}")
            if err != errno.EADDRINUSE:
                bad += 1
    print(f"{bad} binds did not fail with EADDRINUSE")
    return 1 if bad else 0


def hold_name(secs):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0softverbs-roce-4791")
    print("held", flush=True)
    time.sleep(secs)
    return 0


def send_mads(name, n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    mad = bytearray(296)
    mad[40:44] = bytes((1, 7, 2, 3))  # base version, CM class, version, Send
    mad[56:58] = (0x0010).to_bytes(2, "big")  # attribute: ConnectRequest
    for _ in range(n):
        s.sendto(bytes(mad), "\0" + name)
    print(f"sent {n} datagrams to @{name}")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "bind":
        sys.exit(bind_all(sys.argv[2:]))
    if sys.argv[1] == "mad":
        try:
            sys.exit(send_mads(sys.argv[2], int(sys.argv[3])))
        except OSError as e:
            print(f"sendto @{sys.argv[2]}: {e}")
            sys.exit(1)
    sys.exit(hold_name(float(sys.argv[2])))
