/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A UD server answering two peers in turn (issue #15 item 3, the UD
 * ping-pong over UDP): A's two UD QPs send, in turn, ROUNDS pings to B's
 * one QP; B answers each on an address handle it made once per peer with
 * ibv_create_ah_from_wc, as a datagram server does.  Every ping and pong
 * is checked byte for byte at its receiver, and the pong goes back to the
 * QP that pinged.
 *
 * Each AH is resolved to IP addresses (a scan of the GID table: getifaddrs
 * and an interface lookup per address, tens of microseconds) once, when it
 * is created, and kept.  A cache of the last AH per QP paid that scan again
 * whenever the destination changed: for B, on every message.  The
 * counter ud_ah_resolved (SOFTVERBS_STATS at close) counts the scans: at
 * least one (the AHs were used) and at most one per AH - 2 at B, 1 at A
 * (one AH shared by its two QPs).  UD always travels over UDP.
 */
#include <stdlib.h>

#include "xqp.h"

#define ROUNDS 200
#define LEN 256u
#define SLOT 8192u /* receive buffer stride: GRH + the largest MTU */
#define NPEER 2

static void open_ud(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();

	o.max_send_wr = 16;
	o.max_recv_wr = 16;
	setenv("SOFTVERBS_STATS", "1", 1);
	hx_ep_open(ep, &o, fd);
	xq_new_qp(ep, IBV_QPT_UD, NULL);
	REQUIRE(xq_ud_rts(ep->qp) == 0);
}

/* The pattern of round r's message in direction dir (0 ping, 1 pong). */
static uint64_t seed(int r, int dir)
{
	return 5000 + (uint64_t)r * 2 + (uint64_t)dir;
}

static void two_ah_pingpong_a(int fd)
{
	struct ibv_qp *qp[NPEER];
	unsigned long long resolved;
	struct hx_ep ep;
	struct ibv_ah *ah;
	uint8_t *rx[NPEER], *tx;
	int r, i;

	open_ud(&ep, fd);
	qp[0] = ep.qp;
	qp[1] = xq_create(&ep, IBV_QPT_UD, NULL);
	REQUIRE(xq_ud_rts(qp[1]) == 0);
	tx = ep.buf;
	for (i = 0; i < NPEER; i++) {
		rx[i] = ep.buf + (i + 1) * SLOT;
		REQUIRE(xq_post_recv(qp[i], i, rx[i], SLOT, ep.mr->lkey) == 0);
	}
	hx_ep_exchange(&ep);
	ah = xq_ah(&ep, &ep.peer.gid);
	hx_sync(fd); /* B's receives are posted */
	for (r = 0; r < ROUNDS; r++) {
		struct ibv_wc wc;

		i = r % NPEER;
		hx_fill(tx, LEN, seed(r, 0));
		HX_CHECK_RC(xq_ud_send(qp[i], ah, ep.peer.qpn, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, 100 + r,
				       tx, LEN, ep.mr->lkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 100 + r, IBV_WC_SUCCESS, IBV_WC_SEND,
			  LEN);
		if (!HX_EXPECT(ep.rcq, &wc, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, XQ_GRH + LEN))
			break;
		/* The pong came back to the QP that pinged. */
		CHECK_EQ(wc.qp_num, qp[i]->qp_num);
		HX_CHECK_PATTERN(rx[i] + XQ_GRH, LEN, seed(r, 1));
		REQUIRE(xq_post_recv(qp[i], i, rx[i], SLOT, ep.mr->lkey) == 0);
	}
	hx_sync(fd);
	CHECK(ibv_destroy_ah(ah) == 0);
	CHECK(ibv_destroy_qp(qp[1]) == 0);
	resolved = hx_ep_close_counter(&ep, "ud_ah_resolved");
	hx_log("%d pings from 2 QPs through one AH: ud_ah_resolved %llu",
	       ROUNDS, resolved);
	CHECK(resolved >= 1);
	CHECK(resolved <= 1);
}

static void two_ah_pingpong_b(int fd)
{
	struct ibv_ah *ah[NPEER] = { NULL, NULL };
	uint32_t peer_qpn[NPEER] = { 0, 0 };
	unsigned long long resolved;
	struct hx_ep ep;
	uint8_t *tx;
	int r, i, npeer = 0;

	open_ud(&ep, fd);
	tx = ep.buf;
	for (i = 0; i < 8; i++)
		REQUIRE(xq_post_recv(ep.qp, i, ep.buf + (i + 1) * SLOT, SLOT,
				     ep.mr->lkey) == 0);
	hx_ep_exchange(&ep);
	hx_sync(fd);
	for (r = 0; r < ROUNDS; r++) {
		struct ibv_wc wc;
		uint8_t *rx;

		if (hx_poll(ep.rcq, &wc, 1, 10000) != 1) {
			hx_log("round %d: no ping", r);
			CHECK(0);
			break;
		}
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.byte_len, XQ_GRH + LEN);
		rx = ep.buf + (wc.wr_id + 1) * SLOT;
		HX_CHECK_PATTERN(rx + XQ_GRH, LEN, seed(r, 0));
		/* One AH per peer, made from its first datagram. */
		for (i = 0; i < npeer && peer_qpn[i] != wc.src_qp; i++)
			;
		if (i == npeer) {
			REQUIRE(npeer < NPEER);
			ah[i] = ibv_create_ah_from_wc(ep.pd, &wc,
						      (struct ibv_grh *)rx, 1);
			REQUIRE(ah[i] != NULL);
			peer_qpn[i] = wc.src_qp;
			npeer++;
		}
		hx_fill(tx, LEN, seed(r, 1));
		HX_CHECK_RC(xq_ud_send(ep.qp, ah[i], wc.src_qp, XQ_QKEY,
				       IBV_WR_SEND, IBV_SEND_SIGNALED, 100 + r,
				       tx, LEN, ep.mr->lkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, 100 + r, IBV_WC_SUCCESS, IBV_WC_SEND,
			  LEN);
		REQUIRE(xq_post_recv(ep.qp, wc.wr_id, rx, SLOT, ep.mr->lkey) ==
			0);
	}
	CHECK_EQ(npeer, NPEER);
	hx_sync(fd);
	for (i = 0; i < npeer; i++)
		CHECK(ibv_destroy_ah(ah[i]) == 0);
	resolved = hx_ep_close_counter(&ep, "ud_ah_resolved");
	hx_log("%d pongs to 2 peers in turn, one AH each: ud_ah_resolved %llu",
	       ROUNDS, resolved);
	if (resolved > NPEER)
		fprintf(stderr,
			"[B] the AHs were resolved again and again: %llu GID-table scans for %d AHs\n",
			resolved, NPEER);
	CHECK(resolved >= 1);
	CHECK(resolved <= NPEER);
}

static const struct hx_case cases[] = {
	HX_CASE(two_ah_pingpong, 60),
	{ 0 },
};

HX_MAIN(cases)
