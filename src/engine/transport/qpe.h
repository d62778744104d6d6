/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The engine's state of a QP (struct sv_qp_engine), its send WQE states and
 * responder resources, and the QP's lifecycle (qp.c), its one error, flush
 * and state path (error.c) and its completion entries and receive WQEs
 * (cqe.c).
 */
#ifndef SV_ENGINE_QPE_H
#define SV_ENGINE_QPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/objects.h"
#include "engine/transport/eng.h"
#include "engine/transport/limits.h"
#include "engine/transport/path.h"
#include "engine/transport/hooks.h"
#include "engine/transport/rtt.h"
#include "proto/addr.h"
#include "proto/wire.h"
#include "proto/wr.h"
#include "util/list.h"

/* ---- responder resources (IBA: one per READ/ATOMIC in flight) ---- */

enum sv_res_type { SV_RES_NONE, SV_RES_READ, SV_RES_ATOMIC };

struct sv_statslot_qp; /* diag/statseg.h */

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
	struct list_node timed_node; /* sv_engine.timed */
	bool on_timed;
	uint32_t work; /* SV_WORK_* */
	struct list_node kick_node; /* sv_engine.kicked (kick_lock) */
	bool kicked; /* kick_lock */

	/* path, set at RTR */
	struct sv_shm_peer *shm; /* the peer's ring, NULL: UDP (links.c) */
	/* the paths besides packets that WQEs may take (path.c) */
	const struct sv_path_ops *paths[SV_PATHS_MAX];
	unsigned int npaths;
	/* Set by a path: post_send runs the send queue through it (the
	 * channel's lean mode), so the requester leaves it alone.  Changed
	 * under the engine lock and sq_lock. */
	_Atomic bool sq_by_post;
	/* Set by a path: a kick of this QP runs it alone, without a whole
	 * pass around it (a pass costs more than a channel SEND). */
	bool run_alone;
	char path_why[64]; /* why UDP */
	/* eng.rx_batch of the memory request it counted in eng.mem_reqs
	 * last, 0: none not yet answered by a response (recv.c). */
	uint64_t mem_req_batch;
	/* Its counters (SV_QSTAT): its slot of the stats segment, or its
	 * context's "others" slot (statslot NULL). */
	struct sv_qp_stats *ctr;
	struct sv_statslot_qp *statslot;
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
	/* A loss episode: cut once, until everything sent before the first
	 * loss (cc_recover) is acknowledged (comp.c, sv_cc_loss). */
	bool cc_recovering;
	uint32_t cc_recover;
	uint32_t cc_wmax; /* the window before the last cut (0: none) */
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
	/* The connected peer's packets carry SV_BTH_ICRC_BY_UDP (wire.h):
	 * ours to it leave the ICRC to the UDP checksum (xmit.c). */
	bool peer_skips_icrc;
	bool last_wqe_sent; /* IBV_EVENT_QP_LAST_WQE_REACHED raised */
	bool gsi; /* eng->gsi: sends as QP1 */
	/* Explained once (explain.c): the state + 1 a request was dropped
	 * in (0 again when one is taken), and a packet from an address
	 * other than the peer's. */
	uint8_t said_drop_state;
	bool said_wrong_src;

	/* The paths keep their own state of the QP after this struct
	 * (sv_path_table.qp_bytes, zeroed; paths/paths.h). */

	struct sv_hook_pcap_qp pcap; /* SOFTVERBS_PCAP (diag/pcap.c) */

	/* requester */
	struct {
		uint32_t psn; /* next PSN to send */
		uint32_t max_psn; /* next PSN never sent */
		uint32_t idx; /* the WQE holding req.psn */
		uint32_t rd_atomic; /* READ/ATOMIC WQEs started, not done */
		/* Requests the responder holds a resource for (IBA: at most
		 * max_rd_atomic): READ chunks not yet answered in full, and
		 * ATOMICs not yet answered. */
		uint32_t rd_reqs;
		/* Those READ chunks that a later chunk of their WQE
		 * followed, oldest first: where each ends, so that a resend
		 * asks for exactly the rest of one (req.c send_read); a
		 * WQE's last chunk ends where it was requested to. */
		struct {
			const struct sv_send_wqe *wqe;
			uint64_t end;
		} rd[SV_RD_CHUNKS];
		uint32_t rd_head, rd_n;
		uint32_t since_ackreq;
		bool local_done; /* a local operation is ready to retire */
		bool blocked; /* a WQE failed locally: send nothing more */
		uint32_t win; /* packets it may have in flight this run */
		bool probing; /* sending a probe: ask for an ACK */
		/* sv_req_ask_ack asked for the ACK of everything before
		 * asked_psn (valid while asked) */
		bool asked;
		uint32_t asked_psn;
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
		/* The engine's lost packets when this QP last probed: on
		 * shm only those need a probe (sv_comp_probe). */
		uint64_t losses_seen;
		uint64_t rnr_until; /* RNR wait, 0 = none */
		uint32_t rnr_psn;
		uint32_t retried_psn; /* implied-NAK retry already issued here */
		bool retried;
		uint64_t last_rewind; /* ns: duplicate ACKs older than this are stale */
		/* Packets resent (rewinds, selective resends, probes) whose
		 * answer may be a duplicate ACK: a responder answers every
		 * duplicate it gets (IBA; rxe one ACK each).  Those ACKs say
		 * nothing about loss, and are forgiven up to this many until
		 * an ACK reaches dup_mark (the next PSN never sent at the
		 * last resend: the responder is then past the resends).
		 * At most SV_DUP_OWED_MAX. */
		uint32_t dup_owed;
		uint32_t dup_mark;
		/* The peer's ACKs say it keeps out-of-order packets (wire.h,
		 * SV_SACK_MAX): its NAKs name the holes to resend. */
		bool sack_peer;
		struct sv_rtt rtt; /* round trip (engine/transport/rtt.h) */
		struct sv_rtt_ring rtt_sent; /* packets being timed */
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
		/* Selective retransmission (resp.c, "Out-of-order packets"):
		 * packets of the RDMA WRITE in progress placed ahead of psn,
		 * bit psn % SV_WINDOW_MAX; nkept of them, the WRITE's last
		 * packet among them (kept_end); hi_psn, the newest PSN seen
		 * ahead of psn (valid while ahead). */
		uint64_t kept[SV_WINDOW_MAX / 64];
		uint32_t nkept;
		bool kept_end;
		bool ahead;
		uint32_t hi_psn;
		/* The requester resends holes only (its requests say so):
		 * the next gap is NAKed at once, unless it is still part of
		 * the PSNs before nak_end, which the last NAK asked for. */
		bool peer_sack;
		uint32_t nak_end;
		/* fault injection (inject.c): the last request counted, and
		 * a responder silenced by a forced retry-exceeded */
		bool inj_seen;
		uint32_t inj_psn;
		bool mute;
	} resp;
};

/* The send queue's tail as the engine may use it.  A modify to RESET
 * empties the rings (reset_queues) and then the engine's cursors; a tail
 * that is not within one ring of comp.idx means "nothing". */
static inline uint32_t sv_sq_tail(struct sv_qp_engine *qe)
{
	uint32_t tail =
		atomic_load_explicit(&qe->qp->sq.tail, memory_order_acquire);

	return tail - qe->comp.idx > qe->qp->sq.size ? qe->comp.idx : tail;
}

static inline bool sv_wqe_holds_psn(const struct sv_send_wqe *w, uint32_t psn)
{
	return sv_psn_diff(psn, w->first_psn) >= 0 &&
	       sv_psn_diff(psn, w->last_psn) <= 0;
}

/* qp.c: run a QP's machines; fire its due timers (false: none is left
 * armed). */
void sv_qp_run(struct sv_qp_engine *qe);
bool sv_qp_timers(struct sv_qp_engine *qe, uint64_t now, uint64_t *next);

/* error.c */
/* sv_qp_to_error's event: an ibv_event_type, or one of these. */
#define SV_ERR_BY_USER (-1) /* modify_qp to ERR: no event, state set */
#define SV_ERR_NO_EVENT (-2) /* reported by a completion only */
void sv_qp_to_error(struct sv_qp_engine *qe, int event);
void sv_qp_comm_est(struct sv_qp_engine *qe);
/* Flush the queues of a QP in ERR (SV_WORK_FLUSH). */
void sv_qp_flush(struct sv_qp_engine *qe);
/* Bring qp->attr.qp_state up to the engine's state (SV_WORK_STATE). */
void sv_qp_sync_state(struct sv_qp_engine *qe);

/* cqe.c */
int sv_complete_send(struct sv_qp_engine *qe, enum ibv_wc_status status);
int sv_push_recv_cqe(struct sv_qp_engine *qe, const struct ibv_wc *wc,
		     bool solicited);
bool sv_rq_get(struct sv_qp_engine *qe);
/* Take an SRQ's next receive WQE into dst (SV_MAX_SGE entries), with its
 * length; false: none posted.  Posts the SRQ limit event. */
bool sv_srq_pop(struct sv_srq *srq, struct sv_recv_wqe *dst, uint64_t *len);

#endif
