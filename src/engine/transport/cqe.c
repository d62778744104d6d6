/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Completion entries and receive WQEs: a send WQE completed in order, a
 * receive completion pushed to its CQ (an overrun fails every QP of that
 * CQ, IBA), and the receive WQE the responder fills taken from the RQ or
 * the SRQ.
 */
#include "core/async.h"
#include "core/cq.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/forward.h"
#include "util/lockorder.h"

/* ---- completions ---------------------------------------------------------------- */

/* A CQ overrun takes every QP using that CQ to ERR (IBA). */
static void cq_overrun(struct sv_engine *eng, struct sv_cq *cq)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&eng->qps, it, tmp) {
		struct sv_qp_engine *o =
			list_entry(it, struct sv_qp_engine, node);

		if (o->qp->scq == cq || o->qp->rcq == cq)
			sv_qp_to_error(o, IBV_EVENT_QP_FATAL);
	}
}

/* Complete the send WQE at comp.idx: its completion is read out of the
 * slot first, then the slot is given back (sq.head moves up to and
 * including it, retiring unsignaled WQEs before it), and only then is the
 * completion made visible, so that an application which polls it may post
 * into the slot at once (what perftest's bandwidth loops do). */
int sv_complete_send(struct sv_qp_engine *qe, enum ibv_wc_status status)
{
	struct sv_send_wqe *wqe = sv_wq_at(&qe->qp->sq, qe->comp.idx);
	struct ibv_wc wc;
	int err;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.status = status;
	wc.opcode = sv_wr(wqe->opcode)->wc;
	if (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wc.byte_len = 8;
	else
		wc.byte_len = (uint32_t)wqe->length;
	wc.qp_num = qe->qpn;
	wc.src_qp = qe->dest_qpn;
	wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : status;
	qe->comp.idx++;
	atomic_store_explicit(&qe->qp->sq.head, qe->comp.idx,
			      memory_order_release);
	err = sv_cq_push(qe->qp->scq, &wc, false);
	qe->eng->cqes++;
	if (err == ENOSPC)
		cq_overrun(qe->eng, qe->qp->scq);
	return err;
}

int sv_push_recv_cqe(struct sv_qp_engine *qe, const struct ibv_wc *wc,
		     bool solicited)
{
	int err;

	/* The WQE belongs to another process's SRQ: so does the CQ. */
	if (qe->qp->xrc_rwqe)
		return sv_xrcfwd_complete(qe, wc, solicited);
	err = sv_cq_push(qe->qp->rcq, wc, solicited);
	qe->eng->pass_answerable++;
	qe->eng->cqes++;
	if (err == ENOSPC)
		cq_overrun(qe->eng, qe->qp->rcq);
	return err;
}

/* ---- receive WQEs ----------------------------------------------------------------- */

/* Copy a WQE out of its ring (at most SV_MAX_SGE entries); its length. */
static uint64_t copy_recv_wqe(struct sv_recv_wqe *dst,
			      const struct sv_recv_wqe *w)
{
	uint32_t n = w->num_sge > SV_MAX_SGE ? SV_MAX_SGE : w->num_sge, i;
	uint64_t len = 0;

	dst->wr_id = w->wr_id;
	dst->num_sge = n;
	memcpy(dst->sge, w->sge, n * sizeof(struct ibv_sge));
	for (i = 0; i < n; i++)
		len += w->sge[i].length;
	return len;
}

bool sv_srq_pop(struct sv_srq *srq, struct sv_recv_wqe *dst, uint64_t *len)
{
	bool limit = false;
	uint32_t head;

	sv_mutex_lock(&srq->lock, SV_LOCK_SRQ);
	head = atomic_load(&srq->rq.head);
	if (head == atomic_load(&srq->rq.tail)) {
		sv_mutex_unlock(&srq->lock);
		return false;
	}
	*len = copy_recv_wqe(dst, sv_wq_at(&srq->rq, head));
	atomic_store(&srq->rq.head, head + 1);
	/* IBA: the limit event fires once when the
	 * WQE count drops below the armed limit, then disarms. */
	if (srq->srq_limit && sv_wq_used(&srq->rq) < srq->srq_limit) {
		srq->srq_limit = 0;
		limit = true;
	}
	sv_mutex_unlock(&srq->lock);
	if (limit) {
		struct ibv_async_event ev = {
			.element.srq = &srq->ibv,
			.event_type = IBV_EVENT_SRQ_LIMIT_REACHED,
		};

		sv_async_post(srq->ctx, &ev);
	}
	return true;
}

/* Take the next receive WQE (QP's RQ or its SRQ) into qe->resp.wqe. */
bool sv_rq_get(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	struct sv_srq *srq = qp->srq;
	uint32_t head;

	/* An SRQ of another process: xrc.c asked for its WQE before the
	 * request came here; none was posted (engine/forward/xrcfwd.h). */
	if (!srq && qp->xrc_rsrqn)
		return false;
	if (srq) {
		if (!sv_srq_pop(srq, qe->resp.wqe, &qe->resp.wqe_len))
			return false;
		qe->resp.offset = 0;
		qe->resp.have_wqe = true;
		qe->resp.wqe_srq = true;
		return true;
	}
	head = atomic_load_explicit(&qp->rq.head, memory_order_relaxed);
	if (head == atomic_load_explicit(&qp->rq.tail, memory_order_acquire))
		return false;
	qe->resp.wqe_len = copy_recv_wqe(qe->resp.wqe, sv_wq_at(&qp->rq, head));
	atomic_store_explicit(&qp->rq.head, head + 1, memory_order_release);
	qe->resp.offset = 0;
	qe->resp.have_wqe = true;
	qe->resp.wqe_srq = false;
	return true;
}
