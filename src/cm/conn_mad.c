/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CM's messages as IB CM MADs on QP1 (standard mode), so that a RoCE
 * peer's kernel CM is our peer: each of our messages becomes the MAD of
 * the same meaning and back, connections are named by comm IDs, and
 * since MADs are datagrams, the message waiting for an answer is sent
 * again on its timer (an MRA puts the resends off).
 */
#include "cm/conn.h"

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "util/log.h"

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
	sv_conn_msg_init(w, NULL, wire_type_of(m->attr));
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

int sv_conn_mad_send(struct sv_cm_id *id, const struct sv_cm_wire *w)
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
		    sv_cm_port_of(b) == port && sv_conn_is_ud(c) == sidr &&
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
	sv_conn_req_deliver(ls, id, &w, &dst, &src);
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

		if (!id->mad || id->destroying || sv_conn_is_ud(id) ||
		    id->state != SV_CM_ESTABLISHED)
			continue;
		sv_conn_msg_init(&m, id, SV_CM_MSG_DREQ);
		sent |= sv_conn_mad_send(id, &m) == 0;
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

			sv_conn_msg_init(&r, id, SV_CM_MSG_DREP);
			sv_conn_mad_send(id, &r);
			return;
		}
		break;
	default:
		break;
	}
	mad_to_wire(m, &w, 0);
	if (sv_conn_id_msg(id, &w) < 0)
		return; /* duplicates and strays: MADs are datagrams */
}

/* rdma_connect's REQ as a MAD to the peer's CM: 0 or errno. */
int sv_conn_mad_connect(struct sv_cm_id *id, const struct sv_cm_wire *req)
{
	int ret = sv_gsi_start();

	if (ret)
		return ret;
	id->local_comm = mad_comm_new();
	if (!id->local_comm)
		return ENOMEM; /* as the kernel's ID allocation */
	id->mad = true;
	id->tid = (uint64_t)sv_cm_random24() << 32 | id->local_comm;
	memcpy(&id->mad_peer, &id->id.route.addr.dst_storage,
	       sizeof(id->mad_peer));
	sv_cm_id_set_state(id, SV_CM_CONNECT);
	sv_cm_timer_set(id, SV_TIMER_REP, SV_MAD_RESEND_MS);
	if (sv_conn_mad_send(id, req))
		sv_conn_fail(id, RDMA_CM_EVENT_UNREACHABLE, -EHOSTUNREACH, NULL,
			     0, false);
	return 0;
}

/* MADs may be lost: the REQ, REP or DREQ waiting for its answer is sent
 * again, unless the peer's MRA asked us to wait.  True when it was. */
bool sv_conn_mad_resend(struct sv_cm_id *id, enum sv_cm_timer t)
{
	if (!id->mad || id->mad_mra || id->mad_retries >= SV_MAD_RETRIES ||
	    !((t == SV_TIMER_REP && id->state == SV_CM_CONNECT) ||
	      (t == SV_TIMER_RTU && id->state == SV_CM_REP_SENT) ||
	      (t == SV_TIMER_DREQ && id->state == SV_CM_DREQ_SENT)))
		return false;
	id->mad_retries++;
	sv_dbg("cm: no answer in %d ms: MAD sent again (%d of %d)",
	       SV_MAD_RESEND_MS, id->mad_retries, SV_MAD_RETRIES);
	sv_gsi_send((struct sockaddr *)&id->mad_peer, id->gid_index,
		    &id->mad_last);
	sv_cm_timer_set(id, t, SV_MAD_RESEND_MS);
	return true;
}
