/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets (rsocket(7)) for softverbs: the objects shared by rs_core.c
 * (descriptors, options, connection set-up), rs_stream.c (the stream data
 * path), rs_dgram.c (datagrams) and rs_poll.c (rpoll, rselect).
 *
 * Everything is built on the public librdmacm/verbs API, as rdma-core's
 * librdmacm/rsocket.c is.  Our wire protocol only ever talks to itself, but
 * it keeps rdma-core's design:
 *
 *   - connection set-up: an RDMA_PS_TCP rdma_cm connection whose private
 *     data (struct rs_conn_data) carries a version, the receive credits the
 *     side has posted, its receive buffer (address, rkey, size) and its
 *     iomap table (address, count);
 *   - data: the sender RDMA-WRITEs into the peer's receive ring, with
 *     immediate data whose top 3 bits are an opcode and whose low 29 bits
 *     carry the length (RS_OP_DATA) or a counter;
 *   - flow control: every message with immediate data consumes one receive
 *     WQE at the peer, so a sender may send only while the peer has receives
 *     posted that it has not used up (RS_OP_CREDIT reports the peer's count
 *     of receives posted), and may write only into ring space the reader has
 *     freed (RS_OP_FREE reports the bytes consumed).  Both counters travel
 *     modulo 2^29; what is outstanding is always far smaller, so the full
 *     counter is rebuilt exactly on the other side;
 *   - RS_OP_SHUTDOWN is the in-band end of stream (rshutdown SHUT_WR),
 *     ordered after all data;
 *   - riomap: the mapping's (offset, address, rkey, length) is RDMA-written
 *     into the peer's iomap table; riowrite RDMA-WRITEs without immediate
 *     data (no completion at the target, as rdma-core's riowrite).
 *
 * Locking: one mutex per rsocket (rs->lock) guards all of its state, as
 * rdma-core's per-socket locks do; the table of descriptors has its own
 * lock.  A thread that must wait drops rs->lock: one waiter at a time
 * sleeps in poll() on the socket's descriptors (rs->poller), the others on
 * rs->cond; whoever reaps completions broadcasts rs->cond and kicks the
 * poller through rs->wake_fd.
 */
#ifndef SV_CM_RS_H
#define SV_CM_RS_H

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "util/list.h"
#include "util/lockorder.h"

/* Walk a list (no removal on the way). */
#define rs_list_for_each(h, it) \
	for ((it) = (h)->n.next; (it) != &(h)->n; (it) = (it)->next)

/* rdma-core's defaults (librdmacm/rsocket.c: def_inline, def_sqsize,
 * def_rqsize, def_mem, def_wmem, def_iomap_size, RS_QP_MIN_SIZE,
 * RS_QP_MAX_SIZE, RS_MAX_TRANSFER, RS_SNDLOWAT). */
#define RS_DEF_INLINE 64
#define RS_DEF_SQSIZE 384
#define RS_DEF_RQSIZE 384
#define RS_DEF_MEM (1u << 17)
#define RS_DEF_WMEM (1u << 17)
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_MAX_TRANSFER 65536
#define RS_SNDLOWAT 2048
/* Our own bounds: the ring must hold two maximal writes, and the ring's
 * counters travel modulo 2^29 (RS_VAL_MASK). */
#define RS_MIN_BUF (2 * RS_MAX_TRANSFER)
#define RS_MAX_BUF (64u << 20)
#define RS_MAX_IOMAP 256

/* Immediate data: opcode in bits 31..29, value in 28..0. */
#define RS_OP_SHIFT 29
#define RS_VAL_MASK ((1u << RS_OP_SHIFT) - 1)
enum rs_op {
	RS_OP_DATA = 0, /* value: bytes written into the ring */
	RS_OP_CREDIT = 1, /* value: receives posted, total (mod 2^29) */
	RS_OP_FREE = 2, /* value: ring bytes consumed, total (mod 2^29) */
	RS_OP_SHUTDOWN = 3, /* the sender will write no more */
};

#define RS_VERSION 1
#define RS_CTRL_RESERVE 2 /* receive credits kept for control messages */

/* Connection private data (fits the 56 bytes of an RDMA_PS_TCP REQ). */
struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits; /* receives posted, big endian */
	uint16_t iomap_count; /* entries in the iomap table, big endian */
	uint16_t reserved;
	uint32_t rbuf_size; /* big endian */
	uint32_t rkey; /* of rbuf and the iomap table, big endian */
	uint64_t rbuf_addr; /* big endian */
	uint64_t iomap_addr; /* big endian */
} __attribute__((packed));

/* One entry of an iomap table (written by the peer's riomap). */
struct rs_iomap_ent {
	uint64_t offset;
	uint64_t addr;
	uint32_t rkey;
	uint32_t length; /* 0: slot unused */
};

/* A local mapping made by riomap. */
struct rs_iomap_local {
	struct list_node node;
	struct ibv_mr *mr;
	uint64_t offset;
	int index; /* slot in the peer's table; -1: not remote-writable */
	bool sent; /* written into the peer's table */
};

enum rs_state {
	RS_INIT,
	RS_BOUND,
	RS_LISTENING,
	RS_RESOLVING_ADDR,
	RS_RESOLVING_ROUTE,
	RS_CONNECTING, /* REQ sent */
	RS_ACCEPTING, /* passive: accepted, RTU not yet seen */
	RS_CONNECTED,
	RS_ERROR, /* connect failed (rs->err) or the connection broke */
};

/* Datagram destinations (rs_dgram.c). */
struct rs_dest {
	struct list_node node;
	struct sockaddr_storage addr; /* remote rsocket's UDP address */
	struct sockaddr_storage src; /* our address towards it */
	uint32_t qpn; /* 0: not learned yet, datagrams go by UDP */
	struct ibv_ah *ah;
	bool udp_only; /* a datagram above the UD MTU went by UDP */
};

struct rsocket {
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	int domain;
	int fd; /* the descriptor the application sees */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int wake_fd; /* eventfd: wakes the thread in poll() */
	bool poller; /* a thread sleeps in poll() for this socket */
	bool cq_armed;
	enum rs_state state;
	int err; /* SO_ERROR */
	int fd_flags; /* rfcntl F_GETFL/F_SETFL */

	/* options */
	uint32_t sbuf_size, rbuf_size;
	uint32_t sq_size, rq_size, sq_inline;
	uint32_t iomap_size; /* RDMA_IOMAPSIZE: entries the peer may map */
	uint64_t so_opts, tcp_opts, ipv6_opts; /* bit per option on */
	int keepalive_time;
	void *route; /* RDMA_ROUTE (struct ibv_path_data[]) */
	size_t route_len;

	/* verbs resources (both types) */
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *sbuf;
	struct ibv_mr *smr;
	uint8_t *rmem; /* stream: ring + iomap table; dgram: receive slots */
	size_t rmem_len;
	struct ibv_mr *rmr;
	uint32_t sq_outstanding; /* send WRs not completed */

	/* ---- stream ---- */
	struct rdma_event_channel *ch; /* ch->fd is rs->fd */
	struct rdma_cm_id *id;
	struct sockaddr_storage peer; /* rconnect target / accepted peer */
	/* the peer's ring and iomap table */
	uint64_t p_rbuf_addr, p_iomap_addr;
	uint32_t p_rkey, p_rbuf_size, p_iomap_count;
	/* sending */
	uint64_t s_bytes; /* written into the peer's ring, total */
	uint64_t s_freed; /* of those, consumed by the peer (reported) */
	uint32_t s_msgs; /* messages with immediate data sent */
	uint32_t s_posted; /* the peer's receives posted (reported) */
	uint64_t sbuf_head, sbuf_tail; /* send buffer ring, bytes */
	/* receiving */
	uint64_t r_bytes; /* arrived in our ring, total */
	uint64_t r_consumed, r_consumed_rep; /* consumed; last reported */
	uint32_t r_msgs; /* receive completions */
	uint32_t r_posted, r_posted_rep; /* receives posted; last reported */
	bool peer_eof; /* RS_OP_SHUTDOWN came */
	bool peer_gone; /* DISCONNECTED, or the QP broke */
	bool wr_shut, rd_shut;
	bool disconnected; /* we called rdma_disconnect */
	struct rs_iomap_ent *iomap; /* our table, written by the peer */
	struct list_head maps; /* rs_iomap_local */

	/* ---- datagram ---- */
	int udp; /* == fd */
	uint32_t qpn_local;
	uint32_t dg_max; /* largest payload */
	uint32_t dg_slot; /* size of one receive/send slot */
	struct list_head dests;
	struct rs_dest *conn_dest; /* rconnect */
	/* completed receive slots, in order (indices into rmem) */
	uint32_t *dq;
	uint32_t dq_head, dq_tail; /* dq_tail - dq_head: queued */
	uint32_t *dq_len;
	uint32_t ds_free; /* send slot ring: next slot */
	uint8_t *ubuf; /* one datagram read from the UDP socket */
};

/* ---- rs_core.c ---- */
struct rsocket *rs_lookup(int fd);
/* rs_epoll.c: rclose of a repoll instance (-1 EBADF if fd is none). */
int rs_repoll_close(int fd);
int rs_insert(struct rsocket *rs, int fd);
void rs_remove(struct rsocket *rs);
bool rs_nonblocking(const struct rsocket *rs, int flags);
/* Wait for progress (rs->lock held, dropped while asleep): EAGAIN when
 * nonblocking, EINTR on a signal, else 0 (the caller looks again).
 * extra_fd (or -1): one more descriptor to wake on. */
int rs_wait(struct rsocket *rs, bool nonblock, int extra_fd);
/* After completions were reaped: wake the others. */
void rs_kick(struct rsocket *rs);
/* Drain the completion channel (events acked, CQ disarmed). */
void rs_drain_cc(struct rsocket *rs);
/* Stream: run the connect state machine / CM events (lock held). */
int rs_do_connect(struct rsocket *rs, bool nonblock);
void rs_cm_events(struct rsocket *rs);

/* ---- rs_stream.c ---- */
int rs_stream_alloc_bufs(struct rsocket *rs);
void rs_stream_free_bufs(struct rsocket *rs);
void rs_stream_fill_conn(struct rsocket *rs, struct rs_conn_data *cd);
int rs_stream_set_peer(struct rsocket *rs, const void *pdata, uint8_t len);
int rs_stream_post_recvs(struct rsocket *rs);
void rs_stream_poll_cq(struct rsocket *rs);
bool rs_stream_readable(struct rsocket *rs);
bool rs_stream_writable(struct rsocket *rs);
ssize_t rs_stream_send(struct rsocket *rs, const struct iovec *iov, int iovcnt,
		       int flags);
ssize_t rs_stream_recv(struct rsocket *rs, const struct iovec *iov, int iovcnt,
		       int flags);
/* SHUT_WR's in-band end of stream; then (rdwr) wait for the sends and
 * disconnect.  Lock held. */
int rs_stream_shutdown(struct rsocket *rs, int how);
void rs_stream_send_iomaps(struct rsocket *rs);

/* ---- rs_dgram.c ---- */
int rs_dgram_open(struct rsocket *rs);
void rs_dgram_close(struct rsocket *rs);
int rs_dgram_bind(struct rsocket *rs, const struct sockaddr *addr,
		  socklen_t len);
int rs_dgram_connect(struct rsocket *rs, const struct sockaddr *addr,
		     socklen_t len);
ssize_t rs_dgram_sendto(struct rsocket *rs, const struct iovec *iov, int iovcnt,
			int flags, const struct sockaddr *dst, socklen_t dlen);
ssize_t rs_dgram_recvfrom(struct rsocket *rs, const struct iovec *iov,
			  int iovcnt, int flags, struct sockaddr *src,
			  socklen_t *slen);
void rs_dgram_poll_cq(struct rsocket *rs);
bool rs_dgram_readable(struct rsocket *rs);

/* helpers */
size_t rs_iov_len(const struct iovec *iov, int iovcnt);
/* Copy n bytes between a flat buffer and an iovec at byte offset off. */
void rs_iov_to_buf(void *dst, const struct iovec *iov, int iovcnt, size_t off,
		   size_t n);
void rs_buf_to_iov(const struct iovec *iov, int iovcnt, size_t off,
		   const void *src, size_t n);
socklen_t rs_copy_addr(struct sockaddr *dst, socklen_t *len,
		       const struct sockaddr *src);

#endif
