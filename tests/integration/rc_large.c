/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Large messages: one 256 MiB RDMA WRITE, one 256 MiB RDMA READ and one
 * 256 MiB SEND (each a single WR, 65536 packets at a 4096-byte MTU),
 * bytes compared end to end.  $HX_LARGE_MB changes the size (the issue
 * allows up to 2^31 - 1 bytes per message).
 */
#include <stdlib.h>

#include "harness.h"

static size_t large_len(void)
{
	const char *e = getenv("HX_LARGE_MB");
	size_t mb = e ? strtoul(e, NULL, 0) : 256;

	if (mb >= 2048)
		return 0x7fffffff;
	return mb << 20;
}

static void big_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t len = large_len();
	struct hx_ep ep;
	uint64_t t0;

	o.buf_len = len;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, len, 1);
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, (uint32_t)len, ep.mr->lkey,
				 ep.peer.addr, ep.peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, -1,
		    60000);
	hx_log("WRITE %zu MiB: %llu ms", len >> 20,
	       (unsigned long long)(hx_now_ms() - t0));
	hx_sync(fd); /* B verified and refilled with pattern 2 */
	hx_sync(fd);
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 2,
				 ep.buf, (uint32_t)len, ep.mr->lkey,
				 ep.peer.addr, ep.peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		    (int64_t)len, 60000);
	hx_log("READ %zu MiB: %llu ms", len >> 20,
	       (unsigned long long)(hx_now_ms() - t0));
	HX_CHECK_PATTERN(ep.buf, len, 2);
	hx_fill(ep.buf, len, 3);
	hx_sync(fd); /* READ done: B may reuse its buffer */
	hx_sync(fd); /* B posted its receive */
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 3, ep.buf,
				 (uint32_t)len, ep.mr->lkey, 0, 0, 0),
		    0);
	bool sent = HX_EXPECT_T(ep.scq, NULL, 3, IBV_WC_SUCCESS, IBV_WC_SEND,
				-1, 60000);
	hx_log("SEND %zu MiB: %llu ms", len >> 20,
	       (unsigned long long)(hx_now_ms() - t0));
	/* Tell B whether to expect the message (fail fast if not). */
	hx_send_u64(fd, sent);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void big_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	size_t len = large_len();
	struct hx_ep ep;

	o.buf_len = len;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, len, 1);
	hx_fill(ep.buf, len, 2);
	hx_sync(fd);
	hx_sync(fd); /* A's READ is done */
	memset(ep.buf, 0, len);
	HX_CHECK_RC(hx_post_recv(&ep, 9, ep.buf, (uint32_t)len, ep.mr->lkey),
		    0);
	hx_sync(fd);
	if (hx_recv_u64(fd)) {
		HX_EXPECT_T(ep.rcq, NULL, 9, IBV_WC_SUCCESS, IBV_WC_RECV,
			    (int64_t)len, 5000);
		HX_CHECK_PATTERN(ep.buf, len, 3);
	} else {
		hx_log("A's SEND failed: nothing to receive");
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = { HX_CASE(big, 120), { 0 } };

HX_MAIN(cases)
