/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A QP's life in the engine: its number and socket slot, the hooks the
 * verbs layer calls on create/modify/destroy (the path to the peer set at
 * RTR, the window, the queues emptied at RESET), and the per-QP run and
 * timer dispatch of a progress pass.
 */
#include "engine/transport/qpe.h"

#include <errno.h>
#include <stdlib.h>

#include "core/async.h"
#include "core/device.h"
#include "core/mw.h"
#include "engine/transport/comp.h"
#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/path.h"
#include "engine/transport/req.h"
#include "engine/transport/resp.h"
#include "engine/transport/stats.h"
#include "engine/transport/xmit.h"
#include "engine/transport/xrc.h"
#include "util/env.h"
#include "util/lockorder.h"
#include "util/log.h"

/* ---- QP numbers ------------------------------------------------------------ */

static int sock_open(struct sv_engine *eng, struct sv_sock **out)
{
	struct sv_sock *s = calloc(1, sizeof(*s));
	int err, rcv = 0;
	socklen_t len = sizeof(rcv);

	if (!s)
		return ENOMEM;
	err = sv_links_sock_open(eng, s);
	if (err) {
		free(s);
		return err;
	}
	if (!getsockopt(s->udp.fd, SOL_SOCKET, SO_RCVBUF, &rcv, &len) &&
	    rcv > 0 && (!eng->rcvbuf || (uint32_t)rcv < eng->rcvbuf))
		eng->rcvbuf = (uint32_t)rcv;
	list_add_tail(&eng->socks, &s->node);
	eng->nsocks++;
	*out = s;
	return 0;
}

/* A QPN is (UDP port << 8) | slot.  Slots are handed out round-robin so
 * a destroyed QP's number is not reused at once (stale packets for it
 * must not reach a new QP).  0xffffff is the multicast QPN: never used. */
static int qpn_alloc(struct sv_engine *eng, struct sv_qp_engine *qe)
{
	struct list_node *it;
	struct sv_sock *s = NULL;
	unsigned int i;
	int err;

	err = sv_links_roce_open(eng);
	if (err)
		return err;
	for (it = eng->socks.n.next; it != &eng->socks.n; it = it->next) {
		struct sv_sock *c = list_entry(it, struct sv_sock, node);

		if (!c->roce &&
		    c->used < SV_SLOTS_PER_SOCK - (c->udp.port == 0xffff)) {
			s = c;
			break;
		}
	}
	if (!s) {
		err = sock_open(eng, &s);
		if (err)
			return err;
	}
	for (i = 0; i < SV_SLOTS_PER_SOCK; i++) {
		unsigned int slot = (s->next_slot + i) % SV_SLOTS_PER_SOCK;

		if (s->slot[slot] ||
		    sv_qpn_make(s->udp.port, slot) == SV_QPN_MCAST)
			continue;
		s->slot[slot] = qe;
		s->used++;
		s->next_slot = slot + 1;
		qe->sock = s;
		qe->qpn = sv_qpn_make(s->udp.port, slot);
		return 0;
	}
	return ENOMEM; /* not reached: used < capacity */
}

int sv_engine_qp_create(struct sv_qp *qp)
{
	struct sv_engine *eng = qp->ctx->engine;
	struct sv_qp_engine *qe;
	int err;

	qe = calloc(1, sizeof(*qe) + eng->paths->qp_bytes);
	if (!qe)
		return ENOMEM;
	qe->resp.wqe = calloc(1, sizeof(struct sv_recv_wqe) +
					 SV_MAX_SGE * sizeof(struct ibv_sge));
	qe->resp.res = calloc(SV_MAX_RD_ATOMIC, sizeof(*qe->resp.res));
	if (!qe->resp.wqe || !qe->resp.res) {
		err = ENOMEM;
		goto fail;
	}
	qe->qp = qp;
	qe->eng = eng;
	/* XRC QPs run the RC machines (engine/transport/xrc.c translates the wire). */
	qe->type = sv_xrc_qp(qp) ? IBV_QPT_RC : qp->type;
	qe->pmtu = 1024;
	qe->window = qe->cwnd = qe->ssthresh = SV_WINDOW_MIN;
	atomic_store(&qe->state, IBV_QPS_RESET);
	list_node_init(&qe->work_node);
	list_node_init(&qe->timed_node);
	list_node_init(&qe->kick_node);

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	atomic_store(&eng->quiet, NULL); /* busy polls: take the lock */
	err = qpn_alloc(eng, qe);
	if (!err) {
		sv_hook_statseg_qp_open(qe);
		list_add_tail(&eng->qps, &qe->node);
		err = sv_engine_start_thread(eng);
		if (err) {
			list_del(&qe->node);
			sv_hook_statseg_qp_close(qe);
			qe->sock->slot[sv_qpn_slot(qe->qpn)] = NULL;
			qe->sock->used--;
		} else {
			sv_links_qp_created(qe);
		}
	}
	sv_mutex_unlock(&eng->lock);
	if (err)
		goto fail;
	qp->eng = qe;
	qp->qpx.qp_base.qp_num = qe->qpn;
	return 0;
fail:
	free(qe->resp.wqe);
	free(qe->resp.res);
	free(qe);
	return err;
}

void sv_engine_qp_destroy(struct sv_qp *qp)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng;

	if (!qe)
		return;
	eng = qe->eng;
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	atomic_store(&eng->quiet, NULL); /* busy polls: take the lock */
	/* Datagrams posted before the destroy leave first, as from an HCA,
	 * which fetches a WQE within microseconds of its doorbell: mckey's
	 * sender posts unsignaled sends and destroys its QP at once, and
	 * on a busy host our thread may not have run in between.  (The
	 * requester stops by itself where the queue or a budget ends.) */
	if (qe->type == IBV_QPT_UD)
		for (int i = 0;
		     i < SV_UD_DESTROY_RUNS && qe->req.idx != sv_sq_tail(qe);
		     i++)
			sv_req_run(qe);
	if (eng->ntx)
		sv_tx_flush(eng); /* held ACKs: the QP's among them */
	sv_hook_qp_report(qe, "destroying", stderr);
	sv_paths_quiesce(qe);
	/* Unreachable from peers and the network first, then from the work
	 * lists. */
	sv_paths_qp_destroyed(qe);
	qe->sock->slot[sv_qpn_slot(qe->qpn)] = NULL;
	qe->sock->used--;
	if (eng->gsi == qe)
		eng->gsi = NULL;
	if (qe->on_work)
		list_del(&qe->work_node);
	if (qe->on_timed)
		list_del(&qe->timed_node);
	sv_mutex_lock(&eng->kick_lock, SV_LOCK_KICK);
	if (qe->kicked)
		list_del(&qe->kick_node);
	sv_mutex_unlock(&eng->kick_lock);
	list_del(&qe->node);
	sv_hook_inject_qp_gone(qe);
	sv_links_qp_destroyed(qe);
	sv_hook_statseg_qp_close(qe);
	sv_mutex_unlock(&eng->lock);
	/* No packet reaches the QP any more: the type 2 windows bound to
	 * it become free (IBA 10.6.7; idempotent if the verbs layer says
	 * so too). */
	sv_mw_qp_gone(qp);
	qp->eng = NULL;
	free(qe->resp.wqe);
	free(qe->resp.res);
	free(qe);
}

int sv_engine_qp_gsi(struct sv_qp *qp)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng = qe->eng;
	int err = 0;

	if (!sv_links_standard() || qp->type != IBV_QPT_UD)
		return EOPNOTSUPP;
	/* Any engine may send as QP1; what arrives for QP1 reaches it when
	 * it holds 4791 and no CM's name claims the MAD (gsifwd.c). */
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	if (eng->gsi)
		err = EBUSY;
	else {
		eng->gsi = qe;
		qe->gsi = true;
	}
	sv_mutex_unlock(&eng->lock);
	return err;
}

int sv_engine_qp_state(struct sv_qp *qp)
{
	return qp->eng ? atomic_load(&qp->eng->state) : IBV_QPS_RESET;
}

/* ---- paths ----------------------------------------------------------------- */

static uint64_t timeout_ns(uint8_t t)
{
	uint64_t ns;

	if (!t)
		return 0; /* IBA: 0 means infinite */
	/* 4.096 us * 2^timeout, with a floor: a software peer can be
	 * descheduled far longer than a HCA takes to answer. */
	ns = 4096ull << (t > 31 ? 31 : t);
	return ns < SV_MIN_TIMEOUT_NS ? SV_MIN_TIMEOUT_NS : ns;
}

/* Where the peer is (IP from the destination GID, port from the
 * destination QPN, or 4791 in standard mode) and which local address we
 * send from (the source GID, else whatever the routing table picks). */
static void set_path(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;
	struct ibv_ah_attr *ah = &qp->attr.ah_attr;
	struct sv_gid_entry tab[SV_MAX_GIDS];
	struct sockaddr_storage ss;
	struct sv_ipaddr dst, src;
	uint32_t scope = 0;
	int n;

	memset(&src, 0, sizeof(src));
	if (ah->is_global) {
		sv_gid_to_sockaddr(&ah->grh.dgid, &ss);
		sv_sockaddr_to_ipaddr((struct sockaddr *)&ss, &dst, NULL);
	} else {
		/* No GRH: RoCE cannot route, so the peer is on this host. */
		memset(&dst, 0, sizeof(dst));
		dst.family = AF_INET;
		dst.addr[0] = 127;
		dst.addr[3] = 1;
	}
	n = sv_gid_table(tab, SV_MAX_GIDS);
	if (ah->is_global && ah->grh.sgid_index < n) {
		struct sv_ipaddr s;

		sv_sockaddr_to_ipaddr(
			(struct sockaddr *)&tab[ah->grh.sgid_index].addr, &s,
			NULL);
		if (s.family == dst.family) {
			src = s;
			scope = tab[ah->grh.sgid_index].ifindex;
		}
	}
	if (!src.family && sv_udp_route_src(&dst, &src))
		src = dst; /* unroutable: the kernel will refuse our sends */
	if (dst.family != AF_INET6 ||
	    !(dst.addr[0] == 0xfe && (dst.addr[1] & 0xc0) == 0x80))
		scope = 0; /* only link-local addresses need a scope */
	qe->dest_qpn = qp->attr.dest_qp_num & SV_PSN_MASK;
	sv_ipaddr_to_sin6(&dst, sv_links_dport(qe->dest_qpn), scope, &qe->peer);
	qe->flow.src = src;
	qe->flow.dst = dst;
	qe->flow.sport = qe->sock->udp.port;
	qe->flow.dport = sv_links_dport(qe->dest_qpn);
	/* The IP header's TOS / traffic class, as rxe sets it from the
	 * QP's address vector. */
	qe->flow.tclass = ah->is_global ? ah->grh.traffic_class : 0;
}

static void set_window(struct sv_qp_engine *qe)
{
	/* Each datagram costs about its payload twice (the kernel rounds
	 * skb buffers up) plus bookkeeping in the receiver's buffer. */
	uint32_t rcv = qe->eng->rcvbuf ? qe->eng->rcvbuf : 212992;
	uint32_t w = rcv / (2 * qe->pmtu + 1024);

	qe->window = w > SV_WINDOW_MAX ? SV_WINDOW_MAX :
		     w < SV_WINDOW_MIN ? SV_WINDOW_MIN :
					 w;
	qe->cwnd = qe->ssthresh = qe->window;
	qe->cwnd_acc = 0;
	qe->cc_recovering = false;
	qe->cc_wmax = 0;
}

/* IBA 10.3.1: entering Reset empties both work queues without
 * completions (verbs then drops those already in the CQs). */
static void reset_queues(struct sv_qp_engine *qe)
{
	struct sv_qp *qp = qe->qp;

	sv_qlock_lock(&qp->sq_lock, SV_LOCK_SQ);
	atomic_store(&qp->sq.head, 0);
	atomic_store(&qp->sq.tail, 0);
	qp->strict_unsig = 0;
	sv_qlock_unlock(&qp->sq_lock);
	sv_qlock_lock(&qp->rq_lock, SV_LOCK_RQ);
	atomic_store(&qp->rq.head, 0);
	atomic_store(&qp->rq.tail, 0);
	sv_qlock_unlock(&qp->rq_lock);
	memset(&qe->req, 0, sizeof(qe->req));
	memset(&qe->comp, 0, sizeof(qe->comp));
	sv_resp_reset(qe);
	qe->sqd_pending = false;
	qe->peer_skips_icrc = false;
	qe->comm_est = false;
	qe->last_wqe_sent = false;
}

void sv_engine_qp_modified(struct sv_qp *qp, int mask, enum ibv_qp_state old)
{
	struct sv_qp_engine *qe = qp->eng;
	struct sv_engine *eng = qe->eng;
	struct ibv_qp_attr *a = &qp->attr;
	enum ibv_qp_state new_state = a->qp_state;

	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	eng->now_ok = false;
	sv_paths_quiesce(qe); /* the engine's cursors from here */
	/* Paths and queued work change here: busy polls take the lock
	 * until the next pass has looked. */
	atomic_store(&eng->quiet, NULL);
	/* The engine may have moved the QP to ERR on its own meanwhile: only
	 * RESET (or ERR again) leaves that (IBA). */
	if (atomic_load(&qe->state) == IBV_QPS_ERR &&
	    new_state != IBV_QPS_RESET) {
		a->qp_state = IBV_QPS_ERR;
		qe->state_dirty = false;
		sv_mutex_unlock(&eng->lock);
		return;
	}
	qe->state_dirty = false;
	if (mask & IBV_QP_ACCESS_FLAGS)
		qe->access = a->qp_access_flags;
	if (mask & IBV_QP_QKEY)
		qe->qkey = a->qkey;
	if (mask & IBV_QP_PATH_MTU) {
		qe->pmtu = sv_mtu_bytes(a->path_mtu);
		set_window(qe);
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qe->min_rnr_timer = a->min_rnr_timer & 0x1f;
	if (mask & IBV_QP_TIMEOUT) {
		qe->timeout = a->timeout;
		qe->comp.timeout_ns = timeout_ns(a->timeout);
	}
	if (mask & IBV_QP_RETRY_CNT) {
		qe->retry_cnt = a->retry_cnt & 7;
		qe->comp.retry_left = qe->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		qe->rnr_retry = a->rnr_retry & 7;
		qe->comp.rnr_left = qe->rnr_retry;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qe->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		qe->max_dest_rd_atomic =
			a->max_dest_rd_atomic > SV_MAX_RD_ATOMIC ?
				SV_MAX_RD_ATOMIC :
				a->max_dest_rd_atomic;
		qe->resp.nres =
			qe->max_dest_rd_atomic ? qe->max_dest_rd_atomic : 1;
	}
	if (mask & (IBV_QP_AV | IBV_QP_DEST_QPN))
		set_path(qe);
	if (mask & IBV_QP_RQ_PSN)
		qe->resp.psn = a->rq_psn & SV_PSN_MASK;
	if (mask & IBV_QP_SQ_PSN) {
		qe->req.psn = a->sq_psn & SV_PSN_MASK;
		qe->req.max_psn = qe->req.psn;
		qe->comp.psn = qe->req.psn;
	}
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qe->sqd_notify = a->en_sqd_async_notify;
	/* A UD QP has no path: its messages are bounded by the port MTU. */
	if (qe->type == IBV_QPT_UD && (mask & IBV_QP_STATE) &&
	    (new_state == IBV_QPS_RTR || new_state == IBV_QPS_RTS))
		qe->pmtu = sv_mtu_bytes(sv_port_active_mtu());

	switch (new_state) {
	case IBV_QPS_RESET:
		atomic_store(&qe->state, IBV_QPS_RESET);
		reset_queues(qe);
		break;
	case IBV_QPS_SQD:
		atomic_store(&qe->state, IBV_QPS_SQD);
		if (old != IBV_QPS_SQD)
			qe->sqd_pending = qe->sqd_notify;
		break;
	case IBV_QPS_ERR:
		sv_qp_to_error(qe, SV_ERR_BY_USER);
		break;
	default:
		atomic_store(&qe->state, new_state);
		break;
	}
	if (mask & IBV_QP_STATE)
		sv_links_qp_modified(qe, new_state, old);
	sv_paths_qp_state(qe);
	if (new_state != IBV_QPS_RESET) {
		sv_qp_run(qe);
		sv_tx_flush(eng);
	}
	sv_hook_statseg_qp_note(qe);
	sv_mutex_unlock(&eng->lock);
}

/* ---- running a QP ------------------------------------------------------------------- */

void sv_qp_run(struct sv_qp_engine *qe)
{
	uint32_t w = qe->work;
	int state = atomic_load(&qe->state);

	qe->work = 0;
	if (qe->state_dirty)
		sv_qp_sync_state(qe);
	if (state == IBV_QPS_ERR) {
		sv_qp_flush(qe);
		return;
	}
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT)
		return;
	if ((w & SV_WORK_REPLY) || qe->resp.reply_head != qe->resp.reply_tail)
		sv_resp_reply_run(qe);
	if (atomic_load(&qe->state) == IBV_QPS_ERR)
		return sv_qp_flush(qe);
	sv_resp_ack_flush(qe);
	if (state == IBV_QPS_RTS || state == IBV_QPS_SQD) {
		sv_comp_retire(qe);
		if (atomic_load(&qe->state) == IBV_QPS_ERR)
			return sv_qp_flush(qe);
		sv_req_run(qe);
		if (atomic_load(&qe->state) == IBV_QPS_ERR)
			return sv_qp_flush(qe);
	}
	/* IBA: SQD is "drained" once nothing is outstanding. */
	if (atomic_load(&qe->state) == IBV_QPS_SQD && qe->sqd_pending &&
	    qe->comp.idx == qe->req.idx &&
	    (qe->req.idx == sv_sq_tail(qe) ||
	     ((struct sv_send_wqe *)sv_wq_at(&qe->qp->sq, qe->req.idx))->state ==
		     SV_WQE_PENDING)) {
		struct ibv_async_event ev = {
			.element.qp = &qe->qp->qpx.qp_base,
			.event_type = IBV_EVENT_SQ_DRAINED,
		};

		qe->sqd_pending = false;
		sv_async_post(qe->qp->ctx, &ev);
	}
}

bool sv_qp_timers(struct sv_qp_engine *qe, uint64_t now, uint64_t *next)
{
	uint64_t d;

	if (qe->state_dirty)
		sv_qp_sync_state(qe);
	if (qe->comp.rnr_until && now >= qe->comp.rnr_until) {
		qe->comp.rnr_until = 0;
		sv_work_add(qe, SV_WORK_REQ);
	}
	if (qe->comp.deadline && now >= qe->comp.deadline)
		sv_comp_timer(qe, now);
	if (qe->comp.probe && now >= qe->comp.probe)
		sv_comp_probe(qe, now);
	d = qe->comp.probe;
	if (d && (!*next || d < *next))
		*next = d;
	d = qe->comp.rnr_until;
	if (d && (!*next || d < *next))
		*next = d;
	d = qe->comp.deadline;
	if (d && (!*next || d < *next))
		*next = d;
	if (qe->state_dirty && (!*next || now + 1000000 < *next))
		*next = now + 1000000;
	return qe->comp.probe || qe->comp.rnr_until || qe->comp.deadline ||
	       qe->state_dirty;
}
