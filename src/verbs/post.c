/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * ibv_post_send and ibv_post_recv: validate each work request, copy it
 * into the queue (the caller's WR, SGE list and inline data may be reused
 * as soon as the call returns), then kick the engine.
 *
 * Rules (man ibv_post_send, IBA): the WRs before a bad one stay
 * posted and *bad_wr points at the bad one; EINVAL for a WR the QP cannot
 * carry (opcode not valid for its transport, too many SGEs, too much
 * inline data, a message above 2^31 bytes, an atomic whose result SGE
 * cannot hold 8 bytes), ENOMEM when the queue is full.  Sends are refused
 * in RESET, INIT and RTR; receives in RESET.  In ERR both are accepted and
 * complete with IBV_WC_WR_FLUSH_ERR; in SQD sends wait.
 *
 * Atomics: a real HCA (mlx5) writes the 8-byte result to the first SGE
 * and ignores its length; rdma-core's rxe refuses a length below 8.  We
 * refuse num_sge != 1 and a length below 8 with EINVAL (a result that
 * cannot be stored is an invalid WR), and use the first 8 bytes otherwise.
 * A misaligned remote address is not refused here: the responder NAKs it
 * (Invalid Request) as on the wire, which is what an HCA reports.
 *
 * ATOMIC WRITE (IBA 1.5): the destination in wr.rdma, the 8 bytes to
 * store as the WR's data, inline or one gather list; any other length is
 * EINVAL.  The responder checks alignment (Invalid Request NAK) as for
 * atomics, and the rights of an RDMA WRITE (IBV_ACCESS_REMOTE_WRITE), as
 * rxe does.
 *
 * Memory windows: BIND_MW (type 2 windows; type 1 windows are bound by
 * ibv_bind_mw, which posts the same WQE) and LOCAL_INV on RC and UC,
 * SEND_WITH_INV on RC only - IBA has no UC opcode carrying an IETH, so
 * although man ibv_post_send lists UC, the WR is refused (EINVAL) rather
 * than sent as something else.  Their gather lists are ignored.  Whether
 * the bind or invalidation is allowed (keys, PD, rights, range) is decided
 * when the WQE executes, in send queue order: a failure completes it with
 * IBV_WC_MW_BIND_ERR, as on an HCA.
 */
#include "verbs/verbs.h"
#include "engine/diag/stats.h"

#include "core/mw.h"
#include "engine/engine.h"
#include "engine/transport/stats.h"
#include "engine/diag/strict.h"
#include "proto/wr.h"

/* A refused WR: one warning line (util/log.h), limited per QP. */
#define REFUSE(qp, err, ...)                                              \
	sv_refuse_qp(&(qp)->lograte, (qp)->qpx.qp_base.qp_num, verb_name, \
		     (err), __VA_ARGS__)

/* type1: the WR comes from ibv_bind_mw, which binds type 1 windows only;
 * ibv_post_send binds type 2 windows only. */
static int check_bind_wr(struct sv_qp *qp, const struct ibv_send_wr *wr,
			 bool type1)
{
	const char *verb_name = type1 ? "ibv_bind_mw" : "ibv_post_send";
	const struct ibv_mw *mw = wr->bind_mw.mw;
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

	if (!mw)
		return REFUSE(qp, EINVAL,
			      "wr_id %#llx: BIND_MW without a window",
			      (unsigned long long)wr->wr_id);
	if (mw->type != (type1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2))
		return REFUSE(
			qp, EINVAL,
			"wr_id %#llx: window rkey 0x%x is of type %d; %s binds type %d windows only",
			(unsigned long long)wr->wr_id, mw->rkey, (int)mw->type,
			type1 ? "ibv_bind_mw" : "IBV_WR_BIND_MW",
			type1 ? 1 : 2);
	/* A binding needs a region; only a type 1 unbind (length 0) has
	 * none. */
	if (!bi->mr && (bi->addr || bi->length))
		return REFUSE(
			qp, EINVAL,
			"wr_id %#llx: bind of window rkey 0x%x without a region (bind_info.mr NULL, length %llu); only an unbind (length 0) has none",
			(unsigned long long)wr->wr_id, mw->rkey,
			(unsigned long long)bi->length);
	return 0;
}

static int check_send_wr(struct sv_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t *len_out, bool type1)
{
	const char *verb_name = type1 ? "ibv_bind_mw" : "ibv_post_send";
	const char *op = sv_wr(wr->opcode)->name;
	unsigned long long id = (unsigned long long)wr->wr_id;
	uint64_t len = 0;
	int i;

	if (!sv_wr_allowed(qp->type, wr->opcode)) {
		if (!op)
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: opcode %u is not one softverbs offers",
				id, (unsigned int)wr->opcode);
		return REFUSE(
			qp, EINVAL,
			"wr_id %#llx: opcode IBV_WR_%s is not valid on %s QPs (man ibv_post_send)",
			id, op, sv_qp_type_name(qp->type));
	}
	if (sv_wr_is(wr->opcode, SV_WR_LOCAL)) {
		*len_out = 0;
		return wr->opcode == IBV_WR_BIND_MW ?
			       check_bind_wr(qp, wr, type1) :
			       0;
	}
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return REFUSE(
			qp, EINVAL,
			"wr_id %#llx: num_sge %d is above the QP's max_send_sge %u",
			id, wr->num_sge, qp->cap.max_send_sge);
	if (wr->num_sge && !wr->sg_list)
		return REFUSE(qp, EINVAL,
			      "wr_id %#llx: num_sge %d with sg_list NULL", id,
			      wr->num_sge);
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > SV_MAX_MSG_SIZE)
		return REFUSE(
			qp, EINVAL,
			"wr_id %#llx: message of %llu bytes is above the 2^31 bytes a message may carry (max_msg_sz)",
			id, (unsigned long long)len);
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* Inline carries data, not a destination for results. */
		if (!sv_wr_is(wr->opcode, SV_WR_INLINE_OK))
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: IBV_SEND_INLINE on IBV_WR_%s, which has no data to send inline",
				id, op);
		if (len > qp->cap.max_inline_data ||
		    sizeof(struct sv_send_wqe) + len > qp->sq.stride)
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: %llu bytes of inline data are above the QP's max_inline_data %u",
				id, (unsigned long long)len,
				qp->cap.max_inline_data);
	}
	if (sv_wr_is(wr->opcode, SV_WR_ATOMIC)) {
		if (wr->num_sge != 1 || wr->sg_list[0].length < 8)
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: IBV_WR_%s needs one SGE of at least 8 bytes for its result (num_sge %d, length %u)",
				id, op, wr->num_sge,
				wr->num_sge ? wr->sg_list[0].length : 0);
		len = 8;
	}
	/* ATOMIC WRITE: exactly the 8 bytes it stores, on RC (its XRC
	 * twin is not sent). */
	if (sv_wr_is(wr->opcode, SV_WR_ATOMIC_WRITE) &&
	    (len != 8 || qp->type != IBV_QPT_RC))
		return EINVAL;
	if (qp->type == IBV_QPT_UD) {
		/* The destination is in the WR.  A UD message is one packet,
		 * at most the port MTU.  IBA C10-93.1.1 lets a CI send
		 * nothing and report nothing for a larger one (rxe completes
		 * it successfully without sending it); we refuse it here so
		 * that the application learns at once instead of losing the
		 * message silently. */
		if (!wr->wr.ud.ah)
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: a UD send needs an address handle (wr.ud.ah NULL)",
				id);
		if (len > sv_engine_port_mtu(qp->ctx))
			return REFUSE(
				qp, EINVAL,
				"wr_id %#llx: UD message of %llu bytes is above the port MTU %u (IBA C10-93.1.1: one packet)",
				id, (unsigned long long)len,
				sv_engine_port_mtu(qp->ctx));
	}
	*len_out = len;
	return 0;
}

static void fill_send_wqe(struct sv_qp *qp, struct sv_send_wqe *w,
			  const struct ibv_send_wr *wr, uint64_t len)
{
	memset(&w->wr, 0, sizeof(w->wr));
	sv_send_wqe_from_wr(w, wr, len);
	/* XRC: the target's XRC SRQ, carried in each request's XRCETH. */
	if (qp->type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn & 0xffffff;
	switch (wr->opcode) {
	case IBV_WR_BIND_MW: {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;
		struct sv_mw *mw = to_sv_mw(wr->bind_mw.mw);

		w->wr.bind.mw = mw;
		w->wr.bind.index = mw->index;
		w->wr.bind.rkey = wr->bind_mw.rkey;
		w->wr.bind.addr = bi->addr;
		w->wr.bind.length = bi->length;
		w->wr.bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
		w->wr.bind.access = bi->mw_access_flags;
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
		return; /* no gather list */
	}
	case IBV_WR_LOCAL_INV:
		w->invalidate_rkey = wr->invalidate_rkey;
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
		return;
	case IBV_WR_SEND_WITH_INV:
		w->invalidate_rkey = wr->invalidate_rkey;
		w->imm_data = 0;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		w->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		w->wr.atomic.swap = wr->wr.atomic.swap;
		w->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	default:
		if (qp->type == IBV_QPT_UD) {
			w->wr.ud.route = to_sv_ah(wr->wr.ud.ah)->route;
			w->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
			w->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		}
		break;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst = w->inline_data;
		int i;

		/* The data itself is copied now: no lkey is involved. */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct ibv_sge));
		if (sv_wr_is(wr->opcode, SV_WR_ATOMIC))
			w->sge[0].length = 8;
	}
}

/* SOFTVERBS_STRICT=1 (engine/diag/strict.h): what an HCA would punish later.
 * true: refuse the WR as the HCA's full queue would. */
static bool strict_send(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
	bool sig = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);

	if (sv_wr_is(wr->opcode, SV_WR_READ | SV_WR_ATOMIC) &&
	    !(wr->send_flags & IBV_SEND_INLINE))
		sv_strict_sgl_access(qp, wr->wr_id,
				     sv_wr_is(wr->opcode, SV_WR_READ) ?
					     "places an RDMA READ's data" :
					     "places an atomic's result",
				     wr->sg_list, wr->num_sge);
	/* An HCA frees the slots of unsignaled WRs only when the CQE of a
	 * later signaled one is polled: with max_send_wr of them in a row
	 * and none signaled, its queue is full for good (mlx5: ENOMEM) or,
	 * where the provider does not count, wraps over WQEs not yet
	 * executed.  softverbs frees them earlier (and its message
	 * channel holds none). */
	if (sig || qp->strict_unsig < qp->sq.max_wr)
		return false;
	sv_strict_qp(
		qp, "unsignaled-overflow",
		"wr_id %#llx would be unsignaled WR number %u in a row, but the send queue holds max_send_wr %u: an HCA frees their slots only when a later signaled WR's completion is polled, so its queue is full (ENOMEM) or overwritten; signal at least one WR in every max_send_wr (refused: ENOMEM)",
		(unsigned long long)wr->wr_id, qp->strict_unsig + 1,
		qp->sq.max_wr);
	return true;
}

/* wr is being posted: count it in the run of unsignaled WRs. */
static void strict_posted(struct sv_qp *qp, const struct ibv_send_wr *wr)
{
	if (qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED))
		qp->strict_unsig = 0;
	else
		qp->strict_unsig++;
}

/* The checksum of a send's or WRITE's data, checked at its completion
 * (engine/diag/strict.h).  Not for a fenced WR: a READ before it may write
 * its data, and the fence orders that (rc_ops.fence does). */
static void strict_sum(struct sv_qp *qp, struct sv_send_wqe *w)
{
	if (w->num_sge && !(w->send_flags & IBV_SEND_FENCE) &&
	    !sv_wr_is(w->opcode, SV_WR_READ | SV_WR_ATOMIC | SV_WR_LOCAL))
		w->strict_summed = sv_strict_sum(qp, w, &w->strict_sum);
}

static int post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad_wr, bool type1)
{
	const char *verb_name = type1 ? "ibv_bind_mw" : "ibv_post_send";
	struct sv_qp *qp = to_sv_qp(ibqp);
	struct sv_wq *sq = &qp->sq;
	int state, err = 0, posted = 0;

	/* Before the lock: the parent may have held it at the fork. */
	if (sv_forked(qp->forks)) {
		*bad_wr = wr;
		return REFUSE(qp, EINVAL, SV_FORKED_WHY);
	}
	sv_qlock_lock(&qp->sq_lock, SV_LOCK_SQ);
	state = sv_engine_qp_state(qp);
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	    state == IBV_QPS_RTR) {
		err = REFUSE(
			qp, EINVAL,
			"the QP is in %s; sends are allowed from RTS on (RTS, SQD; SQE and ERR flush) (IBA 10.3.1)",
			sv_qp_state_name(state));
		sv_strict_qp(
			qp, "post-state",
			"%s in %s: softverbs and rxe refuse it (EINVAL), but an HCA such as mlx5 takes the WR and executes nothing until the QP reaches RTS (a hang, or a late send); post sends after the modify to RTS",
			verb_name, sv_qp_state_name(state));
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint32_t tail =
			atomic_load_explicit(&sq->tail, memory_order_relaxed);
		uint64_t len;

		err = check_send_wr(qp, wr, &len, type1);
		if (err)
			break;
		if (sv_strict() && strict_send(qp, wr)) {
			err = ENOMEM; /* the queue of an HCA is full */
			break;
		}
		if (sv_wq_used(sq) >= sq->max_wr) {
			err = REFUSE(
				qp, ENOMEM,
				"wr_id %#llx: the send queue is full (%u WRs outstanding, max_send_wr %u): poll the CQ before posting more",
				(unsigned long long)wr->wr_id, sv_wq_used(sq),
				sq->max_wr);
			break;
		}
		if (sv_strict())
			strict_posted(qp, wr);
		/* A small SEND to a same-host peer: straight into its
		 * message channel, no engine (paths/chan.c). */
		if (!type1 && sv_engine_post_path(qp, wr, len))
			continue;
		/* (A path may have let go of sq_lock for a moment.) */
		tail = atomic_load_explicit(&sq->tail, memory_order_relaxed);
		fill_send_wqe(qp, sv_wq_at(sq, tail), wr, len);
		if (sv_strict())
			strict_sum(qp, sv_wq_at(sq, tail));
		/* Publish the WQE before the engine can see the new tail. */
		atomic_store_explicit(&sq->tail, tail + 1,
				      memory_order_release);
		posted++;
	}
out:
	sv_qlock_unlock(&qp->sq_lock);
	if (err)
		*bad_wr = wr;
	if (posted)
		sv_engine_kick(qp);
	return err;
}

int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	return post_send(ibqp, wr, bad_wr, false);
}

/* ibv_bind_mw (type 1 windows): the bind is a WQE of the send queue like
 * a type 2 BIND_MW; the window's new R_Key (next tag) is returned in
 * mw->rkey at once (man ibv_bind_mw), the bind itself is done when its
 * completion says so.  ibv_bind_mw's inline part has checked the window
 * type, the region and their PDs. */
int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
	       struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr, *bad;
	int err;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = post_send(qp, &wr, &bad, true);
	if (!err)
		mw->rkey = wr.bind_mw.rkey;
	return err;
}

int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	static const char verb_name[] = "ibv_post_recv";
	struct sv_qp *qp = to_sv_qp(ibqp);
	struct sv_wq *rq = &qp->rq;
	int state, err = 0, posted = 0;

	if (sv_forked(qp->forks)) {
		*bad_wr = wr;
		return REFUSE(qp, EINVAL, SV_FORKED_WHY);
	}
	sv_qlock_lock(&qp->rq_lock, SV_LOCK_RQ);
	state = sv_engine_qp_state(qp);
	/* A QP on an SRQ has no receive queue of its own, nor has either
	 * end of XRC (the target receives through XRC SRQs). */
	if (state == IBV_QPS_RESET) {
		err = REFUSE(
			qp, EINVAL,
			"the QP is in RESET; receives may be posted from INIT on (IBA 10.3.1)");
		sv_strict_qp(
			qp, "post-state",
			"ibv_post_recv in RESET: softverbs refuses it (EINVAL), but an HCA may take the WR and lose it at the modify to INIT (the message it was for then meets no receive: RNR); post receives after the modify to INIT");
		goto out;
	}
	if (qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV ||
	    qp->srq) {
		err = REFUSE(
			qp, EINVAL,
			"a%s QP has no receive queue of its own: post to %s",
			qp->srq ? " SRQ-attached" : "n XRC",
			qp->srq ? "its SRQ (ibv_post_srq_recv)" :
				  "an XRC SRQ (ibv_post_srq_recv)");
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint32_t tail =
			atomic_load_explicit(&rq->tail, memory_order_relaxed);
		struct sv_recv_wqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			err = REFUSE(
				qp, EINVAL,
				"wr_id %#llx: num_sge %d is above the QP's max_recv_sge %u",
				(unsigned long long)wr->wr_id, wr->num_sge,
				rq->max_sge);
			break;
		}
		if (wr->num_sge && !wr->sg_list) {
			err = REFUSE(
				qp, EINVAL,
				"wr_id %#llx: num_sge %d with sg_list NULL",
				(unsigned long long)wr->wr_id, wr->num_sge);
			break;
		}
		if (sv_wq_used(rq) >= rq->max_wr) {
			err = REFUSE(
				qp, ENOMEM,
				"wr_id %#llx: the receive queue is full (%u WRs outstanding, max_recv_wr %u)",
				(unsigned long long)wr->wr_id, sv_wq_used(rq),
				rq->max_wr);
			break;
		}
		if (sv_strict())
			sv_strict_sgl_access(qp, wr->wr_id, "receives",
					     wr->sg_list, wr->num_sge);
		w = sv_wq_at(rq, tail);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct ibv_sge));
		atomic_store_explicit(&rq->tail, tail + 1,
				      memory_order_release);
		posted++;
	}
out:
	sv_qlock_unlock(&qp->rq_lock);
	if (err)
		*bad_wr = wr;
	/* Only a QP in ERR has something to do with new receives: flush.
	 * Read after the tail is published: either the engine's flush sees
	 * the new WQEs or we see ERR here. */
	if (posted && sv_engine_qp_state(qp) == IBV_QPS_ERR)
		sv_engine_kick(qp);
	return err;
}
