/*
 * Engine internals shared by its files:
 *   engine.c  per-context lifecycle, progress thread, progress passes
 *   eqp.c     QP numbers and sockets, the verbs hooks, errors and flushes
 *   net.c     receive demultiplexing, the transmit batch, packet headers
 *   req.c     requester: walks the send queue, builds request packets
 *   comp.c    completer: ACKs, NAKs, read responses, atomic ACKs, timers
 *   resp.c    responder: validates requests, places data, replies
 *   sgl.c     scatter/gather through the MR key table
 *   stats.c   counters, packet trace, state names and QP dumps
 *
 * Lock contract: everything in struct sv_engine and struct sv_qp_engine
 * is guarded by sv_engine.lock (the progress lock), except where a field
 * says otherwise.  A thread waits for packets or the doorbell without the
 * lock and makes progress with it, so exactly one thread drives the QPs
 * of a context at a time.  Lock order: engine.lock -> qp.sq_lock/rq_lock/
 * srq.lock -> cq.lock -> ctx.lock; qp.state_lock is taken before
 * engine.lock by modify_qp, so the engine only ever trylocks it.
 */
#ifndef SV_ENGINE_INTERNAL_H
#define SV_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "core/objects.h"
#include "engine/engine.h"
#include "engine/wire.h"
#include "link/shm.h"
#include "link/udp.h"
#include "util/env.h"
#include "util/list.h"

#define SV_SLOTS_PER_SOCK 256
#define SV_TX_BATCH 64 /* packets built before a sendmmsg */
#define SV_RX_BATCH 64 /* datagrams per recvmmsg */
#define SV_RX_BUDGET 512 /* datagrams per socket per pass */
#define SV_REQ_BUDGET 128 /* packets per QP per requester run */
#define SV_REPLY_BUDGET 128 /* read response packets per QP per run */
#define SV_WINDOW_MAX 256 /* un-ACKed packets in flight per QP */
#define SV_WINDOW_MIN 8
/* Floor of the IBA ACK timer.  A software peer can be descheduled for
 * tens of milliseconds on a loaded host; the timer decides when to give
 * up (retry_cnt), so it must not fire for that.  Fast recovery from loss
 * is the probe timer's job (comp.c), which spends no retries. */
#define SV_MIN_TIMEOUT_NS (100ull * 1000 * 1000)
/* Consecutive timeouts double the wait, up to this (or the QP's own
 * timeout when longer). */
#define SV_MAX_BACKOFF_NS (1000ull * 1000 * 1000)
#define SV_HINT_HOLD_NS (2ull * 1000 * 1000) /* "app is busy-polling" */
#define SV_HINT_EVERY 16 /* busy passes between clock reads */
#define SV_PROBE_MIN_NS (500ull * 1000) /* early resend: floor */
#define SV_PROBE_NS (2ull * 1000 * 1000) /* ... before an RTT sample */
/* While SENDs wait in a message channel for their ack, the thread looks
 * at least this often (chanpath.c's stall watchdog). */
#define SV_CHAN_WATCH_NS (10ull * 1000 * 1000)
/* The progress thread's first sleep with message channels open. */
#define SV_CHAN_NAP_NS (1000ull * 1000)

/* ---- counters (named like rxe's where rxe has one) ----------------------- */

/* clang-format off */
#define SV_COUNTERS(X)                                                       \
	X(sent_pkts, "packets sent")                                         \
	X(rcvd_pkts, "packets received")                                     \
	X(send_err, "packets the kernel refused to send")                    \
	X(duplicate_request, "duplicate requests answered")                  \
	X(out_of_seq_request, "requests after a PSN gap")                    \
	X(rcvd_seq_err, "sequence error NAKs received")                      \
	X(send_seq_nak, "sequence error NAKs sent")                          \
	X(rcvd_rnr_err, "RNR NAKs received")                                 \
	X(send_rnr_err, "RNR NAKs sent")                                     \
	X(completer_retry_err, "retransmissions after a timeout")            \
	X(retry_exceeded_err, "retry count exceeded")                        \
	X(retry_rnr_exceeded_err, "RNR retry count exceeded")                \
	X(implied_nak_retry, "retries for missing read/atomic responses")    \
	X(fast_retransmit, "retries after a duplicate ACK")                  \
	X(probe_retransmit, "early resends while waiting for an ACK")        \
	X(dup_ack_sent, "duplicate ACKs sent after a sequence NAK")          \
	X(rdma_sends, "SEND messages received")                              \
	X(rdma_recvs, "receive WQEs completed")                              \
	X(ack_sent, "ACKs sent")                                             \
	X(nak_sent, "error NAKs sent")                                       \
	X(nak_rcvd, "error NAKs received")                                   \
	X(drop_malformed, "dropped: malformed (length, opcode, version)")    \
	X(drop_icrc, "dropped: bad ICRC")                                    \
	X(drop_no_qp, "dropped: no QP at the destination QPN")               \
	X(drop_qp_state, "dropped: QP not in a receiving state")             \
	X(drop_transport, "dropped: opcode of another transport")            \
	X(drop_wrong_peer, "dropped: not from the connected peer")           \
	X(drop_pkey, "dropped: P_Key mismatch")                              \
	X(drop_qkey, "dropped: Q_Key mismatch")                              \
	X(drop_ud_no_wqe, "dropped: UD message without a receive WQE")       \
	X(drop_stale_resp, "dropped: stale or unexpected responses")         \
	X(drop_bad_resp, "dropped: inconsistent responses")                  \
	X(drop_uc_msg, "dropped: UC messages after a gap or without WQE")    \
	X(resp_access_err, "remote access errors detected")                  \
	X(resp_inv_req, "invalid requests detected")                         \
	X(qp_errors, "QPs moved to the error state by the engine")          \
	X(drop_injected, "sent packets dropped by SOFTVERBS_LOSS")          \
	X(shm_tx_pkts, "packets sent through shared memory")                \
	X(shm_rx_pkts, "packets received through shared memory")            \
	X(shm_ring_full, "packets lost: the peer's ring was full")          \
	X(shm_wakeups, "doorbells sent to a sleeping peer")          \
	X(direct_write, "RDMA WRITEs placed with one copy (direct.c)")       \
	X(direct_read, "RDMA READs placed with one copy (direct.c)")         \
	X(direct_memfile, "of those, copied through the target's mem file")  \
	X(direct_fallback, "one-copy candidates left to the packet path")    \
	X(help_posted, "large WRITEs offered to the target's thread (help.c)") \
	X(help_taken, "of those, partly copied by it")                       \
	X(help_revoked, "of those, taken back from a stopped target")         \
	X(help_chunks, "chunks of peers' WRITEs this thread copied")         \
	X(chan_sends, "SENDs through a message channel (chanpath.c)")      \
	X(chan_recvs, "messages received through a message channel")      \
	X(chan_broken, "message channels closed: a malformed message")
/* clang-format on */

struct sv_stats {
#define X(name, desc) uint64_t name;
	SV_COUNTERS(X)
#undef X
};

#define SV_STAT(eng, name) ((eng)->stats.name++)

/* ---- sockets --------------------------------------------------------------- */

struct sv_sock {
	struct sv_udp_sock udp;
	struct sv_qp_engine *slot[SV_SLOTS_PER_SOCK];
	unsigned int used;
	unsigned int next_slot; /* round-robin allocation cursor */
	struct list_node node; /* sv_engine.socks */
	struct sv_shm_ring ring; /* inbound shm ring (ring.hdr NULL: none) */
	unsigned int udp_qps; /* QPs that may receive through UDP */
	unsigned int rx_skip; /* busy passes since the last UDP receive */
};

/* ---- the transmit batch ----------------------------------------------------- */

struct sv_tx {
	uint8_t buf[SV_MAX_PKT];
	uint32_t len;
	struct sv_sock *sock;
	struct sockaddr_in6 dst;
	struct sv_ipaddr src;
	struct sv_shm_peer *shm; /* through the peer's ring, else UDP */
};

/* ---- per-WQE states (sv_send_wqe.state) --------------------------------- */

enum sv_wqe_state {
	SV_WQE_PENDING = 0, /* not started */
	SV_WQE_ACTIVE, /* some packets sent */
	SV_WQE_SENT, /* all requests sent, awaiting responses */
	SV_WQE_DONE, /* complete (successful) */
	SV_WQE_ERROR, /* the requester found a local error */
	SV_WQE_CHAN, /* in the peer's message channel (chanpath.c) */
};

/* ---- responder resources (IBA: one per READ/ATOMIC in flight) ---- */

enum sv_res_type { SV_RES_NONE, SV_RES_READ, SV_RES_ATOMIC };

struct sv_resp_res {
	enum sv_res_type type;
	uint32_t psn; /* first PSN of the request */
	uint32_t npkts; /* PSNs the responses occupy */
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint64_t orig; /* ATOMIC: the value returned (replay) */
};

/* A reply being generated: a READ's response packets or an ATOMIC ACK. */
struct sv_reply {
	enum sv_res_type type;
	uint32_t psn; /* PSN of the next packet */
	uint32_t first_psn; /* PSN of the first packet */
	uint64_t va; /* of the next packet */
	uint32_t rkey;
	uint32_t resid; /* bytes still to send */
	uint32_t total;
	uint64_t orig;
	uint32_t msn;
	bool dup; /* answers a duplicate request */
	/* The PD the request was checked under (an XRC target's is its
	 * SRQ's, request by request). */
	struct sv_pd *pd;
};

#define SV_REPLY_Q 256 /* >= SV_MAX_RD_ATOMIC */

/* ---- engine state of a QP ------------------------------------------------ */

enum sv_work {
	SV_WORK_REQ = 1 << 0, /* the requester may be able to send */
	SV_WORK_FLUSH = 1 << 1, /* the QP is in ERR: flush the queues */
	SV_WORK_REPLY = 1 << 2, /* read responses to generate */
	SV_WORK_ACK = 1 << 3, /* an ACK/NAK is pending */
	SV_WORK_STATE = 1 << 4, /* qp->attr.qp_state needs syncing */
};

struct sv_qp_engine {
	struct sv_qp *qp;
	struct sv_engine *eng;
	struct sv_sock *sock;
	uint32_t qpn;
	_Atomic int state; /* enum ibv_qp_state: the data path's view */
	enum ibv_qp_type type;
	struct list_node node; /* sv_engine.qps */
	struct list_node work_node; /* sv_engine.work */
	bool on_work;
	uint32_t work; /* SV_WORK_* */
	struct list_node kick_node; /* sv_engine.kicked (kick_lock) */
	bool kicked; /* kick_lock */

	/* path, set at RTR */
	struct sv_shm_peer *shm; /* the peer's ring, NULL: UDP (shmpath.c) */
	char path_why[64]; /* why UDP */
	bool rx_udp; /* counted in sock->udp_qps */
	bool peer_udp; /* the peer's packets came through UDP */
	struct sockaddr_in6 peer;
	struct sv_flow flow; /* our packets: src = us, dst = peer */
	uint32_t dest_qpn;
	uint32_t pmtu;
	uint32_t window; /* packets: the receiver's buffer allows */
	uint32_t cwnd; /* packets: congestion window (<= window) */
	uint32_t ssthresh;
	uint32_t cwnd_acc; /* PSNs acknowledged towards cwnd + 1 */
	uint32_t qkey;
	uint32_t access; /* qp_access_flags */
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint32_t max_rd_atomic;
	uint32_t max_dest_rd_atomic;
	bool sqd_notify;
	bool sqd_pending; /* drained event still to raise */
	bool state_dirty; /* qp->attr.qp_state lags state */
	bool comm_est; /* IBV_EVENT_COMM_EST raised */
	bool last_wqe_sent; /* IBV_EVENT_QP_LAST_WQE_REACHED raised */

	/* message channels with a same-host peer (chanpath.c) */
	struct {
		struct sv_chan_rx rx; /* ours, the peer sends into it */
		struct sv_chan_tx tx; /* the peer's, we send into it */
		struct sv_chan *own; /* our channel (rx.ch once open) */
		uint32_t outstanding; /* SV_WQE_CHAN WQEs not yet retired */
		/* Lean mode: post_send writes SENDs into the channel itself,
		 * under sq_lock, without the engine; the engine's req.idx
		 * and outstanding are stale meanwhile (comp.idx is the
		 * retire cursor, moved under both locks).  Changed under
		 * both the engine lock and sq_lock. */
		_Atomic bool lean;
		uint32_t lean_psn; /* req.psn when it began */
		_Atomic uint64_t lean_sends; /* counted into stats later */
		uint64_t lean_counted;
		uint32_t tries; /* attach attempts */
		uint64_t acked; /* the ack line as last seen */
		uint64_t rx_acked; /* rx.head as last acknowledged */
		uint64_t stall_since; /* ns: acked has not moved since */
		bool listed; /* on sv_engine.chans */
		struct list_node node;
	} chan;

	/* large WRITEs the target's thread did not help with in a row
	 * (help.c): the next ones are not offered for a while */
	uint32_t help_missed, help_skip;

	/* UD: the last address handle resolved (dgid/sgid -> IP addresses) */
	struct {
		const struct sv_ah *ah;
		union ibv_gid dgid;
		uint8_t sgid_index;
		struct sv_ipaddr dst, src;
		uint32_t scope;
	} ud;

	/* requester */
	struct {
		uint32_t psn; /* next PSN to send */
		uint32_t max_psn; /* next PSN never sent */
		uint32_t idx; /* the WQE holding req.psn */
		uint32_t rd_atomic; /* READ/ATOMIC WQEs started, not done */
		uint32_t since_ackreq;
		bool local_done; /* a local operation is ready to retire */
		bool blocked; /* a WQE failed locally: send nothing more */
		bool probing; /* sending a probe: ask for an ACK */
	} req;

	/* completer */
	struct {
		uint32_t psn; /* oldest PSN not acknowledged */
		uint32_t idx; /* oldest WQE not completed */
		uint8_t retry_left;
		uint8_t rnr_left;
		uint8_t backoff; /* timeouts in a row without progress */
		uint64_t timeout_ns; /* 0 = infinite */
		uint64_t deadline; /* ACK timer (IBA timeout), 0 = off */
		uint64_t probe; /* early resend timer, 0 = off */
		uint64_t probe_ns; /* its current interval (backs off) */
		uint64_t rnr_until; /* RNR wait, 0 = none */
		uint32_t rnr_psn;
		uint32_t retried_psn; /* implied-NAK retry already issued here */
		bool retried;
		uint64_t last_rewind; /* ns: duplicate ACKs older than this are stale */
		uint64_t srtt; /* ns, smoothed round trip (0: no sample yet) */
		uint64_t rtt_t; /* ns: when rtt_psn was sent, 0 = none timed */
		uint32_t rtt_psn;
	} comp;

	/* responder */
	struct {
		uint32_t psn; /* expected PSN */
		uint32_t msn;
		uint32_t in_msg; /* 0, SV_M_SEND or SV_M_WRITE */
		bool nak_sent; /* until the expected PSN arrives */
		bool drop_msg; /* UC: discard until the next FIRST/ONLY */
		/* the receive WQE being filled (copied out of the queue) */
		bool have_wqe;
		bool wqe_srq;
		struct sv_recv_wqe *wqe; /* SV_MAX_SGE sges */
		uint64_t wqe_len; /* sum of its SGE lengths */
		uint64_t offset; /* bytes placed so far */
		/* the RDMA WRITE being placed */
		uint64_t va;
		uint32_t rkey;
		uint64_t resid;
		uint64_t length; /* of the whole write (byte_len) */
		uint32_t imm; /* network order */
		bool solicited;
		/* the pending ACK/NAK (coalesced) */
		bool ack_pending;
		uint8_t ack_syndrome;
		uint32_t ack_psn;
		/* READ/ATOMIC resources and the replies in progress */
		struct sv_resp_res *res;
		uint32_t nres, res_next;
		struct sv_reply replies[SV_REPLY_Q];
		uint32_t reply_head, reply_tail;
	} resp;
};

/* ---- per context ----------------------------------------------------------- */

struct sv_engine {
	struct sv_context *ctx;
	pthread_mutex_t lock; /* the progress lock */
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	int epfd; /* sockets + doorbell */
	int bell_epfd; /* doorbell only (while the app polls) */
	int bellfd; /* eventfd */
	_Atomic uint64_t last_hint; /* ns of the last poll hint */
	_Atomic uint64_t next_deadline; /* ns of the earliest timer, 0 none */
	_Atomic uint64_t sleep_until; /* the thread sleeps until (ns), 0 awake */

	struct list_head socks;
	struct list_head qps;
	struct list_head work;
	_Atomic uint32_t port_mtu;   /* bytes: the largest UD message */
	struct sv_mcast *mcast;      /* multicast groups (mcast.c), or NULL */

	pthread_mutex_t kick_lock;
	struct list_head kicked;

	/* ns: read at most once per pass, when something needs it (use
	 * sv_eng_now); now_ok says whether this pass has read it. */
	uint64_t now;
	bool now_ok;
	atomic_bool kick_any; /* set under kick_lock: kicked is not empty */
	_Atomic unsigned int busy_passes; /* poll hints, for the clock */
	/* Set after each pass when the only thing that can bring work to
	 * a busy poller is a packet in this socket's ring (one socket,
	 * shm only, no work queued): polls then look at the ring, the kick
	 * flag and the timer count without the lock.  NULL: take the lock. */
	_Atomic(struct sv_sock *) quiet;
	struct sv_tx *tx; /* SV_TX_BATCH */
	unsigned int ntx;
	uint8_t *rxmem;
	struct sv_udp_rx rx[SV_RX_BATCH];
	uint32_t rcvbuf; /* bytes of our receive buffers */

	struct sv_stats stats;
	uint64_t rng; /* SOFTVERBS_LOSS */

	struct list_head shm_peers; /* struct sv_shm_peer (shmpath.c) */
	struct list_head chans; /* QPs with a message channel (chanpath.c) */
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
	/* A poller's wc array for this pass (sv_engine_poll_hint_cq): a
	 * channel's receive completions for sink.cq go there directly. */
	struct {
		struct sv_cq *cq;
		struct ibv_wc *wc;
		int max, n;
	} sink;
	bool in_thread; /* the progress thread runs this pass */
	bool help_avail; /* what the segments' helping words say */
};

/* Registered memory is shared with the application the way a HCA shares
 * it: the engine reads and writes it like DMA, ordered with the
 * application only through completions and the peer's protocol, which a
 * race detector cannot see across processes.  Copies to and from it are
 * made with the detector told to look away. */
#if defined(__SANITIZE_THREAD__)
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define SV_DMA_BEGIN()                                         \
	do {                                                   \
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);  \
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__); \
	} while (0)
#define SV_DMA_END()                                         \
	do {                                                 \
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__); \
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);  \
	} while (0)
#else
#define SV_DMA_BEGIN() \
	do {           \
	} while (0)
#define SV_DMA_END() \
	do {         \
	} while (0)
#endif

static inline void sv_dma_copy(void *dst, const void *src, size_t n)
{
	SV_DMA_BEGIN();
	memcpy(dst, src, n);
	SV_DMA_END();
}

/* The send queue's tail as the engine may use it.  The verbs layer empties
 * the rings (modify to RESET) just before telling the engine; until it
 * has, a tail that is not within one ring of comp.idx means "nothing". */
static inline uint32_t sv_sq_tail(struct sv_qp_engine *qe)
{
	uint32_t tail = atomic_load_explicit(&qe->qp->sq.tail,
					     memory_order_acquire);

	return tail - qe->comp.idx > qe->qp->sq.size ? qe->comp.idx : tail;
}

static inline void list_node_init(struct list_node *n)
{
	n->next = n->prev = n;
}

/* The engine's switches, read-only (util/env.c says what each means); the
 * engine's code still spells them as the variables they once were. */
#define sv_trace_on sv_env_trace()
#define sv_loss_pct sv_env_loss()
#define sv_stats_on sv_env_stats()
#define sv_help_on sv_env_help()

/* engine.c */
uint64_t sv_now_ns(void);
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
void sv_timer_note(struct sv_engine *eng, uint64_t deadline);
int sv_engine_start_thread(struct sv_engine *eng);
int sv_engine_watch(struct sv_engine *eng, int fd, void *tag);

/* eqp.c */
/* sv_qp_to_error's event: an ibv_event_type, or one of these. */
#define SV_ERR_BY_USER (-1) /* modify_qp to ERR: no event, state set */
#define SV_ERR_NO_EVENT (-2) /* reported by a completion only */
void sv_qp_to_error(struct sv_qp_engine *qe, int event);
void sv_qp_run(struct sv_qp_engine *qe);
int sv_complete_send(struct sv_qp_engine *qe, enum ibv_wc_status status);
int sv_push_recv_cqe(struct sv_qp_engine *qe, const struct ibv_wc *wc,
		     bool solicited);
bool sv_rq_get(struct sv_qp_engine *qe);
void sv_qp_timers(struct sv_qp_engine *qe, uint64_t now, uint64_t *next);
enum ibv_wc_opcode sv_wc_opcode(uint32_t wr_opcode);

/* net.c */
struct sv_tx *sv_tx_get(struct sv_engine *eng);
uint8_t *sv_tx_hdr(struct sv_qp_engine *qe, struct sv_tx *t, uint8_t opcode,
		   uint32_t psn, uint32_t paylen);
void sv_tx_finish(struct sv_qp_engine *qe, struct sv_tx *t);
void sv_tx_flush(struct sv_engine *eng);
void sv_rx_sock(struct sv_engine *eng, struct sv_sock *s);
void sv_rx_pkt(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm);
void sv_send_ack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn);

/* shmpath.c: the shm link's place in the engine (link/shm.h) */
void sv_shm_engine_init(struct sv_engine *eng);
void sv_shm_sock_open(struct sv_engine *eng, struct sv_sock *s);
void sv_shm_sock_close(struct sv_sock *s);
void sv_shm_qp_created(struct sv_qp_engine *qe);
void sv_shm_qp_modified(struct sv_qp_engine *qe, enum ibv_qp_state new_state,
			enum ibv_qp_state old_state);
void sv_shm_qp_destroyed(struct sv_qp_engine *qe);
void sv_shm_tx(struct sv_engine *eng, struct sv_tx *const *t,
	       unsigned int n);
void sv_shm_rx(struct sv_engine *eng, struct sv_sock *s);
bool sv_shm_rx_udp_due(struct sv_engine *eng, struct sv_sock *s);
void sv_shm_rx_udp_seen(struct sv_qp_engine *qe);
bool sv_shm_sleep(struct sv_engine *eng);
void sv_shm_wake(struct sv_engine *eng);
const char *sv_shm_path(const struct sv_qp_engine *qe);

/* req.c */
void sv_req_run(struct sv_qp_engine *qe);
void sv_req_rewind(struct sv_qp_engine *qe, uint32_t psn);
void sv_req_goto(struct sv_qp_engine *qe, uint32_t psn, bool rewind);
void sv_req_probe(struct sv_qp_engine *qe);

/* xrc.c: XRC QPs run the RC machines; packets are translated at the
 * edges (XRC opcode and XRCETH on the wire, their RC twins inside), and a
 * target QP is pointed at the XRC SRQ each request names. */
static inline bool sv_xrc_qp(const struct sv_qp *qp)
{
	return qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV;
}
void sv_xrc_tx(struct sv_qp_engine *qe, struct sv_tx *t);
void sv_xrc_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	       const struct sv_flow *flow);

/* comp.c */
void sv_cc_loss(struct sv_qp_engine *qe, bool timeout);
void sv_comp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt);
void sv_comp_timer(struct sv_qp_engine *qe, uint64_t now);
void sv_comp_probe(struct sv_qp_engine *qe, uint64_t now);
void sv_probe_arm(struct sv_qp_engine *qe, bool reset);
void sv_comp_retire(struct sv_qp_engine *qe);

/* resp.c */
void sv_resp_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
		const struct sv_flow *flow);
void sv_resp_reply_run(struct sv_qp_engine *qe);
void sv_resp_ack_flush(struct sv_qp_engine *qe);
void sv_resp_reset(struct sv_qp_engine *qe);
const char *sv_resp_state_name(int s);

/* ud.c */
int sv_ud_resolve(struct sv_qp_engine *qe, const struct sv_ah *ah,
		  struct sv_ipaddr *dst, struct sv_ipaddr *src,
		  uint32_t *scope);
void sv_ud_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	      const struct sv_flow *flow);

/* sgl.c */
enum sv_sgl_err { SV_SGL_OK = 0, SV_SGL_PROT, SV_SGL_LEN };
enum sv_sgl_err sv_sgl_copy(struct sv_pd *pd, const struct ibv_sge *sge,
			    uint32_t nsge, uint64_t offset, uint8_t *data,
			    uint32_t len, bool to_sgl);
/* The same, with the key table's read lock already held (sv_mr_read_lock:
 * a batch of small copies takes it once). */
enum sv_sgl_err sv_sgl_copy_locked(struct sv_pd *pd, const struct ibv_sge *sge,
				   uint32_t nsge, uint8_t *data, uint32_t len,
				   bool to_sgl);
enum sv_sgl_err sv_sgl_validate(struct sv_pd *pd, const struct ibv_sge *sge,
				uint32_t nsge, unsigned int access);

/* stats.c */
void sv_trace_pkt(struct sv_engine *eng, const char *dir, const uint8_t *hdr,
		  uint32_t len, const char *why);
const char *sv_qp_state_name(int state);
void sv_qp_dump(struct sv_qp_engine *qe, FILE *f);
void sv_stats_print(struct sv_engine *eng, FILE *f);

/* direct.c: one-copy RDMA WRITE/READ with a same-host peer, and the QP's
 * entry in the published table. */
enum sv_direct {
	SV_DIRECT_NO, /* the packet path runs it */
	SV_DIRECT_DONE, /* executed and completed */
	SV_DIRECT_WAIT, /* direct once the WQEs before it complete */
};
enum sv_direct sv_direct_run(struct sv_qp_engine *qe,
			     struct sv_send_wqe *wqe, const void *pubtab);
/* The peer's published table, if the QP's peer is attached (shm link). */
#define SV_QE_PUBTAB(qe) ((qe)->shm ? (qe)->shm->pubtab : NULL)
void sv_direct_qp_publish(struct sv_qp_engine *qe);
void sv_direct_qp_unpublish(struct sv_qp_engine *qe);
/* Copy between our iov[0..n) (consumed) and [rva, rva+len) of the table's
 * process; *via_mem: through its mem file. */
struct iovec;
bool sv_direct_copy(const void *tab, bool write, struct iovec *iov,
		    uint32_t n, uintptr_t rva, uint64_t len, bool *via_mem);

/* help.c: a large direct WRITE shared with the target's progress thread
 * (link/help.h). */
enum sv_help_r {
	SV_HELP_NOT, /* not offered: copy it alone */
	SV_HELP_DONE, /* every byte is in place */
	SV_HELP_FAILED, /* a copy failed: the packet path runs it */
};
enum sv_help_r sv_help_write(struct sv_qp_engine *qe, const void *tab,
			     const struct iovec *iov, uint32_t n,
			     uintptr_t rva, const struct sv_send_wqe *wqe);
/* The progress thread, without the engine lock: take the jobs peers
 * posted in our segments, then linger a little for the next ones. */
void sv_help_serve(struct sv_engine *eng);
/* Tell peers whether our thread takes jobs now (not while our
 * application polls: its core is busy); changes only are written. */
void sv_help_available(struct sv_engine *eng, bool yes);

/* chanpath.c: small SENDs of an RC QP through a message channel in the
 * same-host peer's segment (link/chan.h, docs/fastpath.md layer 3). */
enum sv_chan_r {
	SV_CHAN_NO, /* the packet path sends it */
	SV_CHAN_SENT, /* in the channel */
	SV_CHAN_WAIT, /* channel full, or WQEs before it still in it */
};
void sv_chan_engine_init(struct sv_engine *eng);
void sv_chan_lean_leave(struct sv_qp_engine *qe);
void sv_chan_qp_state(struct sv_qp_engine *qe);
void sv_chan_qp_destroyed(struct sv_qp_engine *qe);
enum sv_chan_r sv_chan_send(struct sv_qp_engine *qe, struct sv_send_wqe *wqe);
/* Must a WQE of the packet path wait for the channel to drain first? */
static inline bool sv_chan_busy(const struct sv_qp_engine *qe)
{
	return qe->chan.outstanding != 0;
}
void sv_chan_poll(struct sv_engine *eng);
bool sv_chan_idle(struct sv_engine *eng);
void sv_chan_watch(struct sv_engine *eng);
bool sv_chan_watched_idle(struct sv_engine *eng);
bool sv_chan_need_watchdog(struct sv_engine *eng);

/* mcast.c: receive on the multicast socket (each pass), join groups on
 * interfaces that came up (address monitor), release at close. */
void sv_mcast_rx(struct sv_engine *eng);
void sv_mcast_refresh(struct sv_engine *eng);
void sv_mcast_close(struct sv_engine *eng);

#endif
