/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The paths' table, which the verbs layer hands to every engine it opens
 * (engine/path.h).  Order matters: the requester asks them in this order,
 * and a small SEND is the channel's before anything else is considered.
 */
#include "paths/paths.h"

const struct sv_path_table sv_paths = {
	.n = 2,
	.ops = { &sv_path_chan, &sv_path_direct },
	.eng_bytes = sizeof(struct sv_paths_eng),
	.qp_bytes = sizeof(struct sv_paths_qp),
};
