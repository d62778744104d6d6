/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine of a context: its sockets, the transmit batch, the progress
 * lock and the passes (engine.c).
 *
 * Lock contract: everything in struct sv_engine and struct sv_qp_engine
 * (qpe.h) is guarded by sv_engine.lock (the progress lock), except where a
 * field says otherwise.  A thread waits for packets or the doorbell without
 * the lock and makes progress with it, so exactly one thread drives the
 * QPs of a context at a time.  The lock order is util/lockorder.h's.
 */
#ifndef SV_ENGINE_ENG_H
#define SV_ENGINE_ENG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/objects.h"
#include "engine/engine.h"
#include "engine/transport/limits.h"
#include "engine/transport/stats.h"
#include "link/link.h"
#include "link/shm.h"
#include "link/udp.h"
#include "proto/addr.h"
#include "proto/wire.h"
#include "util/clock.h"
#include "util/list.h"

struct sv_qp_engine;
struct sv_statslot_eng;

/* ---- sockets --------------------------------------------------------------- */

struct sv_sock {
	struct sv_udp_sock udp;
	struct sv_qp_engine *slot[SV_SLOTS_PER_SOCK];
	unsigned int used;
	unsigned int next_slot; /* round-robin allocation cursor */
	struct list_node node; /* sv_engine.socks */
	struct sv_shm_ring ring; /* inbound shm ring (ring.hdr NULL: none) */
	/* The socket's endpoints, in the order a pass drains them (the
	 * ring, then UDP): link/link.h, engine/transport/links.c. */
	struct {
		const struct sv_link_ops *ops;
		void *ep;
	} link[2];
	unsigned int nlinks;
	unsigned int udp_qps; /* QPs that may receive through UDP */
	unsigned int rx_skip; /* busy passes since the last UDP receive */
	bool rx_ready; /* epoll says datagrams wait (links.c, many sockets) */
	/* The standard RoCE v2 endpoint (UDP 4791, links.c): owns no QP,
	 * hands what it receives to the socket the destination QPN names. */
	bool roce;
	int roce_lock; /* roce: the namespace's lock (link/roce.h) */
};

/* ---- the transmit batch ----------------------------------------------------- */

struct sv_tx {
	uint8_t buf[SV_MAX_PKT];
	uint32_t len;
	struct sv_sock *sock;
	struct sockaddr_in6 dst;
	struct sv_ipaddr src;
	uint8_t tclass; /* the QP's or the AH's grh.traffic_class */
	const struct sv_link_ops *link; /* the QP's link to its peer */
	void *peer; /* the link's handle of the peer (NULL: UDP) */
	struct sv_qp_engine *qe; /* whose packet (fault injection) */
	/* leaves as a datagram of its own (link.h): a request sent before,
	 * or any packet of a QP whose congestion window is cut (loss) */
	bool alone;
	bool ack; /* a positive ACK: a poll may hold it back (xmit.c) */
	/* a request of an RC QP with packets in flight before it: a post may
	 * keep it for the next pass's send (engine.c, hold_reqs) */
	bool stream;
};

/* ---- per context ----------------------------------------------------------- */

struct sv_engine {
	struct sv_context *ctx;
	const struct sv_path_table *paths; /* from the layer above */
	pthread_mutex_t lock; /* the progress lock */
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int epfd; /* sockets + doorbell */
	int bellfd; /* eventfd */
	int bell_epfd; /* the doorbell alone: the thread's naps (engine.c) */
	/* The sockets without the doorbell, never left during a nap: an
	 * application thread waiting for a completion event watches them
	 * (sv_engine_wait_event); the doorbell is the progress thread's. */
	int wait_epfd;
	_Atomic uint64_t last_hint; /* ns of the last poll hint */
	/* Application threads waiting for a completion event, which sleep
	 * for the engine meanwhile (engine.c, sv_engine_wait_event), and
	 * when the last one left (ns); while either says so the progress
	 * thread leaves the sockets and rings to them.  thread_socks: the
	 * thread waits on the sockets now (a waiter that comes rings it
	 * off them). */
	_Atomic unsigned int waiters;
	_Atomic uint64_t wait_seen;
	atomic_bool thread_socks;
	/* The application's last pass (poll hint) read every wire socket:
	 * the thread may nap without the sockets while such passes carry
	 * a stream (engine.c, app_does_it). */
	atomic_bool app_reads_all;
	uint64_t rx_seen; /* thread only: wire datagrams (sent + received) at its last look */
	/* Whether the application's own passes carry a ping-pong (engine.c,
	 * app_loops): completions made so far (cqe.c); since the thread's
	 * last look, the application's passes that made some, and requests
	 * received that change memory without a completion (recv.c).  Under
	 * the engine lock. */
	uint64_t cqes;
	unsigned int app_cqe_passes, mem_reqs;
	/* One per receive call (links.c): a memory request followed in the
	 * same batch by a response to its QP came with the ACK that the
	 * application polls for (recv.c). */
	uint64_t rx_batch;
	bool loop_nap; /* thread only: its last look said "ping-pong" */
	uint64_t nap_ns; /* thread only: its current nap, 0: it watches */
	bool socks_out; /* thread only: socks taken out of epfd (a nap) */
	_Atomic uint64_t next_deadline; /* ns of the earliest timer, 0 none */
	_Atomic uint64_t sleep_until; /* the thread sleeps until (ns), 0 awake */
	uint64_t hold_tried; /* ns a pass last wanted to hold ACKs (engine.c) */
	uint64_t spin_until; /* thread only: no sleep before (SV_SERVE_SPIN_NS) */
	/* Thread only: when it last took a wire stream's batch, and the
	 * widest gap between batches in this window of
	 * SV_STREAM_GAP_WINDOW_NS (begun at batch_window_at) and the last
	 * (engine.c stream_spin_ns). */
	uint64_t batch_at, batch_window_at, batch_gap[2];
	/* Waiters (engine lock): no sleep before, after a pass of theirs
	 * saw ring packets or atomics move (engine.c wait_moves), and
	 * those counts at their last pass. */
	uint64_t wait_spin_until, wait_moved;
	/* Wire packets after which the peer's engine sends more within a
	 * round trip, its application not involved: the first and middle
	 * packets of a message received, requests sent behind others in
	 * flight (their ACKs).  Counted under the engine lock. */
	uint64_t wire_more;
	/* Channel acks that left SENDs of ours in the channel (chan.c
	 * acked_note): the peer's engine takes a stream, and acknowledges
	 * the next within microseconds (wait_moves). */
	uint64_t chan_acks_more;

	struct list_head socks;
	unsigned int nsocks; /* on socks (closed with the engine only) */
	struct sv_sock *roce; /* on socks too: SOFTVERBS_ROCE=standard */
	/* Standard mode while another engine holds 4791 and forwards our
	 * packets into our rings: when to try to take the port over (ns;
	 * 0: we hold it, or not standard mode). */
	uint64_t roce_retry;
	/* The rings the 4791 socket forwards to, one reference each. */
#define SV_ROCE_FWD 8
	struct {
		uint16_t port;
		struct sv_shm_peer *peer;
	} roce_fwd[SV_ROCE_FWD];
	unsigned int roce_fwd_next; /* the entry to replace next */
	/* The socket that sends QP1's CM MADs on to their CMs (gsifwd.c),
	 * plus one; 0: none yet. */
	int mad_fd;
	/* The UD QP that answers for QP1 at 4791 (sv_engine_qp_gsi), or NULL. */
	struct sv_qp_engine *gsi;
	struct list_head qps;
	struct list_head timed; /* QPs with a timer armed (sv_qp_timer_arm) */
	struct list_head work;
	_Atomic uint32_t port_mtu; /* bytes: the largest UD message */
	struct sv_mcast *mcast; /* multicast groups (mcast.c), or NULL */

	pthread_mutex_t kick_lock;
	struct list_head kicked;

	/* ns: read at most once per pass, when something needs it (use
	 * sv_eng_now); now_ok says whether this pass has read it. */
	uint64_t now;
	bool now_ok;
	atomic_bool kick_any; /* set under kick_lock: kicked is not empty */
	_Atomic unsigned int busy_passes; /* poll hints, for the clock */
	/* An application's busy poll is inside its pass, which reads the
	 * sockets (poll_hint): the napping thread's look would wait for
	 * the lock to do the same (progress_main, renap). */
	atomic_bool app_rx_pass;
	/* Set after each pass when the only thing that can bring work to
	 * a busy poller is a packet in this socket's ring (one socket,
	 * shm only, no work queued): polls then look at the ring, the kick
	 * flag and the timer count without the lock.  NULL: take the lock. */
	_Atomic(struct sv_sock *) quiet;
	struct sv_tx *tx; /* SV_TX_BATCH */
	unsigned int ntx;
	unsigned int tx_held; /* tx[0, tx_held): ACKs held back (xmit.c) */
	uint64_t tx_held_at; /* ns they were */
	/* tx[0, ntx) are requests posts keep back (engine.c hold_reqs),
	 * since this ns (0: none), reqs_held of them counted. */
	uint64_t reqs_held_at;
	unsigned int reqs_held;
	/* Messages this pass completed whose arrival the application may
	 * answer at once: receive completions, and WRITEs without immediate,
	 * whose bytes it may be watching (engine.c, hold_acks). */
	unsigned int pass_answerable;
	uint8_t *rxmem;
	/* The same memory cut two ways: for sockets without UDP_GRO (and
	 * multicast), and for those with it. */
	struct sv_udp_rx rx[SV_RX_BATCH];
	struct sv_udp_rx rx_gro[SV_RX_GRO_BATCH];
	uint32_t rcvbuf; /* bytes of our receive buffers */

	/* The counters (SV_STAT): in this context's slot of the stats
	 * segment (statseg.c), or in a slot of our own without one. */
	struct sv_stats *stats;
	struct sv_statslot_eng *statslot;
	unsigned int statidx; /* statslot's index in the segment */
	bool stat_private; /* statslot is ours, not the segment's */
	int stat_pid; /* the process whose segment holds statslot */
	uint64_t stat_refreshed; /* ns of the last refresh (diag/statseg.c) */
	struct sv_held *held; /* packets delayed or reordered (inject.c) */
	uint64_t held_gen; /* flushes so far (a reordered packet waits one) */

	struct list_head shm_peers; /* struct sv_shm_peer (links.c) */
	/* What a busy poll watches without the lock besides the quiet
	 * socket's ring (set_quiet): words of our own segment, each busy
	 * when equal (a channel's next slot) or unequal (an ack line) to
	 * its value.  nwatch > SV_WATCH_MAX: too many, take the lock. */
#define SV_WATCH_MAX 4
	struct {
		_Atomic(const _Atomic uint64_t *) w;
		_Atomic uint64_t v;
		_Atomic bool busy_if_eq;
	} watch[SV_WATCH_MAX];
	_Atomic unsigned int nwatch;
	bool watch_dirty; /* what to watch changed since set_quiet */
	/* Set by the paths: some QP has state a path's poll must look at
	 * (a pass polls the paths only then), and receive completions may
	 * go straight into a poller's array (sink). */
	bool paths_active;
	/* A poller's wc array for this pass (sv_engine_poll_hint_cq): a
	 * path's receive completions for sink.cq go there directly. */
	struct {
		struct sv_cq *cq;
		struct ibv_wc *wc;
		int max, n;
	} sink;
	bool in_thread; /* the thread sleeping for the engine runs this pass */
	/* ... without having waited on the sockets: it spins after serving
	 * (engine.c SV_SERVE_SPIN_NS), reading them as a busy poll does */
	bool in_spin;
	/* A poll of an armed CQ runs this pass: the application means to
	 * sleep, and what the pass copies does not make it a busy poller
	 * (sv_app_copied). */
	bool armed_pass;
	bool posting; /* post_send runs this pass (sv_engine_kick) */
	bool rx_skipped; /* this pass left a wire socket unread (links.c) */
	/* A path asked the thread to nap (path.h next_wake): if its wait
	 * brings nothing, it looks again (napped) before it runs a pass. */
	bool napped;
	/* The paths keep their own state of the engine after this struct
	 * (sv_path_table.eng_bytes, zeroed; paths/paths.h). */
};

/* The loop's side (progress/engine.c): what the transport asks of it is
 * declared here, so that the transport names no progress header. */
void sv_engine_pass(struct sv_engine *eng, bool rx);

/* The time of the pass: a busy pass that arms no timer and receives
 * nothing reads no clock. */
static inline uint64_t sv_eng_now(struct sv_engine *eng)
{
	if (!eng->now_ok) {
		eng->now = sv_now_ns();
		eng->now_ok = true;
	}
	return eng->now;
}
void sv_work_add(struct sv_qp_engine *qe, uint32_t what);
/* Queue the QP for the next pass of whoever takes the engine lock (the
 * kick list; any thread, engine lock or not). */
void sv_kick_later(struct sv_engine *eng, struct sv_qp_engine *qe);

/* Did the application poll within SV_HINT_HOLD_NS of now?  Its core is
 * busy then: the thread stays off it, and copies are left to it. */
static inline bool sv_app_polls(struct sv_engine *eng, uint64_t now)
{
	uint64_t hint =
		atomic_load_explicit(&eng->last_hint, memory_order_relaxed);

	return hint && now - hint < SV_HINT_HOLD_NS;
}
/* The application's own pass (a poll's, a post's) copied a large message:
 * it is as busy as a busy poller, and the thread must not take the time
 * it spent copying for idleness (paths/chan.c, paths/direct.c).  Not the
 * thread's passes, nor the last poll of a CQ armed before a sleep. */
static inline void sv_app_copied(struct sv_engine *eng)
{
	if (!eng->in_thread && !eng->armed_pass)
		atomic_store_explicit(&eng->last_hint, sv_now_ns(),
				      memory_order_relaxed);
}
/* The engine wakes by deadline (ns) for a timer of its own; a QP's timer
 * is armed with sv_qp_timer_arm, which also lists the QP among those a
 * due timer pass looks at (not every QP of the engine). */
void sv_timer_note(struct sv_engine *eng, uint64_t deadline);
void sv_qp_timer_arm(struct sv_qp_engine *qe, uint64_t deadline);
int sv_engine_start_thread(struct sv_engine *eng);
int sv_engine_watch(struct sv_engine *eng, int fd, void *tag);
void sv_watch_word(struct sv_engine *eng, unsigned int *n,
		   const _Atomic uint64_t *w, uint64_t v, bool eq);

#endif
