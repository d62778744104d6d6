/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Small RC RDMA READs through message channels (docs/fastpath.md,
 * "WRITEs and READs through channels"; the channel is link/chan.h, its
 * engine side chan.c).
 *
 * A READ of up to SV_CHAN_READ_MAX bytes is answered as an atomic is
 * (chan_atomic.c): the requester writes {va, rkey, len} into the peer
 * QP's channel, naming one of the SV_CHAN_RESULTS result words of its own
 * channel; the peer's engine checks it as its responder would, copies the
 * bytes into that word and acknowledges; the requester, when the ack
 * passes the WQE, copies them into its scatter list (validated with
 * LOCAL_WRITE when it was sent).  What holds for atomics holds here: at
 * most min(max_rd_atomic, SV_CHAN_RESULTS) READs and atomics together in
 * the channel, a fenced WQE waits for them to complete, and the
 * responder's checks, errors and counters are resp.c's (the QP enabled
 * for REMOTE_READ, max_dest_rd_atomic not 0, the R_Key's region, PD,
 * right and bounds; a fault).  Which READs: as for WRITEs (chan_write.c),
 * those of a stream - unsignaled, or with other WQEs before or after them
 * - so that a lone signaled READ (ib_read_lat) keeps the one-copy path.
 * A READ is claimed as a WRITE is, and taken back with it from a stopped
 * target (chan.c tx_take_back).
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

bool sv_chan_read_wanted(const struct sv_qp_engine *qe, uint32_t opcode,
			 uint64_t len, bool signaled, bool busy)
{
	return opcode == IBV_WR_RDMA_READ && len && len <= SV_CHAN_READ_MAX &&
	       qe->qp->type == IBV_QPT_RC && (!signaled || busy) &&
	       !sv_pcap_active() && sv_env_chan_write();
}

void sv_chan_read_fill(const struct sv_send_wqe *w, uint8_t *dst)
{
	struct sv_chan_read r = {
		.va = w->wr.rdma.remote_addr,
		.rkey = w->wr.rdma.rkey,
		.len = (uint32_t)w->length,
	};

	memcpy(dst, &r, sizeof(r));
}

enum ibv_wc_status sv_chan_read_done(struct sv_qp_engine *qe,
				     struct sv_send_wqe *w,
				     const struct sv_chan *own)
{
	uint64_t v = atomic_load_explicit(
		&own->result[w->atomic_result % SV_CHAN_RESULTS],
		memory_order_relaxed);
	enum sv_sgl_err e;

	e = sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge, 0, (uint8_t *)&v,
			w->length, true);
	if (e == SV_SGL_FAULT)
		sv_dma_fault_report(qe, "RDMA READ response into a local "
					"buffer");
	if (e)
		return IBV_WC_LOC_PROT_ERR;
	w->read_done = w->length;
	return IBV_WC_SUCCESS;
}

uint32_t sv_chan_read_serve(struct sv_qp_engine *qe,
			    const struct sv_chan_msg *m, struct sv_chan *pc,
			    int *event, bool *bad)
{
	struct sv_chan_read r;
	struct sv_mr *mr;
	uint64_t v = 0;
	void *p;

	/* Read once: the producer may rewrite the slot meanwhile. */
	if (m->len != sizeof(r)) {
		*bad = true;
		return 0;
	}
	memcpy(&r, m->data, sizeof(r));
	if (!r.len || r.len > SV_CHAN_READ_MAX) {
		*bad = true;
		return 0;
	}
	if (sv_env_trace()) {
		char extra[64];

		snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x",
			 r.va, r.rkey);
		sv_trace_op(qe->eng, "rx-chan", SV_OP_RC_RDMA_READ_REQUEST,
			    qe->qpn, r.len, extra);
	}
	/* The responder's checks in its order (resp.c chk_op_valid,
	 * chk_resource, chk_rkey). */
	if (!(qe->access & IBV_ACCESS_REMOTE_READ)) {
		sv_explain_qp_access(qe, IBV_ACCESS_REMOTE_READ);
		return sv_chan_refuse(qe, true, event);
	}
	if (!qe->max_dest_rd_atomic) {
		sv_explain_rd_atomic(qe, IBV_ACCESS_REMOTE_READ, 0);
		return sv_chan_refuse(qe, false, event);
	}
	/* Under the read lock (rx_run): valid until it is let go. */
	mr = sv_mr_find_rkey_locked(r.rkey);
	p = sv_mr_check_qp(mr, qe->qp, qe->qp->pd, r.va, r.len,
			   IBV_ACCESS_REMOTE_READ);
	if (!p) {
		sv_explain_access(qe, r.rkey, r.va, r.len,
				  IBV_ACCESS_REMOTE_READ, mr, qe->qp->pd);
		return sv_chan_refuse(qe, true, event);
	}
	if (!sv_dma_copy(&v, p, r.len)) {
		sv_dma_fault_report(qe, "RDMA READ source");
		return sv_chan_refuse(qe, true, event);
	}
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	/* Before the ack that covers it (rx_ack's release store). */
	atomic_store_explicit(&pc->result[m->imm % SV_CHAN_RESULTS], v,
			      memory_order_relaxed);
	SV_STAT(qe->eng, chan_reads_served);
	return 0;
}
