/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rsockets: descriptors, waiting, and the life of a socket (rsocket,
 * rbind, rlisten, raccept, rconnect, rshutdown, rclose, rgetpeername,
 * rgetsockname).  See rs.h for the design.
 *
 * A stream rsocket's descriptor is its rdma_cm event channel's fd, a
 * datagram rsocket's is its UDP socket, as in rdma-core: both are real
 * descriptors the process owns, so the numbers never collide with other
 * files, and librspreload (which maps its own descriptors onto ours) works
 * unchanged.
 */
#include "cm/cm.h"
#include "cm/rs.h"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* ---- the descriptor table ------------------------------------------------ */

static pthread_rwlock_t rs_table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct rsocket **rs_table;
static int rs_table_len;

struct rsocket *rs_lookup(int fd)
{
	struct rsocket *rs = NULL;

	if (fd < 0)
		return NULL;
	sv_rwlock_rdlock(&rs_table_lock, SV_LOCK_RS_TABLE);
	if (fd < rs_table_len)
		rs = rs_table[fd];
	sv_rwlock_unlock(&rs_table_lock);
	return rs;
}

int rs_insert(struct rsocket *rs, int fd)
{
	int ret = 0;

	sv_rwlock_wrlock(&rs_table_lock, SV_LOCK_RS_TABLE);
	if (fd >= rs_table_len) {
		int n = rs_table_len ? rs_table_len : 64;
		struct rsocket **t;

		while (n <= fd)
			n *= 2;
		t = realloc(rs_table, n * sizeof(*t));
		if (!t) {
			ret = ENOMEM;
			goto out;
		}
		memset(t + rs_table_len, 0, (n - rs_table_len) * sizeof(*t));
		rs_table = t;
		rs_table_len = n;
	}
	rs_table[fd] = rs;
	rs->fd = fd;
out:
	sv_rwlock_unlock(&rs_table_lock);
	return ret;
}

void rs_remove(struct rsocket *rs)
{
	sv_rwlock_wrlock(&rs_table_lock, SV_LOCK_RS_TABLE);
	if (rs->fd >= 0 && rs->fd < rs_table_len && rs_table[rs->fd] == rs)
		rs_table[rs->fd] = NULL;
	sv_rwlock_unlock(&rs_table_lock);
}

/* ---- helpers --------------------------------------------------------------- */

bool rs_nonblocking(const struct rsocket *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

size_t rs_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t n = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

void rs_iov_to_buf(void *dst, const struct iovec *iov, int iovcnt, size_t off,
		   size_t n)
{
	uint8_t *d = dst;
	int i;

	for (i = 0; i < iovcnt && n; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < n ? l - off : n;
		memcpy(d, (uint8_t *)iov[i].iov_base + off, k);
		d += k;
		n -= k;
		off = 0;
	}
}

void rs_buf_to_iov(const struct iovec *iov, int iovcnt, size_t off,
		   const void *src, size_t n)
{
	const uint8_t *s = src;
	int i;

	for (i = 0; i < iovcnt && n; i++) {
		size_t l = iov[i].iov_len, k;

		if (off >= l) {
			off -= l;
			continue;
		}
		k = l - off < n ? l - off : n;
		memcpy((uint8_t *)iov[i].iov_base + off, s, k);
		s += k;
		n -= k;
		off = 0;
	}
}

/* As getsockname(2): copy what fits, report the full length. */
socklen_t rs_copy_addr(struct sockaddr *dst, socklen_t *len,
		       const struct sockaddr *src)
{
	socklen_t full = src->sa_family == AF_INET6 ?
				 sizeof(struct sockaddr_in6) :
				 sizeof(struct sockaddr_in);
	socklen_t n = *len < full ? *len : full;

	memcpy(dst, src, n);
	*len = full;
	return full;
}

/* ---- waiting ----------------------------------------------------------------- */

void rs_drain_cc(struct rsocket *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cc)
		return;
	while (!ibv_get_cq_event(rs->cc, &cq, &ctx)) {
		ibv_ack_cq_events(cq, 1);
		rs->cq_armed = false;
	}
}

void rs_kick(struct rsocket *rs)
{
	uint64_t one = 1;

	pthread_cond_broadcast(&rs->cond);
	if (rs->poller && write(rs->wake_fd, &one, sizeof(one)) < 0) {
		/* the counter is full: the poller wakes anyway */
	}
}

static void rs_reap(struct rsocket *rs)
{
	if (rs->type == SOCK_STREAM)
		rs_stream_poll_cq(rs);
	else
		rs_dgram_poll_cq(rs);
}

int rs_wait(struct rsocket *rs, bool nonblock, int extra_fd)
{
	struct pollfd p[4];
	uint64_t v;
	int n = 0, r;

	if (nonblock)
		return EAGAIN;
	/* Arm first and look again: a completion that came before the arm
	 * is seen by the caller's next look, one after it wakes us. */
	if (rs->cq && !rs->cq_armed) {
		ibv_req_notify_cq(rs->cq, 0);
		rs->cq_armed = true;
		return 0;
	}
	if (rs->poller) {
		sv_cond_wait(&rs->cond, &rs->lock);
		return 0;
	}
	if (rs->cc) {
		p[n].fd = rs->cc->fd;
		p[n++].events = POLLIN;
	}
	if (rs->ch) {
		p[n].fd = rs->ch->fd;
		p[n++].events = POLLIN;
	}
	if (extra_fd >= 0) {
		p[n].fd = extra_fd;
		p[n++].events = POLLIN;
	}
	p[n].fd = rs->wake_fd;
	p[n++].events = POLLIN;
	rs->poller = true;
	sv_mutex_unlock(&rs->lock);
	r = poll(p, n, -1);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	rs->poller = false;
	if (read(rs->wake_fd, &v, sizeof(v)) < 0) {
		/* nothing was written: fine */
	}
	rs_drain_cc(rs);
	if (rs->ch)
		rs_cm_events(rs);
	rs_reap(rs);
	pthread_cond_broadcast(&rs->cond);
	if (r < 0 && errno == EINTR)
		return EINTR;
	return 0;
}

/* ---- allocation ---------------------------------------------------------------- */

static struct rsocket *rs_alloc(const struct rsocket *parent, int type,
				int domain)
{
	struct rsocket *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = type;
	rs->domain = domain;
	rs->fd = -1;
	rs->udp = -1;
	rs->keepalive_time = 7200;
	list_head_init(&rs->maps);
	list_head_init(&rs->dests);
	if (parent) {
		/* rdma-core: an accepted socket inherits its listener's
		 * buffer and queue sizes and options. */
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->iomap_size = parent->iomap_size;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->ipv6_opts = parent->ipv6_opts;
		rs->keepalive_time = parent->keepalive_time;
	} else {
		rs->sbuf_size = RS_DEF_WMEM;
		rs->rbuf_size = RS_DEF_MEM;
		rs->sq_size = RS_DEF_SQSIZE;
		rs->rq_size = RS_DEF_RQSIZE;
		rs->sq_inline = RS_DEF_INLINE;
		rs->iomap_size = 0;
	}
	rs->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (rs->wake_fd < 0) {
		free(rs);
		return NULL;
	}
	pthread_mutex_init(&rs->lock, NULL);
	pthread_cond_init(&rs->cond, NULL);
	return rs;
}

static void rs_free(struct rsocket *rs)
{
	if (rs->type == SOCK_STREAM) {
		rs_stream_free_bufs(rs);
		if (rs->id)
			rdma_destroy_id(rs->id);
		if (rs->ch)
			rdma_destroy_event_channel(rs->ch);
	} else {
		rs_dgram_close(rs);
	}
	close(rs->wake_fd);
	free(rs->route);
	pthread_mutex_destroy(&rs->lock);
	pthread_cond_destroy(&rs->cond);
	free(rs);
}

/* A stream socket's CM side: its own event channel, nonblocking, so that
 * every wait is our poll() and rpoll can watch it. */
static int rs_stream_open(struct rsocket *rs, struct rdma_cm_id *id)
{
	int fl;

	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		return errno;
	fl = fcntl(rs->ch->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->ch->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	if (id) {
		if (rdma_migrate_id(id, rs->ch))
			return errno;
		id->context = rs;
		rs->id = id;
	} else if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP)) {
		return errno;
	}
	return 0;
}

/* ---- socket, bind, listen ------------------------------------------------------ */

SV_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct rsocket *rs;
	int ret;

	/* rdma-core: anything but plain SOCK_STREAM/TCP or SOCK_DGRAM/UDP
	 * is ENOTSUP -- including types with SOCK_NONBLOCK/SOCK_CLOEXEC
	 * or'ed in, which is what lets librspreload hand our own internal
	 * sockets (all SOCK_CLOEXEC) to the kernel.  AF_IB addressing is
	 * not supported by our rdma_cm. */
	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM) ||
	    (type == SOCK_STREAM && protocol && protocol != IPPROTO_TCP) ||
	    (type == SOCK_DGRAM && protocol && protocol != IPPROTO_UDP))
		return sv_cm_err(ENOTSUP);
	rs = rs_alloc(NULL, type, domain);
	if (!rs)
		return sv_cm_err(ENOMEM);
	if (type == SOCK_STREAM) {
		ret = rs_stream_open(rs, NULL);
		if (!ret)
			ret = rs_insert(rs, rs->ch->fd);
	} else {
		ret = rs_dgram_open(rs);
		if (!ret)
			ret = rs_insert(rs, rs->udp);
	}
	if (ret) {
		rs_free(rs);
		return sv_cm_err(ret);
	}
	return rs->fd;
}

static int rs_check_addr(const struct rsocket *rs, const struct sockaddr *addr,
			 socklen_t len)
{
	if (!addr)
		return EFAULT;
	if (addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return 0;
	if (addr->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return 0;
	if (len < sizeof(struct sockaddr_in))
		return EINVAL;
	return EAFNOSUPPORT;
}

SV_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return sv_cm_err(EBADF);
	ret = rs_check_addr(rs, addr, addrlen);
	if (ret)
		return sv_cm_err(ret);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_DGRAM) {
		ret = rs_dgram_bind(rs, addr, addrlen);
	} else if (rs->state != RS_INIT) {
		ret = EINVAL; /* bind(2): already bound */
	} else if (rdma_bind_addr(rs->id, (struct sockaddr *)addr)) {
		ret = errno;
	} else {
		rs->state = RS_BOUND;
	}
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

SV_EXPORT int rlisten(int socket, int backlog)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return sv_cm_err(EBADF);
	if (rs->type != SOCK_STREAM)
		return sv_cm_err(EOPNOTSUPP); /* listen(2) on UDP */
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->state == RS_LISTENING) {
		ret = 0; /* listen(2) again: only the backlog changes */
	} else if (rs->state != RS_INIT && rs->state != RS_BOUND) {
		ret = EINVAL;
	} else {
		if (rs->state == RS_INIT) {
			/* listen(2) on an unbound socket binds a port. */
			struct sockaddr_storage any;

			memset(&any, 0, sizeof(any));
			any.ss_family = rs->domain;
			if (rdma_bind_addr(rs->id, (struct sockaddr *)&any))
				ret = errno;
		}
		if (!ret && rdma_listen(rs->id, backlog > 0 ? backlog : 1))
			ret = errno;
		if (!ret)
			rs->state = RS_LISTENING;
	}
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

/* ---- stream connection set-up ----------------------------------------------------- */

/* The QP, its CQ and completion channel, the buffers (lock held). */
static int rs_create_ep(struct rsocket *rs)
{
	struct ibv_qp_init_attr qa;
	int fl, ret;

	if (rs->sq_size > RS_QP_MAX_SIZE)
		rs->sq_size = RS_QP_MAX_SIZE;
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > RS_QP_MAX_SIZE)
		rs->rq_size = RS_QP_MAX_SIZE;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;
	rs->verbs = rs->id->verbs;
	rs->pd = rs->id->pd;
	rs->cc = ibv_create_comp_channel(rs->verbs);
	if (!rs->cc)
		return errno;
	fl = fcntl(rs->cc->fd, F_GETFL);
	if (fl < 0 || fcntl(rs->cc->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return errno;
	rs->cq = ibv_create_cq(rs->verbs, rs->sq_size + rs->rq_size, rs, rs->cc,
			       0);
	if (!rs->cq)
		return errno;
	/* rdma_destroy_qp frees the CQ and channel it finds on the id. */
	rs->id->recv_cq_channel = rs->cc;
	rs->id->send_cq_channel = rs->cc;
	rs->id->recv_cq = rs->cq;
	rs->id->send_cq = rs->cq;
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = rs->sq_inline;
	qa.sq_sig_all = 1;
	if (rdma_create_qp(rs->id, rs->pd, &qa))
		return errno;
	rs->qp = rs->id->qp;
	/* What the device granted bounds what we inline. */
	if (rs->sq_inline > qa.cap.max_inline_data)
		rs->sq_inline = qa.cap.max_inline_data;
	ret = rs_stream_alloc_bufs(rs);
	if (!ret)
		ret = rs_stream_post_recvs(rs);
	return ret;
}

static int rs_conn_fail(struct rsocket *rs, int err)
{
	rs->state = RS_ERROR;
	rs->err = err;
	return err;
}

/* Handle one CM event while connecting; 0, or errno for a failure. */
static int rs_connect_event(struct rsocket *rs, struct rdma_cm_event *e)
{
	struct rdma_conn_param cp;
	struct rs_conn_data cd;
	int ret;

	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RS_RESOLVING_ADDR)
			return 0;
		rs->state = RS_RESOLVING_ROUTE;
		/* RDMA_ROUTE (rsocket(7)): the application's path. */
		if (rs->route && !rdma_set_option(rs->id, RDMA_OPTION_IB,
						  RDMA_OPTION_IB_PATH,
						  rs->route, rs->route_len))
			return 0;
		if (rdma_resolve_route(rs->id, 2000))
			return rs_conn_fail(rs, errno);
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state != RS_RESOLVING_ROUTE)
			return 0;
		ret = rs_create_ep(rs);
		if (ret)
			return rs_conn_fail(rs, ret);
		rs_stream_fill_conn(rs, &cd);
		memset(&cp, 0, sizeof(cp));
		cp.private_data = &cd;
		cp.private_data_len = sizeof(cd);
		cp.responder_resources = 1;
		cp.initiator_depth = 1;
		cp.retry_count = 7;
		cp.rnr_retry_count = 7;
		if (rdma_connect(rs->id, &cp))
			return rs_conn_fail(rs, errno);
		rs->state = RS_CONNECTING;
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state == RS_ACCEPTING) {
			rs->state = RS_CONNECTED;
			return 0;
		}
		if (rs->state != RS_CONNECTING)
			return 0;
		ret = rs_stream_set_peer(rs, e->param.conn.private_data,
					 e->param.conn.private_data_len);
		if (ret) {
			rdma_disconnect(rs->id);
			rs->disconnected = true;
			return rs_conn_fail(rs, ret);
		}
		rs->state = RS_CONNECTED;
		return 0;
	case RDMA_CM_EVENT_REJECTED:
		/* connect(2): nobody listens there. */
		return rs_conn_fail(rs, ECONNREFUSED);
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return rs_conn_fail(rs, e->status ? -e->status : EHOSTUNREACH);
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return rs_conn_fail(rs, e->status == -ETIMEDOUT ? ETIMEDOUT :
								  ECONNREFUSED);
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rs->peer_gone = true;
		if (rs->state < RS_CONNECTED || rs->state == RS_ACCEPTING)
			return rs_conn_fail(rs, ECONNRESET);
		return 0;
	default:
		return 0;
	}
}

/* Fetch and handle the CM events queued for the socket (lock held). */
void rs_cm_events(struct rsocket *rs)
{
	struct rdma_cm_event *e;

	if (!rs->ch || rs->state == RS_LISTENING)
		return;
	while (!rdma_get_cm_event(rs->ch, &e)) {
		struct rdma_cm_event copy = *e;
		uint8_t pd[256];

		if (copy.param.conn.private_data &&
		    copy.param.conn.private_data_len) {
			memcpy(pd, copy.param.conn.private_data,
			       copy.param.conn.private_data_len);
			copy.param.conn.private_data = pd;
		}
		rdma_ack_cm_event(e);
		rs_connect_event(rs, &copy);
	}
}

/* Drive a connection being set up: 0 once connected, else errno
 * (EINPROGRESS: nonblocking and not there yet). */
int rs_do_connect(struct rsocket *rs, bool nonblock)
{
	for (;;) {
		rs_cm_events(rs);
		if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING)
			return 0;
		if (rs->state == RS_ERROR)
			return rs->err ? rs->err : ECONNRESET;
		if (rs->state < RS_RESOLVING_ADDR)
			return ENOTCONN;
		if (nonblock)
			return EINPROGRESS;
		if (rs_wait(rs, false, -1) == EINTR)
			return EINTR;
	}
}

SV_EXPORT int rconnect(int socket, const struct sockaddr *addr,
		       socklen_t addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret;

	if (!rs)
		return sv_cm_err(EBADF);
	ret = rs_check_addr(rs, addr, addrlen);
	if (ret)
		return sv_cm_err(ret);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_DGRAM) {
		ret = rs_dgram_connect(rs, addr, addrlen);
		goto out;
	}
	switch (rs->state) {
	case RS_INIT:
	case RS_BOUND:
		memcpy(&rs->peer, addr, sv_cm_addrlen(addr));
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr,
				      2000)) {
			ret = errno;
			goto out;
		}
		rs->state = RS_RESOLVING_ADDR;
		ret = rs_do_connect(rs, rs_nonblocking(rs, 0));
		break;
	case RS_LISTENING:
		ret = EINVAL;
		break;
	case RS_CONNECTED:
	case RS_ACCEPTING:
		ret = EISCONN;
		break;
	case RS_ERROR:
		/* A failed connect(2) is reported once; the socket is
		 * then unusable (ECONNABORTED as Linux for a dead one). */
		ret = rs->err ? rs->err : ECONNABORTED;
		rs->err = 0;
		break;
	default:
		/* connect(2) again while one is in progress. */
		ret = rs_do_connect(rs, rs_nonblocking(rs, 0));
		if (ret == EINPROGRESS)
			ret = EALREADY;
		break;
	}
out:
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

/* Take one connection request off a listener: 0 and *out, or errno. */
static int rs_take_request(struct rsocket *ls, struct rsocket **out)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *e;
	struct rdma_cm_id *cid;
	struct rs_conn_data cd;
	struct rsocket *rs;
	uint8_t pdata[sizeof(struct rs_conn_data)];
	uint8_t plen;
	int ret;

	if (rdma_get_cm_event(ls->ch, &e))
		return errno;
	if (e->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		rdma_ack_cm_event(e);
		return EAGAIN;
	}
	cid = e->id;
	plen = e->param.conn.private_data_len < sizeof(pdata) ?
		       e->param.conn.private_data_len :
		       sizeof(pdata);
	memset(pdata, 0, sizeof(pdata));
	if (e->param.conn.private_data)
		memcpy(pdata, e->param.conn.private_data, plen);
	rdma_ack_cm_event(e);

	rs = rs_alloc(ls, SOCK_STREAM, ls->domain);
	if (!rs) {
		rdma_reject(cid, NULL, 0);
		rdma_destroy_id(cid);
		return ENOMEM;
	}
	ret = rs_stream_open(rs, cid);
	if (ret) {
		rdma_reject(cid, NULL, 0);
		if (!rs->id)
			rdma_destroy_id(cid);
		goto err;
	}
	ret = rs_stream_set_peer(rs, pdata, plen);
	if (ret) {
		/* Not one of ours (rsocket(7): both ends must be rsockets). */
		rdma_reject(cid, NULL, 0);
		goto err;
	}
	ret = rs_create_ep(rs);
	if (ret) {
		rdma_reject(cid, NULL, 0);
		goto err;
	}
	rs_stream_fill_conn(rs, &cd);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = &cd;
	cp.private_data_len = sizeof(cd);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	if (rdma_accept(cid, &cp)) {
		ret = errno;
		goto err;
	}
	memcpy(&rs->peer, rdma_get_peer_addr(cid),
	       sv_cm_addrlen(rdma_get_peer_addr(cid)));
	rs->state = RS_ACCEPTING;
	ret = rs_insert(rs, rs->ch->fd);
	if (ret)
		goto err;
	*out = rs;
	return 0;
err:
	rs_free(rs);
	return ret;
}

SV_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct rsocket *ls = rs_lookup(socket), *rs = NULL;
	int ret;

	if (!ls)
		return sv_cm_err(EBADF);
	if (ls->type != SOCK_STREAM)
		return sv_cm_err(EOPNOTSUPP);
	if (addr && !addrlen)
		return sv_cm_err(EFAULT);
	sv_mutex_lock(&ls->lock, SV_LOCK_RSOCKET);
	if (ls->state != RS_LISTENING) {
		ret = EINVAL; /* accept(2) on a socket not listening */
		goto out;
	}
	for (;;) {
		ret = rs_take_request(ls, &rs);
		if (ret != EAGAIN && ret != EWOULDBLOCK)
			break;
		if (rs_nonblocking(ls, 0))
			break;
		ret = rs_wait(ls, false, -1);
		if (ret)
			break;
	}
out:
	sv_mutex_unlock(&ls->lock);
	if (ret)
		return sv_cm_err(ret);
	if (addr)
		rs_copy_addr(addr, addrlen, (struct sockaddr *)&rs->peer);
	return rs->fd;
}

/* ---- shutdown, close ---------------------------------------------------------------- */

SV_EXPORT int rshutdown(int socket, int how)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return sv_cm_err(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return sv_cm_err(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return shutdown(rs->udp, how);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->state == RS_CONNECTING || rs->state == RS_RESOLVING_ADDR ||
	    rs->state == RS_RESOLVING_ROUTE)
		rs_do_connect(rs, rs_nonblocking(rs, 0));
	if (rs->state != RS_CONNECTED && rs->state != RS_ACCEPTING &&
	    !(rs->state == RS_ERROR && rs->p_rbuf_size))
		ret = ENOTCONN;
	else
		ret = rs_stream_shutdown(rs, how);
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

/* Refuse the requests still queued on a listener that closes. */
static void rs_reject_pending(struct rsocket *ls)
{
	struct rdma_cm_event *e;

	while (!rdma_get_cm_event(ls->ch, &e)) {
		struct rdma_cm_id *cid = NULL;

		if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			cid = e->id;
		rdma_ack_cm_event(e);
		if (cid) {
			rdma_reject(cid, NULL, 0);
			rdma_destroy_id(cid);
		}
	}
}

SV_EXPORT int rclose(int socket)
{
	struct rsocket *rs = rs_lookup(socket);

	if (!rs)
		return rs_repoll_close(socket); /* or EBADF */
	rs_remove(rs);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->type == SOCK_STREAM) {
		if (rs->state == RS_LISTENING)
			rs_reject_pending(rs);
		else if ((rs->state == RS_CONNECTED ||
			  rs->state == RS_ACCEPTING) &&
			 !rs->disconnected)
			rs_stream_shutdown(rs, SHUT_RDWR);
	}
	sv_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

/* ---- names ---------------------------------------------------------------------- */

SV_EXPORT int rgetpeername(int socket, struct sockaddr *addr,
			   socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	int ret = 0;

	if (!rs)
		return sv_cm_err(EBADF);
	if (!addr || !addrlen)
		return sv_cm_err(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->udp, addr, addrlen);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	if (rs->state == RS_CONNECTED || rs->state == RS_ACCEPTING ||
	    rs->state == RS_CONNECTING)
		rs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id));
	else
		ret = ENOTCONN;
	sv_mutex_unlock(&rs->lock);
	return ret ? sv_cm_err(ret) : 0;
}

SV_EXPORT int rgetsockname(int socket, struct sockaddr *addr,
			   socklen_t *addrlen)
{
	struct rsocket *rs = rs_lookup(socket);
	struct sockaddr_storage any;
	struct sockaddr *src;

	if (!rs)
		return sv_cm_err(EBADF);
	if (!addr || !addrlen)
		return sv_cm_err(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->udp, addr, addrlen);
	sv_mutex_lock(&rs->lock, SV_LOCK_RSOCKET);
	src = rdma_get_local_addr(rs->id);
	if (rs->state == RS_INIT || !src->sa_family) {
		/* getsockname(2) of an unbound socket: the wildcard. */
		memset(&any, 0, sizeof(any));
		any.ss_family = rs->domain;
		src = (struct sockaddr *)&any;
	}
	rs_copy_addr(addr, addrlen, src);
	sv_mutex_unlock(&rs->lock);
	return 0;
}
