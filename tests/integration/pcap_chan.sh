#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# SOFTVERBS_PCAP of message channel errors (issue #19): rc_chan's `errors`
# case (a SEND longer than the receive WQE, then one into a receive buffer
# whose lkey is bad: REM_INV_REQ_ERR and REM_OP_ERR on shm, where channels
# carry no packets) captured with SOFTVERBS_PCAP=$tmp/cap.%p.pcap.  The
# files must decode (pcap_check.py) and show the responder's NAKs as a HCA
# would send them: Invalid Request (AETH syndrome 0x61) and Remote
# Operational Error (0x63), as well as plain ACKs (0x1f).
set -u
bin=${SV_INTEG_BIN:-$PWD}
here=$(cd "$(dirname "$0")" && pwd)
command -v tshark >/dev/null || { echo "SKIP: tshark not installed"; exit 77; }
tmp=$(mktemp -d /tmp/sv-pcapc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

SOFTVERBS_PCAP=$tmp/cap.%p.pcap timeout -k 5 60 "$bin/rc_chan" errors >"$tmp/log" 2>&1
rc=$?
fail=0
[ $rc = 0 ] || { echo "FAIL: rc_chan errors exit status $rc"; tail -5 "$tmp/log"; fail=1; }
files=("$tmp"/cap.*.pcap)
[ -e "${files[0]}" ] || { echo "FAIL: no capture file"; exit 1; }
python3 "$here/pcap_check.py" --expect 0x04,0x11 "${files[@]}" || fail=1
syn=$(for f in "${files[@]}"; do tshark -r "$f" -T fields -e infiniband.aeth.syndrome 2>/dev/null; done | sort -u | tr '\n' ' ')
echo "AETH syndromes: $syn"
for s in 31 97 99; do
	grep -qw "$s" <<<"$syn" || { echo "FAIL: no AETH syndrome $s"; fail=1; }
done
[ $fail = 0 ] && echo "PASS: channel ACKs and NAKs captured"
exit $fail
