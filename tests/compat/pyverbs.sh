#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# pyverbs (Debian's python3-pyverbs, Debian's /usr/bin/python3) through
# `softverbs run`.
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

run_ok 60 "$SV" run -- /usr/bin/python3 -B "$here/pyverbs_objects.py"
cat "$out"
finish
