#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The Containerfile's steps (scripts/container.sh) in a Debian chroot, as
# an image build would run them (no image registry is reachable here):
# the build stage makes the package from this source tree, the second
# stage installs it, and the entrypoint runs Debian's ibv_devices on
# softverbs0 (root: through softverbs setup).  All inside a private mount
# namespace whose /dev is a tmpfs of its own; the package is removed from
# the chroot afterwards.  The chroot: SV_CHROOT (default SV_CHROOT_TRIXIE,
# then /work/chroots/trixie); 77 when there is none or not root.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
[ -z "${SV_SANITIZED:-}" ] || { echo "SKIP: a sanitizer build (its programs need the runtime preloaded, which only softverbs run does)"; exit 77; }
root=${SV_CHROOT:-${SV_CHROOT_TRIXIE:-/work/chroots/trixie}}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (chroot, mounts)"; exit 77; }
[ -x "$root/usr/bin/apt-get" ] || { echo "SKIP: no Debian chroot at $root (SV_CHROOT)"; exit 77; }
grep -q 'RUN /src/scripts/container.sh build /src /out' "$top/Containerfile" &&
	grep -q 'RUN /usr/local/lib/softverbs-container.sh install /tmp/softverbs' "$top/Containerfile" &&
	grep -q 'ENTRYPOINT \["/usr/local/lib/softverbs-container.sh", "entrypoint"\]' "$top/Containerfile" ||
	fail "the Containerfile's steps are not those this test runs"

cat >"$out.job" <<JOB
set -e
root=$root
mount --make-rprivate /
# The chroot's /dev: a tmpfs with null, zero, urandom (setup mounts there).
mount -t tmpfs test-dev "\$root/dev"
for n in null zero urandom; do touch "\$root/dev/\$n"; mount --bind /dev/\$n "\$root/dev/\$n"; done
mkdir -p "\$root/dev/shm" && mount -t tmpfs shm "\$root/dev/shm"
mkdir -p "\$root/src" && mount --bind "$top" "\$root/src"
mount -t tmpfs out "\$root/mnt"
mount -t tmpfs tmp "\$root/tmp"
echo "== build stage"
chroot "\$root" /src/scripts/container.sh build /src /mnt/out >/dev/null
echo "== install stage"
mkdir -p "\$root/tmp/softverbs" && cp "\$root"/mnt/out/*.deb "\$root/tmp/softverbs/"
cp "$top/scripts/container.sh" "\$root/usr/local/lib/softverbs-container.sh"
chroot "\$root" /usr/local/lib/softverbs-container.sh install /tmp/softverbs
echo "== entrypoint"
chroot "\$root" /usr/local/lib/softverbs-container.sh entrypoint sh -c 'ibv_devices; test -e /dev/infiniband && echo "setup made /dev/infiniband"; echo "LD_LIBRARY_PATH=\$LD_LIBRARY_PATH"'
JOB
rc=0
timeout -k 10 900 unshare -m bash "$out.job" >"$out" 2>"$err" || rc=$?
# The package leaves the shared chroot whatever happened.
chroot "$root" dpkg -r softverbs >/dev/null 2>&1 || true
rm -f "$root/usr/local/lib/softverbs-container.sh" "$out.job"
cat "$out"
[ $rc = 0 ] || { fail "the steps exited $rc"; sed 's/^/    stderr: /' "$err" | tail -20; }
expect '^softverbs [0-9.]+ \(commit ' "the installed softverbs --version"
expect '^ +softverbs0[[:space:]]' "the entrypoint runs ibv_devices on softverbs0"
expect '^setup made /dev/infiniband$' "as root the entrypoint set the files up"
expect '^LD_LIBRARY_PATH=/usr/lib/softverbs/lib' "with softverbs' libraries"
finish
