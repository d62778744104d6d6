/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * RC atomics through message channels (docs/fastpath.md, "Atomics through
 * channels"; the channel is link/chan.h, its engine side chan.c).
 *
 * A CMP_AND_SWP or FETCH_AND_ADD to a same-host peer needs none of the
 * packet machinery either: the requester writes the request into the
 * peer QP's channel as one slot, the peer's engine executes it as a CPU
 * atomic in its own memory (atomic with respect to every access of that
 * host, the target's own CPU included, as on the packet path), writes the
 * original value into the requester's ack line and acknowledges; the
 * requester completes the WQE when the ack passes it, with the value it
 * finds next to the ack (one cache line).  What the packet path keeps
 * holds here too:
 *
 * - The responder's checks, in its order and with its errors (resp.c):
 *   the QP enabled for REMOTE_ATOMIC (else a remote access error),
 *   max_dest_rd_atomic not 0 and the VA 8-byte aligned (else an invalid
 *   request), the R_Key's region, PD, right and bounds (a remote access
 *   error), a page that faults (a remote access error); each explained
 *   (engine/explain.c) and counted as resp.c counts it; the responder QP
 *   goes to ERR with the same affiliated event, the requester's WQE
 *   completes with REM_ACCESS_ERR or REM_INV_REQ_ERR.
 * - Executed once: a channel message is consumed once and never resent,
 *   so there is no duplicate for the packet path's replay cache to answer.
 * - Order: the channel's (chan.c) - an atomic enters it only when all
 *   before it in the send queue are in it too, and the responder consumes
 *   in order; a fenced WQE waits until the atomics before it completed
 *   (their results are in their local buffers: a SEND may carry them).
 * - At most min(max_rd_atomic, SV_CHAN_RESULTS) atomics in the channel at
 *   once, each with its own result word: the lowest free one, so that a
 *   lone atomic's result shares the ack's cache line (its number travels
 *   in the message's imm).
 * - A target that stops or dies: the channel's watchdog (RETRY_EXC_ERR
 *   after the packet path's retry time), as for SENDs.
 */
#include "paths/paths.h"
#include "engine/diag/stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/mr.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/diag/explain.h"
#include "engine/diag/pcap.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "engine/transport/stats.h"
#include "proto/wire.h"
#include "util/env.h"
#include "util/fault.h"

bool sv_chan_atomic_op(uint32_t opcode)
{
	return opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

uint32_t sv_chan_atomic_limit(const struct sv_qp_engine *qe)
{
	/* The packet path's limit (req.c start_wqe: 0 counts as 1). */
	uint32_t n = qe->max_rd_atomic ? qe->max_rd_atomic : 1;

	return n < SV_CHAN_RESULTS ? n : SV_CHAN_RESULTS;
}

void sv_chan_atomic_fill(const struct sv_send_wqe *w, uint8_t *dst)
{
	struct sv_chan_atomic a = {
		.op = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
			      SV_CHAN_CMP_SWAP :
			      SV_CHAN_FETCH_ADD,
		.rkey = w->wr.atomic.rkey,
		.va = w->wr.atomic.remote_addr,
		.compare_add = w->wr.atomic.compare_add,
		.swap = w->wr.atomic.swap,
	};

	memcpy(dst, &a, sizeof(a));
}

enum ibv_wc_status sv_chan_atomic_done(struct sv_qp_engine *qe,
				       struct sv_send_wqe *w,
				       const struct sv_chan *own)
{
	/* The word it was sent with (chan.c keeps its number here meanwhile). */
	uint64_t orig = atomic_load_explicit(
		&own->result[w->atomic_result % SV_CHAN_RESULTS],
		memory_order_relaxed);
	enum sv_sgl_err e;

	/* As the completer's do_atomic: the value, in host order, into the
	 * WQE's 8-byte SGE (validated with LOCAL_WRITE when it was sent). */
	w->atomic_result = orig;
	e = sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge, 0, (uint8_t *)&orig,
			sizeof(orig), true);
	if (e == SV_SGL_FAULT)
		sv_dma_fault_report(qe, "atomic result into a local buffer");
	return e ? IBV_WC_LOC_PROT_ERR : IBV_WC_SUCCESS;
}

uint32_t sv_chan_refuse(struct sv_qp_engine *qe, bool access, int *event)
{
	if (access)
		SV_STAT(qe->eng, resp_access_err);
	else
		SV_STAT(qe->eng, resp_inv_req);
	SV_STAT(qe->eng, nak_sent);
	*event = access ? IBV_EVENT_QP_ACCESS_ERR : IBV_EVENT_QP_REQ_ERR;
	return access ? IBV_WC_REM_ACCESS_ERR : IBV_WC_REM_INV_REQ_ERR;
}

uint32_t sv_chan_atomic_serve(struct sv_qp_engine *qe,
			      const struct sv_chan_msg *m, struct sv_chan *pc,
			      int *event, bool *bad)
{
	struct sv_chan_atomic a;
	struct sv_mr *mr;
	uint64_t *p, orig;
	uintptr_t fault;

	/* Read once: the producer may rewrite the slot meanwhile. */
	if (m->len != sizeof(a)) {
		*bad = true;
		return 0;
	}
	memcpy(&a, m->data, sizeof(a));
	if (a.op != SV_CHAN_CMP_SWAP && a.op != SV_CHAN_FETCH_ADD) {
		*bad = true;
		return 0;
	}
	if (sv_pcap_active()) {
		struct sv_pcap_atomic pa = { .cas = a.op == SV_CHAN_CMP_SWAP,
					     .va = a.va,
					     .rkey = a.rkey,
					     .compare_add = a.compare_add,
					     .swap = a.swap };

		sv_pcap_chan_atomic_recv(qe, &pa);
	}
	if (sv_env_trace()) {
		char extra[64];

		snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x",
			 a.va, a.rkey);
		sv_trace_op(qe->eng, "rx-chan",
			    a.op == SV_CHAN_CMP_SWAP ? SV_OP_RC_COMPARE_SWAP :
						       SV_OP_RC_FETCH_ADD,
			    qe->qpn, 8, extra);
	}
	/* The responder's checks in its order (resp.c chk_op_valid,
	 * chk_resource, chk_rkey). */
	if (!(qe->access & IBV_ACCESS_REMOTE_ATOMIC)) {
		sv_explain_qp_access(qe, IBV_ACCESS_REMOTE_ATOMIC);
		return sv_chan_refuse(qe, true, event);
	}
	if (!qe->max_dest_rd_atomic) {
		sv_explain_rd_atomic(qe, IBV_ACCESS_REMOTE_ATOMIC, 0);
		return sv_chan_refuse(qe, false, event);
	}
	/* IBA: atomics need an 8-byte aligned VA. */
	if (a.va & 7) {
		sv_explain_misaligned(qe, "ATOMIC", a.rkey, a.va);
		return sv_chan_refuse(qe, false, event);
	}
	mr = sv_mr_get_by_rkey(a.rkey);
	p = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, a.va, 8,
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!p) {
		sv_explain_access(qe, a.rkey, a.va, 8, IBV_ACCESS_REMOTE_ATOMIC,
				  mr, qe->qp->pd);
		if (mr)
			sv_mr_put(mr);
		return sv_chan_refuse(qe, true, event);
	}
	/* The CPU's own atomic on the target word, guarded as every DMA
	 * access (engine/dma.h), as resp.c's atomic_reply. */
	SV_DMA_BEGIN();
	if (a.op == SV_CHAN_CMP_SWAP)
		fault = sv_fault_cas64(p, a.compare_add, a.swap, &orig);
	else
		fault = sv_fault_fadd64(p, a.compare_add, &orig);
	SV_DMA_END();
	sv_mr_put(mr);
	if (fault) {
		sv_dma_fault_addr = fault;
		sv_dma_fault_report(qe, "atomic target");
		return sv_chan_refuse(qe, true, event);
	}
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	/* Before the ack that covers it (rx_ack's release store). */
	atomic_store_explicit(&pc->result[m->imm % SV_CHAN_RESULTS], orig,
			      memory_order_relaxed);
	SV_STAT(qe->eng, chan_atomics_served);
	if (sv_pcap_active())
		sv_pcap_chan_atomic_ack(qe, orig);
	return 0;
}
