/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The software device's object model: what a PD, MR, CQ, QP, SRQ and AH
 * are inside softverbs.  The verbs layer (src/verbs) creates, validates and
 * destroys these objects and enqueues work into them; the engine
 * (src/engine) moves data between them.  Each object embeds the public
 * rdma-core struct first so that the pointers handed to applications are
 * the ones the header inline functions dereference.
 *
 * Lock contract:
 *   - sv_context.lock guards the context's object lists and async events.
 *   - sv_cq.lock guards the CQ ring and its arming state.
 *   - sv_qp.sq_lock guards the send queue producer side, sv_qp.rq_lock the
 *     receive queue; the engine consumes under the context's progress lock
 *     (sv_engine.lock), and takes sq_lock/rq_lock only briefly.
 *   - sv_srq.lock guards the SRQ ring.
 *   sv_qp.state_lock guards the attributes and the multicast list.  The
 *   order these (and every other lock) are taken in is util/lockorder.h's.
 */
#ifndef SV_CORE_OBJECTS_H
#define SV_CORE_OBJECTS_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "proto/addr.h"
#include "util/list.h"
#include "util/log.h"
#include "util/qlock.h"

struct sv_engine;
struct sv_share;
struct sv_qp_engine;
struct sv_wr_batch;
struct sv_mw;
struct sv_xrcd;

/* ---- limits the implementation really has (reported by query_device) ---- */
#define SV_MAX_QP 65536
#define SV_MAX_QP_WR 16384
#define SV_MAX_SGE 32
#define SV_MAX_CQ 65536
#define SV_MAX_CQE (1 << 20)
#define SV_MAX_MR (1 << 20)
#define SV_MAX_MR_SIZE (1ULL << 40)
#define SV_MAX_PD (1 << 20)
#define SV_MAX_INLINE 1024
#define SV_MAX_RD_ATOMIC 128
#define SV_MAX_SRQ 65536
#define SV_MAX_SRQ_WR 16384
#define SV_MAX_AH (1 << 20)
#define SV_MAX_MCAST_GRP 8192
#define SV_MAX_MCAST_QP_ATTACH 56
#define SV_MAX_MSG_SIZE (1U << 31)
/* CQ moderation: cq_count is any 16-bit count; the period's limit (in
 * microseconds) is mlx5's (a 12-bit field), so a program tuned on an HCA
 * is accepted as it was there. */
/* The kernel's IB_UVERBS_DEVICE_ATOMIC_WRITE (include/uapi/rdma/
 * ib_user_verbs.h since Linux 6.2; rdma-core 44's copy predates it): the
 * bit rxe reports in device_cap_flags_ex for IBA 1.5 ATOMIC WRITE. */
#define SV_DEVICE_ATOMIC_WRITE (1ULL << 40)
/* Device memory: bytes of ibv_alloc_dm in use at once in a process (what
 * max_dm_size reports; mlx5 HCAs offer 128 to 256 KiB of MEMIC). */
#define SV_MAX_DM_SIZE (256 * 1024)
#define SV_MAX_CQ_MOD_COUNT UINT16_MAX
#define SV_MAX_CQ_MOD_PERIOD 4095
#define SV_MAX_PKEYS 1
#define SV_DEFAULT_PKEY 0xFFFF
#define SV_MAX_GIDS 64
#define SV_PORT 1
#define SV_VENDOR_ID 0xFFFFFF /* no IEEE OUI: a software device */
#define SV_VENDOR_PART_ID 0x5356 /* "SV" */
#define SV_HW_VER 1
#define SV_FW_VER "0.1.0"

/* ---- device ------------------------------------------------------------- */

struct sv_gid_entry {
	union ibv_gid gid;
	uint32_t ifindex; /* netdev carrying the address */
	uint32_t gid_type; /* IBV_GID_TYPE_ROCE_V2 */
	struct sockaddr_storage addr; /* the IP address behind the GID */
};

struct sv_device {
	struct ibv_device ibdev; /* first; what apps see */
	uint64_t node_guid; /* network byte order */
	uint64_t sys_image_guid; /* network byte order */
};

/* ---- context ------------------------------------------------------------ */

struct sv_async_event {
	struct list_node node;
	struct ibv_async_event ev;
};

struct sv_context {
	struct sv_device *dev;
	pthread_mutex_t lock;
	int async_pipe[2]; /* [0] is ibv_context.async_fd */
	struct list_head async_events; /* queued, not yet read */
	struct sv_engine *engine; /* progress thread, sockets, timers */
	struct sv_share *share; /* behind cmd_fd: objects ibv_import_* finds */
	/* sv_engine_settle, for librdmacm, which sees this struct but calls
	 * nothing of this library beyond its exports. */
	void (*settle)(struct sv_context *ctx);
	struct verbs_context vctx; /* ends with the public ibv_context */
};

/* ---- PD / MR / MW ------------------------------------------------------- */

struct sv_pd {
	struct ibv_pd ibv;
	atomic_int users; /* MRs, QPs, SRQs, AHs, MWs using it */
	/* An imported PD (ibv_import_pd) is a second handle on another
	 * context for the PD it names: everything but its own ibv_pd is
	 * the real one's, so that objects of both contexts match. */
	struct sv_pd *real;
	/* A parent domain (ibv_alloc_parent_domain, verbs/pd_parent.c):
	 * the PD it stands for (whose keys and checks apply), its thread
	 * domain, and the allocator of its queues' buffers (NULL: ours).
	 * All NULL for a plain PD. */
	struct sv_pd *parent_of;
	struct sv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
};

/* A thread domain (ibv_alloc_td): accepted and counted; softverbs' queues
 * keep their own locks whatever the application promises. */
struct sv_td {
	struct ibv_td ibv;
	atomic_int users; /* parent domains using it */
};

/* The PD whose protection applies: a parent domain's PD, or itself. */
static inline struct sv_pd *sv_pd_real(struct sv_pd *pd)
{
	return pd && pd->parent_of ? pd->parent_of : pd;
}

enum sv_mr_state { SV_MR_VALID, SV_MR_INVALID };

struct sv_mr {
	struct ibv_mr ibv; /* lkey, rkey, addr, length */
	struct sv_mr *real; /* an imported MR's region (as sv_pd.real) */
	struct sv_pd *pd;
	uint64_t iova; /* address the peer uses */
	uintptr_t va; /* where iova lands in this process */
	uint64_t length;
	unsigned int access;
	_Atomic int state;
	atomic_int refs; /* packets in flight hold a ref */
	/* A memory window's view (core/mw.c) is an sv_mr too, so that the
	 * data path finds windows and regions through one key lookup: for a
	 * type 2 window, the only QP it may be reached through; NULL for
	 * regions and type 1 windows. */
	struct sv_qp *bound_qp;
	/* Regions only: windows bound to this region (ibv_dereg_mr answers
	 * EBUSY while any is); changed under core/mw.c's lock. */
	int mw_binds;
	/* Device memory it was registered on (ibv_reg_dm_mr,
	 * verbs/dm.c), whose free is EBUSY while it is; else NULL. */
	struct sv_dm *dm;
	/* Registered with IBV_ACCESS_ON_DEMAND: nothing checked or pinned at
	 * registration, pages used as they are at each access (a fault is an
	 * error completion); ibv_advise_mr prefetches. */
	bool odp;
	/* Bytes faulted in at registration and counted against the
	 * process's bound (util/populate.h); 0 if left to fault on use. */
	uint64_t populated;
};

/* Device memory (ibv_alloc_dm, verbs/dm.c): a shared mapping of this
 * process that RDMA reaches through zero-based MRs. */
struct sv_dm {
	struct ibv_dm ibv;
	struct sv_dm *real; /* an imported handle's memory (as sv_pd.real) */
	uint8_t *base;
	size_t length; /* what was asked */
	size_t mapped; /* page-rounded */
	atomic_int users; /* MRs registered on it */
};

/* ---- CQ ----------------------------------------------------------------- */

struct sv_comp_channel {
	struct ibv_comp_channel ibv; /* fd is the pipe's read end */
	int wfd;
	atomic_int refs; /* CQs attached */
	struct sv_context *ctx;
	struct list_head cqs; /* CQs attached (ctx->lock) */
	/* Events written and taken so far: a thread that sleeps for the
	 * engine (sv_engine_wait_event) knows without a system call that
	 * its pass wrote one, and ibv_get_cq_event that none is there. */
	_Atomic uint64_t written, taken;
	/* The fd blocked at the last look (fcntl): the waiter's pass, which
	 * often finds the event, comes first, and its look before it sleeps
	 * is the one that counts (verbs/cq.c read_event). */
	atomic_bool blocking;
};

/* When a completion entered its CQ: CLOCK_MONOTONIC (the device clock,
 * 1 tick = 1 ns) and CLOCK_REALTIME, both in nanoseconds. */
struct sv_cq_ts {
	uint64_t dev_ns;
	uint64_t wall_ns;
};

struct sv_cq {
	struct ibv_cq_ex ex; /* ibv_cq is its prefix */
	pthread_mutex_t lock;
	struct ibv_wc *ring; /* capacity = ncqe (power of 2 >= cqe+1) */
	/* The parent domain the CQ was created on (ibv_create_cq_ex with
	 * IBV_CQ_INIT_ATTR_MASK_PD), and the one whose allocator gave the
	 * ring (NULL: calloc'd), verbs/pd_parent.c. */
	struct sv_pd *parent, *ring_owner;
	uint32_t ncqe;
	uint32_t head, tail; /* free-running; used = tail - head */
	int armed; /* 0, or IBV_CQ_SOLICITED / IBV_CQ_NEXT_COMP style */
	bool overrun;
	atomic_int users; /* QPs using it */
	struct sv_context *ctx;
	/* extended-CQ poll cursor (ibv_cq_ex API) */
	struct ibv_wc cur;
	uint64_t wc_flags;
	uint32_t create_flags; /* IBV_CREATE_CQ_ATTR_* honoured */
	/* Completion timestamps, kept only for CQs created asking for them:
	 * one entry per ring slot, taken when the completion is written. */
	struct sv_cq_ts *ts;
	struct sv_cq_ts cur_ts;
	/* Completion channel and event accounting, guarded by ctx->lock:
	 * the channel carries chan_token (never reused) rather than the
	 * pointer, so an event left in the pipe by a destroyed CQ is
	 * recognised and dropped.  *_reported count the events handed to
	 * the application, which destroy waits to see acknowledged. */
	struct list_node chan_node;
	uint64_t chan_token;
	uint32_t comp_events_reported;
	uint32_t async_events_reported;
	/* Completion moderation (ibv_modify_cq, core/cq_mod.c), under lock:
	 * an armed CQ's event waits for mod_count completions, or for
	 * mod_period_us after the first of them; mod_pending counts the
	 * completions the armed CQ has taken since it was last signalled. */
	uint16_t mod_count, mod_period_us;
	uint32_t mod_pending;
	/* On core/cq_mod.c's timer list, under that file's lock. */
	struct list_node mod_node;
	uint64_t mod_deadline_ns;
	bool mod_timed; /* counted among the CQs the timer serves */
};

#define SV_CQ_ARM_NONE 0
#define SV_CQ_ARM_ANY 1
#define SV_CQ_ARM_SOLICITED 2

/* ---- work queues -------------------------------------------------------- */

/* Where an AH points (engine/transport/ud.c resolves it at ibv_create_ah). */
struct sv_ah_route {
	bool resolved;
	struct sv_ipaddr dst, src;
	uint32_t scope; /* link-local and multicast: the source's interface */
	uint8_t tclass; /* grh.traffic_class: the packets' TOS */
};

/* One send work request as the requester needs it: a copy of the user's WR
 * (the user's memory may be reused as soon as post_send returns). */
struct sv_send_wqe {
	uint64_t wr_id;
	uint32_t opcode; /* enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t imm_data; /* network order, as in ibv_send_wr */
	uint32_t num_sge;
	uint64_t length; /* total payload bytes */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		/* the AH's route, copied at post (the AH may be gone
		 * before the WQE is sent, as with an HCA's address
		 * vector in the WQE) */
		struct {
			struct sv_ah_route route;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
		/* IBV_WR_BIND_MW: the window is found again by its key index
		 * when the WQE executes (it may be gone by then), the region
		 * by its lkey. */
		struct {
			struct sv_mw *mw;
			uint64_t addr;
			uint64_t length;
			uint32_t index;
			uint32_t rkey;
			uint32_t mr_lkey;
			uint32_t access;
		} bind;
	} wr;
	uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV */
	uint32_t xrc_srqn; /* XRC_SEND: the target's XRC SRQ */
	/* requester bookkeeping (engine owned) */
	uint32_t first_psn, last_psn;
	uint64_t sent; /* bytes handed to packets so far */
	uint32_t state; /* engine's per-WQE state */
	uint32_t status; /* enum ibv_wc_status when done */
	uint64_t atomic_result; /* original value for atomics */
	uint64_t read_done; /* bytes of read response placed */
	uint64_t chan_end; /* message channel position (engine) */
	/* SOFTVERBS_STRICT=1: a checksum of the gather list at the post
	 * (engine/diag/strict.h), compared at the completion. */
	uint32_t strict_sum;
	bool strict_summed;
	/* followed by num_sge ibv_sge, or by inline data */
	union {
		struct ibv_sge sge[0];
		uint8_t inline_data[0];
	};
};

/* sv_send_wqe.state: where the engine (or a path) is with it. */
enum sv_wqe_state {
	SV_WQE_PENDING = 0, /* not started */
	SV_WQE_ACTIVE, /* some packets sent */
	SV_WQE_SENT, /* all requests sent, awaiting responses */
	SV_WQE_DONE, /* complete (successful) */
	SV_WQE_ERROR, /* the requester found a local error */
	SV_WQE_CHAN, /* in the peer's message channel (paths/chan.c) */
};

/* The part of a send WQE every poster writes the same way from the WR
 * (verbs/post.c for the engine, paths/chan.c's lean mode for a channel
 * SEND): what its completion reports, and the engine's bookkeeping reset.
 * The opcode's own fields and the data are the poster's. */
static inline void sv_send_wqe_from_wr(struct sv_send_wqe *w,
				       const struct ibv_send_wr *wr,
				       uint64_t len)
{
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = (uint32_t)wr->send_flags;
	w->imm_data = wr->imm_data;
	w->num_sge = 0;
	w->length = len;
	w->invalidate_rkey = 0;
	w->xrc_srqn = 0;
	w->first_psn = w->last_psn = 0;
	w->sent = 0;
	w->state = SV_WQE_PENDING;
	w->status = 0;
	w->atomic_result = 0;
	w->read_done = 0;
	w->chan_end = 0;
	w->strict_summed = false;
}

struct sv_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pad;
	struct ibv_sge sge[0];
};

/* A ring of fixed-stride WQEs.  head/tail are free-running counters; the
 * producer (post) advances tail, the consumer (engine) advances head. */
struct sv_wq {
	uint8_t *buf;
	/* The parent domain whose allocator gave buf (it frees it), or NULL:
	 * calloc'd (verbs/pd_parent.c). */
	struct sv_pd *buf_owner;
	uint32_t stride;
	uint32_t size; /* power of 2 */
	uint32_t max_wr; /* what the user asked for (cap) */
	uint32_t max_sge;
	_Atomic uint32_t head;
	_Atomic uint32_t tail;
};

static inline void *sv_wq_at(struct sv_wq *wq, uint32_t idx)
{
	return wq->buf + (size_t)(idx & (wq->size - 1)) * wq->stride;
}

static inline uint32_t sv_wq_used(struct sv_wq *wq)
{
	return atomic_load_explicit(&wq->tail, memory_order_acquire) -
	       atomic_load_explicit(&wq->head, memory_order_acquire);
}

/* ---- SRQ ---------------------------------------------------------------- */

struct sv_srq {
	struct ibv_srq ibv; /* first */
	unsigned int forks; /* as struct sv_qp's */
	pthread_mutex_t lock;
	struct sv_wq rq;
	uint32_t srq_limit; /* armed limit, 0 = not armed */
	atomic_int users; /* QPs attached */
	struct sv_pd *pd;
	/* The PD (or parent domain) whose use it holds: not found through
	 * ibv.pd at destroy, which may be an imported handle unimported
	 * since (ibv_unimport_pd frees it). */
	struct sv_pd *pd_held;
	struct sv_context *ctx;
	uint32_t async_events_reported; /* ctx->lock */
	/* XRC SRQs (core/xrc.c): the domain, the CQ its receives complete
	 * on, the number XRC requests name it by, and the references of
	 * packets being handled (destroy waits for them). */
	enum ibv_srq_type type;
	struct sv_xrcd *xrcd;
	struct sv_cq *cq;
	uint32_t srq_num;
	atomic_int xrc_refs;
	atomic_bool xrc_dying; /* being removed: wake it at refs 0 */
	struct sv_srq *xrc_next; /* number table chain */
};

/* ---- AH ----------------------------------------------------------------- */

/* Where an AH's datagrams go and the address they leave from: resolved at
 * the AH's first use by the UD requester (engine/transport/ud.c, a GID-table scan)
 * and kept, as the kernel resolves an AH once, when it is created. */
struct sv_ah {
	struct ibv_ah ibv;
	struct ibv_ah_attr attr;
	struct sockaddr_storage dest; /* IP the GID maps to */
	struct sv_pd *pd;
	struct sv_ah_route route; /* fixed at create (engine/transport/ud.c) */
};

/* ---- QP ----------------------------------------------------------------- */

/* struct ibv_qp_ex grows at its end with rdma-core (wr_flush since 45:
 * 360 bytes); a caller built against newer headers than ours reads its
 * members there, so the QP keeps room for them (verbs/qp_ex.c fills it). */
#define SV_QP_EX_ROOM 360

struct sv_qp {
	union {
		struct ibv_qp_ex qpx; /* ibv_qp is qpx.qp_base */
		unsigned char qpx_room[SV_QP_EX_ROOM];
	};
	struct sv_context *ctx;
	/* sv_fork_count at creation (util/forks.h): another value means
	 * this process is a forked child of the one that made the QP */
	unsigned int forks;
	struct sv_pd *pd;
	struct sv_pd *pd_held; /* as struct sv_srq's */
	struct sv_cq *scq, *rcq;
	struct sv_srq *srq;
	enum ibv_qp_type type;
	bool sq_sig_all;

	sv_qlock_t sq_lock;
	sv_qlock_t rq_lock;
	struct sv_wq sq;
	struct sv_wq rq;
	struct ibv_qp_cap cap;
	/* SOFTVERBS_STRICT=1: unsignaled WRs posted since the last
	 * signaled one (sq_lock). */
	uint32_t strict_unsig;

	/* Attributes as last set by modify_qp, reported by query_qp.
	 * attr.qp_state is the authoritative state; guarded by state_lock. */
	pthread_mutex_t state_lock;
	struct ibv_qp_attr attr;
	int attr_mask_set; /* which attributes were ever set */

	/* addressing: where the peer is (RC/UC) */
	struct sockaddr_storage peer;
	bool peer_valid;

	struct sv_qp_engine *eng; /* transport state, engine owned */
	struct list_node ctx_node;

	uint32_t async_events_reported; /* ctx->lock */
	struct list_head mcast; /* struct sv_mcast_attach, state_lock */

	/* The ibv_wr_* batch of a QP created with send_ops_flags
	 * (verbs/qp_ex.c); NULL for QPs without the ibv_qp_ex API. */
	struct sv_wr_batch *wrx;

	/* XRC (core/xrc.c).  A target QP (XRC_RECV) has no PD, CQ or SRQ of
	 * its own: for each request the engine points pd, rcq and srq at
	 * the XRC SRQ the request names (and keeps them, holding the SRQ,
	 * while a message is half received: xrc_hold).  A handle from
	 * ibv_open_qp is an sv_qp whose real is the target QP. */
	struct sv_xrcd *xrcd;
	struct sv_srq *xrc_hold; /* engine lock */
	/* A request naming an SRQ of another process (engine/forward/xrcfwd.c),
	 * engine lock: its number, and the receive WQE taken there (by
	 * the cookie that process gave it) until it completes. */
	uint32_t xrc_rsrqn;
	uint32_t xrc_rcookie;
	bool xrc_rwqe;
	struct sv_qp *real; /* ibv_open_qp handles only */
	int xrc_opens; /* handles open on this TGT QP */
	struct list_node xrc_node; /* the domain's TGT QPs */

	/* The warnings of its posts, responder and completer (log.h). */
	struct sv_lograte lograte;
};

/* A multicast group a UD QP is attached to (ibv_attach_mcast). */
struct sv_mcast_attach {
	struct list_node node;
	union ibv_gid gid;
	uint16_t lid;
};

/* container_of helpers: public handle -> softverbs object */
#define sv_container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

static inline struct sv_context *to_sv_ctx(struct ibv_context *c)
{
	return sv_container_of(c, struct sv_context, vctx.context);
}
/* The object itself: an imported handle's real PD or MR (sv_pd.real). */
static inline struct sv_pd *to_sv_pd(struct ibv_pd *p)
{
	struct sv_pd *pd = sv_container_of(p, struct sv_pd, ibv);

	return pd->real ? pd->real : pd;
}
static inline struct sv_mr *to_sv_mr(struct ibv_mr *m)
{
	struct sv_mr *mr = sv_container_of(m, struct sv_mr, ibv);

	return mr->real ? mr->real : mr;
}
static inline struct sv_cq *to_sv_cq(struct ibv_cq *c)
{
	return sv_container_of((struct ibv_cq_ex *)c, struct sv_cq, ex);
}
static inline struct sv_qp *to_sv_qp(struct ibv_qp *q)
{
	return sv_container_of(q, struct sv_qp, qpx.qp_base);
}
static inline struct sv_srq *to_sv_srq(struct ibv_srq *s)
{
	return sv_container_of(s, struct sv_srq, ibv);
}
static inline struct sv_ah *to_sv_ah(struct ibv_ah *a)
{
	return sv_container_of(a, struct sv_ah, ibv);
}

#endif
