#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The softverbs command itself: usage errors, `run` (with and without --,
# environment, exit status, lookup of its own lib/ through a symlink) and
# `devices`.
. "$(dirname "$0")/lib.sh"

libdir=$(cd "$(dirname "$(readlink -f "$SV")")/../lib" && pwd)

status_is() { # status_is WANT CMD...
	local want=$1 rc=0
	shift
	timeout 30 "$@" >"$out" 2>"$err" || rc=$?
	[ $rc -eq "$want" ] || fail "'$*' exited $rc, expected $want"
}

status_is 0 "$SV" help
expect '^usage: softverbs'
status_is 0 "$SV" --help
status_is 2 "$SV"
grep -q '^usage:' "$err" || fail "no usage on stderr without arguments"
status_is 2 "$SV" frobnicate
grep -q "unknown command 'frobnicate'" "$err" || fail "no reason for an unknown command"
grep -q "'softverbs help' explains each command" "$err" || fail "no pointer to the help"
[ "$(wc -l <"$err")" -le 6 ] || fail "a usage error prints $(wc -l <"$err") lines, not a few"
status_is 2 "$SV" run
status_is 2 "$SV" run --
status_is 2 "$SV" devices extra
status_is 127 "$SV" run -- /nonexistent/program
status_is 3 "$SV" run -- sh -c 'exit 3'

# The version, its commit and the ABI, as `softverbs --version` and
# `softverbs version`; the library versions named are the files' own.
run_ok 30 "$SV" --version
expect '^softverbs [0-9]+\.[0-9]+\.[0-9]+ \(commit [^ )]+\)$'
ibv_file=$(basename "$(readlink -f "$libdir/libibverbs.so.1")")
cm_file=$(basename "$(readlink -f "$libdir/librdmacm.so.1")")
expect "^implements the rdma-core ABI of releases 39 to 65, built as rdma-core 44: libibverbs\.so\.1 \(${ibv_file#libibverbs.so.}\), librdmacm\.so\.1 \(${cm_file#librdmacm.so.}\)\$"
[ "$ibv_file" = libibverbs.so.1.14.44.0 ] || fail "libibverbs file is $ibv_file"
run_ok 30 "$SV" version
expect '^softverbs [0-9]+\.[0-9]+\.[0-9]+ \(commit '
status_is 2 "$SV" version extra
grep -q 'unexpected argument extra' "$err" || fail "no reason for the usage error"

# Our lib/ first, the user's entries kept after it; only for the child.
run_ok 30 env LD_LIBRARY_PATH=/opt/a:/opt/b "$SV" run -- sh -c 'echo "$LD_LIBRARY_PATH"'
expect "^$libdir:/opt/a:/opt/b\$"
run_ok 30 env -u LD_LIBRARY_PATH "$SV" run sh -c 'echo "[$LD_LIBRARY_PATH]"'
expect "^\[$libdir\]\$"
run_ok 30 env LD_LIBRARY_PATH= "$SV" run sh -c 'echo "[$LD_LIBRARY_PATH]"'
expect "^\[$libdir\]\$" "an empty LD_LIBRARY_PATH adds no empty element"

# Through a symlink in another directory, as after `ln -s PREFIX/bin/softverbs /usr/local/bin`.
tmpd=$(mktemp -d)
ln -s "$SV" "$tmpd/softverbs"
run_ok 30 "$tmpd/softverbs" run -- sh -c 'echo "$LD_LIBRARY_PATH"'
expect "^$libdir\$"
rm -rf "$tmpd"

# Middleware defaults (tools/middleware.c): set where unset, for every
# command; a value of the user's kept; one line on stderr only for an MPI
# launcher or a UCX tool, naming what was set.  Only where run's view
# holds /dev/infiniband/uverbs_sv0, which UCX opens: without it (here
# --no-sysfs on a host without `softverbs setup`) they stay unset and the
# line says why.
mw=(UCX_TLS UCX_NET_DEVICES OMPI_MCA_pml OMPI_MCA_osc)
unset_mw=()
for v in "${mw[@]}" OMPI_MCA_btl; do unset_mw+=(-u "$v"); done
show_mw='for v in UCX_TLS UCX_NET_DEVICES OMPI_MCA_pml OMPI_MCA_osc OMPI_MCA_btl; do eval "echo $v=[\${$v-unset}]"; done'
tmpd=$(mktemp -d)
printf '#!/bin/sh\necho "$UCX_TLS $OMPI_MCA_osc"\n' >"$tmpd/mpirun.openmpi"
cp "$tmpd/mpirun.openmpi" "$tmpd/ucx_perftest"
chmod +x "$tmpd/mpirun.openmpi" "$tmpd/ucx_perftest"
# A UCX without its verbs transports (Debian sid's: no libuct_ib) cannot
# use softverbs0 at all: nothing is set, and the line says so.
ucx_lacks_verbs() {
	compgen -G '/usr/lib/*/ucx/libuct_*.so*' >/dev/null &&
		! compgen -G '/usr/lib/*/ucx/libuct_ib.so*' >/dev/null
}
has_view=0
"$SV" run -- test -c /dev/infiniband/uverbs_sv0 2>/dev/null && has_view=1
if [ $has_view = 1 ] && ucx_lacks_verbs; then
	run_ok 30 env "${unset_mw[@]}" "$SV" run -- sh -c "$show_mw"
	for v in "${mw[@]}"; do
		expect "^$v=\\[unset\\]\$" "UCX has no verbs: $v left unset"
	done
	status_is 0 env "${unset_mw[@]}" "$SV" run -- "$tmpd/mpirun.openmpi"
	expect '^ $' "nothing set for mpirun"
	grep -qx "softverbs: this system's UCX has no verbs transports (no libuct_ib): UCX_TLS, UCX_NET_DEVICES, OMPI_MCA_pml and OMPI_MCA_osc left as they are; Open MPI reaches softverbs0 through libfabric with OMPI_MCA_pml=cm OMPI_MCA_mtl=ofi OMPI_MCA_osc=^ucx" "$err" ||
		{ fail "no line saying UCX has no verbs transports:"; cat "$err"; }
elif [ $has_view = 1 ]; then
	run_ok 30 env "${unset_mw[@]}" "$SV" run -- sh -c "$show_mw"
	expect '^UCX_TLS=\[rc_verbs,ud_verbs:aux,self\]$'
	expect '^UCX_NET_DEVICES=\[softverbs0:1\]$'
	expect '^OMPI_MCA_pml=\[ucx\]$'
	expect '^OMPI_MCA_osc=\[ucx\]$'
	expect '^OMPI_MCA_btl=\[unset\]$' "btl left to Open MPI"
	[ ! -s "$err" ] || { fail "a line on stderr for sh:"; cat "$err"; }
	run_ok 30 env "${unset_mw[@]}" UCX_TLS=tcp OMPI_MCA_pml=ob1 "$SV" run -- sh -c "$show_mw"
	expect '^UCX_TLS=\[tcp\]$' "the user's UCX_TLS kept"
	expect '^OMPI_MCA_pml=\[ob1\]$' "the user's OMPI_MCA_pml kept"
	expect '^UCX_NET_DEVICES=\[softverbs0:1\]$'
	status_is 0 env "${unset_mw[@]}" "$SV" run -- "$tmpd/mpirun.openmpi"
	expect '^rc_verbs,ud_verbs:aux,self ucx$'
	grep -qx "softverbs: set UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=softverbs0:1 OMPI_MCA_pml=ucx OMPI_MCA_osc=ucx (middleware over softverbs0; set any of them to override)" "$err" ||
		{ fail "no line naming the variables for mpirun:"; cat "$err"; }
	status_is 0 env "${unset_mw[@]}" UCX_TLS=ud_verbs "$SV" run -- "$tmpd/ucx_perftest"
	grep -qx "softverbs: set UCX_NET_DEVICES=softverbs0:1 (middleware over softverbs0; set any of them to override)" "$err" ||
		{ fail "not just UCX_NET_DEVICES named for a UCX tool:"; cat "$err"; }
	run_ok 30 env "${unset_mw[@]}" UCX_TLS=ud_verbs UCX_NET_DEVICES=x OMPI_MCA_pml=ob1 OMPI_MCA_osc=rdma "$SV" run -- "$tmpd/mpirun.openmpi"
	[ ! -s "$err" ] || { fail "a line although the user set every variable:"; cat "$err"; }
else
	echo "run's view has no /dev/infiniband/uverbs_sv0 here: the variables are not set"
fi
if [ ! -e /dev/infiniband/uverbs_sv0 ]; then
	status_is 0 env "${unset_mw[@]}" "$SV" run --no-sysfs -- "$tmpd/mpirun.openmpi"
	expect '^ $' "nothing set without /dev/infiniband/uverbs_sv0"
	grep -qx "softverbs: no /dev/infiniband/uverbs_sv0: UCX will not use softverbs0; UCX_TLS, UCX_NET_DEVICES, OMPI_MCA_pml and OMPI_MCA_osc left as they are" "$err" ||
		{ fail "no line saying why nothing was set:"; cat "$err"; }
fi
rm -rf "$tmpd"

run_ok 30 "$SV" devices
expect '^softverbs0: node_guid [0-9a-f]{4}(:[0-9a-f]{4}){3}, '
expect '^  port 1: PORT_ACTIVE, active_mtu (256|512|1024|2048|4096) \(max 4096\), link_layer Ethernet'
expect '^    GID\[ *[0-9]+\]  ::ffff:127\.0\.0\.1 +RoCE v2 +lo$' "loopback GID with its type and netdev"
expect '^fast path: (available|unavailable \()' "fast path line"
# Trust stops at the user (docs/security.md): said whenever it is on.
if grep -q '^fast path: available' "$out"; then
	expect "^fast path: available: .*registry /dev/shm/softverbs\.$(id -u)[,)]" "the user's own registry"
	expect "^fast path: peers of the same user only \(uid $(id -u)\); QPs to another user's use UDP\$" "no fast path between users"
fi
run_ok 30 env SOFTVERBS_FASTPATH=0 "$SV" devices
expect '^fast path: unavailable \(disabled by SOFTVERBS_FASTPATH=0\)'

# The command uses our libibverbs even when the user points elsewhere.
run_ok 30 env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu "$SV" devices
expect '^softverbs0: '
finish
