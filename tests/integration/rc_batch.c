/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Small messages sharing the kernel's calls (issue #36, docs/engine.md,
 * "Batched posts"): an ibv_post_send whose QP has packets in flight over
 * UDP keeps its packets for a later send with the posts after it.
 *   stream  20,000 RDMA WRITEs of 8 bytes, one signaled in 32, at most
 *           128 outstanding; B checks every 8 bytes.  Over UDP
 *           (SOFTVERBS_FASTPATH=0): posts kept packets back (req_held),
 *           a quarter of the packets or more left in sends of several
 *           (UDP_SEGMENT), and B sent at most one ACK per two messages
 *           (coalesced per receive batch).
 *   tail    50 rounds: 64 WRITEs of 8 bytes, the last one signaled, then
 *           A makes no verb call until B has seen the last one's bytes in
 *           its memory (B spins on it; its progress thread places it):
 *           packets a post kept leave without the application's next
 *           verb.  Over UDP, some were kept (req_held > 0), or the case
 *           proved nothing.
 *   lone    200 signaled SENDs of 8 bytes, each completed before the next
 *           is posted: nothing in flight, so none is kept (req_held 0),
 *           each completion comes, B checks every message.
 * On shm (the default here) nothing is kept: req_held is 0 throughout.
 * With HX_NETNS_A/B and HX_ADDR_A/B (udp_gso.sh wire_small) each side
 * enters its own network namespace first and uses its address's GID:
 * the UDP path across a veth pair.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "harness.h"

#define N_STREAM 20000
#define SIG_EVERY 32
#define OUTSTANDING 128
#define TAIL_ROUNDS 50
#define TAIL_BURST 64
#define LONE 200

static bool on_udp(void)
{
	const char *f = getenv("SOFTVERBS_FASTPATH"),
		   *ns = getenv("HX_NETNS_A");

	return (f && !strcmp(f, "0")) || (ns && *ns);
}

static void open_ep(struct hx_ep *ep, int fd)
{
	struct hx_opts o = hx_opts_default();
	bool a = !strcmp(hx_role, "A");
	const char *ns = getenv(a ? "HX_NETNS_A" : "HX_NETNS_B"),
		   *addr = getenv(a ? "HX_ADDR_A" : "HX_ADDR_B");

	if (ns && *ns) {
		hx_enter_netns(ns);
		o.gid_addr = addr;
		o.path_mtu = IBV_MTU_1024; /* the veth's 1500-byte MTU */
	}

	o.buf_len = 1 << 20;
	o.max_send_wr = 256;
	o.max_recv_wr = LONE;
	o.send_cqe = 512;
	o.recv_cqe = 512;
	setenv("SOFTVERBS_STATS", "1", 1);
	hx_ep_open(ep, &o, fd);
	hx_ep_connect(ep);
}

static uint64_t val(int i)
{
	return 0x5a5a000000000000ull ^ ((uint64_t)i * 0x9e3779b97f4a7c15ull);
}

/* ---- stream ------------------------------------------------------------ */

static void stream_a(int fd)
{
	static const char *const names[] = { "req_held", "gso_sends",
					     "gso_pkts", "sent_pkts", NULL };
	unsigned long long c[4];
	uint64_t *src;
	struct hx_ep ep;
	int posted = 0, done = 0;

	open_ep(&ep, fd);
	src = (uint64_t *)ep.buf;
	for (int i = 0; i < N_STREAM; i++)
		src[i] = val(i);
	while (done < N_STREAM) {
		while (posted < N_STREAM && posted - done < OUTSTANDING) {
			bool sig = (posted + 1) % SIG_EVERY == 0 ||
				   posted + 1 == N_STREAM;

			if (hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 sig ? IBV_SEND_SIGNALED : 0,
					 (uint64_t)posted, &src[posted], 8,
					 ep.mr->lkey,
					 ep.peer.addr + 8 * (uint64_t)posted,
					 ep.peer.rkey, 0)) {
				CHECK(!"ibv_post_send failed");
				goto out;
			}
			posted++;
		}
		{
			struct ibv_wc wc;
			/* The signaled WRITE ending the oldest group. */
			int last = done + SIG_EVERY - 1;

			if (last >= N_STREAM)
				last = N_STREAM - 1;
			if (!HX_EXPECT(ep.scq, &wc, (uint64_t)last,
				       IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8))
				goto out;
			done = last + 1;
		}
	}
out:
	hx_send_u64(fd, (uint64_t)done);
	hx_sync(fd); /* B checked */
	hx_ep_close_counters(&ep, names, c);
	hx_log("%d WRITEs of 8 B: req_held %llu gso_sends %llu gso_pkts %llu sent_pkts %llu",
	       N_STREAM, c[0], c[1], c[2], c[3]);
	if (!on_udp()) {
		CHECK_EQ(c[0], 0);
		return;
	}
	CHECK(c[0] > 0);
	CHECK(c[2] >= N_STREAM / 4);
	CHECK(c[2] >= 2 * c[1]);
}

static void stream_b(int fd)
{
	const uint64_t *dst;
	unsigned long long acks;
	struct hx_ep ep;
	int bad = 0, n;

	open_ep(&ep, fd);
	dst = (const uint64_t *)ep.buf;
	n = (int)hx_recv_u64(fd);
	CHECK_EQ(n, N_STREAM);
	for (int i = 0; i < n; i++)
		bad += dst[i] != val(i);
	CHECK_EQ(bad, 0);
	hx_sync(fd);
	acks = hx_ep_close_counter(&ep, "ack_sent");
	hx_log("ack_sent %llu for %d messages", acks, N_STREAM);
	if (on_udp())
		CHECK(acks <= N_STREAM / 2);
}

/* ---- tail -------------------------------------------------------------- */

static void tail_a(int fd)
{
	uint64_t *src;
	unsigned long long held;
	struct hx_ep ep;

	open_ep(&ep, fd);
	src = (uint64_t *)ep.buf;
	for (int r = 0; r < TAIL_ROUNDS; r++) {
		for (int i = 0; i < TAIL_BURST; i++) {
			int k = r * TAIL_BURST + i;

			src[k] = val(k);
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
						 i == TAIL_BURST - 1 ?
							 IBV_SEND_SIGNALED :
							 0,
						 (uint64_t)k, &src[k], 8,
						 ep.mr->lkey,
						 ep.peer.addr + 8 * (uint64_t)k,
						 ep.peer.rkey, 0),
				    0);
		}
		/* No verb until B has the last WRITE's bytes. */
		CHECK_EQ(hx_recv_u64(fd), (uint64_t)r);
		HX_EXPECT(ep.scq, NULL,
			  (uint64_t)(r * TAIL_BURST + TAIL_BURST - 1),
			  IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8);
	}
	held = hx_ep_close_counter(&ep, "req_held");
	hx_log("%d rounds of %d WRITEs: req_held %llu", TAIL_ROUNDS, TAIL_BURST,
	       held);
	if (on_udp())
		CHECK(held > 0);
	else
		CHECK_EQ(held, 0);
}

static void tail_b(int fd)
{
	struct hx_ep ep;

	open_ep(&ep, fd);
	for (int r = 0; r < TAIL_ROUNDS; r++) {
		int k = r * TAIL_BURST + TAIL_BURST - 1;
		const _Atomic uint64_t *w =
			(const _Atomic uint64_t *)(ep.buf + 8 * (size_t)k);

		/* Bounded by the case's watchdog. */
		while (atomic_load_explicit(w, memory_order_acquire) != val(k))
			;
		hx_send_u64(fd, (uint64_t)r);
	}
	for (int k = 0; k < TAIL_ROUNDS * TAIL_BURST; k++)
		CHECK_EQ(((const uint64_t *)ep.buf)[k], val(k));
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- lone -------------------------------------------------------------- */

static void lone_a(int fd)
{
	uint64_t *src;
	unsigned long long held;
	struct hx_ep ep;

	open_ep(&ep, fd);
	src = (uint64_t *)ep.buf;
	hx_sync(fd); /* B's receives are posted */
	for (int i = 0; i < LONE; i++) {
		src[i] = val(i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED,
					 (uint64_t)i, &src[i], 8, ep.mr->lkey,
					 0, 0, 0),
			    0);
		if (!HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_SEND, 8))
			break;
	}
	hx_sync(fd); /* B checked */
	held = hx_ep_close_counter(&ep, "req_held");
	hx_log("%d lone SENDs: req_held %llu", LONE, held);
	CHECK_EQ(held, 0);
}

static void lone_b(int fd)
{
	struct hx_ep ep;

	open_ep(&ep, fd);
	for (int i = 0; i < LONE; i++)
		REQUIRE(hx_post_recv(&ep, (uint64_t)i,
				     ep.buf + 4096 + 64 * (size_t)i, 64,
				     ep.mr->lkey) == 0);
	hx_sync(fd);
	for (int i = 0; i < LONE; i++) {
		uint64_t got;

		if (!HX_EXPECT(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			       IBV_WC_RECV, 8))
			break;
		memcpy(&got, ep.buf + 4096 + 64 * (size_t)i, 8);
		CHECK_EQ(got, val(i));
	}
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(stream, 90),
	HX_CASE(tail, 60),
	HX_CASE(lone, 60),
	{ 0 },
};

HX_MAIN(cases)
