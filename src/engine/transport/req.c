/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The requester: walks the send queue from req.idx and turns WQEs into
 * request packets.
 *
 * Each WQE goes PENDING -> ACTIVE (its PSN range is fixed when it starts)
 * -> SENT (all of it went out once; RC: the completer finishes it) or ->
 * DONE (UC/UD: complete once sent).  req.psn is the next PSN to send and
 * req.idx the WQE holding it; req.max_psn is the next PSN never sent.
 * Going back N only moves req.psn/req.idx back: the WQEs keep their PSN
 * ranges and states, and the packets are rebuilt from the offset the PSN
 * implies, so an ACK for PSNs sent before the rewind still completes them.  Before a WQE starts, the
 * requester checks, in this order, the conditions that make it wait:
 *   drain (SQD starts nothing new), fence (IBV_SEND_FENCE waits for prior
 *   READ/ATOMIC, IBA), the max_rd_atomic limit on outstanding
 *   READ/ATOMIC (IBA), then its local SGEs (lkey, PD, bounds, local
 *   write for READ/ATOMIC results: IBV_WC_LOC_PROT_ERR when bad).
 * An ACTIVE WQE sends packets while the window of un-ACKed PSNs has room.
 * READs are requested in chunks (each chunk is an ordinary READ request
 * with its own VA and length, IBA), inside the congestion window, so a
 * huge READ cannot flood the requester's socket with responses.
 *
 * How much is in flight is limited by a congestion window (cwnd, AIMD
 * with slow start as in TCP NewReno, halved once per loss episode: comp.c)
 * inside the window the peer's socket buffer allows.
 */
#include "core/mw.h"
#include "engine/transport/comp.h"
#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/req.h"
#include "engine/transport/sgl.h"
#include "engine/transport/xmit.h"
#include "util/env.h"
#include "util/log.h"

static uint32_t npkts(uint64_t len, uint32_t pmtu)
{
	return len ? (uint32_t)((len + pmtu - 1) / pmtu) : 1;
}

/* Operations of the send queue that send nothing (memory windows). */
/* SEND/WRITE opcodes by position (IBA opcode table); UC is RC + 0x20. */
static uint8_t data_opcode(struct sv_qp_engine *qe, uint32_t op, bool first,
			   bool last)
{
	uint8_t base = qe->type == IBV_QPT_UC ? 0x20 : 0x00;
	bool imm =
		op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint8_t c;

	/* SEND with Invalidate exists for RC only (post_send refuses it on
	 * UC): the IETH rides on its last packet. */
	if (op == IBV_WR_SEND_WITH_INV && last)
		return first ? SV_OP_RC_SEND_ONLY_WITH_INVALIDATE :
			       SV_OP_RC_SEND_LAST_WITH_INVALIDATE;
	/* IBA 1.5 ATOMIC WRITE: always one packet, RC only. */
	if (op == IBV_WR_ATOMIC_WRITE)
		return SV_OP_RC_ATOMIC_WRITE;
	if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	    op == IBV_WR_SEND_WITH_INV) {
		if (first && last)
			c = imm ? SV_OP_RC_SEND_ONLY_WITH_IMMEDIATE :
				  SV_OP_RC_SEND_ONLY;
		else if (first)
			c = SV_OP_RC_SEND_FIRST;
		else if (last)
			c = imm ? SV_OP_RC_SEND_LAST_WITH_IMMEDIATE :
				  SV_OP_RC_SEND_LAST;
		else
			c = SV_OP_RC_SEND_MIDDLE;
	} else {
		if (first && last)
			c = imm ? SV_OP_RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE :
				  SV_OP_RC_RDMA_WRITE_ONLY;
		else if (first)
			c = SV_OP_RC_RDMA_WRITE_FIRST;
		else if (last)
			c = imm ? SV_OP_RC_RDMA_WRITE_LAST_WITH_IMMEDIATE :
				  SV_OP_RC_RDMA_WRITE_LAST;
		else
			c = SV_OP_RC_RDMA_WRITE_MIDDLE;
	}
	return (uint8_t)(base + c);
}

static uint32_t in_flight(struct sv_qp_engine *qe)
{
	int32_t d = sv_psn_diff(qe->req.psn, qe->comp.psn);

	return d > 0 ? (uint32_t)d : 0;
}

/* The packets the QP may have in flight this run: its congestion window;
 * to a peer on this host, no more than it has while the peer's ring is
 * over half full (at least SV_WINDOW_MIN).  Every QP of every process
 * sending to that peer fills the one ring, and a full ring loses what
 * does not fit (the transport then resends whole windows: 8 QPs of a
 * messenger streaming both ways lost hundreds of packets a second);
 * the ACKs that come as the peer drains it run us again. */
static void set_window(struct sv_qp_engine *qe)
{
	uint32_t held = in_flight(qe);

	qe->req.win = 0;
	if (qe->shm && held < qe->cwnd &&
	    !sv_shm_peer_room(qe->shm, SV_SHM_SLOTS / 2)) {
		SV_STAT(qe->eng, shm_ring_holds);
		qe->req.win = held > SV_WINDOW_MIN ? held : SV_WINDOW_MIN;
	}
}

/* 0: no hold (a probe or resend outside a run goes by cwnd). */
static uint32_t window(const struct sv_qp_engine *qe)
{
	return qe->req.win && qe->req.win < qe->cwnd ? qe->req.win : qe->cwnd;
}

/* Start the ACK timer when the first un-ACKed packet leaves (IBA: the
 * timer runs while responses are outstanding). */
static void arm_timer(struct sv_qp_engine *qe)
{
	if (qe->type != IBV_QPT_RC)
		return;
	if (!qe->comp.probe)
		sv_probe_arm(qe, false);
	if (qe->comp.deadline || !qe->comp.timeout_ns)
		return;
	qe->comp.deadline = sv_eng_now(qe->eng) + qe->comp.timeout_ns;
	sv_qp_timer_arm(qe, qe->comp.deadline);
}

static void local_error(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
			enum ibv_wc_status status)
{
	/* The completer reports it once every earlier WQE is complete, so
	 * completions stay in order; nothing more is sent meanwhile. */
	sv_hook_explain_wqe(qe, wqe, status);
	wqe->state = SV_WQE_ERROR;
	wqe->status = status;
	qe->req.blocked = true;
	sv_comp_retire(qe);
}

/* A packet's payload from the WQE's SGL (nonzero: LOC_PROT_ERR). */
static enum sv_sgl_err gather(struct sv_qp_engine *qe,
			      const struct sv_send_wqe *wqe, uint64_t off,
			      uint8_t *dst, uint32_t len)
{
	enum sv_sgl_err e = sv_sgl_copy(qe->qp->pd, wqe->sge, wqe->num_sge, off,
					dst, len, false);

	if (e == SV_SGL_FAULT)
		sv_dma_fault_report(qe, "payload from a local buffer");
	return e;
}

/* A packet with PSN req.psn went out. */
static void psn_sent(struct sv_qp_engine *qe, uint32_t n)
{
	qe->req.psn = sv_psn_add(qe->req.psn, n);
	if (sv_psn_diff(qe->req.psn, qe->req.max_psn) > 0)
		qe->req.max_psn = qe->req.psn;
}

/* The packet with PSN req.psn went out again.  Karn's rule, for
 * cumulative ACKs: the ACK of the PSN being timed could now answer either
 * copy of it, or have waited for the resend of an earlier PSN (a hole
 * being filled), so it gives no sample.  If the responder had it, it
 * answers with a duplicate ACK (comp.c, dup_ack), which is owed. */
static void resent(struct sv_qp_engine *qe)
{
	SV_STAT(qe->eng, retrans_pkts);
	sv_rtt_forget(&qe->comp.rtt_sent, qe->req.psn);
	if (qe->comp.dup_owed < SV_DUP_OWED_MAX)
		qe->comp.dup_owed++;
	qe->comp.dup_mark = qe->req.max_psn;
}

/* Move req past a WQE: the next PSN is the one after its range. */
static void wqe_passed(struct sv_qp_engine *qe, struct sv_send_wqe *wqe)
{
	uint32_t next = sv_psn_add(wqe->last_psn, 1);

	if (sv_psn_diff(next, qe->req.psn) > 0)
		qe->req.psn = next;
	qe->req.idx++;
}

static void wqe_sent(struct sv_qp_engine *qe, struct sv_send_wqe *wqe)
{
	/* UC and UD have no acknowledgements: done once on the wire. */
	if (wqe->state == SV_WQE_ACTIVE)
		wqe->state = qe->type == IBV_QPT_RC ? SV_WQE_SENT : SV_WQE_DONE;
	wqe_passed(qe, wqe);
}

/* Byte offset in the WQE of the packet with PSN req.psn. */
/* Is the end of this message worth an ACK of its own?  Over UDP always
 * (what the wire has always carried).  On shm, an unsignaled message has
 * no completion anyone waits for (its SQ slot is given back by a later
 * completion), so its ACK can wait for the next AckReq (a signaled
 * message, a quarter window, a full window) or the probe: a stream of
 * unsignaled SENDs then costs the responder and us an ACK per quarter
 * window instead of one per message.  IBA lets the requester choose.
 * Unless the WQE after it is already posted and is an RDMA WRITE, READ or
 * atomic: one-copy placement runs those only once everything before them
 * is acknowledged (paths/direct.c), and a READ or atomic needs that ACK
 * anyway, so no later packet would ask for it (UCX's rendezvous: a few
 * unsignaled SENDs, then a signaled READ, waited for the probe).  And
 * unless it is the last WQE posted: no later packet may come to ask, and
 * the probe that would (a resend, after at least 500 us) fired in every
 * ping-pong of unsignaled SENDs whose process was descheduled that long
 * (UCX's tag_lat over rc_verbs: dozens of probe_retransmit a run). */
static bool ack_at_end(struct sv_qp_engine *qe, const struct sv_send_wqe *wqe)
{
	uint32_t next = qe->req.idx + 1;

	if (!qe->shm || qe->qp->sq_sig_all ||
	    (wqe->send_flags & IBV_SEND_SIGNALED) || next == sv_sq_tail(qe))
		return true;
	return sv_wr_is(
		((struct sv_send_wqe *)sv_wq_at(&qe->qp->sq, next))->opcode,
		SV_WR_WRITE | SV_WR_READ | SV_WR_ATOMIC);
}

static uint64_t wqe_off(struct sv_qp_engine *qe, const struct sv_send_wqe *wqe)
{
	return (uint64_t)(uint32_t)sv_psn_diff(qe->req.psn, wqe->first_psn) *
	       qe->pmtu;
}

/* SEND, RDMA WRITE and ATOMIC WRITE packets; false when the WQE could not
 * finish. */
static bool send_data(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		      unsigned int *budget)
{
	bool rc = qe->type == IBV_QPT_RC;

	do {
		uint64_t off = wqe_off(qe, wqe);
		uint64_t rest = wqe->length > off ? wqe->length - off : 0;
		uint32_t pay = rest > qe->pmtu ? qe->pmtu : (uint32_t)rest;
		bool first = off == 0, last = pay == rest;
		uint8_t op = data_opcode(qe, wqe->opcode, first, last);
		const struct sv_opinfo *info = &sv_opinfo[op];
		struct sv_tx *t;
		uint8_t *b;

		if (!*budget)
			return false;
		if (rc && in_flight(qe) >= window(qe))
			return false;
		t = sv_tx_get(qe->eng);
		b = sv_tx_hdr(qe, t, op, qe->req.psn, pay);
		t->stream = rc && in_flight(qe) >= SV_TX_HOLD_FLIGHT;
		if (info->mask & SV_M_RETH) {
			uint8_t *h = b + info->offset[SV_HDR_RETH];

			sv_reth_set_va(h, wqe->wr.rdma.remote_addr);
			sv_reth_set_rkey(h, wqe->wr.rdma.rkey);
			sv_reth_set_len(h, wqe->length);
		}
		if (info->mask & SV_M_IMMDT)
			memcpy(b + info->offset[SV_HDR_IMMDT], &wqe->imm_data,
			       4);
		if (info->mask & SV_M_IETH)
			sv_ieth_set_rkey(b + info->offset[SV_HDR_IETH],
					 wqe->invalidate_rkey);
		if (pay) {
			if (wqe->send_flags & IBV_SEND_INLINE)
				memcpy(b + info->length, wqe->inline_data + off,
				       pay);
			else if (gather(qe, wqe, off, b + info->length, pay)) {
				/* The MR went away under the WQE. */
				local_error(qe, wqe, IBV_WC_LOC_PROT_ERR);
				return false;
			}
		}
		/* Tell a softverbs responder we resend holes only (wire.h,
		 * SV_SACK_MAX; reserved bits to anyone else). */
		if (rc && sv_links_sack())
			sv_bth_set_resv7(b, 1);
		/* IBA: Solicited Event on the last packet only. */
		if (last && (wqe->send_flags & IBV_SEND_SOLICITED) &&
		    (info->mask & (SV_M_SEND | SV_M_IMM)))
			sv_bth_set_se(b, 1);
		if (rc) {
			qe->req.since_ackreq++;
			/* Ask for an ACK at the end of a message and a few
			 * times per window so the window keeps moving. */
			if ((last && ack_at_end(qe, wqe)) || qe->req.probing ||
			    qe->req.since_ackreq >= window(qe) / 4 ||
			    in_flight(qe) + 1 >= window(qe)) {
				sv_bth_set_ackreq(b, 1);
				qe->req.since_ackreq = 0;
				/* Timed (engine/transport/rtt.h), never a resend
				 * (Karn): its ACK could answer either copy. */
				if (qe->req.psn == qe->req.max_psn)
					sv_rtt_sent(&qe->comp.rtt_sent,
						    qe->req.psn,
						    sv_eng_now(qe->eng));
			}
		}
		sv_tx_finish(qe, t);
		if (rc && sv_psn_diff(qe->req.psn, qe->req.max_psn) < 0)
			resent(qe);
		psn_sent(qe, 1);
		if (off + pay > wqe->sent)
			wqe->sent = off + pay;
		(*budget)--;
		arm_timer(qe);
		if (last)
			return true;
	} while (1);
}

/* A READ WQE remembers how far it has been requested (in atomic_result,
 * unused by READs and zeroed by post_send; kept across rewinds).  A
 * responder answers a duplicate READ only inside the one request it
 * executed (rxe drops any other silently, IBA lets it), and we cannot
 * know which of our sends of a chunk that was.  So every send of a
 * chunk ends where its first did (recorded in req.rd until it is
 * answered): a retry asks for the whole rest of it whatever the window
 * (a shorter retry the responder took as new would make the next full
 * one unanswerable: interop.loss saw rxe execute a one-packet retry of
 * a five-packet chunk, then drop its five-packet resend until retry_cnt
 * ran out); past rd_end, chunks are new requests. */
#define rd_end atomic_result

/* Where the chunk of wqe holding byte `from` ends, if a later chunk
 * followed it and it is not yet answered in full (0: none such). */
static uint64_t chunk_end(const struct sv_qp_engine *qe,
			  const struct sv_send_wqe *wqe, uint64_t from)
{
	for (uint32_t i = 0; i < qe->req.rd_n; i++) {
		uint32_t k = (qe->req.rd_head + i) % SV_RD_CHUNKS;

		if (qe->req.rd[k].wqe == wqe && qe->req.rd[k].end > from)
			return qe->req.rd[k].end;
	}
	return 0;
}

void sv_req_read_answered(struct sv_qp_engine *qe, const struct sv_send_wqe *w)
{
	while (qe->req.rd_n && qe->req.rd[qe->req.rd_head].wqe == w &&
	       w->read_done >= qe->req.rd[qe->req.rd_head].end) {
		qe->req.rd_head = (qe->req.rd_head + 1) % SV_RD_CHUNKS;
		qe->req.rd_n--;
		qe->req.rd_reqs--;
	}
}

/* One chunk of an RDMA READ; true when the whole WQE is requested.
 * A new chunk is as many packets as the congestion window has room
 * for, at most half a window, and goes once there is room for half the
 * window (or for the rest) and the responder has a resource for it, so
 * that two chunks are in flight while the window is open: one chunk at
 * a time waited a round trip per chunk (MTU 1500 between namespaces,
 * 128 KiB chunks: ib_read_bw 1 MiB at half its 64 KiB rate).  A resend
 * asks for the rest of the chunk it falls in, as recorded. */
static bool send_read(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		      unsigned int *budget)
{
	uint32_t max = qe->window / 2 ? qe->window / 2 : 1, room, pkts, len;
	uint32_t max_rd = qe->max_rd_atomic ? qe->max_rd_atomic : 1;
	uint64_t end;
	struct sv_tx *t;
	uint8_t *b, *h;
	bool fresh, prev_done = false;

	/* Resending (after going back): ask again from this PSN on. */
	if (wqe_off(qe, wqe) < wqe->sent)
		wqe->sent = wqe_off(qe, wqe);
	if (wqe->sent < wqe->read_done) {
		/* Responses to an earlier request went further than the
		 * one we made since: go on from there. */
		wqe->sent = wqe->read_done;
		qe->req.psn = sv_psn_add(wqe->first_psn,
					 (uint32_t)(wqe->read_done / qe->pmtu));
	}
	if (wqe->sent == wqe->length && wqe->length)
		return true;
	room = window(qe) > in_flight(qe) ? window(qe) - in_flight(qe) : 0;
	if (room > max)
		room = max;
	if (!room || !*budget)
		return false;
	fresh = wqe->sent >= wqe->rd_end;
	if (fresh) {
		uint32_t rest = npkts(wqe->length - wqe->sent, qe->pmtu);
		uint32_t want = window(qe) / 2 ? window(qe) / 2 : 1;

		if (want > max)
			want = max;
		if (want > rest)
			want = rest;
		/* A chunk after the first: the one before it is answered,
		 * and its resource free with this request, or is recorded
		 * until it is. */
		prev_done = wqe->sent && wqe->read_done >= wqe->sent;
		if (qe->req.rd_reqs - prev_done >= max_rd || room < want ||
		    (wqe->sent && !prev_done && qe->req.rd_n == SV_RD_CHUNKS))
			return false;
		pkts = room < rest ? room : rest;
		end = wqe->sent + (uint64_t)pkts * qe->pmtu;
		if (end > wqe->length)
			end = wqe->length;
	} else {
		/* Whatever the window: a responder answers a duplicate READ
		 * only inside the one request it executed (rxe drops any
		 * other silently, IBA lets it). */
		end = chunk_end(qe, wqe, wqe->sent);
		if (!end)
			end = wqe->rd_end;
	}
	len = (uint32_t)(end - wqe->sent);
	t = sv_tx_get(qe->eng);
	b = sv_tx_hdr(qe, t, SV_OP_RC_RDMA_READ_REQUEST, qe->req.psn, 0);
	h = b + sv_opinfo[SV_OP_RC_RDMA_READ_REQUEST].offset[SV_HDR_RETH];
	sv_reth_set_va(h, wqe->wr.rdma.remote_addr + wqe->sent);
	sv_reth_set_rkey(h, wqe->wr.rdma.rkey);
	sv_reth_set_len(h, len);
	sv_bth_set_ackreq(b, 1);
	sv_tx_finish(qe, t);
	if (sv_psn_diff(qe->req.psn, qe->req.max_psn) < 0)
		resent(qe);
	psn_sent(qe, npkts(len, qe->pmtu));
	if (fresh && wqe->sent && !prev_done) {
		uint32_t k = (qe->req.rd_head + qe->req.rd_n) % SV_RD_CHUNKS;

		qe->req.rd[k].wqe = wqe;
		qe->req.rd[k].end = wqe->sent;
		qe->req.rd_n++;
	}
	if (fresh && !prev_done)
		qe->req.rd_reqs++;
	wqe->sent = end;
	if (wqe->sent > wqe->rd_end)
		wqe->rd_end = wqe->sent;
	(*budget)--;
	arm_timer(qe);
	return wqe->sent == wqe->length;
}

static void send_atomic(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
			unsigned int *budget)
{
	uint8_t op = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			     SV_OP_RC_COMPARE_SWAP :
			     SV_OP_RC_FETCH_ADD;
	struct sv_tx *t = sv_tx_get(qe->eng);
	uint8_t *b = sv_tx_hdr(qe, t, op, qe->req.psn, 0);
	uint8_t *h = b + sv_opinfo[op].offset[SV_HDR_ATMETH];

	sv_atmeth_set_va(h, wqe->wr.atomic.remote_addr);
	sv_atmeth_set_rkey(h, wqe->wr.atomic.rkey);
	if (op == SV_OP_RC_COMPARE_SWAP) {
		sv_atmeth_set_swap_add(h, wqe->wr.atomic.swap);
		sv_atmeth_set_compare(h, wqe->wr.atomic.compare_add);
	} else {
		sv_atmeth_set_swap_add(h, wqe->wr.atomic.compare_add);
	}
	sv_bth_set_ackreq(b, 1);
	sv_tx_finish(qe, t);
	if (sv_psn_diff(qe->req.psn, qe->req.max_psn) < 0)
		resent(qe);
	psn_sent(qe, 1);
	(*budget)--;
	arm_timer(qe);
}

/* One UD datagram (IBA): SEND ONLY with a DETH, to the address
 * handle's GID and the port the destination QPN names; complete once
 * sent.  A message longer than the path MTU is a local length error. */
static bool send_ud(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		    unsigned int *budget)
{
	bool imm = wqe->opcode == IBV_WR_SEND_WITH_IMM;
	uint8_t op =
		imm ? SV_OP_UD_SEND_ONLY_WITH_IMMEDIATE : SV_OP_UD_SEND_ONLY;
	const struct sv_opinfo *info = &sv_opinfo[op];
	uint32_t rqpn = wqe->wr.ud.remote_qpn & SV_PSN_MASK, pay;
	const struct sv_ah_route *route = &wqe->wr.ud.route;
	struct sv_tx *t;
	uint8_t *b, *deth;

	if (!*budget)
		return false;
	if (wqe->length > qe->pmtu) {
		local_error(qe, wqe, IBV_WC_LOC_LEN_ERR);
		return false;
	}
	/* The multicast QPN 0xffffff is UDP port 65535 like any other QPN's
	 * port (mcast.c): a multicast AH needs nothing else here. */
	if (!route->resolved) {
		local_error(qe, wqe, IBV_WC_LOC_QP_OP_ERR);
		return false;
	}
	pay = (uint32_t)wqe->length;
	t = sv_tx_get(qe->eng);
	b = sv_tx_hdr(qe, t, op, qe->req.psn, pay);
	sv_bth_set_qpn(b, rqpn);
	deth = b + info->offset[SV_HDR_DETH];
	/* IBA: a Q_Key with the high bit set means "the QP's own". */
	sv_deth_set_qkey(deth, (wqe->wr.ud.remote_qkey & 0x80000000u) ?
				       qe->qkey :
				       wqe->wr.ud.remote_qkey);
	sv_deth_set_sqp(deth, qe->gsi ? SV_QPN_GSI : qe->qpn);
	if (imm)
		memcpy(b + info->offset[SV_HDR_IMMDT], &wqe->imm_data, 4);
	if (pay) {
		if (wqe->send_flags & IBV_SEND_INLINE)
			memcpy(b + info->length, wqe->inline_data, pay);
		else if (gather(qe, wqe, 0, b + info->length, pay)) {
			local_error(qe, wqe, IBV_WC_LOC_PROT_ERR);
			return false;
		}
	}
	if (wqe->send_flags & IBV_SEND_SOLICITED)
		sv_bth_set_se(b, 1);
	sv_ipaddr_to_sin6(&route->dst, sv_links_dport(rqpn), route->scope,
			  &t->dst);
	t->src = route->src;
	t->tclass = route->tclass;
	sv_tx_finish(qe, t);
	psn_sent(qe, 1);
	wqe->sent = pay;
	(*budget)--;
	return true;
}

/* BIND_MW and LOCAL_INV execute when the requester reaches them, so
 * in send queue order: a SEND posted after a bind may carry the new R_Key
 * (man ibv_bind_mw), and an operation posted before an invalidation is on
 * its way first.  They take no PSN (an empty range at req.psn, which no
 * ACK or go-back-N ever matches) and complete in order through the
 * completer, once every earlier WQE has.  A failure is a memory window
 * bind error (IBA), a completion error like any other. */
static bool run_local_op(struct sv_qp_engine *qe, struct sv_send_wqe *wqe)
{
	enum ibv_wc_status st;

	if (wqe->opcode == IBV_WR_BIND_MW)
		st = sv_mw_bind(qe->qp, wqe);
	else
		st = sv_mw_local_inv(qe->qp, wqe->invalidate_rkey);
	wqe->first_psn = qe->req.psn;
	wqe->last_psn = sv_psn_add(qe->req.psn, SV_PSN_MASK);
	wqe->sent = 0;
	wqe->read_done = 0;
	if (st != IBV_WC_SUCCESS) {
		local_error(qe, wqe, st);
		return false;
	}
	wqe->state = SV_WQE_DONE;
	qe->req.local_done = true;
	return true;
}

/* Conditions for starting a WQE; false: wait (or the WQE failed). */
static bool start_wqe(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		      int state)
{
	struct sv_qp *qp = qe->qp;
	uint32_t max_rd = qe->max_rd_atomic ? qe->max_rd_atomic : 1;
	bool rdat = sv_wr_is_rd_atomic(wqe->opcode);

	if (state == IBV_QPS_SQD)
		return false;
	if ((wqe->send_flags & IBV_SEND_FENCE) && qe->req.rd_atomic)
		return false;
	if (rdat && qe->req.rd_reqs >= max_rd)
		return false;
	if (sv_wr_is(wqe->opcode, SV_WR_LOCAL))
		return run_local_op(qe, wqe);
	if (!(wqe->send_flags & IBV_SEND_INLINE) &&
	    sv_sgl_validate(qp->pd, wqe->sge, wqe->num_sge,
			    rdat ? IBV_ACCESS_LOCAL_WRITE : 0)) {
		wqe->first_psn = qe->req.psn;
		wqe->last_psn = qe->req.psn;
		local_error(qe, wqe, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	wqe->first_psn = qe->req.psn;
	if (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wqe->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		wqe->last_psn = wqe->first_psn;
	else
		wqe->last_psn = sv_psn_add(wqe->first_psn,
					   npkts(wqe->length, qe->pmtu) - 1);
	wqe->sent = 0;
	wqe->read_done = 0;
	wqe->state = SV_WQE_ACTIVE;
	if (rdat)
		qe->req.rd_atomic++;
	if (rdat && wqe->opcode != IBV_WR_RDMA_READ)
		qe->req.rd_reqs++; /* READs count their chunks (send_read) */
	return true;
}

/* The packets of one RC/UC WQE, as the window and budget allow. */
static bool send_rc_uc(struct sv_qp_engine *qe, struct sv_send_wqe *wqe,
		       unsigned int *budget)
{
	switch (wqe->opcode) {
	case IBV_WR_RDMA_READ:
		return send_read(qe, wqe, budget);
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (!*budget || in_flight(qe) >= window(qe))
			return false;
		send_atomic(qe, wqe, budget);
		return true;
	default:
		return send_data(qe, wqe, budget);
	}
}

void sv_req_run(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	unsigned int budget = SV_REQ_BUDGET;
	int state = atomic_load(&qe->state);
	uint32_t tail;

	if (qe->req.blocked || qe->comp.rnr_until)
		return;
	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD)
		return;
	/* post_send runs the queue through a path (the channel's lean
	 * mode). */
	if (atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
		return;
	/* Responses may have completed what we were about to resend. */
	if ((int32_t)(qe->req.idx - qe->comp.idx) < 0)
		qe->req.idx = qe->comp.idx;
	if (sv_psn_diff(qe->comp.psn, qe->req.psn) > 0)
		qe->req.psn = qe->comp.psn;
	tail = sv_sq_tail(qe);
	if (qe->req.idx != tail)
		set_window(qe);
	while (qe->req.idx != tail) {
		struct sv_send_wqe *wqe = sv_wq_at(&qp->sq, qe->req.idx);
		/* A big copy counts like several packets, so that one QP
		 * does not hold the engine long (read now: once complete,
		 * the slot may be reused). */
		uint64_t cost = 1 + wqe->length / 65536;
		bool done;

		/* Already in the peer's message channel (a rewind). */
		if (wqe->state == SV_WQE_CHAN) {
			qe->req.idx++;
			continue;
		}
		/* Paths besides packets (path.h): a same-host peer's message
		 * channel takes small SENDs, one-copy placement WRITEs and
		 * READs; else the packets below. */
		if (wqe->state == SV_WQE_PENDING && qe->npaths && budget) {
			enum sv_path_r r = sv_paths_send(qe, wqe);

			if (r == SV_PATH_WAIT)
				break;
			if (r == SV_PATH_DONE) {
				if (atomic_load(&qe->state) != state)
					return; /* the CQ overran: ERR */
				/* It may have taken WQEs after this one,
				 * posted since the run began (a batch). */
				tail = sv_sq_tail(qe);
				budget -= cost < budget ? (unsigned int)cost :
							  budget;
				if (!budget)
					break;
				continue;
			}
		}
		if (wqe->state == SV_WQE_PENDING && !start_wqe(qe, wqe, state))
			break;
		if (wqe->state == SV_WQE_ERROR)
			break;
		if (wqe->state == SV_WQE_DONE) {
			wqe_passed(
				qe,
				wqe); /* completed meanwhile (after a rewind) */
			continue;
		}
		/* Never send a PSN outside the WQE it belongs to. */
		if (sv_psn_diff(qe->req.psn, wqe->first_psn) < 0)
			qe->req.psn = wqe->first_psn;
		if (qe->type == IBV_QPT_UD)
			done = send_ud(qe, wqe, &budget);
		else
			done = send_rc_uc(qe, wqe, &budget);
		if (qe->req.blocked)
			return;
		if (!done)
			break;
		wqe_sent(qe, wqe);
	}
	qe->req.win = 0;
	if (qe->type != IBV_QPT_RC || qe->req.local_done) {
		qe->req.local_done = false;
		sv_comp_retire(qe);
	}
	if (!budget)
		sv_work_add(qe, SV_WORK_REQ);
}

/* Go back N (IBA), or forward past PSNs an ACK
 * covered: the next packet sent is psn, which lies in a started WQE (or is
 * the next PSN never sent). */
void sv_req_goto(struct sv_qp_engine *qe, uint32_t psn, bool rewind)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = sv_sq_tail(qe);
	uint32_t idx;

	for (idx = qe->comp.idx; idx != tail; idx++) {
		struct sv_send_wqe *w = sv_wq_at(&qp->sq, idx);

		if (w->state == SV_WQE_PENDING || w->state == SV_WQE_ERROR)
			break;
		if (sv_psn_diff(psn, w->first_psn) >= 0 &&
		    sv_psn_diff(psn, w->last_psn) <= 0)
			break;
	}
	if (idx == tail ||
	    ((struct sv_send_wqe *)sv_wq_at(&qp->sq, idx))->state ==
		    SV_WQE_PENDING) {
		if (psn != qe->req.max_psn)
			return; /* not a PSN of ours */
	}
	qe->req.idx = idx;
	qe->req.psn = psn;
	qe->req.since_ackreq = 0;
	if (rewind) {
		qe->comp.last_rewind = sv_eng_now(qe->eng);
		qe->comp.rtt_sent.n = 0;
	}
	sv_work_add(qe, SV_WORK_REQ);
}

void sv_req_rewind(struct sv_qp_engine *qe, uint32_t psn)
{
	sv_req_goto(qe, psn, true);
}

/* Tail-loss probe: resend only the oldest unacknowledged packet, asking
 * for an ACK, without moving the requester.  The answer (an ACK, a
 * duplicate ACK or a NAK) tells where the responder is; a READ or ATOMIC
 * is asked for again as a whole (its responses are what is missing). */
void sv_req_probe(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = sv_sq_tail(qe);
	uint32_t save_psn = qe->req.psn, save_idx = qe->req.idx;
	uint32_t save_since = qe->req.since_ackreq;
	unsigned int budget = 1;
	struct sv_send_wqe *w;

	if (qe->comp.idx == tail)
		return;
	w = sv_wq_at(&qp->sq, qe->comp.idx);
	if (w->state != SV_WQE_ACTIVE && w->state != SV_WQE_SENT)
		return;
	if (sv_wr_is_rd_atomic(w->opcode)) {
		sv_req_rewind(qe, qe->comp.psn);
		return;
	}
	if (sv_psn_diff(qe->comp.psn, w->first_psn) < 0 ||
	    sv_psn_diff(qe->comp.psn, w->last_psn) > 0)
		return;
	qe->req.psn = qe->comp.psn;
	qe->req.probing = true;
	send_data(qe, w, &budget);
	qe->req.probing = false;
	qe->req.psn = save_psn;
	qe->req.idx = save_idx;
	qe->req.since_ackreq = save_since;
}

/* Selective retransmission: the peer has what follows the hole, so only
 * the hole goes out again (the last packet asks for an ACK, whose answer
 * says where the responder is then).  PSNs not sent yet are left to the
 * requester's own run. */
bool sv_req_resend(struct sv_qp_engine *qe, uint32_t psn, uint32_t n)
{
	uint32_t save_psn = qe->req.psn, save_idx = qe->req.idx;
	uint32_t save_since = qe->req.since_ackreq;
	int32_t sent = sv_psn_diff(save_psn, psn);
	bool ok = true;

	if (sent <= 0)
		return true;
	if ((uint32_t)sent < n)
		n = (uint32_t)sent;
	while (n) {
		struct sv_send_wqe *w = sv_wqe_of_psn(qe, psn);
		unsigned int budget = 1;

		if (!w ||
		    (w->state != SV_WQE_ACTIVE && w->state != SV_WQE_SENT))
			break;
		if (sv_wr_is_rd_atomic(w->opcode)) {
			ok = false;
			break;
		}
		qe->req.psn = psn;
		qe->req.probing = n == 1;
		send_data(qe, w, &budget);
		qe->req.probing = false;
		if (qe->req.blocked)
			break;
		psn = sv_psn_add(psn, 1);
		n--;
	}
	qe->req.psn = save_psn;
	qe->req.idx = save_idx;
	qe->req.since_ackreq = save_since;
	qe->comp.last_rewind = sv_eng_now(qe->eng);
	return ok;
}

void sv_req_ask_ack(struct sv_qp_engine *qe)
{
	if (qe->req.psn != qe->req.max_psn || qe->comp.psn == qe->req.max_psn)
		return; /* more to send (it will ask), or nothing to ask */
	if (qe->req.asked && qe->req.asked_psn == qe->req.max_psn)
		return;
	/* The last packet sent asked for an ACK already (ack_at_end): it
	 * is on its way.  A resend would reach the responder as a
	 * duplicate, whose restated ACK then arrives after the real one as
	 * a duplicate ACK and sets off a fast retransmit of whatever was
	 * sent since (UCX's tag_bw: ~100 a run, thousands of duplicates). */
	if (!qe->req.since_ackreq)
		return;
	qe->req.asked = true;
	qe->req.asked_psn = qe->req.max_psn;
	sv_req_probe(qe);
}
