/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The completer: matches responses to send WQEs and completes them in
 * order, as an explicit state machine over each response packet (the
 * shape of rxe's rxe_comp.c and of our responder, resp.c):
 *
 *   GET_ACK -> CHECK_PSN -+-> CHECK_ACK -+-> WRITE_SEND ----> UPDATE_COMP
 *                         |              +-> DUP_ACK [-> FAST_RETRANSMIT]
 *                         |              +-> SEQ_NAK -------> UPDATE_COMP
 *                         |              +-> RNR -> RNR_RETRY
 *                         |              +-> ERR_NAK_*
 *                         +-> GET_WQE [-> COMP_ACK -> UPDATE_COMP]
 *                             -> CHECK_SEQ -> READ | ATOMIC
 *                             [-> COMP_WQE] -> UPDATE_COMP
 *   UPDATE_COMP -> IMPLIED_NAK, or the state its caller chose
 *   CHECK_SEQ -> IMPLIED_NAK when responses are missing before this one
 *   FAST_RETRANSMIT, IMPLIED_NAK, SEQ_NAK -> ERROR_RETRY -> DONE
 *   DROP_STALE, DROP_BAD, DROP_QUIET -> DONE
 *
 * Each state is one function returning the next state; every drop is a
 * state, every failure an error state mapped by one table (comp_errors)
 * to the NAK that reports it and the completion status.  DONE wakes the
 * requester; EXIT (the QP sends nothing) does not.
 *
 * comp.psn is the oldest PSN not yet acknowledged and comp.idx the oldest
 * WQE not yet completed.  Responses are handled by kind:
 *   ACK             everything through its PSN is done (IBA);
 *   RNR NAK         wait the responder's RNR time, resend (rnr_retry, 7 =
 *                   forever, then IBV_WC_RNR_RETRY_EXC_ERR);
 *   PSN seq. NAK    go back N to its PSN (IBA), or, from a softverbs
 *                   responder that keeps out-of-order packets (its ACKs
 *                   say so in the BTH's reserved bits, wire.h), resend
 *                   only the hole it names;
 *   other NAKs      the WQE at its PSN fails (remote access, invalid
 *                   request, remote operational error) and the QP errs;
 *   READ responses  placed into the READ WQE's SGEs in PSN order; a gap
 *                   or an ACK beyond an unanswered READ/ATOMIC means a
 *                   response was lost ("implied NAK", IBA):
 *                   resend from comp.psn;
 *   ATOMIC ACK      the original value goes to the WQE's SGE;
 *   wrong ones      a response of the wrong kind for the oldest WQE (a
 *                   READ response to a SEND, an ATOMIC ACK to a READ)
 *                   fails it with IBV_WC_FATAL_ERR, a READ response
 *                   longer than asked with IBV_WC_LOC_PROT_ERR, at once,
 *                   as rxe's completer does.
 * The ACK timer (timeout, retry_cnt, then IBV_WC_RETRY_EXC_ERR) resends
 * from comp.psn when nothing arrives.
 *
 * A WQE that completes successfully but unsignaled keeps its SQ slot
 * until a later completion is generated (sq.head only moves then), as on
 * a real HCA.
 */
#include "engine/transport/comp.h"

#include <inttypes.h>

#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/qpe.h"
#include "engine/transport/req.h"
#include "engine/transport/sgl.h"
#include "engine/transport/stats.h"
#include "link/shm.h"
#include "util/env.h"
#include "util/log.h"

/* The states, in the order a packet meets them; errors last. */
/* clang-format off */
#define COMP_STATES(X)                                                       \
	X(GET_ACK)         /* the packet's kind; the QP must send */         \
	X(CHECK_PSN)       /* a PSN we sent */                               \
	X(CHECK_ACK)       /* ACK, RNR NAK, NAK: the AETH syndrome */        \
	X(GET_WQE)         /* the READ/ATOMIC WQE a response answers */      \
	X(COMP_ACK)        /* a response acknowledges the WQEs before it */  \
	X(CHECK_SEQ)       /* the next response of the oldest WQE */         \
	X(READ)            /* READ data placed */                            \
	X(ATOMIC)          /* the original value stored */                   \
	X(WRITE_SEND)      /* an ACK: SEND/WRITE WQEs done through it */     \
	X(COMP_WQE)        /* a READ/ATOMIC WQE completes */                 \
	X(UPDATE_COMP)     /* comp.psn moved: window, timers */              \
	X(DUP_ACK)         /* the ACK of comp.psn - 1 again */               \
	X(FAST_RETRANSMIT) /* ... taken as a lost packet */                  \
	X(SEQ_NAK)         /* PSN sequence error NAK */                      \
	X(IMPLIED_NAK)     /* a READ/ATOMIC response was lost */             \
	X(ERROR_RETRY)     /* go back N, spending a retry */                 \
	X(RNR)             /* RNR NAK */                                     \
	X(RNR_RETRY)       /* resend after the RNR time */                   \
	X(DROP_STALE)      /* dropped: not a PSN outstanding */              \
	X(DROP_BAD)        /* dropped: inconsistent with the WQE */          \
	X(DROP_QUIET)      /* dropped uncounted */                           \
	X(EXIT)            /* dropped unseen, the requester not woken */     \
	X(DONE)            /* handled: the requester runs */                 \
	X(ERR_NAK_INV_REQ)                                                   \
	X(ERR_NAK_REM_ACCESS)                                                \
	X(ERR_NAK_REM_OP)                                                    \
	X(ERR_NAK_INV_RD)                                                    \
	X(ERR_LOC_PROT)                                                      \
	X(ERR_READ_LONG)                                                     \
	X(ERR_BAD_RESP)                                                      \
	X(ERR_RNR_RETRY_EXC)

#define X(name) COMP_##name,
enum comp_state { COMP_STATES(X) COMP_NUM_STATES };
#undef X
#define X(name) #name,
static const char *const comp_state_names[] = { COMP_STATES(X) };
#undef X
/* clang-format on */

/* Each failure: nak, the AETH NAK code that reports it (IBA), 0 for one
 * found here; wc, the status of the WQE it fails; said: its state warned
 * why (not the explain hook's reading of the status).  The QP then enters
 * the error state and the later WQEs are flushed. */
static const struct comp_error {
	uint8_t nak;
	enum ibv_wc_status wc;
	bool said;
} comp_errors[COMP_NUM_STATES] = {
	[COMP_ERR_NAK_INV_REQ] = { SV_AETH_NAK_INVALID,
				   IBV_WC_REM_INV_REQ_ERR },
	[COMP_ERR_NAK_REM_ACCESS] = { SV_AETH_NAK_REM_ACCESS,
				      IBV_WC_REM_ACCESS_ERR },
	[COMP_ERR_NAK_REM_OP] = { SV_AETH_NAK_REM_OP, IBV_WC_REM_OP_ERR },
	[COMP_ERR_NAK_INV_RD] = { SV_AETH_NAK_INV_RD,
				  IBV_WC_REM_INV_RD_REQ_ERR },
	/* The READ data or atomic result cannot be stored (a bad SGE). */
	[COMP_ERR_LOC_PROT] = { 0, IBV_WC_LOC_PROT_ERR },
	/* A READ response carries more than the WQE asked for: rxe's
	 * completer fails to place it and reports the same. */
	[COMP_ERR_READ_LONG] = { 0, IBV_WC_LOC_PROT_ERR, true },
	/* A response of the wrong kind for its WQE (a READ response to a
	 * SEND, an ATOMIC ACK to a READ...): rxe's IB_WC_FATAL_ERR. */
	[COMP_ERR_BAD_RESP] = { 0, IBV_WC_FATAL_ERR, true },
	[COMP_ERR_RNR_RETRY_EXC] = { 0, IBV_WC_RNR_RETRY_EXC_ERR },
};

enum comp_kind { KIND_ACK, KIND_READ, KIND_ATOMIC };

struct comp_ctx {
	struct sv_qp_engine *qe;
	struct sv_pkt *pkt;
	enum comp_kind kind;
	uint8_t syn; /* AETH syndrome (ACKs and NAKs) */
	struct sv_send_wqe *w; /* the READ/ATOMIC WQE a response answers */
	/* UPDATE_COMP: comp.psn before, a READ/ATOMIC response lost, and
	 * the next state otherwise */
	uint32_t before;
	bool lost;
	enum comp_state next;
	/* ERROR_RETRY: resend from retry_psn (sack_n PSNs of it, 0: go back
	 * N), for the log: why */
	uint32_t retry_psn;
	uint32_t sack_n;
	bool free_retry; /* retry_cnt not spent */
	const char *why;
};

/* IBA: RNR NAK timer field -> microseconds * 100. */
static const uint32_t rnr_cus[32] = {
	65536, 1,    2,	   3,	 4,    6,     8,     12,    16,	   24,	  32,
	48,    64,   96,   128,	 192,  256,   384,   512,   768,   1024,  1536,
	2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

/* ---- the send queue ------------------------------------------------------ */

static struct sv_send_wqe *wqe_at(struct sv_qp_engine *qe, uint32_t idx)
{
	return sv_wq_at(&qe->qp->sq, idx);
}

/* Complete DONE WQEs from comp.idx; report an ERROR WQE and fail the QP. */
void sv_comp_retire(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = sv_sq_tail(qe);

	while (qe->comp.idx != tail) {
		struct sv_send_wqe *w = wqe_at(qe, qe->comp.idx);
		bool sig;

		if (w->state == SV_WQE_ERROR) {
			/* The QP is in ERR before its error completion can
			 * be polled (ibv_query_qp right after it says so);
			 * the flush completes this WQE with its status, then
			 * the rest with FLUSH_ERR. */
			sv_qp_to_error(qe, SV_ERR_NO_EVENT);
			return;
		}
		if (w->state != SV_WQE_DONE)
			break;
		SV_QSTAT(qe, wr_done);
		SV_QSTAT_ADD(qe, wr_bytes, w->length);
		if (w->strict_summed) /* SOFTVERBS_STRICT=1 */
			sv_hook_strict_sum_check(qp, w);
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

static void fail_wqe(struct sv_qp_engine *qe, struct sv_send_wqe *w,
		     enum ibv_wc_status st, bool explained)
{
	if (!explained)
		sv_hook_explain_wqe(qe, w, st);
	w->state = SV_WQE_ERROR;
	w->status = st;
	sv_comp_retire(qe);
}

/* The WQE whose PSN range holds psn, among the outstanding ones. */
struct sv_send_wqe *sv_wqe_of_psn(struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t tail = sv_sq_tail(qe), idx;

	for (idx = qe->comp.idx; idx != tail; idx++) {
		struct sv_send_wqe *w = wqe_at(qe, idx);

		if (w->state == SV_WQE_PENDING)
			break;
		if (sv_wqe_holds_psn(w, psn))
			return w;
	}
	return NULL;
}

/* Mark SEND/WRITE WQEs acknowledged through psn.  Returns true when an
 * unanswered READ/ATOMIC lies at or before psn (its response was lost). */
static bool ack_through(struct sv_qp_engine *qe, uint32_t psn)
{
	uint32_t tail = sv_sq_tail(qe), idx, upto = sv_psn_add(psn, 1);
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
	/* The responder took a packet first sent after the last resend:
	 * it has answered the duplicates before it. */
	if (sv_psn_diff(psn, qe->comp.dup_mark) >= 0)
		qe->comp.dup_owed = 0;
	/* Resending what was just acknowledged is pointless: skip ahead. */
	if (sv_psn_diff(qe->comp.psn, qe->req.psn) > 0)
		sv_req_goto(qe, qe->comp.psn, false);
	sv_comp_retire(qe);
	return lost;
}

/* ---- congestion control -------------------------------------------------- */

/* Loss-based AIMD as TCP NewReno (RFC 6582) does it, per QP: slow start
 * below ssthresh, then one more packet per window acknowledged, or, while
 * under the window the last loss cut, half the way back to it per window
 * (at most SV_CC_MAX_INC: BIC-TCP's binary search increase, which Linux
 * ran before CUBIC; one packet a round trip took ~75 round trips to win
 * back a cut of 256, and under 1% loss a cut came every ~20); a loss
 * cuts the window to 0.7 of itself (CUBIC's beta, Linux TCP's default:
 * halving, NewReno's, left ib_write_bw at 0.33x its loss-free rate under
 * 1% random loss between namespaces, 0.48x now), once per episode when
 * the holes are resent selectively (the losses of one window are one congestion event, and
 * selective retransmission reports each hole on its own: halving for each
 * took the window to its minimum under 1% loss), with no growth until the
 * episode ends; each go-back-N rewind cuts it again; a timeout starts
 * over from the minimum.  The window counts PSNs from the oldest unacknowledged one,
 * so packets the responder kept past a hole still count until it is
 * filled. */
static void cc_acked(struct sv_qp_engine *qe, uint32_t n)
{
	if (qe->cc_recovering) {
		if (sv_psn_diff(qe->comp.psn, qe->cc_recover) < 0)
			return;
		qe->cc_recovering = false;
	}
	if (qe->cwnd < qe->ssthresh) {
		qe->cwnd += n;
	} else {
		/* Below the window of the last cut, half the way back to it
		 * per round trip (at most SV_CC_MAX_INC packets), as BIC-TCP
		 * searches for it; at or above it, one packet (Reno).  Toward
		 * a softverbs peer only (its ACKs say so, sack_peer): other
		 * peers keep Reno's until interop.loss has shown the climb
		 * toward rxe (its guest's network wedged in one run of five
		 * with it; that wedge comes without it too, docs/engine.md). */
		uint32_t inc = qe->comp.sack_peer && qe->cc_wmax > qe->cwnd ?
				       (qe->cc_wmax - qe->cwnd) / 2 :
				       1;

		if (inc > SV_CC_MAX_INC)
			inc = SV_CC_MAX_INC;
		if (!inc)
			inc = 1;
		qe->cwnd_acc += n * inc;
		while (qe->cwnd_acc >= qe->cwnd) {
			qe->cwnd_acc -= qe->cwnd;
			qe->cwnd++;
		}
	}
	if (qe->cwnd > qe->window)
		qe->cwnd = qe->window;
}

void sv_cc_loss(struct sv_qp_engine *qe, bool timeout, bool selective)
{
	/* Only a selective resend belongs to the episode: going back N
	 * sends the whole window again, into the queue that just dropped
	 * part of it (through a 200 Mbit/s bucket, rewinds of an uncut
	 * window of 128 dropped their own resends until retry_cnt ran out),
	 * so each rewind cuts, as before. */
	if (!timeout && selective && qe->cc_recovering &&
	    sv_psn_diff(qe->comp.psn, qe->cc_recover) < 0)
		return; /* the same episode */
	SV_STAT(qe->eng, cc_cuts);
	qe->cc_wmax = qe->cwnd;
	qe->ssthresh = qe->cwnd * 7 / 10 > SV_WINDOW_MIN ? qe->cwnd * 7 / 10 :
							   SV_WINDOW_MIN;
	qe->cwnd = timeout ? SV_WINDOW_MIN : qe->ssthresh;
	qe->cwnd_acc = 0;
	qe->cc_recovering = true;
	qe->cc_recover = qe->req.max_psn;
}

/* ---- timers: progress, probe, retry -------------------------------------- */

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
	uint64_t ns = sv_rtt_rto(&qe->comp.rtt, SV_PROBE_MIN_NS, SV_PROBE_NS);
	uint64_t cap = qe->comp.timeout_ns / 4;

	/* A loaded host's scheduler makes round trips of tens of ms and an
	 * RTO beyond the ACK timer: the probe would never come first, and
	 * every lost resend would cost a retry and a whole timeout. */
	if (cap && ns > cap)
		ns = cap > SV_PROBE_MIN_NS ? cap : SV_PROBE_MIN_NS;
	/* Waiting for a READ's (or an atomic's) response: its length is
	 * not in the RTT, and a resent READ is executed again (IBA), the
	 * whole response resent (rxe answered 33,679 response packets for
	 * 12,800 when probed early).  A later floor there. */
	if (ns < SV_PROBE_READ_NS && qe->comp.idx != sv_sq_tail(qe)) {
		uint32_t op = wqe_at(qe, qe->comp.idx)->opcode;

		if (op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			ns = SV_PROBE_READ_NS;
	}
	return ns;
}

void sv_probe_arm(struct sv_qp_engine *qe, bool reset)
{
	if (reset || !qe->comp.probe_ns)
		qe->comp.probe_ns = probe_base(qe);
	qe->comp.probe = sv_eng_now(qe->eng) + qe->comp.probe_ns;
	sv_qp_timer_arm(qe, qe->comp.probe);
}

/* Packets this engine knows it lost or disordered: rings found full,
 * faults injected (SOFTVERBS_FAULT, inject.c). */
static uint64_t shm_losses(const struct sv_engine *eng)
{
	const struct sv_stats *st = eng->stats;

	return st->shm_ring_full + st->fault_drop + st->fault_delay +
	       st->fault_reorder + st->fault_corrupt + st->fault_retry;
}

void sv_comp_probe(struct sv_qp_engine *qe, uint64_t now)
{
	qe->comp.probe = 0;
	if (atomic_load(&qe->state) == IBV_QPS_ERR || qe->comp.rnr_until)
		return;
	if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) <= 0)
		return; /* nothing outstanding */
	/* On shm nothing is lost while the peer has not even taken what
	 * waits in its ring (it was descheduled, on a loaded host): a resend
	 * would queue behind the very packets it repeats.  Look again later;
	 * the IBA timeout still runs and decides when to give up. */
	if (qe->shm && sv_shm_peer_backlog(qe->shm)) {
		SV_STAT(qe->eng, probe_deferred);
		sv_probe_arm(qe, false);
		return;
	}
	/* Nor when this engine lost no packet since this QP last probed (a
	 * peer's ring full, or a fault injected): the rings lose nothing
	 * else, and what is missing is only a late ACK (a peer descheduled
	 * after taking its ring), which a resend would turn into a
	 * duplicate and a retransmission of everything after it. */
	if (qe->shm && shm_losses(qe->eng) == qe->comp.losses_seen) {
		SV_STAT(qe->eng, probe_deferred);
		sv_probe_arm(qe, false);
		return;
	}
	if (qe->shm)
		qe->comp.losses_seen = shm_losses(qe->eng);
	SV_STAT(qe->eng, probe_retransmit);
	SV_QSTAT(qe, retrans);
	if (sv_log_level >= SV_LOG_DBG)
		sv_dbg("qp 0x%06x probe psn %u (every %llu us)", qe->qpn,
		       qe->comp.psn,
		       (unsigned long long)qe->comp.probe_ns / 1000);
	sv_req_probe(qe);
	if (!qe->comp.timeout_ns || qe->comp.probe_ns * 2 < qe->comp.timeout_ns)
		qe->comp.probe_ns *= 2;
	if (qe->comp.probe_ns > 1000ull * 1000 * 1000)
		qe->comp.probe_ns = 1000ull * 1000 * 1000;
	sv_probe_arm(qe, false);
}

/* Forward progress: the retry counters start over (IBA) and
 * the timer restarts if anything is still outstanding. */
static void progress(struct sv_qp_engine *qe)
{
	bool outstanding = sv_psn_diff(qe->req.max_psn, qe->comp.psn) > 0;

	qe->comp.retry_left = qe->retry_cnt;
	qe->comp.rnr_left = qe->rnr_retry;
	qe->comp.retried = false;
	qe->comp.backoff = 0;
	if (outstanding && qe->comp.timeout_ns) {
		qe->comp.deadline = sv_eng_now(qe->eng) + qe->comp.timeout_ns;
		sv_qp_timer_arm(qe, qe->comp.deadline);
	} else {
		qe->comp.deadline = 0;
	}
	if (outstanding)
		sv_probe_arm(qe, true);
	else
		qe->comp.probe = 0;
}

/* Progress by comp.psn having moved from before: the window grows too. */
static void progress_from(struct sv_qp_engine *qe, uint32_t before)
{
	int32_t n = sv_psn_diff(qe->comp.psn, before);

	if (n > 0)
		cc_acked(qe, (uint32_t)n);
	progress(qe);
}

/* Duplicate ACKs within about a round trip of a rewind answer packets
 * sent before it: not a new loss. */
static uint64_t dupack_guard(struct sv_qp_engine *qe)
{
	const struct sv_rtt *r = &qe->comp.rtt;

	return r->srtt ? 2 * r->srtt + 100000 : 1000000;
}

static void rtt_sample(struct sv_qp_engine *qe, uint32_t acked_psn)
{
	uint64_t s;

	if (!sv_rtt_acked(&qe->comp.rtt_sent, acked_psn, sv_eng_now(qe->eng),
			  &s))
		return;
	sv_rtt_sample(&qe->comp.rtt, s);
	SV_STAT(qe->eng, rtt_samples);
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

/* Resend from psn, spending a retry (shared by the ACK timer and the
 * ERROR_RETRY state: sequence NAKs, implied NAKs, duplicate ACKs); none
 * left: the oldest WQE fails with IBV_WC_RETRY_EXC_ERR (IBA). */
static void retry(struct sv_qp_engine *qe, uint32_t psn, uint32_t sack_n,
		  bool free_retry, const char *why)
{
	if (sv_log_level >= SV_LOG_DBG) {
		sv_dbg("qp 0x%06x retry (%s) from psn %u, %u left", qe->qpn,
		       why, psn, qe->comp.retry_left);
		sv_hook_qp_dump(qe, stderr);
	}
	if (!qe->comp.retry_left && !free_retry) {
		struct sv_send_wqe *w = wqe_at(qe, qe->comp.idx);

		SV_STAT(qe->eng, retry_exceeded_err);
		if (sv_log_level >= SV_LOG_DBG)
			sv_hook_stats_print(qe->eng, stderr);
		if (qe->comp.idx != sv_sq_tail(qe))
			fail_wqe(qe, w, IBV_WC_RETRY_EXC_ERR, false);
		return;
	}
	if (!free_retry)
		qe->comp.retry_left--;
	if (sack_n && sv_req_resend(qe, psn, sack_n)) {
		SV_STAT(qe->eng, sack_resend);
		sv_cc_loss(qe, false, true);
	} else {
		sv_cc_loss(qe, false, false);
		sv_req_rewind(qe, psn);
	}
	if (qe->comp.timeout_ns) {
		qe->comp.deadline = sv_eng_now(qe->eng) + retry_wait(qe);
		sv_qp_timer_arm(qe, qe->comp.deadline);
	}
}

/* The ACK timer: nothing arrived for the Local ACK Timeout (IBA). */
void sv_comp_timer(struct sv_qp_engine *qe, uint64_t now)
{
	qe->comp.deadline = 0;
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return;
	if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) <= 0)
		return; /* nothing outstanding */
	SV_STAT(qe->eng, completer_retry_err);
	SV_QSTAT(qe, retrans);
	qe->comp.retried = false;
	if (qe->comp.backoff < 32)
		qe->comp.backoff++;
	sv_cc_loss(qe, true, false);
	retry(qe, qe->comp.psn, 0, false, "timeout");
	sv_work_add(qe, SV_WORK_REQ);
}

/* ---- states -------------------------------------------------------------- */

/* The QP must be able to send (IBA: responses mean nothing otherwise);
 * the packet's kind picks the path. */
static enum comp_state get_ack(struct comp_ctx *c)
{
	int state = atomic_load(&c->qe->state);

	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD &&
	    state != IBV_QPS_SQE) {
		SV_STAT(c->qe->eng, drop_qp_state);
		return COMP_EXIT;
	}
	c->kind = (c->pkt->mask & SV_M_READ_RESP)		? KIND_READ :
		  c->pkt->opcode == SV_OP_RC_ATOMIC_ACKNOWLEDGE ? KIND_ATOMIC :
								  KIND_ACK;
	return COMP_CHECK_PSN;
}

/* Only PSNs we sent: a response answers one of [comp.psn, max_psn - 1];
 * an ACK or NAK may also repeat comp.psn - 1 (a duplicate ACK). */
static enum comp_state check_psn(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	uint32_t psn = c->pkt->psn, lo = qe->comp.psn;

	if (c->kind == KIND_ACK)
		lo = sv_psn_add(lo, SV_PSN_MASK);
	if (sv_psn_diff(psn, qe->req.max_psn) >= 0 || sv_psn_diff(psn, lo) < 0)
		return COMP_DROP_STALE;
	return c->kind == KIND_ACK ? COMP_CHECK_ACK : COMP_GET_WQE;
}

/* The AETH syndrome: ACK, RNR NAK or NAK with its code (IBA). */
static enum comp_state check_ack(struct comp_ctx *c)
{
	uint8_t syn = (uint8_t)sv_aeth_syndrome(sv_pkt_h(c->pkt, SV_HDR_AETH));
	uint32_t sack = (uint32_t)sv_bth_resv7(c->pkt->hdr);
	int s;

	c->syn = syn;
	/* Reserved bits (IBA: ignored) unless both ends are softverbs with
	 * selective retransmission on (wire.h, SV_SACK_MAX). */
	if (sack && c->pkt->opcode == SV_OP_RC_ACKNOWLEDGE && sv_links_sack()) {
		c->qe->comp.sack_peer = true;
		c->sack_n = sack;
	}
	switch (syn & SV_AETH_TYPE_MASK) {
	case SV_AETH_ACK:
		if (sv_psn_diff(c->pkt->psn, c->qe->comp.psn) < 0)
			return COMP_DUP_ACK;
		return COMP_WRITE_SEND;
	case SV_AETH_RNR_NAK:
		return COMP_RNR;
	case SV_AETH_NAK:
		if (syn == SV_AETH_NAK_PSN_SEQ)
			return COMP_SEQ_NAK;
		for (s = COMP_ERR_NAK_INV_REQ; s < COMP_NUM_STATES; s++)
			if (comp_errors[s].nak == syn)
				return (enum comp_state)s;
		return COMP_DROP_BAD; /* reserved NAK code */
	default:
		return COMP_DROP_BAD; /* reserved syndrome type */
	}
}

/* Acknowledge through psn, then UPDATE_COMP; next unless a READ/ATOMIC
 * response turned out lost. */
static enum comp_state acked(struct comp_ctx *c, uint32_t psn,
			     enum comp_state next)
{
	c->before = c->qe->comp.psn;
	c->lost = ack_through(c->qe, psn);
	c->next = next;
	return COMP_UPDATE_COMP;
}

/* An ACK: everything through its PSN is done (IBA: ACKs are cumulative). */
static enum comp_state write_send(struct comp_ctx *c)
{
	rtt_sample(c->qe, c->pkt->psn);
	return acked(c, c->pkt->psn, COMP_DONE);
}

/* A duplicate ACK for the PSN before the oldest one outstanding: the
 * responder still waits for it (its NAK or our resend was lost).  Resend
 * now rather than at the timeout, unless it answers one of our own
 * resends (a responder answers each duplicate: rxe under a slow guest
 * answered 128 resent packets with 128 such ACKs, each of which set off
 * another resend of 128) or we just resent (it then answers packets sent
 * before that). */
static enum comp_state dup_ack(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	if (sv_psn_diff(qe->req.max_psn, qe->comp.psn) <= 0)
		return COMP_DONE;
	if (qe->comp.dup_owed) {
		qe->comp.dup_owed--;
		SV_STAT(qe->eng, dup_ack_resent);
		return COMP_DONE;
	}
	if (sv_eng_now(qe->eng) - qe->comp.last_rewind > dupack_guard(qe))
		return COMP_FAST_RETRANSMIT;
	return COMP_DONE;
}

/* Not a retry of IBA's (timeouts and NAKs are): retry_cnt stays. */
static enum comp_state fast_retransmit(struct comp_ctx *c)
{
	SV_STAT(c->qe->eng, fast_retransmit);
	SV_QSTAT(c->qe, retrans);
	c->retry_psn = c->qe->comp.psn;
	c->free_retry = true;
	c->why = c->sack_n ? "duplicate ACK, selective" : "duplicate ACK";
	return COMP_ERROR_RETRY;
}

/* PSN sequence error NAK: the responder got everything before its PSN
 * and nothing since; go back N to it (IBA). */
static enum comp_state seq_nak(struct comp_ctx *c)
{
	uint64_t unused;

	SV_STAT(c->qe->eng, rcvd_seq_err);
	/* What it acknowledges is not timed: a later ACK covering those
	 * PSNs would be taken as their round trip. */
	sv_rtt_acked(&c->qe->comp.rtt_sent,
		     sv_psn_add(c->pkt->psn, SV_PSN_MASK), 0, &unused);
	c->retry_psn = c->pkt->psn;
	c->why = c->sack_n ? "sequence NAK, selective" : "sequence NAK";
	return acked(c, sv_psn_add(c->pkt->psn, SV_PSN_MASK), COMP_ERROR_RETRY);
}

/* RNR NAK: everything before its PSN is done; the WQE at it waits for
 * a receive WQE at the responder, rnr_retry times (7 = forever, IBA). */
static enum comp_state rnr(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	SV_STAT(qe->eng, rcvd_rnr_err);
	SV_QSTAT(qe, rnr_rcvd);
	/* Unlike an ACK, no progress(): the RNR wait (RNR_RETRY) replaces
	 * the ACK timer and the probe, and the counters stay as they are. */
	ack_through(qe, sv_psn_add(c->pkt->psn, SV_PSN_MASK));
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return COMP_DONE;
	if (qe->rnr_retry != 7) {
		if (!qe->comp.rnr_left) {
			SV_STAT(qe->eng, retry_rnr_exceeded_err);
			return COMP_ERR_RNR_RETRY_EXC;
		}
		qe->comp.rnr_left--;
	}
	return COMP_RNR_RETRY;
}

/* Resend from the refused PSN once the responder's RNR time (IBA) has
 * passed; the ACK timer and the probe are off meanwhile. */
static enum comp_state rnr_retry(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	sv_req_rewind(qe, c->pkt->psn);
	qe->comp.deadline = 0;
	qe->comp.probe = 0;
	qe->comp.rnr_until = sv_eng_now(qe->eng) +
			     (uint64_t)rnr_cus[c->syn & 0x1f] * 10000ull;
	sv_qp_timer_arm(qe, qe->comp.rnr_until);
	return COMP_DONE;
}

/* A response of the wrong kind for the WQE at its PSN (c->w). */
static enum comp_state bad_resp(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	sv_warn_qp(&qe->qp->lograte, qe->qpn, "completer",
		   "wr_id %#" PRIx64 " IBV_WR_%s fails with IBV_WC_FATAL_ERR: "
		   "QP 0x%06x answered it with %s (PSN %u), a response for "
		   "%s",
		   c->w->wr_id, sv_wr(c->w->opcode)->name, qe->dest_qpn,
		   sv_opcode_name(c->pkt->opcode), c->pkt->psn,
		   c->kind == KIND_READ	  ? "an RDMA READ" :
		   c->kind == KIND_ATOMIC ? "an atomic operation" :
					    "another request");
	SV_STAT(qe->eng, drop_bad_resp);
	return COMP_ERR_BAD_RESP;
}

/* The READ/ATOMIC WQE a response answers.  One at the PSN of the oldest
 * WQE, a SEND or a WRITE, is a response of the wrong kind: it fails that
 * WQE at once, as rxe's completer does (not the ACK timer's retries).
 * An ATOMIC WRITE is answered by an empty READ response by rxe (IBA 1.5)
 * and by an ACK by us: such a response is dropped, a later ACK covers
 * it. */
static enum comp_state get_wqe(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_send_wqe *w = sv_wqe_of_psn(qe, c->pkt->psn);

	if (!w)
		return COMP_DROP_BAD;
	if (!sv_wr_is_rd_atomic(w->opcode)) {
		if (w != wqe_at(qe, qe->comp.idx) ||
		    w->opcode == IBV_WR_ATOMIC_WRITE)
			return COMP_DROP_BAD;
		c->w = w;
		return bad_resp(c);
	}
	c->w = w;
	if (sv_psn_diff(w->first_psn, c->qe->comp.psn) > 0)
		return COMP_COMP_ACK;
	return COMP_CHECK_SEQ;
}

/* A response implies the SEND/WRITE WQEs before its WQE were executed
 * (IBA): acknowledge them.  An earlier READ/ATOMIC among them without
 * its response means that response was lost. */
static enum comp_state comp_ack(struct comp_ctx *c)
{
	return acked(c, sv_psn_add(c->w->first_psn, SV_PSN_MASK),
		     COMP_CHECK_SEQ);
}

/* Responses are used in PSN order only, for the oldest WQE. */
static enum comp_state check_seq(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	/* An older WQE is not complete yet: the resend answers again. */
	if (wqe_at(qe, qe->comp.idx) != c->w)
		return COMP_DROP_QUIET;
	if (c->pkt->psn != qe->comp.psn)
		return COMP_IMPLIED_NAK; /* responses missing before it */
	if (c->kind == KIND_READ)
		return c->w->opcode == IBV_WR_RDMA_READ ? COMP_READ :
							  bad_resp(c);
	return c->w->opcode == IBV_WR_RDMA_READ ? bad_resp(c) : COMP_ATOMIC;
}

/* A response moved comp.psn by one: UPDATE_COMP then DONE. */
static void resp_used(struct comp_ctx *c)
{
	c->before = c->qe->comp.psn;
	c->qe->comp.psn = sv_psn_add(c->qe->comp.psn, 1);
	c->lost = false;
	c->next = COMP_DONE;
}

static enum comp_state do_read(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;
	struct sv_send_wqe *w = c->w;
	struct sv_pkt *pkt = c->pkt;
	uint64_t off, rest;
	uint32_t want;

	off = (uint64_t)(uint32_t)sv_psn_diff(pkt->psn, w->first_psn) *
	      qe->pmtu;
	rest = w->length > off ? w->length - off : 0;
	want = rest > qe->pmtu ? qe->pmtu : (uint32_t)rest;
	/* The response must be exactly the next piece of the WQE.  Where
	 * the request it answers ends does not matter: after a resend the
	 * responder may still be answering an earlier, longer request for the
	 * same bytes, and those responses are as good. */
	if (off != w->read_done)
		return COMP_DROP_BAD;
	if (pkt->paylen > want) {
		/* More than the WQE asked for at that offset: no responder
		 * sends it, whichever request it answers. */
		sv_warn_qp(&qe->qp->lograte, qe->qpn, "completer",
			   "wr_id %#" PRIx64 " IBV_WR_RDMA_READ fails with "
			   "IBV_WC_LOC_PROT_ERR: QP 0x%06x answered with %u "
			   "bytes at PSN %u where %u were asked (rxe fails it "
			   "so)",
			   w->wr_id, qe->dest_qpn, pkt->paylen, pkt->psn, want);
		SV_STAT(qe->eng, drop_bad_resp);
		return COMP_ERR_READ_LONG;
	}
	if (pkt->paylen != want)
		return COMP_DROP_BAD;
	if (want) {
		enum sv_sgl_err e = sv_sgl_copy(qe->qp->pd, w->sge, w->num_sge,
						off, pkt->payload, want, true);

		if (e == SV_SGL_FAULT)
			sv_dma_fault_report(qe, "RDMA READ response into a "
						"local buffer");
		if (e)
			return COMP_ERR_LOC_PROT;
	}
	w->read_done += want;
	sv_req_read_answered(qe, w);
	resp_used(c);
	if (w->read_done == w->length && (w->length || (pkt->mask & SV_M_END)))
		return COMP_COMP_WQE;
	return COMP_UPDATE_COMP;
}

static enum comp_state do_atomic(struct comp_ctx *c)
{
	struct sv_send_wqe *w = c->w;
	enum sv_sgl_err e;
	uint64_t orig;

	/* The original value, in host order, into the WQE's 8-byte SGE. */
	orig = sv_atmack_orig(sv_pkt_h(c->pkt, SV_HDR_ATMACK));
	w->atomic_result = orig;
	e = sv_sgl_copy(c->qe->qp->pd, w->sge, w->num_sge, 0, (uint8_t *)&orig,
			sizeof(orig), true);
	if (e == SV_SGL_FAULT)
		sv_dma_fault_report(c->qe, "atomic result into a local buffer");
	if (e)
		return COMP_ERR_LOC_PROT;
	resp_used(c);
	return COMP_COMP_WQE;
}

/* A READ/ATOMIC WQE got its whole answer: it completes in order. */
static enum comp_state comp_wqe(struct comp_ctx *c)
{
	c->w->state = SV_WQE_DONE;
	c->qe->req.rd_atomic--;
	c->qe->req.rd_reqs--; /* the ATOMIC, or the READ's last chunk */
	sv_comp_retire(c->qe);
	return COMP_UPDATE_COMP;
}

/* comp.psn moved: the window grows and the timers restart. */
static enum comp_state update_comp(struct comp_ctx *c)
{
	if (c->qe->comp.psn != c->before)
		progress_from(c->qe, c->before);
	return c->lost ? COMP_IMPLIED_NAK : c->next;
}

/* A READ/ATOMIC response was lost (a gap in the responses, or an ACK or
 * response beyond an unanswered READ/ATOMIC: IBA's implied NAK): resend
 * from comp.psn, once per gap (every later response of the same burst
 * would otherwise trigger its own). */
static enum comp_state implied_nak(struct comp_ctx *c)
{
	struct sv_qp_engine *qe = c->qe;

	if (qe->comp.retried && qe->comp.retried_psn == qe->comp.psn)
		return COMP_DONE;
	SV_STAT(qe->eng, implied_nak_retry);
	SV_QSTAT(qe, retrans);
	qe->comp.retried = true;
	qe->comp.retried_psn = qe->comp.psn;
	c->retry_psn = qe->comp.psn;
	c->sack_n = 0; /* READ responses are not kept: go back N */
	c->why = "implied NAK";
	return COMP_ERROR_RETRY;
}

static enum comp_state error_retry(struct comp_ctx *c)
{
	retry(c->qe, c->retry_psn, c->sack_n, c->free_retry, c->why);
	return COMP_DONE;
}

static enum comp_state drop_stale(struct comp_ctx *c)
{
	SV_STAT(c->qe->eng, drop_stale_resp);
	return COMP_DONE;
}

static enum comp_state drop_bad(struct comp_ctx *c)
{
	SV_STAT(c->qe->eng, drop_bad_resp);
	return COMP_DONE;
}

/* Dropped uncounted: not the oldest WQE's response yet. */
static enum comp_state drop_quiet(struct comp_ctx *c)
{
	(void)c;
	return COMP_DONE;
}

/* A failure (comp_errors): the WQE it concerns fails and the QP enters
 * the error state. */
static void comp_error(struct comp_ctx *c, enum comp_state s)
{
	const struct comp_error *e = &comp_errors[s];
	struct sv_qp_engine *qe = c->qe;
	struct sv_send_wqe *target;
	uint32_t tail = sv_sq_tail(qe), psn = c->pkt->psn;

	if (!e->nak) {
		target = c->w ? c->w : sv_wqe_of_psn(qe, psn);
		fail_wqe(qe, target ? target : wqe_at(qe, qe->comp.idx), e->wc,
			 e->said);
		return;
	}
	/* An error NAK: everything before its PSN was executed. */
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
		fail_wqe(qe, target, e->wc, false);
	else
		sv_qp_to_error(qe, SV_ERR_NO_EVENT);
}

/* ---- the machine --------------------------------------------------------- */

typedef enum comp_state (*comp_fn)(struct comp_ctx *c);

/* clang-format off */
static const comp_fn comp_states[COMP_NUM_STATES] = {
	[COMP_GET_ACK] = get_ack,		[COMP_CHECK_PSN] = check_psn,
	[COMP_CHECK_ACK] = check_ack,		[COMP_GET_WQE] = get_wqe,
	[COMP_COMP_ACK] = comp_ack,		[COMP_CHECK_SEQ] = check_seq,
	[COMP_READ] = do_read,			[COMP_ATOMIC] = do_atomic,
	[COMP_WRITE_SEND] = write_send,		[COMP_COMP_WQE] = comp_wqe,
	[COMP_UPDATE_COMP] = update_comp,	[COMP_DUP_ACK] = dup_ack,
	[COMP_FAST_RETRANSMIT] = fast_retransmit, [COMP_SEQ_NAK] = seq_nak,
	[COMP_IMPLIED_NAK] = implied_nak,	[COMP_ERROR_RETRY] = error_retry,
	[COMP_RNR] = rnr,			[COMP_RNR_RETRY] = rnr_retry,
	[COMP_DROP_STALE] = drop_stale,		[COMP_DROP_BAD] = drop_bad,
	[COMP_DROP_QUIET] = drop_quiet,
};
/* clang-format on */

void sv_comp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt)
{
	struct comp_ctx c = { .qe = qe, .pkt = pkt };
	bool dbg = sv_log_level >= SV_LOG_DBG;
	enum comp_state s = COMP_GET_ACK, next;

	while (s != COMP_DONE && s != COMP_EXIT) {
		if (s >= COMP_ERR_NAK_INV_REQ) {
			comp_error(&c, s);
			next = COMP_DONE;
		} else {
			next = comp_states[s](&c);
		}
		if (dbg)
			sv_dbg("qp 0x%06x comp psn %u: %s -> %s", qe->qpn,
			       pkt->psn, comp_state_names[s],
			       comp_state_names[next]);
		s = next;
	}
	/* Whatever happened may let the requester send: the window opened,
	 * a rewind, the next READ chunk, a fence released. */
	if (s == COMP_DONE)
		sv_work_add(qe, SV_WORK_REQ);
}

const char *sv_comp_state_name(int s)
{
	return s >= 0 && s < COMP_NUM_STATES ? comp_state_names[s] : "?";
}
