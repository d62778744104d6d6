#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Write the seed corpus of the fuzz harnesses (fuzz/corpus/<name>/).

The seeds are committed; this script says how they were made and makes
them again (python3 fuzz/seeds.py).  Each is a well-formed input the
harness's target would see in normal operation, so that fuzzing starts
from deep inside the parsers rather than at their first check.
"""
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(name, seeds):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    for i, (label, data) in enumerate(seeds):
        with open(os.path.join(d, "%02d-%s" % (i, label)), "wb") as f:
            f.write(data)


# ---- recv: records sel(1) len(2 LE) packet ---------------------------------

def bth(op, psn, pad=0, ackreq=0, se=0):
    return (bytes([op, (se << 7) | (pad << 4), 0xFF, 0xFF, 0, 0, 0, 0,
                   ackreq << 7]) + psn.to_bytes(3, "big"))


def aeth(syn, msn):
    return bytes([syn]) + msn.to_bytes(3, "big")


def reth(va, length, rkey=0):
    return struct.pack(">QII", va, rkey, length)


def atomiceth(va, swap, cmp_, rkey=0):
    return struct.pack(">QIQQ", va, rkey, swap, cmp_)


ICRC = b"\0\0\0\0"  # written by the harness


def rec(sel, pkt):
    return bytes([sel]) + struct.pack("<H", len(pkt)) + pkt


def pkt(*parts):
    return b"".join(parts) + ICRC


# QP 0 (RC requester) has outstanding, from PSN 0x100: WRITE 3000 B
# (0x100-0x102), READ 5000 B (0x103-0x107), CAS (0x108), FADD (0x109),
# SEND (0x10a).  QP 1 (RC responder) expects PSN 0x200.
pay = lambda n, b=0x41: bytes([b]) * n
ack_write = rec(0, pkt(bth(0x11, 0x102), aeth(0x1F, 1)))
read_resp = [rec(0, pkt(bth(0x0D, 0x103), aeth(0x1F, 2), pay(1024)))]
read_resp += [rec(0, pkt(bth(0x0E, 0x103 + i), pay(1024))) for i in (1, 2, 3)]
read_resp += [rec(0, pkt(bth(0x0F, 0x107), aeth(0x1F, 2), pay(904)))]
atom = [rec(0, pkt(bth(0x12, 0x108), aeth(0x1F, 3), struct.pack(">Q", 7))),
        rec(0, pkt(bth(0x12, 0x109), aeth(0x1F, 4), struct.pack(">Q", 9)))]
ack_send = rec(0, pkt(bth(0x11, 0x10A), aeth(0x1F, 5)))
K = 0x80  # patch R_Key / VA / SRQ number
recv = [
    ("rc-ack-write", ack_write),
    ("rc-read-resp", ack_write + b"".join(read_resp)),
    ("rc-atomic-acks", ack_write + read_resp[0] + b"".join(atom)),
    ("rc-all-done", ack_write + b"".join(read_resp) + b"".join(atom) + ack_send),
    ("rc-nak-seq", rec(0, pkt(bth(0x11, 0x100), aeth(0x60, 0)))),
    ("rc-nak-access", rec(0, pkt(bth(0x11, 0x100), aeth(0x62, 0)))),
    ("rc-rnr-nak", rec(0, pkt(bth(0x11, 0x100), aeth(0x2E, 0)))),
    ("rc-send", rec(1, pkt(bth(0x04, 0x200), pay(64)))),
    ("rc-send-imm", rec(1, pkt(bth(0x05, 0x200), b"\1\2\3\4", pay(32)))),
    ("rc-send-inv", rec(1, pkt(bth(0x17, 0x200), b"\0\0\0\5", pay(32)))),
    ("rc-send-multi", rec(1, pkt(bth(0x00, 0x200), pay(1024)))
     + rec(1, pkt(bth(0x01, 0x201), pay(1024)))
     + rec(1, pkt(bth(0x02, 0x202), pay(100)))),
    ("rc-write", rec(1 | K, pkt(bth(0x0A, 0x200), reth(0x100, 64), pay(64)))),
    ("rc-write-imm", rec(1 | K, pkt(bth(0x0B, 0x200), reth(0x200, 16),
                                    b"\9\9\9\9", pay(16)))),
    ("rc-write-multi", rec(1 | K, pkt(bth(0x06, 0x200), reth(0x400, 2100), pay(1024)))
     + rec(1, pkt(bth(0x07, 0x201), pay(1024)))
     + rec(1, pkt(bth(0x08, 0x202), pay(52)))),
    ("rc-read", rec(1 | K, pkt(bth(0x0C, 0x200), reth(0x800, 2048)))),
    ("rc-cas", rec(1 | K, pkt(bth(0x13, 0x200), atomiceth(0x1000, 5, 0x5A5A5A5A5A5A5A5A)))),
    ("rc-fadd", rec(1 | K, pkt(bth(0x14, 0x200), atomiceth(0x1008, 1, 0)))),
    ("rc-shm-send", rec(1 | 8, pkt(bth(0x04, 0x200), pay(64)))),
    ("rc-shm-write", rec(1 | 8 | K, pkt(bth(0x0A, 0x200), reth(0x100, 64), pay(64)))),
    ("uc-send", rec(2, pkt(bth(0x24, 0x200), pay(64)))),
    ("uc-write", rec(2 | K, pkt(bth(0x2A, 0x200), reth(0x100, 64), pay(64)))),
    ("ud-send", rec(3, pkt(bth(0x64, 0x0), struct.pack(">II", 0x11111111, 0x123), pay(32)))),
    ("ud-send-imm", rec(3, pkt(bth(0x65, 0x0), struct.pack(">II", 0x11111111, 0x123),
                               b"\1\1\1\1", pay(32)))),
    ("xrc-send", rec(4 | K, pkt(bth(0xA4, 0x200), b"\0\0\0\0", pay(64)))),
    ("xrc-write", rec(4 | K, pkt(bth(0xAA, 0x200), b"\0\0\0\0", reth(0x100, 64), pay(64)))),
    ("xrc-read", rec(4 | K, pkt(bth(0xAC, 0x200), b"\0\0\0\0", reth(0x100, 64)))),
    ("xrc-ack", rec(5, pkt(bth(0xB1, 0x101), aeth(0x1F, 1)))),
    ("xrc-read-resp", rec(5, pkt(bth(0xB1, 0x101), aeth(0x1F, 1)))
     + rec(5, pkt(bth(0xAD, 0x102), aeth(0x1F, 2), pay(1024)))
     + rec(5, pkt(bth(0xAE, 0x103), pay(1024)))
     + rec(5, pkt(bth(0xAF, 0x104), aeth(0x1F, 2), pay(952)))),
]
write("recv", recv)

# ---- shm: ctl(1) tail_delta(2) t1(4) t2(4), then per slot kind(1)
# len(2) pid(4) flow(sizeof sv_flow = 2+16+2+16+2+2+1+1 = 42: the
# addresses, the ports, the traffic class and a zero byte) data

FLOW = struct.pack("<H16sH16sHHBB", 10, bytes(15) + b"\1", 10,
                   bytes(15) + b"\1", 4791, 4791, 0, 0)


def slot(kind, length, pid=0, data=b""):
    return bytes([kind]) + struct.pack("<H", length) + struct.pack("<i", pid) \
        + FLOW + data[:64]


shm = [
    ("one-filled", bytes([0]) + struct.pack("<HII", 1, 1000, 1)
     + slot(0, 40, 1, bth(0x04, 0x200) + pay(28))),
    ("three-filled", bytes([2]) + struct.pack("<HII", 3, 1000, 1)
     + slot(0, 40, 1, pay(40)) + slot(0, 1024, 1, pay(64)) + slot(0, 8, 1, pay(8))),
    ("claimed-stall", bytes([1]) + struct.pack("<HII", 2, 1000, 20000)
     + slot(1, 40, 999999) + slot(0, 40, 1)),
    ("long-len", bytes([0]) + struct.pack("<HII", 1, 1000, 1)
     + bytes([4]) + struct.pack("<I", 0xFFFFFFFF) + struct.pack("<i", 1) + FLOW),
    ("sleeping", bytes([8]) + struct.pack("<HII", 0, 1, 1) + slot(2, 0)),
]
write("shm", shm)

# ---- pubtab: params (packed: qpn, my_qpn, rkey, iova, len, access, rd,
# pick, hdr_mode, qslot, mslot), then the MR slots (64 x 48 B) and the
# QP slots (64 x 40 B), every slot the same entry.

def params(qpn, my, rkey, iova, length, access, rd, pick, hdr_mode, qs=0, ms=0):
    return struct.pack("<IIIQQBBBBBB", qpn, my, rkey, iova, length, access, rd,
                       pick, hdr_mode, qs, ms)


MR = struct.pack("<IIIIQQQQ", 0, 0x5555, 0, 0xE, 0x1000, 0x10000, 0x10000,
                 0x7F0000000000)
QP = struct.pack("<IIIIIIIIQ", 0, 0x101, 0, 3, 0xE, 0x222, 16, 0, 0x1000)
slots = MR * 64 + QP * 64
pubtab = [
    ("write-ok", params(0x101, 0x222, 0x5555, 0x10100, 64, 0, 0, 0, 0) + slots),
    ("read-picked", params(0, 0, 0, 0x10, 4096, 1, 4, 7, 0, 5, 9) + slots),
    ("atomic", params(0x101, 0x222, 0x5555, 0x10008, 8, 2, 1, 0, 0) + slots),
    ("out-of-bounds", params(0x101, 0x222, 0x5555, 0x1FFF0, 64, 0, 0, 0, 0) + slots),
    ("own-header", params(0x101, 0x222, 0x5555, 0x10100, 64, 0, 0, 0, 1)
     + struct.pack("<QIiQIIQQ", 0x5356505542544231, 1, 0, 0, 64, 64, 4096, 7168)
     + slots),
    ("rewrite-held", params(0x101, 0x222, 0x5555, 0x10100, 64, 0, 0, 0, 0)
     + slots + bytes([0xFF]) * 64),
]
write("pubtab", pubtab)

# ---- cm: ctl(1), then messages of 276 bytes (cm/wire.h)

def msg(type_, pdata=b"", ps=0x0106, qpn=0x123, psn=0x456, reason=0, flags=0):
    m = struct.pack(">BBHBBBBBBHIIIIII", 1, type_, 276, len(pdata), flags, 1, 1,
                    7, 7, reason, ps, qpn, psn, 0x11111111, 0, 0)
    m += bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1])
    m += pdata + bytes(224 - len(pdata))
    assert len(m) == 276, len(m)
    return m


CMA = bytes([0x00, 0x40, 0, 0]) + bytes(12) + bytes([0, 0, 0, 0]) + bytes(16)
cm = [
    ("req-reject", bytes([0]) + msg(1, CMA)),
    ("req-accept-rtu", bytes([2]) + msg(1, CMA) + msg(3)),
    ("req-accept-rtu-dreq", bytes([2]) + msg(1, CMA) + msg(3) + msg(5)),
    ("req-accept-rej", bytes([2]) + msg(1, CMA) + msg(4, reason=28)),
    ("req-accept-drep", bytes([2]) + msg(1, CMA) + msg(6)),
    ("req-wrong-space", bytes([0]) + msg(1, CMA, ps=0x0111)),
    ("sidr-req", bytes([4]) + msg(7, CMA, ps=0x0111)),
    ("raw-bad-version", bytes([1]) + bytes(276)),
]
write("cm", cm)
