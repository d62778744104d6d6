/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Unreliable Datagram: address handles resolved to UDP/IP addresses for
 * the requester, and the UD responder.
 *
 * A UD message is one SEND ONLY packet with a DETH (Q_Key and source QP,
 * IBA).  The receiver checks the Q_Key (a mismatch drops it),
 * takes a receive WQE (none: the message is silently dropped, UD has no
 * RNR), and places the 40-byte GRH area first, as RoCE v2 does: for IPv4
 * the IPv4 header in its second half, for IPv6 the IPv6 header (what
 * ibv_init_ah_from_wc parses back into an address).
 */
#include "engine/transport/ud.h"

#include <arpa/inet.h>
#include <netinet/ip.h>

#include "core/device.h"
#include "engine/engine.h"
#include "engine/transport/eng.h"
#include "engine/transport/qpe.h"
#include "engine/transport/sgl.h"
#include "engine/transport/stats.h"
#include "proto/ip.h"

/* Where an AH points: destination and source IP, resolved when the AH
 * is created, as the kernel resolves a RoCE AH once: the scan of the GID
 * table (getifaddrs and an interface lookup per address) costs tens of
 * microseconds, which a per-QP cache of the last AH paid again on every
 * change of destination.  Unresolvable (no route to the destination): the
 * route stays unresolved and each send through it fails with
 * IBV_WC_LOC_QP_OP_ERR. */
void sv_engine_ah_resolve(struct sv_context *ctx, struct sv_ah *ah)
{
	struct sv_engine *eng = ctx->engine;
	struct sv_ah_route *r = &ah->route;
	struct sv_gid_entry tab[SV_MAX_GIDS];
	uint8_t sgid = ah->attr.grh.sgid_index;
	int n;

	memset(r, 0, sizeof(*r));
	/* The IP header's TOS / traffic class: rxe takes it from the AH
	 * whether or not is_global is set (a RoCE AH always has a GRH). */
	r->tclass = ah->attr.grh.traffic_class;
	sv_sockaddr_to_ipaddr((const struct sockaddr *)&ah->dest, &r->dst,
			      NULL);
	n = sv_gid_table(tab, SV_MAX_GIDS);
	sv_mutex_lock(&eng->lock, SV_LOCK_ENGINE);
	SV_STAT(eng, ud_ah_resolved);
	sv_mutex_unlock(&eng->lock);
	if (sgid < n) {
		sv_sockaddr_to_ipaddr((struct sockaddr *)&tab[sgid].addr,
				      &r->src, NULL);
		if (r->src.family != r->dst.family)
			memset(&r->src, 0, sizeof(r->src));
		else if (r->dst.family == AF_INET6 &&
			 ((r->dst.addr[0] == 0xfe &&
			   (r->dst.addr[1] & 0xc0) == 0x80) ||
			  r->dst.addr[0] == 0xff))
			/* link-local and multicast: the source's interface */
			r->scope = tab[sgid].ifindex;
	}
	if (!r->src.family && sv_udp_route_src(&r->dst, &r->src))
		return;
	r->resolved = true;
}

void sv_ud_rx(struct sv_qp_engine *qe, struct sv_pkt *pkt,
	      const struct sv_flow *flow)
{
	uint8_t *deth = sv_pkt_h(pkt, SV_HDR_DETH);
	struct sv_recv_wqe *w;
	struct ibv_wc wc;
	uint8_t grh[SV_GRH_BYTES];
	enum sv_sgl_err e;
	struct sv_pd *pd;

	/* IBA: a multicast datagram is addressed to QPN 0xffffff, and
	 * only a multicast datagram may be (mcast.c delivers those). */
	if (sv_ip_is_multicast(&flow->dst) != (pkt->qpn == SV_QPN_MCAST)) {
		SV_STAT(qe->eng, drop_no_qp);
		return;
	}
	/* IBA: a datagram's Q_Key must match the QP's. */
	if (sv_deth_qkey(deth) != qe->qkey) {
		SV_STAT(qe->eng, drop_qkey);
		return;
	}
	/* IBA: a UD message is one packet of at most the path MTU; a longer
	 * one is a malformed packet, dropped as rxe drops it (its responder's
	 * length check, class D: no completion).  Our senders refuse it at
	 * post; another sender, or a port with a larger MTU, may not. */
	if (pkt->paylen > sv_engine_port_mtu(qe->eng->ctx)) {
		SV_STAT(qe->eng, drop_ud_mtu);
		return;
	}
	if (!sv_rq_get(qe)) {
		SV_STAT(qe->eng, drop_ud_no_wqe);
		return;
	}
	w = qe->resp.wqe;
	pd = qe->resp.wqe_srq ? qe->qp->srq->pd : qe->qp->pd;
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qe->qpn;
	wc.src_qp = (uint32_t)sv_deth_sqp(deth);
	wc.wc_flags = IBV_WC_GRH;
	/* The RoCE v2 network header type, where mlx5 reports it: 2 IPv4,
	 * 1 IPv6.  Debian's UCX (1.13) reads it from wc.sl to tell how much
	 * of the GRH area's destination GID to compare, and drops the
	 * datagram with 0; ibv_init_ah_from_wc copies it into ah_attr.sl,
	 * which a RoCE AH does not use. */
	wc.sl = flow->src.family == AF_INET ? SV_WC_SL_IPV4 : SV_WC_SL_IPV6;
	wc.byte_len = SV_GRH_BYTES + pkt->paylen;
	if (pkt->mask & SV_M_IMM) {
		memcpy(&wc.imm_data, sv_pkt_h(pkt, SV_HDR_IMMDT), 4);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	sv_grh_build(grh, flow, 8 + pkt->len);
	if (qe->resp.wqe_len < SV_GRH_BYTES + (uint64_t)pkt->paylen) {
		/* Too small for the datagram: a local length error on the
		 * WQE; the QP stays usable (a datagram service). */
		wc.status = IBV_WC_LOC_LEN_ERR;
	} else if ((e = sv_sgl_copy(pd, w->sge, w->num_sge, 0, grh,
				    SV_GRH_BYTES, true)) ||
		   (pkt->paylen &&
		    (e = sv_sgl_copy(pd, w->sge, w->num_sge, SV_GRH_BYTES,
				     pkt->payload, pkt->paylen, true)))) {
		if (e == SV_SGL_FAULT)
			sv_dma_fault_report(qe, "UD SEND into a receive "
						"buffer");
		wc.status = IBV_WC_LOC_PROT_ERR;
	} else {
		wc.status = IBV_WC_SUCCESS;
		SV_STAT(qe->eng, rdma_sends);
	}
	if (wc.status != IBV_WC_SUCCESS)
		wc.vendor_err = wc.status;
	qe->resp.have_wqe = false;
	SV_STAT(qe->eng, rdma_recvs);
	SV_QSTAT(qe, recv_done);
	SV_QSTAT_ADD(qe, recv_bytes, wc.byte_len);
	sv_push_recv_cqe(qe, &wc, sv_bth_se(pkt->hdr));
	/* A receive buffer the QP may not write is a local QP error. */
	if (wc.status == IBV_WC_LOC_PROT_ERR)
		sv_qp_to_error(qe, SV_ERR_NO_EVENT);
}

/* The port MTU, computed on first use (it walks the interfaces) and kept
 * current by the address monitor. */
uint32_t sv_engine_port_mtu(struct sv_context *ctx)
{
	struct sv_engine *eng = ctx->engine;
	uint32_t m = atomic_load_explicit(&eng->port_mtu, memory_order_relaxed);

	if (!m) {
		m = sv_mtu_bytes(sv_port_active_mtu());
		atomic_store(&eng->port_mtu, m);
	}
	return m;
}
