# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""pyverbs on softverbs0, run by Debian's /usr/bin/python3 through
`softverbs run`: every provider extension module that python3-pyverbs
ships imports (mlx5, efa: they bind to our libmlx5/libefa stand-ins), and
pyverbs' own Context, PD and MR work on softverbs0, and QPEx posts an
IBA 1.5 ATOMIC WRITE.

Prints one line per check; exits 1 if any failed."""
import glob
import importlib
import os
import sys

import pyverbs

fails = 0


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        fails += 1


# pyverbs.providers is a namespace package (no __init__): find its modules
# on disk, next to pyverbs itself.
root = os.path.dirname(os.path.dirname(pyverbs.__file__))
mods = sorted({os.path.relpath(p, root).split(".")[0].replace("/", ".")
               for p in glob.glob(os.path.join(root, "pyverbs/providers/*/*.so"))
               + glob.glob(os.path.join(root, "pyverbs/providers/*/*.py"))
               if not p.endswith("__init__.py")})
check(any(m.endswith(".mlx5dv") for m in mods) and
      any(m.endswith(".efadv") for m in mods),
      "found %d provider modules, mlx5dv and efadv among them" % len(mods))
for m in mods:
    try:
        importlib.import_module(m)
        check(True, "import " + m)
    except Exception as e:  # an ImportError naming the missing symbol
        check(False, "import %s: %s" % (m, e))

from pyverbs.device import Context, get_device_list
from pyverbs.pd import PD
from pyverbs.mr import MR
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

names = [d.name.decode() for d in get_device_list()]
check("softverbs0" in names, "get_device_list() has softverbs0: %s" % names)
with Context(name="softverbs0") as ctx:
    attr = ctx.query_device()
    check(attr.phys_port_cnt >= 1, "query_device: %d port(s)" % attr.phys_port_cnt)
    with PD(ctx) as pd:
        flags = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
                 e.IBV_ACCESS_REMOTE_READ)
        with MR(pd, 4096, flags) as mr:
            data = bytes(range(256)) * 16
            mr.write(data, len(data))
            back = mr.read(len(data), 0)
            check(back == data, "MR write/read 4096 bytes round trip")
            check(mr.lkey != 0 or mr.rkey != 0, "MR keys lkey=%#x rkey=%#x"
                  % (mr.lkey, mr.rkey))
            check(mr.length == 4096, "MR length %d" % mr.length)
            # Import into a second context through a dup of cmd_fd, as
            # rdma-core's tests/test_shared_pd.py does.
            with Context(cmd_fd=os.dup(ctx.cmd_fd)) as ctx2:
                pd2 = PD(ctx2, handle=pd.handle)
                mr2 = MR(pd2, handle=mr.handle)
                check((mr2.lkey, mr2.rkey, mr2.length) ==
                      (mr.lkey, mr.rkey, mr.length),
                      "imported MR has the keys and length of MR handle %d"
                      % mr.handle)
                mr2.unimport()
                pd2.unimport()

# IBA 1.5 ATOMIC WRITE through pyverbs' QPEx (two RC QPs of one context
# connected over GID 0, loopback): 8 bytes stored at the peer's MR, an
# IBV_WC_ATOMIC_WRITE completion; and the extended attributes that say so
# (device_cap_flags_ex bit 40) and CQ moderation's limits.
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.qp import QPCap, QPInitAttrEx, QPAttr, QPEx
import struct


def rc_qpex(ctx, pd, cq):
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1,
                max_recv_sge=1)
    ia = QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap, pd=pd,
                      comp_mask=e.IBV_QP_INIT_ATTR_PD |
                      e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
                      send_ops_flags=e.IBV_QP_EX_WITH_ATOMIC_WRITE |
                      e.IBV_QP_EX_WITH_SEND)
    return QPEx(ctx, ia)


def connect(qp, peer, gid, psn, peer_psn):
    a = QPAttr(port_num=1)
    a.qp_access_flags = (e.IBV_ACCESS_LOCAL_WRITE |
                         e.IBV_ACCESS_REMOTE_WRITE)
    qp.to_init(a)
    a = QPAttr(port_num=1)
    a.path_mtu = e.IBV_MTU_1024
    a.dest_qp_num = peer.qp_num
    a.rq_psn = peer_psn
    a.max_dest_rd_atomic = 1
    a.min_rnr_timer = 12
    a.ah_attr = AHAttr(port_num=1, is_global=1,
                       gr=GlobalRoute(dgid=gid, sgid_index=0))
    qp.to_rtr(a)
    a = QPAttr(port_num=1)
    a.sq_psn = psn
    a.timeout = 14
    a.retry_cnt = 7
    a.rnr_retry = 7
    a.max_rd_atomic = 1
    qp.to_rts(a)


with Context(name="softverbs0") as ctx:
    ex = ctx.query_device_ex()
    check(bool(ex.device_cap_flags_ex & (1 << 40)),
          "device_cap_flags_ex has ATOMIC_WRITE (bit 40)")
    check(ex.cq_mod_caps.max_cq_count == 65535 and
          ex.cq_mod_caps.max_cq_period == 4095,
          "cq_mod_caps %d/%d" % (ex.cq_mod_caps.max_cq_count,
                                 ex.cq_mod_caps.max_cq_period))
    with PD(ctx) as pd, CQ(ctx, 32, None, None, 0) as cq:
        flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE
        with MR(pd, 4096, flags) as mr:
            a, b = rc_qpex(ctx, pd, cq), rc_qpex(ctx, pd, cq)
            gid = ctx.query_gid(port_num=1, index=0)
            connect(a, b, gid, 100, 200)
            connect(b, a, gid, 200, 100)
            value = struct.pack("<Q", 0x0123456789abcdef)
            a.wr_start()
            a.wr_id = 77
            a.wr_flags = e.IBV_SEND_SIGNALED
            a.wr_atomic_write(mr.rkey, mr.buf + 64, value)
            a.wr_complete()
            n, wcs = 0, []
            for _ in range(200000):
                n, wcs = cq.poll(num_entries=1)
                if n:
                    break
            check(n == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
                  wcs[0].opcode == e.IBV_WC_ATOMIC_WRITE and
                  wcs[0].wr_id == 77,
                  "ATOMIC WRITE completion: %s" %
                  ([(w.wr_id, w.status, w.opcode) for w in wcs] if n else
                   "none"))
            check(mr.read(8, 64) == value, "ATOMIC WRITE placed 8 bytes")
            a.close()
            b.close()

# pyverbs.device.DM and pyverbs.mr.DMMR: device memory through its copy
# verbs, and a zero-based MR on it; pyverbs.pd.ParentDomain with Python
# allocators whose calls are counted while a CQ is made on it.
from pyverbs.device import DM, AllocDmAttr
from pyverbs.mr import DMMR
from pyverbs.pd import ParentDomain, ParentDomainInitAttr, ParentDomainContext
from pyverbs.cq import CqInitAttrEx, CQEX
import pyverbs.mem_alloc as mem

with Context(name="softverbs0") as ctx:
    with DM(ctx, AllocDmAttr(length=8192)) as dm:
        data = bytes((i * 7 + 3) & 0xff for i in range(1024))
        dm.copy_to_dm(4096, data, len(data))
        back = dm.copy_from_dm(4096, len(data))
        check(back == data, "DM copy_to_dm/copy_from_dm 1024 bytes round trip")
        with PD(ctx) as pd:
            acc = (e.IBV_ACCESS_ZERO_BASED | e.IBV_ACCESS_LOCAL_WRITE |
                   e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_WRITE)
            with DMMR(pd, 4096, acc, dm, 4096) as dmmr:
                check(dmmr.rkey != 0 and dmmr.lkey != 0,
                      "DMMR zero-based MR on device memory")

    calls = {"alloc": 0, "free": 0}

    def pd_alloc(pd, context, size, alignment, resource_type):
        calls["alloc"] += 1
        return mem.posix_memalign(size, alignment)

    def pd_free(pd, context, ptr, resource_type):
        calls["free"] += 1
        mem.free(ptr)

    with PD(ctx) as pd:
        pdc = ParentDomainContext(pd, pd_alloc, pd_free, None)
        par = ParentDomain(ctx, attr=ParentDomainInitAttr(pd=pd,
                                                          pd_context=pdc))
        cia = CqInitAttrEx(cqe=64, wc_flags=e.IBV_WC_STANDARD_FLAGS,
                           parent_domain=par,
                           comp_mask=e.IBV_CQ_INIT_ATTR_MASK_FLAGS |
                           e.IBV_CQ_INIT_ATTR_MASK_PD)
        cq = CQEX(ctx, cia)
        check(calls["alloc"] == 1, "ParentDomain: the CQ's ring from the "
              "Python allocator (%d call)" % calls["alloc"])
        cq.close()
        check(calls["free"] == 1, "ParentDomain: the ring given back to "
              "the Python free (%d call)" % calls["free"])
        par.close()
sys.exit(1 if fails else 0)
