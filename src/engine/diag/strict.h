/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Strict mode (SOFTVERBS_STRICT=1, docs/strict.md): verbs misuse that an
 * HCA punishes only with corruption or a hang, reported where softverbs
 * sees it.  Each report is one line "softverbs strict: RULE: QP 0xQPN:
 * ..." naming the rule and the values (limited per QP as the warnings of
 * explain.h are), counted in strict_reports (SOFTVERBS_STATS=1).  Every
 * function here does nothing, and costs one load, without strict mode.
 */
#ifndef SV_ENGINE_STRICT_H
#define SV_ENGINE_STRICT_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "util/env.h"

struct sv_context;
struct sv_qp;
struct sv_mr;
struct sv_pd;
struct sv_send_wqe;

static inline bool sv_strict(void)
{
	return sv_env_strict();
}

/* One report about qp (its rate limit, its context's counter). */
void sv_strict_qp(struct sv_qp *qp, const char *rule, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One report about no QP (an address handle). */
void sv_strict_ctx(struct sv_context *ctx, const char *rule, const char *fmt,
		   ...) __attribute__((format(printf, 3, 4)));

/* mr is being deregistered: report each WR of its context's QPs that is
 * posted, not yet completed, and names mr's lkey in its SGEs. */
void sv_strict_dereg(struct sv_mr *mr);

/* Local SGEs of a WR that name a region without LOCAL_WRITE although the
 * operation writes them (a receive, a READ's or an atomic's result):
 * report each (verb: "ibv_post_recv", "ibv_post_send"). */
void sv_strict_sgl_access(struct sv_qp *qp, uint64_t wr_id, const char *what,
			  const struct ibv_sge *sge, int num_sge);

/* The same for a receive WR posted to an SRQ. */
void sv_strict_srq_access(struct sv_context *ctx, uint32_t srq_handle,
			  uint64_t wr_id, const struct ibv_sge *sge,
			  int num_sge);

/* A checksum of what w's gather list holds now, for w->strict_sum: the
 * data a send or WRITE carries must not change until it completes.
 * false when a region of the list cannot be read (the WQE fails later). */
bool sv_strict_sum(struct sv_qp *qp, const struct sv_send_wqe *w,
		   uint32_t *sum);

/* w completed successfully: report if its data changed since the post. */
void sv_strict_sum_check(struct sv_qp *qp, const struct sv_send_wqe *w);

#endif
