/*
 * The completer: matches responses to send WQEs and completes them in
 * order.
 *
 * comp.psn is the oldest PSN not yet acknowledged and comp.idx the oldest
 * WQE not yet completed.  Responses are handled by kind:
 *   ACK             everything through its PSN is done (IBA);
 *   RNR NAK         wait the responder's RNR time, resend (rnr_retry, 7 =
 *                   forever, then IBV_WC_RNR_RETRY_EXC_ERR);
 *   PSN seq. NAK    go back N to its PSN (IBA);
 *   other NAKs      the WQE at its PSN fails (remote access, invalid
 *                   request, remote operational error) and the QP errs;
 *   READ responses  placed into the READ WQE's SGEs in PSN order; a gap
 *                   or an ACK beyond an unanswered READ/ATOMIC means a
 *                   response was lost ("implied NAK", IBA):
 *                   resend from comp.psn;
 *   ATOMIC ACK      the original value goes to the WQE's SGE.
 * The ACK timer (timeout, retry_cnt, then IBV_WC_RETRY_EXC_ERR) resends
 * from comp.psn when nothing arrives.
 *
 * A WQE that completes successfully but unsignaled keeps its SQ slot
 * until a later completion is generated (sq.head only moves then), as on
 * a real HCA.
 */
#include "engine/comp.h"
#include "engine/eng.h"
#include "engine/limits.h"
#include "engine/qpe.h"
#include "engine/req.h"
#include "engine/sgl.h"
#include "engine/stats.h"
#include "util/log.h"


/* IBA: RNR NAK timer field -> microseconds * 100. */
static const uint32_t rnr_cus[32] = {
	65536, 1,    2,	   3,	 4,    6,     8,     12,    16,	   24,	  32,
	48,    64,   96,   128,	 192,  256,   384,   512,   768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static struct sv_send_wqe *wqe_at(struct sv_qp_engine *qe, uint32_t idx)
{
	return sv_wq_at(&qe->qp->sq, idx);
}

static uint32_t sq_tail(struct sv_qp_engine *qe)
{
	return sv_sq_tail(qe);
}

/* Complete DONE WQEs from comp.idx; report an ERROR WQE and fail the QP. */
void sv_comp_retire(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = sq_tail(qe);

	while (qe->comp.idx != tail) {
		struct sv_send_wqe *w = wqe_at(qe, qe->comp.idx);
		bool sig;

		if (w->state == SV_WQE_ERROR) {
			sv_complete_send(qe, (enum ibv_wc_status)w->status);
			sv_qp_to_error(qe, SV_ERR_NO_EVENT);
			return;
		}
		if (w->state != SV_WQE_DONE)
			break;
		sig = qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
		if (!sig) {
			qe->comp.idx++; /* keeps its slot until a later CQE */
			continue;
		}
		if (sv_complete_send(qe, IBV_WC_SUCCESS))
			return; /* CQ overrun: the QP is in error now */
	}
	/* The requester never looks at a WQE already completed (its slot
	 * may be reused once retired). */
	if ((int32_t)(qe->req.idx - qe->comp.idx) < 0) {
		qe->req.idx = qe->comp.idx;
		if (sv_psn_diff(qe->comp.psn, qe->req.psn) > 0)
			qe->req.psn = qe->comp.psn;
	}
}

static void progress(struct sv_qp_engine *qe);

/* Congestion control: slow start below ssthresh, then one more packet
 * per window acknowledged; a loss halves the window, a timeout starts
 * over from the minimum. */
static void cc_acked(struct sv_qp_engine *qe, uint32_t n)
{
	if (qe->cwnd < qe->ssthresh) {
		qe->cwnd += n;
	} else {
		qe->cwnd_acc += n;
		while (qe->cwnd_acc >= qe->cwnd) {
			qe->cwnd_acc -= qe->cwnd;
			qe->cwnd++;
		}
	}
	if (qe->cwnd > qe->window)
		qe->cwnd = qe->window;
}

void sv_cc_loss(struct sv_qp_engine *qe, bool timeout)
{
	qe->ssthresh =
		qe->cwnd / 2 > SV_WINDOW_MIN ? qe->cwnd / 2 : SV_WINDOW_MIN;
	qe->cwnd = timeout ? SV_WINDOW_MIN : qe->ssthresh;
	qe->cwnd_acc = 0;
}

/* Forward progress: the retry counters start over (IBA) and
 * the timer restarts if anything is still outstanding. */
static void progress_from(struct sv_qp_engine *qe, uint32_t before)
{
	int32_t n = sv_psn_diff(qe->comp.psn, before);

	if (n > 0)
		cc_acked(qe, (uint32_t)n);
	progress(qe);
}

static void progress(struct sv_qp_engine *qe)
{
	bool outstanding = sv_psn_diff(qe->req.max_psn, qe->comp.psn) > 0;

	qe->comp.retry_left = qe->retry_cnt;
	qe->comp.rnr_left = qe->rnr_retry;
	qe->comp.retried = false;
	qe->comp.backoff = 0;
	if (outstanding && qe->comp.timeout_ns) {
		qe->comp.deadline = sv_eng_now(qe->eng) + qe->comp.timeout_ns;
		sv_timer_note(qe->eng, qe->comp.deadline);
	} else {
		qe->comp.deadline = 0;
	}
	if (outstanding)
		sv_probe_arm(qe, true);
	else
		qe->comp.probe = 0;
}

/* The probe timer resends the oldest unacknowledged packet well before
 * the IBA timeout, without spending retry_cnt: over UDP a lost tail
 * (the last packets of a burst, a READ request or its last response)
 * would otherwise cost a whole timeout.  A duplicate is harmless (the
 * responder answers it, never executing anything twice) and its answer
 * shows where the responder is; a probe that finds nothing lost costs one
 * packet and leaves the congestion window alone.  It backs off while
 * nothing comes back; the IBA timeout still decides when to give up.  It
 * also runs with timeout 0 ("wait forever"), which then still recovers
 * from loss. */
static uint64_t probe_base(struct sv_qp_engine *qe)
{
	uint64_t ns = qe->comp.srtt ? 4 * qe->comp.srtt + 200000 : SV_PROBE_NS;

	return ns < SV_PROBE_MIN_NS ? SV_PROBE_MIN_NS : ns;
}

/* Duplicate ACKs within about a round trip of a rewind answer packets
 * sent before it: not a new loss. */
static uint64_t dupack_guard(struct sv_qp_engine *qe)
{
	uint64_t ns = qe->comp.srtt ? 2 * qe->comp.srtt + 100000 : 1000000;

	return ns;
}

static void rtt_sample(struct sv_qp_engine *qe, uint32_t acked_psn)
{
	uint64_t s;

	if (!qe->comp.rtt_t || sv_psn_diff(acked_psn, qe->comp.rtt_psn) < 0)
		return;
	s = sv_eng_now(qe->eng) - qe->comp.rtt_t;
	qe->comp.srtt = qe->comp.srtt ? (7 * qe->comp.srtt + s) / 8 : s;
	qe->comp.rtt_t = 0;
}

void sv_probe_arm(struct sv_qp_engine *qe, bool reset)
{
	if (reset || !qe->comp.probe_ns)
		qe->comp.probe_ns = probe_base(qe);
	qe->comp.probe = sv_eng_now(qe->eng) + qe->comp.probe_ns;
	sv_timer_note(qe->eng, qe->comp.probe);
}

void sv_comp_probe(struct sv_qp_engine *qe, uint64_t now)
{
	qe->comp.probe = 0;
	if (atomic_load(&qe->state) == IBV_QPS_ERR || qe->comp.rnr_until)
		return;
	if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) <= 0)
		return; /* nothing outstanding */
	SV_STAT(qe->eng, probe_retransmit);
	sv_req_probe(qe);
	if (!qe->comp.timeout_ns || qe->comp.probe_ns * 2 < qe->comp.timeout_ns)
		qe->comp.probe_ns *= 2;
	if (qe->comp.probe_ns > 1000ull * 1000 * 1000)
		qe->comp.probe_ns = 1000ull * 1000 * 1000;
	sv_probe_arm(qe, false);
}

static void fail_wqe(struct sv_qp_engine *qe, struct sv_send_wqe *w,
		     enum ibv_wc_status st)
{
	w->state = SV_WQE_ERROR;
	w->status = st;
	sv_comp_retire(qe);
}

/* Mark SEND/WRITE WQEs acknowledged through psn.  Returns true when an
 * unanswered READ/ATOMIC lies at or before psn (its response was lost). */
static bool ack_through(struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t tail = sq_tail(qe), idx, upto = sv_psn_add(psn, 1);
	bool lost = false;

	for (idx = qe->comp.idx; idx != tail; idx++) {
		struct sv_send_wqe *w = wqe_at(qe, idx);

		if (w->state == SV_WQE_PENDING || w->state == SV_WQE_ERROR)
			break;
		if (w->state == SV_WQE_DONE)
			continue;
		if (sv_psn_diff(psn, w->first_psn) < 0)
			break;
		if (sv_wr_is_rd_atomic(w->opcode)) {
			/* Acknowledged no further than what it got back. */
			lost = true;
			upto = sv_psn_add(w->first_psn,
					  (uint32_t)(w->read_done / qe->pmtu));
			break;
		}
		if (w->state != SV_WQE_SENT ||
		    sv_psn_diff(psn, w->last_psn) < 0)
			break; /* partly acknowledged */
		w->state = SV_WQE_DONE;
	}
	if (sv_psn_diff(upto, qe->comp.psn) > 0)
		qe->comp.psn = upto;
	/* Resending what was just acknowledged is pointless: skip ahead. */
	if (sv_psn_diff(qe->comp.psn, qe->req.psn) > 0)
		sv_req_goto(qe, qe->comp.psn, false);
	sv_comp_retire(qe);
	return lost;
}

/* The wait before the next timeout.  IBA gives the Local ACK Timeout as
 * a lower bound; over a host's scheduler rather than a fabric, a peer
 * whose threads did not run for a while looks exactly like a dead one, so
 * timeouts in a row without progress double the wait (as TCP's RTO does),
 * up to SV_MAX_BACKOFF_NS: with retry_cnt 7 a QP gives up after about
 * 5.5 s of silence instead of 0.8 s, and a loaded host's slow peer is not
 * mistaken for a dead one. */
static uint64_t retry_wait(struct sv_qp_engine *qe)
{
	uint64_t base = qe->comp.timeout_ns, cap, ns;

	cap = base > SV_MAX_BACKOFF_NS ? base : SV_MAX_BACKOFF_NS;
	ns = qe->comp.backoff < 32 ? base << qe->comp.backoff : cap;
	return ns > cap || ns < base ? cap : ns;
}

/* Resend from comp.psn, spending a retry (shared by timeouts, sequence
 * NAKs and implied NAKs). */
static void retry(struct sv_qp_engine *qe, uint32_t psn, const char *why)
{
	if (sv_log_level >= SV_LOG_DBG) {
		sv_dbg("qp 0x%06x retry (%s) from psn %u, %u left", qe->qpn,
		       why, psn, qe->comp.retry_left);
		sv_qp_dump(qe, stderr);
	}
	if (!qe->comp.retry_left) {
		struct sv_send_wqe *w = wqe_at(qe, qe->comp.idx);

		SV_STAT(qe->eng, retry_exceeded_err);
		if (sv_log_level >= SV_LOG_DBG)
			sv_stats_print(qe->eng, stderr);
		if (qe->comp.idx != sq_tail(qe))
			fail_wqe(qe, w, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qe->comp.retry_left--;
	sv_cc_loss(qe, false);
	sv_req_rewind(qe, psn);
	if (qe->comp.timeout_ns) {
		qe->comp.deadline = sv_eng_now(qe->eng) + retry_wait(qe);
		sv_timer_note(qe->eng, qe->comp.deadline);
	}
}

static void implied_nak(struct sv_qp_engine *qe)
{
	/* One resend per gap: every later response of the same burst would
	 * otherwise trigger its own. */
	if (qe->comp.retried && qe->comp.retried_psn == qe->comp.psn)
		return;
	SV_STAT(qe->eng, implied_nak_retry);
	qe->comp.retried = true;
	qe->comp.retried_psn = qe->comp.psn;
	retry(qe, qe->comp.psn, "implied NAK");
}

/* The WQE whose PSN range holds psn, among the outstanding ones. */
struct sv_send_wqe *sv_wqe_of_psn(struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t tail = sq_tail(qe), idx;

	for (idx = qe->comp.idx; idx != tail; idx++) {
		struct sv_send_wqe *w = wqe_at(qe, idx);

		if (w->state == SV_WQE_PENDING)
			break;
		if (sv_wqe_holds_psn(w, psn))
			return w;
	}
	return NULL;
}

static void on_nak_error(struct sv_qp_engine *qe, uint32_t psn,
			 enum ibv_wc_status st)
{
	struct sv_send_wqe *target;
	uint32_t tail = sq_tail(qe);

	SV_STAT(qe->eng, nak_rcvd);
	ack_through(qe, sv_psn_add(psn, SV_PSN_MASK));
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return;
	target = sv_wqe_of_psn(qe, psn);
	if (!target)
		target = wqe_at(qe, qe->comp.idx);
	/* Earlier WQEs whose responses never came cannot complete now. */
	while (qe->comp.idx != tail && wqe_at(qe, qe->comp.idx) != target) {
		struct sv_send_wqe *w = wqe_at(qe, qe->comp.idx);

		w->state = SV_WQE_ERROR;
		w->status = IBV_WC_WR_FLUSH_ERR;
		sv_complete_send(qe, IBV_WC_WR_FLUSH_ERR);
	}
	if (qe->comp.idx != tail)
		fail_wqe(qe, target, st);
	else
		sv_qp_to_error(qe, SV_ERR_NO_EVENT);
}

static void on_ack(struct sv_qp_engine *qe, struct sv_pkt *pkt)
{
	uint8_t syn = (uint8_t)sv_aeth_syndrome(sv_pkt_h(pkt, SV_HDR_AETH));
	uint32_t psn = pkt->psn;
	uint32_t before = qe->comp.psn;
	bool lost;

	/* Only PSNs we sent: [comp.psn - 1, max_psn - 1]. */
	if (sv_psn_diff(psn, qe->req.max_psn) >= 0 ||
	    sv_psn_diff(psn, sv_psn_add(qe->comp.psn, SV_PSN_MASK)) < 0) {
		SV_STAT(qe->eng, drop_stale_resp);
		return;
	}
	switch (syn & SV_AETH_TYPE_MASK) {
	case SV_AETH_ACK:
		if (sv_psn_diff(psn, qe->comp.psn) < 0) {
			/* A duplicate ACK for the PSN before the oldest one
			 * outstanding: the responder still waits for it
			 * (its NAK or our resend was lost).  Resend now
			 * rather than at the timeout, unless we just did. */
			if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) > 0 &&
			    sv_eng_now(qe->eng) - qe->comp.last_rewind >
				    dupack_guard(qe)) {
				SV_STAT(qe->eng, fast_retransmit);
				retry(qe, qe->comp.psn, "duplicate ACK");
			}
			return;
		}
		rtt_sample(qe, psn);
		if (ack_through(qe, psn)) {
			if (qe->comp.psn != before)
				progress_from(qe, before);
			implied_nak(qe);
		} else if (qe->comp.psn != before) {
			progress_from(qe, before);
		}
		break;
	case SV_AETH_RNR_NAK:
		SV_STAT(qe->eng, rcvd_rnr_err);
		ack_through(qe, sv_psn_add(psn, SV_PSN_MASK));
		if (atomic_load(&qe->state) == IBV_QPS_ERR)
			return;
		if (qe->rnr_retry != 7) {
			if (!qe->comp.rnr_left) {
				struct sv_send_wqe *w = sv_wqe_of_psn(qe, psn);

				SV_STAT(qe->eng, retry_rnr_exceeded_err);
				fail_wqe(qe, w ? w : wqe_at(qe, qe->comp.idx),
					 IBV_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qe->comp.rnr_left--;
		}
		/* Resend from the refused PSN once the responder's RNR time
		 * (IBA) has passed; the ACK timer is off meanwhile. */
		sv_req_rewind(qe, psn);
		qe->comp.deadline = 0;
		qe->comp.probe = 0;
		qe->comp.rnr_until = sv_eng_now(qe->eng) +
				     (uint64_t)rnr_cus[syn & 0x1f] * 10000ull;
		sv_timer_note(qe->eng, qe->comp.rnr_until);
		break;
	case SV_AETH_NAK:
		switch (syn) {
		case SV_AETH_NAK_PSN_SEQ:
			SV_STAT(qe->eng, rcvd_seq_err);
			lost = ack_through(qe, sv_psn_add(psn, SV_PSN_MASK));
			if (qe->comp.psn != before)
				progress_from(qe, before);
			if (lost)
				implied_nak(qe);
			else
				retry(qe, psn, "sequence NAK");
			break;
		case SV_AETH_NAK_INVALID:
			on_nak_error(qe, psn, IBV_WC_REM_INV_REQ_ERR);
			break;
		case SV_AETH_NAK_REM_ACCESS:
			on_nak_error(qe, psn, IBV_WC_REM_ACCESS_ERR);
			break;
		case SV_AETH_NAK_REM_OP:
			on_nak_error(qe, psn, IBV_WC_REM_OP_ERR);
			break;
		case SV_AETH_NAK_INV_RD:
			on_nak_error(qe, psn, IBV_WC_REM_INV_RD_REQ_ERR);
			break;
		default:
			SV_STAT(qe->eng, drop_bad_resp);
			break;
		}
		break;
	default:
		SV_STAT(qe->eng, drop_bad_resp);
		break;
	}
}

/* The READ/ATOMIC WQE a response at psn belongs to, after acknowledging
 * the SEND/WRITE WQEs before it (a response implies they were executed). */
static struct sv_send_wqe *rdat_for(struct sv_qp_engine *qe, uint32_t psn)
{
	struct sv_send_wqe *w;

	if (sv_psn_diff(psn, qe->comp.psn) < 0 ||
	    sv_psn_diff(psn, qe->req.max_psn) >= 0) {
		SV_STAT(qe->eng, drop_stale_resp);
		return NULL;
	}
	w = sv_wqe_of_psn(qe, psn);
	if (!w || !sv_wr_is_rd_atomic(w->opcode)) {
		SV_STAT(qe->eng, drop_bad_resp);
		return NULL;
	}
	if (sv_psn_diff(w->first_psn, qe->comp.psn) > 0) {
		uint32_t before = qe->comp.psn;

		bool lost =
			ack_through(qe, sv_psn_add(w->first_psn, SV_PSN_MASK));

		if (qe->comp.psn != before)
			progress_from(qe, before);
		if (lost) {
			implied_nak(qe); /* an earlier READ/ATOMIC lost */
			return NULL;
		}
	}
	if (wqe_at(qe, qe->comp.idx) != w)
		return NULL;
	if (psn != qe->comp.psn) {
		implied_nak(qe); /* responses missing before this one */
		return NULL;
	}
	return w;
}

static void on_read_resp(struct sv_qp_engine *qe, struct sv_pkt *pkt)
{
	struct sv_send_wqe *w = rdat_for(qe, pkt->psn);
	uint64_t off, rest;
	uint32_t want;
	bool more;

	if (!w || w->opcode != IBV_WR_RDMA_READ)
		return;
	off = (uint64_t)(uint32_t)sv_psn_diff(pkt->psn, w->first_psn) *
	      qe->pmtu;
	rest = w->length > off ? w->length - off : 0;
	want = rest > qe->pmtu ? qe->pmtu : (uint32_t)rest;
	/* The response must be exactly the next piece of the WQE.  Where
	 * the request it answers ends does not matter: after a resend the
	 * responder may still be answering an earlier, longer request for the
	 * same bytes, and those responses are as good. */
	if (pkt->paylen != want || off != w->read_done) {
		SV_STAT(qe->eng, drop_bad_resp);
		return;
	}
	if (want && sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge, off,
				pkt->payload, want, true)) {
		fail_wqe(qe, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	w->read_done += want;
	qe->comp.psn = sv_psn_add(qe->comp.psn, 1);
	cc_acked(qe, 1);
	/* Decided before the WQE completes: its slot may be reused then. */
	more = (pkt->mask & SV_M_END) || w->read_done >= w->sent;
	if (w->read_done == w->length &&
	    (w->length || (pkt->mask & SV_M_END))) {
		w->state = SV_WQE_DONE;
		qe->req.rd_atomic--;
		sv_comp_retire(qe);
	}
	progress(qe);
	if (more)
		sv_work_add(qe, SV_WORK_REQ); /* next chunk, fence, limit */
}

static void on_atomic_ack(struct sv_qp_engine *qe, struct sv_pkt *pkt)
{
	struct sv_send_wqe *w = rdat_for(qe, pkt->psn);
	uint64_t orig;

	if (!w || w->opcode == IBV_WR_RDMA_READ) {
		if (w)
			SV_STAT(qe->eng, drop_bad_resp);
		return;
	}
	/* The original value, in host order, into the WQE's 8-byte SGE. */
	orig = sv_atmack_orig(sv_pkt_h(pkt, SV_HDR_ATMACK));
	w->atomic_result = orig;
	if (sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge, 0, (uint8_t *)&orig,
			sizeof(orig), true)) {
		fail_wqe(qe, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	qe->comp.psn = sv_psn_add(qe->comp.psn, 1);
	cc_acked(qe, 1);
	w->state = SV_WQE_DONE;
	qe->req.rd_atomic--;
	sv_comp_retire(qe);
	progress(qe);
	sv_work_add(qe, SV_WORK_REQ);
}

void sv_comp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt)
{
	int state = atomic_load(&qe->state);

	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD &&
	    state != IBV_QPS_SQE) {
		SV_STAT(qe->eng, drop_qp_state);
		return;
	}
	if (pkt->mask & SV_M_READ_RESP)
		on_read_resp(qe, pkt);
	else if (pkt->opcode == SV_OP_RC_ATOMIC_ACKNOWLEDGE)
		on_atomic_ack(qe, pkt);
	else
		on_ack(qe, pkt);
	sv_work_add(qe, SV_WORK_REQ);
}

void sv_comp_timer(struct sv_qp_engine *qe, uint64_t now)
{
	qe->comp.deadline = 0;
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return;
	if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) <= 0)
		return; /* nothing outstanding */
	SV_STAT(qe->eng, completer_retry_err);
	qe->comp.retried = false;
	if (qe->comp.backoff < 32)
		qe->comp.backoff++;
	sv_cc_loss(qe, true);
	retry(qe, qe->comp.psn, "timeout");
	sv_work_add(qe, SV_WORK_REQ);
}
