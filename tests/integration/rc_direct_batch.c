/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One-copy placement in batches (docs/fastpath.md, "Batches":
 * paths/direct.c): consecutive small RDMA WRITEs or READs of a QP go to a
 * process of this host in one process_vm_writev/readv.
 *   many     100 WRITEs of 8 B in one ibv_post_send (two SGEs each, 64 B
 *            apart at the target, as perftest strides), then 100 posted
 *            one by one, unsignaled but every 25th, inline and not in
 *            turn (they wait for each other: direct_deferred), then 100
 *            READs in one list back into another buffer: every
 *            completion in order, every byte in place;
 *   badkey   20 signaled WRITEs in one list, the 11th with a wrong rkey;
 *            then 20 READs whose 8th runs past the region: the ones
 *            before complete, the bad one REM_ACCESS_ERR, the rest
 *            WR_FLUSH_ERR, both QPs in ERR, and nothing after the bad one
 *            reached the target's memory (the packet path's statuses:
 *            the udp variant shows the same);
 *   dereg    rounds of 64 WRITEs of 8 B posted one by one (the last
 *            signaled) while the target deregisters the region: the first
 *            to fail is REM_ACCESS_ERR, the rest are flushed, and no byte
 *            changes once ibv_dereg_mr returned;
 *   order    48 small WRITEs posted one by one, unsignaled, then a SEND:
 *            every byte is in place when it arrives; then 32 WRITEs and
 *            32 READs of the same bytes in turn: each READ sees the WRITE
 *            before it.
 * Each case checks the initiator's counters: batches counted
 * (direct_batches, direct_batched) with the fast path on, every direct
 * counter 0 with SOFTVERBS_FASTPATH=0.  The initiator runs with
 * SOFTVERBS_CHAN_WRITE=0: small WRITEs would otherwise go through the
 * message channel (rc_chan_write.c covers that path).
 */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "dereg_race.h"

#define STRIDE 64 /* perftest's step between small messages */

struct bstats {
	unsigned long long write, read, fallback, batches, batched, deferred;
};

static void close_with_stats(struct hx_ep *ep, struct bstats *st)
{
	static const char *const names[] = { "direct_write",
					     "direct_read",
					     "direct_fallback",
					     "direct_batches",
					     "direct_batched",
					     "direct_deferred",
					     NULL };
	unsigned long long v[6];

	hx_ep_close_counters(ep, names, v);
	st->write = v[0];
	st->read = v[1];
	st->fallback = v[2];
	st->batches = v[3];
	st->batched = v[4];
	st->deferred = v[5];
}

/* With the fast path: at least min_b batches carrying min_n WQEs. */
static void expect_batches(const struct bstats *st, unsigned min_b,
			   unsigned min_n)
{
	if (!hx_fastpath_expected()) {
		CHECK_EQ(st->write + st->read + st->fallback + st->batches +
				 st->batched + st->deferred,
			 0);
		return;
	}
	CHECK(st->batches >= min_b);
	CHECK(st->batched >= min_n);
	CHECK(st->batched <= st->write + st->read);
}

static uint64_t val(uint64_t seed, int i)
{
	return (seed << 32) ^ (0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Poll n successful completions, wr_ids first..first+n-1 in order. */
static void expect_run(struct hx_ep *ep, uint64_t first, int n, int opcode)
{
	for (int i = 0; i < n; i++)
		if (!HX_EXPECT(ep->scq, NULL, first + (uint64_t)i,
			       IBV_WC_SUCCESS, opcode, 8))
			break;
}

/* ---- many --------------------------------------------------------------- */

#define MANY 100
/* B's layout: list WRITEs at 0, one-by-one WRITEs at W2, READ sources at
 * RS (B's pattern); A's: sources at 0 and 64 KiB, READ targets at AR. */
#define W2 (64u * 1024)
#define RS (128u * 1024)
#define AR (256u * 1024)

static void many_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr[MANY], *bad = NULL;
	struct ibv_sge sge[MANY][2];
	struct bstats st;
	struct hx_ep ep;
	int i;

	setenv("SOFTVERBS_STATS", "1", 1);
	/* The one-copy path's batches, not message channels (those are
	 * rc_chan_write's). */
	setenv("SOFTVERBS_CHAN_WRITE", "0", 1);
	o.max_send_wr = 256;
	o.send_cqe = 512;
	o.max_inline = 64;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	/* One list of 100 signaled WRITEs, each of two 4-byte SGEs. */
	for (i = 0; i < MANY; i++) {
		uint64_t v = val(1, i);

		memcpy(ep.buf + 16 * i, &v, 4);
		memcpy(ep.buf + 8192 + 16 * i, (uint8_t *)&v + 4, 4);
		sge[i][0] = (struct ibv_sge){ (uintptr_t)ep.buf + 16 * i, 4,
					      ep.mr->lkey };
		sge[i][1] = (struct ibv_sge){ (uintptr_t)ep.buf + 8192 + 16 * i,
					      4, ep.mr->lkey };
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = sge[i];
		wr[i].num_sge = 2;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = ep.peer.addr + STRIDE * i;
		wr[i].wr.rdma.rkey = ep.peer.rkey;
		wr[i].next = i + 1 < MANY ? &wr[i + 1] : NULL;
	}
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	expect_run(&ep, 0, MANY, IBV_WC_RDMA_WRITE);
	/* One by one, unsignaled but every 25th; inline every other. */
	for (i = 0; i < MANY; i++) {
		bool sig = i % 25 == 24;

		put64(ep.buf + 64 * 1024 + 8 * i, val(2, i));
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 (sig ? IBV_SEND_SIGNALED : 0) |
						 (i & 1 ? IBV_SEND_INLINE : 0),
					 1000 + i, ep.buf + 64 * 1024 + 8 * i,
					 8, ep.mr->lkey,
					 ep.peer.addr + W2 + STRIDE * i,
					 ep.peer.rkey, 0),
			    0);
		if (sig)
			HX_EXPECT(ep.scq, NULL, 1000 + (uint64_t)i,
				  IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8);
	}
	/* READs in one list, signaled, into AR. */
	memset(ep.buf + AR, 0, 8 * MANY);
	for (i = 0; i < MANY; i++) {
		sge[i][0] = (struct ibv_sge){ (uintptr_t)ep.buf + AR + 8 * i, 8,
					      ep.mr->lkey };
		wr[i].wr_id = 2000 + (uint64_t)i;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = ep.peer.addr + RS + STRIDE * i;
	}
	HX_CHECK_RC(ibv_post_send(ep.qp, wr, &bad), 0);
	expect_run(&ep, 2000, MANY, IBV_WC_RDMA_READ);
	for (i = 0; i < MANY; i++)
		if (get64(ep.buf + AR + 8 * i) != val(3, i))
			break;
	CHECK_EQ(i, MANY);
	hx_sync(fd); /* B checks */
	hx_sync(fd);
	close_with_stats(&ep, &st);
	/* The lists and the one-by-one WRITEs: each at least one batch. */
	expect_batches(&st, 3, 3 * 2);
	if (hx_fastpath_expected()) {
		CHECK(st.deferred > 0);
		CHECK_EQ(st.write, 2 * MANY);
		CHECK_EQ(st.read, MANY);
	}
}

static void many_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, bad1 = -1, bad2 = -1, gap = -1;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (i = 0; i < MANY; i++)
		put64(ep.buf + RS + STRIDE * i, val(3, i));
	hx_sync(fd);
	hx_sync(fd);
	for (i = MANY - 1; i >= 0; i--) {
		if (get64(ep.buf + STRIDE * i) != val(1, i))
			bad1 = i;
		if (get64(ep.buf + W2 + STRIDE * i) != val(2, i))
			bad2 = i;
		/* Between the 8-byte writes nothing changed. */
		for (int j = 8; j < STRIDE; j++)
			if (ep.buf[STRIDE * i + j] ||
			    ep.buf[W2 + STRIDE * i + j])
				gap = i;
	}
	CHECK_EQ(bad1, -1);
	CHECK_EQ(bad2, -1);
	CHECK_EQ(gap, -1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- badkey ------------------------------------------------------------- */

#define BK_N 20
#define BK_BADW 10 /* the WRITE with the wrong rkey */
#define BK_BADR 7 /* the READ out of bounds */

static void renew(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	hx_sync(ep->fd);
	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
	hx_ep_new_qp(ep);
	hx_ep_connect(ep);
}

/* Post n 8-byte WRs in one list; bad is the index that breaks a rule. */
static void post_list(struct hx_ep *ep, enum ibv_wr_opcode op, int n, int bad,
		      uint64_t base)
{
	struct ibv_send_wr wr[BK_N], *badwr = NULL;
	struct ibv_sge sge[BK_N];
	bool rd = op == IBV_WR_RDMA_READ;

	for (int i = 0; i < n; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)ep->buf +
						   (rd ? 4096 : 0) + 8 * i,
					   8, ep->mr->lkey };
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = base + (uint64_t)i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = op;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = ep->peer.addr + STRIDE * i;
		wr[i].wr.rdma.rkey = ep->peer.rkey;
		if (i == bad && !rd)
			wr[i].wr.rdma.rkey ^= 0x10;
		if (i == bad && rd) /* 8 bytes from the last 4 of the MR */
			wr[i].wr.rdma.remote_addr =
				ep->peer.addr + ep->peer.len - 4;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	HX_CHECK_RC(ibv_post_send(ep->qp, wr, &badwr), 0);
}

/* The statuses a remote access error gives on the packet path. */
static void expect_broken(struct hx_ep *ep, int n, int bad, uint64_t base,
			  int opcode)
{
	int i;

	expect_run(ep, base, bad, opcode);
	HX_EXPECT(ep->scq, NULL, base + (uint64_t)bad, IBV_WC_REM_ACCESS_ERR,
		  -1, -1);
	for (i = bad + 1; i < n; i++)
		if (!HX_EXPECT(ep->scq, NULL, base + (uint64_t)i,
			       IBV_WC_WR_FLUSH_ERR, -1, -1))
			break;
	HX_CHECK_STATE(ep->qp, IBV_QPS_ERR);
}

static void badkey_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct bstats st;
	struct hx_ep ep;
	int i;

	setenv("SOFTVERBS_STATS", "1", 1);
	/* The one-copy path's batches, not message channels (those are
	 * rc_chan_write's). */
	setenv("SOFTVERBS_CHAN_WRITE", "0", 1);
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	for (i = 0; i < BK_N; i++)
		put64(ep.buf + 8 * i, val(4, i));
	hx_sync(fd);
	post_list(&ep, IBV_WR_RDMA_WRITE, BK_N, BK_BADW, 0);
	expect_broken(&ep, BK_N, BK_BADW, 0, IBV_WC_RDMA_WRITE);
	hx_sync(fd); /* B checks its memory and QP */
	renew(&ep);
	memset(ep.buf + 4096, 0xee, 8 * BK_N);
	hx_sync(fd);
	post_list(&ep, IBV_WR_RDMA_READ, BK_N, BK_BADR, 100);
	expect_broken(&ep, BK_N, BK_BADR, 100, IBV_WC_RDMA_READ);
	/* The READs before the bad one brought B's bytes. */
	for (i = 0; i < BK_BADR; i++)
		if (get64(ep.buf + 4096 + 8 * i) != val(5, i))
			break;
	CHECK_EQ(i, BK_BADR);
	hx_sync(fd);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	/* The WRITEs and READs before the bad ones: a batch each. */
	expect_batches(&st, 2, BK_BADW + BK_BADR);
}

static void badkey_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, bad = -1;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	memset(ep.buf, 0x5a, STRIDE * BK_N);
	hx_sync(fd);
	hx_sync(fd);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	for (i = 0; i < BK_N; i++) {
		uint64_t want = i < BK_BADW ? val(4, i) : 0x5a5a5a5a5a5a5a5aull;

		if (get64(ep.buf + STRIDE * i) != want && bad < 0)
			bad = i;
	}
	CHECK_EQ(bad, -1);
	renew(&ep);
	for (i = 0; i < BK_N; i++)
		put64(ep.buf + STRIDE * i, val(5, i));
	hx_sync(fd);
	hx_sync(fd);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- dereg while batches stream ------------------------------------------- */

static void dereg_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct bstats st;
	struct hx_ep ep;

	setenv("SOFTVERBS_STATS", "1", 1);
	/* The one-copy path's batches, not message channels (those are
	 * rc_chan_write's). */
	setenv("SOFTVERBS_CHAN_WRITE", "0", 1);
	o.max_send_wr = 128;
	o.send_cqe = 256;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	dr_write_until_refused(&ep);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_batches(&st, 10, 10 * 2);
}

static void dereg_b(int fd)
{
	dr_dereg_under_writes(fd);
}

/* ---- order ---------------------------------------------------------------- */

#define OR_W 48
#define OR_RW 32

static void order_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct bstats st;
	struct hx_ep ep;
	int i, wrong = -1;

	setenv("SOFTVERBS_STATS", "1", 1);
	/* The one-copy path's batches, not message channels (those are
	 * rc_chan_write's). */
	setenv("SOFTVERBS_CHAN_WRITE", "0", 1);
	o.max_send_wr = 128;
	o.send_cqe = 256;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B posted its receive */
	for (i = 0; i < OR_W; i++) {
		put64(ep.buf + 8 * i, val(6, i));
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, i,
					 ep.buf + 8 * i, 8, ep.mr->lkey,
					 ep.peer.addr + STRIDE * i,
					 ep.peer.rkey, 0),
			    0);
	}
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 500,
				 ep.buf, 16, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 500, IBV_WC_SUCCESS, IBV_WC_SEND, 16);
	hx_sync(fd); /* B checked the WRITEs at the SEND's arrival */
	/* WRITE x, READ x back, in turn, unsignaled but the last. */
	for (i = 0; i < OR_RW; i++) {
		uint64_t raddr = ep.peer.addr + 65536 + STRIDE * i;

		put64(ep.buf + 4096 + 8 * i, val(7, i));
		put64(ep.buf + 8192 + 8 * i, 0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 600 + i,
					 ep.buf + 4096 + 8 * i, 8, ep.mr->lkey,
					 raddr, ep.peer.rkey, 0),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 i == OR_RW - 1 ? IBV_SEND_SIGNALED : 0,
					 700 + i, ep.buf + 8192 + 8 * i, 8,
					 ep.mr->lkey, raddr, ep.peer.rkey, 0),
			    0);
	}
	HX_EXPECT(ep.scq, NULL, 700 + OR_RW - 1, IBV_WC_SUCCESS,
		  IBV_WC_RDMA_READ, 8);
	for (i = 0; i < OR_RW; i++)
		if (get64(ep.buf + 8192 + 8 * i) != val(7, i) && wrong < 0)
			wrong = i;
	CHECK_EQ(wrong, -1);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_batches(&st, 1, 2);
}

static void order_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + 512 * 1024, 4096,
				 ep.mr->lkey),
		    0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 16);
	/* Every WRITE posted before the SEND is in place when it arrives. */
	for (i = 0; i < OR_W; i++)
		if (get64(ep.buf + STRIDE * i) != val(6, i) && wrong < 0)
			wrong = i;
	CHECK_EQ(wrong, -1);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(many, 60),
	HX_CASE(badkey, 60),
	HX_CASE(dereg, 60),
	HX_CASE(order, 60),
	{ 0 },
};

static int done(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

int main(int argc, char **argv)
{
	return hx_main(argc, argv, cases, done);
}
