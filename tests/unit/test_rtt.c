/*
 * The round-trip estimate and its timeout (engine/rtt.h, RFC 6298): the
 * first sample, the smoothing of later ones, the variance term, the
 * scheduler granularity and the floor.
 */
#include "check.h"
#include "engine/rtt.h"

#define US 1000ull

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
	return check_done();
}
