/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * librdmacm for softverbs: internal objects shared by the files of src/cm.
 *
 * What stands in for what:
 *   - the kernel's rdma_cm port space    -> host TCP ports: an id bound to
 *     (addr, port) owns a TCP socket bound there; rdma_listen listens on it;
 *   - the IB CM MADs (REQ/REP/RTU/REJ/DREQ/DREP, SIDR) -> fixed-size
 *     messages (wire.h) on one TCP connection per rdma_cm connection, whose
 *     EOF also tells a peer's death;
 *   - the rdma_cm character device       -> an event channel is an eventfd
 *     that is readable exactly while events are queued on it;
 *   - the kernel's CM work queues        -> one progress thread per process
 *     (epoll over every CM socket, plus timers).
 *
 * Lock contract: one process-wide mutex, sv_cm.lock, guards every id,
 * socket, channel queue and timer.  The progress thread holds it while it
 * handles socket events and timers; API calls hold it while they touch CM
 * state.  Verbs objects (QPs, CQs) are only ever touched from API calls in
 * the application's threads, never by the progress thread: an application
 * may destroy its QP at any time (rping does) and the CM must not race it.
 * Calls into libibverbs may be made with sv_cm.lock held (libibverbs never
 * calls back into the CM).
 */
#ifndef SV_CM_CM_H
#define SV_CM_CM_H

#include <errno.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdbool.h>
#include <stdint.h>

#include "cm/mad.h"
#include "cm/wire.h"
#include "util/clock.h"
#include "util/list.h"
#include "util/lockorder.h"

#define SV_EXPORT __attribute__((visibility("default")))

/* rdma-core's convention for int-returning calls: -1 and errno. */
static inline int sv_cm_err(int err)
{
	errno = err;
	return -1;
}

/* Timeouts (milliseconds).  The IB CM waits about a minute for a REP (it
 * sends MRAs for user-space listeners) and for an RTU; a DREQ normally gets
 * its DREP at once from the peer's progress thread.  TIMEWAIT lasts about
 * 4.096 us * 2^(packet life time + 1), half a second on RoCE. */
#define SV_CM_REP_TIMEOUT_MS 64000
/* A connect refused at the TCP level (no listener on the port) is tried
 * again after 1, 2, 4 ... ms, this many times (511 ms in all), before it
 * is reported as REJECTED: a server may send its port to the client
 * before rdma_listen (qperf 0.4.11 does), a window a HCA's address and
 * route resolution covers and a connect on one host does not. */
#define SV_CM_REFUSED_RETRIES 9
#define SV_CM_RTU_TIMEOUT_MS 64000
#define SV_CM_REQ_WAIT_MS 10000 /* accepted socket must send its REQ */
#define SV_CM_DREQ_TIMEOUT_MS 5000
#define SV_CM_TIMEWAIT_MS 512
/* A peer's DREQ is reported this long after it arrived.  The ACKs the
 * peer sent before it are taken in when it arrives (conn.c, settle: on a
 * fabric the hardware has handled them before a CM hears of the DREQ);
 * the grace leaves an application that polls its CQ and reads its event
 * channel in turn the time to see their completions before the event:
 * one that tears its QP down on DISCONNECTED (the seeds' demos do) would
 * otherwise destroy them with it. */
#define SV_CM_DREQ_GRACE_MS 5
#define SV_CM_LINGER_MS 2000 /* orphan socket waits for the peer's EOF */
/* Standard mode (IB CM MADs, unreliable): a REQ, REP or DREQ unanswered is
 * sent again this often, up to SV_MAD_RETRIES times (what we advertise as
 * max CM retries); the peer's MRA stops the resends for its service time.
 * The CM response timeout we advertise, 4.096 us * 2^20 (about 4 s), is
 * the kernel rdma_cm's. */
#define SV_MAD_RESEND_MS 2000
/* At exit: how long the DREQs of connections left up may take to leave. */
#define SV_MAD_EXIT_DRAIN_MS 100
#define SV_MAD_RETRIES 15
#define SV_MAD_CM_TIMEOUT 20

/* Connection parameters the CM hands to the QP (rdma_init_qp_attr). */
#define SV_CM_DEFAULT_ACK_TIMEOUT 17 /* 4.096 us * 2^17 = 0.5 s */
/* The kernel CM's (cm_init_qp_rtr_attr): encoding 0, the longest RNR NAK
 * timer, 655.36 ms.  A receiver that posts its WQE a little after the
 * peer's SEND arrives (rdma-core's test_rdmacm_async_traffic_external_qp
 * replies before its peer reposts) is then retried in time: with a short
 * timer, rnr_retry 5 runs out within milliseconds on a loaded host. */
#define SV_CM_MIN_RNR_TIMER 0
#define SV_CM_HOP_LIMIT 64

/* IB CM REJ reasons and SIDR_REP statuses (IBA chapter 12). */
#define SV_REJ_NO_RESOURCES 3
#define SV_REJ_TIMEOUT 4
#define SV_REJ_INVALID_SERVICE_ID 8
#define SV_REJ_CONSUMER_DEFINED 28
#define SV_REJ_VENDOR_OPTION_NOT_SUPPORTED 35
#define SV_SIDR_SUCCESS 0
#define SV_SIDR_UNSUPPORTED 1
#define SV_SIDR_REJECT 2

enum sv_cm_state {
	SV_CM_IDLE,
	SV_CM_ADDR_BOUND, /* rdma_bind_addr */
	SV_CM_ADDR_RESOLVED, /* rdma_resolve_addr done */
	SV_CM_ROUTE_RESOLVED, /* rdma_resolve_route done */
	SV_CM_LISTEN,
	SV_CM_CONNECT, /* active: REQ sent (or TCP connecting) */
	SV_CM_REP_RCVD, /* active: REP in, RTU not yet sent */
	SV_CM_REQ_RCVD, /* passive: REQ in, not yet accepted */
	SV_CM_REP_SENT, /* passive: accepted, waiting for the RTU */
	SV_CM_ESTABLISHED, /* RC/UC connected; UD: SIDR done */
	SV_CM_DREQ_SENT, /* rdma_disconnect, waiting for the DREP */
	SV_CM_DISCONNECTED, /* DISCONNECTED reported, timewait */
	SV_CM_FAILED, /* rejected, unreachable, aborted */
};
#define SV_CM_NSTATES (SV_CM_FAILED + 1)

enum sv_cm_timer {
	SV_TIMER_NONE,
	SV_TIMER_REP, /* CONNECT: no REP/REJ in time */
	SV_TIMER_RTU, /* REP_SENT: no RTU in time */
	SV_TIMER_DREQ, /* DREQ_SENT: no DREP in time */
	SV_TIMER_DREQ_GRACE, /* DISCONNECTED: report the peer's DREQ */
	SV_TIMER_TIMEWAIT, /* DISCONNECTED: TIMEWAIT_EXIT due */
	SV_TIMER_RECONNECT, /* CONNECT: refused, connect() again */
};

struct sv_cm_channel {
	struct rdma_event_channel ch; /* ch.fd: eventfd, readable iff queued */
	struct list_node node; /* sv_cm.channels while not destroyed */
	struct list_head events; /* sv_cm_event, not yet fetched */
	bool priv; /* private channel of a sync id */
	/* Threads inside rdma_get_cm_event.  A channel destroyed while some
	 * are is only marked closed; the last of them to leave frees it. */
	unsigned int waiters;
	bool closed;
};

struct sv_cm_id;
struct sv_cm_mc;

struct sv_cm_event {
	struct rdma_cm_event ev; /* handed to the application; first */
	struct list_node node; /* channel queue */
	struct sv_cm_id *owner; /* whose event count the ack completes */
	struct sv_cm_mc *mc; /* multicast events */
	uint8_t pdata[SV_CM_PDATA_MAX];
};

enum sv_sock_kind {
	SV_SOCK_BOUND, /* bound port, nothing else yet */
	SV_SOCK_LISTEN, /* rdma_listen */
	SV_SOCK_CONN, /* connected (or connecting) CM connection */
	SV_SOCK_MAD, /* standard mode: MADs forwarded to us (gsi.c) */
};

#define SV_CM_WBUF (8 * sizeof(struct sv_cm_wire))

struct sv_cm_sock {
	int fd;
	uint32_t slot, gen; /* handle in the socket table */
	enum sv_sock_kind kind;
	struct sv_cm_id *id; /* owner; NULL: orphan, lingering */
	struct sv_cm_id *listener; /* accepted, its REQ not yet read */
	bool connecting; /* nonblocking connect() in progress */
	bool parked; /* refused, out of epoll until connected again */
	bool dead; /* EOF or error seen */
	bool linger; /* orphan: flush, shut down, wait EOF */
	bool wr_shut;
	uint32_t ev_mask; /* epoll events registered */
	uint64_t deadline_ms; /* pending REQ / linger deadline, or 0 */
	struct list_node node; /* sv_cm.socks */
	size_t rlen, wlen;
	uint8_t rbuf[sizeof(struct sv_cm_wire)];
	uint8_t wbuf[SV_CM_WBUF];
};

/* Connection attributes the CM negotiated: what rdma_init_qp_attr needs. */
struct sv_cm_conn {
	uint32_t local_qpn, remote_qpn;
	uint32_t local_psn, remote_psn;
	uint32_t remote_qkey;
	uint8_t resp_res; /* our max_dest_rd_atomic */
	uint8_t init_depth; /* our max_rd_atomic */
	uint8_t retry_count;
	uint8_t rnr_retry; /* for our QP */
	uint8_t flow_control;
	uint8_t srq;
	bool valid; /* REQ (passive) or REP (active) seen */
};

struct sv_cm_mc {
	struct list_node node; /* id->mcs */
	struct sv_cm_id *id;
	void *context;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	union ibv_gid mgid;
	uint16_t mlid;
	uint8_t join_flags;
	bool attached; /* QP attached by rdma_get_cm_event */
	int events_reported, events_acked;
};

struct sv_cm_id {
	struct rdma_cm_id id; /* public; first */
	struct list_node node; /* sv_cm.ids */
	struct list_node timer_node; /* sv_cm.timers when timer != NONE */
	enum sv_cm_state state; /* written by sv_cm_id_set_state only */
	enum sv_cm_timer timer;
	uint64_t deadline_ms;
	bool sync; /* created without a channel */
	bool destroying;
	bool has_dev; /* holds a reference on the device PD */
	bool unborn; /* child whose CONNECT_REQUEST is queued */
	bool peer_gone; /* connection died before it was usable */
	struct sv_cm_sock *sock;
	int events_reported, events_acked;
	int gid_index;
	struct sv_cm_conn conn;
	uint32_t qkey; /* UD ids */
	/* rdma_set_option */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;
	bool ack_timeout_set;
	bool reuseaddr;
	int afonly; /* -1: not set */
	int backlog;
	int pending_reqs; /* listener: CONNECT_REQUESTs not yet delivered */
	struct list_head mcs;
	/* rdma_create_ep */
	struct ibv_qp_init_attr *ep_qp_attr;
	void *connect_pdata;
	size_t connect_len;
	/* Standard mode: this connection speaks IB CM MADs on QP1 (gsi.c)
	 * with the peer's CM at mad_peer, named by the two comm IDs (SIDR:
	 * local_comm is the request ID).  mad_last is the last REQ, REP,
	 * RTU or DREQ sent, for resends and duplicates. */
	bool mad;
	bool mad_mra; /* the peer's MRA: no resends, its service time */
	int mad_retries;
	int refusals; /* connects refused so far (SV_CM_REFUSED_RETRIES) */
	uint32_t local_comm, remote_comm;
	uint64_t tid;
	struct sockaddr_storage mad_peer;
	struct sv_mad mad_last;
	/* A listener's name for its service's REQs (gsi.c), shared by the
	 * listeners of one service in this process. */
	struct sv_cm_sock *mad_svc;
	uint64_t mad_service;
	/* ECE (rdma_set_local_ece / rdma_get_remote_ece) */
	struct ibv_ece local_ece, remote_ece;
	/* rdma_resolve_addrinfo: in progress until rdma_query_addrinfo
	 * takes its result (sv_cm.lock) */
	bool resolving_ai;
	struct rdma_addrinfo *resolved_ai;
};

/* Event types of rdma-core 60+ (rdma_cma.h), absent from older headers. */
#define SV_CM_EVENT_ADDRINFO_RESOLVED 16
#define SV_CM_EVENT_ADDRINFO_ERROR 17
#define SV_CM_EVENT_USER 18
/* rdma_addrinfo.ai_flags of rdma-core 60+: resolve through the SA */
#define SV_RAI_SA 0x00000010

static inline struct sv_cm_id *to_sv_id(struct rdma_cm_id *id)
{
	return (struct sv_cm_id *)id;
}

static inline struct sv_cm_channel *to_sv_ch(struct rdma_event_channel *c)
{
	return (struct sv_cm_channel *)c;
}

/* ---- core.c: process state, device, sockets, progress thread ---------- */

struct sv_cm_global {
	pthread_mutex_t lock;
	pthread_cond_t acked; /* broadcast on every event ack */
	struct list_head ids;
	struct list_head timers; /* sv_cm_id with a timer armed */
	struct list_head socks;
	struct list_head channels; /* event channels not yet destroyed */
	/* the device: one context shared by every id, as rdma-core does */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	int pd_refs;
	uint8_t max_resp_res, max_init_depth;
	/* progress */
	int epfd, wakefd;
	bool thread_started;
	pthread_t thread;
	/* socket handle table */
	struct sv_cm_sock **slots;
	uint32_t nslots;
};

extern struct sv_cm_global sv_cm;

#define sv_cm_lock() sv_mutex_lock(&sv_cm.lock, SV_LOCK_CM)
#define sv_cm_unlock() sv_mutex_unlock(&sv_cm.lock)

uint32_t sv_cm_random24(void);
void sv_cm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The device context, opened once (lock held). 0 or errno. */
int sv_cm_dev_open(void);
/* Bind an id to the device: id->verbs, id->pd, port_num (lock held). */
int sv_cm_dev_attach(struct sv_cm_id *id);
void sv_cm_dev_detach(struct sv_cm_id *id);

/* GID helpers: address <-> GID, and the GID table index of an address. */
void sv_cm_addr_to_gid(const struct sockaddr *sa, union ibv_gid *gid);
int sv_cm_gid_index(const struct sockaddr *sa);
socklen_t sv_cm_addrlen(const struct sockaddr *sa);
uint16_t sv_cm_port_of(const struct sockaddr *sa); /* host order */
void sv_cm_set_port(struct sockaddr *sa, uint16_t port);
bool sv_cm_addr_any(const struct sockaddr *sa);
bool sv_cm_addr_loopback(const struct sockaddr *sa);
/* v4-mapped IPv6 -> AF_INET, in place. */
void sv_cm_addr_unmap(struct sockaddr_storage *ss);

/* Sockets (lock held).  sv_sock_new registers fd with the progress
 * thread; sv_sock_close unregisters and closes it at once; sv_sock_orphan
 * detaches it from its id and lets it flush, shut down and linger. */
struct sv_cm_sock *sv_sock_new(int fd, enum sv_sock_kind kind);
void sv_sock_close(struct sv_cm_sock *s);
void sv_sock_orphan(struct sv_cm_sock *s);
void sv_sock_want(struct sv_cm_sock *s, uint32_t events);
/* Queue one message and try to send it; 0, or errno (connection gone). */
int sv_sock_send(struct sv_cm_sock *s, const struct sv_cm_wire *m);
/* Send what is queued (after connect); 0, or errno. */
int sv_sock_kick(struct sv_cm_sock *s);

void sv_cm_timer_set(struct sv_cm_id *id, enum sv_cm_timer t, uint64_t ms);
void sv_cm_timer_clear(struct sv_cm_id *id);
void sv_cm_wake(void);

/* Start the progress thread if needed (lock held). 0 or errno. */
int sv_cm_progress_start(void);

/* ---- channel.c: event channels and events ---------------------------- */

/* Lock held, both. */
struct sv_cm_channel *sv_channel_new(bool priv);
void sv_channel_free(struct sv_cm_channel *ch);
/* Allocate an event for id (lock held); NULL if out of memory. */
struct sv_cm_event *sv_event_new(struct sv_cm_id *id,
				 enum rdma_cm_event_type type, int status);
/* Queue it on id's channel and make the fd readable (lock held). */
void sv_event_queue(struct sv_cm_id *id, struct sv_cm_event *e);
/* Shorthand: new + queue, no parameters. */
void sv_event_post(struct sv_cm_id *id, enum rdma_cm_event_type type,
		   int status);
/* Remove undelivered events that belong to id (lock held). */
void sv_event_purge(struct sv_cm_id *id);
void sv_event_purge_mc(struct sv_cm_id *id, struct sv_cm_mc *mc);
/* Sync ids: fetch the next event of the private channel into id->event
 * (acking the previous one) and turn a failure status into -1/errno, as
 * rdma-core's ucma_complete does.  Called without the lock. */
int sv_cm_sync_complete(struct sv_cm_id *id);
/* Sync ids: whether an event is queued on the private channel. */
bool sv_cm_sync_pending(struct sv_cm_id *id);

/* ---- state.c: the id's state machine ----------------------------------- */

const char *sv_cm_state_name(enum sv_cm_state s);
/* Whether the table lets an id go from one state to the other. */
bool sv_cm_state_may(enum sv_cm_state from, enum sv_cm_state to);
/* The only way id->state changes (lock held).  A transition the table does
 * not have is logged with both states' names; a debug build aborts, a
 * release build keeps the old state and returns false (see state.c). */
bool sv_cm_id_set_state(struct sv_cm_id *id, enum sv_cm_state to);

/* ---- id.c -------------------------------------------------------------- */

struct sv_cm_id *sv_id_alloc(struct rdma_event_channel *ch, void *context,
			     enum rdma_port_space ps, enum ibv_qp_type qpt);
void sv_id_free(struct sv_cm_id *id);
/* Free a child whose CONNECT_REQUEST was never delivered (lock held). */
void sv_id_destroy_unborn(struct sv_cm_id *id);
/* Fill id->route.path_rec from the id's addresses (lock held). */
int sv_id_set_path(struct sv_cm_id *id);
int sv_id_bind_sock(struct sv_cm_id *id, const struct sockaddr *addr);

/* ---- conn.c, conn_tcp.c, conn_mad.c: the connection protocol ---------- */

/* Progress thread entry points (lock held): conn_tcp.c's. */
void sv_conn_readable(struct sv_cm_sock *s);
void sv_conn_writable(struct sv_cm_sock *s);
void sv_conn_accept(struct sv_cm_sock *listener);
void sv_conn_timer(struct sv_cm_id *id, enum sv_cm_timer t);
void sv_conn_sock_timeout(struct sv_cm_sock *s);
/* rdma_destroy_id: tell the peer (REJ/DREQ) and drop the socket. */
void sv_conn_teardown(struct sv_cm_id *id);
/* Active side after the REP: send the RTU, become ESTABLISHED. */
int sv_conn_establish(struct sv_cm_id *id);
/* Private data limit for (port space, message type). */
int sv_cm_pdata_max(enum rdma_port_space ps, int type);

/* Standard mode: a MAD from QP1 at peer (gsi.c, lock held): conn_mad.c. */
struct sv_mad;
void sv_conn_mad(const struct sockaddr_storage *peer,
		 const struct sockaddr_storage *local, const struct sv_mad *m);

/* ---- gsi.c: IB CM MADs on QP1 (SOFTVERBS_ROCE=standard) --------------- */

/* The progress thread's epoll handle of the GSI completion channel. */
#define SV_GSI_HANDLE (UINT64_MAX - 1)
bool sv_gsi_mode(void);
/* Lock held.  0 or errno. */
int sv_gsi_start(void);
int sv_gsi_send(const struct sockaddr *peer, int gid_index,
		const struct sv_mad *m);
void sv_gsi_readable(void);
/* A SV_SOCK_MAD socket has datagrams. */
void sv_gsi_sock_readable(struct sv_cm_sock *s);
/* The endpoint number in our comm IDs (proto/mad.h); after sv_gsi_start. */
uint16_t sv_gsi_endpoint(void);
/* A listener takes the REQs of its service (0 or errno: EADDRINUSE when
 * another process of the namespace listens there), and gives them up. */
int sv_gsi_listen(struct sv_cm_id *id);
void sv_gsi_unlisten(struct sv_cm_id *id);
/* Wait at most ms for the MADs posted so far to leave (process exit). */
void sv_gsi_drain(int ms);

/* ---- qp.c -------------------------------------------------------------- */

int sv_qp_to_rtr_rts(struct sv_cm_id *id, int resp_res, int init_depth);
int sv_qp_to_err(struct sv_cm_id *id);
void sv_cm_fill_ah(struct sv_cm_id *id, struct ibv_ah_attr *ah);

/* ---- mcast.c: multicast ---------------------------------------------------- */

void sv_mc_leave_all(struct sv_cm_id *id);
int sv_mc_process_join(struct sv_cm_event *e);

#endif
