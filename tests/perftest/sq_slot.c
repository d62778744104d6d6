/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What ib_write_bw relies on, distilled: a send queue kept full to its
 * max_send_wr, every WR signaled; each time one completion is polled, one
 * WR is posted at once.  With rdma-core's providers the slot of a polled
 * completion is free, so that post must succeed.  perftest's bandwidth
 * loop does exactly this with tx_depth = max_send_wr and stops with
 * "Couldn't post send" on the first ENOMEM.
 *
 * Also checked: completions come back in posting order with their wr_id,
 * and the peer's buffer holds the last value written.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"

#define DEPTH 16
#define ROUNDS 500000

static void sqslot_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	uint64_t *val, next = 0, polled = 0;
	long refused = 0;
	struct hx_ep ep;
	struct ibv_wc wc;
	uint32_t depth;
	int n, r;

	o.max_send_wr = DEPTH;
	o.send_cqe = 4 * DEPTH;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	depth = ep.cap.max_send_wr;
	val = (uint64_t *)ep.buf;

	/* Each WR writes its own number into the peer's first 8 bytes. */
	for (; next < depth; next++) {
		val[next % 64] = next;
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, next,
					 &val[next % 64], 8, ep.mr->lkey,
					 ep.peer.addr, ep.peer.rkey, 0),
			    0);
	}
	while (polled < ROUNDS) {
		uint64_t t0 = hx_now_ms();

		do
			n = ibv_poll_cq(ep.scq, 1, &wc);
		while (n == 0 && hx_now_ms() - t0 < 10000);
		if (n != 1)
			hx_die("no completion for wr_id %llu (poll %d)",
			       (unsigned long long)polled, n);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != polled)
			hx_die("completion wr_id %llu status %s, expected wr_id %llu success",
			       (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status),
			       (unsigned long long)polled);
		polled++;
		if (next == ROUNDS)
			continue;
		/* The slot just reported complete is ours again. */
		val[next % 64] = next;
		r = hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				 next, &val[next % 64], 8, ep.mr->lkey,
				 ep.peer.addr, ep.peer.rkey, 0);
		while (r == ENOMEM) {
			refused++; /* counted; posted once the engine lets it */
			r = hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, next,
					 &val[next % 64], 8, ep.mr->lkey,
					 ep.peer.addr, ep.peer.rkey, 0);
		}
		HX_CHECK_RC(r, 0);
		next++;
	}
	hx_log("%llu WRs at depth %u; ENOMEM right after a polled completion: %ld",
	       (unsigned long long)next, depth, refused);
	CHECK(refused == 0);
	hx_send_u64(fd, next - 1);
	hx_sync(fd);
}

static void sqslot_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t last;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	last = hx_recv_u64(fd);
	/* Writes on one RC QP land in order: the last one's value stays. */
	CHECK_EQ(*(volatile uint64_t *)ep.buf, last);
	hx_sync(fd);
}

static const struct hx_case cases[] = {
	HX_CASE(sqslot, 120),
	{ 0 },
};

HX_MAIN(cases)
