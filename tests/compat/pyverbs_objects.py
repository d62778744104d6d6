#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Debian's unmodified pyverbs (python3-pyverbs) on softverbs: list and open
the device, query it, and create and destroy PD, MR, CQ and QP objects.
Run through `softverbs run` by pyverbs.sh, so pyverbs' extension modules
bind to our libibverbs.so.1."""
import sys

try:
    import pyverbs.enums as e
except ImportError:  # rdma-core 65: most values only in their enum classes
    import enum
    import types
    import pyverbs.libibverbs_enums as _enums
    e = types.SimpleNamespace(**vars(_enums))
    for _c in list(vars(_enums).values()):
        if isinstance(_c, enum.EnumMeta):
            vars(e).update(_c.__members__)
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print('FAIL:', what)


names = [d.name.decode() if isinstance(d.name, bytes) else d.name
         for d in get_device_list()]
check(names == ['softverbs0'], 'device list is [softverbs0]: %r' % names)

with Context(name='softverbs0') as ctx:
    attr = ctx.query_device()
    check(attr.phys_port_cnt == 1, 'one port')
    check(attr.max_qp > 0 and attr.max_cqe > 0, 'limits reported')
    port = ctx.query_port(1)
    check(port.state == e.IBV_PORT_ACTIVE, 'port active')
    check(port.link_layer == e.IBV_LINK_LAYER_ETHERNET, 'link layer Ethernet')
    gid = ctx.query_gid(1, 0)
    check(str(gid) != '0000:0000:0000:0000:0000:0000:0000:0000', 'GID 0 set')

    with PD(ctx) as pd:
        access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
                  e.IBV_ACCESS_REMOTE_READ)
        mr = MR(pd, 4096, access)
        check(mr.length == 4096, 'MR length')
        check(mr.lkey != 0 or mr.rkey != 0, 'MR keys assigned')
        payload = b'softverbs pyverbs check'
        mr.write(payload, len(payload))
        check(mr.read(len(payload), 0) == payload, 'MR buffer round trip')

        cq = CQ(ctx, 16)
        check(cq.cqe >= 16, 'CQ has at least 16 entries: %d' % cq.cqe)

        cap = QPCap(max_send_wr=8, max_recv_wr=8, max_send_sge=1,
                    max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)
        qp = QP(pd, init)
        check(qp.qp_num != 0, 'QP number assigned')
        check(qp.qp_state == e.IBV_QPS_RESET, 'new QP in RESET')
        qa = QPAttr(port_num=1)
        qa.qp_access_flags = access
        qp.to_init(qa)
        qattr, _ = qp.query(e.IBV_QP_STATE | e.IBV_QP_PORT)
        check(qattr.qp_state == e.IBV_QPS_INIT, 'QP moved to INIT')
        check(qattr.port_num == 1, 'QP port 1')

        # Closing in dependency order must succeed (close() raises on error).
        qp.close()
        cq.close()
        mr.close()

if failures:
    print('%d check(s) failed' % failures)
    sys.exit(1)
print('PASS')
