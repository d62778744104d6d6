"""pyverbs on softverbs0, run by Debian's /usr/bin/python3 through
`softverbs run`: every provider extension module that python3-pyverbs
ships imports (mlx5, efa: they bind to our libmlx5/libefa stand-ins), and
pyverbs' own Context, PD and MR work on softverbs0.

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
import pyverbs.enums as e

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
sys.exit(1 if fails else 0)
