/*
 * Between the link and the state machines: the transmit batch (packets
 * are built in place, ICRC'd, and sent with one sendmmsg per socket run)
 * and the receive demultiplexer (parse, ICRC, QPN -> QP, P_Key, transport,
 * then the responder for requests or the completer for responses).
 */
#include "engine/internal.h"

#include <arpa/inet.h>

#include "util/log.h"

/* ---- transmit -------------------------------------------------------------- */

struct sv_tx *sv_tx_get(struct sv_engine *eng)
{
	if (eng->ntx == SV_TX_BATCH)
		sv_tx_flush(eng);
	return &eng->tx[eng->ntx];
}

uint8_t *sv_tx_hdr(struct sv_qp_engine *qe, struct sv_tx *t, uint8_t opcode,
		   uint32_t psn, uint32_t paylen)
{
	const struct sv_opinfo *info = &sv_opinfo[opcode];
	uint32_t pad = (4 - (paylen & 3)) & 3;
	uint8_t *b = t->buf;

	t->len = info->length + paylen + pad + SV_ICRC_BYTES;
	memset(b, 0, info->length);
	memset(b + info->length + paylen, 0, pad);
	sv_bth_set_opcode(b, opcode);
	sv_bth_set_pad(b, pad);
	sv_bth_set_pkey(b, SV_DEFAULT_PKEY);
	sv_bth_set_qpn(b, qe->dest_qpn);
	sv_bth_set_psn(b, psn);
	t->sock = qe->sock;
	t->dst = qe->peer;
	t->src = qe->flow.src;
	t->shm = qe->shm;
	return b;
}

void sv_tx_finish(struct sv_qp_engine *qe, struct sv_tx *t)
{
	struct sv_engine *eng = qe->eng;
	struct sv_flow f;

	if (sv_xrc_qp(qe->qp))
		sv_xrc_tx(qe, t);
	if (sv_trace_on)
		sv_trace_pkt(eng, t->shm ? "tx-shm" : "tx", t->buf, t->len,
			     NULL);
	eng->ntx++;
	if (t->shm) {
		/* No wire, no ICRC (shm.h): the receiver does not check it. */
		SV_STAT(eng, shm_tx_pkts);
		return;
	}
	f.src = t->src;
	sv_sockaddr_to_ipaddr((struct sockaddr *)&t->dst, &f.dst, &f.dport);
	f.sport = t->sock->udp.port;
	sv_icrc_set(&f, t->buf, t->len);
	SV_STAT(eng, sent_pkts);
}

/* Fault injection for tests (SOFTVERBS_LOSS=percent): a share of the
 * packets we send is silently dropped, as a lossy network would. */
static bool inject_loss(struct sv_engine *eng)
{
	uint64_t x;

	if (!sv_loss_pct)
		return false;
	x = eng->rng ? eng->rng : 0x9e3779b97f4a7c15ull ^ (uintptr_t)eng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	eng->rng = x;
	if (x % 100 >= (uint64_t)sv_loss_pct)
		return false;
	SV_STAT(eng, drop_injected);
	return true;
}

/* Runs of packets for the same link and socket: a shm run goes into one
 * peer's ring at once, a UDP run is one sendmmsg. */
void sv_tx_flush(struct sv_engine *eng)
{
	struct sv_udp_tx batch[SV_TX_BATCH];
	struct sv_tx *run[SV_TX_BATCH];
	unsigned int i = 0;

	while (i < eng->ntx) {
		struct sv_sock *s = eng->tx[i].sock;
		struct sv_shm_peer *peer = eng->tx[i].shm;
		unsigned int n = 0, k = 0;

		for (; i + k < eng->ntx && eng->tx[i + k].sock == s &&
		       eng->tx[i + k].shm == peer;
		     k++) {
			struct sv_tx *t = &eng->tx[i + k];

			if (inject_loss(eng))
				continue;
			run[n] = t;
			batch[n].buf = t->buf;
			batch[n].len = t->len;
			batch[n].dst = &t->dst;
			batch[n].src = &t->src;
			n++;
		}
		if (n && peer)
			sv_shm_tx(eng, run, n);
		else if (n)
			eng->stats.send_err +=
				(uint64_t)sv_udp_send(&s->udp, batch, (int)n);
		i += k;
	}
	eng->ntx = 0;
}

/* ACKNOWLEDGE carrying the responder's MSN (IBA). */
void sv_send_ack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn)
{
	struct sv_tx *t = sv_tx_get(qe->eng);
	uint8_t *b = sv_tx_hdr(qe, t, SV_OP_RC_ACKNOWLEDGE, psn, 0);
	uint8_t *aeth = b + sv_opinfo[SV_OP_RC_ACKNOWLEDGE].offset[SV_HDR_AETH];

	sv_aeth_set_syndrome(aeth, syndrome);
	sv_aeth_set_msn(aeth, qe->resp.msn);
	sv_tx_finish(qe, t);
	if ((syndrome & SV_AETH_TYPE_MASK) == SV_AETH_ACK)
		SV_STAT(qe->eng, ack_sent);
}

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
	if (sv_trace_on)
		sv_trace_pkt(eng, "rx-drop", buf, len, why);
}

/* One packet from either link: a UDP datagram (ICRC checked) or a slot of
 * our shm ring (no ICRC: shm.h).  Every other check is the same. */
void sv_rx_pkt(struct sv_engine *eng, struct sv_sock *s, uint8_t *buf,
	       uint32_t len, bool truncated, const struct sv_flow *flow,
	       bool shm)
{
	struct sv_qp_engine *qe;
	enum sv_pkt_err err;
	struct sv_pkt pkt;
	uint32_t want;

	if (!shm) {
		/* A zero-length datagram is a shm doorbell (shmpath.c): it
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
	/* IBA (RoCE v2: Annex A17): the ICRC is checked before any
	 * field is trusted. */
	if (!shm && (!flow->dst.family || !sv_icrc_check(flow, buf, len))) {
		SV_STAT(eng, drop_icrc);
		return drop(eng, buf, len, "bad ICRC");
	}
	/* The QPN names the socket (port) and the slot on it. */
	if (sv_qpn_port(pkt.qpn) != s->udp.port ||
	    !(qe = s->slot[sv_qpn_slot(pkt.qpn)])) {
		SV_STAT(eng, drop_no_qp);
		return drop(eng, buf, len, "no such QP");
	}
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
	 * socket its QPN names: anything else is forged or stray. */
	if ((qe->type == IBV_QPT_RC || qe->type == IBV_QPT_UC) &&
	    (flow->sport != qe->flow.dport ||
	     !sv_ipaddr_eq(&flow->src, &qe->flow.dst))) {
		SV_STAT(eng, drop_wrong_peer);
		return drop(eng, buf, len, "not from the connected peer");
	}
	if (!shm && qe->shm)
		sv_shm_rx_udp_seen(qe);
	if (sv_trace_on)
		sv_trace_pkt(eng, shm ? "rx-shm" : "rx", buf, len, NULL);
	if (want == SV_M_XRC)
		sv_xrc_rx(qe, &pkt, flow);
	else if (pkt.mask & SV_M_REQ)
		sv_resp_rx(qe, &pkt, flow);
	else
		sv_comp_rx(qe, &pkt);
}

void sv_rx_sock(struct sv_engine *eng, struct sv_sock *s)
{
	unsigned int budget = SV_RX_BUDGET;

	while (budget) {
		int i, n = sv_udp_recv(&s->udp, eng->rx, SV_RX_BATCH);

		for (i = 0; i < n; i++) {
			struct sv_udp_rx *r = &eng->rx[i];

			sv_rx_pkt(eng, s, r->buf, r->len, r->truncated,
				  &r->flow, false);
		}
		if (n < SV_RX_BATCH)
			break;
		budget -= (unsigned int)n < budget ? (unsigned int)n : budget;
	}
}
