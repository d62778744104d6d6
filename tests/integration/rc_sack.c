/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Selective retransmission (docs/engine.md, Reliability): RDMA WRITEs of
 * 1 MiB and a few SENDs under packet loss injected in both directions
 * (SOFTVERBS_FAULT drop=5%, fixed seed, set the same in both processes).
 *
 *   - selective: every byte arrives, every completion is a success; the
 *     responder placed out-of-order WRITE packets ahead (ooo_kept), the
 *     requester resent holes (sack_resend) and at most 3 packets per
 *     packet dropped on either side (a lost request is resent, a lost ACK
 *     or resend costs a probe, a SEND's packets after a gap are not kept
 *     and go again), where going back N resends every packet in flight
 *     after each loss (5 to 6 per drop here);
 *   - gobackn: the same traffic with SOFTVERBS_SACK=0 on both sides:
 *     correct too, nothing kept, no selective resend (the requester of a
 *     peer that does not say it keeps packets goes back N), and more
 *     packets resent than the selective bound allows (what the bound in
 *     the first case rules out).
 *
 * The integration.udp.* copies run the same over UDP.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define NWRITE 24
#define NSEND 4
#define MSG (1u << 20)
#define SEND_OFF ((size_t)NWRITE * MSG)
#define BUF ((size_t)(NWRITE + NSEND) * MSG)
#define SPEC "drop=5%,dir=tx;seed=11"

static void open_pair(struct hx_ep *ep, int fd, bool sack)
{
	struct hx_opts o = hx_opts_default();

	setenv("SOFTVERBS_FAULT", SPEC, 1);
	setenv("SOFTVERBS_STATS", "1", 1);
	setenv("SOFTVERBS_SACK", sack ? "1" : "0", 1);
	o.buf_len = BUF;
	o.timeout = 10; /* 4.2 ms: losses are repaired soon */
	o.path_mtu = IBV_MTU_1024; /* many packets per message */
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static void traffic_a(struct hx_ep *ep)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < NWRITE + NSEND; i++)
		hx_fill(ep->buf + (size_t)i * MSG, MSG, 500 + i);
	hx_sync(ep->fd); /* B's receives are posted */
	for (i = 0; i < NWRITE + NSEND; i++) {
		size_t off = (size_t)i * MSG;

		if (i < NWRITE)
			HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE,
						 IBV_SEND_SIGNALED, i,
						 ep->buf + off, MSG,
						 ep->mr->lkey,
						 ep->peer.addr + off,
						 ep->peer.rkey, 0),
				    0);
		else
			HX_CHECK_RC(hx_post_send(ep, IBV_WR_SEND,
						 IBV_SEND_SIGNALED, i,
						 ep->buf + off, MSG,
						 ep->mr->lkey, 0, 0, 0),
				    0);
	}
	for (i = 0; i < NWRITE + NSEND; i++)
		HX_EXPECT_T(ep->scq, &wc, i, IBV_WC_SUCCESS, -1, -1, 60000);
	hx_sync(ep->fd); /* B checks */
	hx_sync(ep->fd);
}

static void traffic_b(struct hx_ep *ep)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < NSEND; i++)
		HX_CHECK_RC(hx_post_recv(ep, i,
					 ep->buf + SEND_OFF + (size_t)i * MSG,
					 MSG, ep->mr->lkey),
			    0);
	hx_sync(ep->fd);
	hx_sync(ep->fd); /* A's WRITEs and SENDs completed */
	for (i = 0; i < NSEND; i++)
		HX_EXPECT_T(ep->rcq, &wc, i, IBV_WC_SUCCESS, IBV_WC_RECV, MSG,
			    60000);
	for (i = 0; i < NWRITE + NSEND; i++)
		HX_CHECK_PATTERN(ep->buf + (size_t)i * MSG, MSG, 500 + i);
	hx_sync(ep->fd);
}

static const char *const names[] = { "fault_drop", "retrans_pkts",
				     "sack_resend", "ooo_kept", NULL };

/* Both sides' counters at close, A's in a, B's in b. */
static void run(int fd, bool is_a, bool sack, unsigned long long a[4],
		unsigned long long b[4])
{
	unsigned long long *mine = is_a ? a : b, *theirs = is_a ? b : a;
	struct hx_ep ep;
	int i;

	open_pair(&ep, fd, sack);
	if (is_a)
		traffic_a(&ep);
	else
		traffic_b(&ep);
	hx_ep_close_counters(&ep, names, mine);
	for (i = 0; i < 4; i++) {
		hx_send_u64(fd, mine[i]);
		theirs[i] = hx_recv_u64(fd);
	}
	hx_log("%s: A drop %llu retrans %llu sack %llu, B drop %llu kept %llu",
	       sack ? "selective" : "go-back-N", a[0], a[1], a[2], b[0], b[3]);
}

static void selective(int fd, bool is_a)
{
	unsigned long long a[4], b[4];

	run(fd, is_a, true, a, b);
	CHECK(a[0] > 0 && b[0] > 0); /* losses both ways */
	CHECK(b[3] > 0); /* B placed WRITE packets ahead */
	CHECK(a[2] > 0); /* A resent holes */
	CHECK(a[1] <= 3 * (a[0] + b[0]));
}

static void gobackn(int fd, bool is_a)
{
	unsigned long long a[4], b[4];

	run(fd, is_a, false, a, b);
	CHECK(a[0] > 0);
	CHECK_EQ(b[3], 0);
	CHECK_EQ(a[2], 0);
	CHECK(a[1] > 3 * (a[0] + b[0]));
}

static void selective_a(int fd)
{
	selective(fd, true);
}

static void selective_b(int fd)
{
	selective(fd, false);
}

static void gobackn_a(int fd)
{
	gobackn(fd, true);
}

static void gobackn_b(int fd)
{
	gobackn(fd, false);
}

static const struct hx_case cases[] = { HX_CASE(selective, 90),
					HX_CASE(gobackn, 90),
					{ 0 } };

HX_MAIN(cases)
