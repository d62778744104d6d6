/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Strict mode's reports (strict.h): the line, its counter, and the checks
 * that need the engine's view of the queues (a region deregistered under
 * a posted WR) or of registered memory (a send buffer changed while its
 * WR was outstanding).  The checks in the post and attribute verbs call
 * sv_strict_qp where they decide.
 */
#include "engine/diag/strict.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/mr.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "proto/wr.h"
#include "util/crc32.h"
#include "util/fault.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/qlock.h"

static void count(struct sv_context *ctx)
{
	/* From any thread, engine lock or not: the one counter written
	 * outside it. */
	if (ctx && ctx->engine)
		__atomic_fetch_add(&ctx->engine->stats->strict_reports, 1,
				   __ATOMIC_RELAXED);
}

void sv_strict_qp(struct sv_qp *qp, const char *rule, const char *fmt, ...)
{
	unsigned int qpn = qp->qpx.qp_base.qp_num;
	char msg[768];
	va_list ap;

	if (!sv_strict())
		return;
	count(qp->ctx);
	if (sv_log_level < SV_LOG_WARN || !sv_log_rated(&qp->lograte, qpn))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sv_log_tag("strict", "%s: QP 0x%06x: %s", rule, qpn, msg);
}

void sv_strict_ctx(struct sv_context *ctx, const char *rule, const char *fmt,
		   ...)
{
	static struct sv_lograte rate; /* lines about no QP */
	char msg[768];
	va_list ap;

	if (!sv_strict())
		return;
	count(ctx);
	if (sv_log_level < SV_LOG_WARN || !sv_log_rated(&rate, 0))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sv_log_tag("strict", "%s: %s", rule, msg);
}

static int sge_naming(const struct ibv_sge *sge, uint32_t n, uint32_t lkey)
{
	for (uint32_t i = 0; i < n; i++)
		if (sge[i].lkey == lkey && sge[i].length)
			return (int)i;
	return -1;
}

static void dereg_sq(struct sv_qp *qp, const struct sv_mr *mr)
{
	struct sv_wq *sq = &qp->sq;
	uint32_t tail = atomic_load_explicit(&sq->tail, memory_order_acquire);

	for (uint32_t i = atomic_load(&sq->head); i != tail; i++) {
		const struct sv_send_wqe *w = sv_wq_at(sq, i);
		int s;

		/* Completed (an unsignaled WQE keeps its slot), or its data
		 * was copied at the post. */
		if (w->state == SV_WQE_DONE || w->state == SV_WQE_ERROR ||
		    sv_wr_is(w->opcode, SV_WR_LOCAL) ||
		    (w->send_flags & IBV_SEND_INLINE))
			continue;
		s = sge_naming(w->sge, w->num_sge, mr->ibv.lkey);
		if (s >= 0)
			sv_strict_qp(
				qp, "dereg-outstanding",
				"ibv_dereg_mr of lkey 0x%x while send wr_id %#" PRIx64
				" (IBV_WR_%s, sg_list[%d]) is outstanding: an HCA goes on reading the memory or fails the WR with a protection error; deregister after its completion",
				mr->ibv.lkey, w->wr_id, sv_wr(w->opcode)->name,
				s);
	}
}

static void dereg_rq(struct sv_qp *qp, const struct sv_mr *mr)
{
	struct sv_wq *rq = &qp->rq;
	uint32_t tail = atomic_load_explicit(&rq->tail, memory_order_acquire);

	if (qp->srq || !rq->buf)
		return;
	for (uint32_t i = atomic_load(&rq->head); i != tail; i++) {
		const struct sv_recv_wqe *w = sv_wq_at(rq, i);
		int s = sge_naming(w->sge, w->num_sge, mr->ibv.lkey);

		if (s >= 0)
			sv_strict_qp(
				qp, "dereg-outstanding",
				"ibv_dereg_mr of lkey 0x%x while receive wr_id %#" PRIx64
				" (sg_list[%d]) is posted: an HCA writes the next message into the memory or fails it with a protection error; deregister after its completion (or after moving the QP to ERR and polling the flush)",
				mr->ibv.lkey, w->wr_id, s);
	}
}

void sv_strict_dereg(struct sv_mr *mr)
{
	struct sv_context *ctx;
	struct sv_engine *eng;
	struct list_node *it, *tmp;

	if (!sv_strict() || !mr->ibv.context)
		return;
	ctx = to_sv_ctx(mr->ibv.context);
	eng = ctx->engine;
	if (!eng)
		return;
	/* Under the engine lock no WQE completes, so a slot between head
	 * and tail keeps its WR while we read it; under the queues' locks
	 * no poster (nor a message channel's lean post) writes one. */
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	list_for_each_safe (&eng->qps, it, tmp) {
		struct sv_qp *qp =
			list_entry(it, struct sv_qp_engine, node)->qp;

		sv_qlock_lock(&qp->sq_lock, SV_LOCK_SQ);
		dereg_sq(qp, mr);
		sv_qlock_unlock(&qp->sq_lock);
		sv_qlock_lock(&qp->rq_lock, SV_LOCK_RQ);
		dereg_rq(qp, mr);
		sv_qlock_unlock(&qp->rq_lock);
	}
	sv_mutex_unlock(&eng->lock);
}

/* The first SGE (-1: none) that names a region without LOCAL_WRITE. */
static int sge_without_write(const struct ibv_sge *sge, int num_sge)
{
	for (int i = 0; i < num_sge; i++) {
		struct sv_mr *mr;
		bool w;

		if (!sge[i].length)
			continue;
		mr = sv_mr_get_by_lkey(sge[i].lkey);
		if (!mr)
			continue; /* no region: the WR's completion says so */
		w = mr->access & IBV_ACCESS_LOCAL_WRITE;
		sv_mr_put(mr);
		if (!w)
			return i;
	}
	return -1;
}

#define NO_WRITE_WHY                                                   \
	"a region registered without IBV_ACCESS_LOCAL_WRITE: the HCA " \
	"fails it with IBV_WC_LOC_PROT_ERR when the data comes; "      \
	"register it with LOCAL_WRITE"

void sv_strict_sgl_access(struct sv_qp *qp, uint64_t wr_id, const char *what,
			  const struct ibv_sge *sge, int num_sge)
{
	int i = sge_without_write(sge, num_sge);

	if (i >= 0)
		sv_strict_qp(qp, "access-flags",
			     "wr_id %#" PRIx64
			     " %s into sg_list[%d] lkey 0x%x, " NO_WRITE_WHY,
			     wr_id, what, i, sge[i].lkey);
}

void sv_strict_srq_access(struct sv_context *ctx, uint32_t srq_handle,
			  uint64_t wr_id, const struct ibv_sge *sge,
			  int num_sge)
{
	int i = sge_without_write(sge, num_sge);

	if (i >= 0)
		sv_strict_ctx(
			ctx, "access-flags",
			"SRQ handle %u: wr_id %#" PRIx64
			" receives into sg_list[%d] lkey 0x%x, " NO_WRITE_WHY,
			srq_handle, wr_id, i, sge[i].lkey);
}

bool sv_strict_sum(struct sv_qp *qp, const struct sv_send_wqe *w, uint32_t *sum)
{
	uint32_t crc = 0;

	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		struct sv_mr *mr;
		const uint8_t *p;
		uint8_t buf[4096];
		bool ok = true;

		if (!s->length)
			continue;
		mr = sv_mr_get_by_lkey(s->lkey);
		if (!mr)
			return false;
		p = sv_mr_check(mr, qp->pd, s->addr, s->length, 0);
		/* Through the fault guard: the memory may be gone by now. */
		for (uint32_t off = 0; p && ok && off < s->length;) {
			uint32_t n = s->length - off < sizeof(buf) ?
					     s->length - off :
					     (uint32_t)sizeof(buf);

			ok = !sv_fault_copy(buf, p + off, n);
			crc = sv_crc32(crc, buf, n);
			off += n;
		}
		sv_mr_put(mr);
		if (!p || !ok)
			return false;
	}
	*sum = crc;
	return true;
}

void sv_strict_sum_check(struct sv_qp *qp, const struct sv_send_wqe *w)
{
	uint32_t now;

	if (!w->strict_summed || !sv_strict_sum(qp, w, &now) ||
	    now == w->strict_sum)
		return;
	sv_strict_qp(
		qp, "buffer-reused",
		"wr_id %#" PRIx64 " IBV_WR_%s: its %" PRIu64
		" bytes of data changed between ibv_post_send and its completion (checksum %08x at the post, %08x now): the buffer was written while the WR was outstanding, so what an HCA sends (and resends) is undefined; reuse it after the completion",
		w->wr_id, sv_wr(w->opcode)->name, w->length, w->strict_sum,
		now);
}
