/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A QP's round-trip estimate and the retransmission timeout it gives
 * (RFC 6298's SRTT/RTTVAR), for the probe timer (comp.c): the fast
 * retransmit that spends no retry.  When a QP gives up is still IBA's
 * `timeout` and `retry_cnt` (the ACK timer), never this.
 *
 * Pure arithmetic on nanoseconds and PSNs, so a unit test can drive it
 * with made-up samples.
 *
 * Samples: the requester remembers when it sent the last few packets
 * that asked for an ACK (first sends only), and an ACK is timed against
 * the newest of them it covers: the responder acknowledges the newest
 * PSN that asked, coalescing, so that is the packet that made it answer.
 * Timing one PSN at a time and taking whatever later ACK covers it would
 * count a lost ACK, and the stall until the next one, as round trip
 * (tens of ms under 10% loss, and a probe slower than the ACK timer).
 * Karn's rule, for cumulative ACKs: a resend of a PSN forgets every send
 * time at or after it, since their ACKs may have waited for it.
 */
#ifndef SV_ENGINE_RTT_H
#define SV_ENGINE_RTT_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/wire.h"

struct sv_rtt {
	uint64_t srtt; /* ns, smoothed round trip; 0: no sample yet */
	uint64_t rttvar; /* ns, its mean deviation */
};

/* Send times of the packets asking for an ACK still unanswered. */
#define SV_RTT_RING 8

struct sv_rtt_ring {
	uint32_t psn[SV_RTT_RING];
	uint64_t t[SV_RTT_RING];
	uint32_t n; /* entries, oldest first */
};

/* A packet asking for an ACK went out for the first time (the oldest
 * entry makes room). */
static inline void sv_rtt_sent(struct sv_rtt_ring *q, uint32_t psn, uint64_t t)
{
	uint32_t i;

	if (q->n == SV_RTT_RING) {
		for (i = 1; i < SV_RTT_RING; i++) {
			q->psn[i - 1] = q->psn[i];
			q->t[i - 1] = q->t[i];
		}
		q->n--;
	}
	q->psn[q->n] = psn;
	q->t[q->n] = t;
	q->n++;
}

/* psn goes out again (Karn): forget it and everything after it. */
static inline void sv_rtt_forget(struct sv_rtt_ring *q, uint32_t psn)
{
	while (q->n && sv_psn_diff(q->psn[q->n - 1], psn) >= 0)
		q->n--;
}

/* An ACK of everything through psn at now: the round trip of the newest
 * entry it covers, if any (true), and those entries are done. */
static inline bool sv_rtt_acked(struct sv_rtt_ring *q, uint32_t psn,
				uint64_t now, uint64_t *sample)
{
	uint32_t k = 0, i;

	while (k < q->n && sv_psn_diff(q->psn[k], psn) <= 0)
		k++;
	if (!k)
		return false;
	*sample = now > q->t[k - 1] ? now - q->t[k - 1] : 0;
	for (i = k; i < q->n; i++) {
		q->psn[i - k] = q->psn[i];
		q->t[i - k] = q->t[i];
	}
	q->n -= k;
	return true;
}

/* The clock granularity term of RFC 6298's RTO = SRTT + max(G, 4 RTTVAR):
 * not the clock's (ns) but the host scheduler's, which decides when an
 * ACK is seen (a progress pass, a wake-up). */
#define SV_RTT_G_NS (100ull * 1000)

/* RFC 6298 2.2 (first sample) and 2.3 (the others, alpha 1/8, beta 1/4). */
static inline void sv_rtt_sample(struct sv_rtt *r, uint64_t s)
{
	uint64_t d;

	if (!s)
		s = 1; /* 0 means "no sample yet" */
	if (!r->srtt) {
		r->srtt = s;
		r->rttvar = s / 2;
		return;
	}
	d = r->srtt > s ? r->srtt - s : s - r->srtt;
	r->rttvar = (3 * r->rttvar + d) / 4;
	r->srtt = (7 * r->srtt + s) / 8;
}

/* The timeout: none before the first sample, else SRTT + max(G,
 * 4 RTTVAR), never below floor. */
static inline uint64_t sv_rtt_rto(const struct sv_rtt *r, uint64_t floor,
				  uint64_t none)
{
	uint64_t v, ns;

	if (!r->srtt)
		return none > floor ? none : floor;
	v = 4 * r->rttvar > SV_RTT_G_NS ? 4 * r->rttvar : SV_RTT_G_NS;
	ns = r->srtt + v;
	return ns < floor ? floor : ns;
}

#endif
