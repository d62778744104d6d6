/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The connection protocol: rdma_connect, rdma_accept, rdma_reject,
 * rdma_establish, rdma_disconnect, rdma_notify, and the state machine the
 * progress thread drives with the peer's messages and the timers.
 *
 * Both sides follow the IB CM's state machine (IBA chapter 12): the active
 * side sends a REQ; the passive side reports CONNECT_REQUEST and answers
 * rdma_accept with a REP (or rdma_reject with a REJ); the active side
 * reports CONNECT_RESPONSE (turned into ESTABLISHED by rdma_get_cm_event
 * when the id has a QP) and sends the RTU, on which the passive side
 * reports ESTABLISHED.  DREQ/DREP release the connection; each side
 * reports DISCONNECTED once, then TIMEWAIT_EXIT.  UD ids run the SIDR
 * REQ/REP exchange instead.
 *
 * The messages (struct sv_cm_wire) travel one of two ways, each its own
 * file: a TCP connection per CM connection (conn_tcp.c, the default), or
 * the IB CM's MADs on QP1, which a RoCE peer's kernel CM speaks
 * (conn_mad.c, standard mode).  This file owns what both share.
 */
#include "cm/conn.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/objects.h"
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

/* ---- messages -------------------------------------------------------------- */

void sv_conn_msg_init(struct sv_cm_wire *m, const struct sv_cm_id *id, int type)
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

/* Send a message; on failure the caller sees errno (the loss itself is
 * reported when the socket's EOF/error is read). */
static int id_send(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	if (id->mad)
		return sv_conn_mad_send(id, m);
	if (!id->sock || id->peer_gone)
		return ECONNRESET;
	return sv_sock_send(id->sock, m);
}

/* Tell the peer no (REJ, or a SIDR_REP with a status for UD ids). */
static void send_rej(struct sv_cm_id *id, int reason, const void *pdata,
		     uint8_t len)
{
	struct sv_cm_wire m;

	sv_conn_msg_init(
		&m, id, sv_conn_is_ud(id) ? SV_CM_MSG_SIDR_REP : SV_CM_MSG_REJ);
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

void sv_conn_drop_sock(struct sv_cm_id *id, bool linger)
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
		if (sv_conn_is_ud(id)) {
			e->ev.param.ud.private_data = e->pdata;
			e->ev.param.ud.private_data_len = report_len;
		} else {
			e->ev.param.conn.private_data = e->pdata;
			e->ev.param.conn.private_data_len = report_len;
		}
	}
	return e;
}

void sv_conn_fail(struct sv_cm_id *id, int type, int status,
		  const struct sv_cm_wire *m, int report_len, bool linger)
{
	struct sv_cm_event *e = msg_event(id, type, status, m, report_len);

	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_FAILED);
	sv_conn_drop_sock(id, linger);
	if (e)
		sv_event_queue(id, e);
}

/* What the peer sent on its QP before it disconnected (on a fabric the
 * HCA has handled it before the CM hears of the disconnect: its last
 * ACKs above all) is taken in before the disconnect is reported: the
 * engine reads its sockets now (verbs' sv_engine_settle), however late
 * the scheduler of a loaded host would run its progress thread or the
 * application's poll.  An application that tears its QP down on
 * DISCONNECTED (libfabric's rxm, the seeds' demos) destroys it with the
 * completions those ACKs make already in its CQ, where its poll before
 * it reads the event finds them. */
static void settle(struct sv_cm_id *id)
{
	struct sv_context *ctx;

	if (!id->id.verbs)
		return;
	ctx = to_sv_ctx(id->id.verbs);
	if (ctx->settle)
		ctx->settle(ctx);
}

void sv_conn_disconnected(struct sv_cm_id *id, int status, bool linger)
{
	settle(id);
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_DISCONNECTED);
	sv_conn_drop_sock(id, linger);
	sv_event_post(id, RDMA_CM_EVENT_DISCONNECTED, status);
	sv_cm_timer_set(id, SV_TIMER_TIMEWAIT, SV_CM_TIMEWAIT_MS);
}

/* The peer's DREQ: answered at once, reported after the grace period. */
static void dreq_received(struct sv_cm_id *id)
{
	struct sv_cm_wire r;

	settle(id);
	sv_conn_msg_init(&r, id, SV_CM_MSG_DREP);
	id_send(id, &r);
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_DISCONNECTED);
	sv_conn_drop_sock(id, true);
	sv_cm_timer_set(id, SV_TIMER_DREQ_GRACE, SV_CM_DREQ_GRACE_MS);
}

/* A new passive id for a request to listener ls: its addresses, the
 * request's parameters, CONNECT_REQUEST on the listener's channel. */
void sv_conn_req_deliver(struct sv_cm_id *ls, struct sv_cm_id *id,
			 const struct sv_cm_wire *m,
			 const struct sockaddr_storage *local_ss,
			 const struct sockaddr_storage *peer_ss)
{
	int want = sv_conn_is_ud(ls) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
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
	if (!sv_conn_is_ud(id)) {
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
		sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, status, m,
			     SV_IB_SIDR_REP_PDATA, true);
		return;
	}
	sv_cm_timer_clear(id);
	id->conn.remote_qpn = be32toh(m->qpn) & 0xffffff;
	id->conn.remote_qkey = be32toh(m->qkey);
	id->conn.valid = true;
	sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
	sv_conn_drop_sock(id, true);
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
int sv_conn_id_msg(struct sv_cm_id *id, const struct sv_cm_wire *m)
{
	enum sv_cm_state st = id->state;

	switch (m->type) {
	case SV_CM_MSG_REP:
		if (st != SV_CM_CONNECT || sv_conn_is_ud(id))
			break;
		rep_received(id, m);
		return 0;
	case SV_CM_MSG_SIDR_REP:
		if (st != SV_CM_CONNECT || !sv_conn_is_ud(id))
			break;
		sidr_rep_received(id, m);
		return 1;
	case SV_CM_MSG_REJ:
		if (st != SV_CM_CONNECT && st != SV_CM_REQ_RCVD &&
		    st != SV_CM_REP_SENT && st != SV_CM_REP_RCVD)
			break;
		sv_conn_fail(id, RDMA_CM_EVENT_REJECTED, be16toh(m->reason), m,
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
		sv_conn_disconnected(id, 0, false);
		return 1;
	default:
		break;
	}
	sv_cm_log("id %p: unexpected message %d in state %s", (void *)id,
		  m->type, sv_cm_state_name(st));
	return -1;
}

/* ---- timers -------------------------------------------------------------------- */

void sv_conn_timer(struct sv_cm_id *id, enum sv_cm_timer t)
{
	if (t == SV_TIMER_RECONNECT) {
		sv_conn_tcp_reconnect(id);
		return;
	}
	if (sv_conn_mad_resend(id, t))
		return;
	switch (id->state) {
	case SV_CM_CONNECT:
	case SV_CM_REP_SENT:
		if (!sv_conn_is_ud(id) && can_send(id))
			send_rej(id, SV_REJ_TIMEOUT, NULL, 0);
		sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0,
			     true);
		break;
	case SV_CM_DREQ_SENT:
		sv_conn_disconnected(id, -ETIMEDOUT, false);
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
	sv_cm_timer_clear(id);
	if (id->state == SV_CM_LISTEN) {
		sv_gsi_unlisten(id);
		sv_conn_tcp_unlisten(id);
		sv_conn_drop_sock(id, false);
		return;
	}
	if (!id->sock && !id->mad)
		return;
	switch (id->state) {
	case SV_CM_CONNECT:
		if (!sv_conn_is_ud(id) && can_send(id))
			send_rej(id, SV_REJ_TIMEOUT, NULL, 0);
		break;
	case SV_CM_REQ_RCVD:
	case SV_CM_REP_SENT:
	case SV_CM_REP_RCVD:
		send_rej(id, SV_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case SV_CM_ESTABLISHED:
		if (!sv_conn_is_ud(id)) {
			struct sv_cm_wire m;

			sv_conn_msg_init(&m, id, SV_CM_MSG_DREQ);
			id_send(id, &m);
		}
		break;
	default:
		break;
	}
	sv_conn_drop_sock(id, true);
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
	type = sv_conn_is_ud(id) ? SV_CM_MSG_SIDR_REQ : SV_CM_MSG_REQ;
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

	sv_conn_msg_init(&m, id, type);
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

	/* Standard mode: the REQ goes to the peer's CM on QP1. */
	if (sv_gsi_mode())
		ret = sv_conn_mad_connect(id, &m);
	else
		sv_conn_tcp_connect(id, &m);
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
	ud = sv_conn_is_ud(id);
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
		sv_conn_msg_init(&m, id, SV_CM_MSG_SIDR_REP);
		m.reason = htobe16(SV_SIDR_SUCCESS);
		m.qkey = htobe32(id->qkey);
	} else {
		sv_conn_msg_init(&m, id, SV_CM_MSG_REP);
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
		sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL,
			     0, false);
		goto out;
	}
	if (ud) {
		sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
		sv_conn_drop_sock(id, true);
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
	    len > sv_cm_pdata_max(cmid->ps, sv_conn_is_ud(id) ?
						    SV_CM_MSG_SIDR_REP :
						    SV_CM_MSG_REJ)) {
		ret = EINVAL;
		goto out;
	}
	send_rej(id, sv_conn_is_ud(id) ? SV_SIDR_REJECT : reason, pdata,
		 pdata ? len : 0);
	sv_cm_timer_clear(id);
	sv_cm_id_set_state(id, SV_CM_FAILED);
	sv_conn_drop_sock(id, true);
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
	sv_conn_msg_init(&m, id, SV_CM_MSG_RTU);
	sv_cm_id_set_state(id, SV_CM_ESTABLISHED);
	if (id->peer_gone || id_send(id, &m))
		/* The passive side vanished after its REP: the connection
		 * the application now has is already gone. */
		sv_conn_disconnected(id, 0, false);
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
		if (sv_conn_is_ud(id))
			break;
		sv_conn_msg_init(&m, id, SV_CM_MSG_DREQ);
		if (id_send(id, &m)) {
			sv_conn_disconnected(id, 0, false);
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
		sv_conn_drop_sock(id, true);
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
