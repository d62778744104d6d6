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
 */
#include "verbs/verbs.h"

#include "engine/engine.h"

static bool opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return type == IBV_QPT_RC;
	default:
		/* SEND_WITH_INV, LOCAL_INV, BIND_MW, TSO, ATOMIC_WRITE,
		 * FLUSH: no memory windows or invalidation here. */
		return false;
	}
}

static int check_send_wr(struct sv_qp *qp, const struct ibv_send_wr *wr,
			 uint64_t *len_out)
{
	uint64_t len = 0;
	int i;

	if (!opcode_ok(qp->type, wr->opcode))
		return EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	if (wr->num_sge && !wr->sg_list)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > SV_MAX_MSG_SIZE)
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		/* Inline carries data, not a destination for results. */
		if (wr->opcode == IBV_WR_RDMA_READ ||
		    wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			return EINVAL;
		if (len > qp->cap.max_inline_data ||
		    sizeof(struct sv_send_wqe) + len > qp->sq.stride)
			return EINVAL;
	}
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		if (wr->num_sge != 1 || wr->sg_list[0].length < 8)
			return EINVAL;
		len = 8;
	}
	/* UD: one packet per message, at most the path MTU (checked by the
	 * engine, which knows the MTU of the address). */
	*len_out = len;
	return 0;
}

static void fill_send_wqe(struct sv_qp *qp, struct sv_send_wqe *w,
			  const struct ibv_send_wr *wr, uint64_t len)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = (uint32_t)wr->send_flags;
	w->imm_data = wr->imm_data;
	w->length = len;
	switch (wr->opcode) {
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
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	default:
		if (qp->type == IBV_QPT_UD) {
			w->wr.ud.ah = wr->wr.ud.ah;
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
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
			w->sge[0].length = 8;
	}
}

static int sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr)
{
	struct sv_qp *qp = to_sv_qp(ibqp);
	struct sv_wq *sq = &qp->sq;
	int state, err = 0, posted = 0;

	pthread_mutex_lock(&qp->sq_lock);
	state = sv_engine_qp_state(qp);
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	    state == IBV_QPS_RTR) {
		err = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint32_t tail =
			atomic_load_explicit(&sq->tail, memory_order_relaxed);
		uint64_t len;

		err = check_send_wr(qp, wr, &len);
		if (err)
			break;
		if (sv_wq_used(sq) >= sq->max_wr) {
			err = ENOMEM;
			break;
		}
		fill_send_wqe(qp, sv_wq_at(sq, tail), wr, len);
		/* Publish the WQE before the engine can see the new tail. */
		atomic_store_explicit(&sq->tail, tail + 1,
				      memory_order_release);
		posted++;
	}
out:
	pthread_mutex_unlock(&qp->sq_lock);
	if (err)
		*bad_wr = wr;
	if (posted)
		sv_engine_kick(qp);
	return err;
}

static int sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	struct sv_qp *qp = to_sv_qp(ibqp);
	struct sv_wq *rq = &qp->rq;
	int state, err = 0, posted = 0;

	pthread_mutex_lock(&qp->rq_lock);
	state = sv_engine_qp_state(qp);
	/* A QP on an SRQ has no receive queue of its own. */
	if (state == IBV_QPS_RESET || qp->srq) {
		err = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint32_t tail =
			atomic_load_explicit(&rq->tail, memory_order_relaxed);
		struct sv_recv_wqe *w;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge ||
		    (wr->num_sge && !wr->sg_list)) {
			err = EINVAL;
			break;
		}
		if (sv_wq_used(rq) >= rq->max_wr) {
			err = ENOMEM;
			break;
		}
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
	pthread_mutex_unlock(&qp->rq_lock);
	if (err)
		*bad_wr = wr;
	/* Only a QP in ERR has something to do with new receives: flush.
	 * Read after the tail is published: either the engine's flush sees
	 * the new WQEs or we see ERR here. */
	if (posted && sv_engine_qp_state(qp) == IBV_QPS_ERR)
		sv_engine_kick(qp);
	return err;
}

void sv_engine_install_ops(struct sv_context *ctx)
{
	ctx->vctx.context.ops.post_send = sv_post_send;
	ctx->vctx.context.ops.post_recv = sv_post_recv;
}
