/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Message channels in the engine (docs/fastpath.md, layer 3; the channel
 * itself is link/chan.h).
 *
 * Between two RC QPs attached to each other through the shm link, a SEND
 * of up to SV_CHAN_MAX_MSG bytes needs none of the packet machinery: the
 * requester writes it into the channel the peer QP owns (one cache line
 * for up to 40 bytes), the peer's engine places it into the next receive
 * WQE and writes how far it got into our ack line, and our engine
 * completes the WQE when the ack passes it.  That is a SEND's whole
 * protocol on a lossless, ordered, same-host link; what IBA specifies for
 * RC SENDs still holds:
 *
 * - Order.  A SEND goes into the channel only when everything before it
 *   in the send queue is in the channel too (nothing outstanding on the
 *   packet path: no PSN unacknowledged, no READ/atomic pending), and a
 *   WQE of the packet path starts only when the channel has been drained
 *   and acknowledged (sv_chan_busy in req.c).  So the responder sees
 *   every message of the QP in send-queue order, from either path, and
 *   the completions follow send-queue order through the completer.
 * - Completion means acknowledged: a WQE completes when the peer's engine
 *   has placed it (or found the error that a NAK would have carried).
 * - RNR: a message finding no receive WQE waits in the channel until one
 *   is posted.  That is what a requester with rnr_retry 7 (retry forever)
 *   sees, so only such QPs use channels; others keep the packet path and
 *   its RNR_RETRY_EXC.
 * - A peer that stops consuming (killed, stopped, its QP in ERR): after
 *   the time the packet path would spend on its retries (timeout x
 *   (retry_cnt + 1)) the oldest WQE completes with RETRY_EXC_ERR and the
 *   QP goes to ERR.  An infinite timeout (0) waits forever, as IBA says.
 *   A peer whose process runs and whose channel is open is never timed
 *   out: its engine takes every message, only perhaps late (no receive
 *   WQE yet, which rnr_retry 7 waits for; or no CPU on a loaded machine,
 *   which a HCA's responder never lacks).
 * - Receive errors are the responder's: a message longer than the WQE is
 *   LOC_LEN_ERR there and REM_INV_REQ_ERR here, a bad lkey in the WQE is
 *   LOC_PROT_ERR there and REM_OP_ERR here, a full CQ is LOC_QP_OP_ERR
 *   there and REM_OP_ERR here; both QPs go to ERR.
 *
 * The channel carries no PSN: like the one-copy WRITEs (direct.c) a WQE
 * sent through it takes an empty PSN range at req.psn, and the
 * responder's expected PSN stays the requester's next one.
 *
 * A SEND longer than SV_CHAN_MAX_MSG goes as a descriptor of the
 * sender's gather list, which the receiving engine pulls with one copy
 * (chan_rdv.c); everything above holds for it as for a small SEND.
 *
 * Small RDMA WRITEs of a stream go through the channel too, placed by
 * the peer's engine (chan_write.c), and are taken back from a peer that
 * is stopped (tx_take_back).
 *
 * Not through channels: SEND_WITH_INV (the peer's windows), UC (no ACK
 * to give the completion its meaning is needed, but UC's loss semantics
 * would change), XRC (the target's SRQ is per message), UD.  A receiving
 * QP on an SRQ opens its channel as any other: the SRQ's WQE is taken
 * when the engine takes the message.
 *
 * Wake-ups reuse the shm link's: a producer that published a message, or
 * a consumer that acknowledged, sends the doorbell if the other side's
 * progress thread sleeps (its ring's sleeping word); a thread about to
 * sleep re-checks its channels after setting the word.
 *
 * Polling at scale: a pass visits only the QPs on sv_pe(eng)->chans, not every
 * QP with an open channel.  A QP is there while its own channel is hot
 * (chan.rx_hot) or it has channel SENDs to retire (outstanding, or lean
 * mode).  A channel opens cold (its owner line's cold word set); a
 * producer that publishes into a cold channel also sets the channel's bit
 * in the segment's ready word (after the message, with release), and a
 * pass takes every ready word of our segments with an exchange (acquire)
 * and makes the channels of the bits it found hot.  So a message in a
 * cold channel is seen by the first pass after its bit: never lost, at
 * most one pass late.  A channel goes cold again after SV_CHAN_COOL_NS
 * with nothing to do: the owner sets cold, and keeps looking at it every
 * pass for SV_CHAN_NAP_NS more, because a producer that read cold just
 * before our store was visible published without setting its bit (no
 * fence on the producer's side, as with the sleeping word: the window is
 * a store buffer's drain, the nap's argument).  Steady traffic never
 * goes cold, and a producer reads cold in the owner line it reads anyway
 * (gen, open): no cost per message.  A lean QP idle that long leaves lean
 * mode (its next post goes through the engine, which lists it again).
 * Busy polls watch the ready words (busy when not zero) besides the hot
 * channels' words, and a thread about to sleep checks them too.
 */
#include "paths/paths.h"
#include "engine/diag/stats.h"
#include "engine/diag/pcap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "core/async.h"
#include "core/cq.h"
#include "core/mr.h"
#include "engine/transport/comp.h"
#include "engine/transport/dma.h"
#include "engine/transport/eng.h"
#include "engine/diag/explain.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "engine/transport/stats.h"
#include "engine/diag/strict.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"
#include "util/spin.h"

/* Attach attempts of a QP whose peer's channel was not open yet (its
 * first request must raise COMM_EST, or it is on an SRQ...). */
#define SV_CHAN_TRY_EVERY 64
#define SV_CHAN_RX_BUDGET 64
/* A receiver that stops with messages still waiting (its budget, or the
 * poller's array, is full) acknowledges at least this often (slots): each
 * acknowledgement is a store to a line the sender's core reads. */
#define SV_CHAN_ACK_EVERY 64
/* Bytes of large SENDs (chan_rdv.c) one pass pulls before it leaves the
 * rest to the next pass. */
#define SV_CHAN_RX_PULL_MAX (4u << 20)
/* A pulled SEND up to this long is acknowledged as soon as it is in the
 * poller's array (rx_run): its copy is shorter than the spin of a sender
 * waiting for its completion event (SV_SERVE_SPIN_NS), which an ack a
 * message keeps going.  A longer copy outlasts the spin anyway, and an
 * ack of each rang the sleeping sender once a message (1 MiB SENDs):
 * those wait for the batch's ack. */
#define SV_CHAN_ACK_PULL (256u * 1024)
/* Pulls at least this long mark the application as busy (rx_place). */
#define SV_CHAN_ACTIVE_LEN (64u * 1024)
/* Times a pass retires SENDs again when their ack came while it took
 * messages (chan_poll), before it leaves the rest to the next pass. */
#define SV_CHAN_ACK_ROUNDS 4
/* A QP with nothing to do on its channels for this long leaves the
 * passes' list (its channel goes cold, lean mode ends). */
#define SV_CHAN_COOL_NS (10ull * 1000 * 1000)

/* The NAK a receiver whose pull of a large SEND was refused after the
 * probe writes (not an ibv_wc_status): send that WQE again, as packets,
 * and everything after it; the receiver's channel is closed by then, so
 * nothing after it in the channel was taken. */
#define SV_CHAN_NAK_RESEND 0x100u

static void chan_engine_init(struct sv_engine *eng)
{
	list_head_init(&sv_pe(eng)->chans);
	atomic_init(&eng->nwatch, 0);
}

static void tx_retire(struct sv_qp_engine *qe);

/* What chan_try did with a SEND. */
enum sv_chan_r {
	SV_CHAN_NO, /* not for a channel: the packet path sends it */
	SV_CHAN_SENT, /* in the channel */
	SV_CHAN_WAIT, /* channel full, or WQEs before it still in it */
};

/* Channel SENDs not yet retired (engine lock). */
static bool tx_pending(struct sv_qp_engine *qe)
{
	if (atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
		return atomic_load_explicit(&qe->qp->sq.tail,
					    memory_order_relaxed) !=
		       qe->comp.idx;
	return sv_pq(qe)->chan.outstanding != 0;
}

static struct sv_chan *own_chan(struct sv_qp_engine *qe)
{
	struct sv_shm_hdr *h = qe->sock->ring.hdr;

	return h ? sv_shm_chan(h, sv_qpn_slot(qe->qpn)) : NULL;
}

/* The peer's channel for our QP: where we send, and where, as the
 * peer's consumer, we acknowledge. */
static struct sv_chan *peer_chan(struct sv_qp_engine *qe)
{
	return sv_shm_chan(qe->shm->hdr, sv_qpn_slot(qe->dest_qpn));
}

/* Must a pass visit the QP? */
static bool list_want(const struct sv_qp_engine *qe)
{
	return (sv_pq(qe)->chan.rx.ch && sv_pq(qe)->chan.rx_hot) ||
	       sv_pq(qe)->chan.outstanding ||
	       atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed);
}

static void list_update(struct sv_qp_engine *qe)
{
	bool want = list_want(qe);

	if (want && !sv_pq(qe)->chan.listed) {
		list_add_tail(&sv_pe(qe->eng)->chans, &sv_pq(qe)->chan.node);
		sv_pq(qe)->chan.listed = true;
	} else if (!want && sv_pq(qe)->chan.listed) {
		list_del(&sv_pq(qe)->chan.node);
		sv_pq(qe)->chan.listed = false;
	}
	/* What the engine reads of it: a sender runs alone when kicked,
	 * and receive completions may go straight to a poller. */
	qe->run_alone = sv_pq(qe)->chan.tx.ch != NULL;
	qe->eng->paths_active = !list_empty(&sv_pe(qe->eng)->chans) ||
				sv_pe(qe->eng)->chans_open;
	/* What busy polls watch changes: they take the lock until the
	 * next pass has set it. */
	qe->eng->watch_dirty = true;
	atomic_store(&qe->eng->quiet, NULL);
}

/* ---- our channel (receive side) ------------------------------------------ */

static void rx_open(struct sv_qp_engine *qe)
{
	struct sv_chan *ch = own_chan(qe);
	uint32_t gen;

	atomic_store(&ch->open, 0);
	gen = atomic_load(&ch->gen) + 1;
	if (!gen)
		gen = 1;
	atomic_store(&ch->gen, gen);
	atomic_store(&ch->qpn, qe->qpn);
	atomic_store(&ch->peer_qpn, qe->dest_qpn);
	atomic_store(&ch->head, 0);
	/* No WRITE claimed yet (chan_write.c), none revoked. */
	atomic_store(&ch->claim, 0);
	sv_pq(qe)->chan.rx_claim = 0;
	/* Cold until its producer's first message sets the ready bit. */
	atomic_store(&ch->cold, 1);
	sv_pq(qe)->chan.rx_hot = false;
	sv_pq(qe)->chan.cold_at = 0;
	sv_pe(qe->eng)->chans_open++;
	sv_pq(qe)->chan.rx.ch = ch;
	sv_pq(qe)->chan.rx.slot =
		sv_shm_chan_slots(qe->sock->ring.hdr, sv_qpn_slot(qe->qpn));
	sv_pq(qe)->chan.rx.gen = gen;
	sv_pq(qe)->chan.rx.head = 0;
	/* Acknowledged up to the new head: a channel reopened (its QP reset
	 * and connected again) acknowledges its first message, whatever the
	 * last one before acknowledged. */
	sv_pq(qe)->chan.rx_acked = 0;
	/* Large SENDs come as descriptors only if we can read the peer's
	 * memory now (chan_rdv.c). */
	atomic_store(&ch->can_pull, sv_chan_rdv_probe(qe) ? 1 : 0);
	/* Open last: a producer reads open (acquire), then the rest. */
	atomic_store_explicit(&ch->open, 1, memory_order_release);
}

static void rx_close(struct sv_qp_engine *qe)
{
	struct sv_chan *ch = sv_pq(qe)->chan.rx.ch;

	atomic_store(&ch->open, 0);
	atomic_fetch_add(&ch->gen, 1);
	sv_pq(qe)->chan.rx.ch = NULL;
	sv_pq(qe)->chan.rx_hot = false;
	sv_pq(qe)->chan.cold_at = 0;
	sv_pe(qe->eng)->chans_open--;
}

/* Our channel has news (its ready bit, or messages while cooling): look
 * at it every pass again. */
static void rx_warm(struct sv_qp_engine *qe)
{
	atomic_store_explicit(&sv_pq(qe)->chan.rx.ch->cold, 0,
			      memory_order_relaxed);
	sv_pq(qe)->chan.cold_at = 0;
	sv_pq(qe)->chan.idle_since = 0;
	if (!sv_pq(qe)->chan.rx_hot) {
		sv_pq(qe)->chan.rx_hot = true;
		list_update(qe);
	}
}

static bool rx_state_ok(int st)
{
	return st == IBV_QPS_RTR || st == IBV_QPS_RTS || st == IBV_QPS_SQD ||
	       st == IBV_QPS_SQE;
}

static void chan_qp_state(struct sv_qp_engine *qe)
{
	int st = atomic_load(&qe->state);
	const struct sv_srq *srq = qe->qp->srq;
	/* On an SRQ too: the engine takes a message's WQE from it when it
	 * takes the message (rx_place), in channel order, as the packet
	 * path takes it at the first packet.  Only an ordinary SRQ: it is
	 * this process's (an XRC SRQ completes on its own CQ and may be
	 * another process's). */
	bool rx_ok = qe->qp->type == IBV_QPT_RC &&
		     (!srq || srq->type == IBV_SRQT_BASIC) && qe->shm &&
		     qe->sock->ring.hdr && rx_state_ok(st);

	if (rx_ok && !sv_pq(qe)->chan.rx.ch)
		rx_open(qe);
	else if (!rx_ok && sv_pq(qe)->chan.rx.ch)
		rx_close(qe);
	if (st != IBV_QPS_RTS && st != IBV_QPS_SQD)
		sv_pq(qe)->chan.tx.ch = NULL; /* nothing new goes in */
	if (st == IBV_QPS_ERR || st == IBV_QPS_RESET) {
		/* flushed, or gone with the queue */
		sv_pq(qe)->chan.outstanding = 0;
		sv_pq(qe)->chan.atomics = 0;
		sv_pq(qe)->chan.results_used = 0;
	}
	if (st == IBV_QPS_RESET)
		sv_pq(qe)->chan.tries = 0;
	list_update(qe);
}

static void chan_qp_destroyed(struct sv_qp_engine *qe)
{
	if (sv_pq(qe)->chan.rx.ch)
		rx_close(qe);
	sv_pq(qe)->chan.tx.ch = NULL;
	sv_pq(qe)->chan.outstanding = 0;
	sv_pq(qe)->chan.atomics = 0;
	sv_pq(qe)->chan.results_used = 0;
	list_update(qe);
}

/* The other side's progress thread sleeps: ring its doorbell.  No fence
 * per message between our publication and the load of its word (a fence
 * costs a whole cache-line transfer per message): a thread that set the
 * word just as we looked may miss our message, so a thread with channels
 * naps first (SV_CHAN_NAP_NS) and looks again before it sleeps for good
 * (engine.c).  fence: a message after a pause (nothing of ours was
 * outstanding, or all we sent was taken) and an acknowledgement: the
 * other side is likely lying down just then (a ping-pong's answer comes
 * as its waiter does), and without the fence about one round trip in 80
 * of ib_send_lat -e missed it and waited for the nap. */
static void poke(struct sv_qp_engine *qe, bool locked, bool fence)
{
	_Atomic uint32_t *sl = &qe->shm->hdr->sleeping;

	if (fence)
		atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(sl, memory_order_relaxed) &&
	    atomic_exchange(sl, 0)) {
		if (locked) /* (the counters are the engine lock's) */
			SV_STAT(qe->eng, shm_wakeups);
		if (sendto(qe->sock->udp.fd, NULL, 0, MSG_DONTWAIT,
			   (const struct sockaddr *)&qe->peer,
			   sizeof(qe->peer)) < 0)
			sv_dbg("chan: doorbell: %s", strerror(errno));
	}
}

/* We published into the peer's channel: if it is cold, its owner learns
 * of it from the segment's ready word (after the message: release). */
static void ready_note(struct sv_qp_engine *qe)
{
	if (atomic_load_explicit(&sv_pq(qe)->chan.tx.ch->cold,
				 memory_order_relaxed))
		atomic_fetch_or_explicit(
			&qe->shm->hdr->chan_ready,
			sv_shm_ready_bit(sv_qpn_slot(qe->dest_qpn)),
			memory_order_release);
}

/* SOFTVERBS_TRACE's line for a channel message (dir "tx-chan" or
 * "rx-chan"): the opcode a packet would have had. */
static void trace_msg(struct sv_qp_engine *qe, const char *dir, uint32_t qpn,
		      uint32_t len, bool imm)
{
	sv_trace_op(qe->eng, dir,
		    imm ? SV_OP_RC_SEND_ONLY_WITH_IMMEDIATE :
			  SV_OP_RC_SEND_ONLY,
		    qpn, len, "");
}

/* SOFTVERBS_TRACE's line for a WRITE we sent (payload p, len bytes). */
static void trace_write(struct sv_qp_engine *qe, const uint8_t *p, uint32_t len)
{
	struct sv_chan_write h;
	char extra[64];

	memcpy(&h, p, sizeof(h));
	snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x", h.va,
		 h.rkey);
	sv_trace_op(qe->eng, "tx-chan", SV_OP_RC_RDMA_WRITE_ONLY, qe->dest_qpn,
		    len - (uint32_t)sizeof(h), extra);
}

/* Tell the sender how far we are (and what failed, if anything). */
static void rx_ack(struct sv_qp_engine *qe, uint32_t nak)
{
	struct sv_chan *pc = peer_chan(qe);

	if (nak) {
		atomic_store_explicit(&pc->nak_pos, sv_pq(qe)->chan.rx.head,
				      memory_order_relaxed);
		atomic_store_explicit(&pc->nak, nak, memory_order_relaxed);
	}
	atomic_store_explicit(&pc->ack, sv_pq(qe)->chan.rx.head,
			      memory_order_release);
	if (sv_pcap_active() &&
	    sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_acked)
		sv_pcap_chan_ack(qe, nak);
	if (sv_env_trace() &&
	    sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_acked) {
		char extra[48] = "";

		if (nak == SV_CHAN_NAK_RESEND)
			snprintf(extra, sizeof(extra), ": send again");
		else if (nak)
			snprintf(extra, sizeof(extra), ": NAK %s",
				 ibv_wc_status_str((enum ibv_wc_status)nak));
		sv_trace_op(qe->eng, "tx-chan", SV_OP_RC_ACKNOWLEDGE,
			    qe->dest_qpn, 0, extra);
	}
	sv_pq(qe)->chan.rx_acked = sv_pq(qe)->chan.rx.head;
	/* (The last message may have moved the QP to ERR, which closed
	 * the channel.) */
	if (sv_pq(qe)->chan.rx.ch)
		atomic_store_explicit(&sv_pq(qe)->chan.rx.ch->head,
				      sv_pq(qe)->chan.rx.head,
				      memory_order_relaxed);
	poke(qe, true, true);
}

/* Where a receive completion goes: the poller's array when this pass has
 * one for the QP's CQ (engine.c poll_hint), as long as the CQ ring is
 * still empty (a completion pushed there during this pass, an ACK's, came
 * first and must be seen first); else NULL (the CQ ring). */
static struct ibv_wc *sink_slot(struct sv_qp_engine *qe)
{
	struct sv_engine *eng = qe->eng;
	struct sv_cq *cq = qe->qp->rcq;

	if (eng->sink.cq == cq && eng->sink.n < eng->sink.max &&
	    __atomic_load_n(&cq->tail, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&cq->head, __ATOMIC_RELAXED))
		return &eng->sink.wc[eng->sink.n];
	return NULL;
}

enum rx_placed {
	RX_NO_WQE, /* no receive posted: the message waits (rnr_retry 7) */
	RX_DONE,
	RX_PUSH, /* placed: *fail is its completion, for the CQ ring */
	RX_REFUSED, /* an atomic refused: the NAK and event are set */
	RX_FAILED, /* *fail is the error completion to report */
	RX_FAULT, /* the same, a page of the buffer faulted (util/fault.h) */
	RX_OVERRUN, /* placed, but our CQ overran */
	RX_BAD, /* a malformed descriptor: the channel is broken */
	RX_PULL_FAILED, /* a large SEND's copy failed: nothing completes */
	RX_PULL_REFUSED, /* its copy refused: the sender sends it again */
};

/* Place one message into the receive WQE at the head of the QP's receive
 * queue, read where it is (no copy of it: the head moves past it only
 * when done, so the application cannot reuse its slot meanwhile), or into
 * the next WQE of its SRQ, taken now as the packet path takes it at a
 * message's first packet (copied out under the SRQ's lock, which also
 * raises the SRQ's limit event).  The key table's read lock is held
 * (rx_run); failures are left to rx_run, which handles them once it has
 * let go of it (moving the QP to ERR takes sq_lock). */
static enum rx_placed rx_place(struct sv_qp_engine *qe,
			       const struct sv_chan_msg *m, struct ibv_wc *fail,
			       uint64_t *pulled)
{
	struct sv_qp *qp = qe->qp;
	struct sv_srq *srq = qp->srq;
	uint32_t head =
		atomic_load_explicit(&qp->rq.head, memory_order_relaxed);
	const struct sv_recv_wqe *w;
	struct sv_pd *pd = qp->pd;
	enum sv_sgl_err e = SV_SGL_OK;
	uint64_t room = 0;
	struct ibv_wc *wc;
	uint32_t nsge, i, len = m->len;
	bool rdv = (m->flags & SV_CHAN_F_RDV) != 0, failed = false;
	bool refused = false;
	struct sv_chan_rdv_desc d;

	if (srq ? !sv_wq_used(&srq->rq) :
		  head == atomic_load_explicit(&qp->rq.tail,
					       memory_order_acquire))
		return RX_NO_WQE;
	if (rdv) {
		if (!sv_chan_rdv_read(m, &d))
			return RX_BAD;
		len = d.len;
	}
	if (srq) {
		/* A sending QP gone before we took its message (ERR, reset,
		 * destroyed) sent us nothing that would take a WQE: it stays
		 * in the SRQ for the other QPs. */
		if (rdv && !sv_chan_rdv_current(qe, peer_chan(qe), &d)) {
			SV_STAT(qe->eng, rdv_failed);
			return RX_PULL_FAILED;
		}
		/* Ours from here: a message that completes nothing (a
		 * pull that fails) leaves it held, as a sender that stops
		 * in the middle of a message leaves the packet path's. */
		if (!sv_srq_pop(srq, qe->resp.wqe, &qe->resp.wqe_len))
			return RX_NO_WQE;
		w = qe->resp.wqe;
		pd = srq->pd;
	} else {
		w = sv_wq_at(&qp->rq, head);
	}
	if (rdv)
		*pulled += len;
	else if (sv_pcap_active())
		sv_pcap_chan_recv(qe, m->data, m->len,
				  (m->flags & SV_CHAN_F_IMM) != 0, m->imm,
				  (m->flags & SV_CHAN_F_SE) != 0);
	if (sv_env_trace())
		trace_msg(qe, "rx-chan", qe->qpn, len,
			  (m->flags & SV_CHAN_F_IMM) != 0);
	nsge = w->num_sge > SV_MAX_SGE ? SV_MAX_SGE : w->num_sge;
	for (i = 0; i < nsge; i++)
		room += w->sge[i].length;
	if (len > room) {
		e = SV_SGL_LEN;
	} else if (rdv) {
		/* One copy from the sender's memory (chan_rdv.c).  A copy
		 * that failed completes nothing: the peer died, or its
		 * memory is gone (rx_run tells it, if it still listens). */
		e = sv_chan_rdv_pull(qe, peer_chan(qe), pd, w->sge, nsge, &d,
				     &failed, &refused);
		if (failed) {
			if (!refused)
				SV_STAT(qe->eng, rdv_failed);
			if (srq) {
				/* (Refused: the packets sent again fill
				 * it.) */
				qe->resp.offset = 0;
				qe->resp.have_wqe = true;
				qe->resp.wqe_srq = true;
			}
			return refused ? RX_PULL_REFUSED : RX_PULL_FAILED;
		}
		/* An application whose polls copy is as busy as one that
		 * polls often: a poll's pass may copy for tens of
		 * microseconds, and the thread, seeing no recent poll, would
		 * copy on its core while it spins (as direct.c says). */
		if (len >= SV_CHAN_ACTIVE_LEN)
			sv_app_copied(qe->eng);
	} else if (len) {
		e = sv_sgl_copy_locked(pd, w->sge, nsge, (uint8_t *)m->data,
				       len, true);
	}
	if (e == SV_SGL_FAULT)
		sv_dma_fault_report(qe, "channel SEND into a receive buffer");
	qe->resp.msn = (qe->resp.msn + 1) & SV_PSN_MASK;
	SV_STAT(qe->eng, rdma_sends);
	wc = e == SV_SGL_OK ? sink_slot(qe) : NULL;
	if (!wc)
		wc = fail;
	*wc = (struct ibv_wc){
		.wr_id = w->wr_id,
		.opcode = IBV_WC_RECV,
		.qp_num = qe->qpn,
		.src_qp = qe->dest_qpn,
	};
	/* Said while the WQE is ours (before head moves), under the key
	 * table's read lock (rx_poll holds it). */
	if (e == SV_SGL_LEN)
		sv_explain_recv_len(qe, w->wr_id, room, len, true);
	else if (e != SV_SGL_OK)
		sv_explain_recv_sgl(qe, pd, w->sge, nsge, true);
	if (!srq)
		atomic_store_explicit(&qp->rq.head, head + 1,
				      memory_order_release);
	if (e != SV_SGL_OK) {
		/* The responder's LOC_LEN / LOC_PROT (resp.c resp_fatal),
		 * or for a fault its RECV_FAULT. */
		SV_STAT(qe->eng, resp_inv_req);
		wc->status = e == SV_SGL_LEN ? IBV_WC_LOC_LEN_ERR :
					       IBV_WC_LOC_PROT_ERR;
		wc->vendor_err = wc->status;
		return e == SV_SGL_FAULT ? RX_FAULT : RX_FAILED;
	}
	wc->status = IBV_WC_SUCCESS;
	wc->byte_len = len;
	if (m->flags & SV_CHAN_F_IMM) {
		wc->imm_data = m->imm;
		wc->wc_flags = IBV_WC_WITH_IMM;
	}
	SV_STAT(qe->eng, rdma_recvs);
	SV_STAT(qe->eng, chan_recvs);
	if (rdv)
		SV_STAT(qe->eng, rdv_recvs);
	SV_QSTAT(qe, recv_done);
	SV_QSTAT_ADD(qe, recv_bytes, len);
	if (wc != fail) {
		qe->eng->sink.n++;
		return RX_DONE;
	}
	return RX_PUSH; /* rx_run acknowledges it first */
}

/* How many messages this pass may take: the poller's array, when the
 * completions go there, bounds it (beyond it each would go through the
 * CQ ring and its lock; the poller comes back for them). */
static unsigned int rx_budget(const struct sv_qp_engine *qe)
{
	const struct sv_engine *eng = qe->eng;

	if (eng->sink.cq == qe->qp->rcq && eng->sink.n < eng->sink.max &&
	    eng->sink.max - eng->sink.n < SV_CHAN_RX_BUDGET)
		return (unsigned int)(eng->sink.max - eng->sink.n);
	return SV_CHAN_RX_BUDGET;
}

/* Has the peer acknowledged SENDs of ours that are not retired yet?  (In
 * lean mode a SEND's WQE is published just after its message, so the
 * peer may acknowledge it first.  An ack beyond what we sent is a broken
 * peer's, ignored as tx_retire ignores it.) */
static bool ack_moved(struct sv_qp_engine *qe)
{
	uint64_t a, done = sv_pq(qe)->chan.acked;

	if (!sv_pq(qe)->chan.outstanding &&
	    !atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
		return false;
	a = atomic_load_explicit(&sv_pq(qe)->chan.tx.own->ack,
				 memory_order_acquire);
	return a != done &&
	       a - done <= __atomic_load_n(&sv_pq(qe)->chan.tx.tail,
					   __ATOMIC_RELAXED) -
				   done;
}

/* Take the messages in our channel.  A message can be the peer's answer
 * to a SEND of ours whose acknowledgement it wrote before it could see
 * that SEND (rx_run's own order, below): seen after the message, the ack
 * word shows it, and then the pass stops (true) so that our SEND
 * completes before its answer is received, as on a wire, where the ACK
 * comes before the answer.  Programs count on it: a perftest that waits
 * on one completion channel for both CQs polls the send CQ after the
 * first event, and an answer's event first left the send completion
 * unpolled until the next one overran a send CQ of one entry. */
static bool rx_run(struct sv_qp_engine *qe)
{
	int st = atomic_load(&qe->state);
	unsigned int n = 0, budget;
	enum rx_placed r = RX_DONE;
	struct sv_chan_msg m;
	struct ibv_wc fail;
	uint32_t nak = 0;
	uint64_t pulled = 0, was;
	int event = SV_ERR_NO_EVENT;
	bool bad = false, more = false, shown = false, ack_first = false;
	bool revoked = false;

	if (!rx_state_ok(st))
		return false;
	/* A message of the packet path is being received: it came first. */
	if (qe->resp.in_msg || qe->resp.have_wqe)
		return false;
	/* The first message an RTR QP takes raises COMM_EST. */
	if (st == IBV_QPS_RTR && !qe->comm_est &&
	    sv_chan_pending(&sv_pq(qe)->chan.rx) &&
	    sv_wq_used(qe->qp->srq ? &qe->qp->srq->rq : &qe->qp->rq))
		sv_qp_comm_est(qe);
	budget = rx_budget(qe);
	/* Once for the batch; nothing below takes another lock but the
	 * CQ's and the context's (util/lockorder.h). */
	sv_mr_read_lock();
	for (;;) {
		if (n == budget) {
			more = sv_chan_pending(&sv_pq(qe)->chan.rx);
			break;
		}
		if (!sv_chan_peek(&sv_pq(qe)->chan.rx, &m, &bad))
			break;
		if (ack_moved(qe)) {
			ack_first = true;
			break;
		}
		/* Our packet-path SENDs wait for their ACK and packets wait
		 * in our ring: the ACK may be among them, written before
		 * this message (the peer acknowledged before it could
		 * answer).  The next pass reads the ring first; once. */
		if (qe->comp.psn != qe->req.max_psn &&
		    sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_ring_waited &&
		    sv_links_rx_pending(qe->sock)) {
			sv_pq(qe)->chan.rx_ring_waited =
				sv_pq(qe)->chan.rx.head;
			break;
		}
		if (m.flags & (SV_CHAN_F_WRITE | SV_CHAN_F_READ)) {
			/* Ours only if claimed (chan_write.c): a producer
			 * that found us stopped may have taken it back. */
			if (!sv_chan_write_claim(qe, &m)) {
				revoked = true;
				break;
			}
			if (st == IBV_QPS_RTR && !qe->comm_est) {
				sv_mr_read_unlock();
				sv_qp_comm_est(qe);
				sv_mr_read_lock();
			}
			nak = (m.flags & SV_CHAN_F_WRITE) ?
				      sv_chan_write_serve(qe, &m, &event,
							  &bad) :
				      sv_chan_read_serve(qe, &m, peer_chan(qe),
							 &event, &bad);
			if (bad)
				break;
			sv_chan_consumed(&sv_pq(qe)->chan.rx, &m);
			n++;
			if (nak) {
				r = RX_REFUSED;
				break;
			}
			continue;
		}
		if (m.flags & SV_CHAN_F_ATOMIC) {
			/* The key lookups take the read lock themselves. */
			sv_mr_read_unlock();
			if (st == IBV_QPS_RTR && !qe->comm_est)
				sv_qp_comm_est(qe);
			nak = sv_chan_atomic_serve(qe, &m, peer_chan(qe),
						   &event, &bad);
			sv_mr_read_lock();
			if (bad)
				break;
			sv_chan_consumed(&sv_pq(qe)->chan.rx, &m);
			n++;
			if (nak) {
				r = RX_REFUSED;
				break;
			}
			continue;
		}
		/* A large SEND's copy is its whole cost: while the
		 * application busy-polls, our progress thread shares its
		 * CPU and leaves the copy to the poller's pass (as direct.c
		 * does), rather than halve it. */
		if ((m.flags & SV_CHAN_F_RDV) && qe->eng->in_thread &&
		    sv_app_polls(qe->eng, sv_eng_now(qe->eng)))
			break;
		was = pulled;
		r = rx_place(qe, &m, &fail, &pulled);
		if (r == RX_NO_WQE)
			break;
		if (r == RX_BAD) {
			bad = true;
			break;
		}
		sv_chan_consumed(&sv_pq(qe)->chan.rx, &m);
		n++;
		if (r == RX_PULL_FAILED || r == RX_PULL_REFUSED)
			break;
		/* Large SENDs are copied in this pass: a bound on the bytes
		 * one pass copies, the rest waits for the next one. */
		if (pulled >= SV_CHAN_RX_PULL_MAX)
			budget = n;
		if (r == RX_PUSH) {
			/* The sender learns that its SEND is placed before
			 * our application can see it (a HCA acknowledges on
			 * receipt), so no answer overtakes the ack.  A full
			 * CQ is not acknowledged: its NAK follows. */
			if (sv_cq_has_room(qe->qp->rcq))
				rx_ack(qe, 0);
			r = RX_DONE;
			if (sv_push_recv_cqe(qe, &fail,
					     (m.flags & SV_CHAN_F_SE) != 0)) {
				sv_explain_cq_overrun(qe, fail.wr_id);
				r = RX_OVERRUN;
			}
		} else if (r == RX_DONE) {
			shown = true; /* in the poller's array */
			/* A large SEND's copy takes microseconds: its sender
			 * learns of it now, not after the poller's batch (a
			 * sender waiting for its completion event slept
			 * through such batches, and we rang it awake). */
			if ((m.flags & SV_CHAN_F_RDV) &&
			    pulled - was <= SV_CHAN_ACK_PULL)
				rx_ack(qe, 0);
		}
		if (r != RX_DONE)
			break;
	}
	sv_mr_read_unlock();
	if (r == RX_OVERRUN) {
		/* Our CQ overran (sv_push_recv_cqe raised CQ_ERR). */
		sv_qp_to_error(qe, IBV_EVENT_QP_FATAL);
		nak = IBV_WC_REM_OP_ERR;
	} else if (r == RX_REFUSED) {
		sv_qp_to_error(qe, event);
	} else if (r == RX_FAILED || r == RX_FAULT) {
		sv_qp_to_error(qe, r == RX_FAULT ? IBV_EVENT_QP_ACCESS_ERR :
						   SV_ERR_NO_EVENT);
		nak = fail.status == IBV_WC_LOC_LEN_ERR ?
			      IBV_WC_REM_INV_REQ_ERR :
			      IBV_WC_REM_OP_ERR;
	} else if (r == RX_PULL_FAILED) {
		/* What the sender's own copy would have met (the packet
		 * path: LOC_PROT_ERR there); our QP sees nothing, as when
		 * a sender fails in the middle of a message. */
		nak = IBV_WC_LOC_PROT_ERR;
	} else if (r == RX_PULL_REFUSED) {
		/* The sender still has its buffers (nothing completed):
		 * it sends the SEND again as packets, and what followed it
		 * in the channel, which we no longer take. */
		nak = SV_CHAN_NAK_RESEND;
	}
	/* Acknowledge now unless more messages are ready and the next pass
	 * comes for them anyway: a sender waiting for a completion, or for
	 * room, is never left without one while we wait for something. */
	if (sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_acked &&
	    (!more || nak || shown ||
	     sv_pq(qe)->chan.rx.head - sv_pq(qe)->chan.rx_acked >=
		     SV_CHAN_ACK_EVERY))
		rx_ack(qe, nak);
	/* The receive's error completion after the NAK: a program may exit
	 * as soon as it sees it, and the sender must still learn why. */
	if (r == RX_FAILED || r == RX_FAULT)
		sv_push_recv_cqe(qe, &fail, false);
	/* Nothing after a failed pull is taken: the sender's QP goes to
	 * ERR and flushes what followed it (or, refused, sends it all
	 * again as packets). */
	if ((r == RX_PULL_FAILED || r == RX_PULL_REFUSED) &&
	    sv_pq(qe)->chan.rx.ch && !bad) {
		sv_dbg("chan: qp 0x%06x: a large SEND's copy %s, channel closed",
		       qe->qpn,
		       r == RX_PULL_REFUSED ? "was refused" : "failed");
		rx_close(qe);
	}
	if (n)
		qe->eng->watch_dirty = true; /* the next slot to watch */
	/* The producer took back WRITEs we had not claimed (it found us
	 * stopped) and runs them itself: nothing more of this generation
	 * is ours.  Everything before them is taken and acknowledged; a new
	 * generation lets the producer attach again.  (Revoked with every
	 * WRITE already claimed: seen once the channel is empty.) */
	if (!bad && sv_pq(qe)->chan.rx.ch &&
	    (revoked || (!sv_chan_pending(&sv_pq(qe)->chan.rx) &&
			 (atomic_load_explicit(&sv_pq(qe)->chan.rx.ch->claim,
					       memory_order_relaxed) &
			  SV_CHAN_CLAIM_REVOKED)))) {
		sv_dbg("chan: qp 0x%06x: the peer took back its WRITEs, "
		       "channel opened anew",
		       qe->qpn);
		rx_close(qe);
		rx_open(qe);
		list_update(qe);
	}
	if (bad) {
		/* A producer that writes what it must not: the channel is
		 * closed (its messages time out on its side). */
		SV_STAT(qe->eng, chan_broken);
		sv_dbg("chan: qp 0x%06x: malformed message, channel closed",
		       qe->qpn);
		rx_close(qe);
	}
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		sv_work_add(qe, SV_WORK_FLUSH);
	return ack_first && !bad;
}

/* ---- the peer's channel (send side) ---------------------------------------- */

static bool tx_attach(struct sv_qp_engine *qe)
{
	struct sv_chan *pc, *own = own_chan(qe);
	uint32_t gen;

	if (qe->qp->type != IBV_QPT_RC || !qe->shm || !own)
		return false;
	pc = peer_chan(qe);
	if (!atomic_load_explicit(&pc->open, memory_order_acquire))
		return false;
	gen = atomic_load(&pc->gen);
	if (atomic_load(&pc->qpn) != qe->dest_qpn ||
	    atomic_load(&pc->peer_qpn) != qe->qpn)
		return false;
	/* Not a generation we took WRITEs back from (its owner opens a new
	 * one), nor while messages of an earlier one wait for their ack
	 * (the ack line is reset here). */
	if ((atomic_load(&pc->claim) & SV_CHAN_CLAIM_REVOKED) ||
	    sv_pq(qe)->chan.outstanding)
		return false;
	sv_pq(qe)->chan.tx.ch = pc;
	sv_pq(qe)->chan.tx.slot =
		sv_shm_chan_slots(qe->shm->hdr, sv_qpn_slot(qe->dest_qpn));
	sv_pq(qe)->chan.tx.own = own;
	sv_pq(qe)->chan.tx.gen = gen;
	sv_pq(qe)->chan.tx.tail = sv_pq(qe)->chan.tx.head =
		atomic_load(&pc->head);
	sv_pq(qe)->chan.acked = sv_pq(qe)->chan.tx.tail;
	sv_pq(qe)->chan.rdv_end = sv_pq(qe)->chan.tx.tail;
	atomic_store(&own->nak, 0);
	atomic_store(&own->ack, sv_pq(qe)->chan.tx.tail);
	sv_pq(qe)->chan.stall_since = 0;
	list_update(qe);
	return true;
}

/* ---- lean mode: post_send drives the channel ------------------------------- */

/*
 * Once a QP's send queue holds nothing but channel SENDs, the requester
 * has nothing left to decide for the next ones: they go into the channel
 * in order, as posted.  So the QP enters lean mode and post_send writes
 * them there itself, under sq_lock (chan_post): no engine lock,
 * no pass, no WQE built and re-read.  The engine still retires them (the
 * ack line, under its lock: comp.idx is the cursor) and watches for
 * stalls.  Anything else leaves lean mode first, under both locks, and
 * gives the engine back consistent cursors (req.idx past the channel
 * WQEs, outstanding their number): a WR the channel does not take, a full
 * channel, a modify_qp, an error, a NAK, the watchdog.
 */

static bool wqe_signaled(const struct sv_qp *qp, const struct sv_send_wqe *w)
{
	return qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
}

/* Does a channel WQE own a result word (an atomic, a READ)? */
static bool has_result(const struct sv_send_wqe *w)
{
	return sv_chan_atomic_op(w->opcode) || w->opcode == IBV_WR_RDMA_READ;
}

static void lean_count(struct sv_qp_engine *qe)
{
	uint64_t n = atomic_load_explicit(&sv_pq(qe)->chan.lean_sends,
					  memory_order_relaxed);

	qe->eng->stats->chan_sends += n - sv_pq(qe)->chan.lean_counted;
	sv_pq(qe)->chan.lean_counted = n;
	n = atomic_load_explicit(&sv_pq(qe)->chan.lean_writes,
				 memory_order_relaxed);
	qe->eng->stats->chan_writes += n - sv_pq(qe)->chan.lean_writes_counted;
	sv_pq(qe)->chan.lean_writes_counted = n;
	n = atomic_load_explicit(&sv_pq(qe)->chan.lean_reads,
				 memory_order_relaxed);
	qe->eng->stats->chan_reads += n - sv_pq(qe)->chan.lean_reads_counted;
	qe->eng->stats->chan_reads_lean +=
		n - sv_pq(qe)->chan.lean_reads_counted;
	sv_pq(qe)->chan.lean_reads_counted = n;
}

/* Lean mode's result words in use (READs in the channel, not retired). */
static uint64_t lean_results(struct sv_qp_engine *qe)
{
	return atomic_load_explicit(&sv_pq(qe)->chan.lean_res_taken,
				    memory_order_relaxed) ^
	       atomic_load_explicit(&sv_pq(qe)->chan.lean_res_freed,
				    memory_order_acquire);
}

/* Engine lock and sq_lock held. */
static void lean_leave_locked(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	uint32_t tail = atomic_load(&qp->sq.tail), idx = qe->comp.idx;

	while (idx != tail &&
	       ((struct sv_send_wqe *)sv_wq_at(&qp->sq, idx))->state ==
		       SV_WQE_CHAN)
		idx++;
	qe->req.idx = idx;
	sv_pq(qe)->chan.outstanding = idx - qe->comp.idx;
	/* Only READs hold result words in lean mode (lean_enter). */
	sv_pq(qe)->chan.results_used = lean_results(qe);
	sv_pq(qe)->chan.atomics =
		(uint32_t)__builtin_popcountll(sv_pq(qe)->chan.results_used);
	atomic_store(&qe->sq_by_post, false);
	lean_count(qe);
	qe->eng->watch_dirty = true;
	atomic_store(&qe->eng->quiet, NULL);
}

static void lean_leave(struct sv_qp_engine *qe)
{
	if (!atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
		return;
	sv_qlock_lock(&qe->qp->sq_lock, SV_LOCK_SQ);
	lean_leave_locked(qe);
	sv_qlock_unlock(&qe->qp->sq_lock);
}

/* Is an atomic in the channel?  (Lean retirement places READs' results
 * only.) */
static bool atomic_in_chan(struct sv_qp_engine *qe)
{
	uint32_t idx;

	if (!sv_pq(qe)->chan.atomics)
		return false;
	for (idx = qe->comp.idx; idx != qe->req.idx; idx++) {
		const struct sv_send_wqe *w = sv_wq_at(&qe->qp->sq, idx);

		if (w->state == SV_WQE_CHAN && sv_chan_atomic_op(w->opcode))
			return true;
	}
	return false;
}

/* After a channel SEND, engine lock held: is the queue all channel? */
static void lean_enter(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;

	/* Not while an atomic is in the channel (lean retirement places
	 * READs' results only), nor while a large SEND is not
	 * acknowledged: if its pull is refused, it and the SENDs after it
	 * go again as packets, for which their WQEs must still say where
	 * the data is (lean mode's do not). */
	if (qe->req.idx != sv_sq_tail(qe) || atomic_in_chan(qe) ||
	    (int64_t)(sv_pq(qe)->chan.acked - sv_pq(qe)->chan.rdv_end) < 0 ||
	    qe->rnr_retry != 7 ||
	    qe->req.idx - qe->comp.idx != sv_pq(qe)->chan.outstanding ||
	    atomic_load(&qe->state) != IBV_QPS_RTS ||
	    atomic_load_explicit(&sv_pq(qe)->chan.tx.own->nak,
				 memory_order_relaxed))
		return;
	sv_qlock_lock(&qp->sq_lock, SV_LOCK_SQ);
	if (atomic_load(&qp->sq.tail) == qe->req.idx) {
		sv_pq(qe)->chan.lean_psn = qe->req.psn;
		atomic_store_explicit(&sv_pq(qe)->chan.lean_res_taken,
				      sv_pq(qe)->chan.results_used,
				      memory_order_relaxed);
		atomic_store_explicit(&sv_pq(qe)->chan.lean_res_freed, 0,
				      memory_order_relaxed);
		atomic_store(&qe->sq_by_post, true);
		qe->eng->watch_dirty = true;
		atomic_store(&qe->eng->quiet, NULL);
	}
	sv_qlock_unlock(&qp->sq_lock);
}

/* Lean mode's post: sq_lock held, room in the queue checked. */
static bool lean_post(struct sv_qp_engine *qe, const struct ibv_send_wr *wr,
		      uint32_t len)
{
	struct sv_qp *qp = qe->qp;
	struct sv_chan_tx *t = &sv_pq(qe)->chan.tx;
	uint32_t tail =
		atomic_load_explicit(&qp->sq.tail, memory_order_relaxed);
	struct sv_send_wqe *w;
	uint32_t flags = 0, mlen = len;
	uint64_t end;
	uint8_t *dst, *data;
	bool idle = sv_wq_used(&qp->sq) == 0, caught_up;
	bool write = wr->opcode == IBV_WR_RDMA_WRITE;
	bool read = wr->opcode == IBV_WR_RDMA_READ;
	bool signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	uint64_t results = lean_results(qe);
	uint32_t r = 0, imm = 0;

	/* A fence waits for the READs before it (chan_try). */
	if ((wr->send_flags & IBV_SEND_FENCE) && results)
		return false;
	if (read) {
		/* A READ of a stream (chan_read.c), within the limit on
		 * READs in the channel (else the engine waits for room). */
		if (!sv_chan_read_wanted(qe, wr->opcode, len, signaled,
					 !idle) ||
		    (uint32_t)__builtin_popcountll(results) >=
			    sv_chan_atomic_limit(qe) ||
		    sv_sgl_validate(qp->pd, wr->sg_list, (uint32_t)wr->num_sge,
				    IBV_ACCESS_LOCAL_WRITE))
			return false; /* (a bad SGE: the packet path's error) */
		/* The lowest free word, as chan_try takes it. */
		r = (uint32_t)__builtin_ctzll(~results);
		mlen = sizeof(struct sv_chan_read);
	} else if (write) {
		/* A WRITE of a stream (chan_write.c); a lone signaled one
		 * goes through the engine to the one-copy path. */
		if (!sv_chan_write_wanted(qe, wr->opcode, len, signaled, !idle))
			return false;
		mlen = len + (uint32_t)sizeof(struct sv_chan_write);
	} else if ((wr->opcode != IBV_WR_SEND &&
		    wr->opcode != IBV_WR_SEND_WITH_IMM) ||
		   len > SV_CHAN_MAX_MSG) {
		return false;
	}
	if (atomic_load_explicit(&qe->state, memory_order_acquire) !=
	    IBV_QPS_RTS)
		return false;
	/* The peer took all we sent before (it may be lying down now): our
	 * doorbell's look at its word is fenced (poke).  Known from our
	 * retirement, which the answer to a ping-pong's message passes
	 * first (rx_run); the ack line itself the peer rewrites at every
	 * batch of a stream, and reading it here cost a cache-line transfer
	 * per post. */
	caught_up = __atomic_load_n(&sv_pq(qe)->chan.acked, __ATOMIC_RELAXED) ==
		    t->tail;
	dst = sv_chan_reserve(t, mlen);
	if (!dst)
		return false; /* full or closed: the engine waits or decides */
	data = dst;
	if (write) {
		struct sv_chan_write h = { .va = wr->wr.rdma.remote_addr,
					   .rkey = wr->wr.rdma.rkey };

		memcpy(dst, &h, sizeof(h));
		data = dst + sizeof(h);
	}
	if (read) {
		struct sv_chan_read q = { .va = wr->wr.rdma.remote_addr,
					  .rkey = wr->wr.rdma.rkey,
					  .len = len };

		memcpy(dst, &q, sizeof(q));
	} else if (wr->send_flags & IBV_SEND_INLINE) {
		uint8_t *d = data;
		int i;

		/* The application's own buffer: if it faults, the
		 * packet path's copy at post time meets it as any
		 * provider's inline copy would. */
		for (i = 0; i < wr->num_sge; i++) {
			if (!sv_dma_copy(d,
					 (void *)(uintptr_t)wr->sg_list[i].addr,
					 wr->sg_list[i].length))
				return false;
			d += wr->sg_list[i].length;
		}
	} else if (len ? sv_sgl_copy(qp->pd, wr->sg_list, (uint32_t)wr->num_sge,
				     0, data, len, false) :
			 sv_sgl_validate(qp->pd, wr->sg_list,
					 (uint32_t)wr->num_sge, 0)) {
		return false; /* the packet path reports LOC_PROT_ERR */
	}
	if (write)
		flags |= SV_CHAN_F_WRITE;
	if (read)
		flags |= SV_CHAN_F_READ;
	if (wr->opcode == IBV_WR_SEND_WITH_IMM)
		flags |= SV_CHAN_F_IMM;
	if ((wr->send_flags & IBV_SEND_SOLICITED) && !write && !read)
		flags |= SV_CHAN_F_SE;
	if (sv_pcap_active() && !write && !read)
		sv_pcap_chan_send(qe, sv_pq(qe)->chan.lean_psn, dst, len,
				  wr->opcode == IBV_WR_SEND_WITH_IMM,
				  wr->imm_data, flags & SV_CHAN_F_SE);
	/* (A READ's imm names its result word.) */
	if (read)
		imm = r;
	else if (wr->opcode == IBV_WR_SEND_WITH_IMM)
		imm = wr->imm_data;
	end = sv_chan_commit(t, mlen, flags, imm);
	if (sv_env_trace() && write) {
		trace_write(qe, dst, mlen);
	} else if (sv_env_trace() && read) {
		char extra[64];

		snprintf(extra, sizeof(extra), " va 0x%" PRIx64 " rkey 0x%x",
			 wr->wr.rdma.remote_addr, wr->wr.rdma.rkey);
		sv_trace_op(qe->eng, "tx-chan", SV_OP_RC_RDMA_READ_REQUEST,
			    qe->dest_qpn, len, extra);
	} else if (sv_env_trace()) {
		trace_msg(qe, "tx-chan", qe->dest_qpn, len,
			  wr->opcode == IBV_WR_SEND_WITH_IMM);
	}
	/* The WQE as the engine retires or flushes it. */
	w = sv_wq_at(&qp->sq, tail);
	sv_send_wqe_from_wr(w, wr, len);
	if (write || read) {
		/* Where and what, for the one-copy path if the WRITE or
		 * READ is taken back from a stopped peer (tx_take_back);
		 * a READ's scatter list, for its result. */
		w->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		w->wr.rdma.rkey = wr->wr.rdma.rkey;
		if (read) {
			w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
			w->num_sge = (uint32_t)wr->num_sge;
			memcpy(w->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct ibv_sge));
			w->atomic_result = r;
			atomic_store_explicit(
				&sv_pq(qe)->chan.lean_res_taken,
				atomic_load_explicit(
					&sv_pq(qe)->chan.lean_res_taken,
					memory_order_relaxed) ^
					(1ull << r),
				memory_order_relaxed);
		} else if (wr->send_flags & IBV_SEND_INLINE) {
			memcpy(w->inline_data, data, len);
		} else {
			w->num_sge = (uint32_t)wr->num_sge;
			memcpy(w->sge, wr->sg_list,
			       (size_t)wr->num_sge * sizeof(struct ibv_sge));
		}
	} else {
		/* the data is sent */
		w->send_flags &= ~(uint32_t)IBV_SEND_INLINE;
	}
	w->first_psn = sv_pq(qe)->chan.lean_psn;
	w->last_psn = sv_psn_add(sv_pq(qe)->chan.lean_psn, SV_PSN_MASK);
	w->sent = read ? 0 : len;
	w->chan_end = end;
	w->state = SV_WQE_CHAN;
	atomic_store_explicit(&qp->sq.tail, tail + 1, memory_order_release);
	/* Only posters write them, under sq_lock: no locked RMW needed. */
	if (read)
		atomic_store_explicit(
			&sv_pq(qe)->chan.lean_reads,
			atomic_load_explicit(&sv_pq(qe)->chan.lean_reads,
					     memory_order_relaxed) +
				1,
			memory_order_relaxed);
	else if (write)
		atomic_store_explicit(
			&sv_pq(qe)->chan.lean_writes,
			atomic_load_explicit(&sv_pq(qe)->chan.lean_writes,
					     memory_order_relaxed) +
				1,
			memory_order_relaxed);
	else
		atomic_store_explicit(
			&sv_pq(qe)->chan.lean_sends,
			atomic_load_explicit(&sv_pq(qe)->chan.lean_sends,
					     memory_order_relaxed) +
				1,
			memory_order_relaxed);
	sv_chan_prefetch_ahead(t);
	ready_note(qe);
	poke(qe, false, idle || caught_up);
	/* A thread asleep for good would not run the watchdog. */
	if (idle && atomic_load_explicit(&qe->eng->sleep_until,
					 memory_order_relaxed) == UINT64_MAX)
		sv_timer_note(qe->eng, sv_now_ns() + SV_CHAN_WATCH_NS);
	return true;
}

static void lean_retire(struct sv_qp_engine *qe);

/* How long a lean READ waits for a result word (the peer answering the
 * oldest READ) before the QP leaves lean mode for it. */
#define SV_CHAN_READ_WAIT_NS 5000u

/* Engine lock held, not sq_lock: is a READ held back only by the limit
 * on READs in the channel?  Then retire what the peer answered, for a
 * while, until a result word is free. */
static bool lean_read_room(struct sv_qp_engine *qe,
			   const struct ibv_send_wr *wr, uint32_t len)
{
	uint64_t until = 0;
	unsigned int spins = 0;

	if (wr->opcode != IBV_WR_RDMA_READ || !len || len > SV_CHAN_READ_MAX ||
	    (uint32_t)__builtin_popcountll(lean_results(qe)) <
		    sv_chan_atomic_limit(qe))
		return false; /* not the limit that held it back */
	for (;;) {
		/* (The ack is often there already: retire first.) */
		lean_retire(qe);
		if (!atomic_load(&qe->sq_by_post))
			return false;
		if ((uint32_t)__builtin_popcountll(lean_results(qe)) <
		    sv_chan_atomic_limit(qe))
			return true;
		/* The clock every few looks: it costs as much as a look. */
		if (spins++ % 16 == 0) {
			uint64_t now = sv_now_ns();

			if (!until)
				until = now + SV_CHAN_READ_WAIT_NS;
			else if ((int64_t)(now - until) > 0)
				return false;
		}
		sv_spin_relax();
	}
}

static bool chan_post(struct sv_qp *qp, const struct ibv_send_wr *wr,
		      uint64_t len)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng;
	uint32_t l =
		(uint32_t)(len > SV_CHAN_MAX_MSG ? SV_CHAN_MAX_MSG + 1 : len);
	bool again;

	if (!qe || !atomic_load_explicit(&qe->sq_by_post, memory_order_acquire))
		return false;
	if (lean_post(qe, wr, l))
		return true;
	/* Back to the engine, which needs its lock to take over (the
	 * engine lock comes before sq_lock: util/lockorder.h). */
	eng = qe->eng;
	sv_qlock_unlock(&qp->sq_lock);
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	/* A stream of READs meets the limit on READs in the channel at
	 * every post: it stays lean if the peer answers the oldest soon
	 * (the engine's retirement frees its result word). */
	again = lean_read_room(qe, wr, l);
	sv_qlock_lock(&qp->sq_lock, SV_LOCK_SQ);
	if (again && atomic_load(&qe->sq_by_post) &&
	    sv_wq_used(&qp->sq) < qp->sq.max_wr && lean_post(qe, wr, l)) {
		sv_mutex_unlock(&eng->lock);
		return true;
	}
	if (atomic_load(&qe->sq_by_post))
		lean_leave_locked(qe);
	sv_mutex_unlock(&eng->lock);
	return false;
}

/* The peer acknowledged SENDs of ours and more are still in the
 * channel: its engine takes a stream and acknowledges the next within
 * microseconds, so a thread waiting for our completion event looks again
 * rather than sleep (engine.c wait_moves).  Asleep, it was woken every
 * few acks, and each doorbell cost the receiving side, the slower one, a
 * system call and a wake-up of another core.  A ping-pong's ack leaves
 * nothing in the channel: its waiter sleeps for the answer at once. */
static void acked_note(struct sv_qp_engine *qe)
{
	if (__atomic_load_n(&sv_pq(qe)->chan.tx.tail, __ATOMIC_RELAXED) !=
	    sv_pq(qe)->chan.acked)
		qe->eng->chan_acks_more++;
}

/* Lean mode's retirement, engine lock held (no sq_lock: the WQEs below
 * the tail are written, and post_send only writes at the tail). */
static void lean_retire(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	const struct sv_chan *own = sv_pq(qe)->chan.tx.own;
	uint64_t a = atomic_load_explicit(&own->ack, memory_order_acquire);
	uint32_t tail, n = 0;

	lean_count(qe);
	if (a == sv_pq(qe)->chan.acked)
		return;
	tail = atomic_load_explicit(&qp->sq.tail, memory_order_acquire);
	if (atomic_load_explicit(&own->nak, memory_order_relaxed)) {
		/* The engine's retirement reports it. */
		lean_leave(qe);
		tx_retire(qe);
		return;
	}
	/* The ack may cover a message whose WQE post_send has not
	 * published yet (it publishes the message first): acked moves only
	 * as far as the WQEs retired, so that the ack is looked at again
	 * (busy polls keep seeing it move) until that WQE is there. */
	while (qe->comp.idx != tail) {
		struct sv_send_wqe *w = sv_wq_at(&qp->sq, qe->comp.idx);

		if ((int64_t)(a - w->chan_end) < 0)
			break;
		if (w->opcode == IBV_WR_RDMA_READ) {
			uint64_t bit = 1ull
				       << (w->atomic_result % SV_CHAN_RESULTS);
			enum ibv_wc_status e = sv_chan_read_done(qe, w, own);

			if (e != IBV_WC_SUCCESS) {
				/* The engine's retirement completes it in
				 * error (its loop stops at it) and the QP
				 * goes to ERR. */
				lean_leave(qe);
				sv_explain_wqe(qe, w, e);
				w->state = SV_WQE_ERROR;
				w->status = e;
				tx_retire(qe);
				return;
			}
			/* The word is free for the next READ's result
			 * (after our copy of this one). */
			atomic_store_explicit(
				&sv_pq(qe)->chan.lean_res_freed,
				atomic_load_explicit(
					&sv_pq(qe)->chan.lean_res_freed,
					memory_order_relaxed) ^
					bit,
				memory_order_release);
		}
		w->state = SV_WQE_DONE;
		SV_QSTAT(qe, wr_done);
		SV_QSTAT_ADD(qe, wr_bytes, w->length);
		/* (A large SEND posted through the engine: SOFTVERBS_STRICT's
		 * check of its buffer, as sv_comp_retire makes it.) */
		if (w->strict_summed)
			sv_strict_sum_check(qp, w);
		sv_pq(qe)->chan.acked = w->chan_end;
		sv_pq(qe)->chan.stall_since = 0;
		qe->eng->watch_dirty = true;
		n++;
		if (!wqe_signaled(qp, w)) {
			qe->comp.idx++;
			continue;
		}
		if (sv_complete_send(qe, IBV_WC_SUCCESS))
			break; /* CQ overrun: the QP left lean mode for ERR */
	}
	if (n)
		acked_note(qe);
	if (n && sv_pcap_active())
		sv_pcap_chan_acked(qe, n, 0);
}

static enum sv_chan_r chan_try(struct sv_qp_engine *qe, struct sv_send_wqe *wqe)
{
	struct sv_chan_tx *t = &sv_pq(qe)->chan.tx;
	uint32_t len = (uint32_t)wqe->length, flags = 0;
	bool atomic = sv_chan_atomic_op(wqe->opcode);
	bool write = wqe->opcode == IBV_WR_RDMA_WRITE;
	bool read = wqe->opcode == IBV_WR_RDMA_READ;
	bool rdv = !atomic && !write && !read && wqe->length > SV_CHAN_MAX_MSG;
	/* A stream's WRITE or READ (chan_write.c, chan_read.c): others
	 * before it in the channel or after it in the queue, or
	 * unsignaled. */
	bool busy = sv_pq(qe)->chan.outstanding ||
		    qe->req.idx + 1 != sv_sq_tail(qe);
	uint8_t desc[SV_CHAN_MAX_MSG];
	uint8_t *dst;
	bool paused;

	if (atomic) {
		len = sizeof(struct sv_chan_atomic);
	} else if (write) {
		if (!sv_chan_write_wanted(qe, wqe->opcode, wqe->length,
					  wqe_signaled(qe->qp, wqe), busy))
			return SV_CHAN_NO;
		len += (uint32_t)sizeof(struct sv_chan_write);
	} else if (read) {
		if (!sv_chan_read_wanted(qe, wqe->opcode, wqe->length,
					 wqe_signaled(qe->qp, wqe), busy))
			return SV_CHAN_NO;
		len = sizeof(struct sv_chan_read);
	} else if ((wqe->opcode != IBV_WR_SEND &&
		    wqe->opcode != IBV_WR_SEND_WITH_IMM) ||
		   (rdv && !sv_chan_rdv_wanted(qe, wqe)) ||
		   qe->rnr_retry != 7) {
		/* (An RNR wait in the channel is rnr_retry 7's.) */
		return SV_CHAN_NO;
	}
	if (atomic_load(&qe->state) != IBV_QPS_RTS)
		return SV_CHAN_NO;
	if (!t->ch &&
	    (sv_pq(qe)->chan.tries++ % SV_CHAN_TRY_EVERY || !tx_attach(qe)))
		return SV_CHAN_NO;
	/* Everything before it is in the channel, nothing on packets. */
	if (qe->req.idx - qe->comp.idx != sv_pq(qe)->chan.outstanding ||
	    qe->req.psn != qe->req.max_psn || qe->comp.psn != qe->req.max_psn ||
	    qe->req.rd_atomic)
		return SV_CHAN_NO;
	if (atomic_load_explicit(&t->ch->gen, memory_order_relaxed) != t->gen ||
	    !atomic_load_explicit(&t->ch->open, memory_order_relaxed)) {
		/* The peer closed it (ERR, RESET, destroyed): packets now,
		 * once what is in it is acknowledged or timed out. */
		t->ch = NULL;
		list_update(qe);
		return sv_pq(qe)->chan.outstanding ? SV_CHAN_WAIT : SV_CHAN_NO;
	}
	/* A large SEND goes as a descriptor only if the peer has shown
	 * that it can read our memory (chan_rdv.c); else as packets. */
	if (rdv && !sv_chan_rdv_proven(qe))
		return SV_CHAN_NO;
	/* A fence waits for the atomics before it to complete: their
	 * results must be in place before it reads (IBA). */
	if ((wqe->send_flags & IBV_SEND_FENCE) && sv_pq(qe)->chan.atomics)
		return SV_CHAN_WAIT;
	if (atomic || read) {
		if (sv_pq(qe)->chan.atomics >= sv_chan_atomic_limit(qe))
			return SV_CHAN_WAIT; /* acks kick us */
		/* The result's SGE; else the packet path reports
		 * LOC_PROT_ERR. */
		if (sv_sgl_validate(qe->qp->pd, wqe->sge, wqe->num_sge,
				    IBV_ACCESS_LOCAL_WRITE))
			return SV_CHAN_NO;
	}
	if (rdv) {
		/* A descriptor of our gather list (chan_rdv.c); a bad lkey
		 * is the packet path's LOC_PROT_ERR. */
		len = sv_chan_rdv_fill(qe, wqe, desc);
		if (!len)
			return SV_CHAN_NO;
		flags |= SV_CHAN_F_RDV;
	}
	dst = sv_chan_reserve(t, len);
	if (!dst)
		return SV_CHAN_WAIT; /* full: acks make room and kick us */
	if (atomic) {
		/* The lowest free result word (fewer than SV_CHAN_RESULTS
		 * are used); its number stays in the WQE until the result
		 * replaces it. */
		uint32_t r = (uint32_t)__builtin_ctzll(
			~sv_pq(qe)->chan.results_used);

		sv_chan_atomic_fill(wqe, dst);
		if (sv_pcap_active()) {
			struct sv_pcap_atomic pa = {
				.cas = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP,
				.va = wqe->wr.atomic.remote_addr,
				.rkey = wqe->wr.atomic.rkey,
				.compare_add = wqe->wr.atomic.compare_add,
				.swap = wqe->wr.atomic.swap,
			};

			sv_pcap_chan_atomic(qe, qe->req.psn, &pa);
		}
		wqe->atomic_result = r;
		wqe->chan_end = sv_chan_commit(t, len, SV_CHAN_F_ATOMIC, r);
		if (sv_env_trace()) {
			char extra[64];

			snprintf(extra, sizeof(extra),
				 " va 0x%" PRIx64 " rkey 0x%x",
				 wqe->wr.atomic.remote_addr,
				 wqe->wr.atomic.rkey);
			sv_trace_op(qe->eng, "tx-chan",
				    wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
					    SV_OP_RC_COMPARE_SWAP :
					    SV_OP_RC_FETCH_ADD,
				    qe->dest_qpn, 8, extra);
		}
		sv_pq(qe)->chan.results_used |= 1ull << r;
		sv_pq(qe)->chan.atomics++;
		SV_STAT(qe->eng, chan_atomics);
	} else if (read) {
		uint32_t r = (uint32_t)__builtin_ctzll(
			~sv_pq(qe)->chan.results_used);

		sv_chan_read_fill(wqe, dst);
		wqe->atomic_result = r;
		wqe->chan_end = sv_chan_commit(t, len, SV_CHAN_F_READ, r);
		sv_pq(qe)->chan.results_used |= 1ull << r;
		sv_pq(qe)->chan.atomics++;
		SV_STAT(qe->eng, chan_reads);
		if (sv_env_trace()) {
			char extra[64];

			snprintf(extra, sizeof(extra),
				 " va 0x%" PRIx64 " rkey 0x%x",
				 wqe->wr.rdma.remote_addr, wqe->wr.rdma.rkey);
			sv_trace_op(qe->eng, "tx-chan",
				    SV_OP_RC_RDMA_READ_REQUEST, qe->dest_qpn,
				    (uint32_t)wqe->length, extra);
		}
	} else if (write) {
		if (!sv_chan_write_fill(qe, wqe, dst))
			return SV_CHAN_NO; /* the packet path: LOC_PROT_ERR */
		wqe->chan_end = sv_chan_commit(t, len, SV_CHAN_F_WRITE, 0);
		SV_STAT(qe->eng, chan_writes);
		if (sv_env_trace())
			trace_write(qe, dst, len);
	} else if (rdv) {
		memcpy(dst, desc, len);
	} else if (wqe->send_flags & IBV_SEND_INLINE) {
		/* Our own copy of the data: it cannot fault. */
		if (!sv_dma_copy(dst, wqe->inline_data, len))
			return SV_CHAN_NO;
	} else if (len ? sv_sgl_copy(qe->qp->pd, wqe->sge, wqe->num_sge, 0, dst,
				     len, false) :
			 sv_sgl_validate(qe->qp->pd, wqe->sge, wqe->num_sge,
					 0)) {
		return SV_CHAN_NO; /* the packet path reports LOC_PROT_ERR */
	}
	if (!atomic && !write && !read) {
		if (wqe->opcode == IBV_WR_SEND_WITH_IMM)
			flags |= SV_CHAN_F_IMM;
		if (wqe->send_flags & IBV_SEND_SOLICITED)
			flags |= SV_CHAN_F_SE;
		if (sv_pcap_active() && !rdv)
			sv_pcap_chan_send(qe, qe->req.psn, dst, len,
					  wqe->opcode == IBV_WR_SEND_WITH_IMM,
					  wqe->imm_data, flags & SV_CHAN_F_SE);
		wqe->chan_end = sv_chan_commit(t, len, flags, wqe->imm_data);
		SV_STAT(qe->eng, chan_sends);
		if (rdv) {
			SV_STAT(qe->eng, rdv_sends);
			sv_pq(qe)->chan.rdv_end = wqe->chan_end;
		}
		if (sv_env_trace())
			trace_msg(qe, "tx-chan", qe->dest_qpn,
				  (uint32_t)wqe->length,
				  wqe->opcode == IBV_WR_SEND_WITH_IMM);
	}
	/* No PSN: an empty range at req.psn (as direct.c's). */
	wqe->first_psn = qe->req.psn;
	wqe->last_psn = sv_psn_add(qe->req.psn, SV_PSN_MASK);
	wqe->sent = atomic || read ? 0 : wqe->length;
	wqe->state = SV_WQE_CHAN;
	qe->req.idx++;
	paused = !sv_pq(qe)->chan.outstanding;
	if (!sv_pq(qe)->chan.outstanding++) {
		sv_pq(qe)->chan.stall_since = 0;
		/* Passes must now visit it, busy polls watch our ack line. */
		list_update(qe);
		/* A thread asleep for good would not run the watchdog. */
		if (atomic_load_explicit(&qe->eng->sleep_until,
					 memory_order_relaxed) == UINT64_MAX)
			sv_timer_note(qe->eng, sv_now_ns() + SV_CHAN_WATCH_NS);
	}
	ready_note(qe);
	poke(qe, true, paused);
	lean_enter(qe);
	return SV_CHAN_SENT;
}

/* The peer could not pull the large SEND at from (its reads of our
 * memory refused after its probe allowed them) and closed its channel:
 * that WQE and every one after it, all in the channel and none taken,
 * go again as packets, from their WQEs (no lean WQE is among them:
 * lean_enter waits for a large SEND's ack).  The peer's channel is
 * not attached to again until it opens anew. */
static void tx_resend(struct sv_qp_engine *qe, uint32_t from)
{
	struct sv_chan *own = own_chan(qe); /* (tx.own, writable) */
	uint32_t idx;

	for (idx = from; idx != qe->req.idx; idx++) {
		struct sv_send_wqe *w = sv_wq_at(&qe->qp->sq, idx);

		w->state = SV_WQE_PENDING;
		w->sent = 0;
		w->chan_end = 0;
	}
	sv_dbg("chan: qp 0x%06x: the peer could not pull a large SEND: %u "
	       "WRs go again as packets",
	       qe->qpn, qe->req.idx - from);
	qe->req.idx = from;
	sv_pq(qe)->chan.outstanding = 0;
	sv_pq(qe)->chan.atomics = 0;
	sv_pq(qe)->chan.results_used = 0;
	sv_pq(qe)->chan.tx.ch = NULL;
	if (own)
		atomic_store(&own->nak, 0);
	sv_pq(qe)->chan.stall_since = 0;
	list_update(qe);
}

static void tx_retire(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	const struct sv_chan *own = sv_pq(qe)->chan.tx.own;
	uint64_t a = atomic_load_explicit(&own->ack, memory_order_acquire);
	uint32_t nak, idx, done = 0, naked = 0;
	uint64_t nak_pos;
	int st = atomic_load(&qe->state);

	if (a == sv_pq(qe)->chan.acked)
		return;
	/* Never beyond what we wrote: a broken peer is ignored. */
	if (a - sv_pq(qe)->chan.acked >
	    sv_pq(qe)->chan.tx.tail - sv_pq(qe)->chan.acked)
		return;
	sv_pq(qe)->chan.acked = a;
	sv_pq(qe)->chan.stall_since = 0;
	qe->eng->watch_dirty = true;
	acked_note(qe);
	if (st != IBV_QPS_RTS && st != IBV_QPS_SQD)
		return;
	nak = atomic_load_explicit(&own->nak, memory_order_relaxed);
	nak_pos = atomic_load_explicit(&own->nak_pos, memory_order_relaxed);
	/* Only what a responder reports (a peer's word is not trusted). */
	if (nak && nak != IBV_WC_REM_INV_REQ_ERR &&
	    nak != IBV_WC_REM_ACCESS_ERR && nak != IBV_WC_LOC_PROT_ERR &&
	    nak != SV_CHAN_NAK_RESEND)
		nak = IBV_WC_REM_OP_ERR;
	for (idx = qe->comp.idx; idx != qe->req.idx; idx++) {
		struct sv_send_wqe *w = sv_wq_at(&qp->sq, idx);

		if (w->state != SV_WQE_CHAN || (int64_t)(a - w->chan_end) < 0)
			break;
		sv_pq(qe)->chan.outstanding--;
		if (has_result(w)) {
			sv_pq(qe)->chan.atomics--;
			sv_pq(qe)->chan.results_used &=
				~(1ull << (w->atomic_result % SV_CHAN_RESULTS));
		}
		if (nak == SV_CHAN_NAK_RESEND && w->chan_end == nak_pos) {
			tx_resend(qe, idx);
			break;
		}
		if (nak && w->chan_end == nak_pos) {
			sv_explain_wqe(qe, w, nak);
			SV_STAT(qe->eng, nak_rcvd);
			w->state = SV_WQE_ERROR;
			w->status = nak;
			naked = nak;
			break;
		}
		if (w->opcode == IBV_WR_RDMA_READ) {
			enum ibv_wc_status e = sv_chan_read_done(qe, w, own);

			if (e != IBV_WC_SUCCESS) {
				sv_explain_wqe(qe, w, e);
				w->state = SV_WQE_ERROR;
				w->status = e;
				break;
			}
		} else if (sv_chan_atomic_op(w->opcode)) {
			enum ibv_wc_status e = sv_chan_atomic_done(qe, w, own);

			if (sv_pcap_active()) {
				/* Its own ACKNOWLEDGE, after the ACK of the
				 * SENDs before it. */
				if (done)
					sv_pcap_chan_acked(qe, done, 0);
				done = 0;
				sv_pcap_chan_atomic_acked(qe, w->atomic_result);
			}
			if (e != IBV_WC_SUCCESS) {
				sv_explain_wqe(qe, w, e);
				w->state = SV_WQE_ERROR;
				w->status = e;
				break;
			}
		}
		w->state = SV_WQE_DONE;
		if (!sv_chan_atomic_op(w->opcode))
			done++; /* (an atomic's acknowledgement is written) */
	}
	if ((done || naked) && sv_pcap_active())
		sv_pcap_chan_acked(qe, done, naked);
	sv_comp_retire(qe);
	if (atomic_load(&qe->state) == IBV_QPS_ERR) {
		sv_pq(qe)->chan.outstanding = 0;
		sv_pq(qe)->chan.atomics = 0;
		sv_pq(qe)->chan.results_used = 0;
		sv_work_add(qe, SV_WORK_FLUSH);
	} else if (qe->req.idx != sv_sq_tail(qe) || st == IBV_QPS_SQD) {
		/* Room in the channel, or the packet path may go on (or
		 * SQD is drained now: sv_qp_run tells). */
		sv_work_add(qe, SV_WORK_REQ);
	}
}

/* A receive of the packet path is about to complete: our SENDs the peer
 * acknowledged first complete first (chan_poll retires them before it
 * takes messages for the same reason). */
static void chan_settle(struct sv_qp_engine *qe)
{
	if (!sv_pq(qe)->chan.tx.own)
		return;
	if (atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
		lean_retire(qe);
	else if (sv_pq(qe)->chan.outstanding)
		tx_retire(qe);
}

/* Will the peer still take what we sent?  Yes while its channel is the
 * one we attached to, open, and its process runs: its engine consumes
 * every message, perhaps late (waiting for a receive WQE: an RNR NAK on
 * the packet path, retried forever with rnr_retry 7; or for a CPU).  A
 * killed or stopped peer, or its QP in ERR or RESET (the channel closed),
 * never will: that silence is what the watchdog is for. */
static bool peer_will_take(struct sv_qp_engine *qe)
{
	const struct sv_chan_tx *t = &sv_pq(qe)->chan.tx;

	return t->ch && atomic_load(&t->ch->gen) == t->gen &&
	       atomic_load(&t->ch->open) && qe->shm &&
	       sv_shm_peer_running(qe->shm);
}

/* What the consumer claims before it places it, and the requester may
 * take back (chan_write.c): WRITEs and READs. */
static bool takeable(const struct sv_send_wqe *w)
{
	return w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_READ;
}

/* How long channel WRITEs wait for their ack before the requester
 * looks whether the peer is stopped (and then between two looks). */
#define SV_CHAN_TAKE_NS (2ull * 1000 * 1000)

/* The peer is stopped (SIGSTOP, a debugger) with WRITEs of ours in its
 * channel: take back those it has not claimed (chan_write.c) and run
 * them, and everything after them, on the other paths - the one-copy
 * path reaches a stopped process's memory, as it did before WRITEs went
 * through channels.  What it claimed stays its own (it places it when
 * it continues; the watchdog's timeout applies to it as to SENDs).
 * true: WQEs were taken back. */
static bool tx_take_back(struct sv_qp_engine *qe, uint64_t now)
{
	struct sv_chan_tx *t = &sv_pq(qe)->chan.tx;
	struct sv_qp *qp = qe->qp;
	uint32_t idx, k, outstanding = 0, atomics = 0;
	uint64_t results = 0;
	uint64_t c;
	bool any = false;

	if (!t->ch || now - sv_pq(qe)->chan.stall_since < SV_CHAN_TAKE_NS ||
	    (int64_t)(now - sv_pq(qe)->chan.take_next) < 0)
		return false;
	sv_pq(qe)->chan.take_next = now + SV_CHAN_TAKE_NS;
	if (!qe->shm || !sv_shm_peer_stopped(qe->shm))
		return false;
	lean_leave(qe); /* the engine's cursors from here */
	for (idx = qe->comp.idx; idx != qe->req.idx && !any; idx++) {
		const struct sv_send_wqe *w = sv_wq_at(&qp->sq, idx);

		any = w->state == SV_WQE_CHAN && takeable(w);
	}
	if (!any)
		return false;
	/* The consumer places no WRITE at or beyond c from now on. */
	c = atomic_fetch_or(&t->ch->claim, SV_CHAN_CLAIM_REVOKED) &
	    ~SV_CHAN_CLAIM_REVOKED;
	for (k = qe->comp.idx; k != qe->req.idx; k++) {
		const struct sv_send_wqe *w = sv_wq_at(&qp->sq, k);

		if (w->state == SV_WQE_CHAN && takeable(w) &&
		    (int64_t)(w->chan_end - c) > 0)
			break;
		if (w->state != SV_WQE_CHAN)
			continue;
		outstanding++;
		if (has_result(w)) {
			atomics++;
			results |= 1ull << (w->atomic_result % SV_CHAN_RESULTS);
		}
	}
	/* Its owner learns of the revocation when it looks again (a new
	 * generation, which we may attach to). */
	ready_note(qe);
	poke(qe, true, true);
	t->ch = NULL;
	if (k == qe->req.idx) {
		list_update(qe);
		return false; /* it had claimed them all */
	}
	qe->eng->stats->chan_writes_taken += qe->req.idx - k;
	sv_dbg("chan: qp 0x%06x: the peer is stopped: %u WRs taken back from "
	       "its channel",
	       qe->qpn, qe->req.idx - k);
	for (idx = k; idx != qe->req.idx; idx++) {
		struct sv_send_wqe *w = sv_wq_at(&qp->sq, idx);

		w->state = SV_WQE_PENDING;
		w->sent = 0;
		w->chan_end = 0;
	}
	qe->req.idx = k;
	sv_pq(qe)->chan.outstanding = outstanding;
	sv_pq(qe)->chan.atomics = atomics;
	sv_pq(qe)->chan.results_used = results;
	sv_pq(qe)->chan.stall_since = 0;
	qe->eng->watch_dirty = true;
	list_update(qe);
	sv_work_add(qe, SV_WORK_REQ);
	return true;
}

/* The peer consumes nothing any more: fail the oldest WQE as the packet
 * path fails it when its retries run out. */
static void tx_watchdog(struct sv_qp_engine *qe, uint64_t now)
{
	uint64_t t = qe->comp.timeout_ns, limit;
	struct sv_send_wqe *w;

	if (!sv_pq(qe)->chan.stall_since) {
		sv_pq(qe)->chan.stall_since = now;
		return;
	}
	if (tx_take_back(qe, now))
		return;
	if (!t)
		return; /* IBA: an infinite timeout */
	if (t < SV_MIN_TIMEOUT_NS)
		t = SV_MIN_TIMEOUT_NS;
	limit = t * (qe->retry_cnt + 1u);
	if (now - sv_pq(qe)->chan.stall_since < limit)
		return;
	if (peer_will_take(qe)) {
		sv_pq(qe)->chan.stall_since = now; /* look again in a while */
		return;
	}
	lean_leave(qe); /* the engine's cursors from here */
	if (!sv_pq(qe)->chan.outstanding)
		return;
	w = sv_wq_at(&qe->qp->sq, qe->comp.idx);
	if (w->state != SV_WQE_CHAN)
		return;
	SV_STAT(qe->eng, retry_exceeded_err);
	sv_dbg("chan: qp 0x%06x: no ack for %llu ms, retry exceeded", qe->qpn,
	       (unsigned long long)((now - sv_pq(qe)->chan.stall_since) /
				    1000000));
	sv_explain_wqe(qe, w, IBV_WC_RETRY_EXC_ERR);
	w->state = SV_WQE_ERROR;
	w->status = IBV_WC_RETRY_EXC_ERR;
	sv_pq(qe)->chan.outstanding = 0;
	sv_pq(qe)->chan.atomics = 0;
	sv_pq(qe)->chan.results_used = 0;
	qe->eng->watch_dirty = true;
	sv_comp_retire(qe);
	sv_work_add(qe, SV_WORK_FLUSH);
}

/* ---- the engine's passes ------------------------------------------------- */

/* The ready words of our segments: the cold channels they name become
 * hot (a bit for a channel that is not ours, or closed, is ignored). */
static void ready_take(struct sv_engine *eng)
{
	struct list_node *it;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);
		uint64_t bits;

		if (!s->ring.hdr ||
		    !atomic_load_explicit(&s->ring.hdr->chan_ready,
					  memory_order_relaxed))
			continue;
		bits = atomic_exchange_explicit(&s->ring.hdr->chan_ready, 0,
						memory_order_acquire);
		while (bits) {
			uint32_t i = (uint32_t)__builtin_ctzll(bits) *
				     SV_SHM_READY_PER_BIT,
				 end = i + SV_SHM_READY_PER_BIT;

			bits &= bits - 1;
			for (; i < end; i++) {
				struct sv_qp_engine *qe = s->slot[i];

				SV_STAT(eng, chan_visits);
				if (qe && sv_pq(qe)->chan.rx.ch &&
				    (!sv_pq(qe)->chan.rx_hot ||
				     sv_pq(qe)->chan.cold_at))
					rx_warm(qe);
			}
		}
	}
}

/* After a pass visited the QP: busy tells whether it had anything to do
 * on its channels.  Idle for SV_CHAN_COOL_NS, its channel goes cold (and
 * is looked at for SV_CHAN_NAP_NS more: the invariant at the top), lean
 * mode ends, and the QP leaves the list. */
static void cool(struct sv_engine *eng, struct sv_qp_engine *qe, bool busy)
{
	if (busy) {
		if (sv_pq(qe)->chan.cold_at)
			rx_warm(qe);
		sv_pq(qe)->chan.idle_since = 0;
		return;
	}
	if (!eng->now_ok)
		return; /* (a pass that reads no clock decides nothing) */
	if (!sv_pq(qe)->chan.idle_since) {
		sv_pq(qe)->chan.idle_since = eng->now;
		return;
	}
	if (eng->now - sv_pq(qe)->chan.idle_since < SV_CHAN_COOL_NS)
		return;
	if (sv_pq(qe)->chan.rx_hot && !sv_pq(qe)->chan.cold_at) {
		/* seq_cst: the looks after it see what a producer published
		 * before it read cold as 0 (once the nap's window passed). */
		atomic_store(&sv_pq(qe)->chan.rx.ch->cold, 1);
		sv_pq(qe)->chan.cold_at = eng->now;
		return;
	}
	if (sv_pq(qe)->chan.cold_at &&
	    eng->now - sv_pq(qe)->chan.cold_at < SV_CHAN_NAP_NS)
		return;
	sv_pq(qe)->chan.rx_hot = false;
	sv_pq(qe)->chan.cold_at = 0;
	sv_pq(qe)->chan.idle_since = 0;
	lean_leave(qe); /* (a post racing with it: outstanding, listed) */
	list_update(qe);
}

static void chan_poll(struct sv_engine *eng)
{
	struct list_node *it, *tmp;

	if (sv_pe(eng)->chans_open)
		ready_take(eng);
	list_for_each_safe (&sv_pe(eng)->chans, it, tmp) {
		struct sv_qp_engine *qe =
			sv_pq_qp(list_entry(it, struct sv_paths_qp, chan.node));
		uint64_t head = sv_pq(qe)->chan.rx.head;
		unsigned int i;
		bool busy;

		SV_STAT(eng, chan_visits);
		/* Acknowledgements before messages: the peer acknowledged
		 * our SENDs before it could answer them, and completions
		 * seen together must tell it in that order (rx_run).  An
		 * ack that comes while rx_run looks stops it for another
		 * retirement, a few times; then the messages wait for the
		 * next pass (which comes: messages wait, chan_idle). */
		for (i = 0; i < SV_CHAN_ACK_ROUNDS; i++) {
			if (atomic_load_explicit(&qe->sq_by_post,
						 memory_order_relaxed))
				lean_retire(qe);
			else if (sv_pq(qe)->chan.outstanding)
				tx_retire(qe);
			if (!sv_pq(qe)->chan.rx.ch || !rx_run(qe))
				break;
		}
		busy = tx_pending(qe) ||
		       (sv_pq(qe)->chan.rx.ch &&
			(sv_pq(qe)->chan.rx.head != head ||
			 sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_acked ||
			 sv_chan_pending(&sv_pq(qe)->chan.rx)));
		if (eng->now_ok && tx_pending(qe))
			tx_watchdog(qe, eng->now);
		cool(eng, qe, busy);
		if (sv_pq(qe)->chan.listed != list_want(qe))
			list_update(qe);
	}
}

/* Under the lock, before the thread sleeps (after the sleeping words are
 * set): anything a peer published that a pass would take? */
static bool chan_idle(struct sv_engine *eng)
{
	struct list_node *it;

	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		if (s->ring.hdr && atomic_load(&s->ring.hdr->chan_ready))
			return false;
	}

	for (it = sv_pe(eng)->chans.n.next; it != &sv_pe(eng)->chans.n;
	     it = it->next) {
		struct sv_qp_engine *qe =
			sv_pq_qp(list_entry(it, struct sv_paths_qp, chan.node));

		if (sv_pq(qe)->chan.rx.ch &&
		    rx_state_ok(atomic_load(&qe->state)) &&
		    (sv_chan_pending(&sv_pq(qe)->chan.rx) ||
		     sv_pq(qe)->chan.rx.head != sv_pq(qe)->chan.rx_acked))
			return false;
		if ((sv_pq(qe)->chan.outstanding ||
		     atomic_load_explicit(&qe->sq_by_post,
					  memory_order_relaxed)) &&
		    atomic_load(&sv_pq(qe)->chan.tx.own->ack) !=
			    sv_pq(qe)->chan.acked)
			return false;
	}
	return true;
}

static bool chan_need_watchdog(struct sv_engine *eng)
{
	struct list_node *it;

	for (it = sv_pe(eng)->chans.n.next; it != &sv_pe(eng)->chans.n;
	     it = it->next)
		if (tx_pending(sv_pq_qp(
			    list_entry(it, struct sv_paths_qp, chan.node))))
			return true;
	return false;
}

/* After a pass (set_quiet): the words a lock-free busy poll compares.
 * Only words of our own segments (which live as long as the engine's
 * sockets), never a peer's mapping. */
static void chan_watch(struct sv_engine *eng, unsigned int *n)
{
	struct list_node *it;

	/* A producer into a cold channel sets its segment's ready word. */
	for (it = eng->socks.n.next;
	     sv_pe(eng)->chans_open && it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		if (s->ring.hdr)
			sv_watch_word(eng, n, &s->ring.hdr->chan_ready, 0,
				      false);
	}

	for (it = sv_pe(eng)->chans.n.next; it != &sv_pe(eng)->chans.n;
	     it = it->next) {
		struct sv_qp_engine *qe =
			sv_pq_qp(list_entry(it, struct sv_paths_qp, chan.node));
		struct sv_chan_rx *r = &sv_pq(qe)->chan.rx;

		if (r->ch)
			sv_watch_word(
				eng, n,
				&r->slot[(uint32_t)r->head & (SV_CHAN_SLOTS - 1)]
					 .seq,
				sv_chan_seq(r->gen, r->head), true);
		/* (A lean QP's posts do not pass here: watch it always.) */
		if (sv_pq(qe)->chan.outstanding ||
		    atomic_load_explicit(&qe->sq_by_post, memory_order_relaxed))
			sv_watch_word(eng, n, &sv_pq(qe)->chan.tx.own->ack,
				      sv_pq(qe)->chan.acked, false);
	}
}

/* The requester's offer: a channel takes small SENDs; while SENDs it took
 * are outstanding, the packet path waits for them (no overtaking). */
static enum sv_path_r chan_send(struct sv_qp_engine *qe,
				struct sv_send_wqe *wqe)
{
	switch (chan_try(qe, wqe)) {
	case SV_CHAN_SENT:
		return SV_PATH_DONE;
	case SV_CHAN_WAIT:
		return SV_PATH_WAIT;
	default:
		return sv_pq(qe)->chan.outstanding ? SV_PATH_WAIT : SV_PATH_NO;
	}
}

/* The thread before it sleeps (engine lock, the shm link's sleeping words
 * already set): what peers published since the last pass means no sleep;
 * the first sleep with channels open is a nap, and SENDs waiting for
 * their ack keep a watchdog running. */
static uint64_t chan_next_wake(struct sv_engine *eng, uint64_t now,
			       uint64_t until, bool busy, bool napped,
			       bool *nap)
{
	if (!busy && until != now && !chan_idle(eng))
		until = now;
	/* A message channel's producer reads our sleeping word without a
	 * fence (poke): one that read it just before our store was
	 * visible published without ringing.  So the first sleep is a
	 * nap, after which we look again with the word still set, and
	 * only then sleep for good. */
	if (!busy && until > now + SV_CHAN_NAP_NS && !napped &&
	    eng->paths_active) {
		until = now + SV_CHAN_NAP_NS;
		*nap = true;
	}
	/* Messages waiting for their ack: the stall watchdog. */
	if (until > now + SV_CHAN_WATCH_NS && chan_need_watchdog(eng))
		until = now + SV_CHAN_WATCH_NS;
	return until;
}

/* A channel lives after the packet slots of the peer's segment: any QP
 * attached through the shm link (chan_try decides the rest: RC, rnr_retry
 * 7, the peer's channel open; a SEND longer than SV_CHAN_MAX_MSG as a
 * descriptor, chan_rdv.c). */
static bool chan_applies(const struct sv_qp_engine *qe)
{
	return qe->shm != NULL;
}

const struct sv_path_ops sv_path_chan = {
	.name = "chan",
	.engine_init = chan_engine_init,
	.applies = chan_applies,
	.post = chan_post,
	.send = chan_send,
	.quiesce = lean_leave,
	.qp_state = chan_qp_state,
	.qp_destroyed = chan_qp_destroyed,
	.settle = chan_settle,
	.poll = chan_poll,
	.watch = chan_watch,
	.next_wake = chan_next_wake,
};
