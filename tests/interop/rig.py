#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The interoperability rig: Linux Soft-RoCE (rxe) in a qemu VM.

A Debian 12 kernel (apt-get download + dpkg -x, nothing installed on the
host) boots under qemu (TCG: this machine's KVM cannot boot stock kernels)
with a small initramfs: busybox-static, the modules rxe needs, and
rdma-core's userspace copied from the host's own Debian packages (the same
rdma-core 44 the guest would have).  The guest's virtio NIC is a tap device
in a network namespace made for the run; rxe0 sits on it.  Commands reach
the guest through a 9p share (init.sh says how).  docs/interop.md has the
whole story.

    rig.py build          fetch and build (cached under the cache folder)
    rig.py run CMD...     boot, run CMD (sh -c) in the guest, print its
                          output, exit with its status
    rig.py shell          boot to a shell on the console (poweroff -f ends it)

Needs root (ip netns, the tap device, dpkg -x of kernel modules owned by
root), qemu-system-x86_64, /dev/net/tun, and apt-get download the first
time.  A missing prerequisite exits 77 with one line saying why; with CI=true
it is a failure (exit 1) instead, since CI must run the rig.
"""
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("SV_INTEROP_CACHE",
                       os.path.join(SOURCE, "build", "interop-cache"))

# The guest and the host side of its tap, in the run's namespace.
HOST_ADDR = "10.99.0.1"
GUEST_ADDR = "10.99.0.2"
GUEST_MAC = "52:54:00:12:34:56"

# Modules the guest loads; their dependencies come from each .ko's
# modinfo.  crc32_generic first: rxe needs a crc32 transform at attach.
MODULES = ["crc32_generic", "virtio_pci", "virtio_net", "9pnet_virtio",
           "9p", "rdma_rxe", "rdma_ucm"]
# rdma-core userspace for the guest: binaries with every library ldd
# lists, rxe's provider (dlopened by libibverbs, so not in any ldd).
BINARIES = ["/usr/bin/ibv_devinfo", "/usr/bin/ibv_devices",
            "/usr/bin/ibv_rc_pingpong", "/usr/bin/ibv_uc_pingpong",
            "/usr/bin/ibv_ud_pingpong", "/usr/bin/ibv_srq_pingpong",
            "/usr/bin/rping", "/usr/bin/ucmatose", "/usr/bin/udaddy",
            "/usr/bin/mckey", "/usr/bin/ib_write_bw", "/usr/bin/ib_write_lat",
            "/usr/bin/ib_read_bw", "/usr/bin/ib_read_lat",
            "/usr/bin/ib_send_bw", "/usr/bin/ib_send_lat",
            "/usr/bin/ib_atomic_bw", "/usr/bin/ib_atomic_lat",
            "/usr/bin/rdma"]
PROVIDER = "/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so"
DRIVER = "/etc/libibverbs.d/rxe.driver"
# Loaded by glibc with dlopen, so in no ldd: pthread_exit unwinds through
# libgcc_s (rping's threads exit so, and abort without it).
DLOPENED = ["/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"]


class Skip(Exception):
    """A prerequisite this machine lacks."""


def skip(why):
    """Exit 77 (ctest's skip) with one line; in CI a failure."""
    if os.environ.get("CI") == "true":
        print(f"interop: FAIL (CI must run the rig): {why}")
        sys.exit(1)
    print(f"interop: SKIP: {why}")
    sys.exit(77)


def check_prerequisites():
    if os.geteuid() != 0:
        raise Skip("needs root (ip netns, a tap device, dpkg -x of modules)")
    if not os.path.exists("/dev/net/tun"):
        raise Skip("no /dev/net/tun")
    for tool in ("qemu-system-x86_64", "cpio", "apt-get", "dpkg", "ip",
                 "ping"):
        if not shutil.which(tool):
            raise Skip(f"no {tool} (scripts/deps.sh test installs it)")


def sh(*args, **kw):
    kw.setdefault("check", True)
    return subprocess.run(args, **kw)


@contextlib.contextmanager
def cache_lock():
    """One builder at a time: ctest -j may start several tests at once."""
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def download(pkg):
    """The cached .deb of pkg (an exact name), downloaded once."""
    debs = os.path.join(CACHE, "debs")
    os.makedirs(debs, exist_ok=True)
    have = [f for f in os.listdir(debs) if f.startswith(pkg + "_")]
    if have:
        return os.path.join(debs, sorted(have)[-1])
    r = subprocess.run(["apt-get", "download", pkg], cwd=debs,
                       capture_output=True, text=True)
    have = [f for f in os.listdir(debs) if f.startswith(pkg + "_")]
    if r.returncode != 0 or not have:
        raise Skip(f"apt-get download {pkg} failed (no network?): "
                   + (r.stderr.strip().splitlines() or ["?"])[-1])
    return os.path.join(debs, have[0])


def kernel_package():
    """linux-image-6.1.0-N-amd64: the cached one, else what
    linux-image-amd64 depends on today."""
    debs = os.path.join(CACHE, "debs")
    if os.path.isdir(debs):
        have = sorted(f for f in os.listdir(debs)
                      if re.match(r"linux-image-6\.1\.0-\d+-amd64_", f))
        if have:
            return have[-1].split("_")[0]
    for attempt in range(2):
        r = subprocess.run(["apt-cache", "depends", "linux-image-amd64"],
                           capture_output=True, text=True)
        m = re.search(r"Depends: (linux-image-6\.1\.0-\d+-amd64)\b",
                      r.stdout)
        if m:
            return m.group(1)
        other = re.search(r"Depends: (linux-image-\S+)", r.stdout)
        if other:  # Debian 13, sid: a newer kernel the rig is not made for
            raise Skip("the rig boots Debian 12's kernel (6.1); this "
                       "system's linux-image-amd64 depends on "
                       + other.group(1))
        if attempt == 0:  # a fresh container has no package lists yet
            subprocess.run(["apt-get", "update", "-qq"],
                           capture_output=True)
    raise Skip("apt-cache knows no linux-image-amd64 (no network for "
               "apt-get update?)")


def unpack(deb, name):
    dest = os.path.join(CACHE, name)
    if not os.path.isdir(dest):
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        sh("dpkg", "-x", deb, tmp)
        os.rename(tmp, dest)
    return dest


def module_order(moddir):
    """MODULES and their dependencies, each after what it depends on.
    The package has no modules.dep (depmod makes it at install), so the
    dependencies come from each module's .modinfo "depends=" string."""
    path = {}
    for root, _, files in os.walk(moddir):
        for f in files:
            if f.endswith(".ko"):
                path[f[:-3].replace("-", "_")] = os.path.join(root, f)
    order = []

    def visit(name):
        if name in order:
            return
        with open(path[name], "rb") as f:
            m = re.search(rb"\0depends=([^\0]*)\0", f.read())
        for dep in (m.group(1).decode().split(",") if m else []):
            if dep:
                visit(dep.replace("-", "_"))
        order.append(name)

    for name in MODULES:
        visit(name)
    return order, path


def libraries(files):
    """Every shared library the files load, by ldd (the system's loader,
    never softverbs: LD_LIBRARY_PATH and LD_PRELOAD cleared)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    libs = set()
    for f in files:
        out = subprocess.run(["ldd", f], capture_output=True, text=True,
                             env=env, check=True).stdout
        for line in out.splitlines():
            m = re.search(r"(/\S+) \(0x", line)
            if m:
                libs.add(m.group(1))
    return sorted(libs)


def guest_path(path):
    """Debian 12 is merged-/usr: /lib/x is /usr/lib/x in the guest too."""
    for top in ("/lib/", "/lib64/", "/bin/", "/sbin/"):
        if path.startswith(top):
            return "/usr" + path
    return path


def host_files():
    files = BINARIES + [PROVIDER]
    missing = [f for f in files + [DRIVER] + DLOPENED
               if not os.path.exists(f)]
    if missing:
        raise Skip("missing on the host (scripts/deps.sh test): "
                   + " ".join(missing))
    return files + [DRIVER] + DLOPENED + libraries(files)


def build():
    """Kernel, initramfs: (kernel version, vmlinuz, initramfs) paths,
    rebuilt only when an input changed."""
    check_prerequisites()
    with cache_lock():
        kpkg = kernel_package()
        kdeb = download(kpkg)
        kroot = unpack(kdeb, "kernel-" + os.path.basename(kdeb)[:-4])
        kver = kpkg[len("linux-image-"):]
        bbroot = unpack(download("busybox-static"), "busybox")
        vmlinuz = os.path.join(kroot, "boot", "vmlinuz-" + kver)
        order, modpath = module_order(os.path.join(kroot, "lib", "modules",
                                                   kver))
        files = host_files()

        stamp = hashlib.sha256()
        for f in [os.path.abspath(__file__), os.path.join(HERE, "init.sh")]:
            with open(f, "rb") as fh:
                stamp.update(fh.read())
        for f in files + [kdeb]:
            st = os.stat(f)
            stamp.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        image = os.path.join(CACHE, f"initramfs-{kver}.cpio.gz")
        stampfile = image + ".stamp"
        if (os.path.exists(image) and os.path.exists(stampfile)
                and open(stampfile).read() == stamp.hexdigest()):
            return kver, vmlinuz, image

        root = tempfile.mkdtemp(prefix="initramfs.", dir=CACHE)
        try:
            for d in ("usr/bin", "usr/sbin", "usr/lib/x86_64-linux-gnu",
                      "usr/lib64", "etc", "proc", "sys", "dev", "tmp",
                      "share", "modules"):
                os.makedirs(os.path.join(root, d), exist_ok=True)
            for link in ("bin", "sbin", "lib", "lib64"):
                os.symlink("usr/" + link, os.path.join(root, link))
            shutil.copy(os.path.join(bbroot, "bin", "busybox"),
                        os.path.join(root, "usr/bin/busybox"))
            applets = subprocess.run(
                [os.path.join(bbroot, "bin", "busybox"), "--list"],
                capture_output=True, text=True, check=True).stdout.split()
            for a in applets:
                dst = os.path.join(root, "usr/bin", a)
                if not os.path.exists(dst):
                    os.symlink("busybox", dst)
            for f in files:
                dst = root + guest_path(f)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if os.path.lexists(dst):
                    os.unlink(dst)  # a busybox applet of the same name
                shutil.copy(f, dst)  # follows symlinks: the real file
            for m in order:
                shutil.copy(modpath[m], os.path.join(root, "modules",
                                                     m + ".ko"))
            with open(os.path.join(root, "modules", "order"), "w") as f:
                f.write("\n".join(order) + "\n")
            shutil.copy(os.path.join(HERE, "init.sh"),
                        os.path.join(root, "init"))
            os.chmod(os.path.join(root, "init"), 0o755)
            tmp = image + ".tmp"
            with open(tmp, "wb") as out:
                find = subprocess.Popen(["find", "."], cwd=root,
                                        stdout=subprocess.PIPE)
                cpio = subprocess.Popen(
                    ["cpio", "-o", "-H", "newc", "--quiet",
                     "--owner", "0:0"], cwd=root, stdin=find.stdout,
                    stdout=subprocess.PIPE)
                gz = subprocess.Popen(["gzip", "-1"], stdin=cpio.stdout,
                                      stdout=out)
                find.stdout.close()
                cpio.stdout.close()
                if gz.wait() or cpio.wait() or find.wait():
                    raise RuntimeError("building the initramfs failed")
            os.rename(tmp, image)
            with open(stampfile, "w") as f:
                f.write(stamp.hexdigest())
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return kver, vmlinuz, image


def reap_namespaces():
    """Delete the namespaces of runs that were killed (ctest's timeout
    kills without cleanup): svrigPID where PID is gone, with what still
    runs in them (a qemu, tshark, peer.py of that run)."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True,
                         text=True).stdout
    for m in re.finditer(r"^svrig(\d+)\b", out, re.M):
        if os.path.exists(f"/proc/{m.group(1)}"):
            continue
        ns = "svrig" + m.group(1)
        pids = subprocess.run(["ip", "netns", "pids", ns],
                              capture_output=True, text=True).stdout
        for pid in pids.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        sh("ip", "netns", "del", ns, check=False)


class VM:
    """One boot of the guest in a fresh network namespace.  The host side
    of the tap has HOST_ADDR; the guest has GUEST_ADDR.  Use as a context
    manager; in_ns() runs a host command inside the namespace."""
    made = []  # every VM of this process, for its caller to clean up


    def __init__(self, cmd=None, workdir=None):
        self.kver, self.vmlinuz, self.initrd = build()
        self.ns = f"svrig{os.getpid()}"
        self.tmp = workdir or tempfile.mkdtemp(prefix="sv-interop.")
        self.share = os.path.join(self.tmp, "share")
        os.makedirs(self.share, exist_ok=True)
        self.console = os.path.join(self.tmp, "console.log")
        self.cmd = cmd
        self.qemu = None
        self.booted = None
        self.helpers = []
        VM.made.append(self)

    def in_ns(self, *args):
        return ["ip", "netns", "exec", self.ns] + list(args)

    def spawn(self, *args, **kw):
        """A host process in the namespace, killed when the VM ends."""
        proc = subprocess.Popen(self.in_ns(*args), **kw)
        self.helpers.append(proc)
        return proc

    def __enter__(self):
        reap_namespaces()
        sh("ip", "netns", "add", self.ns)
        try:
            sh("ip", "-n", self.ns, "link", "set", "lo", "up")
            sh("ip", "-n", self.ns, "tuntap", "add", "tap0", "mode", "tap")
            sh("ip", "-n", self.ns, "addr", "add", HOST_ADDR + "/24",
               "dev", "tap0")
            sh("ip", "-n", self.ns, "link", "set", "tap0", "up")
        except BaseException:
            sh("ip", "netns", "del", self.ns, check=False)
            raise
        return self

    def start(self):
        for f in ("out", "status"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.share, f))
        if self.cmd is not None:
            with open(os.path.join(self.share, "cmd"), "w") as f:
                f.write(self.cmd + "\n")
        args = ["qemu-system-x86_64", "-accel", "tcg,thread=multi",
                "-cpu", "max", "-m", "1G", "-nographic", "-no-reboot",
                "-kernel", self.vmlinuz, "-initrd", self.initrd,
                "-append", "console=ttyS0 panic=-1 quiet loglevel=4 "
                f"rig.addr={GUEST_ADDR}",
                "-netdev", "tap,id=n0,ifname=tap0,script=no,downscript=no",
                "-device", f"virtio-net-pci,netdev=n0,mac={GUEST_MAC}",
                "-virtfs", f"local,path={self.share},mount_tag=share,"
                "security_model=none"]
        self.log = open(self.console, "wb")
        self.booted = time.monotonic()
        interactive = self.cmd is None
        self.qemu = subprocess.Popen(
            self.in_ns(*args), stdin=None if interactive else
            subprocess.DEVNULL, stdout=None if interactive else self.log,
            stderr=subprocess.STDOUT if not interactive else None)

    def wait(self, timeout):
        """The guest command's (status, output); None status when the VM
        did not finish in time (it is killed)."""
        try:
            self.qemu.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.qemu.kill()
            self.qemu.wait()
        self.elapsed = time.monotonic() - self.booted
        self.log.close()
        status = out = None
        with contextlib.suppress(FileNotFoundError, ValueError):
            with open(os.path.join(self.share, "status")) as f:
                status = int(f.read())
        with contextlib.suppress(FileNotFoundError):
            with open(os.path.join(self.share, "out"), errors="replace") as f:
                out = f.read()
        return status, out

    def console_text(self):
        with open(self.console, errors="replace") as f:
            return f.read()

    def kill_all(self):
        """qemu and every process in the namespace (the host's tools)."""
        if self.qemu and self.qemu.poll() is None:
            self.qemu.kill()
        pids = subprocess.run(["ip", "netns", "pids", self.ns],
                              capture_output=True, text=True).stdout
        for pid in pids.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)

    def __exit__(self, *exc):
        for proc in [self.qemu] + self.helpers:
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()
        sh("ip", "netns", "del", self.ns, check=False)


class TxWatch(threading.Thread):
    """Pings the guest every second once it has answered; when it has not
    answered for STALL_SECS, its network is wedged: `stalled` is set, and
    qemu and every process in the namespace are killed, so the run ends
    at once instead of waiting out each tool's timeout.

    Why: under interop.loss the guest kernel (Debian 12's 6.1 under TCG)
    now and then stops transmitting altogether, one run in five to ten.
    Its eth0 still receives (the echo requests are counted) but sends
    nothing more, not even the echo replies; qemu's TX ring is idle (the
    monitor's virtio-queue-status: every descriptor the guest made
    available is used and signalled), so nothing reaches qemu; rxe then
    warns at the QP's destroy that its skbs were never freed
    (rxe_pool.c __rxe_cleanup).  No packet of ours can stop a kernel
    from answering ICMP, and a wedged guest leaves nothing to test: the
    caller boots again (docs/interop.md, "The rig")."""

    STALL_SECS = 20

    def __init__(self, vm):
        super().__init__(daemon=True)
        self.vm = vm
        self.stalled = False
        self.done = threading.Event()

    def run(self):
        last = None  # when the guest last answered
        while not self.done.wait(1):
            ok = subprocess.run(
                self.vm.in_ns("ping", "-c", "1", "-W", "1", GUEST_ADDR),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0
            now = time.monotonic()
            if self.vm.qemu.poll() is not None:
                return  # the guest's command is over: it powered off
            if ok:
                last = now
            elif last is not None and now - last > self.STALL_SECS:
                self.stalled = True
                self.vm.kill_all()
                return

    def stop(self):
        self.done.set()
        self.join()


def main(argv):
    # SIGTERM (timeout(1), a CI runner) unwinds like ^C: the namespace is
    # deleted and qemu killed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if len(argv) < 2 or argv[1] not in ("build", "run", "shell"):
        print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
        return 2
    try:
        if argv[1] == "build":
            kver, vmlinuz, image = build()
            print(f"interop: kernel {kver}: {vmlinuz}\n"
                  f"interop: initramfs {image} "
                  f"({os.path.getsize(image) // 1024} KiB)")
            return 0
        cmd = " ".join(argv[2:]) if argv[1] == "run" else None
        with VM(cmd) as vm:
            print(f"interop: kernel {vm.kver}, share {vm.share}, "
                  f"console log {vm.console}", file=sys.stderr)
            vm.start()
            status, out = vm.wait(timeout=600 if cmd else None)
        if cmd is None:
            return 0
        sys.stdout.write(out or "")
        if status is None:
            print("interop: the guest gave no status; console log:\n"
                  + vm.console_text(), file=sys.stderr)
            return 1
        return status
    except Skip as e:
        skip(str(e))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
