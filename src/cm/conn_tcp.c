/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CM's messages over TCP (the default carrier): one TCP connection
 * per CM connection; the active side's REQ leaves as soon as TCP
 * connects, and the passive side's first message on an accepted
 * connection is the REQ for its listener.
 *
 * What the kernel's CM would only learn from timeouts, TCP tells at once:
 * connecting where nobody listens is refused (REJECTED with the IB CM's
 * "invalid service ID" reason, as a RoCE peer's CM answers, once the
 * retries of SV_CM_REFUSED_RETRIES found nobody either), and a peer
 * that dies closes its sockets (DISCONNECTED, or UNREACHABLE while the
 * connection is being set up).
 */
#include "cm/conn.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"

/* A message is well-formed before any state looks at it. */
static bool msg_valid(const struct sv_cm_wire *m)
{
	if (m->version != SV_CM_WIRE_VERSION ||
	    be16toh(m->hdr_len) != sizeof(*m) || m->type == 0 ||
	    m->type >= SV_CM_MSG_MAX)
		return false;
	return m->pdata_len <= sv_cm_pdata_max(RDMA_PS_IB, m->type);
}

static void sock_tune(int fd)
{
	int one = 1, idle = 10, intvl = 5, cnt = 3;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* A peer host that vanishes without closing is found in ~25 s. */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* ---- passive side: requests ----------------------------------------------------- */

static int sock_addrs(int fd, struct sockaddr_storage *local,
		      struct sockaddr_storage *peer)
{
	socklen_t l1 = sizeof(*local), l2 = sizeof(*peer);

	memset(local, 0, sizeof(*local));
	memset(peer, 0, sizeof(*peer));
	if (getsockname(fd, (struct sockaddr *)local, &l1) ||
	    getpeername(fd, (struct sockaddr *)peer, &l2))
		return errno;
	sv_cm_addr_unmap(local);
	sv_cm_addr_unmap(peer);
	return 0;
}

static void bare_reject(struct sv_cm_sock *s, enum rdma_port_space ps, bool ud,
			int reason)
{
	struct sv_cm_wire m;

	sv_conn_msg_init(&m, NULL, ud ? SV_CM_MSG_SIDR_REP : SV_CM_MSG_REJ);
	m.port_space = htobe32(ps);
	m.reason = htobe16(reason);
	sv_sock_send(s, &m);
	sv_sock_orphan(s);
}

/* The first message on an accepted connection: a REQ for the listener. */
static void req_received(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	struct sv_cm_id *ls = s->listener, *id;
	int want = sv_conn_is_ud(ls) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
	struct sockaddr_storage local, peer;

	/* The IB service ID carries the port space: another space, or the
	 * other kind of request, is a service nobody listens for. */
	if (m->type != want || be32toh(m->port_space) != ls->id.ps ||
	    m->pdata_len > sv_cm_pdata_max(ls->id.ps, want)) {
		bare_reject(s, ls->id.ps, want == SV_CM_MSG_SIDR_REQ,
			    want == SV_CM_MSG_SIDR_REQ ?
				    SV_SIDR_UNSUPPORTED :
				    SV_REJ_INVALID_SERVICE_ID);
		return;
	}
	/* The listen backlog bounds the requests the application has not
	 * taken yet (the kernel's rdma_cm does the same). */
	if (ls->pending_reqs >= ls->backlog) {
		bare_reject(s, ls->id.ps, sv_conn_is_ud(ls),
			    want == SV_CM_MSG_SIDR_REQ ? SV_SIDR_REJECT :
							 SV_REJ_NO_RESOURCES);
		return;
	}
	if (sock_addrs(s->fd, &local, &peer)) {
		sv_sock_close(s);
		return;
	}
	id = sv_id_alloc(ls->sync ? NULL : ls->id.channel, ls->id.context,
			 ls->id.ps, ls->id.qp_type);
	if (!id) {
		bare_reject(s, ls->id.ps, sv_conn_is_ud(ls),
			    SV_REJ_NO_RESOURCES);
		return;
	}
	s->listener = NULL;
	s->deadline_ms = 0;
	s->id = id;
	id->sock = s;
	sv_conn_req_deliver(ls, id, m, &local, &peer);
}

void sv_conn_accept(struct sv_cm_sock *ls)
{
	for (;;) {
		struct sv_cm_sock *s;
		int fd = accept4(ls->fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				sv_cm_log("accept: %s", strerror(errno));
			return;
		}
		s = sv_sock_new(fd, SV_SOCK_CONN);
		if (!s) {
			close(fd);
			continue;
		}
		sock_tune(fd);
		s->listener = ls->id;
		s->deadline_ms = sv_now_ms() + SV_CM_REQ_WAIT_MS;
		sv_sock_want(s, EPOLLIN);
		sv_cm_wake();
	}
}

void sv_conn_sock_timeout(struct sv_cm_sock *s)
{
	if (s->listener)
		sv_sock_close(s); /* no REQ came */
}

/* Connecting failed at the TCP level: nobody listens there (the peer's
 * CM would have rejected the unknown service ID), or no way to it. */
static void connect_failed(struct sv_cm_id *id, int err)
{
	sv_cm_log("id %p: connect from port %u to port %u: %s", (void *)id,
		  sv_cm_port_of(&id->id.route.addr.src_addr),
		  sv_cm_port_of(&id->id.route.addr.dst_addr), strerror(err));
	if (err == ECONNREFUSED) {
		if (sv_conn_is_ud(id))
			sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE,
				     SV_SIDR_UNSUPPORTED, NULL, 0, false);
		else
			sv_conn_fail(id, RDMA_CM_EVENT_REJECTED,
				     SV_REJ_INVALID_SERVICE_ID, NULL, 0, false);
		return;
	}
	sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, -err, NULL, 0, false);
}

static void conn_lost(struct sv_cm_sock *s, int err)
{
	struct sv_cm_id *id = s->id;

	s->dead = true;
	if (!id) {
		sv_sock_close(s);
		return;
	}
	switch (id->state) {
	case SV_CM_CONNECT:
	case SV_CM_REP_SENT:
		sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, -err, NULL, 0,
			     false);
		break;
	case SV_CM_REQ_RCVD:
	case SV_CM_REP_RCVD:
		/* Reported when the application goes on (accept/establish). */
		id->peer_gone = true;
		sv_conn_drop_sock(id, false);
		break;
	case SV_CM_ESTABLISHED:
		if (sv_conn_is_ud(id)) {
			sv_conn_drop_sock(id, false);
			break;
		}
		/* fall through */
	case SV_CM_DREQ_SENT:
		sv_conn_disconnected(id, 0, false);
		break;
	default:
		sv_conn_drop_sock(id, false);
		break;
	}
}

/* Returns true when the socket is no longer the id's (closed, orphaned). */
static bool conn_msg(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	int r;

	if (!msg_valid(m)) {
		conn_lost(s, EPROTO);
		return true;
	}
	if (s->listener) {
		req_received(s, m);
		return true;
	}
	if (!s->id)
		return false;
	r = sv_conn_id_msg(s->id, m);
	if (r < 0)
		conn_lost(s, EPROTO);
	return r != 0;
}

void sv_conn_readable(struct sv_cm_sock *s)
{
	for (;;) {
		ssize_t n = recv(s->fd, s->rbuf + s->rlen,
				 sizeof(s->rbuf) - s->rlen, MSG_DONTWAIT);

		if (n > 0) {
			struct sv_cm_wire m;

			s->rlen += (size_t)n;
			if (s->rlen < sizeof(s->rbuf))
				continue;
			memcpy(&m, s->rbuf, sizeof(m));
			s->rlen = 0;
			if (conn_msg(s, &m))
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (s->listener) {
			sv_sock_close(s);
			return;
		}
		conn_lost(s, n == 0 ? ECONNRESET : errno);
		return;
	}
}

/* A refused connect: true if it is to be tried again (the timer does),
 * false once SV_CM_REFUSED_RETRIES are spent. */
static bool retry_refused(struct sv_cm_id *id, struct sv_cm_sock *s)
{
	if (id->state != SV_CM_CONNECT || id->refusals >= SV_CM_REFUSED_RETRIES)
		return false;
	sv_dbg("cm: connect to port %u refused: again in %u ms (%d of %d)",
	       sv_cm_port_of(&id->id.route.addr.dst_addr), 1u << id->refusals,
	       id->refusals + 1, SV_CM_REFUSED_RETRIES);
	/* Out of the epoll set (a closed TCP socket reports HUP) until
	 * the timer connects it again. */
	s->connecting = true;
	s->parked = true;
	sv_sock_want(s, 0);
	sv_cm_timer_set(id, SV_TIMER_RECONNECT, 1u << id->refusals++);
	return true;
}

/* connect() (again), nonblocking: 0 or errno. */
static int start_connect(struct sv_cm_id *id, struct sv_cm_sock *s)
{
	struct rdma_cm_id *cmid = &id->id;

	if (s->parked) {
		/* A refused socket connects again once disconnected
		 * (AF_UNSPEC); its bound port stays. */
		struct sockaddr unspec = { .sa_family = AF_UNSPEC };

		connect(s->fd, &unspec, sizeof(unspec));
		s->parked = false;
	}
	if (connect(s->fd, &cmid->route.addr.dst_addr,
		    sv_cm_addrlen(&cmid->route.addr.dst_addr)) == 0) {
		s->connecting = false;
		sock_tune(s->fd);
		return sv_sock_kick(s);
	}
	/* On loopback the refusal may come back before connect() does. */
	if (errno == ECONNREFUSED && retry_refused(id, s))
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	s->connecting = true;
	sv_sock_want(s, EPOLLIN | EPOLLOUT);
	return 0;
}

void sv_conn_writable(struct sv_cm_sock *s)
{
	struct sv_cm_id *id = s->id;
	socklen_t len = sizeof(int);
	int err = 0;

	/* The nonblocking connect() finished: SO_ERROR says how. */
	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err == ECONNREFUSED && id && retry_refused(id, s))
		return;
	s->connecting = false;
	if (!err) {
		sock_tune(s->fd);
		err = sv_sock_kick(s); /* the queued REQ goes out */
	}
	if (!err)
		return;
	s->dead = true;
	if (id && id->state == SV_CM_CONNECT)
		connect_failed(id, err);
	else
		sv_sock_close(s);
}

/* rdma_connect's REQ over TCP: connect, the REQ queued behind it. */
void sv_conn_tcp_connect(struct sv_cm_id *id, const struct sv_cm_wire *req)
{
	struct sv_cm_sock *s = id->sock;
	int err;

	s->kind = SV_SOCK_CONN;
	sv_cm_id_set_state(id, SV_CM_CONNECT);
	sv_cm_timer_set(id, SV_TIMER_REP, SV_CM_REP_TIMEOUT_MS);
	err = start_connect(id, s);
	if (err) {
		/* Reported as the kernel would: by an event, not the call. */
		connect_failed(id, err);
		return;
	}
	if (sv_sock_send(s, req))
		connect_failed(id, ECONNRESET);
}

/* The timer after a refused connect: connect again. */
void sv_conn_tcp_reconnect(struct sv_cm_id *id)
{
	int err;

	if (id->state != SV_CM_CONNECT || !id->sock)
		return;
	sv_cm_timer_set(id, SV_TIMER_REP, SV_CM_REP_TIMEOUT_MS);
	err = start_connect(id, id->sock);
	if (err) {
		id->sock->dead = true;
		connect_failed(id, err);
	}
}

/* A listener going away: the requests in flight meet nobody. */
void sv_conn_tcp_unlisten(struct sv_cm_id *ls)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&sv_cm.socks, it, tmp) {
		struct sv_cm_sock *s = list_entry(it, struct sv_cm_sock, node);

		if (s->listener == ls)
			bare_reject(s, ls->id.ps, sv_conn_is_ud(ls),
				    sv_conn_is_ud(ls) ?
					    SV_SIDR_UNSUPPORTED :
					    SV_REJ_INVALID_SERVICE_ID);
	}
}
