/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The round-trip estimate and its timeout (engine/transport/rtt.h, RFC 6298): the
 * first sample, the smoothing of later ones, the variance term, the
 * scheduler granularity and the floor; and which send time an ACK is
 * timed against.
 */
#include "check.h"
#include "engine/transport/rtt.h"

#define US 1000ull

/* The send times: an ACK is timed against the newest packet it covers;
 * a resend forgets that PSN and those after it (Karn); a PSN wrap. */
static void ring(void)
{
	struct sv_rtt_ring q = { 0 };
	uint64_t s = 0;
	int i;

	CHECK(!sv_rtt_acked(&q, 10, 100, &s));
	sv_rtt_sent(&q, 10, 1000);
	sv_rtt_sent(&q, 20, 2000);
	sv_rtt_sent(&q, 30, 3000);
	/* Coalesced: the ACK of 25 answers the packet with PSN 20. */
	CHECK(sv_rtt_acked(&q, 25, 2500, &s));
	CHECK_EQ(s, 500);
	CHECK_EQ(q.n, 1);
	/* Nothing newer covered: no sample. */
	CHECK(!sv_rtt_acked(&q, 29, 9000, &s));
	/* 30 resent: its ACK may have waited for the resend. */
	sv_rtt_forget(&q, 30);
	CHECK_EQ(q.n, 0);
	CHECK(!sv_rtt_acked(&q, 30, 9000, &s));
	/* A resend forgets the PSNs after it too, not those before. */
	sv_rtt_sent(&q, 40, 100);
	sv_rtt_sent(&q, 50, 200);
	sv_rtt_forget(&q, 45);
	CHECK_EQ(q.n, 1);
	CHECK(sv_rtt_acked(&q, 60, 400, &s));
	CHECK_EQ(s, 300);
	/* Full: the oldest make room. */
	for (i = 0; i < SV_RTT_RING + 3; i++)
		sv_rtt_sent(&q, 100 + (uint32_t)i, 1000 + (uint64_t)i);
	CHECK_EQ(q.n, SV_RTT_RING);
	CHECK_EQ(q.psn[0], 103);
	/* Across the 24-bit wrap. */
	q.n = 0;
	sv_rtt_sent(&q, SV_PSN_MASK, 10);
	sv_rtt_sent(&q, 1, 20);
	CHECK(sv_rtt_acked(&q, 0, 50, &s));
	CHECK_EQ(s, 40);
	CHECK_EQ(q.n, 1);
}

int main(void)
{
	struct sv_rtt r = { 0 };
	int i;

	/* No sample yet: the default, never below the floor. */
	CHECK_EQ(sv_rtt_rto(&r, 500 * US, 2000 * US), 2000 * US);
	CHECK_EQ(sv_rtt_rto(&r, 500 * US, 100 * US), 500 * US);

	/* RFC 6298 2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR. */
	sv_rtt_sample(&r, 100 * US);
	CHECK_EQ(r.srtt, 100 * US);
	CHECK_EQ(r.rttvar, 50 * US);
	CHECK_EQ(sv_rtt_rto(&r, 0, 0), 300 * US);
	CHECK_EQ(sv_rtt_rto(&r, 500 * US, 0), 500 * US);

	/* 2.3: RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + R/8. */
	sv_rtt_sample(&r, 180 * US);
	CHECK_EQ(r.rttvar, (3 * 50 * US + 80 * US) / 4);
	CHECK_EQ(r.srtt, (7 * 100 * US + 180 * US) / 8);

	/* Steady samples: the variance decays and the granularity term
	 * (SV_RTT_G_NS) is what is left above SRTT. */
	for (i = 0; i < 200; i++)
		sv_rtt_sample(&r, 40 * US);
	CHECK_EQ(r.srtt, 40 * US);
	CHECK(r.rttvar < 2 * US);
	CHECK_EQ(sv_rtt_rto(&r, 0, 0), 40 * US + SV_RTT_G_NS);

	/* A late ACK (a descheduled peer) raises the timeout by far more
	 * than the smoothed mean moves. */
	sv_rtt_sample(&r, 5000 * US);
	CHECK(r.srtt < 700 * US);
	CHECK(sv_rtt_rto(&r, 0, 0) > 4000 * US);

	/* A zero sample (same clock tick) still counts as a sample. */
	r = (struct sv_rtt){ 0 };
	sv_rtt_sample(&r, 0);
	CHECK(r.srtt > 0);
	ring();
	return check_done();
}
