#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# pyverbs (Debian's python3-pyverbs, run by Debian's /usr/bin/python3: the
# python3 first on PATH may be another one, without pyverbs) through
# `softverbs run`: every provider module imports with every symbol bound
# at load (LD_BIND_NOW=1), then pyverbs' Context, PD and MR on softverbs0
# and their import into a second context through cmd_fd, an IBA 1.5
# ATOMIC WRITE through QPEx, device memory (DM, DMMR) and a ParentDomain
# whose Python allocators give a CQ its ring (pyverbs_stack.py prints one
# line per check).
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sv_need python3-pyverbs:/usr/lib/python3/dist-packages/pyverbs/__init__.py \
	python3:/usr/bin/python3
rc=0
LD_BIND_NOW=1 timeout -k 5 60 "$SV" run -- /usr/bin/python3 -B \
	"$here/pyverbs_stack.py" >"$TMP/out" 2>&1 || rc=$?
show "pyverbs_stack.py (exit $rc)" "$TMP/out"
[ $rc = 0 ] || fail "pyverbs_stack.py exited $rc"
grep -q '^FAIL' "$TMP/out" && fail "pyverbs_stack.py reported failures"
grep -Eq '^ok +import pyverbs\.providers\.mlx5\.mlx5dv$' "$TMP/out" ||
	fail "mlx5dv was not imported"
grep -Eq '^ok +import pyverbs\.providers\.efa\.efadv$' "$TMP/out" ||
	fail "efadv was not imported"
grep -q '^ok   MR write/read' "$TMP/out" || fail "no MR round trip"
grep -q '^ok   imported MR' "$TMP/out" || fail "no import of PD and MR"
grep -q '^ok   ATOMIC WRITE placed 8 bytes' "$TMP/out" ||
	fail "no ATOMIC WRITE through QPEx"
grep -q '^ok   DM copy_to_dm/copy_from_dm' "$TMP/out" ||
	fail "no device memory round trip"
grep -q '^ok   ParentDomain: the ring given back' "$TMP/out" ||
	fail "no parent domain allocator round trip"

# rdma-core's own pyverbs tests of these features (python3-pyverbs ships
# them, compressed, in /usr/share/doc/rdma-core/tests): every parent
# domain test, the DM tests, the import of a PD, MR and DM into a second
# context (test_shared_pd, SharedDMTest), on-demand paging (test_odp:
# explicit, implicit, prefetch, RC/UD/XRC/SRQ), and the ATOMIC WRITE test.
if [ -f /usr/share/doc/rdma-core/tests/run_tests.py ]; then
	mkdir -p "$TMP/rt/tests"
	cp -r /usr/share/doc/rdma-core/tests/. "$TMP/rt/tests/"
	gunzip -f "$TMP"/rt/tests/*.gz
	rc=0
	(cd "$TMP/rt/tests" && timeout -k 5 120 "$SV" run -- /usr/bin/python3 -B \
		-W ignore run_tests.py -v test_parent_domain test_device.DMTest \
		test_device.SharedDMTest test_shared_pd test_odp \
		test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write) \
		>"$TMP/rt.out" 2>&1 || rc=$?
	show "rdma-core's tests (exit $rc)" "$TMP/rt.out"
	[ $rc = 0 ] || fail "rdma-core's parent domain, DM, import, ODP or ATOMIC WRITE tests failed"
	grep -Eq '^Ran (1[0-9]|[2-9][0-9]) tests' "$TMP/rt.out" ||
		fail "rdma-core's tests did not run"
else
	echo "rdma-core's tests are not installed: skipped"
fi
finish
