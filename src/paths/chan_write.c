/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Small RC RDMA WRITEs through message channels (docs/fastpath.md,
 * "WRITEs and READs through channels"; the channel is link/chan.h, its engine side
 * chan.c).
 *
 * The one-copy path (direct.c) places a WRITE with a system call, whose
 * cost is per remote range however many WRITEs share it.  A stream of
 * small WRITEs to a same-host peer goes instead as channel messages
 * {va, rkey, bytes}, and the peer's engine, which takes the channel's
 * SENDs and atomics, places them in its own memory with a plain copy, as
 * its packet responder would:
 *
 * - The responder's checks in resp.c's order: the QP enabled for
 *   REMOTE_WRITE, then the R_Key's region (PD, right, bounds, overflow
 *   safe); a page that faults; each refusal explained and counted as
 *   resp.c does, the responder QP to ERR with its event, the requester's
 *   WQE completes with REM_ACCESS_ERR and the later ones are flushed.
 * - The region stays registered while it is written: the consumer holds
 *   the key table's read lock across its batch (ibv_dereg_mr waits).
 * - Order: the channel's (chan.c); a WQE of the packet or one-copy path
 *   starts only when the channel is acknowledged.
 * - Which: RDMA WRITE (not WITH_IMM) of 1 to SV_CHAN_WRITE_MAX bytes, when
 *   unsignaled or with other WQEs in the send queue (a stream, where
 *   nobody waits for one WRITE); a lone signaled WRITE (a latency test)
 *   is copied at once by direct.c, without waiting for the peer's thread.
 *   Not while SOFTVERBS_PCAP captures (direct.c records each copy).
 *
 * A stopped target (SIGSTOP, a debugger) consumes nothing, but the
 * one-copy path still reaches its memory: the requester takes back the
 * WRITEs it has not claimed and runs them itself (chan.c, tx_take_back).
 * The claim word in the consumer's channel makes that safe: the consumer
 * places a WRITE only below its claim, which it moves with one
 * compare-and-swap over every message published when it looks; the
 * requester sets SV_CHAN_CLAIM_REVOKED with one atomic OR and keeps for
 * the consumer only what lies below the claim it found.  So each WRITE
 * is placed exactly once, by one side.
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

bool sv_chan_write_wanted(const struct sv_qp_engine *qe, uint32_t opcode,
			  uint64_t len, bool signaled, bool busy)
{
	return opcode == IBV_WR_RDMA_WRITE && len && len <= SV_CHAN_WRITE_MAX &&
	       qe->qp->type == IBV_QPT_RC && (!signaled || busy) &&
	       !sv_pcap_active() && sv_env_chan_write();
}

bool sv_chan_write_fill(const struct sv_qp_engine *qe,
			const struct sv_send_wqe *w, uint8_t *dst)
{
	struct sv_chan_write h = {
		.va = w->wr.rdma.remote_addr,
		.rkey = w->wr.rdma.rkey,
	};
	uint8_t *d = dst + sizeof(h);

	memcpy(dst, &h, sizeof(h));
	if (w->send_flags & IBV_SEND_INLINE)
		return sv_dma_copy(d, w->inline_data, w->length);
	return sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge, 0, d, w->length,
			   false) == SV_SGL_OK;
}

/* Messages one claim covers at most (the rest, a later claim). */
#define SV_CHAN_CLAIM_AHEAD 64u

bool sv_chan_write_claim(struct sv_qp_engine *qe, const struct sv_chan_msg *m)
{
	struct sv_chan_rx *r = &sv_pq(qe)->chan.rx;
	uint64_t end = r->head + m->nslots, want = end,
		 old = sv_pq(qe)->chan.rx_claim;
	uint32_t i;

	if ((int64_t)(old - end) >= 0)
		return true;
	/* Every message published behind it, as far as one claim goes
	 * (a slot count the producer garbled ends the scan: the peek
	 * refuses it when it comes to it). */
	for (i = 1; i < SV_CHAN_CLAIM_AHEAD && want - r->head < SV_CHAN_SLOTS;
	     i++) {
		uint32_t at = (uint32_t)want & (SV_CHAN_SLOTS - 1);
		const struct sv_chan_slot *s = &r->slot[at];
		uint32_t n;

		if (atomic_load_explicit(&s->seq, memory_order_acquire) !=
		    sv_chan_seq(r->gen, want))
			break;
		n = s->nslots;
		if (!n || n > SV_CHAN_SLOTS - at ||
		    want + n - r->head > SV_CHAN_SLOTS)
			break;
		want += n;
	}
	/* Fails only when the producer revoked (it never moves it else). */
	if (!atomic_compare_exchange_strong(&r->ch->claim, &old, want))
		return false;
	sv_pq(qe)->chan.rx_claim = want;
	return true;
}

uint32_t sv_chan_write_serve(struct sv_qp_engine *qe,
			     const struct sv_chan_msg *m, int *event, bool *bad)
{
	struct sv_chan_write h;
	struct sv_mr *mr;
	uint32_t len;
	void *p;

	/* Read once: the producer may rewrite the slot meanwhile (only the
	 * bytes it writes would change, which are its own to choose). */
	if (m->len <= sizeof(h)) {
		*bad = true;
		return 0;
	}
	memcpy(&h, m->data, sizeof(h));
	len = m->len - (uint32_t)sizeof(h);
	if (sv_env_trace()) {
		char extra[64];

		snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x",
			 h.va, h.rkey);
		sv_trace_op(qe->eng, "rx-chan", SV_OP_RC_RDMA_WRITE_ONLY,
			    qe->qpn, len, extra);
	}
	/* The responder's checks in its order (resp.c chk_op_valid,
	 * chk_rkey). */
	if (!(qe->access & IBV_ACCESS_REMOTE_WRITE)) {
		sv_explain_qp_access(qe, IBV_ACCESS_REMOTE_WRITE);
		return sv_chan_refuse(qe, true, event);
	}
	/* Under the read lock (rx_run): valid until it is let go. */
	mr = sv_mr_find_rkey_locked(h.rkey);
	p = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, h.va, len,
			   IBV_ACCESS_REMOTE_WRITE);
	if (!p) {
		sv_explain_access(qe, h.rkey, h.va, len,
				  IBV_ACCESS_REMOTE_WRITE, mr, qe->qp->pd);
		return sv_chan_refuse(qe, true, event);
	}
	if (!sv_dma_copy(p, m->data + sizeof(h), len)) {
		sv_dma_fault_report(qe, "RDMA WRITE target");
		return sv_chan_refuse(qe, true, event);
	}
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	SV_STAT(qe->eng, chan_writes_served);
	return 0;
}
