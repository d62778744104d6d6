#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Check SOFTVERBS_PCAP captures as tshark decodes them with no option.

    pcap_check.py [--expect OPCODE,...] [--cut-ok] [--resends] FILE...

For each FILE: tshark reads it (no -d, no option), no packet may be
malformed, every packet must be RoCE v2 (UDP destination port 4791,
InfiniBand), every ICRC must be the CRC of the packet as written
(IBA Annex A17.3.3, recomputed here from the raw bytes), and on each
connection (requester socket port -> destination QP) the PSNs of the
requests must come in order: each request's PSN is the one after the
previous request's range (a READ request's range is its response
packets).  With --resends (UDP, which loses datagrams) a request may
also go back to an earlier PSN (a go-back-N resend, counted) or skip
ahead (this process never got the PSNs between, counted), as long as a
resend brings every skipped PSN later.  Over all files: at least one
InfiniBand packet, and every opcode
number of --expect present.  With --cut-ok (the file of a process
killed while it wrote) a last record cut short is left out, and said,
and PSNs skipped need no resend (it may have come after the kill).
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import zlib

READ_REQ = {0x0C}
READ_RESP = {0x0D, 0x0E, 0x0F, 0x10}
RESP = READ_RESP | {0x11, 0x12}  # + ACKNOWLEDGE, ATOMIC ACKNOWLEDGE
PSN_MASK = 0xFFFFFF


def tshark_fields(path, fields, display_filter=None):
    cmd = ["tshark", "-r", path, "-T", "fields", "-E", "separator=\t"]
    if display_filter:
        cmd += ["-Y", display_filter]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines()]


def pcap_records(path):
    """(linktype, [raw packet bytes], bytes of whole records) of a classic
    pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        endian = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        endian = ">"
    else:
        raise SystemExit(f"{path}: not a classic pcap file (magic {magic:#x})")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    recs, off = [], 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8 : off + 12])[0]
        if off + 16 + incl > len(data):
            break
        recs.append(data[off + 16 : off + 16 + incl])
        off += 16 + incl
    return linktype, recs, off


def ipv4_udp(path):
    """The IPv4 UDP datagrams (from the IP header, cut to its total
    length) of a classic pcap file of Ethernet frames."""
    for rec in pcap_records(path)[1]:
        ip = rec[14:]
        if rec[12:14] == b"\x08\x00" and len(ip) >= 20 and ip[9] == 17:
            yield ip[:struct.unpack(">H", ip[2:4])[0]]


def icrc_ok(pkt):
    """The RoCE v2 ICRC of a raw IPv4/IPv6 datagram, as IBA A17.3.3 says."""
    ver = pkt[0] >> 4
    b = bytearray(pkt)
    if ver == 4:
        iplen = (b[0] & 0xF) * 4
        b[1] = 0xFF  # TOS
        b[8] = 0xFF  # TTL
        b[10:12] = b"\xff\xff"  # header checksum
    else:
        iplen = 40
        b[0] |= 0x0F  # traffic class (low bits), flow label
        b[1:4] = b"\xff\xff\xff"
        b[7] = 0xFF  # hop limit
    b[iplen + 6 : iplen + 8] = b"\xff\xff"  # UDP checksum
    b[iplen + 8 + 4] = 0xFF  # BTH: FECN, BECN, reserved
    crc = zlib.crc32(b"\xff" * 8 + bytes(b[:-4])) & 0xFFFFFFFF
    return crc == struct.unpack("<I", pkt[-4:])[0]


def check_file(path, seen_ops, cut_ok, resends):
    errors = []
    linktype, recs, whole = pcap_records(path)
    size = os.path.getsize(path)
    if whole != size:
        if not cut_ok:
            errors.append(f"the last record is cut short ({size - whole} "
                          "bytes)")
        print(f"{path}: the last record is cut short, left out")
        with open(path, "rb") as f:
            data = f.read(whole)
        tmp = tempfile.NamedTemporaryFile(suffix=".pcap", delete=False)
        tmp.write(data)
        tmp.close()
        try:
            ib, more = check_file(tmp.name, seen_ops, cut_ok, resends)
        finally:
            os.unlink(tmp.name)
        return ib, errors + more
    malformed = tshark_fields(path, ["frame.number"], "_ws.malformed")
    if malformed:
        errors.append(f"{len(malformed)} malformed packets (first: frame "
                      f"{malformed[0][0]})")
    rows = tshark_fields(path, [
        "frame.number", "frame.protocols", "udp.srcport", "udp.dstport",
        "infiniband.bth.destqp", "infiniband.bth.psn",
        "infiniband.bth.opcode",
    ])
    if linktype != 101:
        errors.append(f"link type {linktype}, not LINKTYPE_RAW (101)")
    if len(recs) != len(rows):
        errors.append(f"{len(recs)} records, tshark read {len(rows)}")
    bad_crc = [i + 1 for i, r in enumerate(recs) if not icrc_ok(r)]
    if bad_crc:
        errors.append(f"{len(bad_crc)} packets with a wrong ICRC (first: "
                      f"frame {bad_crc[0]})")
    ib = [r for r in rows if ":infiniband" in r[1]]
    if len(ib) != len(rows):
        other = next(r for r in rows if ":infiniband" not in r[1])
        errors.append(f"{len(rows) - len(ib)} packets not decoded as "
                      f"InfiniBand (first: frame {other[0]}, {other[1]})")
    if any(r[3] != "4791" for r in ib):
        errors.append("a packet not to UDP port 4791")

    pkts = []
    for r in ib:
        op = int(r[6], 0)
        seen_ops.add(op)
        pkts.append((int(r[0]), int(r[2]), int(r[4], 0), int(r[5]), op))
    # READ responses: (requester port, PSN) -> opcode.
    read_resp = {}
    for _, sport, dqp, psn, op in pkts:
        if op in READ_RESP:
            read_resp[(dqp >> 8, psn)] = op
    conns, skipped = {}, {}
    retrans = lost = 0
    for frame, sport, dqp, psn, op in pkts:
        if op in RESP:
            continue
        key = (sport, dqp)
        n = 1
        if op in READ_REQ:
            # Its responses come to the requester's QP (port sport),
            # PSNs psn .. psn + n - 1, the last one LAST or ONLY.
            while read_resp.get((sport, (psn + n - 1) & PSN_MASK)) in (
                    0x0D, 0x0E) and n < 1 << 20:
                n += 1
        span = {(psn + i) & PSN_MASK for i in range(n)}
        if key not in conns:
            conns[key], skipped[key] = (psn + n) & PSN_MASK, set()
            continue
        want = conns[key]
        d = ((psn - want) << 8) & 0xFFFFFFFF
        d = (d - (1 << 32) if d >= 1 << 31 else d) >> 8
        if d == 0:
            conns[key] = (psn + n) & PSN_MASK
        elif d < 0 and resends:
            retrans += 1  # go-back-N resends an earlier PSN
            skipped[key] -= span
        elif d > 0 and resends:
            # Lost before this process saw it: a resend must bring it.
            skipped[key] |= {(want + i) & PSN_MASK for i in range(d)}
            lost += d
            conns[key] = (psn + n) & PSN_MASK
        else:
            errors.append(f"frame {frame}: QP {dqp:#x} request PSN {psn}, "
                          f"expected {want}")
            conns[key] = (psn + n) & PSN_MASK
    for (sport, dqp), left in skipped.items():
        # (A process killed may have died before the resend came.)
        if left and not cut_ok:
            errors.append(f"QP {dqp:#x}: {len(left)} PSNs never seen (first:"
                          f" {min(left)})")
    print(f"{path}: {len(rows)} packets, {len(ib)} InfiniBand, "
          f"{len(conns)} connections, {retrans} resent requests, "
          f"{lost} PSNs seen only when resent, {len(malformed)} malformed")
    return ib, errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--expect", default="",
                    help="BTH opcode numbers that must appear (0x..)")
    ap.add_argument("--cut-ok", action="store_true",
                    help="a last record cut short is left out")
    ap.add_argument("--resends", action="store_true",
                    help="a lossy path: allow go-back-N resends")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    seen, total, fail = set(), 0, False
    for path in a.files:
        ib, errors = check_file(path, seen, a.cut_ok, a.resends)
        total += len(ib)
        for e in errors[:10]:
            print(f"FAIL: {path}: {e}")
        fail |= bool(errors)
    print("opcodes:", " ".join(f"{o:#04x}" for o in sorted(seen)))
    if not total:
        print("FAIL: no InfiniBand packet in any file")
        fail = True
    for op in filter(None, a.expect.split(",")):
        if int(op, 0) not in seen:
            print(f"FAIL: no packet with opcode {op}")
            fail = True
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
