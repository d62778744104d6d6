/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Transmit: the batch a pass builds (packets are built in place, get their
 * ICRC, and leave through each QP's link: the peer's shm ring, else one
 * sendmmsg per socket run), and the ACK/NAK packet of the responder.
 */
#include "engine/transport/xmit.h"

#include <arpa/inet.h>

#include "engine/transport/eng.h"
#include "engine/transport/hooks.h"
#include "engine/transport/limits.h"
#include "engine/transport/links.h"
#include "engine/transport/qpe.h"
#include "engine/transport/resp.h"
#include "engine/transport/stats.h"
#include "engine/transport/xrc.h"
#include "proto/icrc.h"
#include "util/env.h"
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
	if (sv_links_skip_icrc())
		sv_bth_set_resv6a(b, SV_BTH_ICRC_BY_UDP);
	t->sock = qe->sock;
	t->dst = qe->peer;
	t->src = qe->flow.src;
	t->tclass = qe->flow.tclass;
	t->qe = qe;
	/* A lost segmented send loses every packet in it.  While the
	 * congestion window is under a quarter of the window (losses cut
	 * it), one send could hold the whole flight and leave the receiver
	 * no later packet to see the gap by: the probe or the timer would
	 * have to find it, and a lossy path would run at the timer's pace
	 * (docs/engine.md). */
	t->ack = false;
	t->stream = false;
	t->alone = qe->cwnd * 4 < qe->window ||
		   ((info->mask & SV_M_REQ) &&
		    sv_psn_diff(psn, qe->req.max_psn) < 0);
	sv_links_of_qp(qe, &t->link, &t->peer);
	return b;
}

void sv_tx_finish(struct sv_qp_engine *qe, struct sv_tx *t)
{
	struct sv_engine *eng = qe->eng;
	struct sv_flow f;

	if (sv_xrc_qp(qe->qp))
		sv_xrc_tx(qe, t);
	if (sv_env_trace())
		sv_hook_trace_pkt(eng, t->link->wire ? "tx" : "tx-shm", t->buf,
				  t->len, NULL);
	eng->ntx++;
	SV_QSTAT(qe, tx_pkts);
	SV_QSTAT_ADD(qe, tx_bytes, t->len);
	if (!t->link->wire)
		/* No wire, no ICRC (link.h): a zero in its place, which
		 * fault injection turns into "bad ICRC" (inject.c). */
		memset(t->buf + t->len - SV_ICRC_BYTES, 0, SV_ICRC_BYTES);
	if (!t->link->wire && !sv_hook_pcap_on()) {
		SV_STAT(eng, shm_tx_pkts);
		return;
	}
	memset(&f, 0, sizeof(f));
	f.src = t->src;
	f.tclass = t->tclass;
	sv_sockaddr_to_ipaddr((struct sockaddr *)&t->dst, &f.dst, &f.dport);
	f.sport = t->sock->udp.port;
	if (sv_hook_pcap_on())
		sv_hook_pcap_pkt(qe, true, &f, t->buf, t->len);
	if (!t->link->wire) {
		SV_STAT(eng, shm_tx_pkts);
		return;
	}
	if (qe->peer_skips_icrc &&
	    (sv_bth_resv6a(t->buf) & SV_BTH_ICRC_BY_UDP)) {
		/* Left to the UDP checksum (wire.h): at MTU 1500 the ICRC
		 * was a sixth of a sender's CPU. */
		memset(t->buf + t->len - SV_ICRC_BYTES, 0, SV_ICRC_BYTES);
		SV_STAT(eng, icrc_left_tx);
	} else {
		sv_icrc_set(&f, t->buf, t->len);
	}
	if (t->stream)
		eng->wire_more++; /* its ACK comes from the peer's engine */
	SV_STAT(eng, sent_pkts);
}

/* A pass that completed receives may keep its ACKs back for the next pass
 * (engine.c, hold_acks): the application usually answers at once, posting
 * its reply or its next receive, and that pass sends the held ACKs after
 * its own packets, in the same sendmmsg.  Sent at once, an ACK cost the
 * answer a trip of its own through the UDP stack, a large part of a
 * small message's one-way time.  Only positive ACKs on
 * a wire link, and only once: the next pass sends them.  Whether the batch
 * is such ACKs only: */
bool sv_tx_acks_only(const struct sv_engine *eng)
{
	unsigned int i;

	if (eng->tx_held || !eng->ntx)
		return false;
	for (i = 0; i < eng->ntx; i++)
		if (!eng->tx[i].ack || !eng->tx[i].link->wire)
			return false;
	return true;
}

/* Hold them (sv_tx_acks_only said so). */
void sv_tx_hold_acks(struct sv_engine *eng, uint64_t now)
{
	eng->tx_held = eng->ntx;
	eng->tx_held_at = now;
	eng->stats->ack_held += eng->ntx;
}

/* The i-th packet to leave: the held ACKs last. */
static struct sv_tx *tx_at(struct sv_engine *eng, unsigned int i)
{
	unsigned int fresh = eng->ntx - eng->tx_held;

	return &eng->tx[i < fresh ? eng->tx_held + i : i - fresh];
}

/* Runs of packets for the same socket, link and peer: a run goes into one
 * peer's ring at once, or is one sendmmsg. */
void sv_tx_flush(struct sv_engine *eng)
{
	/* Room for every packet twice (fault injection: dup). */
	struct sv_link_pkt batch[2 * SV_TX_BATCH];
	bool inject = sv_hook_inject_tx_on();
	unsigned int i = 0;

	eng->held_gen++;

	while (i < eng->ntx) {
		struct sv_tx *first = tx_at(eng, i);
		unsigned int n = 0, k = 0;

		for (; i + k < eng->ntx &&
		       tx_at(eng, i + k)->sock == first->sock &&
		       tx_at(eng, i + k)->link == first->link &&
		       tx_at(eng, i + k)->peer == first->peer;
		     k++) {
			struct sv_tx *t = tx_at(eng, i + k);
			unsigned int copies =
				inject ? sv_hook_inject_tx(eng, t, t->qe->qpn) :
					 1;

			while (copies--) {
				batch[n].buf = t->buf;
				batch[n].len = t->len;
				batch[n].dst = &t->dst;
				batch[n].src = &t->src;
				batch[n].tclass = t->tclass;
				batch[n].alone = t->alone;
				n++;
			}
		}
		if (n)
			sv_links_tx(eng, first->sock, first->link, first->peer,
				    batch, n);
		i += k;
	}
	/* Held past their time: the thread ran late (a core shared with
	 * a spinning application, the scheduler's slice). */
	if (eng->tx_held && sv_now_ns() - eng->tx_held_at > 2 * SV_ACK_HOLD_NS)
		SV_STAT(eng, ack_held_late);
	eng->ntx = 0;
	eng->tx_held = 0;
	eng->reqs_held_at = 0;
	eng->reqs_held = 0;
	if (eng->held)
		sv_hook_inject_release(eng, false);
}

/* ACKNOWLEDGE carrying the responder's MSN (IBA). */
void sv_send_ack(struct sv_qp_engine *qe, uint8_t syndrome, uint32_t psn)
{
	struct sv_tx *t = sv_tx_get(qe->eng);
	uint8_t *b = sv_tx_hdr(qe, t, SV_OP_RC_ACKNOWLEDGE, psn, 0);
	uint8_t *aeth = b + sv_opinfo[SV_OP_RC_ACKNOWLEDGE].offset[SV_HDR_AETH];

	sv_aeth_set_syndrome(aeth, syndrome);
	sv_aeth_set_msn(aeth, qe->resp.msn);
	sv_bth_set_resv7(b, sv_resp_sack(qe, syndrome, psn));
	t->ack = (syndrome & SV_AETH_TYPE_MASK) == SV_AETH_ACK;
	sv_tx_finish(qe, t);
	if (t->ack)
		SV_STAT(qe->eng, ack_sent);
}
