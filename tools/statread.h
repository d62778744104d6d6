/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The reader's side of the live counters (statread.c): a segment of
 * another process (engine/diag/statseg.h) checked and copied into a view of
 * our own, for `softverbs stats` (tools/stats.c).
 */
#ifndef SV_TOOLS_STATREAD_H
#define SV_TOOLS_STATREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/diag/statseg.h"

struct sv_statview_qp {
	unsigned int eng; /* index of its context in sv_statview.eng */
	uint32_t qpn;
	int type; /* enum ibv_qp_type */
	int state; /* enum ibv_qp_state, or -1: not one */
	int path; /* enum sv_statseg_path */
	uint32_t sq_outstanding, rq_outstanding;
	char why[64];
	struct sv_qp_stats ctr;
};

struct sv_statview_eng {
	unsigned int slot; /* its slot in the segment */
	uint32_t qps, others;
	struct sv_stats ctr;
	struct sv_qp_stats other; /* its QPs without a slot */
};

struct sv_statview {
	int pid;
	uint32_t uid;
	bool alive; /* the process that wrote it still runs */
	bool exited; /* it said it exited */
	uint64_t start_ns, updated_ns; /* CLOCK_REALTIME */
	char comm[32];
	char cmdline[160];
	unsigned int neng, nqp;
	struct sv_statview_eng eng[SV_STATSEG_ENGINES];
	struct sv_statview_qp qp[SV_STATSEG_QPS];
};

/* Check the len bytes of a segment at buf and copy it into v: 0, or -1
 * with a sentence in err saying what is wrong with it.  Nothing in buf is
 * trusted: sizes and counts must be ours, indexes in range, strings are
 * cut and made printable; counters may be torn (they are only shown). */
int sv_statread_parse(const void *buf, size_t len, struct sv_statview *v,
		      char *err, size_t errlen);
/* The same for the file name in directory dir (also fills v->alive). */
int sv_statread_file(int dir, const char *name, struct sv_statview *v,
		     char *err, size_t errlen);

#endif
