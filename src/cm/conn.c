/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
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
 * "invalid service ID" reason, as a RoCE peer's CM answers, once the
 * retries of SV_CM_REFUSED_RETRIES found nobody either), and a peer
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

#include "util/log.h"

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

static int mad_send(struct sv_cm_id *id, const struct sv_cm_wire *w);

/* Send a message; on failure the caller sees errno (the loss itself is
 * reported when the socket's EOF/error is read). */
static int id_send(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	if (id->mad)
		return mad_send(id, m);
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

/* Whether a REJ can reach the peer now (TCP: the connection is up). */
static bool can_send(const struct sv_cm_id *id)
{
	return id->mad || (id->sock && !id->sock->connecting);
}

/* How long to wait for an answer: the whole wait over TCP, the resend
 * interval with MADs (sv_conn_timer resends). */
static uint64_t wait_ms(const struct sv_cm_id *id, uint64_t tcp_ms)
{
	return id->mad ? SV_MAD_RESEND_MS : tcp_ms;
}

static void drop_sock(struct sv_cm_id *id, bool linger)
{
	if (!id->sock)
		return;
	/* With MADs the socket only held the port: nothing to flush. */
	if (linger && !id->mad)
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

static void req_deliver(struct sv_cm_id *ls, struct sv_cm_id *id,
			const struct sv_cm_wire *m,
			const struct sockaddr_storage *local_ss,
			const struct sockaddr_storage *peer_ss);

/* The first message on an accepted connection: a REQ for the listener. */
static void req_received(struct sv_cm_sock *s, const struct sv_cm_wire *m)
{
	struct sv_cm_id *ls = s->listener, *id;
	int want = is_ud(ls) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
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
	req_deliver(ls, id, m, &local, &peer);
}

/* A new passive id for a request to listener ls: its addresses, the
 * request's parameters, CONNECT_REQUEST on the listener's channel. */
static void req_deliver(struct sv_cm_id *ls, struct sv_cm_id *id,
			const struct sv_cm_wire *m,
			const struct sockaddr_storage *local_ss,
			const struct sockaddr_storage *peer_ss)
{
	int want = is_ud(ls) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
	struct sockaddr_storage local = *local_ss, peer = *peer_ss;
	struct sv_cm_event *e;

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
	if (id->mad) {
		/* The kernel's rdma_cm (rdma_init_qp_attr) gives its QP its
		 * own sequence number as the receive PSN, the one its REQ or
		 * REP carries, and sends from the PSN the other message
		 * carries: with a RoCE peer the starting PSN of a message is
		 * where its sender expects to receive. */
		id->conn.local_psn = id->conn.remote_psn;
		id->conn.remote_psn = sv_cm_random24();
	}
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
	/* As rdma_cm: the REP's PSN is where the peer receives, ours in the
	 * REQ where we do (see req_deliver). */
	if (id->mad) {
		uint32_t rep_psn = id->conn.remote_psn;

		id->conn.remote_psn = id->conn.local_psn;
		id->conn.local_psn = rep_psn;
	}
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

/* A message for an id in the state it is in: 1 when the id let go of
 * its socket (closed, orphaned), 0 when it keeps it, -1 when the message
 * has no place in that state. */
static int id_msg(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	enum sv_cm_state st = id->state;

	switch (m->type) {
	case SV_CM_MSG_REP:
		if (st != SV_CM_CONNECT || is_ud(id))
			break;
		rep_received(id, m);
		return 0;
	case SV_CM_MSG_SIDR_REP:
		if (st != SV_CM_CONNECT || !is_ud(id))
			break;
		sidr_rep_received(id, m);
		return 1;
	case SV_CM_MSG_REJ:
		if (st != SV_CM_CONNECT && st != SV_CM_REQ_RCVD &&
		    st != SV_CM_REP_SENT && st != SV_CM_REP_RCVD)
			break;
		fail(id, RDMA_CM_EVENT_REJECTED, be16toh(m->reason), m,
		     SV_IB_REJ_PDATA, false);
		return 1;
	case SV_CM_MSG_RTU:
		if (st == SV_CM_ESTABLISHED)
			return 0; /* rdma_notify(COMM_EST) came first */
		if (st != SV_CM_REP_SENT)
			break;
		established(id);
		return 0;
	case SV_CM_MSG_DREQ:
		if (st != SV_CM_ESTABLISHED && st != SV_CM_DREQ_SENT)
			break;
		dreq_received(id);
		return 1;
	case SV_CM_MSG_DREP:
		if (st != SV_CM_DREQ_SENT)
			break;
		disconnected(id, 0, false);
		return 1;
	default:
		break;
	}
	sv_cm_log("id %p: unexpected message %d in state %s", (void *)id,
		  m->type, sv_cm_state_name(st));
	return -1;
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
	r = id_msg(s->id, m);
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

/* ---- timers -------------------------------------------------------------------- */

void sv_conn_timer(struct sv_cm_id *id, enum sv_cm_timer t)
{
	if (t == SV_TIMER_RECONNECT) {
		int err;

		if (id->state != SV_CM_CONNECT || !id->sock)
			return;
		sv_cm_timer_set(id, SV_TIMER_REP, SV_CM_REP_TIMEOUT_MS);
		err = start_connect(id, id->sock);
		if (err) {
			id->sock->dead = true;
			connect_failed(id, err);
		}
		return;
	}
	/* MADs may be lost: the REQ, REP or DREQ waiting for its answer is
	 * sent again, unless the peer's MRA asked us to wait. */
	if (id->mad && !id->mad_mra && id->mad_retries < SV_MAD_RETRIES &&
	    ((t == SV_TIMER_REP && id->state == SV_CM_CONNECT) ||
	     (t == SV_TIMER_RTU && id->state == SV_CM_REP_SENT) ||
	     (t == SV_TIMER_DREQ && id->state == SV_CM_DREQ_SENT))) {
		id->mad_retries++;
		sv_dbg("cm: no answer in %d ms: MAD sent again (%d of %d)",
		       SV_MAD_RESEND_MS, id->mad_retries, SV_MAD_RETRIES);
		sv_gsi_send((struct sockaddr *)&id->mad_peer, id->gid_index,
			    &id->mad_last);
		sv_cm_timer_set(id, t, SV_MAD_RESEND_MS);
		return;
	}
	switch (id->state) {
	case SV_CM_CONNECT:
	case SV_CM_REP_SENT:
		if (!is_ud(id) && can_send(id))
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
		sv_gsi_unlisten(id);
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
	if (!id->sock && !id->mad)
		return;
	switch (id->state) {
	case SV_CM_CONNECT:
		if (!is_ud(id) && can_send(id))
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

/* The MAD connection whose comm ID (SIDR: request ID) is ours. */
static struct sv_cm_id *mad_find(uint32_t local_comm)
{
	struct list_node *it, *tmp;

	list_for_each_safe (&sv_cm.ids, it, tmp) {
		struct sv_cm_id *id = list_entry(it, struct sv_cm_id, node);

		if (id->mad && id->local_comm == local_comm && !id->destroying)
			return id;
	}
	return NULL;
}

/* A new comm ID: our endpoint in the high half, so that the holder of
 * 4791 sends the answers here (proto/mad.h); a counter in the low half,
 * past the IDs still in use.  After sv_gsi_start; 0 when all are. */
static uint32_t mad_comm_new(void)
{
	static uint16_t next;
	uint32_t c;

	if (!next)
		next = (uint16_t)sv_cm_random24();
	for (unsigned int i = 0; i <= UINT16_MAX; i++) {
		c = SV_CM_COMM_ID(sv_gsi_endpoint(), next++);
		if ((uint16_t)c && !mad_find(c))
			return c;
	}
	return 0; /* 65535 connections of ours in setup or up */
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
	int type, ret, plen, err;
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

	if (sv_gsi_mode()) {
		/* Standard mode: the REQ goes to the peer's CM on QP1. */
		ret = sv_gsi_start();
		if (ret)
			goto out;
		id->local_comm = mad_comm_new();
		if (!id->local_comm) {
			ret = ENOMEM; /* as the kernel's ID allocation */
			goto out;
		}
		id->mad = true;
		id->tid = (uint64_t)sv_cm_random24() << 32 | id->local_comm;
		memcpy(&id->mad_peer, &cmid->route.addr.dst_storage,
		       sizeof(id->mad_peer));
		sv_cm_id_set_state(id, SV_CM_CONNECT);
		sv_cm_timer_set(id, SV_TIMER_REP, SV_MAD_RESEND_MS);
		if (id_send(id, &m))
			fail(id, RDMA_CM_EVENT_UNREACHABLE, -EHOSTUNREACH, NULL,
			     0, false);
		goto out;
	}
	s = id->sock;
	s->kind = SV_SOCK_CONN;
	sv_cm_id_set_state(id, SV_CM_CONNECT);
	sv_cm_timer_set(id, SV_TIMER_REP, SV_CM_REP_TIMEOUT_MS);
	err = start_connect(id, s);
	if (err) {
		/* Reported as the kernel would: by an event, not the call. */
		connect_failed(id, err);
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
		m.psn = htobe32(id->mad ? id->conn.remote_psn :
					  id->conn.local_psn);
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
		sv_cm_timer_set(id, SV_TIMER_RTU,
				wait_ms(id, SV_CM_RTU_TIMEOUT_MS));
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
					wait_ms(id, SV_CM_DREQ_TIMEOUT_MS));
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
		if (can_send(id))
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

/* ---- standard mode: the messages as IB CM MADs on QP1 ------------------------------ */

static const uint16_t mad_attr_of[SV_CM_MSG_MAX] = {
	[SV_CM_MSG_REQ] = SV_MAD_REQ,
	[SV_CM_MSG_REP] = SV_MAD_REP,
	[SV_CM_MSG_RTU] = SV_MAD_RTU,
	[SV_CM_MSG_REJ] = SV_MAD_REJ,
	[SV_CM_MSG_DREQ] = SV_MAD_DREQ,
	[SV_CM_MSG_DREP] = SV_MAD_DREP,
	[SV_CM_MSG_SIDR_REQ] = SV_MAD_SIDR_REQ,
	[SV_CM_MSG_SIDR_REP] = SV_MAD_SIDR_REP,
};

static int wire_type_of(uint16_t attr)
{
	for (int t = 1; t < SV_CM_MSG_MAX; t++)
		if (mad_attr_of[t] == attr)
			return t;
	return 0;
}

/* The CA GUID our REQs and REPs carry: the device's node GUID.  The
 * peer's CM keys connections by (comm ID, CA GUID) and (QPN, CA GUID). */
static uint64_t ca_guid(void)
{
	static uint64_t guid;
	struct ibv_device_attr a;

	if (!guid && sv_cm.verbs && !ibv_query_device(sv_cm.verbs, &a))
		guid = be64toh(a.node_guid);
	return guid ? guid : 1;
}

static uint8_t port_mtu(void)
{
	struct ibv_port_attr pa;

	if (sv_cm.verbs && !ibv_query_port(sv_cm.verbs, 1, &pa))
		return (uint8_t)pa.active_mtu;
	return IBV_MTU_1024;
}

/* Our message as the MAD of the same meaning. */
static void wire_to_mad(const struct sv_cm_id *id, const struct sv_cm_wire *w,
			struct sv_mad *m)
{
	const struct rdma_addr *ra = &id->id.route.addr;
	unsigned int off = 0;

	memset(m, 0, sizeof(*m));
	m->attr = mad_attr_of[w->type];
	m->tid = id->tid;
	m->local_comm = id->local_comm;
	m->remote_comm = id->remote_comm;
	m->ca_guid = ca_guid();
	m->qpn = be32toh(w->qpn) & 0xffffff;
	m->psn = be32toh(w->psn) & 0xffffff;
	m->qkey = be32toh(w->qkey);
	m->resp_res = w->responder_resources;
	m->init_depth = w->initiator_depth;
	m->flow_control = !!(w->flags & SV_CM_F_FLOW_CONTROL);
	m->srq = !!(w->flags & SV_CM_F_SRQ);
	m->retry_count = w->retry_count & 7;
	m->rnr_retry = w->rnr_retry_count & 7;
	switch (w->type) {
	case SV_CM_MSG_REQ:
	case SV_CM_MSG_SIDR_REQ:
		m->service_id = SV_CMA_SERVICE_ID(id->id.ps,
						  sv_cm_port_of(&ra->dst_addr));
		m->pkey = 0xffff;
		if (id->id.ps != RDMA_PS_IB) {
			sv_cma_hdr_encode(m->pdata, &ra->src_addr,
					  &ra->dst_addr);
			off = SV_CMA_HDR_BYTES;
		}
		if (w->type == SV_CM_MSG_SIDR_REQ)
			break;
		m->transport = id->id.qp_type == IBV_QPT_UC ? 1 : 0;
		m->remote_cm_timeout = m->local_cm_timeout = SV_MAD_CM_TIMEOUT;
		m->max_cm_retries = SV_MAD_RETRIES;
		m->mtu = port_mtu();
		/* RoCE: no LIDs, the path is the GIDs (IP addresses). */
		m->slid = m->dlid = SV_MAD_LID_PERMISSIVE;
		memcpy(m->sgid, ra->addr.ibaddr.sgid.raw, 16);
		memcpy(m->dgid, ra->addr.ibaddr.dgid.raw, 16);
		m->tclass = id->tos;
		m->hop_limit = SV_CM_HOP_LIMIT;
		m->ack_timeout = id->ack_timeout_set ?
					 id->ack_timeout :
					 SV_CM_DEFAULT_ACK_TIMEOUT;
		break;
	case SV_CM_MSG_REJ:
		m->reason = be16toh(w->reason);
		m->msg = id->state == SV_CM_REQ_RCVD ? SV_MAD_MSG_REQ :
			 id->state == SV_CM_REP_RCVD ? SV_MAD_MSG_REP :
						       SV_MAD_MSG_OTHER;
		break;
	case SV_CM_MSG_REP:
		m->target_ack_delay = SV_CM_DEFAULT_ACK_TIMEOUT;
		break;
	case SV_CM_MSG_DREQ:
		m->qpn = id->conn.remote_qpn; /* the receiver's QP */
		break;
	case SV_CM_MSG_SIDR_REP:
		m->local_comm = id->remote_comm; /* the request ID */
		m->status = (uint8_t)be16toh(w->reason);
		m->service_id = SV_CMA_SERVICE_ID(id->id.ps,
						  sv_cm_port_of(&ra->src_addr));
		break;
	default:
		break;
	}
	memcpy(m->pdata + off, w->pdata, w->pdata_len);
	m->pdata_len = (uint8_t)(off + w->pdata_len);
}

/* A received MAD as our message; off: rdma_cm's header to skip. */
static void mad_to_wire(const struct sv_mad *m, struct sv_cm_wire *w,
			unsigned int off)
{
	msg_init(w, NULL, wire_type_of(m->attr));
	w->port_space = htobe32((uint32_t)(m->service_id >> 16) & 0xffff);
	w->qpn = htobe32(m->qpn);
	w->psn = htobe32(m->psn);
	w->qkey = htobe32(m->qkey);
	w->responder_resources = m->resp_res;
	w->initiator_depth = m->init_depth;
	w->retry_count = m->retry_count;
	w->rnr_retry_count = m->rnr_retry;
	w->flags = (m->flow_control ? SV_CM_F_FLOW_CONTROL : 0) |
		   (m->srq ? SV_CM_F_SRQ : 0);
	w->reason = htobe16(m->attr == SV_MAD_SIDR_REP ? m->status : m->reason);
	if (m->pdata_len > off) {
		unsigned int n = m->pdata_len - off;

		if (n > SV_CM_PDATA_MAX)
			n = SV_CM_PDATA_MAX;
		memcpy(w->pdata, m->pdata + off, n);
		w->pdata_len = (uint8_t)n;
	}
}

static int mad_send(struct sv_cm_id *id, const struct sv_cm_wire *w)
{
	struct sv_mad m;
	int ret;

	wire_to_mad(id, w, &m);
	switch (w->type) {
	case SV_CM_MSG_REQ:
	case SV_CM_MSG_REP:
	case SV_CM_MSG_RTU:
	case SV_CM_MSG_DREQ:
	case SV_CM_MSG_SIDR_REQ:
		if (id->mad_last.attr != m.attr) {
			id->mad_retries = 0;
			id->mad_mra = false;
		}
		id->mad_last = m;
		break;
	default:
		break;
	}
	ret = sv_gsi_send((struct sockaddr *)&id->mad_peer, id->gid_index, &m);
	/* A MAD that found no send slot is lost like one lost on the wire:
	 * the resend covers it. */
	return ret == ENOBUFS ? 0 : ret;
}

/* No id for a request: REJ (SIDR: a SIDR_REP with a status) without one. */
static void mad_bare_reject(const struct sockaddr_storage *peer,
			    const struct sockaddr *local,
			    const struct sv_mad *q, int reason)
{
	struct sv_mad r;

	memset(&r, 0, sizeof(r));
	r.tid = q->tid;
	if (q->attr == SV_MAD_SIDR_REQ) {
		r.attr = SV_MAD_SIDR_REP;
		r.local_comm = q->local_comm;
		r.status = (uint8_t)reason;
		r.service_id = q->service_id;
	} else {
		r.attr = SV_MAD_REJ;
		r.remote_comm = q->local_comm;
		r.msg = SV_MAD_MSG_REQ;
		r.reason = (uint16_t)reason;
	}
	sv_gsi_send((const struct sockaddr *)peer,
		    local ? sv_cm_gid_index(local) : 0, &r);
}

static bool addr_eq(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

static void mad_req(const struct sockaddr_storage *peer, const struct sv_mad *q)
{
	bool sidr = q->attr == SV_MAD_SIDR_REQ;
	int ps = (int)(q->service_id >> 16) & 0xffff;
	uint16_t port = (uint16_t)q->service_id;
	struct sockaddr_storage src, dst;
	struct sv_cm_id *ls = NULL, *id;
	unsigned int off = 0;
	struct list_node *it, *tmp;
	struct sv_cm_wire w;
	uint32_t comm;
	int no_service = sidr ? SV_SIDR_UNSUPPORTED : SV_REJ_INVALID_SERVICE_ID;

	/* A request we have: its answer was lost, or ours is slow. */
	list_for_each_safe (&sv_cm.ids, it, tmp) {
		id = list_entry(it, struct sv_cm_id, node);
		if (!id->mad || id->remote_comm != q->local_comm ||
		    !addr_eq((struct sockaddr *)&id->mad_peer,
			     (const struct sockaddr *)peer))
			continue;
		if (id->state == SV_CM_REP_SENT)
			sv_gsi_send((struct sockaddr *)&id->mad_peer,
				    id->gid_index, &id->mad_last);
		return;
	}
	/* rdma_cm's service IDs: 0x01 << 24 | port space << 16 | port. */
	if (q->service_id >> 32 || ((q->service_id >> 24) & 0xff) != 1) {
		mad_bare_reject(peer, NULL, q, no_service);
		return;
	}
	memset(&src, 0, sizeof(src));
	memset(&dst, 0, sizeof(dst));
	if (ps != RDMA_PS_IB) {
		if (sv_cma_hdr_decode(q->pdata, &src, &dst)) {
			mad_bare_reject(peer, NULL, q, no_service);
			return;
		}
		off = SV_CMA_HDR_BYTES;
	} else {
		/* No addresses in an RDMA_PS_IB request: the sender's. */
		memcpy(&src, peer, sizeof(src));
		memcpy(&dst, peer, sizeof(dst));
	}
	list_for_each_safe (&sv_cm.ids, it, tmp) {
		struct sv_cm_id *c = list_entry(it, struct sv_cm_id, node);
		const struct sockaddr *b = &c->id.route.addr.src_addr;

		if (c->state == SV_CM_LISTEN && (int)c->id.ps == ps &&
		    sv_cm_port_of(b) == port && is_ud(c) == sidr &&
		    (sv_cm_addr_any(b) || ps == RDMA_PS_IB ||
		     addr_eq(b, (struct sockaddr *)&dst))) {
			ls = c;
			break;
		}
	}
	if (!ls) {
		mad_bare_reject(peer, (struct sockaddr *)&dst, q, no_service);
		return;
	}
	if (ls->pending_reqs >= ls->backlog) {
		mad_bare_reject(peer, (struct sockaddr *)&dst, q,
				sidr ? SV_SIDR_REJECT : SV_REJ_NO_RESOURCES);
		return;
	}
	if (ps == RDMA_PS_IB)
		memcpy(&dst, &ls->id.route.addr.src_storage, sizeof(dst));
	sv_cm_set_port((struct sockaddr *)&dst, port);
	mad_to_wire(q, &w, off);
	comm = mad_comm_new();
	id = comm ? sv_id_alloc(ls->sync ? NULL : ls->id.channel,
				ls->id.context, ls->id.ps, ls->id.qp_type) :
		    NULL;
	if (!id) {
		mad_bare_reject(peer, (struct sockaddr *)&dst, q,
				sidr ? SV_SIDR_REJECT : SV_REJ_NO_RESOURCES);
		return;
	}
	id->mad = true;
	id->remote_comm = q->local_comm;
	id->local_comm = comm;
	id->tid = q->tid;
	memcpy(&id->mad_peer, peer, sizeof(id->mad_peer));
	req_deliver(ls, id, &w, &dst, &src);
}

/* A process that exits with connections still up: the kernel's rdma_cm
 * destroys its ids when its file closes, each connected one sending a
 * DREQ, and a peer counts on it (rxe's ib_atomic_lat -R client, whose
 * server exits without disconnecting, resent its own DREQ to nobody for
 * ~100 s).  Here the library's destructor does it for the MAD
 * connections (the TCP ones close with the process), and waits a
 * moment for the DREQs to leave; an unanswered DREQ is the peer's to
 * time out, as on hardware.  Skipped if another thread holds the CM. */
__attribute__((destructor)) static void mad_exit_dreqs(void)
{
	struct list_node *it, *tmp;
	bool sent = false;

	if (!sv_gsi_mode() || sv_mutex_trylock(&sv_cm.lock, SV_LOCK_CM))
		return;
	list_for_each_safe (&sv_cm.ids, it, tmp) {
		struct sv_cm_id *id = list_entry(it, struct sv_cm_id, node);
		struct sv_cm_wire m;

		if (!id->mad || id->destroying || is_ud(id) ||
		    id->state != SV_CM_ESTABLISHED)
			continue;
		msg_init(&m, id, SV_CM_MSG_DREQ);
		sent |= mad_send(id, &m) == 0;
	}
	if (sent)
		sv_gsi_drain(SV_MAD_EXIT_DRAIN_MS);
	sv_cm_unlock();
}

/* A DREQ for a connection we do not know (it ended here, or this
 * process is a later one on the port): a DREP anyway, as the kernel's CM
 * answers, so that the peer's disconnect completes at once instead of
 * after all its resends. */
static void mad_stray_drep(const struct sockaddr_storage *peer,
			   const struct sockaddr_storage *local,
			   const struct sv_mad *q)
{
	struct sv_mad r;

	memset(&r, 0, sizeof(r));
	r.attr = SV_MAD_DREP;
	r.tid = q->tid;
	r.local_comm = q->remote_comm;
	r.remote_comm = q->local_comm;
	sv_gsi_send((const struct sockaddr *)peer,
		    sv_cm_gid_index((const struct sockaddr *)local), &r);
}

void sv_conn_mad(const struct sockaddr_storage *peer,
		 const struct sockaddr_storage *local, const struct sv_mad *m)
{
	struct sv_cm_wire w;
	struct sv_cm_id *id;

	if (m->attr == SV_MAD_REQ || m->attr == SV_MAD_SIDR_REQ) {
		mad_req(peer, m);
		return;
	}
	/* Every other message names our ID: as the remote comm ID, or
	 * (SIDR_REP) as the request ID. */
	id = mad_find(m->attr == SV_MAD_SIDR_REP ? m->local_comm :
						   m->remote_comm);
	if (!id) {
		if (m->attr == SV_MAD_DREQ)
			mad_stray_drep(peer, local, m);
		return; /* a stale or stray message */
	}
	switch (m->attr) {
	case SV_MAD_MRA:
		/* The peer took our message and needs longer to answer: no
		 * more resends, wait its service time (4.096 us * 2^t). */
		if ((id->state == SV_CM_CONNECT && m->msg == SV_MAD_MSG_REQ) ||
		    (id->state == SV_CM_REP_SENT && m->msg == SV_MAD_MSG_REP)) {
			id->mad_mra = true;
			sv_cm_timer_set(
				id, id->timer,
				SV_MAD_RESEND_MS +
					((4096ull << m->service_timeout) /
					 1000000));
		}
		return;
	case SV_MAD_REP:
		if (id->state == SV_CM_ESTABLISHED &&
		    id->mad_last.attr == SV_MAD_RTU) {
			/* Our RTU was lost: the peer sent its REP again. */
			sv_gsi_send((struct sockaddr *)&id->mad_peer,
				    id->gid_index, &id->mad_last);
			return;
		}
		if (id->state == SV_CM_CONNECT)
			id->remote_comm = m->local_comm;
		break;
	case SV_MAD_DREQ:
		if (id->state == SV_CM_DISCONNECTED) {
			/* Our DREP was lost: answer again. */
			struct sv_cm_wire r;

			msg_init(&r, id, SV_CM_MSG_DREP);
			mad_send(id, &r);
			return;
		}
		break;
	default:
		break;
	}
	mad_to_wire(m, &w, 0);
	if (id_msg(id, &w) < 0)
		return; /* duplicates and strays: MADs are datagrams */
}
