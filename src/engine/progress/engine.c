/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Per-context engine lifecycle and progress.
 *
 * Progress happens in passes under the engine lock: take the QPs that were
 * posted to, receive what the sockets hold, run the QPs that have work,
 * fire due timers, send the batch.  Three kinds of thread run passes:
 *   - the progress thread, which waits (without the lock) in epoll on the
 *     sockets, the doorbell eventfd and the earliest timer, so one-sided
 *     operations complete while the application does nothing;
 *   - ibv_post_send/recv, which run a pass inline when the lock is free
 *     (else ring the doorbell), so a send leaves without a thread switch;
 *   - ibv_poll_cq on an empty CQ (sv_engine_poll_hint), which runs a pass
 *     under trylock, so a busy-polling application gets its completions
 *     without waiting for the thread to wake up.
 * The thread watches every socket whether or not the application polls:
 * an application that polled a moment ago may now spin on its own memory
 * (ib_write_lat's target waits for a WRITE that way), and a datagram in
 * an unwatched socket waited for the thread's next timeout.  Two
 * exceptions, bounded: while a stream comes in, or while the application
 * answers each completion at once (a ping-pong), and its polls read every
 * socket, the thread naps without them (app_does_it).  On the
 * shm link watching costs nothing: peers ring a socket only while its
 * thread says it sleeps (links.c), which it does not while the
 * application polls.  Idle, the thread sleeps in epoll with no timeout:
 * no CPU is used.
 */
#include "engine/transport/eng.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/cq.h"
#include "engine/diag/diag.h"
#include "engine/forward/gsifwd.h"
#include "engine/diag/inject.h"
#include "engine/diag/pcap.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/mcast.h"
#include "engine/transport/path.h"
#include "engine/transport/qpe.h"
#include "engine/transport/recv.h"
#include "engine/transport/stats.h"
#include "engine/diag/statseg.h"
#include "engine/transport/xmit.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"

static void bell_ring(struct sv_engine *eng)
{
	uint64_t one = 1;

	if (write(eng->bellfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		sv_warn("engine: doorbell: %s", strerror(errno));
}

static void bell_drain(struct sv_engine *eng)
{
	uint64_t v;

	if (read(eng->bellfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		sv_warn("engine: doorbell: %s", strerror(errno));
}

/* Packets received from a wire link (UDP) so far. */
static uint64_t wire_rcvd(const struct sv_engine *eng)
{
	return eng->stats->rcvd_pkts - eng->stats->shm_rx_pkts;
}

/* ---- who receives: the application's polls or the thread ------------------ */

/* The thread, since its last look: is the application carrying a
 * ping-pong itself?  Its own passes (poll_hint) made completions, and no
 * request came that changes its memory without a completion (an RDMA
 * WRITE without immediate, an atomic: recv.c counts them), which is what
 * an application spinning on memory waits for (ib_write_lat's target)
 * and only the thread can bring while it spins, unless the request came
 * with the ACK the application polls for (its peer held the ACK for its
 * answer, hold_acks; recv.c does not count those).  Everything else that
 * comes (SENDs, ACKs, READ responses) completes something the
 * application polls for, and its polls receive it.  A thread watching
 * the sockets meanwhile only costs: every datagram runs the socket's
 * wake-up calls (ep_poll_callback) and wakes the thread on the
 * application's core, where it preempts the application between its
 * poll and its answer, for tens of microseconds on a PVM guest
 * (docs/engine.md has the figures).  The passes are counted over looks until there are
 * SV_LOOP_PASSES (the watching thread looks every trip or two); a nap
 * goes on while each look sees one more.  A look that sees none (the
 * application went away) or such a request ends it: the longest that
 * request waited is the nap. */
static bool app_loops(struct sv_engine *eng)
{
	unsigned int passes = eng->app_cqe_passes;
	bool loop;

	if (eng->mem_reqs)
		loop = false;
	else if (passes >= SV_LOOP_PASSES || (passes && eng->loop_nap))
		loop = true;
	else if (passes)
		return false; /* too few yet: counted on */
	else
		loop = false;
	eng->app_cqe_passes = eng->mem_reqs = 0;
	eng->loop_nap = loop;
	return loop;
}

/* The thread: is a stream of datagrams going through the wire sockets
 * (SV_NAP_PKTS sent and received since its last look) while the
 * application busy-polls, its passes reading every wire socket?  Then
 * those passes can do the work, and the thread naps without the sockets:
 * each of its wake-ups would preempt the poller on its core, often
 * holding the lock the poller needs.  Between namespaces, ib_send_bw
 * 1 MiB (its server's polls receive the stream) went from 1,380 to 2,200
 * MiB/s, and ib_write_bw 1 MiB (its client's polls take the ACKs and
 * send the next packets) from 1,300-1,900 to 2,200 at MTU 1500 and from
 * 2,100 to 3,600 at MTU 9000.  A ping-pong is no stream: the thread
 * keeps watching every socket for an application that polled a moment
 * ago and now spins on its own memory (ib_write_lat's target), unless
 * the application's verbs carry the ping-pong themselves (app_loops).
 * The nap doubles while the stream or the ping-pong lasts, from
 * SV_NAP_MIN_NS to SV_NAP_MAX_NS: the longest a datagram waits for the
 * thread if the application stops polling in the middle. */
static bool app_does_it(struct sv_engine *eng)
{
	uint64_t pkts = wire_rcvd(eng) + eng->stats->sent_pkts;
	bool stream = pkts - eng->rx_seen >= SV_NAP_PKTS, loop = app_loops(eng),
	     live = (stream || loop) &&
		    atomic_load_explicit(&eng->app_reads_all,
					 memory_order_relaxed);

	eng->rx_seen = pkts;
	if (live && !stream)
		eng->stats->thread_naps_loop++;
	if (!live) {
		eng->nap_ns = 0;
		return false;
	}
	eng->nap_ns = !eng->nap_ns		      ? SV_NAP_MIN_NS :
		      eng->nap_ns * 2 > SV_NAP_MAX_NS ? SV_NAP_MAX_NS :
							eng->nap_ns * 2;
	return true;
}

/* While the thread naps it waits without the wire sockets, but in its
 * epoll set they would still cost every datagram delivered to them a
 * wake-up call into that set (sock_def_readable, ep_poll_callback, under
 * irq-saving locks), paid inside the sender's sendmsg of every small
 * message.  So they leave the set for the
 * naps and are back before the thread next waits on it; a socket added
 * with datagrams waiting is ready at once, so none is missed.  A stream
 * naps for long stretches: the two calls per socket are rare.  Called
 * with the engine lock (eng->socks). */
static void watch_socks(struct sv_engine *eng, bool on)
{
	struct list_node *it;

	if (eng->socks_out != on)
		return;
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };

		/* A socket opened during the nap is in the set already. */
		if (epoll_ctl(eng->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
			      s->udp.fd, &ev) &&
		    errno != (on ? EEXIST : ENOENT))
			sv_warn("engine: epoll: %s", strerror(errno));
	}
	eng->socks_out = !on;
	if (!on)
		eng->stats->thread_unwatch++;
}

/* ---- timers ---------------------------------------------------------------- */

/* The thread publishes how long it sleeps (sleep_until) and then re-reads
 * the earliest deadline; whoever arms an earlier timer publishes it and
 * then reads sleep_until.  With sequentially consistent atomics one of
 * the two sees the other, so the thread never oversleeps a timer. */
void sv_timer_note(struct sv_engine *eng, uint64_t deadline)
{
	uint64_t cur = atomic_load(&eng->next_deadline);

	while ((!cur || deadline < cur) &&
	       !atomic_compare_exchange_weak(&eng->next_deadline, &cur,
					     deadline))
		;
	if (deadline < atomic_load(&eng->sleep_until))
		bell_ring(eng);
}

void sv_qp_timer_arm(struct sv_qp_engine *qe, uint64_t deadline)
{
	if (!qe->on_timed) {
		qe->on_timed = true;
		list_add_tail(&qe->eng->timed, &qe->timed_node);
	}
	sv_timer_note(qe->eng, deadline);
}

/* Only the QPs that armed a timer: with 10,000 idle connections a due
 * timer (every busy poll checks) must not visit them all.  A QP leaves
 * the list when it has no timer left. */
static void run_timers(struct sv_engine *eng)
{
	uint64_t dl = atomic_load(&eng->next_deadline), next = 0;
	struct list_node *it, *tmp;

	if (!dl || sv_eng_now(eng) < dl)
		return;
	atomic_store(&eng->next_deadline, 0);
	list_for_each_safe (&eng->timed, it, tmp) {
		struct sv_qp_engine *qe =
			list_entry(it, struct sv_qp_engine, timed_node);

		if (!sv_qp_timers(qe, eng->now, &next)) {
			list_del(it);
			qe->on_timed = false;
		}
	}
	sv_links_roce_timer(eng, eng->now, &next);
	if (next)
		sv_timer_note(eng, next);
}

static void pass(struct sv_engine *eng, bool rx, bool timers);

/* ---- work list ---------------------------------------------------------------- */

void sv_work_add(struct sv_qp_engine *qe, uint32_t what)
{
	qe->work |= what;
	if (!qe->on_work) {
		qe->on_work = true;
		list_add_tail(&qe->eng->work, &qe->work_node);
	}
}

static void take_kicks(struct sv_engine *eng)
{
	struct list_node *it, *tmp;

	/* Whoever kicks sets kick_any and then tries the engine lock or
	 * rings the doorbell, so a kick this load misses is taken by the
	 * kicker's own pass or by the thread's next one. */
	if (!atomic_load(&eng->kick_any))
		return;
	sv_mutex_lock(&eng->kick_lock, SV_LOCK_KICK);
	atomic_store(&eng->kick_any, false);
	list_for_each_safe (&eng->kicked, it, tmp) {
		struct sv_qp_engine *qe =
			list_entry(it, struct sv_qp_engine, kick_node);

		list_del(it);
		qe->kicked = false;
		sv_work_add(qe, SV_WORK_REQ | SV_WORK_FLUSH);
	}
	sv_mutex_unlock(&eng->kick_lock);
}

static void run_work(struct sv_engine *eng)
{
	struct list_head batch;
	struct list_node *it, *tmp;
	int rounds;

	/* QPs that still have work after their budget re-queue themselves
	 * for the next round or pass, so one busy QP cannot starve others. */
	for (rounds = 0; rounds < 4 && !list_empty(&eng->work); rounds++) {
		list_head_init(&batch);
		list_for_each_safe (&eng->work, it, tmp) {
			list_del(it);
			list_add_tail(&batch, it);
		}
		list_for_each_safe (&batch, it, tmp) {
			struct sv_qp_engine *qe =
				list_entry(it, struct sv_qp_engine, work_node);

			list_del(it);
			qe->on_work = false;
			sv_qp_run(qe);
		}
	}
}

/* After a pass, under the lock: can the next busy polls tell without the
 * lock that a pass would find nothing to do?  Only when one socket, whose
 * QPs all receive through its ring, is all there is to watch and no work
 * is queued.  Anything else that brings work either kicks (kick_any),
 * comes with a timer (checked every SV_HINT_EVERY polls anyway) or
 * happens under the lock outside a pass (qp.c clears quiet). */
static void set_quiet(struct sv_engine *eng)
{
	struct list_node *first = eng->socks.n.next;
	struct sv_sock *q = NULL;

	if (list_empty(&eng->work) && !eng->mcast && !eng->ntx &&
	    first != &eng->socks.n && first->next == &eng->socks.n) {
		struct sv_sock *s = list_entry(first, struct sv_sock, node);

		if (s->ring.hdr && !s->udp_qps)
			q = s;
	}
	if (eng->watch_dirty) {
		eng->watch_dirty = false;
		sv_paths_watch(eng);
	}
	atomic_store_explicit(&eng->quiet, q, memory_order_relaxed);
}

/* The words a lock-free busy poll compares besides the quiet socket's
 * ring (path.h watch): each says "a pass has work" when equal (eq) or
 * unequal to v.  Only words of our own segments, which live as long as the
 * engine's sockets, never a peer's mapping. */
void sv_watch_word(struct sv_engine *eng, unsigned int *n,
		   const _Atomic uint64_t *w, uint64_t v, bool eq)
{
	unsigned int i = (*n)++;

	if (i >= SV_WATCH_MAX)
		return; /* too many: polls take the lock */
	atomic_store_explicit(&eng->watch[i].w, w, memory_order_relaxed);
	atomic_store_explicit(&eng->watch[i].v, v, memory_order_relaxed);
	atomic_store_explicit(&eng->watch[i].busy_if_eq, eq,
			      memory_order_relaxed);
}

/* Lock-free: false when a watched word says a pass has work (or there
 * are too many to watch). */
static bool watched_idle(struct sv_engine *eng)
{
	unsigned int n = atomic_load_explicit(&eng->nwatch,
					      memory_order_relaxed),
		     i;

	if (n > SV_WATCH_MAX)
		return false;
	for (i = 0; i < n; i++) {
		const _Atomic uint64_t *w = atomic_load_explicit(
			&eng->watch[i].w, memory_order_relaxed);
		uint64_t v = atomic_load_explicit(&eng->watch[i].v,
						  memory_order_relaxed);
		bool eq = atomic_load_explicit(&eng->watch[i].busy_if_eq,
					       memory_order_relaxed);

		if ((atomic_load_explicit(w, memory_order_relaxed) == v) == eq)
			return false;
	}
	return true;
}

/* Nothing claimed in the ring since the owner last consumed: tail is
 * where producers claim, head only moves under the engine lock.  (Not
 * the head slot's sequence word: the producer writes that line several
 * times while it fills the slot, and a poller reading it in a loop
 * steals it back each time.) */
static bool ring_idle(struct sv_sock *s)
{
	return atomic_load_explicit(&s->ring.hdr->tail, memory_order_relaxed) ==
	       __atomic_load_n(&s->ring.head, __ATOMIC_RELAXED);
}

void sv_engine_pass(struct sv_engine *eng, bool rx)
{
	eng->now_ok = false;
	sv_eng_now(eng); /* the thread: also for the rings' stall checks */
	pass(eng, rx, true);
	eng->now_ok = false; /* whoever takes the lock next reads afresh */
}

/* A pass that completed receives or WRITEs (eng.h, pass_answerable) while
 * the application busy-polls keeps its ACKs back (xmit.c,
 * sv_tx_hold_acks) for the next pass of anyone:
 * the application's next verb, most likely (its answer), or the thread's,
 * which wakes for any datagram and at the latest SV_ACK_HOLD_NS later.
 * Only while the thread is awake or naps no longer than that (it does
 * while passes want to hold, progress_main): ringing it would cost more
 * than the hold saves.  On a core the application spins on, the scheduler
 * may run the thread milliseconds late; if the application makes no call
 * meanwhile, the requester's probe (SV_PROBE_MIN_NS or later, no retry
 * spent) meets the ACK (counter ack_held_late). */
static bool hold_acks(struct sv_engine *eng)
{
	uint64_t now, wake;

	/* Only a batch of wire ACKs: the shm path pays nothing, not even
	 * the clock read, nor the thread's short naps. */
	if (!eng->pass_answerable)
		return false;
	eng->pass_answerable = 0;
	if (!sv_tx_acks_only(eng))
		return false;
	now = sv_now_ns();
	if (!sv_app_polls(eng, now))
		return false;
	eng->hold_tried = now;
	wake = atomic_load(&eng->sleep_until);
	if (wake > now + SV_ACK_HOLD_NS)
		return false;
	sv_tx_hold_acks(eng, now);
	/* The thread reads the deadline again after it says it sleeps. */
	sv_timer_note(eng, now + SV_ACK_HOLD_NS);
	return true;
}

/* A pass run for ibv_post_send whose batch is requests of streams only
 * (eng.h, stream: their QPs have SV_TX_HOLD_FLIGHT packets or more in
 * flight) keeps them for a later pass: the application's next posts add
 * theirs, and the next pass that is not a post's (its poll of the CQ,
 * the thread's, a wait for an event) or SV_TX_HOLD_MAX of them sends them all, as
 * one UDP_SEGMENT send per socket and destination, which the peer's
 * UDP_GRO socket receives as one datagram.  Sent at once, each post cost
 * a system call and a trip through both UDP stacks for its 8 bytes.
 * The ACKs owed for what is in flight (its last packet asked for one)
 * wake a thread asleep on the sockets, whose pass sends them (a lost
 * ACK: the QP's probe timer); a thread napping without them looks again
 * within SV_ACK_HOLD_NS (as for hold_acks, whose bound it shares); else
 * they go now.  So a completion
 * waits at most a round trip more, and only after a post that did not
 * poll. */
static bool hold_reqs(struct sv_engine *eng)
{
	unsigned int i;
	uint64_t now;

	if (!eng->posting || eng->tx_held || eng->ntx >= SV_TX_HOLD_MAX)
		return false;
	for (i = eng->reqs_held; i < eng->ntx; i++)
		if (!eng->tx[i].stream || !eng->tx[i].link->wire)
			return false;
	if (!eng->reqs_held_at) {
		now = sv_now_ns();
		eng->hold_tried = now;
		/* A thread asleep on the sockets wakes for the ACKs of
		 * what is in flight (a lost one: for the QP's probe
		 * timer): no timer, whose doorbell would wake it twice. */
		if (!atomic_load(&eng->thread_socks)) {
			if (atomic_load(&eng->sleep_until) >
			    now + SV_ACK_HOLD_NS)
				return false;
			sv_timer_note(eng, now + SV_ACK_HOLD_NS);
		}
		eng->reqs_held_at = now;
	}
	eng->stats->req_held += eng->ntx - eng->reqs_held;
	eng->reqs_held = eng->ntx;
	return true;
}

/* timers: whether to check them.  Checking late is harmless (the thread
 * also wakes up for the earliest one); a pass that skips them saves the
 * clock read, which costs more than the rest of an empty pass. */
static void pass(struct sv_engine *eng, bool rx, bool timers)
{
	eng->pass_answerable = 0;
	take_kicks(eng);
	if (rx)
		sv_links_rx(eng);
	if (rx && eng->paths_active)
		sv_paths_poll(eng);
	if (rx && eng->mcast)
		sv_mcast_rx(eng);
	run_work(eng);
	if (timers || eng->now_ok) {
		run_timers(eng);
		run_work(eng);
	}
	if (eng->held)
		sv_inject_release(eng, true);
	if (eng->ntx && !hold_acks(eng) && !hold_reqs(eng))
		sv_tx_flush(eng);
	set_quiet(eng);
}

/* ---- the progress thread ------------------------------------------------------ */

/* epoll_wait until `until` (ns, UINT64_MAX: no end) to the timer's
 * precision, not to the millisecond: a nap of SV_ACK_HOLD_NS must not
 * become 1 ms. */
static int wait_events(int epfd, struct epoll_event *ev, int max, uint64_t now,
		       uint64_t until)
{
	uint64_t d = until > now ? until - now : 0;
	struct timespec ts = { .tv_sec = (time_t)(d / 1000000000),
			       .tv_nsec = (long)(d % 1000000000) };
	int n;

	if (until == UINT64_MAX)
		return epoll_wait(epfd, ev, max, -1);
	n = epoll_pwait2(epfd, ev, max, &ts, NULL);
	if (n < 0 && errno == ENOSYS) /* before Linux 5.11 */
		n = epoll_wait(epfd, ev, max, (int)((d + 999999) / 1000000));
	return n;
}

/* Packets through the shm link's rings both ways, and atomics served
 * through channels. */
static uint64_t ring_pkts(const struct sv_engine *eng)
{
	return eng->stats->shm_rx_pkts + eng->stats->shm_tx_pkts +
	       eng->stats->chan_atomics_served;
}

/* What a peer's engine (not its application) answers within
 * microseconds, the peer's thread spinning after serving: ring packets
 * (a stream's next batch, its ACKs), atomics and WRITEs sent through
 * channels, and
 * channel acks with more of our SENDs still to take; on a wire link, the
 * rest of a message coming in and the ACKs of a stream going out (eng.h,
 * wire_more).  A waiter that saw it move spins for the next
 * (sv_engine_wait_event). */
static uint64_t wait_moves(const struct sv_engine *eng)
{
	return ring_pkts(eng) + eng->stats->chan_atomics +
	       eng->stats->chan_writes + eng->stats->chan_reads +
	       eng->chan_acks_more + eng->wire_more;
}

/* After which the thread spins (SV_SERVE_SPIN_NS) while the application
 * does not poll: a stream of WRITEs through channels (paths/chan_write.c)
 * is served by the target's thread alone, its application making no
 * verb call. */
static uint64_t serve_moves(const struct sv_engine *eng)
{
	return eng->stats->shm_rx_pkts + eng->stats->chan_atomics_served +
	       eng->stats->chan_writes_served + eng->stats->chan_reads_served +
	       eng->wire_more;
}

/* Is an application thread sleeping for the engine (waiting for a
 * completion event), or was one within SV_HINT_HOLD_NS?  Between two
 * waits it handles its event, and its next wait comes soon. */
static bool app_waits(struct sv_engine *eng, uint64_t now)
{
	uint64_t seen =
		atomic_load_explicit(&eng->wait_seen, memory_order_relaxed);

	return atomic_load(&eng->waiters) ||
	       (seen && now - seen < SV_HINT_HOLD_NS);
}

/* How long the thread looks again after taking a batch of a wire stream
 * at `at` (SV_STREAM_SPIN_MAX_NS): twice the widest gap between the
 * stream's batches over the last one or two SV_STREAM_GAP_WINDOW_NS.  The
 * widest, not the last: the batches of a burst come microseconds apart,
 * and the gap between bursts is the one a shorter look sleeps through,
 * each wake-up a stall of the requester's window. */
static uint64_t stream_spin_ns(struct sv_engine *eng, uint64_t at)
{
	uint64_t gap = at - eng->batch_at, widest;

	eng->batch_at = at;
	if (gap > SV_STREAM_SPIN_MAX_NS) {
		/* The requester paused: its cadence is to learn again. */
		eng->batch_gap[0] = eng->batch_gap[1] = 0;
		eng->batch_window_at = at;
		return SV_SERVE_SPIN_NS;
	}
	if (at - eng->batch_window_at > SV_STREAM_GAP_WINDOW_NS) {
		eng->batch_gap[1] = eng->batch_gap[0];
		eng->batch_gap[0] = 0;
		eng->batch_window_at = at;
	}
	if (gap > eng->batch_gap[0])
		eng->batch_gap[0] = gap;
	widest = eng->batch_gap[0] > eng->batch_gap[1] ? eng->batch_gap[0] :
							 eng->batch_gap[1];
	if (2 * widest < SV_SERVE_SPIN_NS)
		return SV_SERVE_SPIN_NS;
	return 2 * widest < SV_STREAM_SPIN_MAX_NS ? 2 * widest :
						    SV_STREAM_SPIN_MAX_NS;
}

static void *progress_main(void *arg)
{
	struct sv_engine *eng = arg;
	_Atomic uint64_t *sleep_until = &eng->sleep_until;
	struct epoll_event ev[8];
	/* renap: the look after a nap was skipped (below); nap_len: how
	 * long the last look let the thread nap; renaps: skipped in a row,
	 * and not yet counted in the stats. */
	bool renap = false;
	uint64_t nap_len = 0;
	unsigned int renaps = 0, uncounted = 0;

	while (!atomic_load(&eng->stop)) {
		uint64_t now = sv_now_ns();
		/* An application thread waiting for a completion event
		 * watches the sockets and rings itself: the thread stays
		 * off them as beside a busy poller, or a packet would wake
		 * both. */
		bool waited = app_waits(eng, now);
		bool busy = waited || sv_app_polls(eng, now);
		uint64_t until = busy ? now + SV_HINT_HOLD_NS : UINT64_MAX, dl;
		uint64_t wire, served;
		bool nap, pnap = false, socks, spun, watched;
		int timeout, n, i;

		if (renap && busy && !waited) {
			/* Nap again as the last look decided, without the lock:
			 * the poll holding it does that look's work. */
			nap = true;
			until = now + nap_len;
			goto wait;
		}
		renap = false;
		sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
		eng->stats->thread_renaps += uncounted;
		uncounted = 0;
		nap = busy && !waited && app_does_it(eng);
		if (nap && until > now + eng->nap_ns)
			until = now + eng->nap_ns;
		if (nap)
			eng->stats->thread_naps++;
		watch_socks(eng, !nap);
		if (!list_empty(&eng->work) || (!busy && now < eng->spin_until))
			until = now;
		/* Peers pushing into our rings ring the doorbell (a datagram
		 * on the ring's socket) only while we say we sleep there. */
		if (!busy && until != now && !sv_links_sleep(eng))
			until = now;
		/* And the paths: what their peers published, naps,
		 * watchdogs (path.h); a waiter asks them itself. */
		if (!waited)
			until = sv_paths_next_wake(eng, now, until, busy,
						   eng->napped, &pnap);
		/* Passes hold ACKs back for the application's answer only
		 * while we nap no longer than they may wait (hold_acks). */
		if (busy && now - eng->hold_tried < SV_HINT_HOLD_NS &&
		    until > now + SV_ACK_HOLD_NS)
			until = now + SV_ACK_HOLD_NS;
		/* The live counters' snapshot: every 100 ms while busy, and
		 * before a sleep with no end (an idle or hung process then
		 * shows its QPs as they are). */
		sv_statseg_refresh(eng, now,
				   until == UINT64_MAX &&
					   !atomic_load(&eng->next_deadline));
		sv_mutex_unlock(&eng->lock);
		nap_len = until - now;
wait:
		/* A deadline already due while we nap again is the polls'
		 * (they run the timers): it must not make us spin. */
		dl = atomic_load(&eng->next_deadline);
		if (dl && dl < until && (!renap || dl > now))
			until = dl;
		atomic_store(sleep_until, until);
		dl = atomic_load(&eng->next_deadline);
		if (dl && dl < until && (!renap || dl > now))
			until = dl;
		/* Dekker with an application arming a CQ (sv_engine_armed):
		 * we say we sleep, then look whether it cleared the hint; it
		 * clears the hint, then looks at what we said. */
		if (busy && !waited && !atomic_load(&eng->last_hint))
			until = now;
		/* Dekker with a waiter coming (sv_engine_wait_event): we say
		 * we wait on the sockets, then look for one; it counts
		 * itself, then looks at what we said. */
		socks = !nap && !waited;
		watched = socks && !eng->socks_out;
		atomic_store(&eng->thread_socks, socks);
		if (socks && atomic_load(&eng->waiters))
			until = now;
		if (until == UINT64_MAX)
			timeout = -1;
		else if (until <= now)
			timeout = 0;
		else
			timeout = (int)((until - now + 999999) / 1000000);
		if (timeout && sv_pcap_active())
			sv_pcap_idle(timeout < 0 || timeout >= 100);
		/* Spinning: the pass below reads every link anyway. */
		spun = timeout == 0 && now < eng->spin_until;
		n = spun ? 0 :
			   wait_events(socks ? eng->epfd : eng->bell_epfd, ev,
				       8, now, until);
		atomic_store(&eng->thread_socks, false);
		atomic_store(sleep_until, 0);
		for (i = 0; i < n; i++)
			if (ev[i].data.ptr == NULL)
				bell_drain(eng);
		if (atomic_load(&eng->stop))
			break;
		eng->napped = pnap && n == 0;
		if (eng->napped)
			continue; /* look again, the words still set */
		/* A nap over while a busy poll is inside its pass: that
		 * pass reads every socket, sends what was held back, and its
		 * polls run the timers, as our look would after waiting for
		 * the lock (a futex wait and wake on the poller's core, and
		 * the poller preempted while we pass).  Nap again instead; a
		 * look of our own at least every SV_RENAP_MAX naps, and after
		 * a wait cut short (an armed CQ: timeout 0). */
		renap = nap && n == 0 && timeout && renaps < SV_RENAP_MAX &&
			atomic_load_explicit(&eng->app_rx_pass,
					     memory_order_relaxed) &&
			atomic_load_explicit(&eng->app_reads_all,
					     memory_order_relaxed);
		if (renap) {
			renaps++;
			uncounted++;
			continue;
		}
		renaps = 0;
		sv_paths_serve(eng, busy);
		sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
		/* Not the words of a waiter that came while we slept: it
		 * sleeps on them now. */
		if (!busy && !atomic_load(&eng->waiters))
			sv_links_wake(eng);
		wire = wire_rcvd(eng);
		/* Requests served for peers through the rings or a channel
		 * (an atomic: its requester waits for the answer), and what
		 * a peer's engine follows up on a wire link (eng.h,
		 * wire_more), as for a waiter (wait_moves). */
		served = serve_moves(eng);
		eng->in_thread = true;
		eng->in_spin = spun;
		if (spun) {
			/* No wait since `now` was read: it is the pass's clock
			 * (timers looked at a turn late are harmless), and the
			 * spinning turn reads the clock once. */
			eng->now = now;
			eng->now_ok = true;
			pass(eng, true, true);
			eng->now_ok = false;
		} else {
			sv_engine_pass(eng, true);
		}
		eng->in_thread = false;
		eng->in_spin = false;
		/* A peer waits for our answer to what it sent through the
		 * rings, or follows up a wire stream within a round trip
		 * (serve_moves); a stream of single-packet requests sends its
		 * next batch as soon (SV_SPIN_PKTS).  Each comes while we
		 * look again. */
		if (!busy && (serve_moves(eng) != served ||
			      wire_rcvd(eng) - wire >= SV_SPIN_PKTS)) {
			uint64_t at = spun ? now : sv_now_ns(), spin;

			spin = wire_rcvd(eng) - wire >= SV_SPIN_PKTS ?
				       stream_spin_ns(eng, at) :
				       SV_SERVE_SPIN_NS;
			/* A stream's last few packets must not cut short
			 * the look its batch began. */
			if (at + spin > eng->spin_until)
				eng->spin_until = at + spin;
		}
		/* Datagrams this pass found after a wait that timed out
		 * without the sockets: they waited in a socket the thread
		 * did not watch.  After a watched wait they came in the
		 * instant since it timed out, which a ping-pong whose ACKs
		 * are held (hold_acks) meets often: its thread's waits end
		 * every SV_ACK_HOLD_NS while its application's polls take
		 * the datagrams. */
		if (n == 0 && !spun && !watched &&
		    (int64_t)(wire_rcvd(eng) - wire) > 0)
			eng->stats->thread_late_rx += wire_rcvd(eng) - wire;
		sv_mutex_unlock(&eng->lock);
	}
	return NULL;
}

/* Started with the first QP: a context without QPs has nothing to do. */
int sv_engine_start_thread(struct sv_engine *eng)
{
	sigset_t all, old;
	int err;

	if (eng->thread_started)
		return 0;
	/* The capture file too waits for a first QP: a process that only
	 * queries the device (`softverbs run` before its exec) has none. */
	sv_pcap_engine_open();
	/* The thread must never take the application's signals, but the
	 * faults of its own copies it must (util/fault.h): a fault whose
	 * signal is blocked kills the process. */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&eng->thread, NULL, progress_main, eng);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return err;
	eng->thread_started = true;
	return 0;
}

int sv_engine_watch(struct sv_engine *eng, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	if (epoll_ctl(eng->epfd, EPOLL_CTL_ADD, fd, &ev) ||
	    epoll_ctl(eng->wait_epfd, EPOLL_CTL_ADD, fd, &ev))
		return errno;
	return 0;
}

/* ---- lifecycle --------------------------------------------------------------- */

int sv_engine_open(struct sv_context *ctx, const struct sv_path_table *paths)
{
	struct sv_engine *eng;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int i, err = ENOMEM;
	size_t rxmem;

	eng = calloc(1, sizeof(*eng) + paths->eng_bytes);
	if (!eng)
		goto fail;
	eng->ctx = ctx;
	eng->paths = paths;
	/* The transport's diagnostics hooks; the fault spec read, and
	 * printed, at startup. */
	sv_diag_install();
	eng->epfd = eng->bellfd = eng->bell_epfd = eng->wait_epfd = -1;
	pthread_mutex_init(&eng->lock, NULL);
	pthread_mutex_init(&eng->kick_lock, NULL);
	list_head_init(&eng->socks);
	list_head_init(&eng->qps);
	list_head_init(&eng->timed);
	list_head_init(&eng->work);
	list_head_init(&eng->kicked);
	sv_links_engine_init(eng);
	sv_paths_engine_init(eng);
	sv_statseg_engine_open(eng);
	eng->tx = calloc(SV_TX_BATCH, sizeof(*eng->tx));
	rxmem = (size_t)SV_RX_BATCH * SV_UDP_RXBUF;
	if (sv_env_gso() && rxmem < (size_t)SV_RX_GRO_BATCH * SV_UDP_GRO_BUF)
		rxmem = (size_t)SV_RX_GRO_BATCH * SV_UDP_GRO_BUF;
	eng->rxmem = malloc(rxmem);
	if (!eng->tx || !eng->rxmem)
		goto fail_free;
	for (i = 0; i < SV_RX_BATCH; i++) {
		eng->rx[i].buf = eng->rxmem + (size_t)i * SV_UDP_RXBUF;
		eng->rx[i].size = SV_UDP_RXBUF;
	}
	/* NULL buffers (SOFTVERBS_GSO=0): no socket asks for UDP_GRO. */
	for (i = 0;
	     i < SV_RX_GRO_BATCH && rxmem >= (size_t)(i + 1) * SV_UDP_GRO_BUF;
	     i++) {
		eng->rx_gro[i].buf = eng->rxmem + (size_t)i * SV_UDP_GRO_BUF;
		eng->rx_gro[i].size = SV_UDP_GRO_BUF;
	}
	eng->bellfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	eng->epfd = epoll_create1(EPOLL_CLOEXEC);
	eng->bell_epfd = epoll_create1(EPOLL_CLOEXEC);
	eng->wait_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (eng->bellfd < 0 || eng->epfd < 0 || eng->bell_epfd < 0 ||
	    eng->wait_epfd < 0 ||
	    epoll_ctl(eng->epfd, EPOLL_CTL_ADD, eng->bellfd, &ev) ||
	    epoll_ctl(eng->bell_epfd, EPOLL_CTL_ADD, eng->bellfd, &ev)) {
		err = errno;
		goto fail_free;
	}
	ctx->engine = eng;
	return 0;

fail_free:
	if (eng->bellfd >= 0)
		close(eng->bellfd);
	if (eng->epfd >= 0)
		close(eng->epfd);
	if (eng->bell_epfd >= 0)
		close(eng->bell_epfd);
	if (eng->wait_epfd >= 0)
		close(eng->wait_epfd);
	free(eng->tx);
	free(eng->rxmem);
	sv_statseg_engine_close(eng);
	free(eng);
fail:
	errno = err;
	return -1;
}

void sv_engine_close(struct sv_context *ctx)
{
	struct sv_engine *eng = ctx->engine;
	struct list_node *it, *tmp;

	if (!eng)
		return;
	if (eng->thread_started) {
		atomic_store(&eng->stop, true);
		bell_ring(eng);
		pthread_join(eng->thread, NULL);
	}
	if (eng->ntx)
		sv_tx_flush(eng); /* held ACKs */
	if (sv_env_stats())
		sv_engine_stats_dump(ctx, stderr);
	sv_links_engine_close(eng);
	sv_gsi_forward_close(eng);
	list_for_each_safe (&eng->socks, it, tmp) {
		struct sv_sock *s = list_entry(it, struct sv_sock, node);

		sv_links_sock_close(s);
		free(s);
	}
	sv_mcast_close(eng);
	sv_inject_close(eng);
	close(eng->bellfd);
	close(eng->epfd);
	close(eng->bell_epfd);
	close(eng->wait_epfd);
	free(eng->tx);
	free(eng->rxmem);
	pthread_mutex_destroy(&eng->lock);
	pthread_mutex_destroy(&eng->kick_lock);
	ctx->engine = NULL;
	sv_statseg_engine_close(eng);
	free(eng);
	sv_pcap_engine_close();
}

/* ---- entry points from the verbs layer ---------------------------------------- */

static int poll_hint(struct sv_context *ctx, struct sv_cq *cq,
		     struct ibv_wc *wc, int max)
{
	struct sv_engine *eng = ctx->engine;
	struct sv_sock *q;
	unsigned int n;
	uint64_t cqes;
	bool more, timers, armed;

	if (!eng)
		return 0;
	/* The busy poller's usual case, nothing arrived: no lock, no
	 * clock, no store another thread reads. */
	n = atomic_load_explicit(&eng->busy_passes, memory_order_relaxed);
	q = atomic_load_explicit(&eng->quiet, memory_order_relaxed);
	if (q && n % SV_HINT_EVERY &&
	    !atomic_load_explicit(&eng->kick_any, memory_order_relaxed) &&
	    ring_idle(q) && watched_idle(eng)) {
		atomic_store_explicit(&eng->busy_passes, n + 1,
				      memory_order_relaxed);
		return 0;
	}
	if (list_empty(&eng->socks))
		return 0;
	/* A CQ armed for an event is polled once more before its
	 * application sleeps (the race every event loop closes): no busy
	 * poller, whose polls the thread could leave work to. */
	armed = cq &&
		__atomic_load_n(&cq->armed, __ATOMIC_RELAXED) != SV_CQ_ARM_NONE;
	if (sv_mutex_trylock(&eng->lock, SV_LOCK_ENGINE)) {
		if (!armed)
			atomic_store_explicit(&eng->last_hint, sv_now_ns(),
					      memory_order_relaxed);
		return 0; /* someone is making progress right now */
	}
	/* Completions straight into the poller's array: only while the
	 * ring is empty (nothing of the QP is before them), the CQ is not
	 * armed (an event is owed for a completion entering it) and keeps
	 * no timestamps.  Another thread arming it meanwhile sees these
	 * completions as taken before its request. */
	if (cq && eng->paths_active && !cq->ts) {
		sv_mutex_lock(&cq->lock, SV_LOCK_CQ);
		if (cq->tail == cq->head && cq->armed == SV_CQ_ARM_NONE &&
		    !cq->overrun) {
			eng->sink.cq = cq;
			eng->sink.wc = wc;
			eng->sink.max = max;
			eng->sink.n = 0;
		}
		sv_mutex_unlock(&cq->lock);
	}
	/* A busy poller reads the clock (timers, the hint the thread
	 * watches) every SV_HINT_EVERY passes, or when the pass needs it
	 * anyway: an empty pass then costs a few loads. */
	eng->now_ok = false;
	n = atomic_load_explicit(&eng->busy_passes, memory_order_relaxed);
	atomic_store_explicit(&eng->busy_passes, n + 1, memory_order_relaxed);
	timers = !(n % SV_HINT_EVERY);
	if (timers)
		sv_eng_now(eng);
	cqes = eng->cqes;
	eng->armed_pass = armed;
	atomic_store_explicit(&eng->app_rx_pass, true, memory_order_relaxed);
	pass(eng, true, timers);
	atomic_store_explicit(&eng->app_rx_pass, false, memory_order_relaxed);
	eng->armed_pass = false;
	if (eng->cqes != cqes)
		eng->app_cqe_passes++; /* app_loops */
	if (eng->now_ok && !armed)
		atomic_store_explicit(&eng->last_hint, eng->now,
				      memory_order_relaxed);
	atomic_store_explicit(&eng->app_reads_all, !eng->rx_skipped,
			      memory_order_relaxed);
	eng->now_ok = false;
	more = !list_empty(&eng->work);
	n = (unsigned int)eng->sink.n;
	eng->sink.cq = NULL;
	eng->sink.n = 0;
	sv_mutex_unlock(&eng->lock);
	if (more)
		bell_ring(eng);
	return (int)n;
}

void sv_engine_armed(struct sv_context *ctx)
{
	struct sv_engine *eng = ctx->engine;

	if (!eng ||
	    !atomic_load_explicit(&eng->last_hint, memory_order_relaxed))
		return;
	/* Its polls no longer carry the engine: the thread takes over
	 * now, not SV_HINT_HOLD_NS after the last one, in which time a
	 * peer's messages (a large SEND's copy above all) would wait for
	 * nobody.  A thread asleep for that hold (progress_main) is rung;
	 * one about to sleep sees the hint gone. */
	if (!sv_app_polls(eng, sv_now_ns())) {
		atomic_store_explicit(&eng->last_hint, 0, memory_order_relaxed);
		return;
	}
	atomic_store(&eng->last_hint, 0);
	if (atomic_load(&eng->sleep_until))
		bell_ring(eng);
}

/* An application thread blocked for a completion event sleeps for the
 * engine: it waits on the sockets (the shm link's doorbells, UDP
 * datagrams) and on its channel's fd together, and runs the pass a
 * packet calls for itself.  A message for it then costs one wake-up, its
 * own, as a kernel's completion does (the softirq places the data and
 * wakes the waiter), where the progress thread's wake-up and pass, then
 * the pipe's wake-up of the application, were two in a row on one core.
 * Meanwhile the progress thread stays off the sockets (app_waits) and
 * keeps only its doorbell and timers.  Several waiters (threads, channels)
 * all wait on the sockets: each wakes and one at a time runs the pass. */
int sv_engine_wait_event(struct sv_context *ctx, struct sv_comp_channel *ch,
			 uint64_t seen, uint64_t *token)
{
	struct sv_engine *eng = ctx->engine;
	bool napped = false, woken = false, awake = false;
	bool looked = false; /* at the fd's flags */
	uint64_t moves;
	unsigned int passes = 0;
	int fd = ch->ibv.fd, ret = 0;

	if (!eng || !eng->thread_started)
		return -1;
	atomic_fetch_add(&eng->waiters, 1);
	/* No busy poller any more: the thread stops counting on polls. */
	if (atomic_load_explicit(&eng->last_hint, memory_order_relaxed))
		atomic_store(&eng->last_hint, 0);
	/* A thread waiting on the sockets leaves them to us (Dekker with
	 * progress_main: we count ourselves, then look). */
	if (atomic_load(&eng->thread_socks))
		bell_ring(eng);
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = eng->wait_epfd,
					 .events = POLLIN } };
		uint64_t now, until, dl;
		struct timespec ts;
		bool nap = false;
		int n;

		/* The first look reads the wire sockets as a busy poll does
		 * (those its QPs receive from); after a wake-up, which one
		 * of them may have brought, all of them, as the thread. */
		sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
		if (napped)
			goto look_again; /* the words still set (below) */
		sv_links_wake(eng);
		/* The pass finds ready sockets in the thread's set when
		 * there are many (links.c): it may have left them to nap. */
		watch_socks(eng, true);
		awake = true;
		/* Only the pass after a sleep: a look again without one
		 * reads them as a busy poll does (a spin through a stream's
		 * acks cost a recvmmsg a look). */
		eng->in_thread = woken;
		woken = false;
		sv_cq_grab_begin(ch);
		/* A waiter spinning for its peer's answer runs a pass a
		 * look: passes per wait say what its spin costs. */
		eng->stats->app_waits += !passes++;
		eng->stats->app_wait_passes++;
		sv_engine_pass(eng, true);
		eng->in_thread = false;
		/* Packets through the rings, atomics sent, since a waiter
		 * last looked (the application's posts between two waits
		 * count): the peer's engine sends the next batch or the
		 * answer within microseconds, so this wait and the next look
		 * again without sleeping until SV_SERVE_SPIN_NS after, as the
		 * thread does after serving, the words clear and no doorbell
		 * wanted.  Asleep between batches, each batch (each atomic's
		 * answer) cost a doorbell and a wake-up; handed to the
		 * thread, each event two switches between it and the
		 * application on one core (the thread's pass, the pipe, the
		 * application's read).  A ping-pong of SENDs through channels
		 * waits for the peer's application: it sleeps at once. */
		moves = wait_moves(eng);
		if (moves != eng->wait_moved) {
			eng->wait_moved = moves;
			eng->wait_spin_until = sv_now_ns() + SV_SERVE_SPIN_NS;
		}
		if (sv_cq_grab_end(token)) {
			sv_mutex_unlock(&eng->lock);
			ret = 1; /* our event, straight from our pass */
			break;
		}
		if (atomic_load(&ch->written) != seen) {
			sv_mutex_unlock(&eng->lock);
			break; /* an event (ours or someone's) is in the fd */
		}
look_again:
		now = sv_now_ns();
		until = list_empty(&eng->work) && now >= eng->wait_spin_until ?
				UINT64_MAX :
				now;
		if (until != now && !sv_links_sleep(eng))
			until = now;
		until = sv_paths_next_wake(eng, now, until, false, napped,
					   &nap);
		if (until > now) {
			eng->stats->app_wait_sleeps++;
			awake = false; /* the words set */
		}
		sv_mutex_unlock(&eng->lock);
		dl = atomic_load(&eng->next_deadline);
		if (dl && dl < until)
			until = dl;
		if (until <= now) {
			napped = false;
			continue;
		}
		/* Made O_NONBLOCK since the caller's last look: the caller
		 * reads (EAGAIN), the words cleared below. */
		if (!looked) {
			int fl = fcntl(fd, F_GETFL);

			looked = true;
			if (fl < 0 || (fl & O_NONBLOCK)) {
				atomic_store_explicit(&ch->blocking, false,
						      memory_order_relaxed);
				ret = -1;
				break;
			}
		}
		if (until != UINT64_MAX) {
			ts.tv_sec = (time_t)((until - now) / 1000000000);
			ts.tv_nsec = (long)((until - now) % 1000000000);
		}
		n = ppoll(p, 2, until == UINT64_MAX ? NULL : &ts, NULL);
		if (n < 0) {
			/* A signal (EINTR): the caller reads as before,
			 * restarted or not as the handler says, and the
			 * thread takes the sockets back at once. */
			ret = -1;
			break;
		}
		if (p[0].revents)
			break;
		/* A nap with nothing: look again with the words still set,
		 * as the thread does (a producer that read its word just
		 * before our store was visible published without ringing),
		 * and only then sleep for good. */
		napped = nap && n == 0;
		woken = true;
		/* What the thread serves after its wait (peers' large
		 * WRITEs we said we would help with). */
		if (n > 0)
			sv_paths_serve(eng, false);
	}
	if (!awake) { /* the words may still be set */
		sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
		sv_links_wake(eng);
		sv_mutex_unlock(&eng->lock);
	}
	/* Handing back to the thread (a signal): at once. */
	atomic_store_explicit(&eng->wait_seen, ret < 0 ? 0 : sv_now_ns(),
			      memory_order_relaxed);
	if (atomic_fetch_sub(&eng->waiters, 1) == 1 && ret < 0)
		bell_ring(eng);
	return ret;
}

void sv_engine_poll_hint(struct sv_context *ctx)
{
	poll_hint(ctx, NULL, NULL, 0);
}

int sv_engine_poll_hint_cq(struct sv_context *ctx, struct sv_cq *cq,
			   struct ibv_wc *wc, int max)
{
	return poll_hint(ctx, cq, wc, max);
}

/* engine.h: a pass under the lock, waited for, reading every socket: a
 * pass another thread has under way finishes first, so what had arrived
 * before the call is taken in (not under trylock, as a busy poll, which
 * leaves it to the holder). */
void sv_engine_settle(struct sv_context *ctx)
{
	struct sv_engine *eng = ctx->engine;
	bool more;

	if (!eng)
		return;
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	eng->in_thread = true; /* every UDP link read (links.c, rx_due) */
	sv_engine_pass(eng, true);
	eng->in_thread = false;
	more = !list_empty(&eng->work);
	sv_mutex_unlock(&eng->lock);
	if (more)
		bell_ring(eng);
}

void sv_kick_later(struct sv_engine *eng, struct sv_qp_engine *qe)
{
	sv_mutex_lock(&eng->kick_lock, SV_LOCK_KICK);
	if (!qe->kicked) {
		qe->kicked = true;
		list_add_tail(&eng->kicked, &qe->kick_node);
	}
	atomic_store(&eng->kick_any, true);
	sv_mutex_unlock(&eng->kick_lock);
}

void sv_engine_kick(struct sv_qp *qp)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng = qe->eng;
	bool more;

	/* The lock free: the QP goes on the work list directly and this
	 * pass runs it (no kick list, no clock unless its work needs one). */
	if (sv_mutex_trylock(&eng->lock, SV_LOCK_ENGINE)) {
		sv_kick_later(eng, qe);
		/* Whoever holds the lock takes the kick list before its
		 * next pass or, if it is past that point, the doorbell
		 * brings the thread. */
		if (sv_mutex_trylock(&eng->lock, SV_LOCK_ENGINE)) {
			bell_ring(eng);
			return;
		}
	} else if (qe->run_alone && !qe->on_work && list_empty(&eng->work) &&
		   !atomic_load_explicit(&eng->kick_any,
					 memory_order_relaxed)) {
		/* A QP whose path asks it (a message channel's sender),
		 * nothing else queued: run it alone.  A pass around it costs
		 * more than the send itself (ib_send_bw's message rate). */
		eng->now_ok = false;
		eng->posting = true;
		sv_qp_run(qe);
		eng->posting = false;
		if (eng->ntx)
			sv_tx_flush(eng);
		eng->now_ok = false;
		more = !list_empty(&eng->work);
		sv_mutex_unlock(&eng->lock);
		if (more)
			bell_ring(eng);
		return;
	} else {
		sv_work_add(qe, SV_WORK_REQ | SV_WORK_FLUSH);
	}
	eng->now_ok = false;
	eng->posting = true;
	pass(eng, false, false);
	eng->posting = false;
	eng->now_ok = false;
	more = !list_empty(&eng->work);
	sv_mutex_unlock(&eng->lock);
	if (more)
		bell_ring(eng);
}
