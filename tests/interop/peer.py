#!/usr/bin/env python3
"""A pretend pingpong server on the host side of the rig's tap, so that
rxe in the guest sends real RoCE v2 packets across it.

Answers the TCP exchange of rdma-core's ibv_*_pingpong examples (port 18515:
each side sends "LID:QPN:PSN:GID" as 4, 6, 6 and 32 hex digits and a NUL,
the GID's 16 bytes in wire order) with a made-up QPN and the host's GID, and
binds UDP 4791 so the guest's packets are taken (recorded in the file given,
one hex line each) rather than answered by ICMP port unreachable.  Nothing
answers them: this only gets packets onto the wire for tshark and for
tests/unit/test_icrc_rxe.c's vectors.

    peer.py HOST_ADDR OUTFILE
"""
import ipaddress
import select
import socket
import sys

QPN = 0x000123
PSN = 0x000456


def main():
    host, outfile = sys.argv[1], sys.argv[2]
    gid = ipaddress.IPv6Address("::ffff:" + host).packed.hex()
    reply = f"0000:{QPN:06x}:{PSN:06x}:{gid}".encode() + b"\0"
    assert len(reply) == 52

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
                got = b""
                while len(got) < 52:
                    chunk = conn.recv(52 - len(got))
                    if not chunk:
                        break
                    got += chunk
                conn.sendall(reply)
                # The client sends "done" once its QP is ready, then closes.
                try:
                    while conn.recv(64):
                        pass
                except OSError:
                    pass
                conn.close()


if __name__ == "__main__":
    main()
