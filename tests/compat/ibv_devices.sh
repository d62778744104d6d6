#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Debian's unmodified ibv_devices, through `softverbs run`.
. "$(dirname "$0")/lib.sh"

run_ok 30 "$SV" run -- ibv_devices
expect '^ +softverbs0[[:space:]]+[0-9a-f]{16}$' "device name and 16-digit node GUID"
# and without the "--"
run_ok 30 "$SV" run ibv_devices
expect '^ +softverbs0[[:space:]]'
finish
