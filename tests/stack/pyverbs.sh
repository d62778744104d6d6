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

# rdma-core's own pyverbs tests, all of them: pyverbs_suite.sh.
finish
