/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The responder: an explicit state machine over each request packet.
 *
 *   CHK_PSN -> CHK_OP_SEQ -> CHK_OP_VALID -> CHK_RESOURCE -> CHK_LENGTH
 *   -> CHK_RKEY -> EXECUTE -> (READ_REPLY | ATOMIC_REPLY | COMPLETE ->
 *   ACKNOWLEDGE) -> DONE
 *
 * An ATOMIC WRITE (IBA 1.5) is a one-packet RDMA WRITE of 8 bytes with
 * its own checks (length 8, aligned VA) and a single atomic store; it is
 * acknowledged, and a duplicate answered, as a WRITE.
 *
 * Each state is one function returning the next state.  Every failure is
 * its own error state, and one table (resp_errors) maps it to what IBA
 * says to do: the NAK sent, the status of the receive WQE it ruins, the
 * async event, and whether the QP enters the error state.  Duplicates
 * (IBA) are acknowledged again, READs re-executed from the
 * resources, ATOMICs answered from the cached result (never executed
 * twice).  UC has no ACKs: errors there discard the message (IBA).
 *
 * Selective retransmission (a softverbs extension, docs/engine.md): the
 * middle and last packets of the RDMA WRITE in progress that arrive after
 * a gap are placed at once (their address is known from the WRITE's RETH)
 * and remembered in a bitmap; once the gap is filled the responder moves
 * past them, and its NAKs say how many PSNs are missing (wire.h,
 * SV_SACK_MAX).
 *
 * Replies to READ and ATOMIC requests go through a queue, generated a
 * budget at a time; ACKs and NAKs wait until the queue is empty, because a
 * coalesced ACK past a READ would tell the requester the READ's responses
 * were lost.
 */
#include "core/async.h"
#include "core/mr.h"
#include "core/mw.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/resp.h"
#include "engine/transport/sgl.h"
#include "engine/transport/stats.h"
#include "engine/transport/ud.h"
#include "engine/transport/xmit.h"
#include "engine/transport/forward.h"
#include "util/env.h"
#include "util/log.h"

enum resp_state {
	RESP_CHK_PSN,
	RESP_CHK_OP_SEQ,
	RESP_CHK_OP_VALID,
	RESP_CHK_RESOURCE,
	RESP_CHK_LENGTH,
	RESP_CHK_RKEY,
	RESP_EXECUTE,
	RESP_READ_REPLY,
	RESP_ATOMIC_REPLY,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DUPLICATE,
	RESP_DONE,
	/* errors */
	RESP_ERR_PSN_OUT_OF_SEQ,
	RESP_ERR_OP_SEQ,
	RESP_ERR_UNSUPPORTED_OPCODE,
	RESP_ERR_RNR,
	RESP_ERR_ACCESS,
	RESP_ERR_LENGTH,
	RESP_ERR_LOC_LEN,
	RESP_ERR_LOC_PROT,
	RESP_ERR_TOO_MANY_RD_ATOMIC,
	RESP_ERR_MISALIGNED_ATOMIC,
	RESP_ERR_CQ_OVERFLOW,
	RESP_ERR_INV_RKEY,
	RESP_ERR_FAULT,
	RESP_ERR_RECV_FAULT,
	RESP_NUM_STATES
};

static const char *const resp_state_names[RESP_NUM_STATES] = {
	[RESP_CHK_PSN] = "CHK_PSN",
	[RESP_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[RESP_CHK_OP_VALID] = "CHK_OP_VALID",
	[RESP_CHK_RESOURCE] = "CHK_RESOURCE",
	[RESP_CHK_LENGTH] = "CHK_LENGTH",
	[RESP_CHK_RKEY] = "CHK_RKEY",
	[RESP_EXECUTE] = "EXECUTE",
	[RESP_READ_REPLY] = "READ_REPLY",
	[RESP_ATOMIC_REPLY] = "ATOMIC_REPLY",
	[RESP_COMPLETE] = "COMPLETE",
	[RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESP_DUPLICATE] = "DUPLICATE",
	[RESP_DONE] = "DONE",
	[RESP_ERR_PSN_OUT_OF_SEQ] = "ERR_PSN_OUT_OF_SEQ",
	[RESP_ERR_OP_SEQ] = "ERR_OP_SEQ",
	[RESP_ERR_UNSUPPORTED_OPCODE] = "ERR_UNSUPPORTED_OPCODE",
	[RESP_ERR_RNR] = "ERR_RNR",
	[RESP_ERR_ACCESS] = "ERR_ACCESS",
	[RESP_ERR_LENGTH] = "ERR_LENGTH",
	[RESP_ERR_LOC_LEN] = "ERR_LOC_LEN",
	[RESP_ERR_LOC_PROT] = "ERR_LOC_PROT",
	[RESP_ERR_TOO_MANY_RD_ATOMIC] = "ERR_TOO_MANY_RD_ATOMIC",
	[RESP_ERR_MISALIGNED_ATOMIC] = "ERR_MISALIGNED_ATOMIC",
	[RESP_ERR_CQ_OVERFLOW] = "ERR_CQ_OVERFLOW",
	[RESP_ERR_INV_RKEY] = "ERR_INV_RKEY",
	[RESP_ERR_FAULT] = "ERR_FAULT",
	[RESP_ERR_RECV_FAULT] = "ERR_RECV_FAULT",
};

/* What each fatal responder error does (IBA:
 * invalid requests and access violations are NAKed and put the responder
 * QP in the error state).  wc: status of the receive WQE being filled, if
 * any.  event: the affiliated async event, or SV_ERR_NO_EVENT when the
 * failure is reported by a local completion. */
static const struct resp_error {
	uint8_t nak;
	enum ibv_wc_status wc;
	int event;
} resp_errors[RESP_NUM_STATES] = {
	[RESP_ERR_OP_SEQ] = { SV_AETH_NAK_INVALID, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR },
	[RESP_ERR_UNSUPPORTED_OPCODE] = { SV_AETH_NAK_INVALID,
					  IBV_WC_REM_INV_REQ_ERR,
					  IBV_EVENT_QP_REQ_ERR },
	[RESP_ERR_LENGTH] = { SV_AETH_NAK_INVALID, IBV_WC_REM_INV_REQ_ERR,
			      IBV_EVENT_QP_REQ_ERR },
	[RESP_ERR_TOO_MANY_RD_ATOMIC] = { SV_AETH_NAK_INVALID,
					  IBV_WC_REM_INV_REQ_ERR,
					  IBV_EVENT_QP_REQ_ERR },
	[RESP_ERR_MISALIGNED_ATOMIC] = { SV_AETH_NAK_INVALID,
					 IBV_WC_REM_INV_REQ_ERR,
					 IBV_EVENT_QP_REQ_ERR },
	[RESP_ERR_ACCESS] = { SV_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			      IBV_EVENT_QP_ACCESS_ERR },
	[RESP_ERR_LOC_LEN] = { SV_AETH_NAK_INVALID, IBV_WC_LOC_LEN_ERR,
			       SV_ERR_NO_EVENT },
	[RESP_ERR_LOC_PROT] = { SV_AETH_NAK_REM_OP, IBV_WC_LOC_PROT_ERR,
				SV_ERR_NO_EVENT },
	[RESP_ERR_CQ_OVERFLOW] = { SV_AETH_NAK_REM_OP, IBV_WC_LOC_QP_OP_ERR,
				   IBV_EVENT_QP_FATAL },
	/* The IETH of a SEND with Invalidate names no type 2 window bound
	 * to this QP (IBA 10.6.7, o10-37.2.x): an invalid request. */
	[RESP_ERR_INV_RKEY] = { SV_AETH_NAK_INVALID, IBV_WC_REM_INV_REQ_ERR,
				IBV_EVENT_QP_REQ_ERR },
	/* The region passed every check but a page of it faulted: unmapped
	 * or write-protected since registration (util/fault.h).  What an
	 * HCA reports for a protection fault on a WRITE or atomic target
	 * (or a READ's source): a remote access error for the requester,
	 * a local access violation event here. */
	[RESP_ERR_FAULT] = { SV_AETH_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
			     IBV_EVENT_QP_ACCESS_ERR },
	/* The same in a SEND's receive buffer: rxe NAKs a placement that
	 * fails with Remote Operational Error; the receive WQE fails as for
	 * a bad receive SGE, and the QP raises the access event. */
	[RESP_ERR_RECV_FAULT] = { SV_AETH_NAK_REM_OP, IBV_WC_LOC_PROT_ERR,
				  IBV_EVENT_QP_ACCESS_ERR },
};

struct resp_ctx {
	struct sv_qp_engine *qe;
	struct sv_pkt *pkt;
	const struct sv_flow *flow;
	bool uc;
};

static uint32_t npkts(uint64_t len, uint32_t pmtu)
{
	return len ? (uint32_t)((len + pmtu - 1) / pmtu) : 1;
}

static struct sv_pd *recv_pd(struct sv_qp_engine *qe)
{
	return qe->resp.wqe_srq ? qe->qp->srq->pd : qe->qp->pd;
}

static void set_ack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn)
{
	/* A pending NAK (sequence or RNR) stands until an ACK for a PSN at
	 * or after it replaces it: a duplicate's ACK must not hide it. */
	if (qe->resp.ack_pending &&
	    (qe->resp.ack_syndrome & SV_AETH_TYPE_MASK) != SV_AETH_ACK &&
	    (syndrome & SV_AETH_TYPE_MASK) == SV_AETH_ACK &&
	    sv_psn_diff(psn, qe->resp.ack_psn) < 0)
		return;
	qe->resp.ack_pending = true;
	qe->resp.ack_syndrome = syndrome;
	qe->resp.ack_psn = psn;
	sv_work_add(qe, SV_WORK_ACK);
}

/* ---- checks ------------------------------------------------------------ */

static enum resp_state chk_psn(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	int32_t d = sv_psn_diff(c->pkt->psn, qe->resp.psn);

	if (c->uc) {
		/* UC: a gap loses the message in progress; resynchronise
		 * on this packet (IBA). */
		if (d) {
			if (qe->resp.in_msg)
				SV_STAT(qe->eng, drop_uc_msg);
			qe->resp.in_msg = 0;
			qe->resp.offset = 0;
			qe->resp.psn = c->pkt->psn;
		}
		return RESP_CHK_OP_SEQ;
	}
	if (d == 0) {
		qe->resp.nak_sent = false;
		return RESP_CHK_OP_SEQ;
	}
	return d > 0 ? RESP_ERR_PSN_OUT_OF_SEQ : RESP_DUPLICATE;
}

/* IBA: FIRST, MIDDLE and LAST of one message in order. */
static enum resp_state chk_op_seq(struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask;
	bool ok;

	switch (c->qe->resp.in_msg) {
	case SV_M_SEND:
		ok = (m & SV_M_SEND) && !(m & SV_M_START);
		break;
	case SV_M_WRITE:
		ok = (m & SV_M_WRITE) && !(m & SV_M_START);
		break;
	default:
		ok = (m & SV_M_START) != 0;
		break;
	}
	return ok ? RESP_CHK_OP_VALID : RESP_ERR_OP_SEQ;
}

/* IBA: the QP must be enabled for the remote operation. */
static enum resp_state chk_op_valid(struct resp_ctx *c)
{
	uint32_t m = c->pkt->mask, acc = c->qe->access;

	if (!(m & SV_M_START))
		return RESP_CHK_RESOURCE;
	switch (sv_hook_inject_wr(c->qe, c->pkt->psn, (m & SV_M_SEND) != 0)) {
	case SV_INJ_RNR:
		return RESP_ERR_RNR;
	case SV_INJ_ACCESS:
		return RESP_ERR_ACCESS;
	case SV_INJ_RETRY:
		/* Silent from this request on: the requester retries until
		 * retry_cnt runs out (sv_resp_rx). */
		c->qe->resp.mute = true;
		return RESP_DONE;
	default:
		break;
	}
	if (((m & SV_M_WRITE) && !(acc & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((m & SV_M_READ) && !(acc & IBV_ACCESS_REMOTE_READ)) ||
	    ((m & SV_M_ATOMIC) && !(acc & IBV_ACCESS_REMOTE_ATOMIC))) {
		sv_hook_explain_qp_access(
			c->qe, (m & SV_M_WRITE) ? IBV_ACCESS_REMOTE_WRITE :
			       (m & SV_M_READ)	? IBV_ACCESS_REMOTE_READ :
						  IBV_ACCESS_REMOTE_ATOMIC);
		return RESP_ERR_ACCESS;
	}
	return RESP_CHK_RESOURCE;
}

/* Requests being answered; duplicates do not count (IBA: a resent
 * request is not a new outstanding one). */
static uint32_t replies_queued(struct sv_qp_engine *qe)
{
	uint32_t i, n = 0;

	for (i = qe->resp.reply_head; i != qe->resp.reply_tail; i++)
		n += !qe->resp.replies[i % SV_REPLY_Q].dup;
	return n;
}

static enum resp_state chk_resource(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	uint32_t m = c->pkt->mask;

	/* A SEND takes a receive WQE on its first packet, a WRITE with
	 * immediate on its last; none posted: RNR (IBA). */
	if ((m & SV_M_RWR) && !qe->resp.have_wqe &&
	    (((m & SV_M_SEND) && (m & SV_M_START)) ||
	     ((m & SV_M_WRITE) && (m & SV_M_END)))) {
		if (!sv_rq_get(qe))
			return RESP_ERR_RNR;
	}
	/* IBA: at most max_dest_rd_atomic READ/ATOMIC requests
	 * being answered at once. */
	if ((m & (SV_M_READ | SV_M_ATOMIC)) &&
	    (!qe->max_dest_rd_atomic ||
	     replies_queued(qe) >= qe->max_dest_rd_atomic)) {
		sv_hook_explain_rd_atomic(qe,
					  (m & SV_M_READ) ?
						  IBV_ACCESS_REMOTE_READ :
						  IBV_ACCESS_REMOTE_ATOMIC,
					  replies_queued(qe));
		return RESP_ERR_TOO_MANY_RD_ATOMIC;
	}
	return RESP_CHK_LENGTH;
}

/* IBA: FIRST and MIDDLE carry exactly one PMTU, LAST
 * 1..PMTU, ONLY 0..PMTU; a write never exceeds its DMA length. */
static enum resp_state chk_length(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	uint32_t m = p->mask, pay = p->paylen;

	if ((m & SV_M_PAYLOAD) && !(m & SV_M_END) && pay != qe->pmtu)
		return RESP_ERR_LENGTH;
	if ((m & SV_M_END) && pay > qe->pmtu)
		return RESP_ERR_LENGTH;
	if ((m & SV_M_END) && !(m & SV_M_START) && (m & SV_M_PAYLOAD) && !pay)
		return RESP_ERR_LENGTH;
	if (m & SV_M_WRITE) {
		if (m & SV_M_RETH) {
			uint32_t len =
				(uint32_t)sv_reth_len(sv_pkt_h(p, SV_HDR_RETH));

			/* IBA A19: an ATOMIC WRITE stores exactly 8 bytes. */
			if ((m & SV_M_ATOMIC_WRITE) && len != 8)
				return RESP_ERR_LENGTH;
			if (len > SV_MAX_MSG_SIZE ||
			    ((m & SV_M_END) ? pay != len : len <= pay))
				return RESP_ERR_LENGTH;
		} else if (pay > qe->resp.resid ||
			   ((m & SV_M_END) && pay != qe->resp.resid)) {
			return RESP_ERR_LENGTH;
		}
	}
	if (m & SV_M_READ) {
		if (sv_reth_len(sv_pkt_h(p, SV_HDR_RETH)) > SV_MAX_MSG_SIZE)
			return RESP_ERR_LENGTH;
	}
	/* The message must fit the receive WQE (IBA: a local
	 * length error at the responder, an invalid request NAK). */
	if ((m & SV_M_SEND) && qe->resp.offset + pay > qe->resp.wqe_len) {
		sv_hook_explain_recv_len(qe, qe->resp.wqe->wr_id,
					 qe->resp.wqe_len,
					 qe->resp.offset + pay,
					 (m & SV_M_END) != 0);
		return RESP_ERR_LOC_LEN;
	}
	return RESP_CHK_RKEY;
}

/* R_Key, PD, access and bounds for the whole transfer (IBA memory
 * protection); a zero-length transfer touches nothing and is not checked. */
static bool rkey_ok(struct sv_qp_engine *qe, uint32_t rkey, uint64_t va,
		    uint64_t len, unsigned int access)
{
	struct sv_mr *mr;
	void *ptr;

	if (!len)
		return true;
	mr = sv_mr_get_by_rkey(rkey);
	ptr = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, va, len, access);
	if (!ptr)
		sv_hook_explain_access(qe, rkey, va, len, access, mr,
				       qe->qp->pd);
	if (mr)
		sv_mr_put(mr);
	return ptr != NULL;
}

static enum resp_state chk_rkey(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	uint32_t m = p->mask;

	if (m & SV_M_RETH) {
		uint8_t *h = sv_pkt_h(p, SV_HDR_RETH);
		uint64_t va = sv_reth_va(h);
		uint32_t rkey = (uint32_t)sv_reth_rkey(h);
		uint32_t len = (uint32_t)sv_reth_len(h);

		/* IBA A19: an ATOMIC WRITE's VA is 8-byte aligned, as an
		 * atomic's. */
		if ((m & SV_M_ATOMIC_WRITE) && (va & 7)) {
			sv_hook_explain_misaligned(qe, "ATOMIC WRITE", rkey,
						   va);
			return RESP_ERR_MISALIGNED_ATOMIC;
		}
		if (!rkey_ok(qe, rkey, va, len,
			     (m & SV_M_WRITE) ? IBV_ACCESS_REMOTE_WRITE :
						IBV_ACCESS_REMOTE_READ))
			return RESP_ERR_ACCESS;
		if (m & SV_M_WRITE) {
			qe->resp.va = va;
			qe->resp.rkey = rkey;
			qe->resp.resid = len;
			qe->resp.length = len;
		}
	}
	if (m & SV_M_ATOMIC) {
		uint8_t *h = sv_pkt_h(p, SV_HDR_ATMETH);
		uint64_t va = sv_atmeth_va(h);

		/* IBA: atomics need an 8-byte aligned VA. */
		if (va & 7) {
			sv_hook_explain_misaligned(
				qe, "ATOMIC", (uint32_t)sv_atmeth_rkey(h), va);
			return RESP_ERR_MISALIGNED_ATOMIC;
		}
		if (!rkey_ok(qe, (uint32_t)sv_atmeth_rkey(h), va, 8,
			     IBV_ACCESS_REMOTE_ATOMIC))
			return RESP_ERR_ACCESS;
	}
	return RESP_EXECUTE;
}

/* ---- execution --------------------------------------------------------- */

/* IBA A19 ATOMIC WRITE: the 8 bytes land in one store, so no reader of
 * this host sees half of them; release ordering, so whoever sees them
 * also sees what earlier requests of the QP placed (rxe: a store-release
 * after everything before it). */
/* The 8 bytes of an ATOMIC WRITE in one store, seen whole or not at all,
 * through the fault guard (util/fault.h): a compare-and-swap until it
 * replaces what it read.  false: the page faulted (sv_dma_fault_addr). */
static bool atomic_write(uint8_t *dst, const uint8_t *payload)
{
	uint64_t *w = (uint64_t *)(void *)dst, v, seen = 0, was;
	uintptr_t fault;

	memcpy(&v, payload, 8);
	SV_DMA_BEGIN();
	do {
		was = seen;
		fault = sv_fault_cas64(w, was, v, &seen);
	} while (!fault && seen != was);
	SV_DMA_END();
	if (fault)
		sv_dma_fault_addr = fault;
	return !fault;
}

static enum resp_state execute(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	uint32_t m = p->mask, pay = p->paylen;

	if (m & SV_M_READ)
		return RESP_READ_REPLY;
	if (m & SV_M_ATOMIC)
		return RESP_ATOMIC_REPLY;
	if (m & SV_M_SEND) {
		enum sv_sgl_err e = SV_SGL_OK;

		/* (An XRC SRQ of another process: placed there.) */
		if (pay && qe->qp->xrc_rwqe)
			e = sv_xrcfwd_place(qe, p->payload, pay);
		else if (pay)
			e = sv_sgl_copy(recv_pd(qe), qe->resp.wqe->sge,
					qe->resp.wqe->num_sge, qe->resp.offset,
					p->payload, pay, true);
		if (e == SV_SGL_FAULT) {
			sv_dma_fault_report(qe, "SEND into a receive buffer");
			return RESP_ERR_RECV_FAULT;
		}
		if (e && qe->qp->xrc_rwqe)
			return RESP_ERR_LOC_PROT;
		if (e) {
			sv_hook_explain_recv_sgl(qe, recv_pd(qe),
						 qe->resp.wqe->sge,
						 qe->resp.wqe->num_sge, false);
			return RESP_ERR_LOC_PROT;
		}
		qe->resp.offset += pay;
	} else if (pay) {
		struct sv_mr *mr = sv_mr_get_by_rkey(qe->resp.rkey);
		uint8_t *dst =
			sv_mr_check_qp(mr, qe->qp, qe->qp->pd, qe->resp.va, pay,
				       IBV_ACCESS_REMOTE_WRITE);

		if (!dst) {
			sv_hook_explain_access(qe, qe->resp.rkey, qe->resp.va,
					       pay, IBV_ACCESS_REMOTE_WRITE, mr,
					       qe->qp->pd);
			if (mr)
				sv_mr_put(mr);
			return RESP_ERR_ACCESS; /* deregistered meanwhile */
		}
		if ((m & SV_M_ATOMIC_WRITE) ?
			    !atomic_write(dst, p->payload) :
			    !sv_dma_copy(dst, p->payload, pay)) {
			sv_mr_put(mr);
			sv_dma_fault_report(qe, (m & SV_M_ATOMIC_WRITE) ?
							"ATOMIC WRITE target" :
							"RDMA WRITE target");
			return RESP_ERR_FAULT;
		}
		sv_mr_put(mr);
		qe->resp.va += pay;
		qe->resp.resid -= pay;
	}
	if (m & SV_M_IMM)
		memcpy(&qe->resp.imm, sv_pkt_h(p, SV_HDR_IMMDT), 4);
	qe->resp.in_msg = (m & SV_M_END) ? 0 : (m & (SV_M_SEND | SV_M_WRITE));
	qe->resp.psn = sv_psn_add(qe->resp.psn, 1);
	return (m & SV_M_END) ? RESP_COMPLETE : RESP_ACKNOWLEDGE;
}

static void queue_reply(struct sv_qp_engine *qe, const struct sv_reply *r)
{
	qe->resp.replies[qe->resp.reply_tail % SV_REPLY_Q] = *r;
	qe->resp.reply_tail++;
	sv_work_add(qe, SV_WORK_REPLY);
}

static struct sv_resp_res *new_res(struct sv_qp_engine *qe)
{
	uint32_t n = qe->resp.nres ? qe->resp.nres : 1;

	return &qe->resp.res[qe->resp.res_next++ % n];
}

static enum resp_state read_reply(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	uint8_t *h = sv_pkt_h(c->pkt, SV_HDR_RETH);
	struct sv_resp_res *res = new_res(qe);
	struct sv_reply r;

	res->type = SV_RES_READ;
	res->psn = c->pkt->psn;
	res->len = (uint32_t)sv_reth_len(h);
	res->npkts = npkts(res->len, qe->pmtu);
	res->va = sv_reth_va(h);
	res->rkey = (uint32_t)sv_reth_rkey(h);
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	memset(&r, 0, sizeof(r));
	r.type = SV_RES_READ;
	r.psn = r.first_psn = res->psn;
	r.va = res->va;
	r.rkey = res->rkey;
	r.pd = qe->qp->pd;
	r.resid = r.total = res->len;
	r.msn = qe->resp.msn;
	queue_reply(qe, &r);
	/* The response packets use the PSNs up to the request's length. */
	qe->resp.psn = sv_psn_add(qe->resp.psn, res->npkts);
	return RESP_DONE;
}

static enum resp_state atomic_reply(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	uint8_t *h = sv_pkt_h(c->pkt, SV_HDR_ATMETH);
	uint64_t va = sv_atmeth_va(h), orig;
	uintptr_t fault;
	struct sv_mr *mr = sv_mr_get_by_rkey((uint32_t)sv_atmeth_rkey(h));
	uint64_t *p = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, va, 8,
				     IBV_ACCESS_REMOTE_ATOMIC);
	struct sv_resp_res *res;
	struct sv_reply r;

	if (!p) {
		sv_hook_explain_access(qe, (uint32_t)sv_atmeth_rkey(h), va, 8,
				       IBV_ACCESS_REMOTE_ATOMIC, mr,
				       qe->qp->pd);
		if (mr)
			sv_mr_put(mr);
		return RESP_ERR_ACCESS;
	}
	/* Atomic with respect to every other access of this host, not only
	 * other atomics: the CPU's own atomics on the target word, guarded
	 * as every DMA access (engine/dma.h). */
	SV_DMA_BEGIN();
	if (c->pkt->opcode == SV_OP_RC_COMPARE_SWAP)
		fault = sv_fault_cas64(p, sv_atmeth_compare(h),
				       sv_atmeth_swap_add(h), &orig);
	else
		fault = sv_fault_fadd64(p, sv_atmeth_swap_add(h), &orig);
	SV_DMA_END();
	sv_mr_put(mr);
	if (fault) {
		sv_dma_fault_addr = fault;
		sv_dma_fault_report(qe, "atomic target");
		return RESP_ERR_FAULT;
	}
	res = new_res(qe);
	res->type = SV_RES_ATOMIC;
	res->psn = c->pkt->psn;
	res->npkts = 1;
	res->orig = orig;
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	memset(&r, 0, sizeof(r));
	r.type = SV_RES_ATOMIC;
	r.psn = r.first_psn = res->psn;
	r.orig = orig;
	r.msn = qe->resp.msn;
	queue_reply(qe, &r);
	qe->resp.psn = sv_psn_add(qe->resp.psn, 1);
	return RESP_DONE;
}

static enum resp_state complete(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	struct ibv_wc wc;
	bool acked;

	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	if (p->mask & SV_M_SEND)
		SV_STAT(qe->eng, rdma_sends);
	if (!(p->mask & SV_M_RWR)) {
		/* A WRITE's bytes in place: an application watching them
		 * (ib_write_lat) answers as one woken by a receive does. */
		qe->eng->pass_answerable++;
		return RESP_ACKNOWLEDGE;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = qe->resp.wqe->wr_id;
	wc.status = IBV_WC_SUCCESS;
	if (p->mask & SV_M_SEND) {
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = (uint32_t)qe->resp.offset;
	} else {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = (uint32_t)qe->resp.length;
	}
	if (p->mask & SV_M_IMM) {
		wc.imm_data = qe->resp.imm;
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	if (p->mask & SV_M_IETH) {
		/* The message is placed; its window is invalidated before
		 * the receive completes, so the completion proves it. */
		uint32_t rkey =
			(uint32_t)sv_ieth_rkey(sv_pkt_h(p, SV_HDR_IETH));

		if (sv_mw_remote_inv(qe->qp, rkey)) {
			sv_hook_explain_inv_rkey(qe, wc.wr_id, rkey);
			return RESP_ERR_INV_RKEY;
		}
		wc.invalidated_rkey = rkey;
		wc.wc_flags |= IBV_WC_WITH_INV;
	}
	wc.qp_num = qe->qpn;
	wc.src_qp = qe->dest_qpn;
	qe->resp.have_wqe = false;
	/* A peer on this host may answer through a message channel, which
	 * does not queue behind our ring packets: the ACK leaves before the
	 * completion that lets the application answer, as on a wire, where
	 * the ACK is out before the answer can be (perftest -e takes the
	 * first event after a post for its send's). */
	acked = qe->shm && !c->uc && sv_bth_ackreq(p->hdr);
	if (acked) {
		set_ack(qe, SV_AETH_ACK | SV_AETH_CREDIT_INVALID, p->psn);
		sv_resp_ack_flush(qe);
		sv_tx_flush(qe->eng);
	}
	/* And our SENDs it acknowledged another way complete first. */
	sv_paths_settle(qe);
	SV_STAT(qe->eng, rdma_recvs);
	SV_QSTAT(qe, recv_done);
	SV_QSTAT_ADD(qe, recv_bytes, wc.byte_len);
	if (sv_push_recv_cqe(qe, &wc, sv_bth_se(p->hdr))) {
		sv_hook_explain_cq_overrun(qe, wc.wr_id);
		return RESP_ERR_CQ_OVERFLOW;
	}
	return acked ? RESP_DONE : RESP_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct resp_ctx *c)
{
	/* Coalesced: one ACK for the newest PSN asked for, sent after the
	 * batch of received packets (IBA allows it). */
	if (!c->uc && sv_bth_ackreq(c->pkt->hdr))
		set_ack(c->qe, SV_AETH_ACK | SV_AETH_CREDIT_INVALID,
			c->pkt->psn);
	return RESP_DONE;
}

/* IBA: duplicates are answered, never
 * re-executed except READs, which are side-effect free. */
static enum resp_state duplicate(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	uint32_t i, n = qe->resp.nres ? qe->resp.nres : 1;

	SV_STAT(qe->eng, duplicate_request);
	if (p->mask & (SV_M_SEND | SV_M_WRITE)) {
		set_ack(qe, SV_AETH_ACK | SV_AETH_CREDIT_INVALID,
			sv_psn_add(qe->resp.psn, SV_PSN_MASK));
		return RESP_DONE;
	}
	for (i = 0; i < n; i++) {
		struct sv_resp_res *res = &qe->resp.res[i];
		int32_t off = sv_psn_diff(p->psn, res->psn);
		struct sv_reply r;
		uint32_t j;

		if (res->type == SV_RES_NONE || off < 0 ||
		    (uint32_t)off >= res->npkts)
			continue;
		/* Already being answered: those responses will come. */
		for (j = qe->resp.reply_head; j != qe->resp.reply_tail; j++) {
			struct sv_reply *q = &qe->resp.replies[j % SV_REPLY_Q];
			int32_t in = sv_psn_diff(p->psn, q->first_psn);

			if (in >= 0 && (uint32_t)in < npkts(q->total, qe->pmtu))
				return RESP_DONE;
		}
		memset(&r, 0, sizeof(r));
		r.msn = qe->resp.msn;
		r.dup = true;
		if (qe->resp.reply_tail - qe->resp.reply_head >= SV_REPLY_Q)
			return RESP_DONE; /* the queue is full: the resend comes back */
		if ((p->mask & SV_M_ATOMIC) && res->type == SV_RES_ATOMIC &&
		    off == 0) {
			r.type = SV_RES_ATOMIC;
			r.psn = r.first_psn = p->psn;
			r.orig = res->orig;
			queue_reply(qe, &r);
		} else if ((p->mask & SV_M_READ) && res->type == SV_RES_READ) {
			uint8_t *h = sv_pkt_h(p, SV_HDR_RETH);
			uint32_t len = (uint32_t)sv_reth_len(h);
			uint32_t end = sv_psn_add(p->psn, npkts(len, qe->pmtu));

			/* A retried READ may start mid-way (IBA) and be
			 * cut differently from the original, and may even
			 * reach past the PSNs we have seen (the request we
			 * saw was itself a shorter retry): the part past
			 * them is new, and the expected PSN moves on. */
			if (len > SV_MAX_MSG_SIZE ||
			    !rkey_ok(qe, (uint32_t)sv_reth_rkey(h),
				     sv_reth_va(h), len,
				     IBV_ACCESS_REMOTE_READ))
				return RESP_DONE;
			/* Answered here, but rxe (and IBA lets any
			 * responder) drops such a READ: our requester
			 * never sends one (req.c, rd_end), and rc_loss
			 * checks that it stays so. */
			if (sv_psn_diff(end, sv_psn_add(res->psn, res->npkts)) >
			    0)
				SV_STAT(qe->eng, dup_read_beyond);
			if (sv_psn_diff(end, qe->resp.psn) > 0) {
				res->npkts =
					(uint32_t)sv_psn_diff(end, res->psn);
				qe->resp.psn = end;
				qe->resp.nak_sent = false;
			}
			r.type = SV_RES_READ;
			r.psn = r.first_psn = p->psn;
			r.va = sv_reth_va(h);
			r.rkey = (uint32_t)sv_reth_rkey(h);
			r.pd = qe->qp->pd;
			r.resid = r.total = len;
			queue_reply(qe, &r);
		}
		return RESP_DONE;
	}
	return RESP_DONE; /* too old to answer: dropped */
}

/* ---- errors ------------------------------------------------------------- */

static void resp_fatal(struct resp_ctx *c, enum resp_state st)
{
	struct sv_qp_engine *qe = c->qe;
	const struct resp_error *e = &resp_errors[st];
	struct ibv_wc wc;
	bool had_wqe;

	if (sv_env_trace())
		sv_hook_trace_pkt(qe->eng, "resp-err", c->pkt->hdr, c->pkt->len,
				  resp_state_names[st]);
	if (sv_log_level >= SV_LOG_DBG) {
		sv_dbg("qp 0x%06x responder error %s on %s psn %u", qe->qpn,
		       resp_state_names[st], sv_opcode_name(c->pkt->opcode),
		       c->pkt->psn);
		sv_hook_qp_dump(qe, stderr);
	}
	if (c->uc && st != RESP_ERR_LOC_LEN && st != RESP_ERR_LOC_PROT &&
	    st != RESP_ERR_CQ_OVERFLOW && st != RESP_ERR_FAULT &&
	    st != RESP_ERR_RECV_FAULT) {
		/* UC: discard the message, keep going (IBA). */
		SV_STAT(qe->eng, drop_uc_msg);
		qe->resp.in_msg = 0;
		qe->resp.offset = 0;
		qe->resp.psn = sv_psn_add(c->pkt->psn, 1);
		return;
	}
	/* Errors a program can make have their own line already (explain.h,
	 * the same on every path); a UC message lost in part (above) is no
	 * error of a program. */
	if (st != RESP_ERR_ACCESS && st != RESP_ERR_LOC_PROT &&
	    st != RESP_ERR_FAULT && st != RESP_ERR_RECV_FAULT &&
	    st != RESP_ERR_LOC_LEN && st != RESP_ERR_TOO_MANY_RD_ATOMIC &&
	    st != RESP_ERR_MISALIGNED_ATOMIC && st != RESP_ERR_CQ_OVERFLOW &&
	    st != RESP_ERR_INV_RKEY)
		sv_hook_explain_resp(qe, resp_state_names[st],
				     sv_opcode_name(c->pkt->opcode),
				     c->pkt->psn);
	if (st == RESP_ERR_ACCESS || st == RESP_ERR_FAULT)
		SV_STAT(qe->eng, resp_access_err);
	else
		SV_STAT(qe->eng, resp_inv_req);
	if (!c->uc) {
		/* Replies owed for earlier requests go first: the NAK
		 * implicitly acknowledges everything before its PSN. */
		while (qe->resp.reply_head != qe->resp.reply_tail &&
		       atomic_load(&qe->state) != IBV_QPS_ERR)
			sv_resp_reply_run(qe);
		if (atomic_load(&qe->state) == IBV_QPS_ERR)
			return;
		SV_STAT(qe->eng, nak_sent);
		sv_send_ack(qe, e->nak, c->pkt->psn);
		qe->resp.ack_pending = false;
		/* Out before the receive's error completion below: the
		 * program may exit as soon as it sees it (sv_qp_to_error). */
		sv_tx_flush(qe->eng);
	}
	/* The QP is in ERR before the receive's error completion can be
	 * polled (ibv_query_qp right after it says so); the flush of the
	 * rest comes after it (a work item of this pass). */
	had_wqe = qe->resp.have_wqe;
	if (had_wqe) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = qe->resp.wqe->wr_id;
		wc.status = e->wc;
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = (uint32_t)qe->resp.offset;
		wc.qp_num = qe->qpn;
		wc.src_qp = qe->dest_qpn;
		wc.vendor_err = e->wc;
		qe->resp.have_wqe = false;
	}
	sv_qp_to_error(qe, e->event);
	if (had_wqe)
		sv_push_recv_cqe(qe, &wc, false);
}

/* ---- out-of-order packets (selective retransmission) ---------------------
 *
 * What is kept is only what can be placed where it belongs without
 * executing anything: the middle and last (without immediate) packets of
 * the RDMA WRITE in progress, whose RETH was checked for the whole
 * message when its first packet came.  Each is checked again (key, bounds,
 * the region's state) and copied to the RETH address plus its offset; a
 * WRITE's memory is undefined until it completes, so placing early is
 * invisible.  Nothing is buffered: the memory is a bitmap of
 * SV_WINDOW_MAX PSNs (the most a requester has in flight).  SEND packets
 * are not kept: a SEND has no length, so a middle packet after a gap
 * might belong to a later message and land in this one's buffer. */

_Static_assert((SV_PSN_MASK + 1) % SV_WINDOW_MAX == 0,
	       "kept bits stay put across the PSN wrap");

static bool kept_test(const struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t b = psn % SV_WINDOW_MAX;

	return (qe->resp.kept[b / 64] >> (b % 64)) & 1;
}

static void kept_flip(struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t b = psn % SV_WINDOW_MAX;

	qe->resp.kept[b / 64] ^= 1ull << (b % 64);
}

static bool sack_on(const struct resp_ctx *c)
{
	return !c->uc && sv_links_sack();
}

/* The newest PSN seen ahead of the expected one. */
static void note_ahead(struct sv_qp_engine *qe, uint32_t psn)
{
	if (!qe->resp.ahead || sv_psn_diff(qe->resp.hi_psn, qe->resp.psn) < 0 ||
	    sv_psn_diff(psn, qe->resp.hi_psn) > 0)
		qe->resp.hi_psn = psn;
	qe->resp.ahead = true;
}

/* A packet after a gap: place it now if it is part of the WRITE in
 * progress (the checks chk_length would make when it comes in order). */
static void keep(struct resp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_pkt *p = c->pkt;
	uint32_t m = p->mask, pay = p->paylen;
	int32_t d = sv_psn_diff(p->psn, qe->resp.psn);
	uint64_t off = (uint64_t)d * qe->pmtu;
	struct sv_mr *mr;
	uint8_t *dst;
	bool ok;

	if (qe->resp.in_msg != SV_M_WRITE || d <= 0 || d >= SV_WINDOW_MAX ||
	    !(m & SV_M_WRITE) || (m & (SV_M_START | SV_M_IMM)) ||
	    kept_test(qe, p->psn))
		return;
	if (m & SV_M_END) {
		if (!pay || pay > qe->pmtu || off + pay != qe->resp.resid)
			return;
	} else if (pay != qe->pmtu || off + pay >= qe->resp.resid) {
		return;
	}
	mr = sv_mr_get_by_rkey(qe->resp.rkey);
	dst = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, qe->resp.va + off, pay,
			     IBV_ACCESS_REMOTE_WRITE);
	/* Anything wrong is found again, and reported, in order. */
	ok = dst && sv_dma_copy(dst, p->payload, pay);
	if (mr)
		sv_mr_put(mr);
	if (!ok)
		return;
	kept_flip(qe, p->psn);
	qe->resp.nkept++;
	if (m & SV_M_END)
		qe->resp.kept_end = true;
	SV_STAT(qe->eng, ooo_kept);
}

/* The expected PSN was just handled: move past the packets already
 * placed and acknowledge them (next_hole may turn it into a NAK of the
 * next gap). */
static void kept_advance(struct sv_qp_engine *qe)
{
	bool moved = false;

	while (qe->resp.nkept && kept_test(qe, qe->resp.psn)) {
		kept_flip(qe, qe->resp.psn);
		qe->resp.nkept--;
		moved = true;
		if (qe->resp.kept_end && qe->resp.resid <= qe->pmtu) {
			/* The WRITE's last packet: as execute() and
			 * complete() for a WRITE without immediate. */
			qe->resp.va += qe->resp.resid;
			qe->resp.resid = 0;
			qe->resp.in_msg = 0;
			qe->resp.kept_end = false;
			qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
			qe->resp.psn = sv_psn_add(qe->resp.psn, 1);
			break;
		}
		qe->resp.va += qe->pmtu;
		qe->resp.resid -= qe->pmtu;
		qe->resp.psn = sv_psn_add(qe->resp.psn, 1);
	}
	if (moved)
		set_ack(qe, SV_AETH_ACK | SV_AETH_CREDIT_INVALID,
			sv_psn_add(qe->resp.psn, SV_PSN_MASK));
}

/* After a packet in sequence: a requester that resends holes only is
 * told of the next one at once (a new gap: one NAK per gap holds), unless
 * the last NAK already asked for it.  To any other requester, which goes
 * back N and is resending everything anyway, that NAK would only send it
 * back again. */
static void next_hole(struct sv_qp_engine *qe)
{
	if (!qe->resp.ahead)
		return;
	if (sv_psn_diff(qe->resp.hi_psn, qe->resp.psn) < 0) {
		qe->resp.ahead = false; /* nothing seen beyond: no gap */
		return;
	}
	if (!qe->resp.peer_sack || qe->resp.nak_sent ||
	    sv_psn_diff(qe->resp.psn, qe->resp.nak_end) < 0)
		return;
	qe->resp.nak_sent = true;
	SV_STAT(qe->eng, send_seq_nak);
	set_ack(qe, SV_AETH_NAK_PSN_SEQ, qe->resp.psn);
}

/* PSNs missing from the expected one on: up to the first one kept, or
 * through the newest seen; at least 1, at most SV_SACK_MAX. */
static uint32_t hole(const struct sv_qp_engine *qe)
{
	uint32_t n = 0, psn = qe->resp.psn;

	if (!qe->resp.ahead || sv_psn_diff(qe->resp.hi_psn, psn) < 0)
		return 1;
	while (n < SV_SACK_MAX && sv_psn_diff(psn, qe->resp.hi_psn) <= 0 &&
	       !kept_test(qe, psn)) {
		n++;
		psn = sv_psn_add(psn, 1);
	}
	return n ? n : 1;
}

uint8_t sv_resp_sack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn)
{
	if (qe->type != IBV_QPT_RC || !sv_links_sack())
		return 0;
	/* A sequence NAK, or an ACK restating that the expected PSN is
	 * missing: how much is.  Any other ACK: "I keep packets" (1). */
	if (syndrome == SV_AETH_NAK_PSN_SEQ) {
		uint32_t n = hole(qe);

		qe->resp.nak_end = sv_psn_add(psn, n);
		return (uint8_t)n;
	}
	if ((syndrome & SV_AETH_TYPE_MASK) == SV_AETH_ACK &&
	    sv_psn_add(psn, 1) == qe->resp.psn)
		return (uint8_t)hole(qe);
	return 1;
}

static void resp_error(struct resp_ctx *c, enum resp_state st)
{
	struct sv_qp_engine *qe = c->qe;

	switch (st) {
	case RESP_ERR_PSN_OUT_OF_SEQ:
		/* IBA: one NAK per gap, then silence
		 * until the expected PSN shows up. */
		SV_STAT(qe->eng, out_of_seq_request);
		if (sack_on(c)) {
			note_ahead(qe, c->pkt->psn);
			keep(c);
		}
		if (!qe->resp.nak_sent) {
			qe->resp.nak_sent = true;
			SV_STAT(qe->eng, send_seq_nak);
			set_ack(qe, SV_AETH_NAK_PSN_SEQ, qe->resp.psn);
		} else if (sv_bth_ackreq(c->pkt->hdr)) {
			/* One NAK per gap, as IBA wants; but when the requester
			 * asks for an ACK we restate where we are with an ACK of
			 * the PSN before the expected one.  A requester ignores
			 * it as a duplicate, or (ours) resends at once instead of
			 * waiting for its timer when the NAK or the resend was
			 * lost. */
			SV_STAT(qe->eng, dup_ack_sent);
			set_ack(qe, SV_AETH_ACK | SV_AETH_CREDIT_INVALID,
				sv_psn_add(qe->resp.psn, SV_PSN_MASK));
		}
		return;
	case RESP_ERR_RNR:
		if (c->uc) {
			SV_STAT(qe->eng, drop_uc_msg);
			qe->resp.psn = sv_psn_add(c->pkt->psn, 1);
			return;
		}
		/* Until the requester comes back to this PSN, later packets
		 * are out of sequence and answered by this NAK. */
		SV_STAT(qe->eng, send_rnr_err);
		SV_QSTAT(qe, rnr_sent);
		qe->resp.nak_sent = true;
		set_ack(qe, SV_AETH_RNR_NAK | qe->min_rnr_timer, c->pkt->psn);
		return;
	default:
		resp_fatal(c, st);
		return;
	}
}

/* ---- the machine -------------------------------------------------------- */

typedef enum resp_state (*resp_fn)(struct resp_ctx *c);

static const resp_fn resp_states[RESP_NUM_STATES] = {
	[RESP_CHK_PSN] = chk_psn,	    [RESP_CHK_OP_SEQ] = chk_op_seq,
	[RESP_CHK_OP_VALID] = chk_op_valid, [RESP_CHK_RESOURCE] = chk_resource,
	[RESP_CHK_LENGTH] = chk_length,	    [RESP_CHK_RKEY] = chk_rkey,
	[RESP_EXECUTE] = execute,	    [RESP_READ_REPLY] = read_reply,
	[RESP_ATOMIC_REPLY] = atomic_reply, [RESP_COMPLETE] = complete,
	[RESP_ACKNOWLEDGE] = acknowledge,   [RESP_DUPLICATE] = duplicate,
};

void sv_resp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		const struct sv_flow *flow)
{
	struct resp_ctx c = {
		.qe = qe, .pkt = pkt, .flow = flow, .uc = qe->type == IBV_QPT_UC
	};
	int state = atomic_load(&qe->state);
	enum resp_state s;

	/* IBA: requests are accepted from RTR on; RESET, INIT and
	 * ERR drop them silently. */
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	    state == IBV_QPS_ERR) {
		SV_STAT(qe->eng, drop_qp_state);
		if (qe->type == IBV_QPT_RC)
			sv_hook_explain_state_drop(qe, state);
		return;
	}
	/* Taken: a later drop in another state is said again. */
	if (qe->said_drop_state)
		qe->said_drop_state = 0;
	if (qe->type == IBV_QPT_UD)
		return sv_ud_rx(qe, pkt, flow);
	/* A forced retry-exceeded (inject.c): duplicates of what came
	 * before are still answered, nothing new is. */
	if (qe->resp.mute && sv_psn_diff(pkt->psn, qe->resp.psn) >= 0)
		return;
	if (state == IBV_QPS_RTR && !qe->comm_est)
		sv_qp_comm_est(qe);
	if (!c.uc && sv_links_sack())
		qe->resp.peer_sack = sv_bth_resv7(pkt->hdr) != 0;
	s = RESP_CHK_PSN;
	while (s != RESP_DONE) {
		if (s >= RESP_ERR_PSN_OUT_OF_SEQ) {
			resp_error(&c, s);
			return;
		}
		s = resp_states[s](&c);
	}
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return;
	if (qe->resp.nkept)
		kept_advance(qe);
	next_hole(qe);
}

/* ---- replies --------------------------------------------------------------- */

static void send_read_resp(struct sv_qp_engine *qe, struct sv_reply *r,
			   unsigned int *budget)
{
	while (*budget) {
		uint32_t pay = r->resid > qe->pmtu ? qe->pmtu : r->resid;
		bool first = r->psn == r->first_psn, last = pay == r->resid;
		uint8_t op = first && last ? SV_OP_RC_RDMA_READ_RESPONSE_ONLY :
			     first	   ? SV_OP_RC_RDMA_READ_RESPONSE_FIRST :
			     last	   ? SV_OP_RC_RDMA_READ_RESPONSE_LAST :
					     SV_OP_RC_RDMA_READ_RESPONSE_MIDDLE;
		const struct sv_opinfo *info = &sv_opinfo[op];
		struct sv_tx *t = sv_tx_get(qe->eng);
		uint8_t *b = sv_tx_hdr(qe, t, op, r->psn, pay);

		if (info->mask & SV_M_AETH) {
			uint8_t *h = b + info->offset[SV_HDR_AETH];

			sv_aeth_set_syndrome(h, SV_AETH_ACK |
							SV_AETH_CREDIT_INVALID);
			sv_aeth_set_msn(h, r->msn);
		}
		if (pay) {
			struct sv_mr *mr = sv_mr_get_by_rkey(r->rkey);
			uint8_t *src =
				sv_mr_check_qp(mr, qe->qp, r->pd, r->va, pay,
					       IBV_ACCESS_REMOTE_READ);

			if (!src) {
				/* Deregistered since the request was
				 * checked: the READ fails remotely. */
				sv_hook_explain_access(qe, r->rkey, r->va, pay,
						       IBV_ACCESS_REMOTE_READ,
						       mr, r->pd);
				if (mr)
					sv_mr_put(mr);
				SV_STAT(qe->eng, resp_access_err);
				SV_STAT(qe->eng, nak_sent);
				sv_send_ack(qe, SV_AETH_NAK_REM_ACCESS, r->psn);
				sv_qp_to_error(qe, IBV_EVENT_QP_ACCESS_ERR);
				return;
			}
			if (!sv_dma_copy(b + info->length, src, pay)) {
				/* A page of the source faulted: as an HCA's
				 * protection fault on a READ. */
				sv_mr_put(mr);
				sv_dma_fault_report(qe, "RDMA READ source");
				SV_STAT(qe->eng, resp_access_err);
				SV_STAT(qe->eng, nak_sent);
				sv_send_ack(qe, SV_AETH_NAK_REM_ACCESS, r->psn);
				sv_qp_to_error(qe, IBV_EVENT_QP_ACCESS_ERR);
				return;
			}
			sv_mr_put(mr);
		}
		sv_tx_finish(qe, t);
		r->psn = sv_psn_add(r->psn, 1);
		r->va += pay;
		r->resid -= pay;
		(*budget)--;
		if (last) {
			qe->resp.reply_head++;
			return;
		}
	}
}

void sv_resp_reply_run(struct sv_qp_engine *qe)
{
	unsigned int budget = SV_REPLY_BUDGET;

	while (qe->resp.reply_head != qe->resp.reply_tail && budget) {
		struct sv_reply *r =
			&qe->resp.replies[qe->resp.reply_head % SV_REPLY_Q];

		if (r->type == SV_RES_ATOMIC) {
			struct sv_tx *t = sv_tx_get(qe->eng);
			uint8_t *b = sv_tx_hdr(
				qe, t, SV_OP_RC_ATOMIC_ACKNOWLEDGE, r->psn, 0);
			const struct sv_opinfo *info =
				&sv_opinfo[SV_OP_RC_ATOMIC_ACKNOWLEDGE];

			sv_aeth_set_syndrome(b + info->offset[SV_HDR_AETH],
					     SV_AETH_ACK |
						     SV_AETH_CREDIT_INVALID);
			sv_aeth_set_msn(b + info->offset[SV_HDR_AETH], r->msn);
			sv_atmack_set_orig(b + info->offset[SV_HDR_ATMACK],
					   r->orig);
			sv_tx_finish(qe, t);
			qe->resp.reply_head++;
			budget--;
			continue;
		}
		send_read_resp(qe, r, &budget);
		if (atomic_load(&qe->state) == IBV_QPS_ERR)
			return;
	}
	if (qe->resp.reply_head != qe->resp.reply_tail)
		sv_work_add(qe, SV_WORK_REPLY);
	else if (qe->resp.ack_pending)
		sv_work_add(qe, SV_WORK_ACK);
}

void sv_resp_ack_flush(struct sv_qp_engine *qe)
{
	if (!qe->resp.ack_pending || qe->resp.reply_head != qe->resp.reply_tail)
		return;
	qe->resp.ack_pending = false;
	sv_send_ack(qe, qe->resp.ack_syndrome, qe->resp.ack_psn);
}

void sv_resp_reset(struct sv_qp_engine *qe)
{
	uint32_t i;

	qe->resp.in_msg = 0;
	qe->resp.nak_sent = false;
	qe->resp.have_wqe = false;
	qe->resp.offset = 0;
	qe->resp.resid = 0;
	qe->resp.ack_pending = false;
	qe->resp.reply_head = qe->resp.reply_tail = 0;
	qe->resp.res_next = 0;
	qe->resp.msn = 0;
	qe->resp.inj_seen = false;
	qe->resp.mute = false;
	memset(qe->resp.kept, 0, sizeof(qe->resp.kept));
	qe->resp.nkept = 0;
	qe->resp.kept_end = false;
	qe->resp.ahead = false;
	qe->resp.peer_sack = false;
	for (i = 0; i < SV_MAX_RD_ATOMIC; i++)
		qe->resp.res[i].type = SV_RES_NONE;
}

const char *sv_resp_state_name(int s)
{
	return s >= 0 && s < RESP_NUM_STATES ? resp_state_names[s] : "?";
}
