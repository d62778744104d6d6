/*
 * A QP's round-trip estimate and the retransmission timeout it gives
 * (RFC 6298's SRTT/RTTVAR), for the probe timer (comp.c): the fast
 * retransmit that spends no retry.  When a QP gives up is still IBA's
 * `timeout` and `retry_cnt` (the ACK timer), never this.
 *
 * Pure arithmetic on nanoseconds, so a unit test can drive it with
 * made-up samples.  Karn's rule (no sample from a PSN that was sent
 * twice) is the caller's: it times only PSNs sent for the first time and
 * forgets the timing when that PSN is resent.
 */
#ifndef SV_ENGINE_RTT_H
#define SV_ENGINE_RTT_H

#include <stdint.h>

struct sv_rtt {
	uint64_t srtt; /* ns, smoothed round trip; 0: no sample yet */
	uint64_t rttvar; /* ns, its mean deviation */
};

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
