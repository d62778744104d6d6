/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Deregistration while a peer streams small WRITEs into the region
 * (rc_direct_batch's and rc_chan_write's `dereg`): the writer's rounds
 * and the target's side, shared by the two paths' tests.  Include after
 * check.h and harness.h.
 */
#ifndef SV_TEST_DEREG_RACE_H
#define SV_TEST_DEREG_RACE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DR_BATCH 64 /* WRITEs a round, the last signaled */
#define DR_STRIDE 64 /* perftest's step between small messages */

/* A's side: rounds of DR_BATCH 8-byte WRITEs, posted one by one with
 * new values each round (a late write would show), until the target's
 * deregistration refuses one: REM_ACCESS_ERR for the first refused, the
 * rest of its round flushed.  Returns the rounds that completed. */
static inline uint64_t dr_write_until_refused(struct hx_ep *ep)
{
	uint64_t r, t0 = hx_now_ms(), rounds = 0, wrid = 0;
	bool failed = false;

	for (r = 0; !failed && hx_now_ms() - t0 < 20000; r++) {
		struct ibv_wc wc;
		int i;

		for (i = 0; i < DR_BATCH; i++) {
			uint64_t v = ((r + 10) << 32) | (uint64_t)(i + 1);

			memcpy(ep->buf + 8 * i, &v, 8);
			HX_CHECK_RC(hx_post_send(ep, IBV_WR_RDMA_WRITE,
						 i == DR_BATCH - 1 ?
							 IBV_SEND_SIGNALED :
							 0,
						 wrid + (uint64_t)i,
						 ep->buf + 8 * i, 8,
						 ep->mr->lkey,
						 ep->peer.addr +
							 (r % 64) * DR_BATCH *
								 DR_STRIDE +
							 DR_STRIDE * i,
						 ep->peer.rkey, 0),
				    0);
		}
		if (hx_poll(ep->scq, &wc, 1, 10000) != 1) {
			CHECK(!"write completion");
			break;
		}
		if (wc.status == IBV_WC_SUCCESS) {
			CHECK_EQ(wc.wr_id, wrid + DR_BATCH - 1);
			rounds++;
			wrid += DR_BATCH;
			continue;
		}
		/* The first to fail (signaled or not) tells it; those after
		 * it are flushed. */
		failed = true;
		CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
		CHECK(wc.wr_id >= wrid && wc.wr_id < wrid + DR_BATCH);
		for (uint64_t k = wc.wr_id + 1; k < wrid + DR_BATCH; k++)
			if (!HX_EXPECT(ep->scq, NULL, k, IBV_WC_WR_FLUSH_ERR,
				       -1, -1))
				break;
	}
	CHECK(failed);
	CHECK(rounds > 10);
	hx_log("%llu rounds before the dereg", (unsigned long long)rounds);
	return rounds;
}

/* B's side: deregister while A writes, register the memory again, and no
 * byte may change after ibv_dereg_mr returned (the new R_Key is not the
 * one A writes with). */
static inline void dr_dereg_under_writes(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint8_t *snap;
	int64_t diff = -1;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	snap = malloc(o.buf_len);
	REQUIRE(snap);
	hx_sync(fd);
	hx_msleep(200);
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	memcpy(snap, ep.buf, o.buf_len);
	ep.mr = ibv_reg_mr(ep.pd, ep.buf, o.buf_len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	REQUIRE(ep.mr);
	hx_msleep(300);
	for (size_t j = 0; j < o.buf_len; j++)
		if (ep.buf[j] != snap[j]) {
			diff = (int64_t)j;
			break;
		}
	CHECK_EQ(diff, -1);
	hx_sync(fd);
	free(snap);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

#endif
