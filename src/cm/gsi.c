/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The GSI endpoint of librdmacm in standard mode (SOFTVERBS_ROCE=standard):
 * IB CM MADs travel as UD SENDs between QP1s at UDP 4791, as a RoCE peer's
 * kernel CM sends them.  The CM's device context gets one UD QP created
 * with IBV_QP_CREATE_SOURCE_QPN 1 (the engine then sends it as QP1),
 * Q_Key 0x80010000, receives posted from a ring of 296-byte slots (GRH
 * area + MAD); its completion channel is in the progress thread's epoll.
 * Everything here runs with sv_cm.lock held.
 *
 * One engine of the namespace holds UDP 4791 and takes every MAD to QP1;
 * it sends each on to the CM the MAD names (engine/forward/gsifwd.c), through the
 * abstract Unix names a CM binds (proto/mad.h): at start, its endpoint
 * number, the high half of every comm ID it hands out; at rdma_listen,
 * the listener's service ID.  What no name claims reaches the holder's
 * GSI QP, whose CM answers as for a request nobody listens for.
 */
#include "cm/cm.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "cm/mad.h"
#include "util/env.h"
#include "util/log.h"
#include "util/unixdg.h"

#define GSI_QPN 1
#define GSI_QKEY 0x80010000u
#define GSI_GRH 40
#define GSI_SLOT (GSI_GRH + SV_MAD_SIZE)
#define GSI_NRECV 64
#define GSI_NSEND 32

static struct {
	bool up;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *rcq, *scq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t rbuf[GSI_NRECV][GSI_SLOT];
	uint8_t sbuf[GSI_NSEND][SV_MAD_SIZE];
	struct ibv_ah *ah[GSI_NSEND]; /* of the send in the slot */
	bool busy[GSI_NSEND];
	unsigned int next;
	struct sv_cm_sock *ep; /* our endpoint's name (proto/mad.h) */
	uint16_t endpoint;
} gsi;

bool sv_gsi_mode(void)
{
	return strcmp(sv_env_roce(), "standard") == 0;
}

static int post_recv(unsigned int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)gsi.rbuf[i],
			       .length = GSI_SLOT,
			       .lkey = gsi.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(gsi.qp, &wr, &bad);
}

static void gsi_free(void)
{
	if (gsi.ep)
		sv_sock_close(gsi.ep);
	if (gsi.qp)
		ibv_destroy_qp(gsi.qp);
	if (gsi.mr)
		ibv_dereg_mr(gsi.mr);
	if (gsi.rcq)
		ibv_destroy_cq(gsi.rcq);
	if (gsi.scq)
		ibv_destroy_cq(gsi.scq);
	if (gsi.ch)
		ibv_destroy_comp_channel(gsi.ch);
	if (gsi.pd)
		ibv_dealloc_pd(gsi.pd);
	memset(&gsi, 0, sizeof(gsi));
}

/* A new SV_SOCK_MAD socket bound to route r's name; NULL with errno. */
static struct sv_cm_sock *route_bind(const struct sv_cm_route *r)
{
	struct sockaddr_un sa;
	socklen_t len = sv_cm_route_name(&sa, geteuid(), r);
	struct sv_cm_sock *s;
	int fd = sv_unixdg_socket(), err;

	if (fd < 0)
		return NULL;
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		err = errno;
		close(fd);
		errno = err;
		return NULL;
	}
	s = sv_sock_new(fd, SV_SOCK_MAD);
	if (!s) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	sv_sock_want(s, EPOLLIN);
	return s;
}

/* Our endpoint number: the first free one from a random start (a
 * namespace's CMs rarely number more than a few). */
static int endpoint_bind(void)
{
	uint16_t first = (uint16_t)sv_cm_random24();

	for (unsigned int i = 0; i <= UINT16_MAX; i++) {
		struct sv_cm_route r = { SV_CM_ROUTE_ENDPOINT,
					 (uint16_t)(first + i) };

		if (!r.key)
			continue; /* comm ID 0 means "none" in a REJ */
		gsi.ep = route_bind(&r);
		if (gsi.ep) {
			gsi.endpoint = (uint16_t)r.key;
			return 0;
		}
		if (errno != EADDRINUSE)
			return errno;
	}
	return EADDRINUSE;
}

uint16_t sv_gsi_endpoint(void)
{
	return gsi.endpoint;
}

int sv_gsi_start(void)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	struct epoll_event ev = { .events = EPOLLIN,
				  .data.u64 = SV_GSI_HANDLE };
	int ret;

	if (gsi.up)
		return 0;
	ret = sv_cm_dev_open();
	if (!ret)
		ret = sv_cm_progress_start();
	if (ret)
		return ret;
	gsi.pd = ibv_alloc_pd(sv_cm.verbs);
	gsi.ch = gsi.pd ? ibv_create_comp_channel(sv_cm.verbs) : NULL;
	gsi.rcq = gsi.ch ? ibv_create_cq(sv_cm.verbs, GSI_NRECV, NULL, gsi.ch,
					 0) :
			   NULL;
	gsi.scq = gsi.rcq ?
			  ibv_create_cq(sv_cm.verbs, GSI_NSEND, NULL, NULL, 0) :
			  NULL;
	gsi.mr = gsi.scq ? ibv_reg_mr(gsi.pd, &gsi.rbuf,
				      sizeof(gsi.rbuf) + sizeof(gsi.sbuf),
				      IBV_ACCESS_LOCAL_WRITE) :
			   NULL;
	if (!gsi.mr)
		goto fail;
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = gsi.scq;
	ia.recv_cq = gsi.rcq;
	ia.cap.max_send_wr = GSI_NSEND;
	ia.cap.max_recv_wr = GSI_NRECV;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.pd = gsi.pd;
	ia.create_flags = IBV_QP_CREATE_SOURCE_QPN;
	ia.source_qpn = GSI_QPN;
	gsi.qp = ibv_create_qp_ex(sv_cm.verbs, &ia);
	if (!gsi.qp)
		goto fail;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = GSI_QKEY;
	if (ibv_modify_qp(gsi.qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_QKEY))
		goto fail;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(gsi.qp, &a, IBV_QP_STATE))
		goto fail;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(gsi.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail;
	for (unsigned int i = 0; i < GSI_NRECV; i++)
		if (post_recv(i))
			goto fail;
	if (ibv_req_notify_cq(gsi.rcq, 0) ||
	    epoll_ctl(sv_cm.epfd, EPOLL_CTL_ADD, gsi.ch->fd, &ev))
		goto fail;
	if ((errno = endpoint_bind()))
		goto fail;
	gsi.up = true;
	return 0;
fail:
	ret = errno ? errno : ENOMEM;
	sv_cm_log("IB CM on QP1 (SOFTVERBS_ROCE=standard): %s", strerror(ret));
	gsi_free();
	return ret;
}

/* Free the slots whose sends completed; the next free one, or -1. */
static int send_slot(void)
{
	struct ibv_wc wc[GSI_NSEND];
	int n = ibv_poll_cq(gsi.scq, GSI_NSEND, wc);

	for (int i = 0; i < n; i++) {
		unsigned int s = (unsigned int)wc[i].wr_id;

		if (wc[i].status != IBV_WC_SUCCESS)
			sv_cm_log("GSI send: %s",
				  ibv_wc_status_str(wc[i].status));
		if (s < GSI_NSEND)
			gsi.busy[s] = false;
	}
	for (unsigned int i = 0; i < GSI_NSEND; i++) {
		unsigned int s = (gsi.next + i) % GSI_NSEND;

		if (gsi.busy[s])
			continue;
		if (gsi.ah[s]) {
			ibv_destroy_ah(gsi.ah[s]);
			gsi.ah[s] = NULL;
		}
		gsi.next = s + 1;
		return (int)s;
	}
	return -1;
}

int sv_gsi_send(const struct sockaddr *peer, int gid_index,
		const struct sv_mad *m)
{
	struct ibv_ah_attr aa;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int s, ret;

	if (!gsi.up)
		return ENOTCONN;
	s = send_slot();
	if (s < 0)
		return ENOBUFS; /* lost, as a MAD may be: the resend covers */
	ret = sv_mad_encode(m, gsi.sbuf[s]);
	if (ret)
		return ret;
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	sv_cm_addr_to_gid(peer, &aa.grh.dgid);
	aa.grh.sgid_index = gid_index < 0 ? 0 : (uint8_t)gid_index;
	aa.grh.hop_limit = SV_CM_HOP_LIMIT;
	aa.dlid = SV_MAD_LID_PERMISSIVE;
	aa.port_num = 1;
	gsi.ah[s] = ibv_create_ah(gsi.pd, &aa);
	if (!gsi.ah[s])
		return errno ? errno : ENOMEM;
	sge.addr = (uintptr_t)gsi.sbuf[s];
	sge.length = SV_MAD_SIZE;
	sge.lkey = gsi.mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = gsi.ah[s];
	wr.wr.ud.remote_qpn = GSI_QPN;
	wr.wr.ud.remote_qkey = GSI_QKEY;
	ret = ibv_post_send(gsi.qp, &wr, &bad);
	if (ret)
		return ret;
	gsi.busy[s] = true;
	return 0;
}

void sv_gsi_drain(int ms)
{
	struct timespec nap = { 0, 1000 * 1000 };

	if (!gsi.up)
		return;
	for (int i = 0; i < ms; i++) {
		bool busy = false;

		(void)send_slot(); /* reaps the completed sends */
		for (unsigned int s = 0; s < GSI_NSEND; s++)
			busy |= gsi.busy[s];
		if (!busy)
			return;
		nanosleep(&nap, NULL);
	}
}

/* The sender's and the receiver's addresses, from the GRH area of a UD
 * receive (RoCE v2: an IPv4 header in its second half, or the IPv6
 * header). */
static void grh_addrs(const uint8_t *grh, struct sockaddr_storage *src,
		      struct sockaddr_storage *dst)
{
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (grh[20] >> 4 == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)src;
		struct sockaddr_in *d = (struct sockaddr_in *)dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, grh + 20 + 12, 4);
		memcpy(&d->sin_addr, grh + 20 + 16, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)src;
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, grh + 8, 16);
		memcpy(&d->sin6_addr, grh + 24, 16);
		sv_cm_addr_unmap(src);
		sv_cm_addr_unmap(dst);
	}
}

/* A received MAD behind its GRH area, from the GSI QP or forwarded. */
static void mad_received(const uint8_t *slot, size_t len)
{
	struct sockaddr_storage peer, local;
	struct sv_mad m;
	int err;

	if (len < GSI_GRH)
		return;
	grh_addrs(slot, &peer, &local);
	err = sv_mad_decode(&m, slot + GSI_GRH, len - GSI_GRH);
	if (err)
		sv_cm_log("GSI: MAD dropped: %s", strerror(err));
	else
		sv_conn_mad(&peer, &local, &m);
}

void sv_gsi_readable(void)
{
	struct ibv_cq *cq;
	void *ctx;
	struct ibv_wc wc[16];
	int n;

	if (!gsi.up)
		return;
	if (ibv_get_cq_event(gsi.ch, &cq, &ctx) == 0)
		ibv_ack_cq_events(cq, 1);
	ibv_req_notify_cq(gsi.rcq, 0);
	while ((n = ibv_poll_cq(gsi.rcq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned int s = (unsigned int)wc[i].wr_id;

			if (s >= GSI_NRECV)
				continue;
			if (wc[i].status == IBV_WC_SUCCESS)
				mad_received(gsi.rbuf[s], wc[i].byte_len);
			post_recv(s);
		}
	}
}

void sv_gsi_sock_readable(struct sv_cm_sock *s)
{
	/* One more byte than a MAD's datagram: a longer one is cut, and
	 * dropped as such. */
	uint8_t buf[SV_CM_ROUTE_DGRAM + 1];

	for (unsigned int i = 0; i < GSI_NRECV; i++) {
		ssize_t got;
		pid_t pid = 0;
		bool mine = sv_unixdg_recv_mine(s->fd, buf, sizeof(buf), &got,
						NULL, NULL, &pid);

		if (got < 0)
			return; /* drained */
		if (!mine || got != SV_CM_ROUTE_DGRAM) {
			/* Not a holder of our user's: anyone may send to an
			 * abstract name (docs/security.md). */
			sv_cm_log("GSI: a forwarded datagram of %zd bytes from "
				  "pid %d dropped: not one MAD from a process "
				  "of our user",
				  got, (int)pid);
			continue;
		}
		mad_received(buf, (size_t)got);
	}
}

int sv_gsi_listen(struct sv_cm_id *id)
{
	uint64_t svc = SV_CMA_SERVICE_ID(
		id->id.ps, sv_cm_port_of(&id->id.route.addr.src_addr));
	struct sv_cm_route r = { SV_CM_ROUTE_SERVICE, svc };
	struct list_node *it, *tmp;
	int err;

	list_for_each_safe (&sv_cm.ids, it, tmp) {
		struct sv_cm_id *c = list_entry(it, struct sv_cm_id, node);

		if (c != id && c->mad_svc && c->mad_service == svc) {
			id->mad_svc = c->mad_svc; /* another of ours */
			id->mad_service = svc;
			return 0;
		}
	}
	id->mad_svc = route_bind(&r);
	if (!id->mad_svc) {
		err = errno;
		if (err == EADDRINUSE)
			sv_err("SOFTVERBS_ROCE=standard: rdma_listen on port "
			       "%u: another process of this network namespace "
			       "takes the IB CM's requests for it (service ID "
			       "0x%016llx)",
			       (unsigned int)(uint16_t)svc,
			       (unsigned long long)svc);
		return err;
	}
	id->mad_service = svc;
	return 0;
}

void sv_gsi_unlisten(struct sv_cm_id *id)
{
	struct list_node *it, *tmp;
	struct sv_cm_sock *s = id->mad_svc;

	if (!s)
		return;
	id->mad_svc = NULL;
	list_for_each_safe (&sv_cm.ids, it, tmp) {
		struct sv_cm_id *c = list_entry(it, struct sv_cm_id, node);

		if (c->mad_svc == s)
			return; /* still another listener's */
	}
	sv_sock_close(s);
}
