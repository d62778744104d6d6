#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Run the command blocks of docs/guide.md, in order, as a user would.

    guide.py GUIDE SOURCE_DIR BUILD_DIR

Each fenced block of the guide is preceded by a comment that says what to
do with it (an unannotated block is an error, so the guide cannot gain a
command this test does not run or explicitly leave out):

    <!-- guide: run [cwd=source] [host=a|b] [background] [status=nonzero]
                    [tty] [requires=GLOB] [view] [expect="REGEX"]... -->
                                              run it with bash; it must exit 0
                                              (or not, with status=nonzero)
                                              and print every REGEX; with tty
                                              its input is a terminal, as
                                              where a user types it; with
                                              requires, skipped (visibly)
                                              where no file matches GLOB;
                                              with view, where softverbs
                                              run makes no /dev/infiniband
                                              (a user in a chroot)
    <!-- guide: define -->                    shell definitions prepended to
                                              every later block
    <!-- guide: file NAME -->                 write the block to NAME
    <!-- guide: not run: REASON -->           left out, REASON printed

Blocks run in a scratch directory that is also $HOME, with the softverbs
command and libraries of BUILD_DIR first on PATH until the guide installs
its own (make runs against BUILD_DIR: MAKEFLAGS carries BUILD=).  host=a and
host=b blocks run in two network namespaces joined by a veth pair, with the
addresses 10.0.0.1 and 10.0.0.2 the guide uses; where namespaces cannot be
made (not root) they are skipped, visibly.  A background block runs until
the next foreground block has ended, then must have exited too; in a
namespace, the next block starts once the background one listens on a new
TCP port there (a server is ready), or after 20 s."""

import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT = 60
INSTALL_TIMEOUT = 600
NETNS = {"a": ("svguide-%d-a" % os.getpid(), "10.0.0.1/24"),
         "b": ("svguide-%d-b" % os.getpid(), "10.0.0.2/24")}


def parse(path):
    """The guide's blocks: (line, directive, language, text)."""
    blocks, directive, lines = [], None, open(path).read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^<!-- guide: (.*) -->$", lines[i])
        if m:
            directive = m.group(1)
        elif lines[i].startswith("```"):
            lang, start, body = lines[i][3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if directive is None:
                sys.exit("%s:%d: a block without a '<!-- guide: ... -->' "
                         "line before it" % (path, start))
            blocks.append((start, directive, lang, "\n".join(body) + "\n"))
            directive = None
        i += 1
    return blocks


def options(directive):
    """run's options: {'cwd':..., 'host':..., 'expect': [...], ...}."""
    opts = {"expect": []}
    for word in shlex.split(directive)[1:]:
        key, _, val = word.partition("=")
        if key == "expect":
            opts["expect"].append(val)
        else:
            opts[key] = val or True
    return opts


class Runner:
    def __init__(self, source, build, home):
        self.source, self.home, self.defines = source, home, ""
        self.fails, self.skips, self.ran = 0, 0, 0
        self.background = []
        self.netns_ok = None
        self.env = dict(os.environ, HOME=home,
                        PATH=os.path.join(build, "bin") + ":" +
                        os.environ.get("PATH", ""),
                        MAKEFLAGS="BUILD=" + build)
        # Diagnostics of the library must not depend on the caller's.
        for var in ("SOFTVERBS_LOG", "VERBS_LOG_LEVEL", "VERBS_LOG_FILE",
                    "SOFTVERBS_FASTPATH", "SOFTVERBS_STATS"):
            self.env.pop(var, None)

    def fail(self, where, why, output=""):
        print("FAIL: %s: %s" % (where, why))
        for line in output.splitlines()[-40:]:
            print("    | " + line)
        self.fails += 1

    def netns(self):
        if self.netns_ok is None:
            self.netns_ok = os.geteuid() == 0 and shutil.which("ip")
            if self.netns_ok:
                cmds = []
                for ns, _ in NETNS.values():
                    cmds.append(["ip", "netns", "add", ns])
                (a, aa), (b, ba) = NETNS["a"], NETNS["b"]
                cmds.append(["ip", "link", "add", "sv0", "netns", a, "type",
                             "veth", "peer", "name", "sv0", "netns", b])
                for ns, addr in NETNS.values():
                    cmds += [["ip", "-n", ns, "addr", "add", addr, "dev",
                              "sv0"],
                             ["ip", "-n", ns, "link", "set", "lo", "up"],
                             ["ip", "-n", ns, "link", "set", "sv0", "up"]]
                for c in cmds:
                    if subprocess.run(c).returncode:
                        self.netns_ok = False
                        break
        return self.netns_ok

    def cleanup(self):
        for proc, _, _, _ in self.background:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.netns_ok is not None:
            for ns, _ in NETNS.values():
                subprocess.run(["ip", "netns", "del", ns],
                               stderr=subprocess.DEVNULL)

    def listeners(self, host):
        """The TCP ports listened on in a host's namespace."""
        if host is None:
            return set()
        out = subprocess.run(["ip", "netns", "exec", NETNS[host][0], "ss",
                              "-Hltn"], capture_output=True, text=True).stdout
        return {line.split()[3] for line in out.splitlines() if line.split()}

    def start(self, where, text, opts):
        cmd = ["bash", "-c", self.defines + text]
        if "host" in opts:
            cmd = ["ip", "netns", "exec", NETNS[opts["host"]][0]] + cmd
        cwd = self.source if opts.get("cwd") == "source" else self.home
        # A pseudo-terminal for tty blocks (its other end stays open until
        # the block ends: a closed one would read as end of input).
        stdin, opts["pty"] = None, None
        if opts.get("tty"):
            opts["pty"], stdin = os.openpty()
        try:
            return subprocess.Popen(cmd, cwd=cwd, env=self.env, stdin=stdin,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)
        finally:
            if opts["pty"] is not None:
                os.close(stdin)

    def finish(self, proc, where, opts, secs):
        try:
            out, _ = proc.communicate(timeout=secs)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            self.fail(where, "did not end within %d s" % secs, out)
            return
        finally:
            if opts.get("pty") is not None:
                os.close(opts["pty"])
                opts["pty"] = None
        try:  # whatever the block left behind
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        want_fail = opts.get("status") == "nonzero"
        if (proc.returncode != 0) != want_fail:
            self.fail(where, "exited %d%s" % (proc.returncode,
                      " (expected a failure)" if want_fail else ""), out)
            return
        for regex in opts["expect"]:
            if not re.search(regex, out, re.M):
                self.fail(where, "no output matching /%s/" % regex, out)
                return
        print("ok: %s" % where)

    def block(self, line, directive, lang, text):
        where = "guide.md:%d" % line
        kind = directive.split()[0]
        if kind == "define":
            self.defines += text
        elif kind == "file":
            name = directive.split()[1]
            with open(os.path.join(self.home, name), "w") as f:
                f.write(text)
        elif directive.startswith("not run:"):
            print("not run: %s: %s" % (where, directive[len("not run:"):]
                                       .strip()))
        elif kind == "run":
            opts = options(directive)
            if "requires" in opts and not glob.glob(opts["requires"]):
                print("SKIP: %s: needs %s" % (where, opts["requires"]))
                self.skips += 1
                return
            if "view" in opts and subprocess.run(
                    ["softverbs", "run", "--", "test", "-c",
                     "/dev/infiniband/uverbs_sv0"], env=self.env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL).returncode:
                print("SKIP: %s: needs the /dev/infiniband softverbs run "
                      "makes, which it cannot here (as a user without a "
                      "user namespace: a chroot)" % where)
                self.skips += 1
                return
            if "host" in opts and not self.netns():
                print("SKIP: %s: needs root and ip netns (two hosts)" % where)
                self.skips += 1
                return
            secs = INSTALL_TIMEOUT if opts.get("cwd") == "source" else TIMEOUT
            self.ran += 1
            before = self.listeners(opts.get("host"))
            proc = self.start(where, text, opts)
            if opts.get("background"):
                self.background.append((proc, where, opts, secs))
                deadline = time.monotonic() + 20
                while (self.listeners(opts.get("host")) <= before and
                       proc.poll() is None and time.monotonic() < deadline):
                    time.sleep(0.1)
                return
            self.finish(proc, where, opts, secs)
            for bg in self.background:
                self.finish(*bg)
            self.background = []
        else:
            sys.exit("%s: unknown directive '%s'" % (where, directive))


def main():
    guide, source, build = (os.path.abspath(a) for a in sys.argv[1:4])
    home = tempfile.mkdtemp(prefix="softverbs-guide.")
    runner = Runner(source, build, home)
    try:
        for b in parse(guide):
            runner.block(*b)
        for bg in runner.background:
            runner.finish(*bg)
    finally:
        runner.cleanup()
        shutil.rmtree(home, ignore_errors=True)
    print("guide: %d blocks run, %d failed, %d skipped" %
          (runner.ran, runner.fails, runner.skips))
    return 1 if runner.fails else 0


if __name__ == "__main__":
    sys.exit(main())
