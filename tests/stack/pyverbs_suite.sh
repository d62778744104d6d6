#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdma-core's whole pyverbs test suite, of the rdma-core this system has
# (python3-pyverbs ships it, partly gzipped, in
# /usr/share/doc/rdma-core/tests): rdma-core 44 on Debian 12; in the
# distro pass (scripts/distro.sh test), run inside the trixie and sid
# chroots by the tree built there, 56 and 65.  Through `softverbs run`,
# by Debian's /usr/bin/python3.  pyverbs_suite_check.py prints the
# counts, every skip reason, and fails on any failure or error that
# pyverbs_known.txt does not list as a test bug (with the text its
# traceback must contain).  Skips are tests for features softverbs0 does
# not report (vendor devices, raw packet QPs, CUDA, dmabuf, huge pages),
# which the suite's base classes skip on any device without them.
# About 45 s on rdma-core 44 and 56, 55 s on 65 (two cores); 240 s at most.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
docs=/usr/share/doc/rdma-core/tests
sv_need python3-pyverbs:/usr/lib/python3/dist-packages/pyverbs/__init__.py \
	python3:/usr/bin/python3
if [ ! -f "$docs/run_tests.py" ]; then
	echo "SKIP: rdma-core's tests are not installed ($docs/run_tests.py)"
	exit 77
fi
echo "rdma-core $(dpkg-query -W -f '${Version}' python3-pyverbs 2>/dev/null), $(/usr/bin/python3 --version)"
mkdir -p "$TMP/rt/tests"
cp -r "$docs/." "$TMP/rt/tests/"
gunzip -f "$TMP"/rt/tests/*.gz
rc=0
start=$SECONDS
(cd "$TMP/rt/tests" && timeout -k 5 240 "$SV" run -- /usr/bin/python3 -B \
	-W ignore run_tests.py -v) >"$TMP/rt.out" 2>&1 || rc=$?
echo "run_tests.py exited $rc after $((SECONDS - start)) s"
if ! /usr/bin/python3 "$here/pyverbs_suite_check.py" "$TMP/rt.out" \
	"$here/pyverbs_known.txt"; then
	sed -n '/^======/,$p' "$TMP/rt.out" >"$TMP/rt.tb"
	show "rdma-core's tests: the tracebacks (exit $rc)" "$TMP/rt.tb"
	fail "rdma-core's pyverbs suite has failures or errors"
fi
finish
