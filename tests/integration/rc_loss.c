/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Loss test (driven by rc_loss.sh): A and B each enter their own network
 * namespace (joined by a veth pair, with nftables dropping a share of UDP
 * packets in B's) before touching the verbs library, discover the GID
 * index of their veth address with ibv_query_gid_table, and run an RC
 * stream of mixed RDMA WRITE, SEND and RDMA READ, every byte verified.
 *
 * Environment: HX_NETNS_A/B (namespace names), HX_ADDR_A/B (IPv4 of each
 * side), HX_LOSS_MB (total MiB, default 256).  Without HX_NETNS_A the test
 * runs over loopback (useful by hand).
 */
#include <stdlib.h>

#include "harness.h"

#define CHUNK (1u << 20)
#define W_PER_ROUND 8 /* MiB written per round */
#define S_PER_ROUND 4 /* MiB sent */
#define R_PER_ROUND 8 /* MiB read */
#define ROUND_MB (W_PER_ROUND + S_PER_ROUND + R_PER_ROUND)
/* Buffer regions (in chunks): write target, receive area, read source. */
#define OFF_W 0
#define OFF_S W_PER_ROUND
#define OFF_R (W_PER_ROUND + S_PER_ROUND)
#define BUF_LEN ((size_t)ROUND_MB * CHUNK)

static int rounds(void)
{
	const char *e = getenv("HX_LOSS_MB");
	long mb = e ? atol(e) : 256;

	return (int)((mb + ROUND_MB - 1) / ROUND_MB);
}

static void open_side(struct hx_ep *ep, int fd, const char *ns_var,
		      const char *addr_var)
{
	struct hx_opts o = hx_opts_default();
	const char *ns = getenv(ns_var), *addr = getenv(addr_var);

	if (ns && *ns)
		hx_enter_netns(ns);
	o.buf_len = BUF_LEN;
	o.gid_addr = addr && *addr ? addr : NULL;
	o.path_mtu = IBV_MTU_1024; /* the veth's 1500-byte MTU */
	/* 4.096 us * 2^timeout: 10 = 4.2 ms, a generous local ACK timeout
	 * for a veth, so that losses are repaired soon. */
	o.timeout = getenv("HX_LOSS_TIMEOUT") ?
			    (uint8_t)atoi(getenv("HX_LOSS_TIMEOUT")) :
			    10;
	o.retry_cnt = 7;
	o.rnr_retry = 7;
	o.max_send_wr = 64;
	o.max_recv_wr = 64;
	o.send_cqe = 128;
	hx_ep_open(ep, &o, fd);
	hx_log("netns %s: address %s is GID index %d", ns ? ns : "(none)",
	       addr ? addr : "127.0.0.1", ep->gid_index);
	hx_ep_connect(ep);
}

static uint64_t seed(int r, int kind, int i)
{
	return 7000 + (uint64_t)r * 100 + kind * 20 + i;
}

static void stream_a(int fd)
{
	struct hx_ep ep;
	int n = rounds();
	uint64_t t0 = hx_now_ms();

	open_side(&ep, fd, "HX_NETNS_A", "HX_ADDR_A");
	for (int r = 0; r < n; r++) {
		int id = 0;

		for (int i = 0; i < W_PER_ROUND; i++)
			hx_fill(ep.buf + (OFF_W + i) * (size_t)CHUNK, CHUNK,
				seed(r, 0, i));
		for (int i = 0; i < S_PER_ROUND; i++)
			hx_fill(ep.buf + (OFF_S + i) * (size_t)CHUNK, CHUNK,
				seed(r, 1, i));
		memset(ep.buf + OFF_R * (size_t)CHUNK, 0,
		       R_PER_ROUND * (size_t)CHUNK);
		hx_sync(fd); /* B posted its receives and filled its read source */
		/* Interleave the three kinds in one send queue. */
		for (int i = 0; i < W_PER_ROUND; i++) {
			size_t w = (OFF_W + i) * (size_t)CHUNK,
			       rd = (OFF_R + i) * (size_t)CHUNK;

			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
						 IBV_SEND_SIGNALED, id++,
						 ep.buf + w, CHUNK, ep.mr->lkey,
						 ep.peer.addr + w, ep.peer.rkey,
						 0),
				    0);
			if (i < S_PER_ROUND) {
				size_t s = (OFF_S + i) * (size_t)CHUNK;

				HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
							 IBV_SEND_SIGNALED,
							 id++, ep.buf + s,
							 CHUNK, ep.mr->lkey, 0,
							 0, 0),
					    0);
			}
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
						 IBV_SEND_SIGNALED, id++,
						 ep.buf + rd, CHUNK,
						 ep.mr->lkey, ep.peer.addr + rd,
						 ep.peer.rkey, 0),
				    0);
		}
		for (int k = 0; k < id; k++) {
			struct ibv_wc wc;

			if (!HX_EXPECT_T(ep.scq, &wc, k, IBV_WC_SUCCESS, -1, -1,
					 60000)) {
				hx_log("round %d: stopping", r);
				hx_send_u64(fd, 0);
				goto out;
			}
		}
		for (int i = 0; i < R_PER_ROUND; i++)
			HX_CHECK_PATTERN(ep.buf + (OFF_R + i) * (size_t)CHUNK,
					 CHUNK, seed(r, 2, i));
		hx_send_u64(fd, 1); /* round done */
		hx_sync(fd); /* B verified */
	}
	hx_log("%d MiB in %llu ms", n * ROUND_MB,
	       (unsigned long long)(hx_now_ms() - t0));
out:
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static void stream_b(int fd)
{
	struct hx_ep ep;
	int n = rounds();

	open_side(&ep, fd, "HX_NETNS_B", "HX_ADDR_B");
	for (int r = 0; r < n; r++) {
		for (int i = 0; i < S_PER_ROUND; i++)
			HX_CHECK_RC(hx_post_recv(&ep, 100 + i,
						 ep.buf + (OFF_S + i) *
								  (size_t)CHUNK,
						 CHUNK, ep.mr->lkey),
				    0);
		for (int i = 0; i < R_PER_ROUND; i++)
			hx_fill(ep.buf + (OFF_R + i) * (size_t)CHUNK, CHUNK,
				seed(r, 2, i));
		hx_sync(fd);
		if (!hx_recv_u64(fd))
			break;
		for (int i = 0; i < S_PER_ROUND; i++)
			HX_EXPECT(ep.rcq, NULL, 100 + i, IBV_WC_SUCCESS,
				  IBV_WC_RECV, CHUNK);
		for (int i = 0; i < W_PER_ROUND; i++)
			HX_CHECK_PATTERN(ep.buf + (OFF_W + i) * (size_t)CHUNK,
					 CHUNK, seed(r, 0, i));
		for (int i = 0; i < S_PER_ROUND; i++)
			HX_CHECK_PATTERN(ep.buf + (OFF_S + i) * (size_t)CHUNK,
					 CHUNK, seed(r, 1, i));
		hx_sync(fd);
	}
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* Not HX_CASE: this program runs only from rc_loss.sh. */
static const struct hx_case cases[] = { { "stream", stream_a, stream_b, 170 },
					{ 0 } };

HX_MAIN(cases)
