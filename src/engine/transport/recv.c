/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Receive: the checks every packet passes (parse, ICRC unless it came
 * through shared memory, QPN -> QP, P_Key, transport, connected peer) and
 * its demultiplexing: the responder for requests, the completer for
 * responses, the UD and XRC roles for theirs.
 */
#include "engine/transport/recv.h"

#include <arpa/inet.h>

#include "engine/transport/comp.h"
#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/forward.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/qpe.h"
#include "engine/transport/resp.h"
#include "engine/transport/stats.h"
#include "engine/transport/ud.h"
#include "engine/transport/xrc.h"
#include "proto/icrc.h"
#include "util/env.h"
#include "util/log.h"

/* ---- receive --------------------------------------------------------------- */

static const char *const pkt_err_names[] = {
	[SV_PKT_OK] = "ok",
	[SV_PKT_SHORT] = "short",
	[SV_PKT_LONG] = "oversized",
	[SV_PKT_OPCODE] = "unknown opcode",
	[SV_PKT_TVER] = "bad tver",
	[SV_PKT_ALIGN] = "unaligned length",
	[SV_PKT_PAD] = "bad pad",
	[SV_PKT_PAYLOAD] = "payload on no-payload opcode",
	[SV_PKT_ICRC] = "bad ICRC",
};

static void drop(struct sv_engine *eng, const uint8_t *buf, uint32_t len,
		 const char *why)
{
	if (sv_env_trace())
		sv_hook_trace_pkt(eng, "rx-drop", buf, len, why);
}

static void rx(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm, bool inject, bool again);

/* The four bytes where the ICRC would be: zero through shared memory
 * (xmit.c), anything else a corrupted packet. */
static bool shm_icrc_bad(const uint8_t *buf, uint32_t len)
{
	const uint8_t *p = buf + len - SV_ICRC_BYTES;

	return p[0] | p[1] | p[2] | p[3];
}

/* One packet from either link: a UDP datagram (ICRC checked) or a slot of
 * our shm ring (no ICRC: shm.h).  Every other check is the same. */
void sv_rx_pkt(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm)
{
	rx(eng, s, buf, len, truncated, flow, shm, sv_hook_inject_rx_on(),
	   false);
}

void sv_rx_held(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
		uint32_t len, const struct sv_flow *flow, bool shm)
{
	rx(eng, s, buf, len, false, flow, shm, false, true);
}

static void rx(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm, bool inject, bool again)
{
	struct sv_qp_engine *qe;
	enum sv_pkt_err err;
	struct sv_pkt pkt;
	uint32_t want;

	/* again: a copy that fault injection delivers (held back or
	 * duplicated), counted when it came in. */
	if (!shm && !again) {
		/* A zero-length datagram is a shm doorbell (links.c): it
		 * only had to wake us. */
		if (!len && !truncated)
			return;
		SV_STAT(eng, rcvd_pkts);
	}
	if (truncated || len > SV_MAX_PKT) {
		SV_STAT(eng, drop_malformed);
		return drop(eng, buf, len, "oversized datagram");
	}
	err = sv_pkt_parse(&pkt, buf, len);
	if (err) {
		SV_STAT(eng, drop_malformed);
		return drop(eng, buf, len, pkt_err_names[err]);
	}
	if (inject) {
		/* Faults on receive act on the packet as it came in: a
		 * duplicate goes through every check twice. */
		unsigned int copies =
			sv_hook_inject_rx(eng, s, buf, len, flow, shm, pkt.qpn);

		while (copies--)
			rx(eng, s, buf, len, false, flow, shm, false, true);
		return;
	}
	/* IBA (RoCE v2: Annex A17): the ICRC is checked before any
	 * field is trusted.  Through shared memory there is none, only a
	 * zero where it would be, unless fault injection corrupted the
	 * packet (inject.c). */
	if (shm && shm_icrc_bad(buf, len)) {
		SV_STAT(eng, drop_icrc);
		return drop(eng, buf, len, "bad ICRC (corrupted on purpose)");
	}
	if (!shm && sv_links_skip_icrc() && sv_icrc_left_to_udp(buf, len)) {
		/* A softverbs peer left it to the UDP checksum (wire.h,
		 * SV_BTH_ICRC_BY_UDP), which the kernel verified. */
		SV_STAT(eng, icrc_left_rx);
	} else if (!shm) {
		enum sv_icrc_match m =
			flow->dst.family ? sv_icrc_check(flow, buf, len, NULL) :
					   SV_ICRC_BAD;

		if (m == SV_ICRC_BAD) {
			SV_STAT(eng, drop_icrc);
			return drop(eng, buf, len, "bad ICRC");
		}
		if (m == SV_ICRC_SOLVED)
			SV_STAT(eng, icrc_id_solved);
	}
	/* The QPN names the socket (port) and the slot on it; what the
	 * standard endpoint (UDP 4791) takes goes to that socket. */
	if (s->roce && pkt.qpn == SV_QPN_GSI) {
		/* QP1 at 4791: the IB CM's MADs, for the CM they name in
		 * whichever process (gsifwd.c); what no CM serves goes to
		 * the engine's GSI QP. */
		if (sv_gsi_forward(eng, &pkt, flow))
			return;
		if (!(qe = eng->gsi)) {
			SV_STAT(eng, drop_no_qp);
			return drop(eng, buf, len, "no GSI QP");
		}
		goto found;
	}
	if (s->roce && !(s = sv_links_qpn_sock(eng, pkt.qpn))) {
		if (sv_links_roce_forward(eng, pkt.qpn, buf, len, flow))
			return; /* another engine's: in its ring */
		s = eng->roce; /* nobody's: dropped below */
	}
	if (sv_qpn_port(pkt.qpn) != s->udp.port ||
	    !(qe = s->slot[sv_qpn_slot(pkt.qpn)])) {
		SV_STAT(eng, drop_no_qp);
		return drop(eng, buf, len, "no such QP");
	}
found:
	/* IBA: our only P_Key is the default full-member
	 * key; a packet matches when the low 15 bits match. */
	if ((sv_bth_pkey(pkt.hdr) & 0x7fff) != (SV_DEFAULT_PKEY & 0x7fff)) {
		SV_STAT(eng, drop_pkey);
		return drop(eng, buf, len, "P_Key mismatch");
	}
	/* IBA (header validation): the opcode must belong to the
	 * QP's transport service. */
	switch (qe->type) {
	case IBV_QPT_RC:
		want = sv_xrc_qp(qe->qp) ? SV_M_XRC : SV_M_RC;
		break;
	case IBV_QPT_UC:
		want = SV_M_UC;
		break;
	case IBV_QPT_UD:
		want = SV_M_UD;
		break;
	default:
		want = 0;
		break;
	}
	if (!(pkt.mask & want)) {
		SV_STAT(eng, drop_transport);
		return drop(eng, buf, len, "opcode of another transport");
	}
	/* A connected QP talks to one peer QP, whose packets leave from the
	 * socket its QPN names: anything else is forged or stray.  A
	 * standard RoCE v2 peer sends from a port of its choosing (rxe: a
	 * hash of its QPN), so there only the address is checked. */
	if ((qe->type == IBV_QPT_RC || qe->type == IBV_QPT_UC) &&
	    ((flow->sport != qe->flow.dport && !sv_links_standard()) ||
	     !sv_ipaddr_eq(&flow->src, &qe->flow.dst))) {
		SV_STAT(eng, drop_wrong_peer);
		/* Another address is a peer given the wrong GID (ours
		 * or its own); another port only a stray packet. */
		if (!sv_ipaddr_eq(&flow->src, &qe->flow.dst))
			sv_hook_explain_wrong_src(qe, flow);
		return drop(eng, buf, len, "not from the connected peer");
	}
	if (!shm && qe->shm)
		sv_links_rx_udp_seen(qe);
	if (!shm && !(pkt.mask & SV_M_END))
		eng->wire_more++; /* the rest of the message follows */
	/* The connected peer takes packets whose ICRC is left to the UDP
	 * checksum (wire.h): ours to it may be so from now on. */
	if (!shm && (qe->type == IBV_QPT_RC || qe->type == IBV_QPT_UC) &&
	    (sv_bth_resv6a(pkt.hdr) & SV_BTH_ICRC_BY_UDP) &&
	    sv_links_skip_icrc())
		qe->peer_skips_icrc = true;
	SV_QSTAT(qe, rx_pkts);
	SV_QSTAT_ADD(qe, rx_bytes, len);
	if (sv_env_trace())
		sv_hook_trace_pkt(eng, shm ? "rx-shm" : "rx", buf, len, NULL);
	if (sv_hook_pcap_on())
		sv_hook_pcap_pkt(qe, false, flow, buf, len);
	if (want == SV_M_XRC)
		sv_xrc_rx(qe, &pkt, flow);
	else if (pkt.mask & SV_M_REQ) {
		/* What a target may wait for spinning on its memory, not
		 * polling: the thread must watch for it (engine.c,
		 * app_loops). */
		if ((pkt.mask & (SV_M_WRITE | SV_M_ATOMIC)) &&
		    !(pkt.mask & SV_M_IMMDT)) {
			eng->mem_reqs++;
			qe->mem_req_batch = eng->rx_batch;
		}
		sv_resp_rx(qe, &pkt, flow);
	} else {
		/* After the request, in the same batch of datagrams: the
		 * response (the peer's ACK, held for its answer: engine.c,
		 * hold_acks) that the application polls for, whose poll
		 * takes the request with it.  ib_write_lat's sides answer
		 * so.  The shm link holds no ACK. */
		if (!shm && qe->mem_req_batch == eng->rx_batch &&
		    eng->mem_reqs) {
			eng->mem_reqs--;
			qe->mem_req_batch = 0;
		}
		sv_comp_rx(qe, &pkt);
	}
}
