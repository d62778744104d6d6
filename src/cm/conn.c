/*
 * The connection protocol: rdma_connect, rdma_accept, rdma_reject,
 * rdma_establish, rdma_disconnect, rdma_notify, and the progress thread's
 * handling of CM connections (accept, connect completion, messages, loss,
 * timers).
 *
 * Both sides follow the IB CM's state machine (IBA chapter 12) on one TCP
 * connection: the active side sends a REQ as soon as TCP connects; the
 * passive side reports CONNECT_REQUEST and answers rdma_accept with a REP
 * (or rdma_reject with a REJ); the active side reports CONNECT_RESPONSE
 * (turned into ESTABLISHED by rdma_get_cm_event when the id has a QP) and
 * sends the RTU, on which the passive side reports ESTABLISHED.  DREQ/DREP
 * release the connection; each side reports DISCONNECTED once, then
 * TIMEWAIT_EXIT.  UD ids run the SIDR REQ/REP exchange instead.
 *
 * What the kernel's CM would only learn from timeouts, TCP tells at once:
 * connecting where nobody listens is refused (REJECTED with the IB CM's
 * "invalid service ID" reason, as a RoCE peer's CM answers), and a peer
 * that dies closes its sockets (DISCONNECTED, or UNREACHABLE while the
 * connection is being set up).
 */
#include "cm/cm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int sv_cm_pdata_max(enum rdma_port_space ps, int type)
{
	int hdr = ps == RDMA_PS_IB ? 0 : SV_CMA_HDR_LEN;

	switch (type) {
	case SV_CM_MSG_REQ:
		return SV_IB_REQ_PDATA - hdr;
	case SV_CM_MSG_SIDR_REQ:
		return SV_IB_SIDR_REQ_PDATA - hdr;
	case SV_CM_MSG_REP:
		return SV_IB_REP_PDATA;
	case SV_CM_MSG_REJ:
		return SV_IB_REJ_PDATA;
	case SV_CM_MSG_RTU:
		return SV_IB_RTU_PDATA;
	case SV_CM_MSG_DREQ:
		return SV_IB_DREQ_PDATA;
	case SV_CM_MSG_DREP:
		return SV_IB_DREP_PDATA;
	case SV_CM_MSG_SIDR_REP:
		return SV_IB_SIDR_REP_PDATA;
	default:
		return 0;
	}
}

static bool is_ud(const struct sv_cm_id *id)
{
	return id->id.qp_type == IBV_QPT_UD;
}

/* ---- messages -------------------------------------------------------------- */

static void msg_init(struct sv_cm_wire *m, const struct sv_cm_id *id, int type)
{
	memset(m, 0, sizeof(*m));
	m->version = SV_CM_WIRE_VERSION;
	m->type = type;
	m->hdr_len = htobe16(sizeof(*m));
	if (id) {
		m->port_space = htobe32(id->id.ps);
		memcpy(m->gid, id->id.route.addr.addr.ibaddr.sgid.raw, 16);
		if (id->local_ece.vendor_id) {
			m->flags |= SV_CM_F_ECE;
			m->ece_vendor = htobe32(id->local_ece.vendor_id);
			m->ece_options = htobe32(id->local_ece.options);
		}
	}
}

/* Private data: a prefix (rdma_getaddrinfo's ai_connect) then the user's. */
static void msg_pdata(struct sv_cm_wire *m, const void *a, size_t alen,
		      const void *b, size_t blen)
{
	if (a && alen)
		memcpy(m->pdata, a, alen);
	else
		alen = 0;
	if (b && blen)
		memcpy(m->pdata + alen, b, blen);
	else
		blen = 0;
	m->pdata_len = (uint8_t)(alen + blen);
}

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

/* Send a message; on failure the caller sees errno (the loss itself is
 * reported when the socket's EOF/error is read). */
static int id_send(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	if (!id->sock || id->peer_gone)
		return ECONNRESET;
	return sv_sock_send(id->sock, m);
}

/* Tell the peer no (REJ, or a SIDR_REP with a status for UD ids). */
static void send_rej(struct sv_cm_id *id, int reason, const void *pdata,
		     uint8_t len)
{
	struct sv_cm_wire m;

	msg_init(&m, id, is_ud(id) ? SV_CM_MSG_SIDR_REP : SV_CM_MSG_REJ);
	m.reason = htobe16(reason);
	msg_pdata(&m, NULL, 0, pdata, len);
	id_send(id, &m);
}

static void drop_sock(struct sv_cm_id *id, bool linger)
{
	if (!id->sock)
		return;
	if (linger)
		sv_sock_orphan(id->sock);
	else
		sv_sock_close(id->sock);
	id->sock = NULL;
}

/* ---- events ----------------------------------------------------------------- */

/* An event carrying a message's private data, reported (as the IB CM
 * does) with the full size of that message's private data field. */
static struct sv_cm_event *msg_event(struct sv_cm_id *id, int type, int status,
				     const struct sv_cm_wire *m, int report_len)
{
	struct sv_cm_event *e = sv_event_new(id, type, status);

	if (!e)
		return NULL;
	if (m && report_len) {
		if (report_len > SV_CM_PDATA_MAX)
			report_len = SV_CM_PDATA_MAX;
		memcpy(e->pdata, m->pdata,
		       m->pdata_len < report_len ? m->pdata_len : report_len);
		if (is_ud(id)) {
			e->ev.param.ud.private_data = e->pdata;
			e->ev.param.ud.private_data_len = report_len;
		} else {
			e->ev.param.conn.private_data = e->pdata;
			e->ev.param.conn.private_data_len = report_len;
		}
	}
	return e;
}

static void fail(struct sv_cm_id *id, int type, int status,
		 const struct sv_cm_wire *m, int report_len, bool linger)
{
	struct sv_cm_event *e = msg_event(id, type, status, m, report_len);

	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_FAILED);
	drop_sock(id, linger);
	if (e)
		sv_event_queue(id, e);
}

static void disconnected(struct sv_cm_id *id, int status, bool linger)
{
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_DISCONNECTED);
	drop_sock(id, linger);
	sv_event_post(id, RDMA_CM_EVENT_DISCONNECTED, status);
	sv_cm_timer_set(id, SV_TIMER_TIMEWAIT, SV_CM_TIMEWAIT_MS);
}

/* The peer's DREQ: answered at once, reported after the grace period. */
static void dreq_received(struct sv_cm_id *id)
{
	struct sv_cm_wire r;

	msg_init(&r, id, SV_CM_MSG_DREP);
	id_send(id, &r);
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_DISCONNECTED);
	drop_sock(id, true);
	sv_cm_timer_set(id, SV_TIMER_DREQ_GRACE, SV_CM_DREQ_GRACE_MS);
}

/* Connecting failed at the TCP level: nobody listens there (the peer's
 * CM would have rejected the unknown service ID), or no way to it. */
static void connect_failed(struct sv_cm_id *id, int err)
{
	sv_cm_log("id %p: connect from port %u to port %u: %s", (void *)id,
		  sv_cm_port_of(&id->id.route.addr.src_addr),
		  sv_cm_port_of(&id->id.route.addr.dst_addr), strerror(err));
	if (err == ECONNREFUSED) {
		if (is_ud(id))
			fail(id, RDMA_CM_EVENT_UNREACHABLE, SV_SIDR_UNSUPPORTED,
			     NULL, 0, false);
		else
			fail(id, RDMA_CM_EVENT_REJECTED,
			     SV_REJ_INVALID_SERVICE_ID, NULL, 0, false);
		return;
	}
	fail(id, RDMA_CM_EVENT_UNREACHABLE, -err, NULL, 0, false);
}

/* The CM connection ended without a CM message saying so. */
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
		fail(id, RDMA_CM_EVENT_UNREACHABLE, -err, NULL, 0, false);
		break;
	case SV_CM_REQ_RCVD:
	case SV_CM_REP_RCVD:
		/* Reported when the application goes on (accept/establish). */
		id->peer_gone = true;
		drop_sock(id, false);
		break;
	case SV_CM_ESTABLISHED:
		if (is_ud(id)) {
			drop_sock(id, false);
			break;
		}
		/* fall through */
	case SV_CM_DREQ_SENT:
		disconnected(id, 0, false);
		break;
	default:
		drop_sock(id, false);
		break;
	}
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

	msg_init(&m, NULL, ud ? SV_CM_MSG_SIDR_REP : SV_CM_MSG_REJ);
	m.port_space = htobe32(ps);
	m.reason = htobe16(reason);
	sv_sock_send(s, &m);
	sv_sock_orphan(s);
}

/* The first message on an accepted connection: a REQ for the listener. */
static void req_received(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	struct sv_cm_id *ls = s->listener, *id;
	int want = is_ud(ls) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
	struct sockaddr_storage local, peer;
	struct sv_cm_event *e;

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
		bare_reject(s, ls->id.ps, is_ud(ls),
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
		bare_reject(s, ls->id.ps, is_ud(ls), SV_REJ_NO_RESOURCES);
		return;
	}
	s->listener = NULL;
	s->deadline_ms = 0;
	s->id = id;
	id->sock = s;
	sv_cm_id_set_state(id, SV_CM_REQ_RCVD);
	id->unborn = true;
	id->tos = ls->tos;
	id->tos_set = ls->tos_set;
	id->ack_timeout = ls->ack_timeout;
	id->ack_timeout_set = ls->ack_timeout_set;
	id->qkey = ls->qkey;
	memcpy(&id->id.route.addr.src_storage, &local, sizeof(local));
	memcpy(&id->id.route.addr.dst_storage, &peer, sizeof(peer));
	if (sv_cm_dev_attach(id)) {
		send_rej(id, SV_REJ_NO_RESOURCES, NULL, 0);
		sv_id_destroy_unborn(id);
		return;
	}
	id->gid_index = sv_cm_gid_index((struct sockaddr *)&local);
	sv_cm_addr_to_gid((struct sockaddr *)&local,
			  &id->id.route.addr.addr.ibaddr.sgid);
	/* The peer's GID is its address: TCP verified it, the message's GID
	 * field is informational. */
	sv_cm_addr_to_gid((struct sockaddr *)&peer,
			  &id->id.route.addr.addr.ibaddr.dgid);
	sv_id_set_path(id);

	id->conn.remote_qpn = be32toh(m->qpn) & 0xffffff;
	id->conn.remote_psn = be32toh(m->psn) & 0xffffff;
	id->conn.local_psn = sv_cm_random24();
	/* Within what the device has (the event reports the raw values). */
	id->conn.resp_res = m->initiator_depth < sv_cm.max_resp_res ?
				    m->initiator_depth :
				    sv_cm.max_resp_res;
	id->conn.init_depth = m->responder_resources < sv_cm.max_init_depth ?
				      m->responder_resources :
				      sv_cm.max_init_depth;
	id->conn.retry_count = m->retry_count & 7;
	id->conn.rnr_retry = m->rnr_retry_count & 7;
	id->conn.flow_control = !!(m->flags & SV_CM_F_FLOW_CONTROL);
	id->conn.srq = !!(m->flags & SV_CM_F_SRQ);
	id->conn.valid = true;
	if (m->flags & SV_CM_F_ECE) {
		id->remote_ece.vendor_id = be32toh(m->ece_vendor);
		id->remote_ece.options = be32toh(m->ece_options);
	}

	e = msg_event(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, m,
		      sv_cm_pdata_max(ls->id.ps, want));
	if (!e) {
		send_rej(id, SV_REJ_NO_RESOURCES, NULL, 0);
		sv_id_destroy_unborn(id);
		return;
	}
	e->owner = ls;
	e->ev.listen_id = &ls->id;
	ls->pending_reqs++;
	if (!is_ud(id)) {
		struct rdma_conn_param *p = &e->ev.param.conn;

		/* From the receiver's point of view, as the IB CM reports. */
		p->responder_resources = m->initiator_depth;
		p->initiator_depth = m->responder_resources;
		p->flow_control = id->conn.flow_control;
		p->retry_count = id->conn.retry_count;
		p->rnr_retry_count = id->conn.rnr_retry;
		p->srq = id->conn.srq;
		p->qp_num = id->conn.remote_qpn;
	}
	/* CONNECT_REQUESTs queue on the listener's channel. */
	{
		struct rdma_event_channel *ch = id->id.channel;

		id->id.channel = ls->id.channel;
		sv_event_queue(id, e);
		id->id.channel = ch;
	}
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

/* ---- messages on established CM connections -------------------------------------- */

static void rep_received(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	struct sv_cm_event *e;

	sv_cm_timer_clear(id);
	id->conn.remote_qpn = be32toh(m->qpn) & 0xffffff;
	id->conn.remote_psn = be32toh(m->psn) & 0xffffff;
	/* The REP's responder resources bound what we may have in flight,
	 * its initiator depth what we must accept. */
	id->conn.init_depth = m->responder_resources < sv_cm.max_init_depth ?
				      m->responder_resources :
				      sv_cm.max_init_depth;
	id->conn.resp_res = m->initiator_depth < sv_cm.max_resp_res ?
				    m->initiator_depth :
				    sv_cm.max_resp_res;
	id->conn.rnr_retry = m->rnr_retry_count & 7;
	id->conn.flow_control = !!(m->flags & SV_CM_F_FLOW_CONTROL);
	id->conn.valid = true;
	if (m->flags & SV_CM_F_ECE) {
		id->remote_ece.vendor_id = be32toh(m->ece_vendor);
		id->remote_ece.options = be32toh(m->ece_options);
	}
	sv_cm_id_set_state(id, SV_CM_REP_RCVD);
	e = msg_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, m,
		      SV_IB_REP_PDATA);
	if (!e)
		return;
	e->ev.param.conn.responder_resources = m->initiator_depth;
	e->ev.param.conn.initiator_depth = m->responder_resources;
	e->ev.param.conn.flow_control = id->conn.flow_control;
	e->ev.param.conn.rnr_retry_count = id->conn.rnr_retry;
	e->ev.param.conn.srq = !!(m->flags & SV_CM_F_SRQ);
	e->ev.param.conn.qp_num = id->conn.remote_qpn;
	sv_event_queue(id, e);
}

static void sidr_rep_received(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	int status = be16toh(m->reason);
	struct sv_cm_event *e;

	if (status != SV_SIDR_SUCCESS) {
		fail(id, RDMA_CM_EVENT_UNREACHABLE, status, m,
		     SV_IB_SIDR_REP_PDATA, true);
		return;
	}
	sv_cm_timer_clear(id);
	id->conn.remote_qpn = be32toh(m->qpn) & 0xffffff;
	id->conn.remote_qkey = be32toh(m->qkey);
	id->conn.valid = true;
	sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
	drop_sock(id, true);
	e = msg_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, m,
		      SV_IB_SIDR_REP_PDATA);
	if (!e)
		return;
	sv_cm_fill_ah(id, &e->ev.param.ud.ah_attr);
	e->ev.param.ud.qp_num = id->conn.remote_qpn;
	e->ev.param.ud.qkey = id->conn.remote_qkey;
	sv_event_queue(id, e);
}

static void established(struct sv_cm_id *id)
{
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
	sv_event_post(id, RDMA_CM_EVENT_ESTABLISHED, 0);
}

/* Returns true when the socket is no longer the id's (closed, orphaned). */
static bool conn_msg(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	struct sv_cm_id *id = s->id;
	enum sv_cm_state st;

	if (!msg_valid(m)) {
		conn_lost(s, EPROTO);
		return true;
	}
	if (s->listener) {
		req_received(s, m);
		return true;
	}
	if (!id)
		return false;
	st = id->state;
	switch (m->type) {
	case SV_CM_MSG_REP:
		if (st != SV_CM_CONNECT || is_ud(id))
			break;
		rep_received(id, m);
		return false;
	case SV_CM_MSG_SIDR_REP:
		if (st != SV_CM_CONNECT || !is_ud(id))
			break;
		sidr_rep_received(id, m);
		return true;
	case SV_CM_MSG_REJ:
		if (st != SV_CM_CONNECT && st != SV_CM_REQ_RCVD &&
		    st != SV_CM_REP_SENT && st != SV_CM_REP_RCVD)
			break;
		fail(id, RDMA_CM_EVENT_REJECTED, be16toh(m->reason), m,
		     SV_IB_REJ_PDATA, false);
		return true;
	case SV_CM_MSG_RTU:
		if (st == SV_CM_ESTABLISHED)
			return false; /* rdma_notify(COMM_EST) came first */
		if (st != SV_CM_REP_SENT)
			break;
		established(id);
		return false;
	case SV_CM_MSG_DREQ:
		if (st != SV_CM_ESTABLISHED && st != SV_CM_DREQ_SENT)
			break;
		dreq_received(id);
		return true;
	case SV_CM_MSG_DREP:
		if (st != SV_CM_DREQ_SENT)
			break;
		disconnected(id, 0, false);
		return true;
	default:
		break;
	}
	sv_cm_log("id %p: unexpected message %d in state %s", (void *)id,
		  m->type, sv_cm_state_name(st));
	conn_lost(s, EPROTO);
	return true;
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

void sv_conn_writable(struct sv_cm_sock *s)
{
	struct sv_cm_id *id = s->id;
	socklen_t len = sizeof(int);
	int err = 0;

	/* The nonblocking connect() finished: SO_ERROR says how. */
	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
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

/* ---- timers -------------------------------------------------------------------- */

void sv_conn_timer(struct sv_cm_id *id, enum sv_cm_timer t)
{
	switch (id->state) {
	case SV_CM_CONNECT:
	case SV_CM_REP_SENT:
		if (!is_ud(id) && id->sock && !id->sock->connecting)
			send_rej(id, SV_REJ_TIMEOUT, NULL, 0);
		fail(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0, true);
		break;
	case SV_CM_DREQ_SENT:
		disconnected(id, -ETIMEDOUT, false);
		break;
	case SV_CM_DISCONNECTED:
		if (t == SV_TIMER_DREQ_GRACE) {
			sv_event_post(id, RDMA_CM_EVENT_DISCONNECTED, 0);
			sv_cm_timer_set(id, SV_TIMER_TIMEWAIT,
					SV_CM_TIMEWAIT_MS);
		} else {
			sv_event_post(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		}
		break;
	default:
		break;
	}
}

/* ---- teardown ------------------------------------------------------------------- */

void sv_conn_teardown(struct sv_cm_id *id)
{
	struct list_node *it, *tmp;

	sv_cm_timer_clear(id);
	if (id->state == SV_CM_LISTEN) {
		/* Requests in flight meet no listener any more. */
		list_for_each_safe (&sv_cm.socks, it, tmp) {
			struct sv_cm_sock *s =
				list_entry(it, struct sv_cm_sock, node);

			if (s->listener == id)
				bare_reject(s, id->id.ps, is_ud(id),
					    is_ud(id) ?
						    SV_SIDR_UNSUPPORTED :
						    SV_REJ_INVALID_SERVICE_ID);
		}
		drop_sock(id, false);
		return;
	}
	if (!id->sock)
		return;
	switch (id->state) {
	case SV_CM_CONNECT:
		if (!is_ud(id) && !id->sock->connecting)
			send_rej(id, SV_REJ_TIMEOUT, NULL, 0);
		break;
	case SV_CM_REQ_RCVD:
	case SV_CM_REP_SENT:
	case SV_CM_REP_RCVD:
		send_rej(id, SV_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case SV_CM_ESTABLISHED:
		if (!is_ud(id)) {
			struct sv_cm_wire m;

			msg_init(&m, id, SV_CM_MSG_DREQ);
			id_send(id, &m);
		}
		break;
	default:
		break;
	}
	drop_sock(id, true);
}

/* ---- API ------------------------------------------------------------------------- */

static int valid_param(struct sv_cm_id *id, struct rdma_conn_param *p)
{
	/* rdma-core checks these for RDMA_PS_TCP only. */
	if (id->id.ps != RDMA_PS_TCP)
		return 0;
	if (!id->id.qp && !p)
		return EINVAL;
	if (!p)
		return 0;
	if (p->responder_resources != RDMA_MAX_RESP_RES &&
	    p->responder_resources > sv_cm.max_resp_res)
		return EINVAL;
	if (p->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    p->initiator_depth > sv_cm.max_init_depth)
		return EINVAL;
	return 0;
}

static uint8_t min7(uint8_t v)
{
	return v > 7 ? 7 : v;
}

SV_EXPORT int rdma_connect(struct rdma_cm_id *cmid,
			   struct rdma_conn_param *param)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int type, ret, plen;
	struct sv_cm_wire m;
	struct sv_cm_sock *s;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (id->state != SV_CM_ROUTE_RESOLVED || !id->sock) {
		ret = EINVAL;
		goto out;
	}
	ret = valid_param(id, param);
	if (ret)
		goto out;
	type = is_ud(id) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
	plen = (int)id->connect_len +
	       (param && param->private_data ? param->private_data_len : 0);
	if (plen > sv_cm_pdata_max(cmid->ps, type)) {
		ret = EINVAL;
		goto out;
	}

	id->conn.init_depth =
		param && param->initiator_depth != RDMA_MAX_INIT_DEPTH ?
			param->initiator_depth :
			sv_cm.max_init_depth;
	id->conn.resp_res =
		param && param->responder_resources != RDMA_MAX_RESP_RES ?
			param->responder_resources :
			sv_cm.max_resp_res;
	id->conn.local_qpn = cmid->qp ? cmid->qp->qp_num :
					(param ? param->qp_num & 0xffffff : 0);
	id->conn.srq =
		cmid->qp ? cmid->qp->srq != NULL : (param ? !!param->srq : 0);
	id->conn.retry_count = param ? min7(param->retry_count) : 7;
	/* The REQ's RNR retry count is for the passive side's QP; ours
	 * comes in the REP. */
	id->conn.rnr_retry = param ? min7(param->rnr_retry_count) : 7;
	id->conn.flow_control = param ? !!param->flow_control : 0;
	id->conn.local_psn = sv_cm_random24();

	msg_init(&m, id, type);
	m.responder_resources = id->conn.resp_res;
	m.initiator_depth = id->conn.init_depth;
	m.retry_count = id->conn.retry_count;
	m.rnr_retry_count = id->conn.rnr_retry;
	m.flags |= (id->conn.flow_control ? SV_CM_F_FLOW_CONTROL : 0) |
		   (id->conn.srq ? SV_CM_F_SRQ : 0);
	m.qpn = htobe32(id->conn.local_qpn);
	m.psn = htobe32(id->conn.local_psn);
	msg_pdata(&m, id->connect_pdata, id->connect_len,
		  param ? param->private_data : NULL,
		  param && param->private_data ? param->private_data_len : 0);
	free(id->connect_pdata);
	id->connect_pdata = NULL;
	id->connect_len = 0;

	s = id->sock;
	s->kind = SV_SOCK_CONN;
	sv_cm_id_set_state(id, SV_CM_CONNECT);
	sv_cm_timer_set(id, SV_TIMER_REP, SV_CM_REP_TIMEOUT_MS);
	if (connect(s->fd, &cmid->route.addr.dst_addr,
		    sv_cm_addrlen(&cmid->route.addr.dst_addr)) == 0) {
		sock_tune(s->fd);
	} else if (errno == EINPROGRESS) {
		s->connecting = true;
	} else {
		/* Reported as the kernel would: by an event, not the call. */
		connect_failed(id, errno);
		goto out;
	}
	if (sv_sock_send(s, &m))
		connect_failed(id, ECONNRESET);
out:
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	return sv_cm_sync_complete(id);
}

SV_EXPORT int rdma_accept(struct rdma_cm_id *cmid,
			  struct rdma_conn_param *param)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	struct sv_cm_wire m;
	int ret, plen;
	bool ud;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	ud = is_ud(id);
	if (id->state != SV_CM_REQ_RCVD) {
		ret = EINVAL;
		goto out;
	}
	ret = valid_param(id, param);
	if (ret)
		goto out;
	plen = param && param->private_data ? param->private_data_len : 0;
	if (plen > sv_cm_pdata_max(cmid->ps,
				   ud ? SV_CM_MSG_SIDR_REP : SV_CM_MSG_REP)) {
		ret = EINVAL;
		goto out;
	}
	/* rdma-core: RDMA_MAX_* means "what the request offered, within
	 * what the device has". */
	if (!param || param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		if (id->conn.init_depth > sv_cm.max_init_depth)
			id->conn.init_depth = sv_cm.max_init_depth;
	} else {
		id->conn.init_depth = param->initiator_depth;
	}
	if (!param || param->responder_resources == RDMA_MAX_RESP_RES) {
		if (id->conn.resp_res > sv_cm.max_resp_res)
			id->conn.resp_res = sv_cm.max_resp_res;
	} else {
		id->conn.resp_res = param->responder_resources;
	}
	id->conn.local_qpn = cmid->qp ? cmid->qp->qp_num :
					(param ? param->qp_num & 0xffffff : 0);
	id->conn.srq =
		cmid->qp ? cmid->qp->srq != NULL : (param ? !!param->srq : 0);

	if (!ud) {
		ret = sv_qp_to_rtr_rts(id, id->conn.resp_res,
				       id->conn.init_depth);
		if (ret)
			goto out;
	}

	if (ud) {
		msg_init(&m, id, SV_CM_MSG_SIDR_REP);
		m.reason = htobe16(SV_SIDR_SUCCESS);
		m.qkey = htobe32(id->qkey);
	} else {
		msg_init(&m, id, SV_CM_MSG_REP);
		m.responder_resources = id->conn.resp_res;
		m.initiator_depth = id->conn.init_depth;
		m.rnr_retry_count = param ? min7(param->rnr_retry_count) : 7;
		m.flags |=
			(param && param->flow_control ? SV_CM_F_FLOW_CONTROL :
							0) |
			(id->conn.srq ? SV_CM_F_SRQ : 0);
		m.psn = htobe32(id->conn.local_psn);
	}
	m.qpn = htobe32(id->conn.local_qpn);
	msg_pdata(&m, NULL, 0, param ? param->private_data : NULL, plen);

	if (id_send(id, &m)) {
		/* The requester is gone: as a REP that is never answered. */
		sv_qp_to_err(id);
		fail(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL, 0,
		     false);
		goto out;
	}
	if (ud) {
		sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
		drop_sock(id, true);
	} else {
		sv_cm_id_set_state(id, SV_CM_REP_SENT);
		sv_cm_timer_set(id, SV_TIMER_RTU, SV_CM_RTU_TIMEOUT_MS);
	}
out:
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	if (ud) {
		/* No event follows a SIDR reply (rdma-core acks the request's
		 * event and returns). */
		if (id->sync && cmid->event) {
			rdma_ack_cm_event(cmid->event);
			cmid->event = NULL;
		}
		return 0;
	}
	return sv_cm_sync_complete(id);
}

static int reject(struct rdma_cm_id *cmid, const void *pdata, uint8_t len,
		  int reason)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret = 0;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (id->state != SV_CM_REQ_RCVD) {
		ret = EINVAL;
		goto out;
	}
	if (pdata &&
	    len > sv_cm_pdata_max(cmid->ps, is_ud(id) ? SV_CM_MSG_SIDR_REP :
							SV_CM_MSG_REJ)) {
		ret = EINVAL;
		goto out;
	}
	send_rej(id, is_ud(id) ? SV_SIDR_REJECT : reason, pdata,
		 pdata ? len : 0);
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_FAILED);
	drop_sock(id, true);
out:
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

SV_EXPORT int rdma_reject(struct rdma_cm_id *cmid, const void *private_data,
			  uint8_t private_data_len)
{
	return reject(cmid, private_data, private_data_len,
		      SV_REJ_CONSUMER_DEFINED);
}

SV_EXPORT int rdma_reject_ece(struct rdma_cm_id *cmid, const void *private_data,
			      uint8_t private_data_len)
{
	return reject(cmid, private_data, private_data_len,
		      SV_REJ_VENDOR_OPTION_NOT_SUPPORTED);
}

/* Active side, REP in: send the RTU (lock held).  0 or errno. */
int sv_conn_establish(struct sv_cm_id *id)
{
	struct sv_cm_wire m;

	if (id->state != SV_CM_REP_RCVD)
		return EINVAL;
	msg_init(&m, id, SV_CM_MSG_RTU);
	sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
	if (id->peer_gone || id_send(id, &m))
		/* The passive side vanished after its REP: the connection
		 * the application now has is already gone. */
		disconnected(id, 0, false);
	return 0;
}

SV_EXPORT int rdma_establish(struct rdma_cm_id *cmid)
{
	int ret;

	if (!cmid || cmid->qp)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	ret = sv_conn_establish(to_sv_id(cmid));
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}

SV_EXPORT int rdma_disconnect(struct rdma_cm_id *cmid)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	bool wait = false;
	struct sv_cm_wire m;
	int ret = 0;

	if (!cmid || !cmid->verbs)
		return sv_cm_err(EINVAL);
	/* rdma-core moves the QP to ERROR first (IB transports). */
	sv_cm_lock();
	ret = sv_qp_to_err(id);
	if (ret)
		goto out;
	switch (id->state) {
	case SV_CM_ESTABLISHED:
		if (is_ud(id))
			break;
		msg_init(&m, id, SV_CM_MSG_DREQ);
		if (id_send(id, &m)) {
			disconnected(id, 0, false);
		} else {
			sv_cm_id_set_state(id, SV_CM_DREQ_SENT);
			sv_cm_timer_set(id, SV_TIMER_DREQ,
					SV_CM_DREQ_TIMEOUT_MS);
		}
		wait = true;
		break;
	case SV_CM_DISCONNECTED:
		/* The peer's DREQ came first; the DREP went out then.  A
		 * sync id still has that DISCONNECTED to consume (queued, or
		 * about to be). */
		wait = !list_empty(&to_sv_ch(cmid->channel)->events) ||
		       id->timer == SV_TIMER_DREQ_GRACE;
		break;
	case SV_CM_CONNECT:
	case SV_CM_REQ_RCVD:
	case SV_CM_REP_SENT:
	case SV_CM_REP_RCVD:
		/* Not connected yet: abandon the attempt, tell the peer. */
		if (id->sock && !id->sock->connecting)
			send_rej(id, SV_REJ_CONSUMER_DEFINED, NULL, 0);
		sv_cm_timer_clear(id);
		sv_cm_id_set_state(id, SV_CM_FAILED);
		drop_sock(id, true);
		break;
	case SV_CM_DREQ_SENT:
	case SV_CM_FAILED:
		break;
	default:
		ret = EINVAL;
	}
out:
	sv_cm_unlock();
	if (ret)
		return sv_cm_err(ret);
	return wait ? sv_cm_sync_complete(id) : 0;
}

SV_EXPORT int rdma_notify(struct rdma_cm_id *cmid, enum ibv_event_type event)
{
	struct sv_cm_id *id = to_sv_id(cmid);
	int ret = 0;

	if (!cmid)
		return sv_cm_err(EINVAL);
	sv_cm_lock();
	if (event != IBV_EVENT_COMM_EST) {
		ret = EINVAL; /* no alternate paths to migrate to */
	} else if (id->state == SV_CM_REP_SENT) {
		/* Data arrived before the RTU: the connection is up. */
		established(id);
	} else if (id->state == SV_CM_ESTABLISHED) {
		ret = EISCONN;
	} else {
		ret = EINVAL;
	}
	sv_cm_unlock();
	return ret ? sv_cm_err(ret) : 0;
}
