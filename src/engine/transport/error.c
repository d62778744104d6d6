/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The one error path of a QP: move it to ERR, raise the async event,
 * flush every outstanding WQE with IBV_WC_WR_FLUSH_ERR (the failing one
 * with its own status), and keep qp->attr.qp_state in step; and the other
 * state the engine changes by itself, COMM_EST.
 */
#include "core/async.h"
#include "engine/transport/eng.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/resp.h"
#include "engine/transport/stats.h"
#include "engine/transport/xmit.h"
#include "util/lockorder.h"

/* ---- errors and flushes -------------------------------------------------------------- */

void sv_qp_sync_state(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;

	if (!qe->state_dirty)
		return;
	/* modify_qp holds state_lock while it waits for the engine lock:
	 * only try it, and come back later if it is busy. */
	if (sv_mutex_trylock(&qp->state_lock, SV_LOCK_QP_STATE)) {
		sv_qp_timer_arm(qe, sv_eng_now(qe->eng) + 1000000);
		return;
	}
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		qp->attr.qp_state = IBV_QPS_ERR;
	qe->state_dirty = false;
	sv_mutex_unlock(&qp->state_lock);
}

/* The first request of an RTR QP arrived (IBA 11.6.3: COMM_EST); the
 * paths learn it too (peers may now copy into the QP directly). */
void sv_qp_comm_est(struct sv_qp_engine *qe)
{
	struct ibv_async_event ev = {
		.element.qp = &qe->qp->qpx.qp_base,
		.event_type = IBV_EVENT_COMM_EST,
	};

	qe->comm_est = true;
	sv_paths_qp_state(qe);
	sv_async_post(qe->qp->ctx, &ev);
}

void sv_qp_to_error(struct sv_qp_engine *qe, int event)
{
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return;
	/* Packets queued before the error (a NAK above all) leave before
	 * its completions can be seen: a program that exits on its error
	 * completion must not take the peer's NAK with it. */
	sv_tx_flush(qe->eng);
	sv_paths_quiesce(qe); /* the engine's cursors from here */
	atomic_store(&qe->state, IBV_QPS_ERR);
	sv_paths_qp_state(qe);
	if (event >= 0) {
		struct ibv_async_event ev = {
			.element.qp = &qe->qp->qpx.qp_base,
			.event_type = (enum ibv_event_type)event,
		};

		/* Only errors the engine finds itself: a modify_qp to ERR
		 * passes -1 and updates the state under its own lock. */
		SV_STAT(qe->eng, qp_errors);
		qe->state_dirty = true;
		sv_qp_sync_state(qe);
		sv_async_post(qe->qp->ctx, &ev);
	} else if (event == SV_ERR_NO_EVENT) {
		SV_STAT(qe->eng, qp_errors);
		qe->state_dirty = true;
		sv_qp_sync_state(qe);
	}
	qe->comp.deadline = 0;
	qe->comp.probe = 0;
	qe->comp.rnr_until = 0;
	sv_work_add(qe, SV_WORK_FLUSH);
}

void sv_qp_flush(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = sv_sq_tail(qe);
	struct ibv_wc wc;

	/* Send queue: the failed WQE with its status, every other
	 * outstanding one with FLUSH_ERR, signaled or not (IBA). */
	while (qe->comp.idx != tail) {
		struct sv_send_wqe *w = sv_wq_at(&qp->sq, qe->comp.idx);

		sv_complete_send(qe, w->state == SV_WQE_ERROR ?
					     (enum ibv_wc_status)w->status :
					     IBV_WC_WR_FLUSH_ERR);
	}
	qe->req.idx = tail;
	qe->req.rd_atomic = 0;
	qe->req.rd_reqs = 0;
	qe->req.rd_n = 0;

	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qe->qpn;
	wc.vendor_err = IBV_WC_WR_FLUSH_ERR;
	if (qe->resp.have_wqe) {
		wc.wr_id = qe->resp.wqe->wr_id;
		sv_push_recv_cqe(qe, &wc, false);
		qe->resp.have_wqe = false;
	}
	if (!qp->srq) {
		uint32_t h = atomic_load(&qp->rq.head);
		uint32_t t = atomic_load_explicit(&qp->rq.tail,
						  memory_order_acquire);

		for (; h != t; h++) {
			struct sv_recv_wqe *r = sv_wq_at(&qp->rq, h);

			wc.wr_id = r->wr_id;
			sv_push_recv_cqe(qe, &wc, false);
		}
		atomic_store_explicit(&qp->rq.head, t, memory_order_release);
	} else if (!qe->last_wqe_sent) {
		/* IBA: a QP on an SRQ tells when its last WQE is
		 * done, so the consumer knows it may destroy it. */
		struct ibv_async_event ev = {
			.element.qp = &qp->qpx.qp_base,
			.event_type = IBV_EVENT_QP_LAST_WQE_REACHED,
		};

		qe->last_wqe_sent = true;
		sv_async_post(qp->ctx, &ev);
	}
	qe->resp.reply_head = qe->resp.reply_tail;
	qe->resp.ack_pending = false;
}
