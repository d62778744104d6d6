/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Helpers for the UD/UC/SRQ/multicast/async integration tests (xqp.h). */
#include "xqp.h"

#include <arpa/inet.h>
#include <poll.h>
#include <unistd.h>

struct ibv_qp *xq_create(struct hx_ep *ep, enum ibv_qp_type type,
			 struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;
	int rc, mask;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ep->scq;
	ia.recv_cq = ep->rcq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.sq_sig_all = ep->o.sq_sig_all;
	ia.cap.max_send_wr = ep->o.max_send_wr;
	ia.cap.max_recv_wr = srq ? 0 : ep->o.max_recv_wr;
	ia.cap.max_send_sge = ep->o.max_send_sge;
	ia.cap.max_recv_sge = srq ? 0 : ep->o.max_recv_sge;
	ia.cap.max_inline_data = ep->o.max_inline;
	qp = ibv_create_qp(ep->pd, &ia);
	if (!qp)
		hx_die("ibv_create_qp(type %d): %s", type, strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (type == IBV_QPT_UD) {
		a.qkey = XQ_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = ep->o.qp_access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		hx_die("modify_qp RESET->INIT (type %d): %s", type,
		       strerror(rc));
	return qp;
}

void xq_new_qp(struct hx_ep *ep, enum ibv_qp_type type, struct ibv_srq *srq)
{
	if (ep->qp) {
		int rc = ibv_destroy_qp(ep->qp);

		if (rc)
			hx_die("ibv_destroy_qp: %s", strerror(rc));
	}
	ep->qp = xq_create(ep, type, srq);
}

int xq_ud_rtr(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int xq_ud_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	int rc = xq_ud_rtr(qp);

	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = (uint32_t)lrand48() & 0xffffff;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

struct ibv_ah *xq_ah(struct hx_ep *ep, const union ibv_gid *dgid)
{
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = *dgid;
	aa.grh.sgid_index = (uint8_t)ep->gid_index;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	ah = ibv_create_ah(ep->pd, &aa);
	if (!ah)
		hx_die("ibv_create_ah: %s", strerror(errno));
	return ah;
}

int xq_ud_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn,
	       uint32_t qkey, enum ibv_wr_opcode op, unsigned flags,
	       uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey,
	       uint32_t imm_host)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = htonl(imm_host);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc && bad != &wr)
		hx_log("post_send failed (%d) but bad_wr is not the WR", rc);
	return rc;
}

int xq_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		 uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

int xq_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id, void *addr,
		     uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

int xq_connect_qp(struct hx_ep *ep, struct ibv_qp *qp, uint32_t peer_qpn,
		  uint32_t peer_psn)
{
	struct ibv_qp_attr a;
	int rc, mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ep->mtu < (enum ibv_mtu)ep->peer.mtu ?
			     ep->mtu :
			     (enum ibv_mtu)ep->peer.mtu;
	if (ep->o.path_mtu)
		a.path_mtu = ep->o.path_mtu;
	ep->mtu_bytes = hx_mtu_bytes(a.path_mtu);
	a.dest_qp_num = peer_qpn;
	a.rq_psn = peer_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ep->peer.gid;
	a.ah_attr.grh.sgid_index = (uint8_t)ep->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = ep->o.max_dest_rd_atomic;
		a.min_rnr_timer = ep->o.min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	rc = ibv_modify_qp(qp, &a, mask);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = ep->psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = ep->o.timeout;
		a.retry_cnt = ep->o.retry_cnt;
		a.rnr_retry = ep->o.rnr_retry;
		a.max_rd_atomic = ep->o.max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int xq_wait_event(struct ibv_context *ctx, enum ibv_event_type want,
		  int timeout_ms, struct ibv_async_event *out, bool keep)
{
	uint64_t end = hx_now_ms() + (uint64_t)timeout_ms;
	struct ibv_async_event ev;

	for (;;) {
		int64_t left = (int64_t)(end - hx_now_ms());

		if (left <= 0 || !hx_wait_fd(ctx->async_fd, (int)left))
			return 0;
		if (ibv_get_async_event(ctx, &ev))
			return 0;
		if (ev.event_type == want) {
			if (out)
				*out = ev;
			if (!keep)
				ibv_ack_async_event(&ev);
			return 1;
		}
		hx_log("async event %s while waiting for %s",
		       ibv_event_type_str(ev.event_type),
		       ibv_event_type_str(want));
		ibv_ack_async_event(&ev);
	}
}

int xq_count_events(struct ibv_context *ctx, enum ibv_event_type want, int ms)
{
	uint64_t end = hx_now_ms() + (uint64_t)ms;
	struct ibv_async_event ev;
	int n = 0;

	for (;;) {
		int64_t left = (int64_t)(end - hx_now_ms());

		if (left <= 0 || !hx_wait_fd(ctx->async_fd, (int)left))
			return n;
		if (ibv_get_async_event(ctx, &ev))
			return n;
		if (ev.event_type == want)
			n++;
		ibv_ack_async_event(&ev);
	}
}

static bool ipv4_sum_ok(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

bool xq_grh_ipv4_ok(const uint8_t *grh, const char *src, const char *dst,
		    uint32_t udp_payload)
{
	const uint8_t *ip = grh + 20;
	struct in_addr s, d;

	if (inet_pton(AF_INET, src, &s) != 1 ||
	    inet_pton(AF_INET, dst, &d) != 1)
		hx_die("bad address %s / %s", src, dst);
	if (ip[0] != 0x45 || ip[9] != 17) {
		hx_log("GRH: not an IPv4/UDP header (0x%02x, proto %u)", ip[0],
		       ip[9]);
		return false;
	}
	if (!ipv4_sum_ok(ip)) {
		hx_log("GRH: IPv4 header checksum wrong");
		return false;
	}
	if (memcmp(ip + 12, &s, 4) || memcmp(ip + 16, &d, 4)) {
		hx_log("GRH: IPv4 addresses differ from %s -> %s", src, dst);
		return false;
	}
	if ((uint32_t)(ip[2] << 8 | ip[3]) != 28 + udp_payload) {
		hx_log("GRH: IPv4 total length %u, expected %u",
		       ip[2] << 8 | ip[3], 28 + udp_payload);
		return false;
	}
	return true;
}

bool xq_grh_ipv6_ok(const uint8_t *grh, const union ibv_gid *src,
		    const union ibv_gid *dst, uint32_t udp_payload)
{
	const struct ibv_grh *g = (const void *)grh;

	if ((be32toh(g->version_tclass_flow) >> 28) != 6 || g->next_hdr != 17) {
		hx_log("GRH: not an IPv6/UDP header");
		return false;
	}
	if (memcmp(g->sgid.raw, src->raw, 16) ||
	    memcmp(g->dgid.raw, dst->raw, 16)) {
		hx_log("GRH: IPv6 addresses differ");
		return false;
	}
	if (be16toh(g->paylen) != 8 + udp_payload) {
		hx_log("GRH: IPv6 payload length %u, expected %u",
		       be16toh(g->paylen), 8 + udp_payload);
		return false;
	}
	return true;
}

union ibv_gid xq_gid_of(const char *ip)
{
	union ibv_gid g;
	struct in_addr a4;

	memset(&g, 0, sizeof(g));
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		g.raw[10] = g.raw[11] = 0xff;
		memcpy(&g.raw[12], &a4, 4);
	} else if (inet_pton(AF_INET6, ip, g.raw) != 1) {
		hx_die("bad address %s", ip);
	}
	return g;
}
/* RESET -> RTS of an XRC QP towards the peer's QP (the XRC_INI or
 * XRC_TGT masks of the kernel's state table). */
void xq_xrc_connect(struct hx_ep *ep, struct ibv_qp *qp, uint32_t dest,
		    uint32_t rq_psn, uint32_t sq_psn, uint8_t rnr_retry)
{
	bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = tgt ? ep->o.qp_access : 0;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS))
		hx_die("XRC QP to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ep->mtu;
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = ep->peer.gid;
	a.ah_attr.grh.sgid_index = ep->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
	       IBV_QP_RQ_PSN;
	if (tgt)
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (ibv_modify_qp(qp, &a, mask))
		hx_die("XRC QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.max_rd_atomic = 16;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT;
	if (!tgt)
		mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	if (ibv_modify_qp(qp, &a, mask))
		hx_die("XRC QP to RTS");
}

struct ibv_xrcd *xq_xrcd_open(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);

	if (!x)
		hx_die("ibv_open_xrcd: %s", strerror(errno));
	return x;
}

struct ibv_srq *xq_xrc_srq(struct hx_ep *ep, struct ibv_xrcd *x,
			   struct ibv_cq *cq, uint32_t *num)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 64, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_XRC,
		.pd = ep->pd,
		.xrcd = x,
		.cq = cq,
	};
	struct ibv_srq *s = ibv_create_srq_ex(ep->ctx, &a);

	if (!s || ibv_get_srq_num(s, num))
		hx_die("XRC SRQ: %s", strerror(errno));
	return s;
}
