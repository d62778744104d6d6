/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The XRC transport (IBA Annex A14) on top of the RC machines.
 *
 * An XRC initiator (XRC_SEND QP) is an RC requester and completer whose
 * requests carry an XRCETH naming the remote XRC SRQ; an XRC target
 * (XRC_RECV QP) is an RC responder that takes its receive WQEs from that
 * SRQ, completes them on the SRQ's CQ and checks R_Keys against the SRQ's
 * PD.  XRC opcodes are their RC twins plus 0xa0, with the same headers,
 * plus the XRCETH right after the BTH of requests.
 *
 * So the engine runs XRC QPs as RC (qp.c gives them the RC type) and
 * this file translates at the edges: sv_xrc_tx turns a packet built as RC
 * into XRC before its ICRC is computed, sv_xrc_rx turns a received XRC
 * packet (ICRC already checked) into its RC twin and hands it to the
 * completer, or, for a target, to the responder with the QP pointed at
 * the SRQ the request names.
 */
#include "core/xrc.h"
#include "engine/transport/comp.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/resp.h"
#include "engine/transport/stats.h"
#include "engine/transport/xmit.h"
#include "engine/transport/xrc.h"
#include "engine/transport/forward.h"
#include "util/log.h"

/* The largest XRC packet still fits the transmit buffer. */
_Static_assert(SV_BTH_BYTES + SV_XRCETH_BYTES + SV_RETH_BYTES + SV_IMMDT_BYTES +
			       SV_MAX_PMTU + SV_ICRC_BYTES <=
		       SV_MAX_PKT,
	       "XRC packets must fit SV_MAX_PKT");

/* The WQE a request packet belongs to: usually the requester's current
 * WQE, else (a probe, a rewind) one of the outstanding ones. */
static const struct sv_send_wqe *wqe_of(struct sv_qp_engine *qe, uint32_t psn)
{
	struct sv_qp *qp = qe->qp;
	const struct sv_send_wqe *w;

	if ((int32_t)(qe->req.idx - qe->comp.idx) >= 0 &&
	    (int32_t)(sv_sq_tail(qe) - qe->req.idx) > 0) {
		w = sv_wq_at(&qp->sq, qe->req.idx);
		if (sv_wqe_holds_psn(w, psn))
			return w;
	}
	return sv_wqe_of_psn(qe, psn);
}

void sv_xrc_tx(struct sv_qp_engine *qe, struct sv_tx *t)
{
	uint8_t *b = t->buf;
	uint8_t op = (uint8_t)sv_bth_opcode(b);
	const struct sv_opinfo *info = &sv_opinfo[op];
	const struct sv_send_wqe *w;

	if (!(info->mask & SV_M_RC))
		return;
	sv_bth_set_opcode(b, op + SV_XRC_OP_BASE);
	if (!(info->mask & SV_M_REQ))
		return; /* a target's ACKs and responses: the opcode only */
	/* A request carries the XRC SRQ number of its WQE in the XRCETH. */
	w = wqe_of(qe, (uint32_t)sv_bth_psn(b));
	memmove(b + SV_BTH_BYTES + SV_XRCETH_BYTES, b + SV_BTH_BYTES,
		t->len - SV_BTH_BYTES - SV_ICRC_BYTES);
	t->len += SV_XRCETH_BYTES;
	memset(b + SV_BTH_BYTES, 0, SV_XRCETH_BYTES);
	/* (No WQE would be a requester bug; SRQ 0 names none, and the
	 * target refuses it.) */
	sv_xrceth_set_srqn(b + SV_BTH_BYTES, w ? w->xrc_srqn : 0);
}

/* The packet as its RC twin: the XRCETH taken out (the BTH moves over
 * it), the opcode less 0xa0.  The lengths stay consistent, so parsing
 * again cannot fail; it re-derives every field. */
static bool to_rc(struct sv_pkt *pkt)
{
	uint8_t op = pkt->opcode - SV_XRC_OP_BASE;
	uint8_t *hdr = pkt->hdr;
	uint32_t len = pkt->len;

	if (pkt->mask & SV_M_XRCETH) {
		memmove(hdr + SV_XRCETH_BYTES, hdr, SV_BTH_BYTES);
		hdr += SV_XRCETH_BYTES;
		len -= SV_XRCETH_BYTES;
	}
	sv_bth_set_opcode(hdr, op);
	return sv_pkt_parse(pkt, hdr, len) == SV_PKT_OK;
}

/* A request naming no XRC SRQ of the target's domain, or another SRQ in
 * the middle of a message (IBA A14: an invalid request): NAKed once at
 * the expected PSN, and the QP goes to ERR. */
static void bad_srq(struct sv_qp_engine *qe, struct sv_pkt *pkt, uint32_t srqn)
{
	int state = atomic_load(&qe->state);

	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT ||
	    state == IBV_QPS_ERR) {
		SV_STAT(qe->eng, drop_qp_state);
		return;
	}
	if (sv_psn_diff(pkt->psn, qe->resp.psn) != 0)
		return; /* duplicates and gaps are not answered for it */
	sv_dbg("qp 0x%06x: XRC request for SRQ 0x%06x, not in its domain",
	       qe->qpn, srqn);
	SV_STAT(qe->eng, resp_inv_req);
	SV_STAT(qe->eng, nak_sent);
	sv_send_ack(qe, SV_AETH_NAK_INVALID, pkt->psn);
	sv_qp_to_error(qe, IBV_EVENT_QP_REQ_ERR);
}

/* A request that takes a receive WQE at this packet (the SEND's first,
 * a WRITE with immediate's only packet) and will be executed: the PSN
 * expected, the QP able to receive, no WQE held. */
static bool takes_wqe(struct sv_qp_engine *qe, const struct sv_pkt *pkt)
{
	uint32_t m = pkt->mask;
	int state = atomic_load(&qe->state);

	return (m & SV_M_RWR) && (m & SV_M_START) &&
	       ((m & SV_M_SEND) || (m & SV_M_END)) && !qe->resp.have_wqe &&
	       !qe->resp.in_msg && sv_psn_diff(pkt->psn, qe->resp.psn) == 0 &&
	       (state == IBV_QPS_RTR || state == IBV_QPS_RTS);
}

/* A request naming an SRQ of another process sharing the domain's file:
 * the responder runs here (PSNs, ACKs, NAKs), its receive WQE is that
 * process's (xrcfwd.h).  The WQE is asked for before the responder runs,
 * so that a number no process serves is refused as any other, and an
 * empty SRQ there is the responder's RNR here. */
static void remote_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		      const struct sv_flow *flow, uint32_t srqn)
{
	struct sv_qp *qp = qe->qp;

	/* A message half received keeps the SRQ it started with. */
	if (qp->xrc_hold || (qp->xrc_rwqe && qp->xrc_rsrqn != srqn)) {
		bad_srq(qe, pkt, srqn);
		return;
	}
	qp->xrc_rsrqn = srqn;
	if (takes_wqe(qe, pkt) && sv_xrcfwd_take(qe, srqn) == SV_XRCFWD_GONE) {
		qp->xrc_rsrqn = 0;
		bad_srq(qe, pkt, srqn);
		return;
	}
	sv_resp_rx(qe, pkt, flow);
	if (!qp->xrc_rwqe)
		qp->xrc_rsrqn = 0;
}

static void tgt_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		   const struct sv_flow *flow, uint32_t srqn)
{
	struct sv_qp *qp = qe->qp;
	struct sv_srq *srq = sv_xrc_srq_get(qp->xrcd, srqn);

	/* A message half received keeps the SRQ it started with. */
	if (srq && ((qp->xrc_hold && srq != qp->xrc_hold) || qp->xrc_rwqe)) {
		sv_xrc_srq_put(srq);
		bad_srq(qe, pkt, srqn);
		return;
	}
	if (!srq) {
		/* Not ours: another process's, if the domain is a file's
		 * (shared) and the number is not one of ours. */
		if (qp->xrcd->by_inode && !sv_xrc_srqn_ours(srqn))
			remote_rx(qe, pkt, flow, srqn);
		else
			bad_srq(qe, pkt, srqn);
		return;
	}
	qp->srq = srq;
	qp->pd = srq->pd;
	qp->rcq = srq->cq;
	sv_resp_rx(qe, pkt, flow);
	/* A receive WQE taken and not yet completed: the SRQ (and its CQ,
	 * which a flush may complete the WQE on) must stay. */
	if (qe->resp.have_wqe && !qp->xrc_hold) {
		atomic_fetch_add(&srq->users, 1);
		qp->xrc_hold = srq;
	} else if (!qe->resp.have_wqe && qp->xrc_hold) {
		atomic_fetch_sub(&qp->xrc_hold->users, 1);
		qp->xrc_hold = NULL;
	}
	if (!qp->xrc_hold) {
		qp->srq = NULL;
		qp->pd = NULL;
		qp->rcq = NULL;
	}
	sv_xrc_srq_put(srq);
}

void sv_xrc_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	       const struct sv_flow *flow)
{
	bool req = (pkt->mask & SV_M_REQ) != 0;
	uint32_t srqn = 0;

	/* An initiator only receives responses, a target only requests. */
	if (req != (qe->qp->type == IBV_QPT_XRC_RECV)) {
		SV_STAT(qe->eng, drop_transport);
		return;
	}
	if (req)
		srqn = (uint32_t)sv_xrceth_srqn(sv_pkt_h(pkt, SV_HDR_XRCETH));
	if (!to_rc(pkt)) {
		SV_STAT(qe->eng, drop_malformed);
		return;
	}
	if (req)
		tgt_rx(qe, pkt, flow, srqn);
	else
		sv_comp_rx(qe, pkt);
}
