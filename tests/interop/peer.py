#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The host's side of the rig's tap for the interop tests: a pretend
rdma-core pingpong peer, so that rxe in the guest and the host exchange
real RoCE v2 packets.

rdma-core's ibv_*_pingpong examples swap "LID:QPN:PSN:GID" (4, 6, 6 and 32
hex digits and a NUL; the GID's 16 bytes in wire order) over TCP port 18515,
the client then sends "done".

    peer.py serve HOST_ADDR OUTFILE
        answer the guest's clients with a made-up QPN and bind UDP 4791 so
        their packets are taken (one hex line each in OUTFILE) rather than
        answered by ICMP port unreachable.  Nothing answers them.
    peer.py inject HOST_ADDR GUEST_ADDR
        be the client of an ibv_ud_pingpong server in the guest: send it
        UD SENDs built here (IPv4 ID 0, DF: what an unconnected socket
        sends) with a wrong ICRC, then one with the right ICRC, and wait
        for the server's reply; prints what happened.
"""
import ipaddress
import select
import socket
import struct
import sys
import time
import zlib

QPN = 0x000123
PSN = 0x000456


def dest_message(host):
    gid = ipaddress.IPv6Address("::ffff:" + host).packed.hex()
    msg = f"0000:{QPN:06x}:{PSN:06x}:{gid}".encode() + b"\0"
    assert len(msg) == 52
    return msg


def read_exact(conn, n):
    got = b""
    while len(got) < n:
        chunk = conn.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


def serve(host, outfile):
    reply = dest_message(host)
    tcp = socket.socket()
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind((host, 18515))
    tcp.listen(4)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((host, 4791))
    print("peer: ready", flush=True)
    with open(outfile, "w") as out:
        while True:
            ready, _, _ = select.select([tcp, udp], [], [])
            if udp in ready:
                data, src = udp.recvfrom(65536)
                out.write(f"{src[0]}:{src[1]} {data.hex()}\n")
                out.flush()
            if tcp in ready:
                conn, _ = tcp.accept()
                conn.settimeout(10)
                read_exact(conn, 52)
                conn.sendall(reply)
                # The client sends "done" once its QP is ready, then closes.
                try:
                    while conn.recv(64):
                        pass
                except OSError:
                    pass
                conn.close()


def icrc(ip, udp, payload):
    """RoCE v2 ICRC (IBA A17.3.3) of payload (BTH onwards, ICRC
    excluded) under these IPv4 and UDP headers; zlib's CRC-32 is the
    ICRC's polynomial, seed and final complement."""
    ip = bytearray(ip)
    ip[1] = ip[8] = ip[10] = ip[11] = 0xFF  # TOS, TTL, checksum
    udp = bytearray(udp)
    udp[6] = udp[7] = 0xFF  # checksum
    bth = bytearray(payload[:12])
    bth[4] = 0xFF  # FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + ip + udp + bth + payload[12:]) \
        & 0xFFFFFFFF


def ud_send(src, dst, sport, dqpn, data):
    """A UD SEND ONLY packet (BTH, DETH, data, ICRC), its ICRC computed
    for an IPv4 header with ID 0 and DF, as an unconnected socket sends."""
    bth = struct.pack("!BBHI I", 0x64, 0, 0xFFFF, dqpn & 0xFFFFFF, 0)
    deth = struct.pack("!II", 0x11111111, QPN)
    body = bth + deth + data
    udplen = 8 + len(body) + 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udplen, 0, 0x4000, 64,
                     17, 0, socket.inet_aton(src), socket.inet_aton(dst))
    udp = struct.pack("!HHHH", sport, 4791, udplen, 0)
    crc = icrc(ip, udp, body)
    return body + struct.pack("<I", crc)


def inject(host, guest):
    # Sent from an ephemeral port, answered on 4791: rxe replies to the
    # RoCE v2 port whatever the source port was.  Unconnected with DF,
    # Linux sends IPv4 ID 0 (ip_select_ident_segs): the ID the ICRC below
    # assumes.
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.setsockopt(socket.IPPROTO_IP, 10, 2)  # IP_MTU_DISCOVER, _DO
    tx.bind((host, 0))
    sport = tx.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((host, 4791))
    deadline = time.monotonic() + 120
    while True:
        try:
            tcp = socket.create_connection((guest, 18515), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                print("peer: no ibv_ud_pingpong server in the guest")
                return 1
            time.sleep(0.5)
    tcp.sendall(dest_message(host))
    theirs = read_exact(tcp, 52).decode(errors="replace")
    tcp.sendall(b"done\0")
    tcp.close()
    dqpn = int(theirs.split(":")[1], 16)
    print(f"peer: server QPN {dqpn:#x}, sending from port {sport}",
          flush=True)
    time.sleep(0.5)
    good = ud_send(host, guest, sport, dqpn, b"\xaa" * 64)
    bad = good[:-4] + bytes([good[-4] ^ 1]) + good[-3:]
    for _ in range(3):
        tx.sendto(bad, (guest, 4791))
    udp.settimeout(3)
    try:
        data, src = udp.recvfrom(65536)
        print(f"peer: a reply to a wrong ICRC: {data[:12].hex()}")
    except socket.timeout:
        print("peer: no reply to 3 packets with a wrong ICRC")
    tx.sendto(good, (guest, 4791))
    udp.settimeout(30)
    try:
        data, src = udp.recvfrom(65536)
    except socket.timeout:
        print("peer: no reply to the packet with the right ICRC")
        return 1
    opcode, dqp = data[0], struct.unpack("!I", data[4:8])[0] & 0xFFFFFF
    print(f"peer: reply from {src[0]}:{src[1]}: opcode {opcode:#04x} "
          f"QPN {dqp:#x} {len(data)} bytes")
    return 0


def main(argv):
    if argv[1] == "serve":
        serve(argv[2], argv[3])
    elif argv[1] == "inject":
        return inject(argv[2], argv[3])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
