/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Observability: per-context counters (SOFTVERBS_STATS=1 prints them at
 * ibv_close_device; sv_engine_stats_dump for tools), a packet trace
 * (SOFTVERBS_TRACE=1: direction, opcode name, QPN, PSN, length, flags;
 * no PSN for what travels without packets),
 * and one-line QP dumps with state names, so a stuck QP explains itself.
 */
#include "engine/diag/stats.h"
#include "engine/transport/stats.h"

#include <inttypes.h>
#include <unistd.h>
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "util/lockorder.h"
#include "util/log.h"

void sv_trace_pkt(struct sv_engine *eng, const char *dir, const uint8_t *hdr,
		  uint32_t len, const char *why)
{
	uint8_t op = hdr[0];
	const struct sv_opinfo *info = &sv_opinfo[op];
	char extra[96] = "";

	if (info->name && len >= (uint32_t)info->length + SV_ICRC_BYTES) {
		if (info->mask & SV_M_AETH) {
			const uint8_t *a = hdr + info->offset[SV_HDR_AETH];

			snprintf(extra, sizeof(extra), " syn 0x%02x msn %u",
				 (unsigned int)sv_aeth_syndrome(a),
				 (unsigned int)sv_aeth_msn(a));
		} else if (info->mask & SV_M_RETH) {
			const uint8_t *r = hdr + info->offset[SV_HDR_RETH];

			snprintf(extra, sizeof(extra),
				 " va 0x%" PRIx64 " rkey 0x%x dlen %u",
				 sv_reth_va(r), (unsigned int)sv_reth_rkey(r),
				 (unsigned int)sv_reth_len(r));
		} else if (info->mask & SV_M_IETH) {
			snprintf(extra, sizeof(extra), " inv rkey 0x%x",
				 (unsigned int)sv_ieth_rkey(
					 hdr + info->offset[SV_HDR_IETH]));
		}
	}
	fprintf(stderr,
		"softverbs trace: %d/%p %s %s qpn 0x%06x psn %u len %u%s%s%s%s%s\n",
		(int)getpid(), (void *)eng->ctx, dir, sv_opcode_name(op),
		len >= SV_BTH_BYTES ? (unsigned int)sv_bth_qpn(hdr) : 0,
		len >= SV_BTH_BYTES ? (unsigned int)sv_bth_psn(hdr) : 0, len,
		len >= SV_BTH_BYTES && sv_bth_ackreq(hdr) ? " A" : "",
		len >= SV_BTH_BYTES && sv_bth_se(hdr) ? " SE" : "", extra,
		why ? ": " : "", why ? why : "");
}

void sv_trace_op(struct sv_engine *eng, const char *dir, uint8_t opcode,
		 uint32_t qpn, uint64_t len, const char *extra)
{
	fprintf(stderr,
		"softverbs trace: %d/%p %s %s qpn 0x%06x len %" PRIu64 "%s\n",
		(int)getpid(), (void *)eng->ctx, dir, sv_opcode_name(opcode),
		(unsigned int)qpn, len, extra);
}

static const char *const wqe_state_names[] = {
	[SV_WQE_PENDING] = "PENDING", [SV_WQE_ACTIVE] = "ACTIVE",
	[SV_WQE_SENT] = "SENT",	      [SV_WQE_DONE] = "DONE",
	[SV_WQE_ERROR] = "ERROR",     [SV_WQE_CHAN] = "CHAN",
};

static void wqe_dump(struct sv_qp_engine *qe, const char *what, uint32_t idx,
		     FILE *f)
{
	struct sv_send_wqe *w;

	if (idx == atomic_load(&qe->qp->sq.tail) || !qe->qp->sq.size)
		return;
	w = sv_wq_at(&qe->qp->sq, idx);
	fprintf(f,
		"    %s wqe %u: op %u %s psn %u..%u len %" PRIu64
		" sent %" PRIu64 " read_done %" PRIu64 "\n",
		what, idx, w->opcode,
		w->state <= SV_WQE_CHAN ? wqe_state_names[w->state] : "?",
		w->first_psn, w->last_psn, w->length, w->sent, w->read_done);
}

void sv_qp_dump(struct sv_qp_engine *qe, FILE *f)
{
	struct sv_qp *qp = qe->qp;

	fprintf(f,
		"qp 0x%06x %s %s dest 0x%06x ports %u->%u pmtu %u win %u cwnd %u | req psn %u max %u idx %u "
		"rd_atomic %u%s | comp psn %u idx %u retry %u rnr %u%s%s srtt %lluus rttvar %lluus probe %lluus | "
		"resp psn %u msn %u%s%s replies %u | sq head %u tail %u rq head %u tail %u | path=%s%s%s%s\n",
		qe->qpn, sv_qp_type_name(qe->type),
		sv_qp_state_name(atomic_load(&qe->state)), qe->dest_qpn,
		qe->flow.sport, qe->flow.dport, qe->pmtu, qe->window, qe->cwnd,
		qe->req.psn, qe->req.max_psn, qe->req.idx, qe->req.rd_atomic,
		qe->req.blocked ? " BLOCKED" : "", qe->comp.psn, qe->comp.idx,
		qe->comp.retry_left, qe->comp.rnr_left,
		qe->comp.deadline ? " TIMER" : "",
		qe->comp.rnr_until ? " RNR-WAIT" : "",
		(unsigned long long)qe->comp.rtt.srtt / 1000,
		(unsigned long long)qe->comp.rtt.rttvar / 1000,
		(unsigned long long)qe->comp.probe_ns / 1000, qe->resp.psn,
		qe->resp.msn, qe->resp.in_msg ? " IN-MSG" : "",
		qe->resp.nak_sent ? " NAKED" : "",
		qe->resp.reply_tail - qe->resp.reply_head,
		atomic_load(&qp->sq.head), atomic_load(&qp->sq.tail),
		atomic_load(&qp->rq.head), atomic_load(&qp->rq.tail),
		qe->shm ? "shm" : "udp", qe->shm ? "" : " (",
		qe->shm ? "" : qe->path_why, qe->shm ? "" : ")");
	wqe_dump(qe, "comp", qe->comp.idx, f);
	if (qe->req.idx != qe->comp.idx)
		wqe_dump(qe, "req", qe->req.idx, f);
}

/* What SOFTVERBS_STATS=1 says of a QP at its end: its path and what it
 * carried, in the user's terms; at SOFTVERBS_LOG=3 the engine's whole
 * state instead (sv_qp_dump), for whoever debugs the transport. */
void sv_qp_report(struct sv_qp_engine *qe, const char *what, FILE *f)
{
	const struct sv_qp_stats *c = qe->ctr;

	if (sv_log_level >= SV_LOG_DBG) {
		fprintf(f, "softverbs: %s ", what);
		sv_qp_dump(qe, f);
		return;
	}
	if (!sv_env_stats())
		return;
	fprintf(f,
		"softverbs: %s qp 0x%06x %s %s: path=%s%s%s%s, sent %" PRIu64
		" WRs (%" PRIu64 " B), received %" PRIu64 " WRs (%" PRIu64
		" B), %" PRIu64 " retransmissions, RNR NAKs %" PRIu64
		" sent %" PRIu64 " received\n",
		what, qe->qpn, sv_qp_type_name(qe->type),
		sv_qp_state_name(atomic_load(&qe->state)),
		qe->shm ? "shm" : "udp", qe->shm ? "" : " (",
		qe->shm ? "" : qe->path_why, qe->shm ? "" : ")", c->wr_done,
		c->wr_bytes, c->recv_done, c->recv_bytes, c->retrans,
		c->rnr_sent, c->rnr_rcvd);
}

/* The engine lock is held. */
void sv_stats_print(struct sv_engine *eng, FILE *f)
{
	struct sv_stats st = *eng->stats;

	fprintf(f, "softverbs stats: context %p\n", (void *)eng->ctx);
#define X(name, desc) \
	if (st.name)  \
		fprintf(f, "  %-24s %12" PRIu64 "  %s\n", #name, st.name, desc);
	SV_COUNTERS(X)
#undef X
}

void sv_engine_stats_dump(struct sv_context *ctx, FILE *f)
{
	struct sv_engine *eng = ctx->engine;
	struct list_node *it;

	if (!eng)
		return;
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	sv_stats_print(eng, f);
	for (it = eng->qps.n.next; it != &eng->qps.n; it = it->next)
		sv_qp_report(list_entry(it, struct sv_qp_engine, node),
			     "open at close:", f);
	sv_mutex_unlock(&eng->lock);
}
